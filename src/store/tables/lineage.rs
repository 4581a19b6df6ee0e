//! `lineage.parquet`: what `distort --carry-from` did with every statement of the old benchmark and where each
//! statement of the new one comes from (docs/versions.md, "Carrying a benchmark to a new dump"). One row per
//! old statement (`carried` or `dropped`, in the old benchmark's order), then one per statement drawn by this
//! build (`drawn`, in the new benchmark's order).

use crate::core::error::{Error, IoContext, Result};
use crate::store::tables;
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// One row of `lineage.parquet`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineageRow {
    pub statement_id: String,
    /// The id of its original (the statement id's stem: `7f3a09c2-000042`).
    pub original_id: String,
    /// `ORG`, `SS`, `OS`, `PSS`, `POS`.
    pub strategy: String,
    /// `carried`, `dropped` or `drawn`.
    pub action: String,
    /// The old statement's revalidation status (`valid`, `label_changed`, …); empty for `drawn`.
    pub status: String,
    /// What made the status (revalidation's detail), or why a statement was dropped or drawn.
    pub detail: String,
    /// For `drawn`: the dropped statement it stands in for (empty when it stands in for none).
    pub replaces: String,
}

const COLUMNS: [&str; 7] = [
    "statement_id",
    "original_id",
    "strategy",
    "action",
    "status",
    "detail",
    "replaces",
];

/// Schema of `lineage.parquet`: seven utf8 columns, none null (empty strings where a field does not apply).
pub fn lineage_schema() -> Arc<Schema> {
    Arc::new(Schema::new(
        COLUMNS
            .iter()
            .map(|c| Field::new(*c, DataType::Utf8, false))
            .collect::<Vec<_>>(),
    ))
}

fn fields(r: &LineageRow) -> [&str; 7] {
    [
        &r.statement_id,
        &r.original_id,
        &r.strategy,
        &r.action,
        &r.status,
        &r.detail,
        &r.replaces,
    ]
}

/// Write the rows (one row group per [`tables::ROW_GROUP`] rows: the same rows give the same bytes).
pub fn write_lineage<W: Write + Send>(
    w: W,
    rows: &[LineageRow],
    complete: bool,
    path: &Path,
) -> Result<W> {
    let schema = lineage_schema();
    let mut writer = ArrowWriter::try_new(
        w,
        schema.clone(),
        Some(tables::writer_props_marked(complete)),
    )
    .map_err(|e| Error::parquet(path, e))?;
    for chunk in rows.chunks(tables::ROW_GROUP) {
        let cols: Vec<ArrayRef> = (0..COLUMNS.len())
            .map(|c| -> ArrayRef {
                Arc::new(StringArray::from_iter_values(
                    chunk.iter().map(|r| fields(r)[c]),
                ))
            })
            .collect();
        let batch =
            RecordBatch::try_new(schema.clone(), cols).map_err(|e| Error::parquet(path, e))?;
        writer.write(&batch).map_err(|e| Error::parquet(path, e))?;
    }
    writer.into_inner().map_err(|e| Error::parquet(path, e))
}

/// Read a `lineage.parquet`.
pub fn read_lineage(path: &Path) -> Result<Vec<LineageRow>> {
    let f = std::fs::File::open(path).at(path)?;
    let reader = ParquetRecordBatchReaderBuilder::try_new(f)
        .map_err(|e| Error::parquet(path, e))?
        .build()
        .map_err(|e| Error::parquet(path, e))?;
    let mut out = Vec::new();
    for batch in reader {
        let batch = batch.map_err(|e| Error::parquet(path, e))?;
        let cols: Vec<&StringArray> = COLUMNS
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
            let v = |c: usize| cols[c].value(i).to_string();
            out.push(LineageRow {
                statement_id: v(0),
                original_id: v(1),
                strategy: v(2),
                action: v(3),
                status: v(4),
                detail: v(5),
                replaces: v(6),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_round_trip() {
        let rows = vec![
            LineageRow {
                statement_id: "000001-SS".into(),
                original_id: "000001".into(),
                strategy: "SS".into(),
                action: "dropped".into(),
                status: "distortion_now_true".into(),
                detail: "exists".into(),
                replaces: String::new(),
            },
            LineageRow {
                statement_id: "000001-SS.0badcafe".into(),
                original_id: "000001".into(),
                strategy: "SS".into(),
                action: "drawn".into(),
                status: String::new(),
                detail: "redrawn".into(),
                replaces: "000001-SS".into(),
            },
        ];
        let p = Path::new("lineage.parquet");
        let bytes = write_lineage(Vec::new(), &rows, true, p).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("lineage.parquet");
        std::fs::write(&f, bytes).unwrap();
        assert_eq!(read_lineage(&f).unwrap(), rows);
    }
}
