//! `sword eval prompts`: render a suite's input files as chat requests (requests.jsonl).

use crate::core::error::Result;
use crate::eval::output::write_requests;
use crate::eval::suite::{PromptOpts, SuiteName};
use std::path::PathBuf;

/// `sword eval prompts`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Which suite.
    #[arg(long, value_enum)]
    suite: SuiteName,
    #[command(flatten)]
    opts: PromptOpts,
    /// Output requests JSONL.
    #[arg(long)]
    out: PathBuf,
}

/// Render and write the requests.
pub fn run(a: Args) -> Result<()> {
    let reqs = crate::eval::suites::of(a.suite).prompts(&a.opts)?;
    write_requests(&a.out, &reqs)
}
