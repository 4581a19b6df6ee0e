//! `sword eval compare`: the paper's results (paper 001, §4: Figs. 2–5 and the cross-lingual gap) for any
//! set of models, from their samples files.
//!
//! * [`input`]: finding and reading samples files, every line checked (exit 2 naming the file and line);
//! * [`benchmark`]: with `--benchmark`, each answered statement's falsity tier from the run's sword.parquet;
//! * [`measures`]: every measure as tidy rows, with percentile bootstrap intervals resampling originals;
//! * [`table`]: `figures.parquet` and `figures.csv`, the rows as a table any tool can load;
//! * [`figures`]: the SVG figures, each drawn from those rows;
//! * [`report`]: `report.html` (one self-contained page) and `report.md`;
//! * [`languages`]: where the languages disagree: `answers.parquet`, `wrong_languages`, `split`, the UpSet
//!   figures and `suspects.parquet`.
//!
//! Output folder: `figures.parquet`, `figures.csv`, `answers.parquet`, `suspects.parquet`, `report.html`,
//! `report.md`, `figures/*.svg` and
//! `compare.manifest.json` (inputs with their hashes, settings, counts, outputs), written last, under the
//! folder's lock ([`crate::stages::folder`]). Every file is written to a temporary name and all are renamed
//! into place together at the end, so a failure (bad input, full disk) leaves no new output behind; figures
//! of an earlier compare that this one did not draw are removed.

pub mod benchmark;
mod draw;
pub mod figures;
pub mod input;
pub mod languages;
pub mod measures;
pub mod report;
pub mod table;

use crate::core::error::{IoContext, Result};
use crate::stages::folder::{execute_folder, Folder, FolderCommand};
use crate::store::{self as artifact, FileRef};
use std::io::Write;
use std::path::PathBuf;

/// `sword eval compare`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// samples.jsonl files (one may hold several models, told apart by their `model` field), or folders
    /// searched recursively for files named samples.jsonl (e.g. RUN/eval: files of another suite are skipped).
    #[arg(long, required = true, num_args = 1..)]
    pub results: Vec<PathBuf>,
    /// Output folder (figures.parquet, figures.csv, report.html, report.md, figures/).
    #[arg(long)]
    pub out: PathBuf,
    /// Only this variant (`plain` is the paper's protocol; `premise`, `belief` the cross-suite renderings).
    /// Default: every variant found, each compared on its own.
    #[arg(long)]
    pub variant: Option<String>,
    /// Bootstrap replicates for the 95 % intervals (0: no intervals). Typical 1000–10000.
    #[arg(long, default_value_t = 1000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap (replicate r of every model draws from (seed, r), as `eval score` does).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// The run folder (or its sword.parquet, format version 2) the answers are of: accuracy is also split by
    /// each distortion's falsity tier (open, likely, certain; docs/falsity.md). Every answered statement
    /// must be in it.
    #[arg(long, value_name = "RUN_DIR")]
    pub benchmark: Option<PathBuf>,
}

/// Name of the manifest in the output folder.
pub const STAGE: &str = "compare";

/// What `sword eval compare` writes into its folder (the manifest last).
pub const COMMAND: FolderCommand = FolderCommand {
    name: STAGE,
    writes: &[
        "figures.parquet",
        "figures.csv",
        "answers.parquet",
        "suspects.parquet",
        "report.html",
        "report.md",
        "figures/*.svg",
    ],
};

/// Run `sword eval compare`: on the folder contract ([`execute_folder`]): the folder is locked before
/// anything is read, every output is written through its handle, the figures an earlier compare drew and
/// this one did not are removed, and the manifest (inputs and outputs with their hashes) is written last,
/// under the lock.
pub fn run(a: &Args) -> Result<()> {
    let t = std::time::Instant::now();
    // Refused before anything is read or computed: the outputs could not be written there.
    if std::fs::metadata(&a.out).is_ok_and(|m| !m.is_dir()) {
        return Err(crate::core::error::Error::bad_input(
            &a.out,
            "--out must name a folder (it is created if missing); this is a file",
        ));
    }
    let mut config = serde_json::json!({
        "variant": a.variant, "bootstrap": a.bootstrap, "seed": a.seed,
        "results": a.results.iter().map(|p| p.display().to_string()).collect::<Vec<_>>(),
    });
    if let Some(b) = &a.benchmark {
        config["benchmark"] = b.display().to_string().into();
    }
    let (_, figures) = execute_folder(&COMMAND, &a.out, config, |f| compare(f, a, t))?;
    crate::core::progress::log(format!(
        "compare: wrote {} ({figures} figures) in {:.1} s",
        a.out.join("report.html").display(),
        t.elapsed().as_secs_f64()
    ));
    Ok(())
}

