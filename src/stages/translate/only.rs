//! `sword translate --only FILE`: translate again only some (statement, language) pairs, e.g. the suspect
//! sentences of `sword eval compare` (`suspects.parquet`: most models answer the statement right in seven
//! languages and wrong in this one, which points at the translation).
//!
//! The file is any Parquet file with string columns `statement_id` and `language` (other columns are
//! ignored; a pair listed twice is asked once). Each pair must be one `sword translate` would ask on this run
//! (the statement in `sword.parquet`, within `--originals`, with its three labels in that language), and the
//! run must already have its `statements_text.parquet`: otherwise exit 2 naming the file and row. The pairs
//! are asked as new requests (seed [`SEED`]; retries of `--retry-bad` seed `SEED + r`), so the answer log's
//! first answer is not simply returned again, checked as every translation is, and the new rows replace the
//! old ones; every other row is kept as it was.

use crate::core::error::{Error, IoContext, Result};
use crate::stages::contract::Context;
use crate::store::layout::TEXTS_GENERATED;
use crate::store::tables::texts::{read_texts_file, StatementText};
use crate::store::FileRef;
use arrow_array::{Array, RecordBatch, StringArray};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

/// Seed of a pair's first new request (well above any `--retry-bad` round of the first translation).
pub const SEED: u64 = 1000;

/// The pairs of `path`: (statement_id, language) → the first row listing it.
pub fn read_pairs(path: &Path) -> Result<BTreeMap<(String, String), u64>> {
    let f = std::fs::File::open(path).at(path)?;
    let batches = crate::store::tables::read_batches(f, path).map_err(|e| match e {
        Error::Parquet { .. } | Error::Corrupt { .. } => Error::bad_input(
            path,
            format!("not a Parquet file of (statement_id, language) pairs: {e}"),
        ),
        e => e,
    })?;
    let mut out = BTreeMap::new();
    let mut row = 0u64;
    for b in batches {
        let (sid, lang) = (
            string_col(&b, "statement_id", path)?,
            string_col(&b, "language", path)?,
        );
        for i in 0..b.num_rows() {
            let at = row + i as u64;
            if sid.is_null(i) || lang.is_null(i) || sid.value(i).is_empty() {
                return Err(Error::bad_input(
                    path,
                    format!("row {at}: no statement_id or language"),
                ));
            }
            out.entry((sid.value(i).to_string(), lang.value(i).to_string()))
                .or_insert(at);
        }
        row += b.num_rows() as u64;
    }
    Ok(out)
}

fn string_col<'a>(b: &'a RecordBatch, name: &str, path: &Path) -> Result<&'a StringArray> {
    b.column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| {
            Error::bad_input(
                path,
                format!("no string column `{name}`: --only needs statement_id and language"),
            )
        })
}

/// Keep the jobs whose (statement, language) `key` lists; a listed pair no job has is exit 2 naming the
/// file and its row.
pub fn retain<J>(
    jobs: &mut Vec<J>,
    key: impl Fn(&J) -> (&String, &str),
    pairs: &BTreeMap<(String, String), u64>,
    path: &Path,
) -> Result<()> {
    let mut found: HashSet<(String, String)> = HashSet::new();
    jobs.retain(|j| {
        let (s, l) = key(j);
        let k = (s.clone(), l.to_string());
        let keep = pairs.contains_key(&k);
        if keep {
            found.insert(k);
        }
        keep
    });
    let missing = pairs
        .iter()
        .filter(|(k, _)| !found.contains(*k))
        .min_by_key(|(_, row)| **row);
    if let Some(((s, l), row)) = missing {
        return Err(Error::bad_input(
            path,
            format!(
                "row {row}: statement `{s}` in `{l}` is not a pair this run translates (not in its sword.parquet, outside --originals, a language it lacks, or a label missing in it)"
            ),
        ));
    }
    Ok(())
}

/// The run's `statements_text.parquet` as it is (recorded among the manifest's inputs): the rows the new
/// translations replace. Exit 2 when the run has none yet.
pub fn earlier_texts(dir: &Path, cx: &mut Context) -> Result<Vec<StatementText>> {
    let p = dir.join(TEXTS_GENERATED.file);
    if !p.is_file() {
        return Err(Error::bad_input(
            &p,
            "--only translates again some pairs of a translated run: this run has no statements_text.parquet yet (run `sword translate` without --only first)",
        ));
    }
    cx.manifest().inputs.push(FileRef::of(&p)?);
    read_texts_file(&p)
}
