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
    /// Seed for every random choice (synthetic dump, walks, training, sampling); overrides the seeds of the
    /// config files, so one number reproduces a whole run.
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

/// Name of the embedded default dump inside the run directory.
pub const DEFAULT_DUMP: &str = "input/wikidata-synth-all.json.gz";

fn to_json<T: serde::Serialize>(v: &T) -> serde_json::Value {
    serde_json::to_value(v).expect("configs serialise to JSON")
}

/// Run every stage (up to `until`) in `args.out`, skipping fresh ones. Returns the per-stage reports.
pub fn run(args: &Args) -> Result<Vec<StageReport>> {
    use crate::{config, distort, export, extract, graph, synth, train, walks};
    let dir = args.out.as_path();
    let _lock = prepare(dir)?;
    let cdir = args.config_dir.as_deref();
    let load = |stage: &str| config::stage_file(cdir, stage);
    let extract_cfg: extract::Config = config::load(load("extract").as_deref())?;
    let graph_cfg: graph::GraphConfig = config::load(load("graph").as_deref())?;
    let mut walk_cfg: walks::WalkConfig = config::load(load("walks").as_deref())?;
    let mut train_cfg: train::TrainConfig = config::load(load("train").as_deref())?;
    let mut distort_cfg: distort::DistortConfig = config::load(load("distort").as_deref())?;
    let export_cfg: export::ExportConfig = config::load(load("export").as_deref())?;
    walk_cfg.seed = args.seed;
    train_cfg.seed = args.seed;
    distort_cfg.seed = args.seed;

    let dump = match &args.dump {
        Some(p) => p.clone(),
        None => {
            // The embedded default: a small synthetic dump in the real (Wikimedia multi-member gzip) layout.
            let path = dir.join(DEFAULT_DUMP);
            let mut cfg = synth::default_config();
            cfg.seed = args.seed;
            let truth_path = dir.join("input/synth.manifest.json");
            let want = to_json(&cfg);
            let fresh =
                path.exists() && Manifest::read(&truth_path).is_ok_and(|m| m.config == want);
            if !fresh {
                progress::log(format!(
                    "[run] generating the embedded default dump ({} entities) into {}",
                    cfg.entities,
                    path.display()
                ));
                artifact::ensure_dir(&dir.join("input"))?;
                synth::write_file(&cfg, &path)?;
                let mut m = Manifest::new("synth");
                m.config = want;
                m.seed = Some(cfg.seed);
                m.add_outputs(&dir.join("input"), &["wikidata-synth-all.json.gz"])?;
                m.write(&dir.join("input"))?;
            }
            path
        }
    };

    let force = args.force;
    let until = args.until.as_deref().unwrap_or("export");
    let mut reports = Vec::new();
    let mut go = |stage: &str,
                  cfg: serde_json::Value,
                  f: &mut dyn FnMut() -> Result<Manifest>|
     -> Result<bool> {
        reports.push(step(dir, stage, &cfg, force, f)?);
        Ok(stage != until)
    };
    let t = Instant::now();
    let _ = go("extract", to_json(&extract_cfg), &mut || {
        extract::run(&dump, dir, &extract_cfg)
    })? && go("graph", to_json(&graph_cfg), &mut || {
        let mut c = graph_cfg.clone();
        c.force |= force;
        graph::run(dir, &c, None)
    })? && go("walks", to_json(&walk_cfg), &mut || {
        let mut c = walk_cfg.clone();
        c.force |= force;
        walks::run(dir, &c)
    })? && go("train", to_json(&train_cfg), &mut || {
        train::run_with(dir, &train_cfg, force)
    })? && go("distort", to_json(&distort_cfg), &mut || {
        let mut c = distort_cfg.clone();
        c.force |= force;
        distort::run(dir, &c)
    })? && go("export", to_json(&export_cfg), &mut || {
        let mut c = export_cfg.clone();
        c.force |= force;
        export::run(dir, &c)
    })?;
    progress::log(format!("[run] done in {:.1} s", t.elapsed().as_secs_f64()));
    Ok(reports)
}

/// Entry point of `sword run`.
pub fn cli(args: Args) -> Result<()> {
    if args.summary_only {
        print!("{}", summarize(&args.out)?);
        return Ok(());
    }
    let reports = run(&args)?;
    let summary = summarize(&args.out)?;
    let json = serde_json::to_vec_pretty(&serde_json::json!({
        "stages": reports,
        "summary": summary,
    }))
    .expect("summary serialises");
    artifact::write_atomic(args.out.join("run.summary.json"), |w| {
        std::io::Write::write_all(w, &json)
    })?;
    progress::log(summary);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::{config, distort, export, extract, graph, train, walks};
    use std::path::Path;

    /// The committed pipeline/*.toml files parse into the stage configs (which reject unknown keys), and
    /// say the same as the built-in defaults, so the Makefile and `sword run` without configs agree.
    #[test]
    fn committed_stage_configs_parse_and_match_defaults() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline");
        let f = |s: &str| config::stage_file(Some(&dir), s).expect("config file present");
        let e: extract::Config = config::load(Some(&f("extract"))).unwrap();
        assert_eq!(e, extract::Config::default());
        let _: graph::GraphConfig = config::load(Some(&f("graph"))).unwrap();
        let w: walks::WalkConfig = config::load(Some(&f("walks"))).unwrap();
        assert_eq!((w.p, w.q, w.length, w.walks_per_node), (1.0, 1.0, 10, 10));
        let t: train::TrainConfig = config::load(Some(&f("train"))).unwrap();
        assert_eq!(t, train::TrainConfig::default());
        let d: distort::DistortConfig = config::load(Some(&f("distort"))).unwrap();
        assert_eq!(d.samples, 500);
        let x: export::ExportConfig = config::load(Some(&f("export"))).unwrap();
        assert_eq!(x.model, export::ExportConfig::default().model);
    }
}
