//! `sword run`: every stage in one process, crash-safe and incremental.
//!
//! Before anything is written (the run folder is not even created), the whole plan is checked ([`check_plan`]):
//! every planned stage's config file, settings and flags, `--config-dir`, `--dump`, `--carry-from`. Then the
//! run directory is opened (`store::RunDir`: its lock) for the whole run, and each stage gets the same handle,
//! through which it writes, as it does when run alone; temporary files left by a killed run are removed
//! by the stage that writes there next, once its input is accepted; a stage whose manifest still matches its
//! config, outputs and exactly the inputs this run reads (`contract::is_fresh`: a new `--dump` is never fresh)
//! is skipped, so a rerun after `kill -9` redoes only the interrupted stage and later
//! ones. Since every stage is deterministic for its config and seed, the final artifacts are byte-identical
//! to an uninterrupted run (skip-gram training is exactly reproducible at one thread; see `train`).
//!
//! `sword run` is a loop over [`PIPELINE`]: each stage gets the settings `sword <stage>` would get in the
//! Makefile: its `<config-dir>/<stage>.toml` read by the same code, then those of `sword run`'s own flags it
//! has ([`RunFlags`], parsed once into their types by clap and handed over typed by [`RunStage::take_run`]:
//! no command line is rebuilt), and runs through the stage contract ([`execute_in`]), which also checks its
//! settings. A stage that fails (a full disk, say) leaves none
//! of the files it wrote this time behind, so the run directory holds only outputs their manifests vouch for,
//! and a rerun with space completes byte-identically.
//!
//! The nightly asks `sword run --promotion-check LATEST` whether a finished run may replace the published one
//! ([`promotion_check`]): only a complete run whose counts are not far below the published run's (exit code 7
//! otherwise).

use super::contract::{self, execute_in, producers, Stage};
use super::distort::config::parse_tier;
use super::distort::{DistortArgs, DistortConfig, DistortStage};
use super::embed::graph::{GraphArgs, GraphConfig, GraphStage};
use super::embed::train::{TrainConfig, TrainStage};
use super::embed::walks::{WalkConfig, WalksStage};
use super::export::{ExportConfig, ExportStage};
use super::extract::spill::MemoryLimit;
use super::extract::{ExtractArgs, ExtractStage};
use crate::core::config;
use crate::core::error::{Error, Result};
use crate::core::falsity::Tier;
use crate::core::progress;
use crate::kb::verdict::{check_old_run, check_settings};
use crate::store::layout;
use crate::store::{self, Manifest, RunDir};
use std::path::{Path, PathBuf};
use std::time::Instant;

/// One stage as `sword run` runs it: the object-safe face of a [`Stage`].
pub trait Step: Sync {
    /// The stage's name.
    fn name(&self) -> &'static str;
    /// The stages whose artifacts it reads (with its default settings), in the order it names them.
    fn needs(&self) -> Vec<&'static str>;
    /// Check what can be checked before anything runs, reading nothing of the run folder and writing nothing:
    /// its command line, its config file (`<config-dir>/<stage>.toml`), its settings and the files its flags
    /// name ([`Stage::validate`]). Returns its identity (what its manifest's `config` will say).
    fn check(&self, plan: &Plan) -> Result<serde_json::Value>;
    /// Run it in `plan`'s run folder (open as `run`), unless its outputs are fresh for its settings and inputs.
    fn run_in(&self, plan: &Plan, run: &RunDir) -> Result<StageReport>;
}

