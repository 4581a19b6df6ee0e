//! `sword eval run` (ask an endpoint every request, resumable) and the offline Batch mode (`batch-write`,
//! `batch-read`).

use crate::core::error::{Error, Result};
use crate::eval::output::print_json;
use crate::eval::prompts;
use crate::llm::client::RunConfig;
use std::path::PathBuf;

/// `sword eval run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Requests JSONL from `sword eval prompts`.
    #[arg(long)]
    requests: PathBuf,
    /// Output directory (answers.jsonl resume log, samples.jsonl, results.json).
    #[arg(long)]
    out: PathBuf,
    /// Fail (exit 5, after writing the outputs) when a request is left without an answer (errors or
    /// --max-requests; an empty answer counts as answered): for make, so that an interrupted run is not taken as done.
    #[arg(long)]
    require_complete: bool,
    #[command(flatten)]
    cfg: RunConfig,
}

/// `sword eval batch-write`.
#[derive(clap::Args, Debug)]
pub struct BatchWriteArgs {
    #[arg(long)]
    requests: PathBuf,
    #[arg(long)]
    model: String,
    #[arg(long, default_value_t = 0.0)]
    temperature: f64,
    #[arg(long, default_value_t = 512)]
    max_tokens: u32,
    /// Batch input JSONL to write.
    #[arg(long)]
    out: PathBuf,
}

/// `sword eval batch-read`.
#[derive(clap::Args, Debug)]
pub struct BatchReadArgs {
    #[arg(long)]
    requests: PathBuf,
    /// Batch output JSONL.
    #[arg(long)]
    batch_output: PathBuf,
    /// Model name recorded in the samples (scores are grouped by it).
    #[arg(long)]
    model: Option<String>,
    /// Output directory (samples.jsonl, results.json).
    #[arg(long)]
    out: PathBuf,
}

/// Ask every request, write samples and results, print the summary.
pub fn run(a: RunArgs) -> Result<()> {
    let reqs: Vec<prompts::Request> = prompts::read_jsonl_as(&a.requests)?;
    let s = crate::eval::run::run(&a.out, &a.requests, &reqs, &a.cfg)?;
    print_json(&serde_json::to_value(&s).unwrap_or_default())?;
    // Empty answers are the model's answer (scored as unparsed); errors and pending are not.
    let unanswered = s.errors + s.pending;
    if a.require_complete && unanswered > 0 {
        return Err(Error::Remote {
            url: crate::llm::secret::redact_url(&a.cfg.base_url),
            what: format!(
                "{unanswered} of {} requests have no answer yet ({} errors, {} not attempted); rerun to resume",
                s.requests, s.errors, s.pending
            ),
        });
    }
    Ok(())
}

/// Write the requests as OpenAI Batch input.
pub fn batch_write(a: BatchWriteArgs) -> Result<()> {
    let reqs: Vec<prompts::Request> = prompts::read_jsonl_as(&a.requests)?;
    let text = crate::llm::batch::batch_lines(&reqs, &a.model, a.temperature, a.max_tokens);
    crate::store::write_atomic(&a.out, |w| w.write_all(text.as_bytes()))
}

/// Read OpenAI Batch output back into samples.
pub fn batch_read(a: BatchReadArgs) -> Result<()> {
    let reqs: Vec<prompts::Request> = prompts::read_jsonl_as(&a.requests)?;
    let s = crate::eval::run::import_batch(
        &a.out,
        &a.requests,
        &reqs,
        &a.batch_output,
        a.model.as_deref(),
    )?;
    print_json(&serde_json::to_value(s).unwrap_or_default())
}
