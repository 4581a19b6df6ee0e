//! `sword eval`: evaluate models on SWORD and on its two sibling suites (AdversaRiskQA, Chinese factual
//! sycophancy) with one runner and one scorer, reproducing each paper's measures.
//!
//! - [`suite`]: what every suite offers (requests, scores, a report) and the options shared by the
//!   subcommands; [`suites`]: one module per suite;
//! - [`cmd`]: one module per subcommand;
//! - [`prompts`] (rendering), [`parse`] (answer parsers), [`samples`] (reading answered samples), [`run`]
//!   (asking and writing samples), [`stats`] (normal CDF, bootstrap, logistic regression with clustered
//!   errors), [`report`] (Markdown and SVG), [`output`].
//!
//! Independent of the pipeline stages: it reads files. The language-model client is [`crate::llm`].

pub mod cmd;
pub mod compare;
pub mod output;
pub mod parse;
pub mod prompts;
pub mod report;
pub mod run;
pub mod samples;
pub mod stats;
pub mod suite;
pub mod suites;

use crate::core::error::Result;

/// Command-line arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Subcommand, Debug)]
enum Cmd {
    /// Score model answers (AdversaRiskQA: re-score published, judged result files).
    Score(cmd::score::Args),
    /// Render a suite's input files as chat requests (requests.jsonl).
    Prompts(cmd::prompts::Args),
    /// Ask an OpenAI-compatible endpoint every request (resumable), writing answers and samples. A flag
    /// given twice takes its last value (so `make` can add to EVAL_FLAGS).
    #[command(args_override_self = true)]
    Run(cmd::run::RunArgs),
    /// Offline mode: write the requests as OpenAI Batch input JSONL.
    BatchWrite(cmd::run::BatchWriteArgs),
    /// Offline mode: read OpenAI Batch output back into samples.jsonl / results.json.
    BatchRead(cmd::run::BatchReadArgs),
    /// Markdown + SVG report for SWORD or sycophancy samples.
    Report(cmd::report::Args),
    /// AdversaRiskQA: judge requests (fact, premise, question, answer) for answered samples.
    JudgePrompts(cmd::judge::JudgePromptArgs),
    /// AdversaRiskQA: answers + judge outputs laid out as published result files (for `score`).
    Collect(cmd::judge::CollectArgs),
    /// The report of `make eval`: translation text_ok shares, SWORD per language × strategy, other suites.
    ChainReport(cmd::chain::Args),
    /// AdversaRiskQA long form: decomposition requests (atomic facts, JSON schema) for the answered samples.
    DecomposePrompts(cmd::longform::DecomposeArgs),
    /// AdversaRiskQA long form: one verification request per decomposed fact.
    VerifyPrompts(cmd::longform::VerifyArgs),
    /// AdversaRiskQA long form: answers, facts and verdicts laid out as the authors' fact-check files.
    CollectLongform(cmd::longform::CollectLongformArgs),
    /// SWORD: several models side by side (the paper's Figs. 2–5 and gap): figures.parquet/.csv, SVG
    /// figures, report.html and report.md.
    Compare(compare::Args),
}

/// Entry point from the binary.
pub fn cli(args: Args) -> Result<()> {
    match args.cmd {
        Cmd::Score(a) => cmd::score::run(a),
        Cmd::Prompts(a) => cmd::prompts::run(a),
        Cmd::Run(a) => cmd::run::run(a),
        Cmd::BatchWrite(a) => cmd::run::batch_write(a),
        Cmd::BatchRead(a) => cmd::run::batch_read(a),
        Cmd::Report(a) => cmd::report::run(a),
        Cmd::JudgePrompts(a) => cmd::judge::judge_prompts(a),
        Cmd::Collect(a) => cmd::judge::collect(a),
        Cmd::ChainReport(a) => cmd::chain::run(&a),
        Cmd::DecomposePrompts(a) => cmd::longform::decompose(a),
        Cmd::VerifyPrompts(a) => cmd::longform::verify(a),
        Cmd::CollectLongform(a) => cmd::longform::collect(a),
        Cmd::Compare(a) => compare::run(&a),
    }
}
