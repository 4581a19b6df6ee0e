//! Integration tests for `distort`, `export` and `import-translations`.
//!
//! The truth oracle here is deliberately independent of `sword::stages::distort`'s checker: it materialises the full
//! closure of the hand-built knowledge base in `data/kb/` (every rank; symmetric, inverse and transitive rules
//! applied to a fixpoint) and asks set membership, instead of the library's indexes and bounded search.

use crate::util::{self, Workdir};
use arrow_array::{Array, BooleanArray, RecordBatch, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::path::Path;
use sword::core::ids::{EntityId, Pid, Qid};
use sword::core::records::{EntityRecord, Label, PropertyRecord, Rank, Triple};
use sword::stages::distort::{
    self, DistortConfig, Distortion, FnSimilarity, KnowledgeBase, Strategy,
};
use sword::stages::export::{self, EntityLookup, ExportConfig};

const LANGS: [&str; 8] = ["en", "fr", "de", "es", "it", "pt", "ko", "ja"];

/// The knowledge base of `data/kb/`, parsed by the test itself.
struct Kb {
    statements: Vec<Triple>,
    properties: Vec<PropertyRecord>,
    entities: Vec<EntityRecord>,
    /// (id, language index) → label text, for checking exported labels.
    labels: BTreeMap<(String, usize), String>,
}

fn rows_of(name: &str) -> Vec<Vec<String>> {
    let text = std::fs::read_to_string(util::data(name)).unwrap();
    text.lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
        .map(|l| l.split('\t').map(str::to_string).collect())
        .collect()
}

fn q(s: &str) -> Qid {
    Qid(s.strip_prefix('Q').unwrap().parse().unwrap())
}

fn p(s: &str) -> Pid {
    Pid(s.strip_prefix('P').unwrap().parse().unwrap())
}

fn label(s: &str) -> Label {
    match s.strip_prefix('*') {
        Some(t) => Label {
            text: t.to_string(),
            from_mul: true,
        },
        None => Label {
            text: s.to_string(),
            from_mul: false,
        },
    }
}

fn load_kb() -> Kb {
    let statements = rows_of("kb/statements.tsv")
        .iter()
        .map(|r| Triple {
            subject: q(&r[0]),
            property: p(&r[1]),
            object: q(&r[2]),
            rank: Rank::parse(&r[3]).unwrap(),
            statement_id: format!("{}$kb-{}-{}", r[0], r[1], r[2]),
        })
        .collect();
    let mut labels = BTreeMap::new();
    let mut entities = Vec::new();
    let mut properties = Vec::new();
    for r in rows_of("kb/properties.tsv") {
        let id = p(&r[0]);
        let ls: Vec<Label> = r[5..13].iter().map(|s| label(s)).collect();
        for (i, l) in ls.iter().enumerate() {
            labels.insert((r[0].clone(), i), l.text.clone());
        }
        properties.push(PropertyRecord {
            id,
            datatype: r[1].clone(),
            labels: ls.iter().cloned().map(Some).collect(),
            symmetric: r[2] == "1",
            transitive: r[3] == "1",
            inverse: if r[4] == "-" {
                vec![]
            } else {
                r[4].split(',').map(p).collect()
            },
        });
        entities.push(EntityRecord {
            id: EntityId::Property(id),
            labels: ls,
            descriptions: vec![None; 8],
            sitelinks: 0,
            lastrevid: None,
            modified: None,
        });
    }
    for r in rows_of("kb/labels.tsv") {
        let ls: Vec<Label> = r[2..10].iter().map(|s| label(s)).collect();
        for (i, l) in ls.iter().enumerate() {
            labels.insert((r[0].clone(), i), l.text.clone());
        }
        let mut descriptions = vec![None; 8];
        descriptions[0] = Some(r[10].clone());
        entities.push(EntityRecord {
            id: EntityId::Item(q(&r[0])),
            labels: ls,
            descriptions,
            sitelinks: r[1].parse().unwrap(),
            lastrevid: None,
            modified: None,
        });
    }
    Kb {
        statements,
        properties,
        entities,
        labels,
    }
}

impl Kb {
    fn knowledge_base(&self) -> KnowledgeBase {
        let transitive: HashSet<Pid> = self
            .properties
            .iter()
            .filter(|p| p.transitive)
            .map(|p| p.id)
            .collect();
        KnowledgeBase {
            final_triples: self
                .statements
                .iter()
                .filter(|t| t.rank != Rank::Deprecated)
                .cloned()
                .collect(),
            statements: self.statements.clone(),
            transitive: self
                .statements
                .iter()
                .filter(|t| transitive.contains(&t.property))
                .cloned()
                .collect(),
            properties: self.properties.clone(),
        }
    }

    fn lookup(&self) -> EntityLookup {
        EntityLookup::new(
            LANGS.iter().map(|s| s.to_string()).collect(),
            self.entities.clone(),
            self.properties.clone(),
        )
    }

    /// Every statement true in the KB: stated at any rank, closed under the symmetric, inverse and transitive
    /// rules until nothing changes. Keys are (subject, property, object) numbers.
    fn closure(&self) -> HashSet<(u64, u64, u64)> {
        let mut truth: HashSet<(u64, u64, u64)> = self
            .statements
            .iter()
            .map(|t| (t.subject.0, t.property.0, t.object.0))
            .collect();
        loop {
            let mut new = Vec::new();
            for &(s, pp, o) in &truth {
                for prop in &self.properties {
                    if prop.id.0 == pp && prop.symmetric {
                        new.push((o, pp, s));
                    }
                    for inv in &prop.inverse {
                        if prop.id.0 == pp {
                            new.push((o, inv.0, s));
                        }
                        if inv.0 == pp {
                            new.push((o, prop.id.0, s));
                        }
                    }
                    if prop.id.0 == pp && prop.transitive {
                        for &(s2, p2, o2) in &truth {
                            if p2 == pp && s2 == o {
                                new.push((s, pp, o2));
                            }
                        }
                    }
                }
            }
            let before = truth.len();
            truth.extend(new);
            if truth.len() == before {
                return truth;
            }
        }
    }
}

/// A deterministic hand-made similarity: close ids are similar.
fn sim() -> FnSimilarity<impl Fn(Qid, Qid) -> (Option<f32>, Option<f32>) + Sync> {
    FnSimilarity(|a: Qid, b: Qid| {
        let d = (a.0 as f64 - b.0 as f64).abs().ln_1p() as f32 / 14.0;
        (Some(1.0 - d), Some(0.5 - d))
    })
}

fn cfg(seed: u64, samples: usize) -> DistortConfig {
    DistortConfig {
        seed,
        samples,
        ..Default::default()
    }
}

fn sword_bytes(rows: &[Distortion], kb: &Kb) -> Vec<u8> {
    export::write_sword(
        Vec::new(),
        rows,
        &kb.lookup(),
        Some("2024-09-11"),
        Path::new("mem"),
    )
    .unwrap()
}

fn batches(bytes: Vec<u8>) -> Vec<RecordBatch> {
    ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes))
        .unwrap()
        .build()
        .unwrap()
        .map(|b| b.unwrap())
        .collect()
}

