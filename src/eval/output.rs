//! How the evaluation commands write: requests as JSON Lines, atomically; JSON on stdout; folder names made
//! safe from model names.

use crate::core::error::{Error, Result};
use crate::llm::request::Request;
use arrow_array::{ArrayRef, RecordBatch};
use arrow_schema::Schema;
use std::path::Path;
use std::sync::Arc;

/// Write requests as JSON Lines, atomically.
pub fn write_requests(path: &Path, reqs: &[Request]) -> Result<()> {
    let mut text = String::new();
    for r in reqs {
        text.push_str(&serde_json::to_string(r).map_err(|e| Error::Config(e.to_string()))?);
        text.push('\n');
    }
    crate::store::write_atomic(path, |w| w.write_all(text.as_bytes()))
}

/// One record batch of `schema` from `cols`, as the bytes of a Parquet file with the project's writer
/// properties (ZSTD, fixed row groups: the same rows are the same bytes); errors name `path`, where the bytes
/// are going.
pub fn parquet_bytes(schema: Arc<Schema>, cols: Vec<ArrayRef>, path: &Path) -> Result<Vec<u8>> {
    let batch = RecordBatch::try_new(schema.clone(), cols).map_err(|e| Error::parquet(path, e))?;
    let mut w = parquet::arrow::ArrowWriter::try_new(
        Vec::new(),
        schema,
        Some(crate::store::tables::writer_props()),
    )
    .map_err(|e| Error::parquet(path, e))?;
    w.write(&batch).map_err(|e| Error::parquet(path, e))?;
    w.into_inner().map_err(|e| Error::parquet(path, e))
}

pub use crate::core::stdout::{print_json, stdout_write};

/// `name` (a `--model`) as the folder under `--out` that holds the model's files, or a settings error (exit 2)
/// when it names no folder of its own there: empty, `.`, `..`, or an absolute path. The collect commands
/// remove the files of an earlier run from that folder, so it must be the model's and nobody else's.
pub fn model_folder(name: &str) -> Result<&Path> {
    let p = Path::new(name);
    let own = !name.is_empty()
        && p.components()
            .all(|c| matches!(c, std::path::Component::Normal(_)));
    if own {
        Ok(p)
    } else {
        Err(Error::Config(format!(
            "--model `{name}` names no folder of its own under --out"
        )))
    }
}

/// A value read from samples (a domain, a difficulty) that the collect commands put into a file name: refused
/// when empty or holding a path separator or NUL, since the file would then land outside the folder its
/// command declares (or nowhere). The error names the samples file `path`, its `line` and the key.
pub fn file_part<'a>(value: &'a str, key: &str, path: &Path, line: u64) -> Result<&'a str> {
    if value.is_empty() || value.contains(['/', '\\', '\0']) {
        Err(Error::bad_input(
            path,
            format!(
                "line {line}: `{key}` {value:?} cannot be part of a file name (empty, or a path separator or NUL in it)"
            ),
        ))
    } else {
        Ok(value)
    }
}

/// A model or variant name as a folder name: letters, digits, `-` and `.` kept, anything else `_`.
pub fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}
