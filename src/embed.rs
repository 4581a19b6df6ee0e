//! Placeholder: this stage lands in its own change.

use crate::error::{Error, Result};

/// Command-line arguments.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Entry point from the binary.
pub fn cli(_args: Args) -> Result<()> {
    Err(Error::Config("`embed` is not implemented yet".into()))
}

/// Arguments of `sword similar`.
#[derive(clap::Args, Debug)]
pub struct SimilarArgs {}

/// Entry point of `sword similar`.
pub fn similar_cli(_args: SimilarArgs) -> Result<()> {
    Err(Error::Config("`similar` is not implemented yet".into()))
}
