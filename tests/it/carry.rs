//! `distort --carry-from`: a benchmark carried to a generated later version of its world keeps exactly the
//! statements the generator's truth says still hold, with their ids, is refilled to its size, and every
//! statement of it holds (originals) or does not (variants) in the later world by the generator's own
//! closure, not by distort's index.

use crate::util::{manifest, Workdir};
use crate::versions::{definition_failures, first_version, later_version, world};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::Path;
use sword::core::records::{Rank, Strategy};
use sword::kb::original_of;
use sword::stages::contract::is_fresh;
use sword::stages::distort::stage::{DistortArgs, DistortStage};
use sword::stages::distort::DistortConfig;
use sword::store::tables::lineage::read_lineage;
use sword::synth::{self, LaterConfig};

const SAMPLES: &str = "400";

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let dest = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &dest);
        } else {
            std::fs::copy(e.path(), dest).unwrap();
        }
    }
}

fn carry(wd: &Workdir, run: &Path, old: &Path, jobs: &str) {
    let (r, o) = (run.to_str().unwrap(), old.to_str().unwrap());
    wd.run_ok(&[
        "-j",
        jobs,
        "distort",
        "--out",
        r,
        "--seed",
        "7",
        "--samples",
        SAMPLES,
        "--carry-from",
        o,
    ]);
    wd.run_ok(&["-j", jobs, "export", "--out", r]);
}

