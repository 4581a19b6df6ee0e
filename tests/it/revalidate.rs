//! `sword revalidate`: its statuses against the generated truth of a later version (exactly, guards
//! included), against an independent reading of real snapshots at two dates (`scripts/versions-oracle`), the
//! same bytes at any `-j`, and bad input refused with exit code 2 and nothing written.

use crate::util::{real_fixture, Workdir};
use crate::versions::{
    definition_failures, first_version, later_version, oracle_statuses, python, statements_tsv,
    world, STATUSES,
};
use std::collections::BTreeMap;
use std::path::Path;
use sword::store::tables::revalidation::{read_revalidation, RevalidationRow};
use sword::synth::LaterConfig;

/// `sword -j THREADS revalidate --benchmark OLD --against NEW --out WD/OUT`; its JSON summary.
pub fn revalidate(
    wd: &Workdir,
    old: &Path,
    new: &Path,
    out: &str,
    threads: &str,
) -> serde_json::Value {
    let o = wd.run_ok(&[
        "-j",
        threads,
        "revalidate",
        "--benchmark",
        old.to_str().unwrap(),
        "--against",
        new.to_str().unwrap(),
        "--out",
        wd.join(out).to_str().unwrap(),
    ]);
    serde_json::from_slice(&o.stdout).expect("a JSON summary on stdout")
}

/// The rows of `WD/OUT/revalidation.parquet`.
pub fn rows(wd: &Workdir, out: &str) -> Vec<RevalidationRow> {
    read_revalidation(&wd.join(out).join("revalidation.parquet")).unwrap()
}

/// The summary's counts, recounted from the rows.
fn check_summary(summary: &serde_json::Value, rows: &[RevalidationRow]) {
    assert_eq!(summary["statements"], rows.len());
    for s in STATUSES {
        let n = rows.iter().filter(|r| r.status == s).count();
        assert_eq!(summary["by_status"][s], n, "{s}");
        for g in ["ORG", "SS", "OS", "PSS", "POS"] {
            let k = rows
                .iter()
                .filter(|r| r.status == s && r.strategy == g)
                .count();
            assert_eq!(summary["by_strategy"][g][s], k, "{g} {s}");
        }
    }
}

#[test]
fn revalidate_gives_every_statement_of_a_generated_later_version_its_true_status() {
    let wd = Workdir::new();
    let cfg = world();
    let (_, old) = first_version(&wd, &cfg, 400);
    let (v2, later) = later_version(&wd, &cfg, &old, &LaterConfig::default());
    let new = wd.join("new");
    wd.run_ok(&[
        "extract",
        "--dump",
        v2.to_str().unwrap(),
        "--out",
        new.to_str().unwrap(),
    ]);
    let summary = revalidate(&wd, &old, &new, "rv", "2");
    let got = rows(&wd, "rv");
    check_summary(&summary, &got);
    assert_eq!(got.len(), later.expected.len());
    let mut seen: BTreeMap<&str, usize> = BTreeMap::new();
    for (g, x) in got.iter().zip(&later.expected) {
        assert_eq!(
            (&g.statement_id, &g.strategy),
            (&x.statement_id, &x.strategy)
        );
        let detail = if g.status == "distortion_now_true" {
            g.detail.as_str()
        } else {
            ""
        };
        assert_eq!(
            (g.status.as_str(), detail),
            (x.status.as_str(), x.guard.as_str()),
            "{}: revalidate says {} ({}), the generator's truth {} {}",
            g.statement_id,
            g.status,
            g.detail,
            x.status,
            x.guard
        );
        *seen.entry(x.status.as_str()).or_default() += 1;
    }
    for s in STATUSES {
        assert!(seen.contains_key(s), "no statement is {s}: {seen:?}");
    }
    for guard in ["symmetric", "inverse", "transitive"] {
        assert!(
            got.iter().any(|r| r.detail == guard),
            "no variant found true through {guard}"
        );
    }
    // The definition check, read from the Parquet files by the test: the fresh benchmark passes it on its own
    // dump; on the later one, every PSS / POS it fails is one revalidate does not keep, and every
    // `definition_broken` one fails it.
    let (bad, checked) = definition_failures(&old, &old);
    assert!(checked > 0 && bad.is_empty(), "fresh benchmark: {bad:?}");
    let (bad, _) = definition_failures(&old, &new);
    let bad: std::collections::BTreeSet<&str> =
        bad.iter().map(|b| b.split_once(' ').unwrap().0).collect();
    for r in &got {
        if bad.contains(r.statement_id.as_str()) {
            assert!(
                !["valid", "label_changed"].contains(&r.status.as_str()),
                "{} is out of its pool but kept as {}",
                r.statement_id,
                r.status
            );
        }
        if r.status == "definition_broken" {
            assert!(bad.contains(r.statement_id.as_str()), "{}", r.statement_id);
        }
    }
    // The report and the manifest say the same counts.
    let md = String::from_utf8(wd.read("rv/revalidation.md")).unwrap();
    for s in STATUSES {
        let n = seen.get(s).copied().unwrap_or(0);
        assert!(
            md.lines()
                .any(|l| l.starts_with(&format!("| {s} |")) && l.ends_with(&format!(" {n} |"))),
            "{s} {n} not in the report:\n{md}"
        );
    }
    let m: serde_json::Value =
        serde_json::from_slice(&wd.read("rv/revalidate.manifest.json")).unwrap();
    assert_eq!(m["extra"]["revalidation"], summary);

    // One thread: the same bytes.
    revalidate(&wd, &old, &new, "rv1", "1");
    for f in ["revalidation.parquet", "revalidation.md"] {
        assert!(
            wd.read(&format!("rv/{f}")) == wd.read(&format!("rv1/{f}")),
            "{f} differs between -j 2 and -j 1"
        );
    }
}