/// `sword run`'s flags that stages have too, typed: parsed once (by clap, from `sword run`'s command line) and
/// handed to each stage that has them by [`RunStage::take_run`]. They override the stage's config file, as the
/// same flags given to `sword <stage>` do.
#[derive(Debug, Clone, PartialEq)]
pub struct RunFlags {
    /// `--dump`, or the embedded default dump synth writes into the run folder (extract's `--dump`).
    pub dump: PathBuf,
    /// `--seed`: every seed of the run (walks', train's and distort's `seed`).
    pub seed: u64,
    /// `--memory-limit` (extract's `memory_limit`), when given.
    pub memory_limit: Option<MemoryLimit>,
    /// `--min-falsity` (distort's `min_falsity`), when given.
    pub min_falsity: Option<Tier>,
    /// `--carry-from` (distort's `--carry-from`), when given.
    pub carry_from: Option<PathBuf>,
}

/// A stage `sword run` chains: a [`Stage`] that takes what it has of [`RunFlags`]. Every stage says so here,
/// in one place, so what `sword run` overrides is read off one page (and a stage added to [`PIPELINE`] must
/// say it).
pub trait RunStage: Stage + Default {
    /// Put the run's flags this stage has into its settings (read from its config file) and its flags (the
    /// defaults of `sword <stage>`), as the same flags on `sword <stage>`'s command line would.
    fn take_run(run: &RunFlags, settings: &mut Self::Settings, args: &mut Self::Args);
}

impl RunStage for ExtractStage {
    fn take_run(run: &RunFlags, settings: &mut super::extract::Config, args: &mut ExtractArgs) {
        args.dump = run.dump.clone();
        if let Some(m) = &run.memory_limit {
            settings.memory_limit = m.clone();
        }
    }
}

impl RunStage for GraphStage {
    fn take_run(_: &RunFlags, _: &mut GraphConfig, _: &mut GraphArgs) {}
}

impl RunStage for WalksStage {
    fn take_run(run: &RunFlags, settings: &mut WalkConfig, _: &mut contract::NoSettings) {
        settings.seed = run.seed;
    }
}

impl RunStage for TrainStage {
    fn take_run(run: &RunFlags, settings: &mut TrainConfig, _: &mut contract::NoSettings) {
        settings.seed = run.seed;
    }
}

impl RunStage for DistortStage {
    fn take_run(run: &RunFlags, settings: &mut DistortConfig, args: &mut DistortArgs) {
        settings.seed = run.seed;
        if let Some(t) = run.min_falsity {
            settings.min_falsity = t;
        }
        args.carry_from.clone_from(&run.carry_from);
    }
}

impl RunStage for ExportStage {
    fn take_run(_: &RunFlags, _: &mut ExportConfig, _: &mut contract::NoSettings) {}
}

/// A stage's settings and flags inside `plan`: its config file (`<config-dir>/<stage>.toml`, when the stage
/// takes one and it is there) or the defaults, then [`RunStage::take_run`], then [`Stage::normalise`] — what
/// `sword <stage> --out DIR --config FILE <the run's flags it has>` gives. Also the config file read.
fn stage_settings<S: RunStage>(plan: &Plan) -> Result<(S::Settings, S::Args, Option<PathBuf>)> {
    let file = config::stage_file(plan.config_dir.as_deref(), S::NAME).filter(|_| S::CONFIG_FILE);
    let mut settings: S::Settings = config::load_stage(file.as_deref(), S::NAME)?;
    let mut args = S::Args::default();
    S::take_run(&plan.run, &mut settings, &mut args);
    S::default().normalise(&mut settings);
    Ok((settings, args, file))
}

