//! `sword run`: every stage in one process, crash-safe and incremental.
//!
//! The run directory is locked (`artifact::DirLock`) for the whole run; temporary files left by a killed run
//! are removed first; a stage whose manifest still matches its inputs, outputs and config
//! (`artifact::is_fresh`) is skipped, so a rerun after `kill -9` redoes only the interrupted stage and later
//! ones. Since every stage is deterministic for its config and seed, the final artifacts are byte-identical
//! to an uninterrupted run (skip-gram training is exactly reproducible at one thread; see `train`).

use crate::artifact::{self, DirLock, Manifest};
use crate::error::{Error, Result};
use crate::progress;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// The stages `sword run` chains, in order.
pub const STAGES: &[&str] = &["extract", "graph", "walks", "train", "distort", "export"];

/// Command-line arguments of `sword run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Dump to read (.json, .json.gz, .json.bz2, .json.zst, or `-` for stdin). Default: the embedded
    /// synthetic dump, generated into `<out>/input/` (seeded by `--seed`).
    #[arg(long)]
    pub dump: Option<PathBuf>,
    /// Run directory: every artifact and manifest goes here.
    #[arg(long, default_value = "data/out/demo")]
    pub out: PathBuf,
    /// Seed for every random choice (synthetic dump, walks, training, sampling).
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Directory of per-stage TOML configs (`extract.toml`, `graph.toml`, ...); missing files mean defaults.
    #[arg(long)]
    pub config_dir: Option<PathBuf>,
    /// Rerun every stage even when its outputs are fresh, and accept inputs whose manifests disagree.
    #[arg(long)]
    pub force: bool,
    /// Stop after this stage.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(STAGES))]
    pub until: Option<String>,
    /// Only print the summary of the manifests already in `--out` (no stage runs).
    #[arg(long)]
    pub summary_only: bool,
}

/// What happened to one stage in a run.
#[derive(Debug, Clone, serde::Serialize)]
pub struct StageReport {
    pub stage: String,
    /// `ran` or `fresh` (skipped because its outputs still match).
    pub status: String,
    pub seconds: f64,
}

/// One line per stage manifest found in `dir`: counts, timings and throughput, for logs and the nightly summary.
pub fn summarize(dir: &Path) -> Result<String> {
    let mut out = String::new();
    out.push_str(&format!("sword run summary for {}\n", dir.display()));
    let mut any = false;
    for stage in STAGES {
        let path = Manifest::path_in(dir, stage);
        if !path.exists() {
            out.push_str(&format!("  {stage:<8} (not run)\n"));
            continue;
        }
        any = true;
        let m = Manifest::read(&path)?;
        let secs: f64 = m
            .timings
            .get("total")
            .copied()
            .unwrap_or_else(|| m.timings.values().sum());
        let in_bytes: u64 = m.inputs.iter().map(|i| i.size).sum();
        let out_bytes: u64 = m.outputs.iter().map(|o| o.size).sum();
        let counts: Vec<String> = m
            .counts
            .iter()
            .take(6)
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let rejects: u64 = m.rejects.values().sum();
        out.push_str(&format!(
            "  {stage:<8} {secs:>8.2} s  in {:>9.1} MB ({:>7.1} MB/s)  out {:>8.1} MB  rejects {rejects}  {}\n",
            in_bytes as f64 / 1e6,
            if secs > 0.0 { in_bytes as f64 / 1e6 / secs } else { 0.0 },
            out_bytes as f64 / 1e6,
            counts.join(" ")
        ));
    }
    if !any {
        return Err(Error::bad_input(dir, "no stage manifests here"));
    }
    Ok(out)
}

/// Run `f` for `stage` unless its outputs are fresh for `config`; returns the report line.
pub fn step(
    dir: &Path,
    stage: &str,
    config: &serde_json::Value,
    force: bool,
    f: impl FnOnce() -> Result<Manifest>,
) -> Result<StageReport> {
    let t = Instant::now();
    if !force && artifact::is_fresh(dir, stage, config) {
        progress::log(format!("[run] {stage}: fresh, skipped"));
        return Ok(StageReport {
            stage: stage.to_string(),
            status: "fresh".into(),
            seconds: 0.0,
        });
    }
    progress::log(format!("[run] {stage}: running"));
    f()?;
    artifact::crash_point(&format!("after-stage:{stage}"));
    Ok(StageReport {
        stage: stage.to_string(),
        status: "ran".into(),
        seconds: t.elapsed().as_secs_f64(),
    })
}

/// Lock the run directory and clean what a killed run left behind.
pub fn prepare(dir: &Path) -> Result<DirLock> {
    let lock = DirLock::acquire(dir)?;
    let removed = artifact::clean_stale_temps(dir)?;
    if removed > 0 {
        progress::log(format!(
            "[run] removed {removed} temporary file(s) left by an interrupted run"
        ));
    }
    Ok(lock)
}

/// Entry point of `sword run`.
pub fn cli(args: Args) -> Result<()> {
    if args.summary_only {
        print!("{}", summarize(&args.out)?);
        return Ok(());
    }
    Err(Error::Config(
        "`sword run` chains the stages once they land".into(),
    ))
}