fn strings<'a>(b: &'a RecordBatch, name: &str) -> &'a StringArray {
    b.column_by_name(name)
        .unwrap_or_else(|| panic!("column {name}"))
        .as_any()
        .downcast_ref::<StringArray>()
        .unwrap()
}

fn num(s: &str) -> u64 {
    s[1..].parse().unwrap()
}

#[test]
fn naive_generators_would_emit_true_statements_on_the_kb() {
    let kb = load_kb();
    let truth = kb.closure();
    let base = kb.knowledge_base();
    let stated: HashSet<(u64, u64, u64)> = kb
        .statements
        .iter()
        .map(|t| (t.subject.0, t.property.0, t.object.0))
        .collect();
    let entities: BTreeSet<u64> = base
        .final_triples
        .iter()
        .flat_map(|t| [t.subject.0, t.object.0])
        .collect();
    // Every candidate a naive generator ("replacement ≠ original") may emit, for every original and strategy.
    let mut naive_true = 0;
    let mut index_only_true = BTreeSet::new();
    for t in &base.final_triples {
        let (s, pp, o) = (t.subject.0, t.property.0, t.object.0);
        let subjects: BTreeSet<u64> = base
            .final_triples
            .iter()
            .filter(|x| x.property.0 == pp)
            .map(|x| x.subject.0)
            .collect();
        let objects: BTreeSet<u64> = base
            .final_triples
            .iter()
            .filter(|x| x.property.0 == pp)
            .map(|x| x.object.0)
            .collect();
        let mut cands = Vec::new();
        for &e in entities.iter().chain(&subjects) {
            if e != s {
                cands.push((e, pp, o));
            }
        }
        for &e in entities.iter().chain(&objects) {
            if e != o {
                cands.push((s, pp, e));
            }
        }
        for c in cands {
            if truth.contains(&c) {
                naive_true += 1;
                // A generator that also checks the stated statements still emits these.
                if !stated.contains(&c) {
                    index_only_true.insert(c);
                }
            }
        }
    }
    assert!(naive_true > 0);
    // Each rule contributes a true statement that is not stated anywhere:
    assert!(
        index_only_true.contains(&(183, 47, 142)),
        "symmetric: Germany borders France"
    );
    assert!(
        index_only_true.contains(&(1006, 22, 1005)),
        "inverse: Frank's father is Erin"
    );
    assert!(
        index_only_true.contains(&(483479, 131, 142)),
        "transitive: Montmartre is in France"
    );
    // And the deprecated capital is stated (at deprecated rank), so "exists at any rank" matters.
    assert!(stated.contains(&(183, 36, 586)));
}

