//! `sword eval score`: score model answers (AdversaRiskQA: re-score published, judged result files).

use crate::core::error::Result;
use crate::eval::suite::{ScoreOpts, SuiteName};

/// `sword eval score`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// Which suite the results belong to.
    #[arg(long, value_enum)]
    suite: SuiteName,
    #[command(flatten)]
    opts: ScoreOpts,
}

/// Score and print.
pub fn run(a: Args) -> Result<()> {
    crate::eval::suites::of(a.suite).score(&a.opts)
}
