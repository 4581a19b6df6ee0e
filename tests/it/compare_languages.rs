//! `sword eval compare`, where the languages disagree, through the binary: `answers.parquet` and the wrong
//! sets of a case computed by hand, and a planted case: simulated models that answer well except on 20
//! chosen (statement, language) pairs they all get wrong, whose `suspects.parquet` holds exactly the pairs
//! of the rule (computed here from the generated answers) with the 20 among them.

use crate::util::Workdir;
use arrow_array::{Array, BooleanArray, Int64Array, StringArray};
use rand::rngs::ChaCha8Rng;
use rand::{RngExt, SeedableRng};
use serde_json::json;
use std::path::Path;
use sword::eval::compare::table::read_parquet;

const LANGS: [&str; 8] = ["en", "fr", "de", "es", "it", "pt", "ko", "ja"];
const STRATS: [&str; 5] = ["ORG", "SS", "OS", "PSS", "POS"];

/// One samples line as `eval run` writes it.
fn line(model: &str, stmt: &str, orig: &str, strat: &str, lang: &str, answer: &str) -> String {
    json!({
        "id": format!("sword:{stmt}:{lang}"), "suite": "sword",
        "meta": {"statement_id": stmt, "original_id": orig, "language": lang, "strategy": strat, "label": strat == "ORG"},
        "messages": [{"role": "user", "content": format!("{stmt} in {lang}\nIs the sentence True or False?")}],
        "answer": answer, "model": model,
    })
    .to_string()
}

/// Every column of a Parquet file as text (`null` for nulls, booleans as `true`/`false`), row by row.
pub fn parquet_rows(path: &Path) -> (Vec<String>, Vec<Vec<String>>) {
    let f = std::fs::File::open(path).unwrap();
    let builder =
        parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f).unwrap();
    let names = builder
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().clone())
        .collect();
    let mut rows = Vec::new();
    for b in builder.build().unwrap() {
        let b = b.unwrap();
        for i in 0..b.num_rows() {
            rows.push(
                b.columns()
                    .iter()
                    .map(|c| {
                        if c.is_null(i) {
                            "null".to_string()
                        } else if let Some(s) = c.as_any().downcast_ref::<StringArray>() {
                            s.value(i).to_string()
                        } else if let Some(x) = c.as_any().downcast_ref::<BooleanArray>() {
                            x.value(i).to_string()
                        } else if let Some(x) = c.as_any().downcast_ref::<Int64Array>() {
                            x.value(i).to_string()
                        } else {
                            panic!("unexpected column type {:?}", c.data_type())
                        }
                    })
                    .collect(),
            );
        }
    }
    (names, rows)
}

