//! Integration tests for `eval`: the `sword eval` commands on hand-made files and on the published
//! AdversaRiskQA results.

use crate::util::Workdir;
use serde_json::Value;
use std::path::{Path, PathBuf};

/// The published AdversaRiskQA folder: `$SWORD_ADVERSARISKQA`, else `<repo>/../shared/adversariskqa`.
/// `None` (test skips, saying so) when missing, unless CI's `SWORD_REAL_FIXTURES` is set: then it fails.
fn adversariskqa_root() -> Option<PathBuf> {
    let root = match std::env::var_os("SWORD_ADVERSARISKQA") {
        Some(p) if !p.is_empty() => PathBuf::from(p),
        _ => Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/adversariskqa"),
    };
    if root.join("results").is_dir() {
        return Some(root);
    }
    let ci = std::env::var_os("SWORD_REAL_FIXTURES").is_some_and(|v| !v.is_empty());
    assert!(
        !ci,
        "SWORD_REAL_FIXTURES is set but {} is missing (set SWORD_ADVERSARISKQA)",
        root.display()
    );
    eprintln!(
        "{} missing: skipping the published AdversaRiskQA check",
        root.display()
    );
    None
}

fn approx(v: &Value, want: f64) {
    let got = v.as_f64().unwrap_or_else(|| panic!("not a number: {v}"));
    assert!((got - want).abs() < 1e-9, "got {got}, want {want}");
}

// Expected figures for the published Qwen3-4B-Instruct-2507 files, computed independently with jq + awk:
//   for f in *.json; do jq -r '[.results[]|{s:.response.success,e:.evaluation}] as $r | [($r|length),
//     ([$r[]|select(.s and .e=="Correct")]|length), ([$r[]|select(.s|not)]|length),
//     ([$r[]|select((.s|not) and .e=="Correct")]|length), ([$r[]|select(.e=="Correct")]|length),
//     ([$r[]|select(.s)]|length)] | @tsv' $f; done
// giving (n, correct&valid, invalid, invalid judged Correct, judged Correct, valid):
//   finance_advanced 50 37 8 1 38 42 · finance_basic 50 45 4 1 46 46 · health_advanced 100 47 27 1 48 73
//   health_basic 100 64 28 0 64 72 · law_advanced 50 38 4 0 38 46 · law_basic 50 30 6 0 30 44
// Every evaluation is "Correct" or "Incorrect", so accuracy_all per file = 100·correct&valid/n:
//   74, 90, 47, 64, 76, 60 -> mean 411/6 = 68.5; judge labels as published: 76, 92, 48, 64, 76, 60 -> 69.333…
//   (the paper's Table 2 prints 69.3, Table 3 |Δ| 16.0; Table 10 prints 77 failures = 8+4+27+28+4+6).
// With one model the filtered subset is its valid answers: 37/42, 45/46, 47/73, 64/72, 38/46, 30/44.
fn check_published(v: &Value, model: &str) {
    let models = v["models"].as_array().expect("models");
    assert_eq!(models.len(), 1);
    let m = &models[0];
    assert_eq!(m["model"], model);
    assert_eq!(m["invalid"], 77);
    approx(&m["accuracy_all"], 411.0 / 6.0);
    approx(&m["accuracy_judge_labels"], 416.0 / 6.0);
    let filtered = [
        37.0 / 42.0,
        45.0 / 46.0,
        47.0 / 73.0,
        64.0 / 72.0,
        38.0 / 46.0,
        30.0 / 44.0,
    ];
    approx(
        &m["accuracy_filtered"],
        100.0 * filtered.iter().sum::<f64>() / 6.0,
    );
    // |Δ|: finance 90−74, health 64−47, law 60−76 -> (16+17+16)/3; judge labels: 16, 16, 16.
    approx(&m["mean_abs_delta_all"], 49.0 / 3.0);
    approx(&m["mean_abs_delta_judge_labels"], 16.0);
    approx(&m["delta_all"]["law"], -16.0);
    let per = &m["per_dataset"];
    let rows = [
        ("finance_advanced", 50, 37, 13, 8, 1),
        ("finance_basic", 50, 45, 5, 4, 1),
        ("health_advanced", 100, 47, 53, 27, 1),
        ("health_basic", 100, 64, 36, 28, 0),
        ("law_advanced", 50, 38, 12, 4, 0),
        ("law_basic", 50, 30, 20, 6, 0),
    ];
    for (name, n, c, i, inv, ijc) in rows {
        let d = &per[name];
        assert_eq!(d["n"], n, "{name}");
        assert_eq!(d["correct"], c, "{name}");
        assert_eq!(d["incorrect"], i, "{name}");
        assert_eq!(d["invalid"], inv, "{name}");
        assert_eq!(d["invalid_judged_correct"], ijc, "{name}");
        assert_eq!(d["n_filtered"], n - inv, "{name}");
    }
}

