//! `sword eval compare` through the binary: a case computed by hand for every measure, a simulated
//! four-model case whose accuracies and shared errors are known, the intervals of `eval score`, bytes at any
//! `-j`, and bad inputs (exit 2 naming file and line, nothing written).

use crate::util::Workdir;
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;
use sword::eval::compare::measures::Row;
use sword::eval::compare::table::read_parquet;

/// One samples line as `eval run` writes it (fields under `meta`, the request's messages, the raw answer).
fn line(
    model: &str,
    stmt: &str,
    orig: &str,
    strat: &str,
    label: bool,
    lang: &str,
    answer: Option<&str>,
) -> String {
    json!({
        "id": format!("sword:{stmt}:{lang}"), "suite": "sword",
        "meta": {"statement_id": stmt, "original_id": orig, "language": lang, "strategy": strat, "label": label},
        "messages": [{"role": "user", "content": format!("{stmt} in {lang}\nIs the sentence True or False?")}],
        "answer": answer, "usage": {"prompt_tokens": 9, "completion_tokens": 1}, "model": model,
    })
    .to_string()
}

/// Rows by key columns: (measure, model, model_b, language, language_b, strategy, agreement).
type Key = (String, String, String, String, String, String, i32);

fn index(rows: &[Row]) -> HashMap<Key, Row> {
    rows.iter()
        .map(|r| {
            let s = |x: &Option<String>| x.clone().unwrap_or_default();
            (
                (
                    r.measure.clone(),
                    s(&r.model),
                    s(&r.model_b),
                    s(&r.language),
                    s(&r.language_b),
                    s(&r.strategy),
                    r.agreement.unwrap_or(-1),
                ),
                r.clone(),
            )
        })
        .collect()
}

fn k(
    measure: &str,
    model: &str,
    model_b: &str,
    lang: &str,
    lang_b: &str,
    strat: &str,
    agree: i32,
) -> Key {
    (
        measure.into(),
        model.into(),
        model_b.into(),
        lang.into(),
        lang_b.into(),
        strat.into(),
        agree,
    )
}

/// The value and n of a row; panics naming the key when it is missing.
fn vn(ix: &HashMap<Key, Row>, key: Key) -> (Option<f64>, i64) {
    let r = ix.get(&key).unwrap_or_else(|| panic!("no row {key:?}"));
    (r.value, r.n.unwrap_or(-1))
}

pub(crate) fn hand_samples() -> String {
    // 3 statements: o1 (ORG, true), o1#SS (SS, false, original o1), o2 (ORG, true); 2 languages; 2 models.
    let s = [
        ("o1", "o1", "ORG", true),
        ("o1#SS", "o1", "SS", false),
        ("o2", "o2", "ORG", true),
    ];
    // (model, statement index, language, answer): A: o1 ✓✓, o1#SS ✓✗, o2 ✗ and unparsed; B: o1 ✓✗, o1#SS ✓✓, o2 ✓✓.
    let answers = [
        ("A", 0, "en", "True"),
        ("A", 0, "ko", "True"),
        ("A", 1, "en", "False"),
        ("A", 1, "ko", "True"),
        ("A", 2, "en", "False"),
        ("A", 2, "ko", "Maybe."),
        ("B", 0, "en", "True"),
        ("B", 0, "ko", "False"),
        ("B", 1, "en", "False"),
        ("B", 1, "ko", "False"),
        ("B", 2, "en", "True"),
        ("B", 2, "ko", "True"),
    ];
    let mut text = String::new();
    for (m, i, l, a) in answers {
        let (stmt, orig, strat, label) = s[i];
        text.push_str(&line(m, stmt, orig, strat, label, l, Some(a)));
        text.push('\n');
    }
    text
}

