//! Benchmark versions across dumps: the later versions `sword synth --later-of` makes, their oracle against
//! what `extract` recovers, and their expected statuses against an independent reading of the two dumps
//! (`scripts/versions-oracle`, standard-library Python).

use crate::synth::{assert_recovered, read_extracted};
use crate::util::Workdir;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use sword::synth::{self, Config, EditKind, LaterConfig, LaterTruth};

/// Every status a statement can get, in precedence order (docs/versions.md).
pub const STATUSES: [&str; 7] = [
    "entity_missing",
    "label_missing",
    "original_removed",
    "distortion_now_true",
    "definition_broken",
    "label_changed",
    "valid",
];

/// Every column of `name` in the Parquet file at `path`, as strings, read with the parquet crate alone (no
/// sword code): the tests' own reading of the tables they check.
pub fn parquet_strings(path: &Path, names: &[&str]) -> Vec<Vec<String>> {
    use arrow_array::{Array, StringArray};
    let f = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let reader = parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder::try_new(f)
        .unwrap()
        .build()
        .unwrap();
    let mut cols: Vec<Vec<String>> = vec![Vec::new(); names.len()];
    for b in reader {
        let b = b.unwrap();
        for (c, name) in cols.iter_mut().zip(names) {
            let a = b
                .column_by_name(name)
                .unwrap_or_else(|| panic!("{}: no column {name}", path.display()))
                .as_any()
                .downcast_ref::<StringArray>()
                .unwrap_or_else(|| panic!("{}: {name} is not utf8", path.display()));
            c.extend((0..a.len()).map(|i| a.value(i).to_string()));
        }
    }
    cols
}

/// The definition check, an independent oracle: the PSS of the benchmark `run/sword.parquet` whose subject is
/// not the subject of a row of its property in `dump/triples.parquet` (the final triples, the pool distort
/// draws PSS from), and the POS whose object is not the object of one. Empty when every property-based
/// variant is what its strategy says, in the dump it is published against. Also returns how many PSS and POS
/// were checked.
pub fn definition_failures(run: &Path, dump: &Path) -> (Vec<String>, usize) {
    let t = parquet_strings(
        &dump.join("triples.parquet"),
        &["subject", "property", "object"],
    );
    let mut subjects: BTreeSet<(&str, &str)> = BTreeSet::new();
    let mut objects: BTreeSet<(&str, &str)> = BTreeSet::new();
    for ((s, p), o) in t[0].iter().zip(&t[1]).zip(&t[2]) {
        subjects.insert((p, s));
        objects.insert((p, o));
    }
    let b = parquet_strings(
        &run.join("sword.parquet"),
        &["statement_id", "strategy", "subject", "property", "object"],
    );
    let mut bad = Vec::new();
    let mut checked = 0;
    for ((((id, strategy), s), p), o) in b[0].iter().zip(&b[1]).zip(&b[2]).zip(&b[3]).zip(&b[4]) {
        let ok = match strategy.as_str() {
            "PSS" => subjects.contains(&(p.as_str(), s.as_str())),
            "POS" => objects.contains(&(p.as_str(), o.as_str())),
            _ => continue,
        };
        checked += 1;
        if !ok {
            bad.push(format!("{id} ({s}, {p}, {o})"));
        }
    }
    (bad, checked)
}

/// A generated first version with a benchmark built from it: `v1.json` and the run `old/` (extract,
/// distort, export; no embeddings, so cosines are null).
pub fn first_version(wd: &Workdir, cfg: &Config, samples: usize) -> (PathBuf, PathBuf) {
    let dump = wd.join("v1.json");
    synth::write_file_counts(cfg, 2, &dump).unwrap();
    let old = wd.join("old");
    let (d, o) = (dump.to_str().unwrap(), old.to_str().unwrap());
    wd.run_ok(&["extract", "--dump", d, "--out", o]);
    let samples = samples.to_string();
    wd.run_ok(&["distort", "--out", o, "--seed", "7", "--samples", &samples]);
    wd.run_ok(&["export", "--out", o]);
    (dump, old)
}