/// Build a benchmark (extract, distort, export; no embeddings) from a dump into `out`.
fn bench(wd: &Workdir, dump: &Path, out: &str) -> std::path::PathBuf {
    let o = wd.join(out);
    let (d, os) = (dump.to_str().unwrap(), o.to_str().unwrap());
    wd.run_ok(&["extract", "--dump", d, "--out", os]);
    wd.run_ok(&["distort", "--out", os, "--seed", "42", "--samples", "500"]);
    wd.run_ok(&["export", "--out", os]);
    o
}

/// Real snapshots of the same 1 000 entities at two dates (the 2015-11-09 dump, and the same lines with Q1,
/// Q42, Q45 and Q571 as their later entity files hold them): a benchmark of each, revalidated against the
/// other, gets exactly the statuses `scripts/versions-oracle` reads from the two JSON files.
#[test]
fn revalidate_agrees_with_an_independent_reading_of_real_snapshots_in_both_directions() {
    let Some(fixtures) = real_fixture("dumps/jsondumpdata_20151109_1000-entities.json.gz") else {
        return;
    };
    let Some(py) = python() else { return };
    let fixtures = fixtures.parent().unwrap().parent().unwrap();
    let wd = Workdir::new();
    let snap = wd.join("snap");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/versions-oracle");
    let st = std::process::Command::new(py)
        .arg(&script)
        .arg("snapshots")
        .args([fixtures, snap.as_path()])
        .status()
        .unwrap();
    assert!(st.success());
    let (d15, d25) = (
        snap.join("wikidata-20151109-all.json"),
        snap.join("wikidata-20251229-all.json"),
    );
    let (r15, r25) = (bench(&wd, &d15, "r15"), bench(&wd, &d25, "r25"));
    let mut statuses = BTreeMap::new();
    for (name, old, new, old_dump, new_dump) in [
        ("forward", &r15, &r25, &d15, &d25),
        ("backward", &r25, &r15, &d25, &d15),
    ] {
        let summary = revalidate(&wd, old, new, name, "2");
        let got = rows(&wd, name);
        check_summary(&summary, &got);
        let tsv = wd.join(&format!("{name}.tsv"));
        statements_tsv(old, &tsv);
        let want = oracle_statuses(py, old_dump, new_dump, &tsv);
        assert_eq!(got.len(), want.len());
        assert!(got.len() > 100, "{name}: {} statements", got.len());
        for g in &got {
            let (strategy, status, detail) = &want[&g.statement_id];
            assert_eq!(&g.strategy, strategy);
            // The oracle gives no detail for a removed original (revalidate says how it went).
            let d = if g.status == "original_removed" {
                ""
            } else {
                g.detail.as_str()
            };
            assert_eq!(
                (g.status.as_str(), d),
                (status.as_str(), detail.as_str()),
                "{name} {}",
                g.statement_id
            );
            *statuses.entry((name, g.status.clone())).or_insert(0usize) += 1;
        }
    }
    // Both fresh benchmarks pass the definition check on their own dump.
    for r in [&r15, &r25] {
        let (bad, checked) = definition_failures(r, r);
        assert!(checked > 0 && bad.is_empty(), "{}: {bad:?}", r.display());
    }
    // What the snapshots hold (docs/versions.md): forward everything holds; backward, the original
    // (Q1, P828 has cause, Q323 Big Bang), stated only in 2025, is gone, and a statement naming Q1 saw its
    // labels change (`universe` → `Universe`).
    let only = |name: &str| -> Vec<&String> {
        statuses
            .keys()
            .filter(|(n, _)| *n == name)
            .map(|(_, s)| s)
            .collect()
    };
    assert_eq!(only("forward"), vec!["valid"]);
    assert_eq!(
        only("backward"),
        vec!["label_changed", "original_removed", "valid"]
    );
    let back = rows(&wd, "backward");
    let removed: Vec<_> = back
        .iter()
        .filter(|r| r.status == "original_removed")
        .collect();
    assert_eq!(removed.len(), 1);
    let changed: Vec<_> = back
        .iter()
        .filter(|r| r.status == "label_changed")
        .collect();
    assert!(
        changed.iter().all(|r| r.detail.starts_with("Q1:")),
        "{changed:?}"
    );
}