#[test]
fn every_exported_false_statement_is_false_in_the_kb() {
    let kb = load_kb();
    let truth = kb.closure();
    let mut checked = 0;
    let mut per_strategy: BTreeMap<String, u64> = BTreeMap::new();
    for seed in 0..40 {
        let out = distort::distort(&kb.knowledge_base(), &cfg(seed, 1000), &sim());
        for b in batches(sword_bytes(&out.rows, &kb)) {
            let (s, pp, o, st) = (
                strings(&b, "subject"),
                strings(&b, "property"),
                strings(&b, "object"),
                strings(&b, "strategy"),
            );
            let label = b
                .column_by_name("label")
                .unwrap()
                .as_any()
                .downcast_ref::<BooleanArray>()
                .unwrap();
            for i in 0..b.num_rows() {
                let key = (num(s.value(i)), num(pp.value(i)), num(o.value(i)));
                assert_eq!(label.value(i), st.value(i) == "ORG");
                if label.value(i) {
                    assert!(truth.contains(&key), "ORG {key:?} must be true");
                } else {
                    assert!(
                        !truth.contains(&key),
                        "seed {seed}: exported false statement {key:?} ({}) is true in the KB",
                        st.value(i)
                    );
                    checked += 1;
                    *per_strategy.entry(st.value(i).to_string()).or_default() += 1;
                }
            }
        }
        // Rejections were counted by reason in the run's record.
        if seed == 0 {
            let rej: u64 = out.rejects.values().sum();
            assert!(rej > 0, "{:?}", out.rejects);
        }
    }
    assert!(checked > 1000, "{checked}");
    for s in ["SS", "OS", "PSS", "POS"] {
        assert!(
            per_strategy.get(s).copied().unwrap_or(0) > 0,
            "{per_strategy:?}"
        );
    }
}

#[test]
fn the_rules_reject_what_they_should() {
    let kb = load_kb();
    let ix = distort::Index::build(&kb.knowledge_base());
    use distort::Reason::*;
    let c = |st, s, pp, o| ix.check(st, Qid(s), Pid(pp), Qid(o), 1000);
    assert_eq!(c(Strategy::OS, 183, 47, 142), Err(Symmetric));
    assert_eq!(c(Strategy::OS, 1006, 22, 1005), Err(Inverse));
    assert_eq!(c(Strategy::OS, 483479, 131, 142), Err(Transitive));
    assert_eq!(c(Strategy::OS, 183, 36, 586), Err(SubjectHasValue));
    assert_eq!(c(Strategy::SS, 183, 36, 586), Err(Exists));
    assert_eq!(c(Strategy::SS, 142, 131, 483479), Ok(()));
}