#[test]
fn a_carried_benchmark_keeps_what_holds_refills_the_rest_and_is_the_same_at_any_thread_count() {
    let wd = Workdir::new();
    let cfg = world();
    let samples: usize = SAMPLES.parse().unwrap();
    let (_, old) = first_version(&wd, &cfg, samples);
    let (v2, later) = later_version(&wd, &cfg, &old, &LaterConfig::default());
    let extracted = wd.join("extracted");
    wd.run_ok(&[
        "extract",
        "--dump",
        v2.to_str().unwrap(),
        "--out",
        extracted.to_str().unwrap(),
    ]);
    let runs: Vec<_> = ["j1", "j2", "again"]
        .iter()
        .map(|n| {
            let d = wd.join(n);
            copy_dir(&extracted, &d);
            d
        })
        .collect();
    carry(&wd, &runs[0], &old, "1");
    carry(&wd, &runs[1], &old, "2");
    carry(&wd, &runs[2], &old, "2");
    for f in ["distortions.parquet", "lineage.parquet", "sword.parquet"] {
        let a = std::fs::read(runs[0].join(f)).unwrap();
        for r in &runs[1..] {
            assert!(a == std::fs::read(r.join(f)).unwrap(), "{f} differs");
        }
    }
    let new = &runs[0];

    // What the truth says the carry keeps: a valid / label_changed statement whose original is kept too.
    let old_rows = synth::read_benchmark(&old).unwrap();
    let kept_orig: BTreeSet<&str> = later
        .expected
        .iter()
        .filter(|x| x.strategy == "ORG" && ["valid", "label_changed"].contains(&x.status.as_str()))
        .map(|x| original_of(&x.statement_id).unwrap())
        .collect();
    let expect_kept: BTreeSet<&str> = later
        .expected
        .iter()
        .filter(|x| ["valid", "label_changed"].contains(&x.status.as_str()))
        .filter(|x| kept_orig.contains(original_of(&x.statement_id).unwrap()))
        .map(|x| x.statement_id.as_str())
        .collect();
    let dropped = later
        .expected
        .iter()
        .filter(|x| x.strategy == "ORG")
        .count()
        - kept_orig.len();
    assert!(
        dropped > 0 && expect_kept.len() < old_rows.len(),
        "the edits drop something"
    );
    for status in ["distortion_now_true", "definition_broken"] {
        assert!(
            later.expected.iter().any(|x| x.strategy != "ORG"
                && x.status == status
                && kept_orig.contains(original_of(&x.statement_id).unwrap())),
            "a kept original has a {status} variant to redraw"
        );
    }
    // The definition check (read from the Parquet files by the test): the fresh benchmark passes it on its own
    // dump, fails it on the later one (the leave_pool edits), and the carried one passes it on the later dump.
    let (bad, checked) = definition_failures(&old, &old);
    assert!(checked > 0 && bad.is_empty(), "fresh benchmark: {bad:?}");
    let (bad, _) = definition_failures(&old, new);
    assert!(
        !bad.is_empty(),
        "the later dump breaks some PSS / POS of the old benchmark"
    );
    let (bad, checked) = definition_failures(new, new);
    assert!(checked > 0 && bad.is_empty(), "carried benchmark: {bad:?}");

    let new_rows = synth::read_benchmark(new).unwrap();
    let old_by_id: HashMap<&str, _> = old_rows
        .iter()
        .map(|r| (r.statement_id.as_str(), r))
        .collect();
    let carried: BTreeSet<&str> = new_rows
        .iter()
        .map(|r| r.statement_id.as_str())
        .filter(|id| old_by_id.contains_key(id))
        .collect();
    assert_eq!(
        carried, expect_kept,
        "carried statements = what the truth keeps"
    );
    for r in &new_rows {
        if let Some(o) = old_by_id.get(r.statement_id.as_str()) {
            assert_eq!(
                (r.strategy, r.key(), r.replacement_entity),
                (o.strategy, o.key(), o.replacement_entity),
                "{} is carried as it was",
                r.statement_id
            );
        }
    }

    // Refilled: the old number of originals, four variants each, every id once, no new id an old one.
    let count = |rows: &[sword::core::records::Distortion], s: Strategy| {
        rows.iter().filter(|r| r.strategy == s).count()
    };
    assert_eq!(
        count(&new_rows, Strategy::ORG),
        count(&old_rows, Strategy::ORG)
    );
    assert_eq!(count(&old_rows, Strategy::ORG), samples);
    let mut groups: BTreeMap<&str, Vec<Strategy>> = BTreeMap::new();
    for r in &new_rows {
        groups
            .entry(original_of(&r.statement_id).unwrap())
            .or_default()
            .push(r.strategy);
    }
    assert_eq!(groups.len(), samples);
    // A carried original keeps the strategies it had (a variant the first build could not draw stays
    // undrawn; a dropped one is redrawn), a new one has all five.
    let mut old_groups: BTreeMap<&str, Vec<Strategy>> = BTreeMap::new();
    for r in &old_rows {
        old_groups
            .entry(original_of(&r.statement_id).unwrap())
            .or_default()
            .push(r.strategy);
    }
    for (g, s) in &groups {
        let want = old_groups.get(g).cloned().unwrap_or(Strategy::ALL.to_vec());
        assert_eq!(s, &want, "original {g}");
    }
    let ids: BTreeSet<&str> = new_rows.iter().map(|r| r.statement_id.as_str()).collect();
    assert_eq!(ids.len(), new_rows.len());
    for id in &ids {
        assert!(
            !id.contains(':') && !id.contains(char::is_whitespace),
            "{id}"
        );
    }

    // Every statement holds or not in the later world as the generator's closure says.
    let closure = later.truth.closure();
    for r in &new_rows {
        let (s, p, o) = r.key();
        for e in r.entities() {
            assert!(
                later.truth.labelled.contains(&e),
                "{e} of {} labelled",
                r.statement_id
            );
        }
        if r.strategy == Strategy::ORG {
            assert!(
                matches!(
                    later.truth.triples.get(&(s, p, o)),
                    Some(Rank::Normal | Rank::Preferred)
                ),
                "original {} is a final triple of the later world",
                r.statement_id
            );
        } else {
            assert_ne!(s, o);
            assert_eq!(
                closure.why(s, p, o),
                None,
                "variant {} holds in the later world",
                r.statement_id
            );
        }
    }

    // The lineage: every old statement carried or dropped with its status, every new one drawn.
    let lineage = read_lineage(&new.join("lineage.parquet")).unwrap();
    let status: HashMap<&str, &str> = later
        .expected
        .iter()
        .map(|x| (x.statement_id.as_str(), x.status.as_str()))
        .collect();
    let mut seen = BTreeSet::new();
    for l in &lineage {
        assert!(
            seen.insert(l.statement_id.as_str()),
            "{} once",
            l.statement_id
        );
        match l.action.as_str() {
            "carried" | "dropped" => {
                assert_eq!(status[l.statement_id.as_str()], l.status);
                assert_eq!(
                    l.action == "carried",
                    expect_kept.contains(l.statement_id.as_str())
                );
            }
            "drawn" => {
                assert!(ids.contains(l.statement_id.as_str()));
                assert!(!old_by_id.contains_key(l.statement_id.as_str()));
                if !l.replaces.is_empty() {
                    assert!(old_by_id.contains_key(l.replaces.as_str()));
                    assert!(!expect_kept.contains(l.replaces.as_str()));
                }
            }
            a => panic!("action {a}"),
        }
    }
    assert_eq!(seen.len(), old_rows.len() + new_rows.len() - carried.len());
    // A variant out of its pool is redrawn for its kept original like one that became true: same strategy,
    // same original, a new id.
    let broken: HashMap<&str, &str> = lineage
        .iter()
        .filter(|l| l.status == "definition_broken" && l.action == "dropped")
        .map(|l| (l.statement_id.as_str(), l.strategy.as_str()))
        .collect();
    let redrawn: Vec<_> = lineage
        .iter()
        .filter(|l| l.action == "drawn" && broken.contains_key(l.replaces.as_str()))
        .collect();
    assert!(!redrawn.is_empty(), "no definition_broken variant redrawn");
    for l in redrawn {
        assert_eq!(l.strategy, broken[l.replaces.as_str()]);
        assert_eq!(original_of(&l.statement_id), original_of(&l.replaces));
        assert_ne!(l.statement_id, l.replaces);
    }
    let m = manifest(new, "distort");
    let c = &m["extra"]["carry"];
    assert_eq!(c["originals_kept"], kept_orig.len());
    assert_eq!(c["originals_dropped"], dropped);
    assert_eq!(c["statements"]["carried"], carried.len());
    // The lineage of tags grows by this build's, and the benchmark records it.
    let tags: Vec<String> = serde_json::from_value(m["extra"]["lineage"].clone()).unwrap();
    assert_eq!(tags.len(), 2);
    assert_ne!(tags[0], tags[1]);
    let again = sword::kb::OldBenchmark::read(&new.join("sword.parquet")).unwrap();
    assert_eq!(again.lineage, tags);
    assert_eq!(again.format_version, 3);
    // Freshness (`sword run` skips a stage whose manifest still matches) follows the old benchmark's bytes, not
    // only the path recorded in the config: the carry lists OLD_RUN/sword.parquet, size and hash, among its
    // inputs. The same path with other content (a benchmark rebuilt in place) makes the build stale.
    let config = m["config"].clone();
    assert_eq!(config["carry_from"], old.to_str().unwrap());
    let settings = DistortConfig {
        seed: 7,
        samples: SAMPLES.parse().unwrap(),
        ..DistortConfig::default()
    };
    let args = |from: &Path| DistortArgs {
        carry_from: Some(from.to_path_buf()),
    };
    let fresh = |from: &Path| is_fresh(&DistortStage, new, &settings, &args(from));
    assert!(fresh(&old));
    let bench = old.join("sword.parquet");
    let kept = std::fs::read(&bench).unwrap();
    std::fs::copy(new.join("sword.parquet"), &bench).unwrap();
    assert!(!fresh(&old));
    std::fs::write(&bench, kept).unwrap();
    assert!(fresh(&old));
    // Carried from another run (a copy of the same benchmark): not this build, whatever its bytes.
    copy_dir(&old, &wd.join("old-copy"));
    assert!(!fresh(&wd.join("old-copy")));
    // A fresh build in a folder that held a carried one leaves no lineage of the old build behind.
    let fresh = runs[2].to_str().unwrap();
    wd.run_ok(&[
        "distort",
        "--out",
        fresh,
        "--seed",
        "7",
        "--samples",
        SAMPLES,
    ]);
    assert!(!runs[2].join("lineage.parquet").exists());
    let m = manifest(&runs[2], "distort");
    assert!(m["extra"]["carry"].is_null());
    assert_eq!(m["removed"], serde_json::json!(["lineage.parquet"]));
}