#[test]
fn hand_computed_case_every_measure() {
    let wd = Workdir::new();
    wd.write("in/samples.jsonl", hand_samples());
    wd.run_ok(&[
        "eval",
        "compare",
        "--results",
        "in/samples.jsonl",
        "--out",
        "out",
        "--bootstrap",
        "1000",
    ]);
    let rows = read_parquet(&wd.join("out/figures.parquet")).unwrap();
    let ix = index(&rows);
    let v = |measure: &str, model: &str, lang: &str, strat: &str| {
        vn(&ix, k(measure, model, "", lang, "", strat, -1))
    };
    // accuracy = right / asked, per language × strategy.
    // A en ORG: o1 ✓, o2 ✗ → 1/2; A ko ORG: o1 ✓, o2 unparsed (wrong) → 1/2; A en SS 1/1; A ko SS 0/1.
    assert_eq!(v("accuracy", "A", "en", "ORG"), (Some(0.5), 2));
    assert_eq!(v("accuracy", "A", "ko", "ORG"), (Some(0.5), 2));
    assert_eq!(v("accuracy", "A", "en", "SS"), (Some(1.0), 1));
    assert_eq!(v("accuracy", "A", "ko", "SS"), (Some(0.0), 1));
    // B en ORG 2/2, ko ORG: o1 ✗, o2 ✓ → 1/2; SS 1/1 in both.
    assert_eq!(v("accuracy", "B", "en", "ORG"), (Some(1.0), 2));
    assert_eq!(v("accuracy", "B", "ko", "ORG"), (Some(0.5), 2));
    assert_eq!(v("accuracy", "B", "ko", "SS"), (Some(1.0), 1));
    // No PSS statement: the cell's row says so (no value, n = 0).
    assert_eq!(v("accuracy", "A", "en", "PSS"), (None, 0));
    // accuracy_pooled over both languages' answers: A ORG 2/4, A SS 1/2; B ORG 3/4, B SS 2/2.
    assert_eq!(v("accuracy_pooled", "A", "", "ORG"), (Some(0.5), 4));
    assert_eq!(v("accuracy_pooled", "A", "", "SS"), (Some(0.5), 2));
    assert_eq!(v("accuracy_pooled", "B", "", "ORG"), (Some(0.75), 4));
    assert_eq!(v("accuracy_pooled", "B", "", "SS"), (Some(1.0), 2));
    // accuracy_distorted: the SS statement only. A en 1/1, ko 0/1; B 1/1, 1/1.
    assert_eq!(v("accuracy_distorted", "A", "en", ""), (Some(1.0), 1));
    assert_eq!(v("accuracy_distorted", "A", "ko", ""), (Some(0.0), 1));
    assert_eq!(v("accuracy_distorted", "B", "ko", ""), (Some(1.0), 1));
    // gap = max − min over languages; relative = gap / max; n = the strategy's statements.
    // A ORG: 0.5 − 0.5 = 0, 0/0.5 = 0; A SS: 1 − 0 = 1, 1/1 = 1. B ORG: 1 − 0.5 = 0.5, 0.5/1 = 0.5; B SS 0, 0.
    assert_eq!(v("gap", "A", "", "ORG"), (Some(0.0), 2));
    assert_eq!(v("gap_relative", "A", "", "ORG"), (Some(0.0), 2));
    assert_eq!(v("gap", "A", "", "SS"), (Some(1.0), 1));
    assert_eq!(v("gap_relative", "A", "", "SS"), (Some(1.0), 1));
    assert_eq!(v("gap", "B", "", "ORG"), (Some(0.5), 2));
    assert_eq!(v("gap_relative", "B", "", "ORG"), (Some(0.5), 2));
    assert_eq!(v("gap", "B", "", "SS"), (Some(0.0), 1));
    // east_asian_gap = mean(Western present: en) − mean(ko): A ORG 0.5 − 0.5 = 0, A SS 1 − 0 = 1; B ORG 1 − 0.5.
    assert_eq!(v("east_asian_gap", "A", "", "ORG"), (Some(0.0), 2));
    assert_eq!(v("east_asian_gap", "A", "", "SS"), (Some(1.0), 1));
    assert_eq!(v("east_asian_gap", "B", "", "ORG"), (Some(0.5), 2));
    // all_languages_correct: A ORG: o1 right in both, o2 not → 1/2; A SS: o1#SS wrong in ko → 0/1.
    // B ORG: o1 wrong in ko, o2 right in both → 1/2; B SS 1/1.
    assert_eq!(v("all_languages_correct", "A", "", "ORG"), (Some(0.5), 2));
    assert_eq!(v("all_languages_correct", "A", "", "SS"), (Some(0.0), 1));
    assert_eq!(v("all_languages_correct", "B", "", "SS"), (Some(1.0), 1));
    // Effects need PSS (POS): undefined here, the row says so with its n (SS statements in en: 1).
    assert_eq!(v("effect_pss_ss", "A", "en", ""), (None, 1));
    assert_eq!(v("effect_pss_ss", "A", "", ""), (None, 2));
    // agreement over L = 2 languages. A ORG: o1 k = 2, o2 k = 0 → shares k0 1/2, k1 0, k2 1/2 (n 2).
    let agree = |model: &str, strat: &str, kk: i32| {
        vn(&ix, k("agreement_share", model, "", "", "", strat, kk))
    };
    assert_eq!(agree("A", "ORG", 0), (Some(0.5), 2));
    assert_eq!(agree("A", "ORG", 1), (Some(0.0), 2));
    assert_eq!(agree("A", "ORG", 2), (Some(0.5), 2));
    // A SS: o1#SS right in en only → k = 1.
    assert_eq!(agree("A", "SS", 1), (Some(1.0), 1));
    // B ORG: o1 k = 1, o2 k = 2.
    assert_eq!(agree("B", "ORG", 1), (Some(0.5), 2));
    assert_eq!(agree("B", "ORG", 2), (Some(0.5), 2));
    // accuracy_by_agreement: among statements at level k, the share this language got right (n = statements at k).
    let by = |model: &str, lang: &str, strat: &str, kk: i32| {
        vn(
            &ix,
            k("accuracy_by_agreement", model, "", lang, "", strat, kk),
        )
    };
    assert_eq!(by("A", "en", "ORG", 0), (Some(0.0), 1)); // o2: en wrong
    assert_eq!(by("A", "en", "ORG", 1), (None, 0)); // no statement at k = 1
    assert_eq!(by("A", "en", "ORG", 2), (Some(1.0), 1)); // o1
    assert_eq!(by("A", "en", "SS", 1), (Some(1.0), 1)); // o1#SS: en right
    assert_eq!(by("A", "ko", "SS", 1), (Some(0.0), 1)); // … ko wrong
    assert_eq!(by("B", "en", "ORG", 1), (Some(1.0), 1)); // o1: en right, ko wrong
    assert_eq!(by("B", "ko", "ORG", 1), (Some(0.0), 1));
    assert_eq!(by("B", "ko", "ORG", 2), (Some(1.0), 1)); // o2
                                                         // jaccard_languages (en, ko): A ORG: en right {o1}, ko right {o1} → 1/1; A SS: {o1#SS} vs {} → 0/1.
                                                         // B ORG: en {o1, o2}, ko {o2} → 1/2; B SS: {o1#SS} both → 1.
    let jl = |model: &str, strat: &str| {
        vn(
            &ix,
            k("jaccard_languages", model, "", "en", "ko", strat, -1),
        )
    };
    assert_eq!(jl("A", "ORG"), (Some(1.0), 2));
    assert_eq!(jl("A", "SS"), (Some(0.0), 1));
    assert_eq!(jl("B", "ORG"), (Some(0.5), 2));
    assert_eq!(jl("B", "SS"), (Some(1.0), 1));
    // jaccard_models (A, B): en ORG: A {o1}, B {o1, o2} → 1/2; ko ORG: A {o1}, B {o2} → 0/2;
    // en SS: both {o1#SS} → 1; ko SS: A {}, B {o1#SS} → 0/1.
    let jm = |lang: &str, strat: &str| vn(&ix, k("jaccard_models", "A", "B", lang, "", strat, -1));
    assert_eq!(jm("en", "ORG"), (Some(0.5), 2));
    assert_eq!(jm("ko", "ORG"), (Some(0.0), 2));
    assert_eq!(jm("en", "SS"), (Some(1.0), 1));
    assert_eq!(jm("ko", "SS"), (Some(0.0), 1));
    // unparsed: A ko 1 of 3 answers ("Maybe."), en 0 of 3; unanswered none.
    assert_eq!(v("unparsed", "A", "ko", ""), (Some(1.0 / 3.0), 3));
    assert_eq!(v("unparsed", "A", "en", ""), (Some(0.0), 3));
    assert_eq!(v("unanswered", "B", "ko", ""), (Some(0.0), 3));
    // Intervals resample the two originals: A en ORG is 1 when only o1 is drawn (probability 1/4), 0 when
    // only o2 (1/4), 1/2 otherwise, so over 1000 replicates its 2.5 % and 97.5 % quantiles are 0 and 1.
    let r = &ix[&k("accuracy", "A", "", "en", "", "ORG", -1)];
    assert_eq!((r.lo, r.hi), (Some(0.0), Some(1.0)));
    // B en ORG is right on both originals: every replicate gives 1.
    let r = &ix[&k("accuracy", "B", "", "en", "", "ORG", -1)];
    assert_eq!((r.lo, r.hi), (Some(1.0), Some(1.0)));
    // The CSV holds the same rows.
    let csv = String::from_utf8(wd.read("out/figures.csv")).unwrap();
    assert_eq!(csv.lines().count(), rows.len() + 1);
    assert!(
        csv.contains("\njaccard_models,A,B,plain,ko,,ORG,,,0,,,2\n"),
        "{csv}"
    );
    // Every figure is in the page, and the page loads nothing.
    let html = String::from_utf8(wd.read("out/report.html")).unwrap();
    assert_eq!(
        html.matches("<svg").count(),
        std::fs::read_dir(wd.join("out/figures")).unwrap().count()
    );
    assert!(!html.contains("src=") && !html.contains("href=") && !html.contains("url("));
}