#[test]
fn replacements_come_from_the_right_pools() {
    let kb = load_kb();
    let base = kb.knowledge_base();
    let entities: HashSet<Qid> = base
        .final_triples
        .iter()
        .flat_map(|t| [t.subject, t.object])
        .collect();
    for seed in 0..20 {
        let out = distort::distort(&base, &cfg(seed, 1000), &sim());
        let orgs: BTreeMap<u32, &Distortion> = out
            .rows
            .iter()
            .filter(|d| d.strategy == Strategy::ORG)
            .map(|d| (d.original_id, d))
            .collect();
        for d in out.rows.iter().filter(|d| d.strategy != Strategy::ORG) {
            let org = orgs[&d.original_id];
            let r = d.replacement_entity.unwrap();
            assert_eq!(d.property, org.property);
            match d.strategy {
                Strategy::SS | Strategy::PSS => {
                    assert_eq!(d.object, org.object);
                    assert_eq!(d.original_entity, Some(org.subject));
                    assert_ne!(r, org.subject);
                    assert_eq!(d.subject, r);
                }
                _ => {
                    assert_eq!(d.subject, org.subject);
                    assert_eq!(d.original_entity, Some(org.object));
                    assert_ne!(r, org.object);
                    assert_eq!(d.object, r);
                }
            }
            match d.strategy {
                Strategy::PSS => assert!(base
                    .final_triples
                    .iter()
                    .any(|t| t.property == d.property && t.subject == r)),
                Strategy::POS => assert!(base
                    .final_triples
                    .iter()
                    .any(|t| t.property == d.property && t.object == r)),
                _ => assert!(entities.contains(&r)),
            }
            assert!(d.attempts >= 1 && d.attempts <= 100);
            assert!(d.cosine.is_some() && d.cosine_centred.is_some());
        }
    }
}

#[test]
fn same_seed_is_byte_identical_at_any_thread_count() {
    let kb = load_kb();
    let base = kb.knowledge_base();
    let run = |threads: usize, seed: u64| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let out = distort::distort(&base, &cfg(seed, 15), &sim());
            (
                distort::write_distortions(Vec::new(), &out.rows, true, Path::new("m")).unwrap(),
                sword_bytes(&out.rows, &kb),
            )
        })
    };
    let one = run(1, 7);
    assert_eq!(one, run(1, 7));
    assert_eq!(one, run(4, 7));
    let other = run(4, 8);
    assert_ne!(one.0, other.0);
}

#[test]
fn different_seed_gives_different_sample() {
    let kb = load_kb();
    let base = kb.knowledge_base();
    let sample = |seed| {
        let (idx, frame) = distort::sample_originals(&base.final_triples, &cfg(seed, 5));
        assert_eq!(frame.frame_size, base.final_triples.len() as u64);
        idx.into_iter().collect::<BTreeSet<_>>()
    };
    assert_eq!(sample(1), sample(1));
    assert_ne!(sample(1), sample(2));
    assert_eq!(sample(1).len(), 5);
}

#[test]
fn sword_parquet_schema_matches_the_golden_file() {
    let kb = load_kb();
    let out = distort::distort(&kb.knowledge_base(), &cfg(3, 4), &sim());
    let bytes = sword_bytes(&out.rows, &kb);
    let builder = ParquetRecordBatchReaderBuilder::try_new(bytes::Bytes::from(bytes)).unwrap();
    let schema = builder.schema().clone();
    let text = export::schema_text(&schema);
    let golden = util::data("golden/sword_schema.txt");
    if std::env::var_os("SWORD_BLESS").is_some() {
        std::fs::write(&golden, &text).unwrap();
    }
    let want = std::fs::read_to_string(&golden).unwrap();
    assert_eq!(
        text, want,
        "sword.parquet schema changed: bump SWORD_FORMAT_VERSION, update the README and rerun with SWORD_BLESS=1"
    );
    assert!(want.starts_with(&format!(
        "# sword.parquet format version {}\n",
        export::SWORD_FORMAT_VERSION
    )));
    assert_eq!(
        schema.metadata().get("sword.format_version"),
        Some(&export::SWORD_FORMAT_VERSION.to_string())
    );
    // Exported labels are the KB's labels, per role and language.
    let b = &batches(sword_bytes(&out.rows, &kb))[0];
    for (l, lang) in LANGS.iter().enumerate() {
        for role in ["subject", "property", "object"] {
            let ids = strings(b, role);
            let labels = strings(b, &format!("{role}_label_{lang}"));
            for i in 0..b.num_rows() {
                assert_eq!(
                    labels.value(i),
                    kb.labels[&(ids.value(i).to_string(), l)],
                    "{role} {lang}"
                );
            }
        }
    }
    let mul = b
        .column_by_name("subject_label_fr_from_mul")
        .unwrap()
        .as_any()
        .downcast_ref::<BooleanArray>()
        .unwrap();
    let ids = strings(b, "subject");
    for i in 0..b.num_rows() {
        let is_person = (1001..=1007).contains(&num(ids.value(i)));
        assert_eq!(mul.value(i), is_person, "{}", ids.value(i));
    }
}

