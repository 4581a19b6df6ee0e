//! `--benchmark`: the falsity tier of every answered statement, read from the run's `sword.parquet`
//! (docs/falsity.md), so that accuracy can be split by how sure each "false" is.
//!
//! Only the `statement_id`, `strategy` and `falsity` columns are read, batch by batch, and only the answered
//! statements are kept (a benchmark of 10⁶ statements costs the answered ones' tiers, one byte each).
//!
//! Exit 2 (bad input, naming the file): a `sword.parquet` without the `falsity` column (format version 1,
//! written before the tier existed); an answered statement that is not in the benchmark, or whose strategy
//! differs there (the answers are of another SWORD build: a split over the statements found would silently
//! drop answers); a distortion without a tier (a run whose extract predates the falsity tables) or with a
//! tier other than `open`, `likely`, `certain`. Statements of the benchmark that no model answered are
//! ignored. An original (ORG) has no tier, whatever the column holds.

use super::input::Data;
use crate::core::error::{Error, IoContext, Result};
use crate::core::falsity::Tier;
use crate::eval::suites::sword::STRATEGIES;
use crate::store::layout;
use arrow_array::{Array, StringArray};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ProjectionMask;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

/// `sword.parquet` of `path`: the file itself, or the one in a run folder.
pub fn sword_parquet(path: &Path) -> PathBuf {
    if path.is_dir() {
        path.join(layout::SWORD.file)
    } else {
        path.to_path_buf()
    }
}

/// The tier of each of `data`'s statements (by index; `None` for ORG), read from the benchmark at `path` (a
/// run folder or its `sword.parquet`).
pub fn tiers(data: &Data, path: &Path) -> Result<Vec<Option<Tier>>> {
    let path = sword_parquet(path);
    let f = std::fs::File::open(&path).at(&path)?;
    let builder = ParquetRecordBatchReaderBuilder::try_new(f)
        .map_err(|e| Error::unreadable_parquet(&path, e))?;
    let names: Vec<&str> = builder
        .schema()
        .fields()
        .iter()
        .map(|f| f.name().as_str())
        .collect();
    if !names.contains(&"falsity") {
        return Err(Error::bad_input(
            &path,
            "no `falsity` column: a sword.parquet of format version 1, written before the falsity tier; export the run again with this sword (and extract, for the tiers to be known) to split accuracy by tier",
        ));
    }
    let columns = ["statement_id", "strategy", "falsity"];
    let mask = ProjectionMask::columns(builder.parquet_schema(), columns);
    let reader = builder
        .with_projection(mask)
        .build()
        .map_err(|e| Error::unreadable_parquet(&path, e))?;
    let index: HashMap<&str, usize> = data
        .statements
        .iter()
        .enumerate()
        .map(|(i, s)| (s.id.as_str(), i))
        .collect();
    // Per statement: found, and its tier.
    let mut found = vec![false; data.statements.len()];
    let mut tiers: Vec<Option<Tier>> = vec![None; data.statements.len()];
    let mut row = 0u64;
    for batch in reader {
        let batch = batch.map_err(|e| Error::unreadable_parquet(&path, e))?;
        let col = |name: &str| crate::store::tables::string_column(&batch, name, &path);
        let (sid, strategy, falsity): (&StringArray, &StringArray, &StringArray) =
            (col("statement_id")?, col("strategy")?, col("falsity")?);
        for i in 0..batch.num_rows() {
            let at = row + i as u64;
            let Some(&s) = (sid.is_valid(i)).then(|| index.get(sid.value(i))).flatten() else {
                continue;
            };
            let st = &data.statements[s];
            let ours = STRATEGIES[st.strategy as usize];
            let theirs = strategy.is_valid(i).then(|| strategy.value(i));
            if theirs != Some(ours) {
                return Err(Error::bad_input(
                    &path,
                    format!(
                        "row {at}: statement `{}` is {} here but {ours} in the answers: the answers are of another SWORD build",
                        st.id,
                        theirs.unwrap_or("null")
                    ),
                ));
            }
            found[s] = true;
            if ours == "ORG" {
                continue;
            }
            if falsity.is_null(i) {
                return Err(Error::bad_input(
                    &path,
                    format!(
                        "row {at}: distortion `{}` has no falsity tier (a run whose extract predates the falsity tables): extract, distort and export it again to split accuracy by tier",
                        st.id
                    ),
                ));
            }
            let t = Tier::parse(falsity.value(i)).ok_or_else(|| {
                Error::bad_input(
                    &path,
                    format!(
                        "row {at}: falsity `{}` of `{}` is none of open, likely, certain",
                        falsity.value(i),
                        st.id
                    ),
                )
            })?;
            tiers[s] = Some(t);
        }
        row += batch.num_rows() as u64;
    }
    let missing: Vec<usize> = (0..found.len()).filter(|&s| !found[s]).collect();
    if let Some(&first) = missing.first() {
        return Err(Error::bad_input(
            &path,
            format!(
                "{} answered statement(s) are not in this benchmark, the first `{}`: the answers are of another SWORD build (split by tier only answers of this one)",
                missing.len(),
                data.statements[first].id
            ),
        ));
    }
    Ok(tiers)
}
