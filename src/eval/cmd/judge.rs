//! AdversaRiskQA's judge step: `judge-prompts` (a judge request per answered sample) and `collect` (answers and
//! judgements laid out as published result files, for `score`).

use crate::core::error::Result;
use crate::eval::output::{model_folder, write_requests};
use crate::eval::samples;
use crate::eval::suites::adversariskqa;
use crate::stages::folder::execute_folder;
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
    /// Results directory (one sub-folder per model; the model's is locked and gets `collect.manifest.json`).
    #[arg(long)]
    out: PathBuf,
}

/// Write the judge requests.
pub fn judge_prompts(a: JudgePromptArgs) -> Result<()> {
    let reqs = adversariskqa::judge_requests(&samples::read_jsonl(&a.samples)?);
    write_requests(&a.out, &reqs)
}

/// Lay the answers and judgements out as result files in the model's folder of `--out`, on the folder
/// contract: that folder locked, the two samples files hashed, a result file of an earlier collect of this
/// model that this one did not write removed, `collect.manifest.json` last.
pub fn collect(a: CollectArgs) -> Result<()> {
    let dir = a.out.join(model_folder(&a.model)?);
    let s = samples::read_jsonl(&a.samples)?;
    let j = samples::read_jsonl(&a.judged)?;
    let config = serde_json::json!({ "model": a.model });
    execute_folder(&adversariskqa::COLLECT, &dir, config, |f| {
        f.input(&a.samples)?;
        f.input(&a.judged)?;
        let files = adversariskqa::collect_results(f, &s, &a.samples, &j, &a.model)?;
        f.count("files", files as u64);
        Ok(())
    })
    .map(|_| ())
}