#[test]
fn export_writes_requests_report_and_hf_layout_and_translations_round_trip() {
    let kb = load_kb();
    let wd = Workdir::new();
    let dir = wd.path();
    let out = distort::distort(&kb.knowledge_base(), &cfg(5, 6), &sim());
    let hf = wd.join("hf");
    let ecfg = ExportConfig {
        hf: Some(hf.clone()),
        model: "test-model".into(),
    };
    let mut m = sword::store::Manifest::new("export");
    export::write_all(
        &sword::store::RunDir::open(dir).unwrap(),
        &out.rows,
        &kb.lookup(),
        Some("2024-09-11"),
        None,
        &ecfg,
        &mut m,
    )
    .unwrap();
    let report = String::from_utf8(wd.read("report/report.md")).unwrap();
    assert!(report.contains("property-based replacements more similar"));
    for f in [
        "report/cosine_density.svg",
        "report/cosine_density_centred.svg",
        "report/cosine_diff_density.svg",
    ] {
        assert!(String::from_utf8(wd.read(f)).unwrap().starts_with("<svg"));
    }
    let card = std::fs::read_to_string(hf.join("README.md")).unwrap();
    assert!(card.contains(&format!("- statements: {}", out.rows.len())));
    assert_eq!(
        std::fs::read(hf.join("data/test-00000-of-00001.parquet")).unwrap(),
        wd.read("sword.parquet")
    );

    // Requests: one per statement × language, with the paper's prompt in that language's labels.
    let reqs = String::from_utf8(wd.read("translation_requests.jsonl")).unwrap();
    let reqs: Vec<serde_json::Value> = reqs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(reqs.len(), out.rows.len() * 8);
    let first = &out.rows[0];
    let ja = reqs
        .iter()
        .find(|r| r["custom_id"] == format!("{}:ja", first.statement_id))
        .unwrap();
    let lab = |id: String| kb.labels[&(id, 7)].clone();
    assert_eq!(
        ja["body"]["messages"][0]["content"],
        format!(
            "You are a Japanese language writing expert. Generate one sentence for this input triple: [{}, {}, {}]",
            lab(first.subject.to_string()),
            lab(first.property.to_string()),
            lab(first.object.to_string())
        )
    );
    assert_eq!(ja["method"], "POST");
    assert_eq!(ja["body"]["model"], "test-model");

    // Fabricated batch output: all answered except one failed and one missing (the last request).
    let mut lines = Vec::new();
    for (i, r) in reqs.iter().enumerate().take(reqs.len() - 1) {
        let id = r["custom_id"].as_str().unwrap();
        let line = if i == 3 {
            serde_json::json!({"custom_id": id, "response": {"status_code": 429, "body": {}}, "error": null})
        } else {
            serde_json::json!({"custom_id": id, "response": {"status_code": 200, "body": {"choices": [{"message": {"content": format!("text of {id}")}}]}}, "error": null})
        };
        lines.push(line.to_string());
    }
    wd.write("batch_out.jsonl", lines.join("\n") + "\n");
    // The statement directory needs the requests; the batch output lives anywhere.
    wd.run_ok(&[
        "import-translations",
        "--batch-output",
        "batch_out.jsonl",
        "--out",
        ".",
    ]);
    let texts =
        sword::stages::translate::import::read_texts_file(&wd.join("statements_text.parquet"))
            .unwrap();
    assert_eq!(texts.len(), reqs.len() - 2);
    for t in &texts {
        assert_eq!(t.text, format!("text of {}", t.custom_id));
        assert_eq!(format!("{}:{}", t.statement_id, t.language), t.custom_id);
        let d = out
            .rows
            .iter()
            .find(|d| d.statement_id == t.statement_id)
            .unwrap();
        assert_eq!(t.original_id, Some(d.original_id.to_string()));
        assert_eq!(t.strategy.as_deref(), Some(d.strategy.as_str()));
        assert_eq!(t.label, Some(d.strategy == Strategy::ORG));
    }
    // `sword eval` reads the imported statements as they are.
    let items =
        sword::eval::prompts::read_sword_items(&wd.join("statements_text.parquet")).unwrap();
    assert_eq!(items.len(), texts.len());
    let m = sword::store::Manifest::read(&wd.join("import-translations.manifest.json")).unwrap();
    assert_eq!(m.rejects["failed"], 1);
    assert_eq!(m.rejects["missing"], 1);
    assert_eq!(
        m.extra["missing_examples"][0],
        reqs.last().unwrap()["custom_id"]
    );
    assert_eq!(
        m.extra["failed_examples"][0]["custom_id"],
        reqs[3]["custom_id"]
    );

    // A malformed line is an error naming the line.
    wd.write("bad.jsonl", format!("{}\nnot json\n", lines[0]));
    let (code, err) = wd.run_err(&[
        "import-translations",
        "--batch-output",
        "bad.jsonl",
        "--out",
        ".",
    ]);
    assert_eq!(code, 2);
    assert!(err.contains("bad.jsonl") && err.contains("line 2"), "{err}");
}