impl<S: RunStage> Step for S {
    fn name(&self) -> &'static str {
        S::NAME
    }

    fn needs(&self) -> Vec<&'static str> {
        producers(&self.inputs(&S::Settings::default(), &S::Args::default()))
    }

    fn check(&self, plan: &Plan) -> Result<serde_json::Value> {
        let (settings, args, file) = stage_settings::<S>(plan)?;
        self.validate(&settings, &args)
            .map_err(|e| match (e, &file) {
                // A value the stage refuses names the file it came from, when there is one.
                (Error::Config(what), Some(file)) => Error::Config(format!(
                    "{what} (stage {}: settings from {} and the flags of `sword run`)",
                    S::NAME,
                    file.display()
                )),
                (e, _) => e,
            })?;
        Ok(self.identity(&settings, &args))
    }

    fn run_in(&self, plan: &Plan, run: &RunDir) -> Result<StageReport> {
        let (settings, args, _) = stage_settings::<S>(plan)?;
        let t = Instant::now();
        let report = |status: &str, seconds: f64| StageReport {
            stage: S::NAME.to_string(),
            status: status.to_string(),
            seconds,
        };
        if !plan.force && contract::is_fresh(self, &plan.dir, &settings, &args) {
            progress::log(format!("[run] {}: fresh, skipped", S::NAME));
            return Ok(report("fresh", 0.0));
        }
        progress::log(format!("[run] {}: running", S::NAME));
        execute_in(self, run, &settings, &args, plan.force && S::FORCE)?;
        store::crash_point(&format!("after-stage:{}", S::NAME));
        Ok(report("ran", t.elapsed().as_secs_f64()))
    }
}

/// The stages `sword run` chains, in order (the Makefile's `STAGES` says the same; a test checks it).
pub const PIPELINE: [&dyn Step; 6] = [
    &ExtractStage,
    &GraphStage,
    &WalksStage,
    &TrainStage,
    &DistortStage,
    &ExportStage,
];

/// The names of [`PIPELINE`]'s stages, in order.
pub fn stage_names() -> Vec<&'static str> {
    PIPELINE.iter().map(|s| s.name()).collect()
}

/// What every stage of one `sword run` shares.
pub struct Plan {
    /// The run folder.
    pub dir: PathBuf,
    /// `--config-dir`: `<stage>.toml` files.
    pub config_dir: Option<PathBuf>,
    /// `--force`.
    pub force: bool,
    /// `sword run`'s flags that stages have, handed to each stage that has them.
    pub run: RunFlags,
}

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
    /// Memory for extract's join state (extract's `--memory-limit`: `8G`, `auto`, `none`; default: extract.toml's
    /// `memory_limit`, else `auto`). Past it extract spills sorted runs into `--out`; the outputs do not change.
    #[arg(long, value_name = "SIZE")]
    pub memory_limit: Option<MemoryLimit>,
    /// Distort's `--min-falsity` (`open`, `likely`, `certain`; default: distort.toml's `min_falsity`, else
    /// `open`, the paper's rule): keep only distortions at least this sure to be false (docs/falsity.md).
    #[arg(long, value_name = "TIER", value_parser = parse_tier)]
    pub min_falsity: Option<Tier>,
    /// Distort's `--carry-from`: carry the benchmark of this earlier run to the new dump (keep what still
    /// holds, with its ids; draw the rest anew; `lineage.parquet` says which). docs/versions.md.
    #[arg(long, value_name = "OLD_RUN")]
    pub carry_from: Option<PathBuf>,
    /// Stop after this stage.
    #[arg(long, value_parser = clap::builder::PossibleValuesParser::new(stage_names()))]
    pub until: Option<String>,
    /// Only print the summary of the manifests already in `--out` (no stage runs).
    #[arg(long)]
    pub summary_only: bool,
    /// Only check whether the finished run in `--out` may replace the published run LATEST (the nightly's
    /// `OUT/latest`): every stage done, the run complete, and its counts at least `--min-ratio` of LATEST's.
    /// Prints the verdict; exit code 7 when the run must not be promoted (no stage runs).
    #[arg(long, value_name = "LATEST")]
    pub promotion_check: Option<PathBuf>,
    /// Sanity bound of `--promotion-check`: labelled entities, final triples and exported rows must each be at
    /// least this share of the published run's.
    #[arg(long, default_value_t = 0.5, value_name = "RATIO")]
    pub min_ratio: f64,
}