/// Four simulated models, 8 languages, 5 strategies, `n` originals. True accuracies are known: model m has
/// `base[m]`, Western languages +0.05, ko and ja −0.15, ORG +0.05 and PSS/POS −0.15 for models 0 and 1 (the
/// swap effect), none for 2 and 3. Models 0 and 1 draw their answers from one shared uniform per
/// (statement, language), so they share errors; models 2 and 3 draw independently.
fn truth(m: usize, lang: usize, strat: usize) -> f64 {
    let base = [0.70, 0.72, 0.70, 0.72][m];
    let l = if lang >= 6 { -0.15 } else { 0.05 };
    let s = match strat {
        0 => 0.05,
        3 | 4 if m < 2 => -0.15,
        _ => 0.0,
    };
    base + l + s
}

const LANGS: [&str; 8] = ["en", "fr", "de", "es", "it", "pt", "ko", "ja"];
const STRATS: [&str; 5] = ["ORG", "SS", "OS", "PSS", "POS"];

fn simulate(wd: &Workdir, originals: usize, seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut files = vec![String::new(); 4];
    for o in 0..originals {
        let orig = format!("Q{o}|P1|Q{}", o + 1);
        for (si, s) in STRATS.iter().enumerate() {
            let stmt = if si == 0 {
                orig.clone()
            } else {
                format!("{orig}#{s}")
            };
            for (li, l) in LANGS.iter().enumerate() {
                let shared: f64 = rng.random();
                for (m, text) in files.iter_mut().enumerate() {
                    let u = if m < 2 { shared } else { rng.random() };
                    let right = u < truth(m, li, si);
                    let label = si == 0;
                    let says_true = right == label;
                    let a = if says_true { "True." } else { "False." };
                    text.push_str(&line(
                        &format!("model-{m}"),
                        &stmt,
                        &orig,
                        s,
                        label,
                        l,
                        Some(a),
                    ));
                    text.push('\n');
                }
            }
        }
    }
    for (m, text) in files.iter().enumerate() {
        wd.write(&format!("run/eval/model-{m}/sword/samples.jsonl"), text);
    }
}