/// Bad input: exit code 2, a message naming what is missing or different, and no output folder.
#[test]
fn revalidate_refuses_runs_it_cannot_compare_and_writes_nothing() {
    let wd = Workdir::new();
    let cfg = sword::synth::Config {
        entities: 1500,
        seed: 3,
        ..sword::synth::Config::default()
    };
    let (dump, old) = first_version(&wd, &cfg, 50);
    let d = dump.to_str().unwrap();
    let run = |old: &Path, new: &Path| {
        wd.run_err(&[
            "revalidate",
            "--benchmark",
            old.to_str().unwrap(),
            "--against",
            new.to_str().unwrap(),
            "--out",
            wd.join("rv").to_str().unwrap(),
        ])
    };
    let refused = |(code, err): (i32, String), want: &[&str]| {
        assert_eq!(code, 2, "{err}");
        for w in want {
            assert!(err.contains(w), "`{w}` not in: {err}");
        }
        assert!(!wd.join("rv").exists(), "something written on: {err}");
    };

    // An old run without sword.parquet.
    let empty = wd.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    refused(run(&empty, &old), &["sword.parquet"]);
    // A sword.parquet that is not a benchmark.
    let fake = wd.join("fake");
    std::fs::create_dir_all(&fake).unwrap();
    std::fs::copy(old.join("triples.parquet"), fake.join("sword.parquet")).unwrap();
    refused(run(&fake, &old), &["not a SWORD benchmark"]);
    // A newer run without extract artifacts: each missing file named.
    let partial = wd.join("partial");
    std::fs::create_dir_all(&partial).unwrap();
    for f in [
        "entities.parquet",
        "triples.parquet",
        "extract.manifest.json",
    ] {
        std::fs::copy(old.join(f), partial.join(f)).unwrap();
    }
    refused(
        run(&old, &partial),
        &[
            "items.parquet",
            "statements.parquet",
            "properties.parquet",
            "transitive.parquet",
        ],
    );
    refused(
        run(&old, &empty),
        &["extract.manifest.json", "items.parquet"],
    );
    // Extract settings that differ (another set of languages).
    let other = wd.join("other");
    wd.run_ok(&[
        "extract",
        "--dump",
        d,
        "--out",
        other.to_str().unwrap(),
        "--languages",
        "en,fr,de,es,it,pt,ko",
    ]);
    refused(run(&old, &other), &["languages"]);
    // The same settings but a reading one: accepted.
    let same = wd.join("same");
    wd.run_ok(&[
        "extract",
        "--dump",
        d,
        "--out",
        same.to_str().unwrap(),
        "--max-bad-lines",
        "5",
    ]);
    let summary = revalidate(&wd, &old, &same, "rv", "2");
    // Against its own dump every statement holds.
    assert_eq!(summary["by_status"]["valid"], summary["statements"]);
}

