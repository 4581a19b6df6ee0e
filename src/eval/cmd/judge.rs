//! AdversaRiskQA's judge step: `judge-prompts` (a judge request per answered sample) and `collect` (answers and
//! judgements laid out as published result files, for `score`).

use crate::core::error::Result;
use crate::eval::output::write_requests;
use crate::eval::samples;
use crate::eval::suites::adversariskqa;
use std::path::PathBuf;

/// `sword eval judge-prompts`.
#[derive(clap::Args, Debug)]
pub struct JudgePromptArgs {
    /// samples.jsonl of an AdversaRiskQA run.
    #[arg(long)]
    samples: PathBuf,
    /// Output requests JSONL.
    #[arg(long)]
    out: PathBuf,
}

/// `sword eval collect`.
#[derive(clap::Args, Debug)]
pub struct CollectArgs {
    /// samples.jsonl of the AdversaRiskQA answers.
    #[arg(long)]
    samples: PathBuf,
    /// samples.jsonl of the judge run (its requests from `judge-prompts`).
    #[arg(long)]
    judged: PathBuf,
    /// Model name (sub-folder).
    #[arg(long)]
    model: String,
    /// Results directory (one sub-folder per model).
    #[arg(long)]
    out: PathBuf,
}

/// Write the judge requests.
pub fn judge_prompts(a: JudgePromptArgs) -> Result<()> {
    let reqs = adversariskqa::judge_requests(&samples::read_jsonl(&a.samples)?);
    write_requests(&a.out, &reqs)
}

/// Lay the answers and judgements out as result files.
pub fn collect(a: CollectArgs) -> Result<()> {
    let s = samples::read_jsonl(&a.samples)?;
    let j = samples::read_jsonl(&a.judged)?;
    adversariskqa::collect_results(&s, &j, &a.model, &a.out).map(|_| ())
}
