//! What a command prints on stdout (its result; progress and logs go to stderr, [`super::progress`]).

use super::error::{Error, Result};
use std::io::Write;

/// Bytes on stdout, flushed (a closed pipe is an I/O error on `-`, which `main` turns into exit 0).
pub fn stdout_write(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|_| out.flush())
        .map_err(|e| Error::io("-", e))
}

/// A value as pretty JSON on stdout, with a final newline (a stage's summary, an evaluation command's result).
pub fn print_json(value: &impl serde::Serialize) -> Result<()> {
    let mut text = serde_json::to_string_pretty(value)
        .map_err(|e| Error::internal(format!("serialise the JSON result: {e}")))?;
    text.push('\n');
    stdout_write(text.as_bytes())
}
