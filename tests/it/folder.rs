//! The commands that write a folder without being a pipeline stage (`eval compare`, `eval chain-report`,
//! `eval batch-read`, `eval collect`, `eval collect-longform`) run on the folder contract: a second writer is refused with the lock's message (exit
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

/// The string `key` of every object of the array `list`.
fn field<'a>(list: &'a Value, key: &str) -> Vec<&'a str> {
    list.as_array()
        .unwrap()
        .iter()
        .map(|e| e[key].as_str().unwrap())
        .collect()
}

/// The manifest `m` lists exactly `want` as its outputs, in that order, each with the hash of its file in
/// `dir`.
fn assert_outputs(m: &Value, dir: &Path, want: &[&str]) {
    let names = field(&m["outputs"], "path");
    assert_eq!(names, want, "{m}");
    for n in names {
        assert_eq!(entry(&m["outputs"], n)["xxh3"], xxh3(&dir.join(n)), "{n}");
    }
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
    assert_outputs(&m, &ev, &["sword_plain.svg", "report.md"]);
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

/// JSON Lines of `values`.
fn jsonl(values: &[Value]) -> String {
    values.iter().map(|v| format!("{v}\n")).collect()
}

/// Two answered AdversaRiskQA samples (health basic, law advanced) and their judgements.
fn arqa_samples(wd: &Workdir) {
    let item = |id: &str, domain: &str, difficulty: &str, answer: &str| {
        serde_json::json!({"id": id, "suite": "adversariskqa", "answer": answer, "meta": {
            "domain": domain, "difficulty": difficulty, "index": 0, "knowledge": format!("K {id}"),
            "modified_knowledge": format!("MK {id}"), "query": format!("Q {id}?"),
            "prompt": format!("As we know, MK {id}. Q {id}?")}})
    };
    wd.write(
        "ans.jsonl",
        jsonl(&[
            item("a0", "health", "basic", "Vitamin C does not cure colds."),
            item("a1", "law", "advanced", "A forced contract is void."),
        ]),
    );
    let judged = |id: &str, verdict: &str| {
        serde_json::json!({"id": format!("judge:{id}"), "suite": "judge", "answer": verdict,
            "meta": {"target_id": id}})
    };
    wd.write(
        "judged.jsonl",
        jsonl(&[judged("a0", "Correct"), judged("a1", "Incorrect")]),
    );
}

fn collect_args(model: &str) -> Vec<&str> {
    vec![
        "eval",
        "collect",
        "--samples",
        "ans.jsonl",
        "--judged",
        "judged.jsonl",
        "--model",
        model,
        "--out",
        "results",
    ]
}

/// Every file under `dir` (relative path → bytes), the lock file left out.
fn tree(dir: &Path) -> std::collections::BTreeMap<String, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else if !p.ends_with(".sword.lock") {
                let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    out
}

/// `eval collect` runs on the folder contract in the model's folder of the results directory: refused while
/// another writer holds that folder, the two samples files hashed, an earlier result file of this model that
/// this collect does not write removed, another model's files untouched, the result files as before (their
/// bytes rebuilt here from the samples), and `score` reading both models past the manifests.
#[test]
fn collect_writes_a_models_results_under_its_lock_and_removes_its_stale_files() {
    let wd = Workdir::new();
    arqa_samples(&wd);
    wd.run_ok(&collect_args("other"));
    let other = tree(&wd.join("results/other"));
    assert_eq!(
        other.keys().collect::<Vec<_>>(),
        [
            "collect.manifest.json",
            "health_basic_evaluation.json",
            "law_advanced_evaluation.json"
        ]
    );
    // What an earlier collect of `m` wrote (a cell no longer answered), and a file of someone else's.
    wd.write("results/m/finance_basic_evaluation.json", "{}");
    wd.write("results/m/notes.txt", "mine");
    let held = sword::store::RunDir::open(&wd.join("results/m")).unwrap();
    let (code, err) = wd.run_err(&collect_args("m"));
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("locked"), "{err}");
    assert!(!wd.join("results/m/health_basic_evaluation.json").exists());
    assert!(!wd.join("results/m/collect.manifest.json").exists());
    drop(held);
    wd.run_ok(&collect_args("m"));
    let m_dir = wd.join("results/m");
    assert!(!m_dir.join("finance_basic_evaluation.json").exists());
    assert_eq!(wd.read("results/m/notes.txt"), b"mine");
    assert_eq!(
        tree(&wd.join("results/other")),
        other,
        "another model's files changed"
    );
    // The bytes `collect` has always written: pretty JSON, no newline after it.
    let expected = serde_json::json!({"model": "m", "dataset": "health_basic", "results": [{
        "knowledge": "K a0", "modified_knowledge": "MK a0", "query": "Q a0?",
        "question": "As we know, MK a0. Q a0?",
        "response": {"success": true, "answer": "Vitamin C does not cure colds."},
        "evaluation": "Correct"}]});
    assert_eq!(
        wd.read("results/m/health_basic_evaluation.json"),
        serde_json::to_string_pretty(&expected)
            .unwrap()
            .into_bytes()
    );
    let m = manifest(&m_dir, "collect");
    assert_eq!(
        m["removed"],
        serde_json::json!(["finance_basic_evaluation.json"])
    );
    assert_eq!(m["config"]["model"], "m");
    assert_eq!(m["counts"]["files"], 2);
    for (name, path) in [("ans.jsonl", "ans.jsonl"), ("judged.jsonl", "judged.jsonl")] {
        assert_eq!(entry(&m["inputs"], name)["xxh3"], xxh3(&wd.join(path)));
    }
    assert_outputs(
        &m,
        &m_dir,
        &[
            "health_basic_evaluation.json",
            "law_advanced_evaluation.json",
        ],
    );
    let out = wd.run_ok(&[
        "eval",
        "score",
        "--suite",
        "adversariskqa",
        "--results",
        "results",
        "--json",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(field(&v["models"], "model"), ["m", "other"]);
    // A model that names no folder of its own under --out (whose result files it would replace): exit 2.
    for model in ["", "..", ".", "/abs", "m/../.."] {
        let (code, err) = wd.run_err(&collect_args(model));
        assert_eq!(code, 2, "{model:?}: {err}");
        assert!(err.contains("--model"), "{err}");
    }
}

/// Long-form answers to one law-basic item in both conditions, the adversarial one decomposed into one fact
/// that its verifier holds correct.
fn longform_samples(wd: &Workdir) {
    let answer = |cond: &str, text: &str| {
        serde_json::json!({"id": format!("lf:{cond}"), "suite": "adversariskqa-longform", "model": "A",
            "answer": text, "meta": {"condition": cond, "domain": "law", "difficulty": "basic",
            "index": 0, "knowledge": "K", "modified_knowledge": "MK", "query": "Q?",
            "question": "As we know, MK. Q?", "prompt": "P"}})
    };
    wd.write(
        "ans.jsonl",
        jsonl(&[
            answer("adversarial", "Contracts need consent."),
            answer("non_adversarial", "A forced contract is void."),
        ]),
    );
    wd.write(
        "dec.jsonl",
        jsonl(&[serde_json::json!({"suite": "decompose", "model": "D",
            "answer": "{\"facts\": [\"Contracts need consent.\"]}",
            "meta": {"target_id": "lf:adversarial"}})]),
    );
    wd.write(
        "ver.jsonl",
        jsonl(&[serde_json::json!({"suite": "verify", "model": "V",
            "answer": "{\"correct\": true, \"rational\": []}",
            "meta": {"target_id": "lf:adversarial", "fact_index": 0}})]),
    );
}

fn collect_longform_args(model: &str) -> Vec<&str> {
    vec![
        "eval",
        "collect-longform",
        "--samples",
        "ans.jsonl",
        "--decomposed",
        "dec.jsonl",
        "--verified",
        "ver.jsonl",
        "--model",
        model,
        "--out",
        "res",
    ]
}

/// `eval collect-longform` runs on the folder contract: refused while another writer holds `--out`, the three
/// samples files hashed, an earlier fact-check file of this model that this collect does not write removed,
/// another model's fact-check files untouched, the files as before (their bytes rebuilt here), and `score`
/// leaving the manifest out of the files it reads.
#[test]
fn collect_longform_declares_only_its_models_files_and_writes_under_the_lock() {
    let wd = Workdir::new();
    longform_samples(&wd);
    wd.run_ok(&collect_longform_args("other"));
    let other_adv = wd.read("res/adversarial/other/law_basic_adv.json");
    let other_non = wd.read("res/non_adversarial/other/law_basic_non_adv.json");
    // What an earlier collect of `m` wrote (a cell no longer answered), and a file of someone else's.
    wd.write("res/adversarial/m/health_basic_adv.json", "{}");
    wd.write("res/adversarial/m/notes.txt", "mine");
    let collect_before = wd.read("res/collect.json");
    let held = sword::store::RunDir::open(&wd.join("res")).unwrap();
    let (code, err) = wd.run_err(&collect_longform_args("m"));
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("locked"), "{err}");
    assert!(!wd.join("res/adversarial/m/law_basic_adv.json").exists());
    assert_eq!(wd.read("res/collect.json"), collect_before);
    drop(held);
    let out = wd.run_ok(&collect_longform_args("m"));
    let res = wd.join("res");
    assert!(!res.join("adversarial/m/health_basic_adv.json").exists());
    assert_eq!(wd.read("res/adversarial/m/notes.txt"), b"mine");
    assert_eq!(
        wd.read("res/adversarial/other/law_basic_adv.json"),
        other_adv
    );
    assert_eq!(
        wd.read("res/non_adversarial/other/law_basic_non_adv.json"),
        other_non
    );
    // The bytes `collect-longform` has always written: pretty JSON and a newline.
    let expected = serde_json::json!({"model": "m", "dataset": "law_basic_adv",
        "fact_checker": {"answers": "A", "decomposition": "D", "verification": "V"},
        "results": [{"knowledge": "K", "modified_knowledge": "MK", "query": "Q?",
            "question": "As we know, MK. Q?",
            "response": {"success": true, "answer": "Contracts need consent."},
            "factuality": {"answer": "Contracts need consent.", "facts": ["Contracts need consent."],
                "fact_check": {"decisions": [{"fact": "Contracts need consent.", "correct": true,
                    "rational": []}]}}}]});
    assert_eq!(
        String::from_utf8(wd.read("res/adversarial/m/law_basic_adv.json")).unwrap(),
        serde_json::to_string_pretty(&expected).unwrap() + "\n"
    );
    // stdout and collect.json: the same summary.
    let summary: Value = serde_json::from_slice(&out.stdout).unwrap();
    let on_disk: Value = serde_json::from_slice(&wd.read("res/collect.json")).unwrap();
    assert_eq!(summary, on_disk);
    assert_eq!(
        summary["files"],
        serde_json::json!([
            "adversarial/m/law_basic_adv.json",
            "non_adversarial/m/law_basic_non_adv.json"
        ])
    );
    let m = manifest(&res, "collect-longform");
    assert_eq!(
        m["removed"],
        serde_json::json!(["adversarial/m/health_basic_adv.json"])
    );
    assert_eq!(
        (
            m["counts"]["answers"].as_u64(),
            m["counts"]["facts"].as_u64()
        ),
        (Some(2), Some(1))
    );
    for name in ["ans.jsonl", "dec.jsonl", "ver.jsonl"] {
        assert_eq!(entry(&m["inputs"], name)["xxh3"], xxh3(&wd.join(name)));
    }
    assert_outputs(
        &m,
        &res,
        &[
            "adversarial/m/law_basic_adv.json",
            "non_adversarial/m/law_basic_non_adv.json",
            "collect.json",
        ],
    );
    // `score` reads the four fact-check files and leaves out collect.json, not the manifest.
    let out = wd.run_ok(&[
        "eval",
        "score",
        "--suite",
        "adversariskqa-longform",
        "--results",
        "res",
    ]);
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ignored = field(&v["ignored"], "path");
    assert_eq!(ignored.len(), 1, "{ignored:?}");
    assert!(ignored[0].ends_with("collect.json"), "{ignored:?}");
    // A model whose folder name would be no folder of its own: exit 2, collect.json untouched.
    let before = wd.read("res/collect.json");
    for model in ["", "..", "."] {
        let (code, err) = wd.run_err(&collect_longform_args(model));
        assert_eq!(code, 2, "{model:?}: {err}");
        assert!(err.contains("--model"), "{err}");
    }
    assert_eq!(wd.read("res/collect.json"), before);
}

/// A domain or difficulty in the samples that cannot be part of a file name (a path separator in it) is bad
/// input of both collect commands: exit 2 naming the samples file, the line and the key, and nothing written
/// (inside the folder or beside it).
#[test]
fn collect_refuses_a_domain_or_difficulty_that_would_leave_the_folder() {
    let wd = Workdir::new();
    arqa_samples(&wd);
    let bad = |text: &[u8], key: &str, value: &str| {
        let mut lines: Vec<Value> = std::str::from_utf8(text)
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        lines[1]["meta"][key] = value.into();
        jsonl(&lines)
    };
    wd.write(
        "ans.jsonl",
        bad(&wd.read("ans.jsonl"), "domain", "../../escape"),
    );
    let (code, err) = wd.run_err(&collect_args("m"));
    assert_eq!(code, 2, "{err}");
    for part in ["ans.jsonl", "line 2", "`domain`", "../../escape"] {
        assert!(err.contains(part), "{part}: {err}");
    }
    let empty = |d: &str| !wd.join(d).exists() || tree(&wd.join(d)).is_empty();
    assert!(empty("results"), "something written");
    assert!(!wd.join("escape_basic_evaluation.json").exists());
    longform_samples(&wd);
    wd.write("ans.jsonl", bad(&wd.read("ans.jsonl"), "difficulty", "a/b"));
    let (code, err) = wd.run_err(&collect_longform_args("m"));
    assert_eq!(code, 2, "{err}");
    for part in ["ans.jsonl", "line 2", "`difficulty`", "a/b"] {
        assert!(err.contains(part), "{part}: {err}");
    }
    assert!(empty("res"), "something written");
}