/// The later version of `cfg`'s world for the benchmark of `old`, written to `v2.json`, with its oracle.
pub fn later_version(
    wd: &Workdir,
    cfg: &Config,
    old: &Path,
    lc: &LaterConfig,
) -> (PathBuf, LaterTruth) {
    let bench = synth::read_benchmark(old).unwrap();
    // The leave_pool edits read the old run's final triples, as `synth --later-of OLD_RUN` does.
    let lc = &LaterConfig {
        old_run: lc.old_run.clone().or_else(|| Some(old.to_path_buf())),
        ..lc.clone()
    };
    let dump = wd.join("v2.json");
    let (t, _) = synth::write_later_file(cfg, 2, lc, &bench, &dump, true).unwrap();
    (dump, t.unwrap())
}

/// The world of these tests: small enough for a debug build, large enough that every kind of edit finds a
/// statement to aim at (checked).
pub fn world() -> Config {
    Config {
        entities: 8000,
        seed: 5,
        member_lines: 700,
        ..Config::default()
    }
}

/// `python3`, or None when it is missing outside CI (the test then skips, saying so).
pub fn python() -> Option<&'static str> {
    match Command::new("python3").arg("--version").output() {
        Ok(o) if o.status.success() => Some("python3"),
        _ if std::env::var_os("CI").is_none()
            && std::env::var_os("SWORD_REAL_FIXTURES").is_none() =>
        {
            eprintln!(
                "python3 is not installed: skipping the independent oracle (.ci/run installs it)"
            );
            None
        }
        _ => panic!("python3 is needed for scripts/versions-oracle"),
    }
}

/// The statements of a benchmark as the oracle reads them (statement_id, strategy, subject, property, object).
pub fn statements_tsv(old: &Path, dest: &Path) {
    let mut text = String::from("statement_id\tstrategy\tsubject\tproperty\tobject\n");
    for st in synth::read_benchmark(old).unwrap() {
        text.push_str(&format!(
            "{}\t{}\t{}\t{}\t{}\n",
            st.statement_id,
            st.strategy.as_str(),
            st.subject,
            st.property,
            st.object
        ));
    }
    std::fs::write(dest, text).unwrap();
}

/// `scripts/versions-oracle statuses OLD NEW STATEMENTS`: statement id → (strategy, status, detail).
pub fn oracle_statuses(
    py: &str,
    old_dump: &Path,
    new_dump: &Path,
    statements: &Path,
) -> BTreeMap<String, (String, String, String)> {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/versions-oracle");
    let out = Command::new(py)
        .arg(&script)
        .arg("statuses")
        .args([old_dump, new_dump, statements])
        .output()
        .expect("run the oracle");
    assert!(
        out.status.success(),
        "versions-oracle failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some("statement_id\tstrategy\tstatus\tdetail"));
    lines
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 4, "{l}");
            (f[0].to_string(), (f[1].into(), f[2].into(), f[3].into()))
        })
        .collect()
}

fn lines_of(dump: &Path) -> BTreeMap<String, String> {
    let text = std::fs::read_to_string(dump).unwrap();
    text.lines()
        .filter(|l| l.starts_with('{'))
        .map(|l| {
            let l = l.strip_suffix(',').unwrap_or(l);
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (v["id"].as_str().unwrap().to_string(), l.to_string())
        })
        .collect()
}

