//! Work-directory helper for integration tests (after ripgrep's and xsv's): a fresh temporary directory per
//! test, the `sword` binary to run in it, and readable failure output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use sword::store::layout;

/// A temporary directory with helpers to run `sword` inside it.
pub struct Workdir {
    dir: tempfile::TempDir,
}

#[allow(dead_code)]
impl Workdir {
    /// A new empty work directory.
    pub fn new() -> Workdir {
        Workdir {
            dir: tempfile::Builder::new()
                .prefix("sword-it-")
                .tempdir()
                .expect("create temp dir"),
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// A path inside the directory.
    pub fn join(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// Write a file (parents created).
    pub fn write(&self, name: &str, bytes: impl AsRef<[u8]>) -> PathBuf {
        let p = self.join(name);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).unwrap();
        }
        std::fs::write(&p, bytes).unwrap();
        p
    }

    /// Read a file, panicking with its name if it is missing.
    pub fn read(&self, name: &str) -> Vec<u8> {
        let p = self.join(name);
        std::fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
    }

    /// A `sword` command running in this directory, quiet.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_sword"));
        cmd.current_dir(self.path())
            .env("SWORD_QUIET", "1")
            .args(args);
        cmd
    }

    /// Run `sword args` and assert success, showing stdout and stderr when it fails.
    pub fn run_ok(&self, args: &[&str]) -> Output {
        let out = self.command(args).output().expect("spawn sword");
        assert!(
            out.status.success(),
            "sword {args:?} failed with {:?}\n--- stdout\n{}\n--- stderr\n{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Run `sword args` and assert failure; returns (exit code, stderr).
    pub fn run_err(&self, args: &[&str]) -> (i32, String) {
        let out = self.command(args).output().expect("spawn sword");
        assert!(
            !out.status.success(),
            "sword {args:?} should have failed\n--- stdout\n{}\n--- stderr\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    }
}

/// Path of a file in the project's `data/` directory.
#[allow(dead_code)]
pub fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("data")
        .join(name)
}

/// A real Wikidata fixture from `$SWORD_REAL_FIXTURES/<rel>`.
///
/// `None` when the variable is unset (the test then skips, saying so); when it is set, a missing file fails the
/// test, so CI (which sets it) can never silently skip the real-data checks.
#[allow(dead_code)]
pub fn real_fixture(rel: &str) -> Option<PathBuf> {
    let root = match std::env::var_os("SWORD_REAL_FIXTURES") {
        Some(r) if !r.is_empty() => PathBuf::from(r),
        _ => {
            eprintln!("SWORD_REAL_FIXTURES unset: skipping the real-fixture check for {rel}");
            return None;
        }
    };
    let root = if root.is_relative() {
        Path::new(env!("CARGO_MANIFEST_DIR")).join(root)
    } else {
        root
    };
    let p = root.join(rel);
    assert!(
        p.exists(),
        "SWORD_REAL_FIXTURES is set but {} is missing",
        p.display()
    );
    Some(p)
}

/// Run the extract stage as a library call (the contract's path, as `sword extract` takes it).
pub fn extract(
    dump: &Path,
    out: &Path,
    cfg: &sword::stages::extract::Config,
) -> sword::Result<sword::store::Manifest> {
    let args = sword::stages::extract::ExtractArgs {
        dump: dump.to_path_buf(),
        ..Default::default()
    };
    sword::stages::contract::run::<sword::stages::extract::ExtractStage>(out, cfg, &args)
}

/// The artifacts extract writes, from the library's layout (the same names and order as its manifest).
pub const EXTRACT_ARTIFACTS: &[&str] = &[
    layout::ENTITIES.file,
    layout::TRIPLES.file,
    layout::STATEMENTS.file,
    layout::PROPERTIES.file,
    layout::TRANSITIVE.file,
    layout::CONSTRAINTS.file,
    layout::VALUES.file,
    layout::TYPES.file,
    layout::DISTINCT.file,
    layout::ITEMS.file,
];

/// Every artifact of a whole run whose bytes must not depend on interruptions, the disk or the thread
/// count (manifests hold timings, so they are left out).
pub const FINAL_ARTIFACTS: &[&str] = &[
    layout::ENTITIES.file,
    layout::TRIPLES.file,
    layout::STATEMENTS.file,
    layout::PROPERTIES.file,
    layout::TRANSITIVE.file,
    layout::CONSTRAINTS.file,
    layout::VALUES.file,
    layout::TYPES.file,
    layout::DISTINCT.file,
    layout::GRAPH_CSR.file,
    layout::NODES.file,
    layout::WALKS_BIN.file,
    layout::EMBEDDINGS_NPY.file,
    layout::EMBEDDINGS_W2V.file,
    layout::DISTORTIONS.file,
    layout::SWORD.file,
    layout::TRANSLATION_REQUESTS.file,
];

/// The manifest `stage` wrote into `dir`, as JSON (panics naming the file when it is missing or not JSON).
pub fn manifest(dir: &Path, stage: &str) -> serde_json::Value {
    let p = dir.join(layout::manifest_file(stage));
    let bytes = std::fs::read(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// A count of a manifest (0 when the stage did not record it).
pub fn count(m: &serde_json::Value, key: &str) -> u64 {
    m["counts"][key].as_u64().unwrap_or(0)
}

/// Arguments of a runner command (`translate`, `eval run`) against the test server at `url`: `head`, then
/// the endpoint, model `m`, 1 ms backoff capped at 20 ms (the tests never wait), then `extra`.
pub fn runner_args<'a>(head: &[&'a str], url: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = head.to_vec();
    v.extend_from_slice(&[
        "--base-url",
        url,
        "--model",
        "m",
        "--backoff-ms",
        "1",
        "--backoff-cap-ms",
        "20",
    ]);
    v.extend_from_slice(extra);
    v
}

/// A small generated dump (3 000 entity lines, seed 5, Wikimedia's `.json.gz` layout) in `dump/` under the
/// work directory; returns its absolute path.
pub fn small_dump(wd: &Workdir) -> String {
    std::fs::create_dir_all(wd.join("dump")).unwrap();
    wd.run_ok(&[
        "synth",
        "--entities",
        "3000",
        "--seed",
        "5",
        "--out",
        "dump/wikidata-20240101-all.json.gz",
    ]);
    wd.join("dump/wikidata-20240101-all.json.gz")
        .to_string_lossy()
        .into_owned()
}

/// Small stage configs in `conf/` so a debug-build run takes seconds (the chain itself is the same):
/// 16-dimensional embeddings and `samples` originals.
pub fn small_configs(wd: &Workdir, samples: u32) {
    wd.write("conf/train.toml", "dim = 16\n");
    wd.write("conf/distort.toml", format!("samples = {samples}\n"));
}

/// `sword -j JOBS run --dump DUMP --out OUT --seed 3 --config-dir conf`: a whole run with the small configs.
/// Every artifact is byte-identical at any `JOBS`, so tests that compare runs vary it.
pub fn small_run_args<'a>(jobs: &'a str, dump: &'a str, out: &'a str) -> Vec<&'a str> {
    vec![
        "-j",
        jobs,
        "run",
        "--dump",
        dump,
        "--out",
        out,
        "--seed",
        "3",
        "--config-dir",
        "conf",
    ]
}

/// `pipeline/nightly ARGS` (make with the failing stage's exit code) on the test binary, with `OUT` under the
/// work directory.
pub fn pipeline_nightly(wd: &Workdir, args: &[&str]) -> std::process::Output {
    std::process::Command::new("bash")
        .arg(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline/nightly"))
        .arg(format!("SWORD={}", env!("CARGO_BIN_EXE_sword")))
        .arg(format!("OUT={}", wd.join("out").display()))
        .args(args)
        .env("SWORD_QUIET", "1")
        .output()
        .expect("make is installed")
}