#[test]
fn answers_and_wrong_sets_by_hand() {
    // o1 (ORG), o1#SS (SS, original o1), o2 (ORG); en and ko; models B and A (B's file first: the table is
    // by model). A: o1 ✓✓, o1#SS ✓✗, o2 ✗ and no verdict; B: o1 ✓✗, o1#SS ✓✓, o2 ✓✓.
    let answers = [
        ("B", "o2", "o2", "ORG", "en", "True"),
        ("B", "o2", "o2", "ORG", "ko", "True"),
        ("B", "o1", "o1", "ORG", "en", "True"),
        ("B", "o1", "o1", "ORG", "ko", "False"),
        ("B", "o1#SS", "o1", "SS", "ko", "False"),
        ("B", "o1#SS", "o1", "SS", "en", "False"),
        ("A", "o1", "o1", "ORG", "ko", "True"),
        ("A", "o1", "o1", "ORG", "en", "True"),
        ("A", "o1#SS", "o1", "SS", "en", "False"),
        ("A", "o1#SS", "o1", "SS", "ko", "True"),
        ("A", "o2", "o2", "ORG", "en", "False"),
        ("A", "o2", "o2", "ORG", "ko", "Maybe."),
    ];
    let wd = Workdir::new();
    let mut text = String::new();
    for (m, s, o, st, l, a) in answers {
        text.push_str(&line(m, s, o, st, l, a));
        text.push('\n');
    }
    wd.write("in/samples.jsonl", text);
    wd.run_ok(&[
        "eval",
        "compare",
        "--results",
        "in/samples.jsonl",
        "--out",
        "out",
        "--bootstrap",
        "50",
    ]);
    let (names, rows) = parquet_rows(&wd.join("out/answers.parquet"));
    assert_eq!(
        names,
        [
            "model",
            "variant",
            "statement_id",
            "original_id",
            "strategy",
            "label",
            "language",
            "verdict",
            "correct"
        ]
    );
    let expect: Vec<Vec<&str>> = [
        "A plain o1 o1 ORG true en true true",
        "A plain o1 o1 ORG true ko true true",
        "A plain o1#SS o1 SS false en false true",
        "A plain o1#SS o1 SS false ko true false",
        "A plain o2 o2 ORG true en false false",
        "A plain o2 o2 ORG true ko null false",
        "B plain o1 o1 ORG true en true true",
        "B plain o1 o1 ORG true ko false false",
        "B plain o1#SS o1 SS false en false true",
        "B plain o1#SS o1 SS false ko false true",
        "B plain o2 o2 ORG true en true true",
        "B plain o2 o2 ORG true ko true true",
    ]
    .iter()
    .map(|r| r.split(' ').collect())
    .collect();
    assert_eq!(rows, expect);
    // Wrong sets over en and ko. A ORG: o1 ∅, o2 en+ko → ½ each; A SS: o1#SS ko. B ORG: o1 ko, o2 ∅; B SS ∅.
    let fig = read_parquet(&wd.join("out/figures.parquet")).unwrap();
    let mut got: Vec<(String, String, String, f64, i64)> = fig
        .iter()
        .filter(|r| r.measure == "wrong_languages")
        .map(|r| {
            (
                r.model.clone().unwrap(),
                r.strategy.clone().unwrap(),
                r.language.clone().unwrap(),
                r.value.unwrap(),
                r.n.unwrap(),
            )
        })
        .collect();
    got.sort_by(|a, b| a.partial_cmp(b).unwrap());
    let s = |m: &str, st: &str, l: &str, v: f64, n: i64| (m.into(), st.into(), l.into(), v, n);
    assert_eq!(
        got,
        [
            s("A", "ORG", "", 0.5, 2),
            s("A", "ORG", "en+ko", 0.5, 2),
            s("A", "SS", "ko", 1.0, 1),
            s("B", "ORG", "", 0.5, 2),
            s("B", "ORG", "ko", 0.5, 2),
            s("B", "SS", "", 1.0, 1),
        ]
    );
    // split: A ORG 0 of 2 (o2 is wrong in both), A SS 1 of 1, B ORG 1 of 2, B SS 0 of 1.
    let split = |m: &str, st: &str| {
        fig.iter()
            .find(|r| {
                r.measure == "split"
                    && r.model.as_deref() == Some(m)
                    && r.strategy.as_deref() == Some(st)
            })
            .map(|r| (r.value, r.n))
            .unwrap()
    };
    assert_eq!(split("A", "ORG"), (Some(0.0), Some(2)));
    assert_eq!(split("A", "SS"), (Some(1.0), Some(1)));
    assert_eq!(split("B", "ORG"), (Some(0.5), Some(2)));
    assert_eq!(split("B", "SS"), (Some(0.0), Some(1)));
    // Two models and two languages: no suspect (the rule needs three models asked in all 8), an empty file
    // with its columns, and the section says so.
    let (names, rows) = parquet_rows(&wd.join("out/suspects.parquet"));
    assert_eq!(
        names,
        ["statement_id", "strategy", "language", "models", "wrong"]
    );
    assert!(rows.is_empty());
    let html = String::from_utf8(wd.read("out/report.html")).unwrap();
    assert!(html.contains("<h2 id=\"disagree\">Where the languages disagree</h2>"));
    assert!(html.contains("0 suspect pair(s)"));
    let md = String::from_utf8(wd.read("out/report.md")).unwrap();
    assert!(md.contains("## Where the languages disagree"));
    assert!(md.contains("![upset](figures/upset_plain_A.svg)"));
}

/// The planted case: `models` models × `originals` originals × 5 strategies × 8 languages. Each answer is
/// right with probability 0.97, except that every model gets `planted` wrong (and their statements right in
/// every other language); some statements are not asked
/// in ja by some models. Returns the answers as right[model][statement][language] (None: not asked).
fn plant(
    wd: &Workdir,
    models: usize,
    originals: usize,
    planted: &[(usize, usize)],
) -> Vec<Vec<[Option<bool>; 8]>> {
    let mut rng = ChaCha8Rng::seed_from_u64(52);
    let n = originals * 5;
    let mut right = vec![vec![[None; 8]; n]; models];
    for (m, rm) in right.iter_mut().enumerate() {
        let mut text = String::new();
        for (s, r) in rm.iter_mut().enumerate() {
            let (o, st) = (s / 5, STRATS[s % 5]);
            let orig = format!("Q{o}|P1|Q{}", o + 1);
            let stmt = if st == "ORG" {
                orig.clone()
            } else {
                format!("{orig}#{st}")
            };
            let skip_ja = rng.random_range(0..40) == 0 && !planted.iter().any(|p| p.0 == s);
            for (l, lang) in LANGS.iter().enumerate() {
                if skip_ja && l == 7 {
                    continue;
                }
                // A planted statement is answered right in every other language; the rest with 3 % noise.
                let is_planted = planted.iter().any(|p| p.0 == s);
                let noise = rng.random_range(0..100) < 3;
                let ok = !planted.contains(&(s, l)) && (is_planted || !noise);
                r[l] = Some(ok);
                let says_true = ok == (st == "ORG");
                let a = if says_true { "True" } else { "False" };
                text.push_str(&line(&format!("m{m}"), &stmt, &orig, st, lang, a));
                text.push('\n');
            }
        }
        wd.write(&format!("run/eval/m{m}/sword/samples.jsonl"), text);
    }
    right
}