/// A deleted entity's line is gone from `v2`, an edited one differs, every other line is `v1`'s bytes.
fn assert_only_edited_lines(v1: &Path, v2: &Path, later: &LaterTruth) {
    let (a, b) = (lines_of(v1), lines_of(v2));
    let deleted: BTreeSet<&str> = later
        .edits
        .iter()
        .filter(|e| e.kind == EditKind::Delete)
        .map(|e| e.entity.as_str())
        .collect();
    let mut edited: BTreeSet<String> = later
        .edits
        .iter()
        // A leave_pool edit names the replacement, whose own line a POS's edit does not touch.
        .filter(|e| e.kind != EditKind::Delete && e.kind != EditKind::LeavePool)
        .map(|e| e.entity.clone())
        .collect();
    for e in &later.edits {
        for [s, _, _] in &e.statements {
            edited.insert(s.clone());
        }
    }
    assert_eq!(a.len(), b.len() + deleted.len());
    for (id, line) in &a {
        match b.get(id) {
            None => assert!(deleted.contains(id.as_str()), "{id} vanished"),
            Some(l) if edited.contains(id) => assert!(l != line, "{id} was to be edited"),
            Some(l) => assert!(l == line, "{id} changed without an edit"),
        }
    }
}

#[test]
fn a_later_version_edits_only_its_lines_and_extracts_to_its_oracle() {
    let wd = Workdir::new();
    let cfg = world();
    let (v1, old) = first_version(&wd, &cfg, 400);
    let lc = LaterConfig {
        old_run: Some(old.clone()),
        ..LaterConfig::default()
    };
    let (v2, later) = later_version(&wd, &cfg, &old, &lc);
    assert!(
        later.unmade.is_empty(),
        "edits without a target: {:?}",
        later.unmade
    );
    let kinds: BTreeSet<EditKind> = later.edits.iter().map(|e| e.kind).collect();
    assert_eq!(
        kinds.len(),
        EditKind::ALL.len(),
        "every kind of edit is made"
    );

    // The lines: a deleted entity's line is gone, an edited one differs, every other line is the first
    // version's bytes.
    assert_only_edited_lines(&v1, &v2, &later);
    // A second run writes the same bytes.
    let again = wd.join("v2-again.json");
    let bench = synth::read_benchmark(&old).unwrap();
    synth::write_later_file(&cfg, 2, &lc, &bench, &again, false).unwrap();
    assert!(std::fs::read(&v2).unwrap() == std::fs::read(&again).unwrap());

    // What extract recovers from the later dump is the later oracle.
    let new = wd.join("new");
    crate::util::extract(&v2, &new, &sword::stages::extract::Config::default()).unwrap();
    assert_recovered(&later.truth, &read_extracted(&new));
    let transitive: BTreeSet<_> =
        sword::store::tables::read_triples_file(&new.join("transitive.parquet"))
            .unwrap()
            .iter()
            .map(|t| t.key())
            .collect();
    let want: BTreeSet<_> = later.truth.transitive.keys().copied().collect();
    assert_eq!(transitive, want, "transitive statements");
}

#[test]
fn the_expected_statuses_of_a_later_version_agree_with_an_independent_reading_of_the_dumps() {
    let Some(py) = python() else { return };
    let wd = Workdir::new();
    let cfg = world();
    let (v1, old) = first_version(&wd, &cfg, 400);
    let (v2, later) = later_version(&wd, &cfg, &old, &LaterConfig::default());
    let tsv = wd.join("statements.tsv");
    statements_tsv(&old, &tsv);
    let oracle = oracle_statuses(py, &v1, &v2, &tsv);
    assert_eq!(oracle.len(), later.expected.len());
    let mut seen = BTreeMap::new();
    for x in &later.expected {
        let (strategy, status, detail) = &oracle[&x.statement_id];
        assert_eq!(strategy, &x.strategy);
        assert_eq!(
            (status.as_str(), x.guard.as_str()),
            (
                x.status.as_str(),
                if status == "distortion_now_true" {
                    detail.as_str()
                } else {
                    ""
                }
            ),
            "{}: the generator expects {} {}, the oracle says {status} {detail}",
            x.statement_id,
            x.status,
            x.guard
        );
        *seen.entry(x.status.as_str()).or_insert(0) += 1;
    }
    for s in STATUSES {
        assert!(seen.contains_key(s), "no statement is {s}: {seen:?}");
    }
    // The new statements make a false statement true through each guard, the symmetric and inverse ones
    // without the statement itself being stated.
    let guards: BTreeSet<&str> = later
        .expected
        .iter()
        .filter(|x| x.status == "distortion_now_true")
        .map(|x| x.guard.as_str())
        .collect();
    for g in ["symmetric", "inverse", "transitive"] {
        assert!(
            guards.contains(g),
            "no statement made true through {g}: {guards:?}"
        );
    }
}