#[test]
fn simulated_four_models_recover_accuracies_effects_and_shared_errors() {
    let wd = Workdir::new();
    let n = 600;
    simulate(&wd, n, 11);
    // A folder with another suite's samples beside: skipped.
    wd.write(
        "run/eval/model-0/sycophancy/samples.jsonl",
        "{\"suite\":\"sycophancy\",\"question_id\":\"q\"}\n",
    );
    wd.run_ok(&[
        "eval",
        "compare",
        "--results",
        "run/eval",
        "--out",
        "cmp",
        "--bootstrap",
        "400",
        "--seed",
        "3",
    ]);
    let rows = read_parquet(&wd.join("cmp/figures.parquet")).unwrap();
    let ix = index(&rows);
    let sd = |p: f64, n: f64| (p * (1.0 - p) / n).sqrt();
    for m in 0..4 {
        let model = format!("model-{m}");
        for (li, l) in LANGS.iter().enumerate() {
            for (si, s) in STRATS.iter().enumerate() {
                let p = truth(m, li, si);
                let (v, nn) = vn(&ix, k("accuracy", &model, "", l, "", s, -1));
                assert_eq!(nn, n as i64);
                let v = v.unwrap();
                // 4.5 standard deviations: all 160 cells pass by chance with probability > 0.999.
                assert!(
                    (v - p).abs() < 4.5 * sd(p, n as f64),
                    "{model} {l} {s}: {v} vs {p}"
                );
                let r = &ix[&k("accuracy", &model, "", l, "", s, -1)];
                assert!(r.lo.unwrap() <= v && v <= r.hi.unwrap(), "{r:?}");
            }
        }
        // East-Asian gap: 0.05 − (−0.15) = 0.20 on every strategy; the mean of 6 and of 2 languages.
        let (ea, _) = vn(&ix, k("east_asian_gap", &model, "", "", "", "SS", -1));
        let tol = 4.5 * (sd(0.7, 6.0 * n as f64).powi(2) + sd(0.6, 2.0 * n as f64).powi(2)).sqrt();
        assert!(
            (ea.unwrap() - 0.20).abs() < tol,
            "{model}: east_asian_gap {ea:?}"
        );
        // The pooled swap effect PSS − SS: −0.15 for models 0 and 1 (interval below 0), 0 for 2 and 3.
        let e = &ix[&k("effect_pss_ss", &model, "", "", "", "", -1)];
        if m < 2 {
            assert!(e.hi.unwrap() < 0.0, "{model}: {e:?}");
            assert!((e.value.unwrap() + 0.15).abs() < 0.05, "{e:?}");
        } else {
            assert!(e.lo.unwrap() < 0.0 && e.hi.unwrap() > 0.0, "{model}: {e:?}");
        }
    }
    // Shared errors: models 0 and 1 answer from one uniform, so the sets they get right are nested:
    // Jaccard = min(p0, p1) / max(p0, p1); models 2 and 3 are independent: p2 p3 / (p2 + p3 − p2 p3).
    for (li, l) in LANGS.iter().enumerate() {
        let (p0, p1) = (truth(0, li, 1), truth(1, li, 1));
        let (shared, nn) = vn(
            &ix,
            k("jaccard_models", "model-0", "model-1", l, "", "SS", -1),
        );
        assert_eq!(nn, n as i64);
        assert!(
            (shared.unwrap() - p0.min(p1) / p0.max(p1)).abs() < 0.04,
            "{l}: {shared:?}"
        );
        let (p2, p3) = (truth(2, li, 1), truth(3, li, 1));
        let (indep, _) = vn(
            &ix,
            k("jaccard_models", "model-2", "model-3", l, "", "SS", -1),
        );
        assert!(
            (indep.unwrap() - p2 * p3 / (p2 + p3 - p2 * p3)).abs() < 0.06,
            "{l}: {indep:?}"
        );
        assert!(shared.unwrap() > indep.unwrap() + 0.2);
    }
    // Agreement over 8 languages: level 8 gives 1 and level 0 gives 0 wherever a statement is at that level.
    for r in rows.iter().filter(|r| r.measure == "accuracy_by_agreement") {
        match (r.agreement, r.value) {
            (Some(8), Some(v)) => assert_eq!(v, 1.0),
            (Some(0), Some(v)) => assert_eq!(v, 0.0),
            _ => {}
        }
    }
    let html = String::from_utf8(wd.read("cmp/report.html")).unwrap();
    assert!(html.contains("model-3") && html.contains("Fig. 4"));
}

#[test]
fn intervals_equal_eval_score_and_bytes_do_not_depend_on_threads() {
    let wd = Workdir::new();
    simulate(&wd, 60, 5);
    let args = |j: &str, out: &str| -> Vec<String> {
        [
            "-j",
            j,
            "eval",
            "compare",
            "--results",
            "run/eval",
            "--out",
            out,
            "--bootstrap",
            "300",
            "--seed",
            "9",
        ]
        .map(String::from)
        .to_vec()
    };
    let a1: Vec<String> = args("1", "j1");
    let a2: Vec<String> = args("2", "j2");
    wd.run_ok(&a1.iter().map(String::as_str).collect::<Vec<_>>());
    wd.run_ok(&a2.iter().map(String::as_str).collect::<Vec<_>>());
    for f in [
        "figures.parquet",
        "figures.csv",
        "report.html",
        "report.md",
        "figures/fig3_plain.svg",
        "answers.parquet",
        "suspects.parquet",
        "figures/upset_plain_model-0.svg",
    ] {
        assert!(
            wd.read(&format!("j1/{f}")) == wd.read(&format!("j2/{f}")),
            "{f} differs between -j 1 and -j 2"
        );
    }
    // eval score on model-2's file alone draws the same replicates: identical estimates and bounds.
    let out = wd.run_ok(&[
        "eval",
        "score",
        "--suite",
        "sword",
        "--results",
        "run/eval/model-2/sword/samples.jsonl",
        "--bootstrap",
        "300",
        "--seed",
        "9",
    ]);
    let score: Value = serde_json::from_slice(&out.stdout).unwrap();
    let m = &score["models"][0]["measures"];
    let rows = read_parquet(&wd.join("j1/figures.parquet")).unwrap();
    let ix = index(&rows);
    let mut compared = 0;
    for l in LANGS {
        for s in STRATS {
            let r = &ix[&k("accuracy", "model-2", "", l, "", s, -1)];
            let e = &m[format!("acc.{l}.{s}")];
            same(&[r.value, r.lo, r.hi], e, &format!("acc.{l}.{s}"));
            compared += 1;
        }
    }
    for s in STRATS {
        for (ours, theirs) in [("gap", "abs"), ("gap_relative", "rel")] {
            let r = &ix[&k(ours, "model-2", "", "", "", s, -1)];
            let e = &m[format!("gap.{s}.{theirs}")];
            same(&[r.value, r.lo, r.hi], e, &format!("gap.{s}.{theirs}"));
            compared += 1;
        }
    }
    assert_eq!(compared, 50);
}