#[test]
fn planted_bad_sentences_are_the_suspects() {
    let wd = Workdir::new();
    let (models, originals) = (7, 60);
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut planted: Vec<(usize, usize)> = Vec::new();
    while planted.len() < 20 {
        let p = (rng.random_range(0..originals * 5), rng.random_range(0..8));
        if !planted.iter().any(|q| q.0 == p.0) {
            planted.push(p);
        }
    }
    let right = plant(&wd, models, originals, &planted);
    wd.run_ok(&[
        "eval",
        "compare",
        "--results",
        "run/eval",
        "--out",
        "out",
        "--bootstrap",
        "20",
    ]);
    // The rule from the generated answers: m models asked in all 8 languages, ⌈2m/3⌉ wrong in L, ⌈2m/3⌉ right
    // in every other language.
    let mut rule: Vec<(String, String, String, String)> = Vec::new();
    for s in 0..originals * 5 {
        let asked: Vec<[bool; 8]> = right
            .iter()
            .filter(|r| r[s].iter().all(Option::is_some))
            .map(|r| r[s].map(Option::unwrap))
            .collect();
        let m = asked.len();
        let need = (2 * m).div_ceil(3);
        for l in 0..8 {
            let wrong = asked.iter().filter(|a| !a[l]).count();
            let others = (0..8)
                .filter(|&o| o != l)
                .all(|o| asked.iter().filter(|a| a[o]).count() >= need);
            if m >= 3 && wrong >= need && others {
                let (o, st) = (s / 5, STRATS[s % 5]);
                let orig = format!("Q{o}|P1|Q{}", o + 1);
                let stmt = if st == "ORG" {
                    orig
                } else {
                    format!("{orig}#{st}")
                };
                rule.push((
                    stmt,
                    st.to_string(),
                    LANGS[l].to_string(),
                    format!("{m}/{wrong}"),
                ));
            }
        }
    }
    let (names, rows) = parquet_rows(&wd.join("out/suspects.parquet"));
    assert_eq!(
        names,
        ["statement_id", "strategy", "language", "models", "wrong"]
    );
    let mut got: Vec<(String, String, String, String)> = rows
        .iter()
        .map(|r| {
            (
                r[0].clone(),
                r[1].clone(),
                r[2].clone(),
                format!("{}/{}", r[3], r[4]),
            )
        })
        .collect();
    got.sort();
    rule.sort();
    assert_eq!(got, rule);
    // Most clearly failed first: the planted pairs (every model wrong) lead.
    assert!(rows.len() >= 20, "{rows:?}");
    assert!(
        rows[..20]
            .iter()
            .all(|r| r[3] == r[4] && r[3] == models.to_string()),
        "{rows:?}"
    );
    for &(s, l) in &planted {
        let (o, st) = (s / 5, STRATS[s % 5]);
        let orig = format!("Q{o}|P1|Q{}", o + 1);
        let stmt = if st == "ORG" {
            orig
        } else {
            format!("{orig}#{st}")
        };
        assert!(
            got.iter().any(|g| g.0 == stmt && g.2 == LANGS[l]),
            "planted ({stmt}, {}) not reported",
            LANGS[l]
        );
    }
    // The report lists them (up to 50) with their statement and language.
    let html = String::from_utf8(wd.read("out/report.html")).unwrap();
    let section = &html[html.find("id=\"suspects\"").unwrap()..];
    assert!(section.contains(&format!("{} suspect pair(s)", rows.len())));
    assert_eq!(
        section.matches("</td></tr>").count(),
        rows.len().min(50),
        "one table row per suspect shown"
    );
    // Each model's UpSet figure is in the page and in figures/.
    for m in 0..models {
        assert!(wd
            .join(&format!("out/figures/upset_plain_m{m}.svg"))
            .is_file());
        assert!(html.contains(&format!("Languages wrong together — m{m} — plain")));
    }
    // answers.parquet: one row per answer.
    let answers: usize = (0..models)
        .map(|m| {
            String::from_utf8(wd.read(&format!("run/eval/m{m}/sword/samples.jsonl")))
                .unwrap()
                .lines()
                .count()
        })
        .sum();
    assert_eq!(
        parquet_rows(&wd.join("out/answers.parquet")).1.len(),
        answers
    );
}