/// Labels of every entity of a real dump, parsed here with serde_json (independently of `sword::dump`).
fn real_labels(path: &Path) -> BTreeMap<String, serde_json::Value> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).unwrap();
    let r = std::io::BufReader::new(flate2::read::MultiGzDecoder::new(f));
    let mut out = BTreeMap::new();
    for line in r.lines() {
        let line = line.unwrap();
        let t = line.trim().trim_end_matches(',');
        if t.is_empty() || t == "[" || t == "]" {
            continue;
        }
        let v: serde_json::Value = serde_json::from_str(t).unwrap();
        out.insert(v["id"].as_str().unwrap().to_string(), v["labels"].clone());
    }
    out
}

/// (subject, property, object) id strings of a triples-shaped Parquet file (e.g. `statements.parquet`).
fn stated_ids(path: &Path) -> HashSet<(String, String, String)> {
    sword::store::tables::read_triples_file(path)
        .unwrap()
        .iter()
        .map(|t| {
            (
                t.subject.to_string(),
                t.property.to_string(),
                t.object.to_string(),
            )
        })
        .collect()
}

#[test]
fn real_fixture_chain_extract_to_export_exports_real_labels() {
    let Some(dump) = util::real_fixture("dumps/jsondumpdata_20151109_1000-entities.json.gz") else {
        return;
    };
    let wd = Workdir::new();
    let dump = dump.to_string_lossy().into_owned();
    wd.run_ok(&["extract", "--dump", &dump, "--out", "run"]);
    wd.run_ok(&["graph", "--out", "run"]);
    wd.run_ok(&["walks", "--out", "run"]);
    wd.run_ok(&["-j", "1", "train", "--out", "run"]);
    wd.run_ok(&["distort", "--out", "run", "--seed", "3", "--samples", "40"]);
    wd.run_ok(&["export", "--out", "run", "--hf", "hf"]);
    let labels = real_labels(Path::new(&dump));
    let stated: HashSet<(String, String, String)> = stated_ids(&wd.join("run/statements.parquet"));
    let mut checked = 0;
    let mut strategies = BTreeSet::new();
    for b in batches(wd.read("run/sword.parquet")) {
        let st = strings(&b, "strategy");
        let (s, pp, o) = (
            strings(&b, "subject"),
            strings(&b, "property"),
            strings(&b, "object"),
        );
        for i in 0..b.num_rows() {
            strategies.insert(st.value(i).to_string());
            let key = (
                s.value(i).to_string(),
                pp.value(i).to_string(),
                o.value(i).to_string(),
            );
            assert_eq!(st.value(i) == "ORG", stated.contains(&key), "{key:?}");
            for role in ["subject", "property", "object"] {
                let id = strings(&b, role).value(i);
                for lang in LANGS {
                    let got = strings(&b, &format!("{role}_label_{lang}")).value(i);
                    let want = labels[id][lang]["value"].as_str().unwrap_or_else(|| {
                        panic!("{id} has no {lang} label in the dump, yet was exported")
                    });
                    assert_eq!(got, want, "{role} {id} {lang}");
                    checked += 1;
                }
            }
        }
    }
    assert!(checked > 40 * 3 * 8, "{checked}");
    assert!(strategies.contains("ORG") && strategies.contains("SS") && strategies.contains("OS"));
    let m = sword::store::Manifest::read(&wd.join("run/export.manifest.json")).unwrap();
    assert_eq!(m.extra["dump_date"], "2015-11-09");
    assert!(wd.join("run/report/report.md").exists());
    assert!(wd.join("hf/README.md").exists());
}