/// The counts [`promotion_check`] compares: (stage, count, what it is).
pub const PROMOTION_COUNTS: &[(&str, &str, &str)] = &[
    (layout::EXTRACT, "labelled_entities", "labelled entities"),
    (layout::EXTRACT, "triples", "final triples"),
    (layout::EXPORT, "rows", "exported statements"),
];

/// May the finished run in `run` replace the published run `latest` (a path, usually the nightly's symlink)?
///
/// `Ok(verdict)` when every stage's manifest is there, none says `"complete": false`, and each of
/// [`PROMOTION_COUNTS`] is at least `min_ratio` × the published run's (no published run, a dangling `latest`
/// or `latest` being this run: nothing to compare). Otherwise [`Error::NotPromoted`] (exit code 7) saying why.
pub fn promotion_check(run: &Path, latest: &Path, min_ratio: f64) -> Result<String> {
    if !min_ratio.is_finite() || min_ratio < 0.0 {
        return Err(Error::Config(format!(
            "--min-ratio {min_ratio}: expected a share ≥ 0 (e.g. 0.5)"
        )));
    }
    let refuse = |what: String| Error::NotPromoted {
        path: run.to_path_buf(),
        what,
    };
    for stage in stage_names() {
        let p = Manifest::path_in(run, stage);
        if !p.exists() {
            return Err(refuse(format!(
                "stage {stage} has not finished ({} is missing)",
                p.display()
            )));
        }
        let m = Manifest::read(&p)?;
        if !m.complete {
            return Err(refuse(format!(
                "it is incomplete ({} says \"complete\": false: the dump ends early and extract kept what it \
                 could with --allow-truncated)",
                p.display()
            )));
        }
    }
    let same = match (run.canonicalize(), latest.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same {
        return Ok(format!("{} is already the published run", run.display()));
    }
    if !latest.exists() {
        return Ok(format!(
            "no published run at {} to compare with: {} is complete",
            latest.display(),
            run.display()
        ));
    }
    let count = |dir: &Path, stage: &str, k: &str| -> Option<u64> {
        Manifest::read(&Manifest::path_in(dir, stage))
            .ok()
            .and_then(|m| m.counts.get(k).copied())
    };
    let mut lines = Vec::new();
    let mut low = Vec::new();
    for (stage, k, what) in PROMOTION_COUNTS {
        let new = count(run, stage, k).unwrap_or(0);
        match count(latest, stage, k) {
            Some(old) if (new as f64) < min_ratio * old as f64 => low.push(format!(
                "{what} {new} < {min_ratio} × {old} of the published run"
            )),
            Some(old) => lines.push(format!("{what} {new} (published run: {old})")),
            None => lines.push(format!("{what} {new} (published run: unknown)")),
        }
    }
    if !low.is_empty() {
        return Err(refuse(format!(
            "its counts fall below the sanity bound against the published run {}: {}. Check the dump; \
             FORCE=1 promotes it anyway",
            latest.display(),
            low.join("; ")
        )));
    }
    Ok(format!(
        "{} may replace {}: complete; {}",
        run.display(),
        latest.display(),
        lines.join(", ")
    ))
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
    for stage in stage_names() {
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

/// Open the run directory for the whole run (its lock: exit code 6 if another process holds it; exit 4 at
/// once if it cannot be written into). Every stage writes through this handle, and the first file it writes
/// in a directory clears what a killed run left behind there, once it has accepted its input (see
/// [`store::RunDir`]).
pub fn prepare(dir: &Path) -> Result<RunDir> {
    RunDir::open(dir)
}

/// Name of the embedded default dump inside the run directory (synth's, which writes it).
pub use crate::synth::DEFAULT_DUMP;

/// The stages of [`PIPELINE`] a run goes through: every one, or up to `until`.
fn planned(until: Option<&str>) -> Vec<&'static dyn Step> {
    let mut out = Vec::new();
    for step in PIPELINE {
        out.push(step);
        if until == Some(step.name()) {
            break;
        }
    }
    out
}

/// Check the whole run before its first write (nothing is created, the run folder included, when this
/// refuses): `--config-dir` a folder; `--dump` a file that can be read; every planned stage's config file,
/// settings and flags ([`Step::check`]: `--carry-from` a readable benchmark beside its extract manifest);
/// and the extract settings of this run the same as the `--carry-from` run's, in what the artifacts hold
/// (a run that would only be refused at distort, after an hour of extract). What needs this run's own
/// artifacts (the newer extract complete) is checked when distort runs.
fn check_plan(args: &Args, plan: &Plan, steps: &[&dyn Step]) -> Result<()> {
    if let Some(c) = &args.config_dir {
        if !c.is_dir() {
            return Err(Error::bad_input(
                c,
                "--config-dir names no folder (a folder of <stage>.toml files; without the flag every stage \
                 takes its defaults)",
            ));
        }
    }
    if let Some(d) = args.dump.as_deref().filter(|d| *d != Path::new("-")) {
        // A named pipe is only looked at, never opened: opening it would wait for its writer, and closing it
        // again could cut the writer off (its next write fails) before extract reads it.
        let pipe = std::fs::metadata(d).is_ok_and(|m| !m.is_file() && !m.is_dir());
        if !pipe && !d.is_dir() {
            std::fs::File::open(d).map_err(|e| {
                Error::io(
                    d,
                    std::io::Error::new(e.kind(), format!("--dump: cannot read the dump ({e})")),
                )
            })?;
        }
    }
    let mut identities = Vec::new();
    for step in steps {
        identities.push((step.name(), step.check(plan)?));
    }
    let extract = identities.iter().find(|(n, _)| *n == layout::EXTRACT);
    let distort = identities.iter().any(|(n, _)| *n == layout::DISTORT);
    if let (Some(old), Some((_, new)), true) = (&args.carry_from, extract, distort) {
        let old_config = check_old_run(old, "--carry-from")?;
        let from = config::stage_file(plan.config_dir.as_deref(), layout::EXTRACT)
            .unwrap_or_else(|| PathBuf::from("extract settings (defaults, no extract.toml)"));
        check_settings(old, &old_config, new, &from, "--carry-from")?;
    }
    Ok(())
}

/// Run every stage of [`PIPELINE`] (up to `until`) in `args.out`, skipping fresh ones. The whole plan is
/// checked first ([`check_plan`]): a refusal writes nothing. Returns the per-stage reports.
pub fn run(args: &Args) -> Result<Vec<StageReport>> {
    run_open(args).map(|(reports, _)| reports)
}

/// [`run`], returning the run folder still open (for `run.summary.json`).
fn run_open(args: &Args) -> Result<(Vec<StageReport>, RunDir)> {
    let dir = args.out.as_path();
    let plan = Plan {
        dir: dir.to_path_buf(),
        config_dir: args.config_dir.clone(),
        force: args.force,
        run: RunFlags {
            dump: args.dump.clone().unwrap_or_else(|| dir.join(DEFAULT_DUMP)),
            seed: args.seed,
            memory_limit: args.memory_limit.clone(),
            min_falsity: args.min_falsity,
            carry_from: args.carry_from.clone(),
        },
    };
    let steps = planned(args.until.as_deref());
    check_plan(args, &plan, &steps)?;
    let run = prepare(dir)?;
    if args.dump.is_none() {
        // On the run's worker threads, as every stage (no byte depends on them).
        crate::synth::default_dump(&run, args.seed, contract::pool_threads())?;
    }
    let t = Instant::now();
    let mut reports = Vec::new();
    for step in steps {
        reports.push(step.run_in(&plan, &run)?);
    }
    progress::log(format!("[run] done in {:.1} s", t.elapsed().as_secs_f64()));
    Ok((reports, run))
}

/// Entry point of `sword run`.
pub fn cli(args: Args) -> Result<()> {
    if let Some(latest) = &args.promotion_check {
        println!("{}", promotion_check(&args.out, latest, args.min_ratio)?);
        return Ok(());
    }
    if args.summary_only {
        print!("{}", summarize(&args.out)?);
        return Ok(());
    }
    let (reports, run) = run_open(&args)?;
    let summary = summarize(&args.out)?;
    let json = serde_json::to_vec_pretty(&serde_json::json!({
        "stages": reports,
        "summary": summary,
    }))
    .expect("summary serialises");
    run.write("run.summary.json", |w| std::io::Write::write_all(w, &json))?;
    progress::log(summary);
    Ok(())
}

#[cfg(test)]
mod tests {
    use crate::core::config;
    use crate::stages::embed::{graph, train, walks};
    use crate::stages::{distort, export, extract};
    use crate::store::Manifest;
    use std::path::Path;

    /// A finished run in `dir`: every stage's manifest, with the compared counts.
    fn fake_run(dir: &Path, entities: u64, triples: u64, rows: u64, complete: bool) {
        std::fs::create_dir_all(dir).unwrap();
        for stage in super::stage_names() {
            let mut m = Manifest::new(stage);
            m.complete = complete || stage != "extract";
            m.counts.insert("labelled_entities".into(), entities);
            m.counts.insert("triples".into(), triples);
            m.counts.insert("rows".into(), rows);
            m.write(&crate::store::RunDir::open(dir).unwrap()).unwrap();
        }
    }

    #[test]
    fn promotion_needs_a_complete_run_not_far_below_the_published_one() {
        let t = tempfile::tempdir().unwrap();
        let (old, new, low, part) = (
            t.path().join("old"),
            t.path().join("new"),
            t.path().join("low"),
            t.path().join("part"),
        );
        fake_run(&old, 1000, 500, 2500, true);
        fake_run(&new, 600, 260, 2400, true);
        fake_run(&low, 1000, 200, 2500, true);
        fake_run(&part, 1000, 500, 2500, false);
        let check = |run: &Path, latest: &Path, r: f64| super::promotion_check(run, latest, r);
        assert!(check(&new, &old, 0.5).is_ok());
        // No published run yet, or the published run itself: nothing to compare.
        assert!(check(&new, &t.path().join("nowhere"), 0.5).is_ok());
        assert!(check(&old, &old, 0.5).unwrap().contains("already"));
        let e = check(&low, &old, 0.5).unwrap_err();
        assert_eq!(e.exit_code(), 7);
        assert!(
            e.to_string().contains("final triples 200 < 0.5 × 500"),
            "{e}"
        );
        assert!(check(&low, &old, 0.4).is_ok());
        let e = check(&part, &old, 0.5).unwrap_err();
        assert!(e.to_string().contains("incomplete"), "{e}");
        // A stage missing: not finished.
        std::fs::remove_file(Manifest::path_in(&new, "export")).unwrap();
        assert!(check(&new, &old, 0.5)
            .unwrap_err()
            .to_string()
            .contains("export"));
        assert_eq!(check(&old, &old, -1.0).unwrap_err().exit_code(), 2);
    }

    /// `sword run` hands each stage the settings and flags that `sword <stage>` gets from the command line the
    /// Makefile writes (its config file, then the run's flags it has): checked against the stage's own parser
    /// on hand-written command lines, with the run's flags given (they override the files) and not given (the
    /// files' values hold).
    #[test]
    fn each_stage_gets_what_its_own_command_line_gives() {
        use super::{stage_settings, Plan, RunFlags, RunStage};
        use crate::core::falsity::Tier;
        use crate::stages::cli::StageCli;
        let t = tempfile::tempdir().unwrap();
        let conf = t.path().join("conf");
        std::fs::create_dir(&conf).unwrap();
        for (stage, text) in [
            ("extract", "memory_limit = \"64M\"\nmax_bad_lines = 3\n"),
            ("walks", "seed = 5\nlength = 20\n"),
            ("train", "seed = 3\ndim = 16\n"),
            (
                "distort",
                "seed = 2\nmin_falsity = \"certain\"\nsamples = 9\n",
            ),
        ] {
            std::fs::write(conf.join(format!("{stage}.toml")), text).unwrap();
        }
        let out = t.path().join("run");
        let plan = |given: bool| Plan {
            dir: out.clone(),
            config_dir: Some(conf.clone()),
            force: false,
            run: RunFlags {
                dump: "d.json".into(),
                seed: 7,
                memory_limit: given.then(|| "8G".parse().unwrap()),
                min_falsity: given.then_some(Tier::Likely),
                carry_from: given.then(|| "old".into()),
            },
        };
        // The stage's settings and flags both ways, as text (every field, whether serialised or not).
        fn both<S: RunStage>(plan: &Plan, flags: &[&str]) -> (String, String) {
            let (settings, args, _) = stage_settings::<S>(plan).unwrap();
            let mut argv: Vec<std::ffi::OsString> = vec!["--out".into(), plan.dir.clone().into()];
            let file = plan
                .config_dir
                .as_ref()
                .unwrap()
                .join(format!("{}.toml", S::NAME));
            if file.exists() {
                argv.extend(["--config".into(), file.into()]);
            }
            argv.extend(flags.iter().map(|f| f.into()));
            let cli = StageCli::<S>::parse(&argv).unwrap();
            (
                format!("{settings:?} {args:?}"),
                format!("{:?} {:?}", cli.settings().unwrap(), cli.args),
            )
        }
        for given in [true, false] {
            let p = plan(given);
            // The flags the Makefile's command lines add for the run's flags that were given.
            let (extract_flags, distort_flags): (&[&str], &[&str]) = if given {
                (
                    &["--dump", "d.json", "--memory-limit", "8G"],
                    &[
                        "--seed",
                        "7",
                        "--min-falsity",
                        "likely",
                        "--carry-from",
                        "old",
                    ],
                )
            } else {
                (&["--dump", "d.json"], &["--seed", "7"])
            };
            let cases = [
                both::<extract::ExtractStage>(&p, extract_flags),
                both::<graph::GraphStage>(&p, &[]),
                both::<walks::WalksStage>(&p, &["--seed", "7"]),
                both::<train::TrainStage>(&p, &["--seed", "7"]),
                both::<distort::DistortStage>(&p, distort_flags),
                both::<export::ExportStage>(&p, &[]),
            ];
            for (run, own) in &cases {
                assert_eq!(run, own, "given: {given}");
            }
            // And the values themselves, by hand: the run's flags win, the files' other keys hold.
            let (e, ea, _) = stage_settings::<extract::ExtractStage>(&p).unwrap();
            assert_eq!(e.memory_limit.to_string(), if given { "8G" } else { "64M" });
            assert_eq!((e.max_bad_lines, ea.dump.to_str()), (3, Some("d.json")));
            let (w, _, _) = stage_settings::<walks::WalksStage>(&p).unwrap();
            assert_eq!((w.seed, w.length), (7, 20));
            let (d, da, _) = stage_settings::<distort::DistortStage>(&p).unwrap();
            let tier = if given { Tier::Likely } else { Tier::Certain };
            assert_eq!((d.seed, d.samples, d.min_falsity), (7, 9, tier));
            assert_eq!(da.carry_from.is_some(), given);
        }
    }

    /// The committed pipeline/*.toml files parse into the stage configs (which reject unknown keys), and
    /// say the same as the built-in defaults, so the Makefile and `sword run` without configs agree.
    #[test]
    fn committed_stage_configs_parse_and_match_defaults() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline");
        let f = |s: &str| config::stage_file(Some(&dir), s).expect("config file present");
        let e: extract::Config = config::load_stage(Some(&f("extract")), "extract").unwrap();
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