/// The nightly revalidates the promoted run against the new one (its counts in the summary, the table in the
/// new run) and carries its benchmark into the new run (`--carry-from`, counts in the summary), says so when
/// there is none, and `REVALIDATE=0` / `CARRY=0` turn them off; the promotion guard still decides.
#[test]
fn the_nightly_revalidates_and_carries_the_promoted_benchmark_unless_turned_off() {
    let wd = Workdir::new();
    std::fs::create_dir_all(wd.join("dumps")).unwrap();
    let first = wd.join("dumps/wikidata-20240101-all.json");
    wd.run_ok(&[
        "synth",
        "--entities",
        "1500",
        "--seed",
        "4",
        "--out",
        first.to_str().unwrap(),
    ]);
    let nightly = |dump: &Path, extra: &[&str]| {
        let d = format!("DUMP={}", dump.display());
        let mut args = vec!["nightly", d.as_str(), "KEEP=5"];
        args.extend_from_slice(extra);
        let o = crate::util::pipeline_nightly(&wd, &args);
        assert!(
            o.status.success(),
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        );
    };
    let summary =
        |run: &str| String::from_utf8(wd.read(&format!("out/{run}/logs/summary.txt"))).unwrap();
    nightly(&first, &[]);
    assert!(summary("20240101").contains("revalidation: no promoted run to revalidate"));
    assert!(summary("20240101").contains("carry: no promoted run to carry from"));
    assert!(!wd.join("out/20240101/lineage.parquet").exists());
    assert!(!wd.join("out/20240101/revalidation.parquet").exists());

    // A month on: the same world with edits aimed at the promoted benchmark.
    let second = wd.join("dumps/wikidata-20240201-all.json");
    wd.run_ok(&[
        "synth",
        "--entities",
        "1500",
        "--seed",
        "4",
        "--later-of",
        wd.join("out/20240101").to_str().unwrap(),
        "--edits",
        "2",
        "--out",
        second.to_str().unwrap(),
    ]);
    nightly(&second, &[]);
    let s = summary("20240201");
    let old = sword::synth::read_benchmark(&wd.join("out/20240101")).unwrap();
    let got = rows(&wd, "out/20240201");
    assert_eq!(got.len(), old.len());
    let line = s
        .lines()
        .find(|l| l.starts_with("revalidation of "))
        .unwrap_or_else(|| panic!("no revalidation in the summary:\n{s}"));
    assert!(
        line.contains(&format!("{} statements", old.len())),
        "{line}"
    );
    for st in STATUSES {
        let n = got.iter().filter(|r| r.status == st).count();
        assert!(
            line.contains(&format!("{st}={n} ")),
            "{st}={n} not in {line}"
        );
    }
    assert!(got.iter().any(|r| r.status != "valid"), "no edit found");
    // The new benchmark was carried from the promoted one: the statements that hold keep their ids, and the
    // summary counts what was carried, dropped (by status) and drawn, as lineage.parquet says.
    let lineage =
        sword::store::tables::lineage::read_lineage(&wd.join("out/20240201/lineage.parquet"))
            .unwrap();
    let carry = s
        .lines()
        .find(|l| l.starts_with("carry from "))
        .unwrap_or_else(|| panic!("no carry in the summary:\n{s}"));
    assert!(carry.contains("20240101"), "{carry}");
    for action in ["carried", "dropped", "drawn"] {
        let n = lineage.iter().filter(|l| l.action == action).count();
        assert!(
            carry.contains(&format!(" {action}={n} ")),
            "{action}={n} not in {carry}"
        );
    }
    let new_ids: std::collections::BTreeSet<String> =
        sword::synth::read_benchmark(&wd.join("out/20240201"))
            .unwrap()
            .into_iter()
            .map(|r| r.statement_id)
            .collect();
    for (r, v) in got.iter().zip(&old) {
        let holds = r.status == "valid" || r.status == "label_changed";
        if !holds {
            assert!(
                !new_ids.contains(&v.statement_id),
                "{} dropped",
                v.statement_id
            );
        }
    }
    let carried = lineage.iter().filter(|l| l.action == "carried").count();
    assert!(
        carried > 0
            && carried
                == old
                    .iter()
                    .filter(|o| new_ids.contains(&o.statement_id))
                    .count()
    );
    // Promoted all the same (the guard's counts are close).
    assert_eq!(
        std::fs::read_link(wd.join("out/latest")).unwrap(),
        Path::new("20240201")
    );

    // Turned off.
    let third = wd.join("dumps/wikidata-20240301-all.json");
    std::fs::copy(&second, &third).unwrap();
    nightly(&third, &["REVALIDATE=0", "CARRY=0"]);
    assert!(summary("20240301").contains("revalidation: off (REVALIDATE=0)"));
    assert!(!wd.join("out/20240301/revalidation.parquet").exists());
    assert!(summary("20240301").contains("carry: off (CARRY=0)"));
    assert!(!wd.join("out/20240301/lineage.parquet").exists());
}
