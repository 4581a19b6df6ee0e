//! The eval JSONL readers on arbitrary bytes: samples (SWORD and sycophancy rows, with their scorers),
//! requests, long-form counts, Batch output (eval and translation), the runner's answer log, and the
//! answer parsers on every string they may meet. None may panic; each either reads the bytes or returns an
//! error naming a line; a long-form F1 is always within [0, 1].
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use sword::eval::suites::{longform, sword as sw, sycophancy as syco};
use sword::eval::{parse, prompts, samples};

fuzz_target!(|data: &[u8]| {
    let path = Path::new("fuzz.jsonl");
    if let Ok(records) = samples::parse_jsonl(data, path) {
        for (_, o) in &records {
            for v in o.values() {
                if let Some(s) = v.as_str() {
                    let _ = parse::parse_true_false(s);
                    let _ = parse::parse_yes_no(s);
                    let _ = parse::detect_invalid(s, s);
                    let _ = parse::parse_judge(s);
                }
            }
        }
        if let Ok(groups) = samples::sword_rows_of(records.clone(), path) {
            for rows in groups.values() {
                let _ = sw::bootstrap_measures(rows, 3, 0);
            }
        }
        if let Ok(per) = samples::syco_states_of(records, path) {
            for (qs, _) in per.values() {
                let _ = syco::bootstrap_measures(qs, 3, 0);
                let _ = syco::regression(qs, 1);
            }
        }
    }
    let _ = prompts::parse_jsonl_as::<prompts::Request, _>(data, path);
    if let Ok(groups) = longform::read_counts(data, path) {
        for k in [longform::K::Fixed(8), longform::K::Auto] {
            let v = longform::score_counts(&groups, k);
            for c in v["conditions"].as_array().into_iter().flatten() {
                for m in ["mean_f1_paper", "mean_f1_safe"] {
                    let f = c[m].as_f64().unwrap_or(0.0);
                    assert!((0.0..=1.0).contains(&f), "{m} = {f}");
                }
            }
        }
    }
    let _ = sword::stages::translate::import::parse_batch_output(data, path);
    let _ = sword::stages::translate::import::request_ids(data, path);
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse::strip_think(text);
    }
});