/// Write the KB as the extract stage's artifacts (with a manifest vouching for them) into `dir`.
fn write_kb_artifacts(kb: &Kb, dir: &Path) {
    use sword::store::tables;
    std::fs::create_dir_all(dir).unwrap();
    let base = kb.knowledge_base();
    let langs: Vec<String> = LANGS.iter().map(|s| s.to_string()).collect();
    let w = |name: &str, bytes: Vec<u8>| std::fs::write(dir.join(name), bytes).unwrap();
    w(
        "triples.parquet",
        tables::write_triples(Vec::new(), &base.final_triples, Path::new("t")).unwrap(),
    );
    w(
        "statements.parquet",
        tables::write_triples(Vec::new(), &base.statements, Path::new("s")).unwrap(),
    );
    w(
        "transitive.parquet",
        tables::write_triples(Vec::new(), &base.transitive, Path::new("x")).unwrap(),
    );
    w(
        "entities.parquet",
        tables::write_entities(Vec::new(), &langs, &kb.entities, true, Path::new("e")).unwrap(),
    );
    w(
        "properties.parquet",
        tables::write_properties(Vec::new(), &langs, &kb.properties, true, Path::new("p")).unwrap(),
    );
    let mut m = sword::store::Manifest::new("extract");
    m.extra = serde_json::json!({"dump_date": "2024-09-11"});
    m.add_outputs(
        dir,
        &[
            "triples.parquet",
            "statements.parquet",
            "transitive.parquet",
            "entities.parquet",
            "properties.parquet",
        ],
    )
    .unwrap();
    m.write(&sword::store::RunDir::open(dir).unwrap()).unwrap();
}

#[test]
fn cli_distort_and_export_on_the_kb_emit_only_false_statements() {
    let kb = load_kb();
    let truth = kb.closure();
    let wd = Workdir::new();
    write_kb_artifacts(&kb, &wd.join("run"));
    let mut first: Option<Vec<u8>> = None;
    for (seed, threads) in [("11", "1"), ("11", "3"), ("12", "2")] {
        wd.run_ok(&[
            "-j",
            threads,
            "distort",
            "--out",
            "run",
            "--seed",
            seed,
            "--samples",
            "1000",
        ]);
        wd.run_ok(&["export", "--out", "run"]);
        let bytes = wd.read("run/sword.parquet");
        for b in batches(bytes.clone()) {
            let (s, pp, o, st) = (
                strings(&b, "subject"),
                strings(&b, "property"),
                strings(&b, "object"),
                strings(&b, "strategy"),
            );
            for i in 0..b.num_rows() {
                let key = (num(s.value(i)), num(pp.value(i)), num(o.value(i)));
                assert_eq!(truth.contains(&key), st.value(i) == "ORG", "{key:?}");
            }
        }
        match &first {
            None => first = Some(bytes),
            Some(f) if seed == "11" => assert_eq!(f, &bytes, "same seed, other thread count"),
            Some(f) => assert_ne!(f, &bytes),
        }
    }
    let m = sword::store::Manifest::read(&wd.join("run/distort.manifest.json")).unwrap();
    assert!(
        m.rejects.keys().any(|k| k.starts_with("attempt_rejected:")),
        "{:?}",
        m.rejects
    );
    assert_eq!(m.extra["sampling"]["frame_size"], 22); // 23 stated, 1 deprecated
                                                       // A changed input is refused until distort reruns.
    std::fs::write(wd.join("run/distortions.parquet"), b"garbage").unwrap();
    let (code, err) = wd.run_err(&["export", "--out", "run"]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("distortions.parquet"), "{err}");
}

