//! `sword extract --memory-limit`: the spilling join writes the bytes of an unlimited run, says in
//! its manifest what it spilled, leaves no spill folder, refuses a limit below the smallest workable one
//! (exit 2 naming it). The full disk while spilling is in `disk_full.rs`.

use crate::util::{Workdir, EXTRACT_ARTIFACTS};

fn manifest(wd: &Workdir, dir: &str) -> serde_json::Value {
    crate::util::manifest(&wd.join(dir), "extract")
}

/// Every artifact of `a` and `b` byte for byte, the counts equal, and nothing left in `b` but the artifacts,
/// the manifest and the lock (no spill folder).
fn assert_same(wd: &Workdir, a: &str, b: &str) {
    for f in EXTRACT_ARTIFACTS {
        assert!(
            wd.read(&format!("{a}/{f}")) == wd.read(&format!("{b}/{f}")),
            "{f} differs between {a} and {b}"
        );
    }
    assert_eq!(manifest(wd, a)["counts"], manifest(wd, b)["counts"]);
    for e in std::fs::read_dir(wd.join(b)).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        assert!(!name.contains("extract-spill"), "spill folder left: {name}");
    }
}

/// A generated 30 k-entity dump, `d.json.gz`: big enough that a small memory limit spills.
fn synth_30k(wd: &Workdir) {
    wd.run_ok(&[
        "synth",
        "--entities",
        "30000",
        "--seed",
        "9",
        "--out",
        "d.json.gz",
    ]);
}

#[test]
fn a_tiny_limit_writes_the_bytes_of_an_unlimited_run_on_a_generated_dump() {
    let wd = Workdir::new();
    synth_30k(&wd);
    wd.run_ok(&[
        "extract",
        "--dump",
        "d.json.gz",
        "--out",
        "none",
        "--memory-limit",
        "none",
    ]);
    wd.run_ok(&[
        "-j",
        "1",
        "extract",
        "--dump",
        "d.json.gz",
        "--out",
        "tiny",
        "--memory-limit",
        "4M",
    ]);
    wd.run_ok(&["extract", "--dump", "d.json.gz", "--out", "auto"]);
    // More threads than the host may have: the join's blocks and the encoders' row groups interleave
    // differently, the bytes must not.
    wd.run_ok(&[
        "-j",
        "4",
        "extract",
        "--dump",
        "d.json.gz",
        "--out",
        "tiny4",
        "--memory-limit",
        "4M",
    ]);
    assert_same(&wd, "none", "tiny");
    assert_same(&wd, "none", "auto");
    assert_same(&wd, "none", "tiny4");
    let m = manifest(&wd, "tiny");
    assert_eq!(m["extra"]["memory_limit"], 4 << 20);
    let runs = m["extra"]["spill"]["runs"].as_u64().unwrap();
    let bytes = m["extra"]["spill"]["bytes"].as_u64().unwrap();
    assert!(runs >= 4 && bytes > 1 << 20, "runs {runs}, bytes {bytes}");
    let m = manifest(&wd, "none");
    assert_eq!(m["extra"]["memory_limit"], serde_json::Value::Null);
    assert_eq!(m["extra"]["spill"]["runs"], 0);
    assert_eq!(m["extra"]["spill"]["bytes"], 0);
    // The limit is not part of the config a manifest records (it does not change the outputs).
    assert_eq!(
        manifest(&wd, "none")["config"],
        manifest(&wd, "tiny")["config"]
    );
}

#[test]
fn sword_run_and_the_toml_key_pass_the_limit_on_the_embedded_default() {
    let wd = Workdir::new();
    wd.run_ok(&[
        "run",
        "--until",
        "extract",
        "--out",
        "free",
        "--memory-limit",
        "none",
    ]);
    wd.run_ok(&[
        "run",
        "--until",
        "extract",
        "--out",
        "flag",
        "--memory-limit",
        "4M",
    ]);
    wd.write("conf/extract.toml", "memory_limit = \"4M\"\n");
    wd.run_ok(&[
        "run",
        "--until",
        "extract",
        "--out",
        "toml",
        "--config-dir",
        "conf",
    ]);
    for dir in ["flag", "toml"] {
        assert_same(&wd, "free", dir);
        let m = manifest(&wd, dir);
        assert_eq!(m["extra"]["memory_limit"], 4 << 20, "{dir}");
        assert!(
            m["extra"]["spill"]["runs"].as_u64().unwrap() > 0,
            "{dir} spilled nothing"
        );
    }
}

