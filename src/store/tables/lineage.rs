//! `lineage.parquet`: what `distort --carry-from` did with every statement of the old benchmark and where each
//! statement of the new one comes from (docs/versions.md, "Carrying a benchmark to a new dump"). One row per
//! old statement (`carried` or `dropped`, in the old benchmark's order), then one per statement drawn by this
//! build (`drawn`, in the new benchmark's order).

use crate::core::error::Result;
use crate::store::tables::revalidation::{read_utf8_table, write_utf8_table};
use std::io::Write;
use std::path::Path;

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

/// Write the rows (one row group per [`crate::store::tables::ROW_GROUP`] rows: the same rows give the same bytes), seven
/// utf8 columns, none null.
pub fn write_lineage<W: Write + Send>(
    w: W,
    rows: &[LineageRow],
    complete: bool,
    path: &Path,
) -> Result<W> {
    fn fields(r: &LineageRow) -> [&String; 7] {
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
    write_utf8_table(w, &COLUMNS, rows, fields, complete, path)
}

/// Read a `lineage.parquet`.
pub fn read_lineage(path: &Path) -> Result<Vec<LineageRow>> {
    Ok(read_utf8_table(path, &COLUMNS)?
        .into_iter()
        .map(
            |[statement_id, original_id, strategy, action, status, detail, replaces]| LineageRow {
                statement_id,
                original_id,
                strategy,
                action,
                status,
                detail,
                replaces,
            },
        )
        .collect())
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