/// One dump line for the inverse-property regression test: an entity labelled in all eight languages (or only
/// in English when `all_langs` is false) with item → item claims.
fn family_line(id: &str, all_langs: bool, extra: &str, claims: &[(&str, &str)]) -> String {
    let langs: &[&str] = if all_langs { &LANGS } else { &LANGS[..1] };
    let labels: Vec<String> = langs
        .iter()
        .map(|l| format!(r#""{l}":{{"language":"{l}","value":"{id} {l}"}}"#))
        .collect();
    let mut by_prop: BTreeMap<&str, Vec<String>> = BTreeMap::new();
    for (i, (p, o)) in claims.iter().enumerate() {
        let value = if o.starts_with('P') {
            format!(r#"{{"entity-type":"property","id":"{o}"}}"#)
        } else {
            format!(r#"{{"entity-type":"item","id":"{o}"}}"#)
        };
        by_prop.entry(p).or_default().push(format!(
            r#"{{"mainsnak":{{"snaktype":"value","property":"{p}","datavalue":{{"value":{value},"type":"wikibase-entityid"}}}},"type":"statement","id":"{id}${i}","rank":"normal"}}"#
        ));
    }
    let claims: Vec<String> = by_prop
        .iter()
        .map(|(p, v)| format!(r#""{p}":[{}]"#, v.join(",")))
        .collect();
    let kind = if id.starts_with('P') {
        "property"
    } else {
        "item"
    };
    format!(
        r#"{{"type":"{kind}","id":"{id}"{extra},"labels":{{{}}},"claims":{{{}}}}}"#,
        labels.join(","),
        claims.join(",")
    )
}

/// Regression: P40 "child" is labelled in all eight languages, its inverse P22 "father" only in English. Alice's
/// father is stated once, as (Alice, P22, Dave), so the object swap (Dave, P40, Alice) of the original
/// (Dave, P40, Carol) is true. The existence index must keep the P22 statement although P22 is not labelled,
/// and no seed may export (Dave, P40, Alice) as false.
#[test]
fn an_unlabelled_inverse_property_still_blocks_true_variants() {
    let wd = Workdir::new();
    let lines = [
        family_line("Q11", true, "", &[("P40", "Q12")]), // Dave: child Carol
        family_line("Q12", true, "", &[]),               // Carol
        family_line("Q13", true, "", &[("P22", "Q11"), ("P40", "Q16")]), // Alice: father Dave
        family_line("Q14", true, "", &[("P40", "Q15")]), // Bob: child Erin
        family_line("Q15", true, "", &[]),
        family_line("Q16", true, "", &[]),
        family_line(
            "P40",
            true,
            r#","datatype":"wikibase-item""#,
            &[("P1696", "P22")],
        ),
        family_line("P22", false, r#","datatype":"wikibase-item""#, &[]),
    ];
    wd.write("family.json", format!("[\n{}\n]\n", lines.join(",\n")));
    wd.run_ok(&["extract", "--dump", "family.json", "--out", "run"]);
    let stated: HashSet<(String, String, String)> = stated_ids(&wd.join("run/statements.parquet"));
    assert!(
        stated.contains(&("Q13".into(), "P22".into(), "Q11".into())),
        "{stated:?}"
    );
    let triples = sword::store::tables::read_triples_file(&wd.join("run/triples.parquet")).unwrap();
    assert!(triples.iter().all(|t| t.property == Pid(40)), "{triples:?}");
    wd.run_ok(&["graph", "--out", "run"]);
    wd.run_ok(&["walks", "--out", "run"]);
    wd.run_ok(&["-j", "1", "train", "--out", "run"]);
    let mut inverse_rejections = 0;
    for seed in 1..=12 {
        let seed = seed.to_string();
        wd.run_ok(&["distort", "--out", "run", "--seed", &seed, "--force"]);
        for b in batches(wd.read("run/distortions.parquet")) {
            let (s, pp, o) = (
                strings(&b, "subject"),
                strings(&b, "property"),
                strings(&b, "object"),
            );
            for i in 0..b.num_rows() {
                let row = (s.value(i), pp.value(i), o.value(i));
                assert_ne!(row, ("Q11", "P40", "Q13"), "seed {seed}: a true variant");
            }
        }
        let m = sword::store::Manifest::read(&wd.join("run/distort.manifest.json")).unwrap();
        inverse_rejections += m
            .rejects
            .iter()
            .filter(|(k, _)| k.contains("inverse"))
            .map(|(_, v)| *v)
            .sum::<u64>();
    }
    assert!(inverse_rejections > 0, "the inverse rule never fired");
}