#[test]
fn carry_from_refuses_bad_input_and_writes_nothing() {
    let wd = Workdir::new();
    let cfg = sword::synth::Config {
        entities: 1500,
        seed: 3,
        ..sword::synth::Config::default()
    };
    let (_, old) = first_version(&wd, &cfg, 20);
    let new = wd.join("new");
    let dump = wd.join("v1.json");
    wd.run_ok(&[
        "extract",
        "--dump",
        dump.to_str().unwrap(),
        "--out",
        new.to_str().unwrap(),
    ]);
    let n = new.to_str().unwrap();
    // No sword.parquet in OLD_RUN.
    let empty = wd.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let (code, err) = wd.run_err(&[
        "distort",
        "--out",
        n,
        "--carry-from",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("sword.parquet"), "{err}");
    // Other extract settings.
    let other = wd.join("other");
    wd.run_ok(&[
        "extract",
        "--dump",
        dump.to_str().unwrap(),
        "--out",
        other.to_str().unwrap(),
        "--languages",
        "en,fr,de,es,it,pt,ko",
    ]);
    let (code, err) = wd.run_err(&[
        "distort",
        "--out",
        other.to_str().unwrap(),
        "--carry-from",
        old.to_str().unwrap(),
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("languages"), "{err}");
    for d in [&new, &other] {
        assert!(!d.join("distortions.parquet").exists());
        assert!(!d.join("lineage.parquet").exists());
        assert!(!d.join("distort.manifest.json").exists());
    }
}