/// The work of `sword eval compare` inside its folder; returns how many figures it drew.
fn compare(f: &mut Folder, a: &Args, t: std::time::Instant) -> Result<usize> {
    let mut data = input::read(&a.results, a.variant.as_deref())?;
    if let Some(b) = &a.benchmark {
        data.tiers = Some(benchmark::tiers(&data, b)?);
    }
    // The sentences asked, when the benchmark's run folder has them (answers.parquet's `text`, the suspects').
    let texts = match &a.benchmark {
        Some(b) => languages::read_texts(&data, b)?,
        None => None,
    };
    for (f, suite) in &data.skipped {
        crate::core::progress::log(format!(
            "compare: skipped {} (answers of suite `{suite}`)",
            f.display()
        ));
    }
    let answers: u64 = data.groups.iter().flat_map(|g| g.answers).sum();
    crate::core::progress::log(format!(
        "compare: {answers} answers of {} model(s) × variant(s) on {} statements from {} file(s), read in {:.1} s",
        data.groups.len(),
        data.statements.len(),
        data.files.len(),
        t.elapsed().as_secs_f64()
    ));
    let t_measures = std::time::Instant::now();
    let mut rows = measures::compute(&data, a.bootstrap, a.seed);
    rows.extend(languages::rows(&data, a.bootstrap, a.seed));
    let suspects = languages::suspects(&data);
    crate::core::progress::log(format!(
        "compare: {} values ({} bootstrap replicates) in {:.1} s",
        rows.len(),
        a.bootstrap,
        t_measures.elapsed().as_secs_f64()
    ));
    let upsets = languages::upset_figures(&rows)?;
    let disagree = languages::section(
        &rows,
        &languages::SectionInput {
            data: &data,
            suspects: &suspects,
            texts: texts.as_ref(),
            figures: &upsets,
        },
    );
    let settings = report::Settings {
        bootstrap: a.bootstrap,
        seed: a.seed,
        files: data.files.clone(),
        benchmark: a.benchmark.as_deref().map(benchmark::sword_parquet),
        disagree: Some(disagree),
    };
    let mut outputs: Vec<(String, Vec<u8>)> = Vec::new();
    let pq = a.out.join("figures.parquet");
    outputs.push(("figures.parquet".into(), table::parquet_bytes(&rows, &pq)?));
    let mut csv = Vec::new();
    table::write_csv(&rows, &mut csv).at(a.out.join("figures.csv"))?;
    outputs.push(("figures.csv".into(), csv));
    let answers_pq = a.out.join("answers.parquet");
    outputs.push((
        "answers.parquet".into(),
        languages::answers_parquet(&data, texts.as_ref(), &answers_pq)?,
    ));
    let suspects_pq = a.out.join("suspects.parquet");
    outputs.push((
        "suspects.parquet".into(),
        languages::suspects_parquet(&data, &suspects, texts.as_ref(), &suspects_pq)?,
    ));
    let mut figs = figures::draw_all(&rows)?;
    let (html, md) = report::render(&rows, &figs, &settings);
    outputs.push(("report.html".into(), html.into_bytes()));
    outputs.push(("report.md".into(), md.into_bytes()));
    figs.extend(upsets);
    for f in &figs {
        outputs.push((format!("figures/{}", f.file), f.svg.clone().into_bytes()));
    }
    write_outputs(f, &outputs)?;
    let m = f.manifest();
    m.seed = Some(a.seed);
    for file in data
        .files
        .iter()
        .cloned()
        .chain(settings.benchmark.clone())
        .chain(texts.as_ref().map(|t| t.path.clone()))
    {
        m.inputs.push(FileRef::of(&file)?);
    }
    m.counts.insert("answers".into(), answers);
    m.counts.insert("groups".into(), data.groups.len() as u64);
    m.counts
        .insert("statements".into(), data.statements.len() as u64);
    if let Some(tiers) = &data.tiers {
        // Answered distortions per tier (`tier_open`, `tier_likely`, `tier_certain`).
        for t in crate::core::falsity::Tier::ALL {
            let n = tiers.iter().filter(|x| **x == Some(t)).count();
            m.counts.insert(format!("tier_{t}"), n as u64);
        }
    }
    m.counts.insert("rows".into(), rows.len() as u64);
    m.counts.insert("suspects".into(), suspects.len() as u64);
    m.counts.insert("figures".into(), figs.len() as u64);
    Ok(figs.len())
}

/// Write every output into the folder all or nothing: each to a temporary file beside its destination, all
/// flushed and fsynced (a full disk fails here, with nothing renamed), then renamed into place together (the
/// first rename takes the old manifest with it; the figures an earlier run drew and this one did not are
/// removed by the contract, before the new manifest).
fn write_outputs(f: &Folder, outputs: &[(String, Vec<u8>)]) -> Result<()> {
    let mut files = Vec::with_capacity(outputs.len());
    for (name, bytes) in outputs {
        let mut file = f.create(name)?;
        let dest = file.path().to_path_buf();
        file.write_all(bytes).at(&dest)?;
        files.push(file);
    }
    artifact::sync_files(&mut files)?;
    artifact::commit_all(files)?;
    Ok(())
}
