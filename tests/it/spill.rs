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

#[test]
fn a_tiny_limit_writes_the_bytes_of_an_unlimited_run_on_a_generated_dump() {
    let wd = Workdir::new();
    wd.run_ok(&[
        "synth",
        "--entities",
        "30000",
        "--seed",
        "9",
        "--out",
        "d.json.gz",
    ]);
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
    assert_same(&wd, "none", "tiny");
    assert_same(&wd, "none", "auto");
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