#[test]
fn a_later_version_of_another_world_is_refused() {
    let wd = Workdir::new();
    let cfg = world();
    let (_, old) = first_version(&wd, &cfg, 100);
    let other = Config {
        seed: cfg.seed + 1,
        ..cfg.clone()
    };
    let (code, err) = wd.run_err(&[
        "synth",
        "--entities",
        &other.entities.to_string(),
        "--seed",
        &other.seed.to_string(),
        "--out",
        "v2.json",
        "--later-of",
        old.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("not a labelled entity of this generated dump"),
        "{err}"
    );
    assert!(!wd.join("v2.json").exists());
}

#[test]
fn edits_beyond_the_benchmark_name_none_of_its_entities_and_extract_to_their_oracle() {
    let wd = Workdir::new();
    let cfg = world();
    // A small benchmark, so that labelled items it does not name are left in this small world.
    let (v1, old) = first_version(&wd, &cfg, 100);
    let per_kind = 4;
    let lc = LaterConfig {
        world_per_kind: per_kind,
        ..LaterConfig::default()
    };
    let (v2, later) = later_version(&wd, &cfg, &old, &lc);
    assert!(later.unmade_world.is_empty(), "{:?}", later.unmade_world);
    for kind in EditKind::ALL {
        let n = later
            .edits
            .iter()
            .filter(|e| e.target.is_empty() && e.kind == kind)
            .count();
        let want = if kind == EditKind::RenameProperty {
            0
        } else {
            per_kind
        };
        assert_eq!(n, want, "{kind:?}");
    }
    // No world edit names an entity of the benchmark, and no two edits touch the same entity.
    let bench = synth::read_benchmark(&old).unwrap();
    let named: BTreeSet<String> = bench
        .iter()
        .flat_map(|st| [st.subject.to_string(), st.object.to_string()])
        .collect();
    let mut seen = BTreeSet::new();
    for e in later.edits.iter().filter(|e| e.target.is_empty()) {
        let mut ids = vec![e.entity.clone()];
        for [s, _, o] in &e.statements {
            ids.push(s.clone());
            ids.push(o.clone());
        }
        ids.sort();
        ids.dedup();
        for id in ids {
            assert!(
                !named.contains(&id),
                "{:?} names {id}, of the benchmark",
                e.kind
            );
            assert!(seen.insert(id.clone()), "{id} edited twice");
        }
    }
    assert_only_edited_lines(&v1, &v2, &later);
    // What extract recovers is the later oracle, and revalidate gives every statement its expected status.
    let new = wd.join("new");
    crate::util::extract(&v2, &new, &sword::stages::extract::Config::default()).unwrap();
    assert_recovered(&later.truth, &read_extracted(&new));
    crate::revalidate::revalidate(&wd, &old, &new, "rv", "2");
    let got = crate::revalidate::rows(&wd, "rv");
    assert_eq!(got.len(), later.expected.len());
    for (g, x) in got.iter().zip(&later.expected) {
        assert_eq!(
            (&g.statement_id, g.status.as_str()),
            (&x.statement_id, x.status.as_str())
        );
    }

    // The aimed edits are those of a run without the world edits (they are planned first).
    // (written over v2.json, which is no longer needed)
    let (_, aimed_only) = later_version(&wd, &cfg, &old, &LaterConfig::default());
    let aimed: Vec<_> = later
        .edits
        .iter()
        .filter(|e| !e.target.is_empty())
        .collect();
    assert_eq!(aimed.len(), aimed_only.edits.len());
    assert!(aimed.iter().zip(&aimed_only.edits).all(|(a, b)| *a == b));
}
