//! `sword eval report`: Markdown + SVG report for SWORD or sycophancy samples.

use crate::core::error::Result;
use crate::eval::suite::{ReportOpts, SuiteName};

/// `sword eval report`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// `sword` or `sycophancy`.
    #[arg(long, value_enum)]
    suite: SuiteName,
    #[command(flatten)]
    opts: ReportOpts,
}

/// Draw the report.
pub fn run(a: Args) -> Result<()> {
    crate::eval::suites::of(a.suite).report(&a.opts)
}