#[test]
fn a_limit_below_the_minimum_exits_2_naming_it_before_reading() {
    let wd = Workdir::new();
    wd.run_ok(&["synth", "--entities", "100", "--out", "d.json"]);
    for bad in ["1M", "3.9M", "100K"] {
        let (code, err) = wd.run_err(&[
            "extract",
            "--dump",
            "d.json",
            "--out",
            "o",
            "--memory-limit",
            bad,
        ]);
        assert_eq!(code, 2, "{bad}: {err}");
        assert!(err.contains("at least 4M"), "{bad}: {err}");
        assert!(!wd.join("o/extract.manifest.json").exists());
    }
    let (code, err) = wd.run_err(&[
        "extract",
        "--dump",
        "d.json",
        "--out",
        "o",
        "--memory-limit",
        "lots",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("64M"), "{err}");
    wd.run_ok(&[
        "extract",
        "--dump",
        "d.json",
        "--out",
        "o",
        "--memory-limit",
        "4M",
    ]);
}

/// The spill runs on disk are counted per kind (written, the most at once) and bounded by `--spill-budget`: a
/// budget under what a run needs exits 2 naming the budget and the kind that outgrew it, and leaves no
/// artifact, no manifest and no spill folder; a budget of exactly what was on disk at most passes with the
/// same bytes. The TOML key says the same, and a budget that is not a size is refused before reading.
#[test]
fn past_the_spill_budget_exits_2_naming_it_and_the_kind_and_leaves_nothing() {
    let wd = Workdir::new();
    synth_30k(&wd);
    let extract = |out: &str, budget: &str| {
        vec![
            "-j".to_string(),
            "1".into(),
            "extract".into(),
            "--dump".into(),
            "d.json.gz".into(),
            "--out".into(),
            out.into(),
            "--memory-limit".into(),
            "4M".into(),
            "--spill-budget".into(),
            budget.into(),
        ]
    };
    fn args(v: &[String]) -> Vec<&str> {
        v.iter().map(String::as_str).collect()
    }
    wd.run_ok(&args(&extract("free", "none")));
    let m = manifest(&wd, "free");
    let sp = &m["extra"]["spill"];
    assert_eq!(sp["budget"], serde_json::Value::Null);
    let bytes = sp["bytes"].as_u64().unwrap();
    let peak = sp["peak_bytes"].as_u64().unwrap();
    assert!(peak > 0 && peak <= bytes, "peak {peak}, bytes {bytes}");
    let kinds = sp["kinds"].as_object().unwrap();
    let total: u64 = kinds.values().map(|k| k["total"].as_u64().unwrap()).sum();
    assert_eq!(total, bytes, "{kinds:?}");
    for (name, k) in kinds {
        let (t, p) = (k["total"].as_u64().unwrap(), k["peak"].as_u64().unwrap());
        assert!(p > 0 && p <= t && p <= peak, "{name}: peak {p}, total {t}");
    }
    for kind in ["candidates", "entities", "pairs"] {
        assert!(kinds.contains_key(kind), "{kind} not spilled: {kinds:?}");
    }

    let half = (peak / 2).to_string();
    let (code, err) = wd.run_err(&args(&extract("over", &half)));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains(&format!("--spill-budget {half}")) && err.contains("outgrew it"),
        "{err}"
    );
    assert!(
        kinds
            .keys()
            .any(|k| err.contains(&format!("the spilled {k} "))),
        "{err}"
    );
    if let Ok(dir) = std::fs::read_dir(wd.join("over")) {
        for e in dir.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            assert!(
                !name.ends_with(".parquet")
                    && !name.contains("extract-spill")
                    && !name.contains(".tmp")
                    && !name.ends_with("manifest.json"),
                "left in the run folder: {name}"
            );
        }
    }

    wd.run_ok(&args(&extract("exact", &peak.to_string())));
    assert_same(&wd, "free", "exact");
    let m = manifest(&wd, "exact");
    assert_eq!(m["extra"]["spill"]["budget"], peak);
    assert_eq!(m["extra"]["spill"]["peak_bytes"], peak);

    wd.write(
        "conf/extract.toml",
        format!("memory_limit = \"4M\"\nspill_budget = \"{half}\"\n"),
    );
    let (code, err) = wd.run_err(&[
        "-j",
        "1",
        "run",
        "--until",
        "extract",
        "--dump",
        "d.json.gz",
        "--out",
        "toml",
        "--config-dir",
        "conf",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("--spill-budget") && err.contains("outgrew it"),
        "{err}"
    );

    let (code, err) = wd.run_err(&args(&extract("bad", "lots")));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--spill-budget `lots`"), "{err}");
    assert!(!wd.join("bad/extract.manifest.json").exists());
}
