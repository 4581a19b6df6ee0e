//! The commands that write a folder without being a pipeline stage (`eval compare`, `eval chain-report`,
//! `eval batch-read`) run on the folder contract: a second writer is refused with the lock's message (exit
//! code 6) before anything is written, the manifest lists the inputs and the outputs with their hashes
//! (checked against hashes computed here), and a declared file that this run did not write (a figure or
//! heatmap of an earlier run) is removed and named in the manifest's `removed`.

use crate::util::{manifest, Workdir};
use serde_json::Value;
use std::path::Path;

/// The xxh3-128 of a file, as manifests write it: computed here, not by the code under test.
fn xxh3(p: &Path) -> String {
    format!(
        "{:032x}",
        xxhash_rust::xxh3::xxh3_128(&std::fs::read(p).unwrap())
    )
}

/// The entry of `list` (a manifest's `inputs` or `outputs`) whose path ends with `name`.
fn entry<'a>(list: &'a Value, name: &str) -> &'a Value {
    list.as_array()
        .unwrap()
        .iter()
        .find(|e| e["path"].as_str().unwrap().ends_with(name))
        .unwrap_or_else(|| panic!("{name} not in {list}"))
}

#[test]
fn compare_removes_a_stale_figure_and_lists_inputs_and_outputs_with_their_hashes() {
    let wd = Workdir::new();
    wd.write("in/samples.jsonl", crate::compare::hand_samples());
    // What an earlier compare (of a model no longer compared) left, and a file of someone else's.
    wd.write("out/figures/accuracy_Z.svg", "<svg/>");
    wd.write("out/figures/notes.txt", "mine");
    let args = [
        "eval",
        "compare",
        "--results",
        "in/samples.jsonl",
        "--out",
        "out",
        "--bootstrap",
        "10",
    ];
    wd.run_ok(&args);
    let out = wd.join("out");
    assert!(!out.join("figures/accuracy_Z.svg").exists());
    assert!(out.join("figures/notes.txt").exists());
    let m = manifest(&out, "compare");
    assert_eq!(m["removed"], serde_json::json!(["figures/accuracy_Z.svg"]));
    let input = entry(&m["inputs"], "samples.jsonl");
    assert_eq!(input["xxh3"], xxh3(&wd.join("in/samples.jsonl")), "{m}");
    let outputs = m["outputs"].as_array().unwrap();
    assert!(outputs.len() > 6, "{m}");
    for o in outputs {
        let p = out.join(o["path"].as_str().unwrap());
        assert_eq!(o["xxh3"], xxh3(&p), "{}", p.display());
    }
    // Every SVG in figures/ is listed: the folder holds no figure the manifest does not vouch for.
    for e in std::fs::read_dir(out.join("figures")).unwrap() {
        let name = format!("figures/{}", e.unwrap().file_name().to_string_lossy());
        if name.ends_with(".svg") {
            entry(&m["outputs"], &name);
        }
    }
    // A second writer holding the folder: refused at once with the lock's message, nothing touched.
    let before = std::fs::read(out.join("compare.manifest.json")).unwrap();
    let held = sword::store::RunDir::open(&out).unwrap();
    let (code, err) = wd.run_err(&args);
    assert_eq!(code, 6, "{err}");
    assert!(
        err.contains("locked") && err.contains("held by pid"),
        "{err}"
    );
    assert_eq!(
        std::fs::read(out.join("compare.manifest.json")).unwrap(),
        before
    );
    drop(held);
}

/// A `sword.scores.json` with one model scored in `variant` on English.
fn scores(variant: &str) -> String {
    let mut measures = serde_json::Map::new();
    for s in ["ORG", "SS", "OS", "PSS", "POS", "all"] {
        measures.insert(
            format!("acc.en.{s}"),
            serde_json::json!({"estimate": 0.5, "lo": 0.4, "hi": 0.6}),
        );
    }
    serde_json::json!({"models": [{"model": "m", "variant": variant, "n": 10, "unparsed": 1,
        "measures": measures}]})
    .to_string()
}

#[test]
fn chain_report_writes_under_the_lock_and_removes_the_heatmaps_it_no_longer_draws() {
    let wd = Workdir::new();
    wd.write("ev/sword.scores.json", scores("plain"));
    // An earlier report's heatmaps: a variant no longer scored, translations no longer given (no --run).
    wd.write("ev/sword_premise.svg", "<svg/>");
    wd.write("ev/text_ok.svg", "<svg/>");
    wd.write("ev/samples.jsonl", "other command's");
    let args = ["eval", "chain-report", "--dir", "ev", "--title", "M"];
    // Held by another writer: refused, and nothing written (the old report stays as it was).
    let held = sword::store::RunDir::open(&wd.join("ev")).unwrap();
    let (code, err) = wd.run_err(&args);
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("locked"), "{err}");
    assert!(!wd.join("ev/report.md").exists());
    assert!(!wd.join("ev/chain-report.manifest.json").exists());
    drop(held);
    wd.run_ok(&args);
    let ev = wd.join("ev");
    assert!(ev.join("report.md").exists() && ev.join("sword_plain.svg").exists());
    assert!(!ev.join("sword_premise.svg").exists());
    assert!(!ev.join("text_ok.svg").exists());
    assert_eq!(
        std::fs::read(ev.join("samples.jsonl")).unwrap(),
        b"other command's"
    );
    let m = manifest(&ev, "chain-report");
    // In the order the command declares them (report.md, text_ok.svg, sword_*.svg).
    assert_eq!(
        m["removed"],
        serde_json::json!(["text_ok.svg", "sword_premise.svg"])
    );
    let input = entry(&m["inputs"], "sword.scores.json");
    assert_eq!(input["xxh3"], xxh3(&ev.join("sword.scores.json")));
    let names: Vec<&str> = m["outputs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["path"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["sword_plain.svg", "report.md"]);
    for n in names {
        assert_eq!(entry(&m["outputs"], n)["xxh3"], xxh3(&ev.join(n)));
    }
}

#[test]
fn batch_read_is_refused_in_a_held_folder_and_records_its_inputs() {
    let wd = Workdir::new();
    wd.write("req.jsonl", "");
    wd.write("batch_out.jsonl", "");
    let args = [
        "eval",
        "batch-read",
        "--requests",
        "req.jsonl",
        "--batch-output",
        "batch_out.jsonl",
        "--out",
        "res",
    ];
    let held = sword::store::RunDir::open(&wd.join("res")).unwrap();
    let (code, err) = wd.run_err(&args);
    assert_eq!(code, 6, "{err}");
    assert!(!wd.join("res/samples.jsonl").exists());
    drop(held);
    wd.run_ok(&args);
    let m = manifest(&wd.join("res"), "eval");
    assert_eq!(
        entry(&m["inputs"], "batch_out.jsonl")["xxh3"],
        xxh3(&wd.join("batch_out.jsonl"))
    );
    entry(&m["inputs"], "req.jsonl");
    for n in ["samples.jsonl", "samples.parquet", "results.json"] {
        assert_eq!(
            entry(&m["outputs"], n)["xxh3"],
            xxh3(&wd.join("res").join(n))
        );
    }
}
