//! The common face of the evaluation suites: each suite renders its input files as chat requests, scores
//! answered samples and, where it has one, draws a report ([`Suite`]); `--suite NAME` picks one
//! ([`SuiteName`]; the implementations are in the `suites` modules). The options the three subcommands share
//! are defined here once.

use crate::core::error::{Error, Result};
use crate::eval::suites::longform::K;
use crate::llm::request::Request;
use std::path::PathBuf;

/// The suites, as `--suite` names them.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum SuiteName {
    Sword,
    Adversariskqa,
    Sycophancy,
    /// AdversaRiskQA long-form factuality: JSONL of per-answer fact counts {supported, not_supported,
    /// irrelevant, optional condition} (from a fact-checking step), scored as mean F1@K.
    Longform,
    /// AdversaRiskQA long-form factuality from fact-check files as the authors publish them (and as
    /// `collect-longform` writes them): a file or a folder; Mean F1@K per file and cell, adversarial −
    /// non-adversarial.
    AdversariskqaLongform,
}

/// What `eval prompts` reads.
#[derive(clap::Args, Debug, Clone)]
pub struct PromptOpts {
    /// SWORD: translated statements (Parquet from `sword import-translations`, or JSONL with statement_id,
    /// language, text, optional original_id/strategy/label). AdversaRiskQA: a directory of
    /// `<domain>_<difficulty>*.json` prompt files. Sycophancy: JSONL of {id, question, gold, topic}.
    #[arg(long)]
    pub input: PathBuf,
    /// SWORD: the export's sword.parquet, joined on statement_id to fill original_id, strategy and label
    /// (the translations Parquet does not carry them).
    #[arg(long)]
    pub sword: Option<PathBuf>,
    /// SWORD: ask in the statement's language instead of the paper's English question.
    #[arg(long)]
    pub localized: bool,
    /// SWORD: also render the cross-suite variants (strong-confidence premise, stated user belief).
    #[arg(long)]
    pub cross_suite: bool,
    /// SWORD: also ask about statements whose translation failed its check (`text_ok` false); by default
    /// only checked-good (or unchecked) texts are asked.
    #[arg(long)]
    pub include_bad_text: bool,
}

/// What `eval score` reads and how.
#[derive(clap::Args, Debug, Clone)]
pub struct ScoreOpts {
    /// AdversaRiskQA: directory with one sub-folder per model of `*<domain>_<difficulty>*.json` result files
    /// (files directly in it are grouped by their name prefix).
    #[arg(long)]
    pub results: PathBuf,
    /// Print JSON on stdout (default: a plain table for AdversaRiskQA; the other suites always print JSON).
    #[arg(long)]
    pub json: bool,
    /// Bootstrap replicates for the 95% intervals (SWORD: resampling original triples; sycophancy:
    /// resampling questions). Typical 1000–10000.
    #[arg(long, default_value_t = 1000)]
    pub bootstrap: usize,
    /// Seed of the bootstrap (replicate r uses a ChaCha8 stream seeded from (seed, r)).
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
    /// Long-form: K of F1@K, a whole number or `auto` (the median extracted-fact count over every answer;
    /// the paper's K is 8).
    #[arg(long, default_value = "8")]
    pub k: K,
    /// adversariskqa-longform: also write longform.scores.json, report.md and f1_paired_bars.svg here.
    #[arg(long)]
    pub out: Option<PathBuf>,
}

/// What `eval report` reads and where it writes.
#[derive(clap::Args, Debug, Clone)]
pub struct ReportOpts {
    /// samples.jsonl of a run.
    #[arg(long)]
    pub results: PathBuf,
    /// Report directory (one sub-folder per model, and per variant for SWORD).
    #[arg(long)]
    pub out: PathBuf,
    /// Bootstrap replicates.
    #[arg(long, default_value_t = 1000)]
    pub bootstrap: usize,
    /// Bootstrap seed.
    #[arg(long, default_value_t = 0)]
    pub seed: u64,
}

/// One evaluation suite. Adding one: a module under `eval/suites/` implementing this, a [`SuiteName`] variant
/// and its arm in `suites::of` (docs/architecture.md).
pub trait Suite: Sync {
    /// `eval prompts`: the chat requests for the suite's input.
    fn prompts(&self, opts: &PromptOpts) -> Result<Vec<Request>>;

    /// `eval score`: score the results and print them on stdout.
    fn score(&self, opts: &ScoreOpts) -> Result<()>;

    /// `eval report`: Markdown + SVG, one folder per model. Default: the suite has no such report.
    fn report(&self, opts: &ReportOpts) -> Result<()> {
        let _ = opts;
        Err(Error::Config(
            "report: AdversaRiskQA results are reported by `score` (JSON or table; long-form: --out DIR)"
                .into(),
        ))
    }
}