#[test]
fn adversariskqa_published_results_rescored() {
    let Some(root) = adversariskqa_root() else {
        return;
    };
    let wd = Workdir::new();
    // Flat, as published: the model name comes from the file-name prefix.
    let results = root.join("results");
    let out = wd.run_ok(&[
        "eval",
        "score",
        "--suite",
        "adversariskqa",
        "--results",
        results.to_str().unwrap(),
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    check_published(&v, "Qwen-Qwen3-4B-Instruct-2507");
    // One sub-folder per model: the model is the folder name.
    for e in std::fs::read_dir(&results).unwrap() {
        let p = e.unwrap().path();
        let dest = wd.join("runs/qwen3-4b").join(p.file_name().unwrap());
        std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
        std::fs::copy(&p, dest).unwrap();
    }
    let out = wd.run_ok(&[
        "eval",
        "score",
        "--suite",
        "adversariskqa",
        "--results",
        "runs",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    check_published(&v, "qwen3-4b");
}

fn result_file(items: &[(&str, bool, &str)]) -> String {
    let results: Vec<Value> = items
        .iter()
        .map(|(q, ok, e)| {
            serde_json::json!({"knowledge": "k", "modified_knowledge": "m", "query": q,
                "question": format!("As we know, x. {q}"),
                "response": {"success": ok, "answer": if *ok { "An answer." } else { "" }},
                "evaluation": e})
        })
        .collect();
    serde_json::json!({ "results": results }).to_string()
}

#[test]
fn adversariskqa_two_models_filtered_subset() {
    let wd = Workdir::new();
    // a: law_basic q1 C, q2 I, q3 invalid -> 1/3; law_advanced q1 C -> 100.
    // b: law_basic q1 invalid, q2 C, q3 C -> 2/3; law_advanced q1 "Error" (judge error) -> none.
    // Filtered law_basic keeps q2 only: a 0%, b 100%. law_advanced keeps q1: a 100%, b none.
    wd.write(
        "r/a/law_basic.json",
        result_file(&[
            ("q1", true, "Correct"),
            ("q2", true, "Incorrect"),
            ("q3", false, "Incorrect"),
        ]),
    );
    wd.write(
        "r/a/law_advanced.json",
        result_file(&[("q1", true, "Correct")]),
    );
    wd.write(
        "r/b/law_basic.json",
        result_file(&[
            ("q1", false, "Correct"),
            ("q2", true, "Correct"),
            ("q3", true, "Correct"),
        ]),
    );
    wd.write(
        "r/b/law_advanced.json",
        result_file(&[("q1", true, "Error")]),
    );
    let out = wd.run_ok(&[
        "eval",
        "score",
        "--suite",
        "adversariskqa",
        "--results",
        "r",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let a = &v["models"][0];
    let b = &v["models"][1];
    assert_eq!(a["model"], "a");
    approx(&a["accuracy_all"], (100.0 / 3.0 + 100.0) / 2.0);
    approx(&a["accuracy_filtered"], 50.0);
    assert_eq!(a["invalid"], 1);
    assert_eq!(b["model"], "b");
    approx(&b["accuracy_all"], 200.0 / 3.0);
    approx(&b["accuracy_filtered"], 100.0);
    assert_eq!(b["per_dataset"]["law_advanced"]["judge_errors"]["Error"], 1);
    assert!(b["per_dataset"]["law_advanced"]["accuracy_all"].is_null());
    // Bad input: a file that is not JSON names the file.
    wd.write("bad/m/health_basic.json", "{not json");
    let (code, err) = wd.run_err(&[
        "eval",
        "score",
        "--suite",
        "adversariskqa",
        "--results",
        "bad",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("health_basic.json"), "{err}");
}
