//! `revalidation.parquet`: the status of every statement of an old benchmark against a newer dump
//! (`sword revalidate`, docs/versions.md), one row per statement in the old benchmark's order.

use crate::core::error::{Error, IoContext, Result};
use crate::store::tables;
use arrow_array::{Array, ArrayRef, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// One row: the statement, its strategy (`ORG`, `SS`, …), its status (`valid`, `label_changed`,
/// `original_removed`, `distortion_now_true`, `entity_missing`, `label_missing`) and what made it (the missing
/// entities, the guard, the languages whose label changed; empty for `valid`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RevalidationRow {
    pub statement_id: String,
    pub strategy: String,
    pub status: String,
    pub detail: String,
}

const COLUMNS: [&str; 4] = ["statement_id", "strategy", "status", "detail"];

/// Schema of `revalidation.parquet`: four utf8 columns, none null.
pub fn revalidation_schema() -> Arc<Schema> {
    utf8_schema(&COLUMNS)
}

/// A schema of non-null utf8 columns.
fn utf8_schema(columns: &[&str]) -> Arc<Schema> {
    Arc::new(Schema::new(
        columns
            .iter()
            .map(|c| Field::new(*c, DataType::Utf8, false))
            .collect::<Vec<_>>(),
    ))
}

/// Write the rows (one row group per [`tables::ROW_GROUP`] rows: the same rows give the same bytes).
pub fn write_revalidation<W: Write + Send>(
    w: W,
    rows: &[RevalidationRow],
    complete: bool,
    path: &Path,
) -> Result<W> {
    write_utf8_table(
        w,
        &COLUMNS,
        rows,
        |r: &RevalidationRow| [&r.statement_id, &r.strategy, &r.status, &r.detail],
        complete,
        path,
    )
}

/// Write a table of non-null utf8 columns named `columns`, `fields` giving each row's values in that order
/// (one row group per [`tables::ROW_GROUP`] rows). `revalidation.parquet` and `lineage.parquet` are such
/// tables.
pub(crate) fn write_utf8_table<W: Write + Send, R, const N: usize>(
    w: W,
    columns: &[&str; N],
    rows: &[R],
    fields: impl Fn(&R) -> [&String; N],
    complete: bool,
    path: &Path,
) -> Result<W> {
    tables::write_rows(w, utf8_schema(columns), rows, complete, path, |s, chunk| {
        s.batch(
            (0..N)
                .map(|c| -> ArrayRef {
                    Arc::new(StringArray::from_iter_values(
                        chunk.iter().map(|r| fields(r)[c].as_str()),
                    ))
                })
                .collect(),
        )
    })
}

/// Read a table [`write_utf8_table`] wrote: each row's values of `columns`, in that order; a column missing,
/// of another type or with a null is `Corrupt` naming the file.
pub(crate) fn read_utf8_table<const N: usize>(
    path: &Path,
    columns: &[&str; N],
) -> Result<Vec<[String; N]>> {
    let f = std::fs::File::open(path).at(path)?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .map_err(|e| Error::unreadable_parquet(path, e))?
        .build()
        .map_err(|e| Error::unreadable_parquet(path, e))?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| Error::unreadable_parquet(path, e))?;
        let cols: Vec<&StringArray> = columns
            .iter()
            .map(|c| {
                batch
                    .column_by_name(c)
                    .and_then(|a| a.as_any().downcast_ref::<StringArray>())
                    .filter(|a| a.null_count() == 0)
                    .ok_or_else(|| Error::Corrupt {
                        path: path.to_path_buf(),
                        what: format!("missing or null utf8 column `{c}`"),
                    })
            })
            .collect::<Result<_>>()?;
        for i in 0..batch.num_rows() {
            out.push(std::array::from_fn(|c| cols[c].value(i).to_string()));
        }
    }
    Ok(out)
}

/// Read a `revalidation.parquet`.
pub fn read_revalidation(path: &Path) -> Result<Vec<RevalidationRow>> {
    Ok(read_utf8_table(path, &COLUMNS)?
        .into_iter()
        .map(|[statement_id, strategy, status, detail]| RevalidationRow {
            statement_id,
            strategy,
            status,
            detail,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip() {
        let rows = vec![
            RevalidationRow {
                statement_id: "000001-ORG".into(),
                strategy: "ORG".into(),
                status: "valid".into(),
                detail: String::new(),
            },
            RevalidationRow {
                statement_id: "000001-SS".into(),
                strategy: "SS".into(),
                status: "distortion_now_true".into(),
                detail: "inverse".into(),
            },
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.parquet");
        let bytes = write_revalidation(Vec::new(), &rows, true, &path).unwrap();
        std::fs::write(&path, bytes).unwrap();
        assert_eq!(read_revalidation(&path).unwrap(), rows);
    }
}