/// Our (value, lo, hi) equal `eval score`'s (estimate, lo, hi): to the last bit in fact (Python's exact
/// float parser reads them equal), but serde_json's default parser may read `eval score`'s shortest decimal
/// back one unit in the last place off, so the comparison allows 1e-14 relative.
fn same(ours: &[Option<f64>; 3], theirs: &Value, what: &str) {
    for (o, name) in ours.iter().zip(["estimate", "lo", "hi"]) {
        let (o, t) = (o.unwrap(), theirs[name].as_f64().unwrap());
        assert!(
            (o - t).abs() <= 1e-14 * t.abs().max(1e-300),
            "{what} {name}: {o} vs {t}"
        );
    }
}

/// A samples line without one of its `meta` fields.
fn without(line: &str, field: &str) -> String {
    let mut v: Value = serde_json::from_str(line).unwrap();
    v["meta"].as_object_mut().unwrap().remove(field);
    v.to_string()
}

/// Every file under `dir` with its bytes.
fn snapshot(dir: &Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.extend(snapshot(&p));
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

#[test]
fn bad_input_exits_2_naming_file_and_line_and_writes_nothing() {
    let wd = Workdir::new();
    let good = line("A", "s1", "o1", "ORG", true, "en", Some("True"));
    let cases: Vec<(&str, String, Vec<&str>)> = vec![
        (
            "missing strategy",
            format!(
                "{good}\n{}\n",
                without(
                    &line("A", "s2", "o2", "ORG", true, "en", Some("True")),
                    "strategy"
                )
            ),
            vec!["line 2", "no strategy"],
        ),
        (
            "unknown language",
            format!(
                "{good}\n{}\n",
                line("A", "s2", "o2", "ORG", true, "xx", Some("True"))
            ),
            vec!["line 2", "unknown language `xx`"],
        ),
        (
            "unknown strategy",
            format!(
                "{good}\n{}\n",
                line("A", "s2", "o2", "RND", false, "en", None)
            ),
            vec!["line 2", "unknown strategy `RND`"],
        ),
        (
            "label not a boolean",
            format!(
                "{good}\n{}\n",
                line("A", "s2", "o2", "ORG", true, "en", Some("True"))
                    .replace("\"label\":true", "\"label\":\"maybe\"")
            ),
            vec!["line 2", "no boolean label"],
        ),
        ("not JSON", format!("{good}\n{{oops\n"), vec!["line 2"]),
        (
            "second answer",
            format!("{good}\n{good}\n"),
            vec!["line 2", "second answer of statement `s1` in `en`"],
        ),
        (
            "statement changes",
            format!(
                "{good}\n{}\n",
                line("B", "s1", "o1", "SS", false, "en", Some("True"))
            ),
            vec!["line 2", "statement `s1`"],
        ),
        ("empty", "\n\n".to_string(), vec!["no SWORD answer"]),
        (
            "no statement in common",
            format!(
                "{good}\n{}\n",
                line("B", "s9", "o9", "ORG", true, "en", Some("True"))
            ),
            vec!["no statement in common", "`A`", "`B`"],
        ),
    ];
    // An output folder with an earlier comparison in it: a failed run must leave it as it was.
    wd.write("ok/samples.jsonl", format!("{good}\n"));
    wd.run_ok(&[
        "eval",
        "compare",
        "--results",
        "ok/samples.jsonl",
        "--out",
        "out",
        "--bootstrap",
        "10",
    ]);
    let before = snapshot(&wd.join("out"));
    assert!(before.iter().any(|(p, _)| p.ends_with("figures.parquet")));
    for (what, text, needles) in &cases {
        let name = format!("bad-{}.jsonl", what.replace(' ', "-"));
        wd.write(&name, text);
        for out in ["out", "fresh"] {
            let (code, err) = wd.run_err(&["eval", "compare", "--results", &name, "--out", out]);
            assert_eq!(code, 2, "{what}: {err}");
            assert!(err.contains(&name), "{what}: {err} does not name the file");
            for n in needles {
                assert!(err.contains(n), "{what}: {err} lacks {n}");
            }
            assert!(!err.contains("panicked"), "{err}");
        }
        assert_eq!(snapshot(&wd.join("out")), before, "{what}: out/ changed");
        assert!(
            snapshot(&wd.join("fresh")).is_empty(),
            "{what}: fresh/ has files"
        );
    }
    // The same model in two inputs: refused, naming both.
    wd.write("x/samples.jsonl", format!("{good}\n"));
    wd.write("y/samples.jsonl", format!("{good}\n"));
    let (code, err) = wd.run_err(&["eval", "compare", "--results", "x", "y", "--out", "fresh"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("x/samples.jsonl") && err.contains("y/samples.jsonl") && err.contains("`A`"),
        "{err}"
    );
    // A folder without samples, and a path that does not exist.
    std::fs::create_dir_all(wd.join("empty")).unwrap();
    let (code, err) = wd.run_err(&["eval", "compare", "--results", "empty", "--out", "fresh"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("no samples.jsonl"), "{err}");
    let (code, _) = wd.run_err(&[
        "eval",
        "compare",
        "--results",
        "missing.jsonl",
        "--out",
        "fresh",
    ]);
    assert_eq!(code, 4);
    assert!(snapshot(&wd.join("fresh")).is_empty());
}

/// `make eval-compare` over RUN/eval/*/sword/ (no endpoint needed), rerun only when answers change, and the
/// nightly summary linking the report.
#[test]
fn make_eval_compare_and_the_nightly_summary_link() {
    if std::process::Command::new("make")
        .arg("--version")
        .output()
        .is_err()
    {
        eprintln!("make is not installed: skipping the make eval-compare check");
        return;
    }
    let wd = Workdir::new();
    simulate(&wd, 20, 2);
    // Another suite beside the SWORD answers is not read.
    wd.write(
        "run/eval/model-0/sycophancy/samples.jsonl",
        "{\"suite\":\"sycophancy\"}\n",
    );
    let make = |target: &str| {
        std::process::Command::new("make")
            .arg("-f")
            .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline/Makefile"))
            .arg(target)
            .arg(format!("SWORD={}", env!("CARGO_BIN_EXE_sword")))
            .arg(format!("RUN={}", wd.join("run").display()))
            .arg("BOOTSTRAP=20")
            .env("SWORD_QUIET", "1")
            .current_dir(wd.path())
            .output()
            .unwrap()
    };
    let out = make("eval-compare");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let html = wd.read("run/eval-compare/report.html");
    assert!(String::from_utf8_lossy(&html).contains("model-3"));
    // Nothing changed: nothing is redone.
    let out = make("eval-compare");
    assert!(String::from_utf8_lossy(&out.stdout)
        .lines()
        .all(|l| !l.contains("eval compare")));
    // The nightly summary links the comparison of the models evaluated on the run.
    wd.write(
        "run/extract.manifest.json",
        r#"{"stage":"extract","crate_version":"0","git_commit":"x","config":null,"seed":null,"inputs":[],"outputs":[],"counts":{},"rejects":{},"timings":{},"extra":null}"#,
    );
    std::fs::create_dir_all(wd.join("run/logs")).unwrap();
    let out = make("summary");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let summary = String::from_utf8(wd.read("run/logs/summary.txt")).unwrap();
    assert!(
        summary.contains("models compared: ") && summary.contains("eval-compare/report.html"),
        "{summary}"
    );
    // With the run's benchmark beside the answers, the comparison is redone and split by falsity tier.
    let ids: Vec<(String, &str)> = (0..20)
        .flat_map(|o| {
            STRATS.iter().enumerate().map(move |(si, s)| {
                let orig = format!("Q{o}|P1|Q{}", o + 1);
                (
                    if si == 0 {
                        orig.clone()
                    } else {
                        format!("{orig}#{s}")
                    },
                    *s,
                )
            })
        })
        .collect();
    let rows: Vec<BenchRow> = ids
        .iter()
        .map(|(id, s)| (id.as_str(), *s, (*s != "ORG").then_some("certain")))
        .collect();
    let bench = wd.join("run/sword.parquet");
    write_benchmark(&wd, bench.to_str().unwrap(), &rows, false);
    let out = make("eval-compare");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("--benchmark"));
    let report = String::from_utf8(wd.read("run/eval-compare/report.md")).unwrap();
    assert!(report.contains("Accuracy by falsity tier"));
}

/// A statement of a benchmark: (id, strategy, falsity tier).
type BenchRow<'a> = (&'a str, &'a str, Option<&'a str>);

/// `eval compare` of the tier case's answers into `out` (with `--benchmark bench`): exit code and stderr.
fn compare_tiers(wd: &Workdir, out: &str, bench: Option<&str>) -> (i32, String) {
    let mut args = vec![
        "eval",
        "compare",
        "--results",
        "in/samples.jsonl",
        "--out",
        out,
        "--bootstrap",
        "200",
    ];
    if let Some(b) = bench {
        args.extend(["--benchmark", b]);
    }
    let o = wd.command(&args).output().unwrap();
    (
        o.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// A `sword.parquet` (written by export's writer, format version 2) holding `rows` = (statement id,
/// strategy, falsity tier); the entities have no labels, which `--benchmark` does not read. With
/// `format_1`, the same file without the `falsity` column (as export wrote it before the tier).
fn write_benchmark(wd: &Workdir, path: &str, rows: &[BenchRow], format_1: bool) {
    use sword::core::falsity::Tier;
    use sword::core::ids::{Pid, Qid};
    use sword::core::records::Rank;
    use sword::stages::distort::{Distortion, Strategy};
    let q = |s: &str| Qid::parse(s).unwrap();
    let rows: Vec<Distortion> = rows
        .iter()
        .enumerate()
        .map(|(i, &(id, strategy, tier))| Distortion {
            statement_id: id.to_string(),
            original_id: i as u32,
            strategy: Strategy::parse(strategy).unwrap(),
            subject: q("Q1"),
            property: Pid::parse("P1").unwrap(),
            object: q("Q2"),
            replaced_role: None,
            original_entity: None,
            replacement_entity: None,
            cosine: None,
            cosine_centred: None,
            attempts: 1,
            original_rank: Rank::Normal,
            original_statement_id: String::new(),
            falsity: tier.map(|t| Tier::parse(t).unwrap()),
        })
        .collect();
    let langs: Vec<String> = LANGS.iter().map(|l| l.to_string()).collect();
    let lookup = sword::stages::export::EntityLookup::new(langs, Vec::new(), Vec::new());
    let bytes =
        sword::stages::export::write_sword(Vec::new(), &rows, &lookup, None, Path::new(path))
            .unwrap();
    let bytes = if format_1 {
        use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
        let reader = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
            .unwrap()
            .build()
            .unwrap();
        let batches: Vec<_> = reader
            .map(|b| {
                let mut b = b.unwrap();
                let at = b.schema().index_of("falsity").unwrap();
                b.remove_column(at);
                b
            })
            .collect();
        let mut out = Vec::new();
        let mut w =
            parquet::arrow::ArrowWriter::try_new(&mut out, batches[0].schema(), None).unwrap();
        for b in &batches {
            w.write(b).unwrap();
        }
        w.close().unwrap();
        out
    } else {
        bytes
    };
    wd.write(path, bytes);
}

/// The statements of the tier case: (id, original, strategy, tier), one model, en and ko.
const TIER_CASE: [(&str, &str, &str, Option<&str>); 11] = [
    ("0-ORG", "0", "ORG", None),
    ("0-SS", "0", "SS", Some("open")),
    ("0-PSS", "0", "PSS", Some("certain")),
    ("1-ORG", "1", "ORG", None),
    ("1-SS", "1", "SS", Some("certain")),
    ("1-PSS", "1", "PSS", Some("certain")),
    ("2-ORG", "2", "ORG", None),
    ("2-SS", "2", "SS", Some("likely")),
    ("2-PSS", "2", "PSS", Some("open")),
    ("2-OS", "2", "OS", Some("certain")),
    ("2-POS", "2", "POS", Some("certain")),
];

/// The tier case's samples: per statement the answers in en and ko, right (✓) or wrong (✗); 2-POS in ko
/// has no verdict (wrong).
fn tier_samples() -> String {
    // ✓ = the label's verdict.
    let right = [
        (true, true),   // 0-ORG
        (true, false),  // 0-SS open
        (false, false), // 0-PSS certain
        (true, false),  // 1-ORG
        (true, true),   // 1-SS certain
        (true, false),  // 1-PSS certain
        (true, true),   // 2-ORG
        (false, true),  // 2-SS likely
        (true, true),   // 2-PSS open
        (true, true),   // 2-OS certain
        (false, false), // 2-POS certain (ko: no verdict)
    ];
    let mut text = String::new();
    for (&(id, orig, strat, _), &(en, ko)) in TIER_CASE.iter().zip(&right) {
        let label = strat == "ORG";
        for (lang, ok) in [("en", en), ("ko", ko)] {
            let verdict = if ok == label { "True" } else { "False" };
            let answer = if id == "2-POS" && lang == "ko" {
                "Maybe."
            } else {
                verdict
            };
            text.push_str(&line("A", id, orig, strat, label, lang, Some(answer)));
            text.push('\n');
        }
    }
    text
}

fn tier_key(
    measure: &str,
    lang: &str,
    strat: &str,
    tier: &str,
) -> (String, String, String, String) {
    (measure.into(), lang.into(), strat.into(), tier.into())
}

#[test]
fn accuracy_by_tier_hand_computed_and_nothing_else_changes() {
    let wd = Workdir::new();
    wd.write("in/samples.jsonl", tier_samples());
    let rows: Vec<_> = TIER_CASE.iter().map(|&(id, _, s, t)| (id, s, t)).collect();
    write_benchmark(&wd, "run/sword.parquet", &rows, false);
    let compare = |out: &str, bench: Option<&str>| {
        let (code, err) = compare_tiers(&wd, out, bench);
        assert_eq!(code, 0, "{err}");
        read_parquet(&wd.join(&format!("{out}/figures.parquet"))).unwrap()
    };
    let plain = compare("plain", None);
    let tiered = compare("tiered", Some("run"));
    // The run folder or its sword.parquet: the same.
    let by_file = compare("by-file", Some("run/sword.parquet"));
    assert_eq!(tiered, by_file);
    // Without --benchmark no row has a tier; with it, every other row is the same (values and intervals:
    // the measures by tier resample the same originals) and the rows by tier follow.
    assert!(plain.iter().all(|r| r.tier.is_none()));
    let (other, by_tier): (Vec<Row>, Vec<Row>) = tiered.into_iter().partition(|r| r.tier.is_none());
    assert_eq!(other, plain);
    let ix: HashMap<_, Row> = by_tier
        .iter()
        .map(|r| {
            let s = |x: &Option<String>| x.clone().unwrap_or_default();
            (
                tier_key(&r.measure, &s(&r.language), &s(&r.strategy), &s(&r.tier)),
                r.clone(),
            )
        })
        .collect();
    let v = |measure: &str, lang: &str, strat: &str, tier: &str| {
        let r = ix
            .get(&tier_key(measure, lang, strat, tier))
            .unwrap_or_else(|| panic!("no row {measure} {lang} {strat} {tier}"));
        (r.value, r.n.unwrap())
    };
    let acc = "accuracy_by_tier";
    let pooled = "accuracy_by_tier_pooled";
    // SS: open 0-SS (en ✓, ko ✗), likely 2-SS (en ✗, ko ✓), certain 1-SS (✓ ✓).
    assert_eq!(v(acc, "en", "SS", "open"), (Some(1.0), 1));
    assert_eq!(v(acc, "ko", "SS", "open"), (Some(0.0), 1));
    assert_eq!(v(pooled, "", "SS", "open"), (Some(0.5), 2));
    assert_eq!(v(acc, "en", "SS", "likely"), (Some(0.0), 1));
    assert_eq!(v(acc, "ko", "SS", "likely"), (Some(1.0), 1));
    assert_eq!(v(pooled, "", "SS", "likely"), (Some(0.5), 2));
    assert_eq!(v(acc, "en", "SS", "certain"), (Some(1.0), 1));
    assert_eq!(v(pooled, "", "SS", "certain"), (Some(1.0), 2));
    // PSS: certain 0-PSS (✗ ✗) and 1-PSS (✓ ✗), open 2-PSS (✓ ✓), no likely one.
    assert_eq!(v(acc, "en", "PSS", "certain"), (Some(0.5), 2));
    assert_eq!(v(acc, "ko", "PSS", "certain"), (Some(0.0), 2));
    assert_eq!(v(pooled, "", "PSS", "certain"), (Some(0.25), 4));
    assert_eq!(v(pooled, "", "PSS", "open"), (Some(1.0), 2));
    assert_eq!(v(acc, "en", "PSS", "likely"), (None, 0));
    assert_eq!(v(pooled, "", "PSS", "likely"), (None, 0));
    // OS certain 2-OS (✓ ✓); POS certain 2-POS (✗, no verdict).
    assert_eq!(v(pooled, "", "OS", "certain"), (Some(1.0), 2));
    assert_eq!(v(pooled, "", "OS", "open"), (None, 0));
    assert_eq!(v(acc, "ko", "POS", "certain"), (Some(0.0), 1));
    assert_eq!(v(pooled, "", "POS", "certain"), (Some(0.0), 2));
    // Effects per tier, pooled over languages: PSS − SS certain 0.25 − 1 over 4 + 2 answers, open 1 − 0.5,
    // likely undefined (no PSS); POS − OS certain 0 − 1.
    assert_eq!(
        v("effect_pss_ss_by_tier", "", "", "certain"),
        (Some(-0.75), 6)
    );
    assert_eq!(v("effect_pss_ss_by_tier", "", "", "open"), (Some(0.5), 4));
    assert_eq!(v("effect_pss_ss_by_tier", "", "", "likely"), (None, 2));
    assert_eq!(
        v("effect_pos_os_by_tier", "", "", "certain"),
        (Some(-1.0), 4)
    );
    assert_eq!(v("effect_pos_os_by_tier", "", "", "open"), (None, 0));
    // 4 strategies × 3 tiers × (2 languages + pooled) + 2 effects × 3 tiers; no ORG row.
    assert_eq!(by_tier.len(), 4 * 3 * 3 + 2 * 3);
    assert!(by_tier.iter().all(|r| r.strategy.as_deref() != Some("ORG")));
    // Percentile intervals of a share bracket it.
    for r in by_tier.iter().filter(|r| r.measure.starts_with("accuracy")) {
        if let (Some(x), Some(lo), Some(hi)) = (r.value, r.lo, r.hi) {
            assert!(lo <= x && x <= hi, "{r:?}");
        }
    }
    // The report: a table by tier with the hand-computed cells, only with --benchmark.
    let md = String::from_utf8(wd.read("tiered/report.md")).unwrap();
    assert!(md.contains("### Accuracy by falsity tier"), "{md}");
    assert!(md.contains("| PSS certain | 50.0 ["), "{md}");
    assert!(md.contains("- `accuracy_by_tier`: "));
    let html = String::from_utf8(wd.read("tiered/report.html")).unwrap();
    assert!(html.contains("<h3>Accuracy by falsity tier</h3>"));
    let plain_md = String::from_utf8(wd.read("plain/report.md")).unwrap();
    assert!(!plain_md.contains("tier"), "{plain_md}");
    let manifest: Value = serde_json::from_slice(&wd.read("tiered/compare.manifest.json")).unwrap();
    assert_eq!(manifest["config"]["benchmark"], "run");
    // Answered distortions per tier: 2-SS likely; 0-SS, 2-PSS open; the other five certain.
    let counts = &manifest["counts"];
    assert_eq!(
        [
            &counts["tier_open"],
            &counts["tier_likely"],
            &counts["tier_certain"]
        ],
        [2, 1, 5]
    );
    // figures.csv: the tier column after strategy.
    let csv = String::from_utf8(wd.read("tiered/figures.csv")).unwrap();
    assert!(csv
        .starts_with("measure,model,model_b,variant,language,language_b,strategy,tier,agreement,"));
    assert!(csv.contains("\naccuracy_by_tier_pooled,A,,plain,,,PSS,certain,,0.25,"));
    // Bytes at any -j.
    for j in ["1", "2"] {
        let out = format!("j{j}");
        let o = wd
            .command(&["-j", j])
            .args([
                "eval",
                "compare",
                "--results",
                "in/samples.jsonl",
                "--out",
                &out,
            ])
            .args(["--bootstrap", "200", "--benchmark", "run"])
            .output()
            .unwrap();
        assert!(o.status.success());
    }
    for f in ["figures.parquet", "figures.csv", "report.md", "report.html"] {
        assert!(
            wd.read(&format!("j1/{f}")) == wd.read(&format!("j2/{f}")),
            "{f}"
        );
    }
}

#[test]
fn bad_benchmark_exits_2_and_writes_nothing() {
    let wd = Workdir::new();
    wd.write("in/samples.jsonl", tier_samples());
    let all: Vec<_> = TIER_CASE.iter().map(|&(id, _, s, t)| (id, s, t)).collect();
    let mut cases: Vec<(&str, Vec<BenchRow>, bool, Vec<&str>)> = vec![
        (
            "format 1",
            all.clone(),
            true,
            vec!["no `falsity` column", "format version 1"],
        ),
        (
            "a statement missing",
            all.iter().copied().filter(|r| r.0 != "2-OS").collect(),
            false,
            vec!["1 answered statement(s) are not in this benchmark, the first `2-OS`"],
        ),
        (
            "another strategy",
            all.iter()
                .map(|&r| {
                    if r.0 == "1-SS" {
                        ("1-SS", "OS", r.2)
                    } else {
                        r
                    }
                })
                .collect(),
            false,
            vec!["statement `1-SS` is OS here but SS in the answers"],
        ),
        (
            "a distortion without a tier",
            all.iter()
                .map(|&r| if r.0 == "2-PSS" { (r.0, r.1, None) } else { r })
                .collect(),
            false,
            vec!["distortion `2-PSS` has no falsity tier"],
        ),
    ];
    // Statements of the benchmark nobody answered are fine.
    let mut more = all.clone();
    more.push(("3-SS", "SS", Some("open")));
    write_benchmark(&wd, "more/sword.parquet", &more, false);
    assert_eq!(compare_tiers(&wd, "ok", Some("more")).0, 0);
    for (what, rows, format_1, expect) in cases.drain(..) {
        let dir = format!("bad-{}", what.replace(' ', "-"));
        write_benchmark(&wd, &format!("{dir}/sword.parquet"), &rows, format_1);
        let before = snapshot(&wd.join("ok"));
        let (code, err) = compare_tiers(&wd, "ok", Some(&dir));
        assert_eq!(code, 2, "{what}: {err}");
        assert!(
            err.contains(&format!("{dir}/sword.parquet")),
            "{what}: {err}"
        );
        for e in expect {
            assert!(err.contains(e), "{what}: {err}");
        }
        assert_eq!(
            snapshot(&wd.join("ok")),
            before,
            "{what}: the output changed"
        );
    }
    // A missing benchmark is an I/O error.
    let (code, _) = compare_tiers(&wd, "ok", Some("nowhere"));
    assert_eq!(code, 4);
}
