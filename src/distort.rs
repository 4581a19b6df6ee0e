//! Placeholder: this stage lands in its own change.

use crate::error::{Error, Result};

/// Command-line arguments.
#[derive(clap::Args, Debug)]
pub struct Args {}

/// Entry point from the binary.
pub fn cli(_args: Args) -> Result<()> {
    Err(Error::Config("`distort` is not implemented yet".into()))
}
