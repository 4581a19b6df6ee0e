//! Parquet tables: schemas and typed read/write for the artifacts stages exchange.
//!
//! Ids are written as strings ("Q42", "P31") so that any tool (DuckDB, pyarrow, polars, Spark) can join them
//! with other Wikidata data without knowing our encoding. Compression is ZSTD(3); files are written with a
//! fixed row-group size so that the same rows give the same bytes.

use crate::error::{Error, Result};
use crate::ids::{Pid, Qid};
use crate::model::{Rank, Triple};
use arrow_array::{Array, ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::arrow_reader::ParquetRecordBatchReaderBuilder;
use parquet::arrow::ArrowWriter;
use parquet::basic::{Compression, ZstdLevel};
use parquet::file::properties::WriterProperties;
use parquet::file::reader::ChunkReader;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Rows per record batch / row group written.
pub const ROW_GROUP: usize = 1 << 17;

/// Writer properties used for every artifact (ZSTD level 3, fixed row-group size).
pub fn writer_props() -> WriterProperties {
    WriterProperties::builder()
        .set_compression(Compression::ZSTD(
            ZstdLevel::try_new(3).expect("valid level"),
        ))
        .set_max_row_group_row_count(Some(ROW_GROUP))
        .build()
}

/// Schema of `triples.parquet`, `statements.parquet` and `transitive.parquet`:
/// `subject` (utf8, "Q42"), `property` (utf8, "P31"), `object` (utf8), `rank` (utf8: preferred / normal /
/// deprecated), `statement_id` (utf8, Wikidata statement GUID).
pub fn triple_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("subject", DataType::Utf8, false),
        Field::new("property", DataType::Utf8, false),
        Field::new("object", DataType::Utf8, false),
        Field::new("rank", DataType::Utf8, false),
        Field::new("statement_id", DataType::Utf8, false),
    ]))
}

/// Write triples as Parquet to any writer (a file, or a `Vec<u8>` in tests).
pub fn write_triples<W: Write + Send>(
    w: W,
    triples: &[Triple],
    path_for_errors: &Path,
) -> Result<W> {
    let schema = triple_schema();
    let mut writer = ArrowWriter::try_new(w, schema.clone(), Some(writer_props()))
        .map_err(|e| Error::parquet(path_for_errors, e))?;
    for chunk in triples.chunks(ROW_GROUP) {
        let col = |f: &dyn Fn(&Triple) -> String| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(chunk.iter().map(f)))
        };
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
                col(&|t| t.subject.to_string()),
                col(&|t| t.property.to_string()),
                col(&|t| t.object.to_string()),
                col(&|t| t.rank.as_str().to_string()),
                col(&|t| t.statement_id.clone()),
            ],
        )
        .map_err(|e| Error::parquet(path_for_errors, e))?;
        writer
            .write(&batch)
            .map_err(|e| Error::parquet(path_for_errors, e))?;
    }
    writer
        .into_inner()
        .map_err(|e| Error::parquet(path_for_errors, e))
}

/// Read all record batches of a Parquet source.
pub fn read_batches<R: ChunkReader + 'static>(src: R, path: &Path) -> Result<Vec<RecordBatch>> {
    let reader = ParquetRecordBatchReaderBuilder::try_new(src)
        .map_err(|e| Error::parquet(path, e))?
        .with_batch_size(ROW_GROUP)
        .build()
        .map_err(|e| Error::parquet(path, e))?;
    reader
        .map(|b| b.map_err(|e| Error::parquet(path, e)))
        .collect()
}

/// Get a utf8 column by name, or a `Corrupt` error naming the file and column.
pub fn string_column<'a>(
    batch: &'a RecordBatch,
    name: &str,
    path: &Path,
) -> Result<&'a StringArray> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<StringArray>())
        .ok_or_else(|| Error::Corrupt {
            path: path.to_path_buf(),
            what: format!("missing utf8 column `{name}`"),
        })
}

/// Read triples written by `write_triples` (or any Parquet with the same column names and types).
pub fn read_triples<R: ChunkReader + 'static>(src: R, path: &Path) -> Result<Vec<Triple>> {
    let mut out = Vec::new();
    for batch in read_batches(src, path)? {
        let s = string_column(&batch, "subject", path)?;
        let p = string_column(&batch, "property", path)?;
        let o = string_column(&batch, "object", path)?;
        let r = string_column(&batch, "rank", path)?;
        let id = batch
            .column_by_name("statement_id")
            .and_then(|c| c.as_any().downcast_ref::<StringArray>());
        for i in 0..batch.num_rows() {
            let bad = |what: &str, v: &str| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("row {i}: bad {what} `{v}`"),
            };
            out.push(Triple {
                subject: Qid::parse(s.value(i)).ok_or_else(|| bad("subject", s.value(i)))?,
                property: Pid::parse(p.value(i)).ok_or_else(|| bad("property", p.value(i)))?,
                object: Qid::parse(o.value(i)).ok_or_else(|| bad("object", o.value(i)))?,
                rank: Rank::parse(r.value(i)).ok_or_else(|| bad("rank", r.value(i)))?,
                statement_id: id
                    .filter(|c| c.is_valid(i))
                    .map(|c| c.value(i).to_string())
                    .unwrap_or_default(),
            });
        }
    }
    Ok(out)
}

/// Read triples from a Parquet file on disk.
pub fn read_triples_file(path: &Path) -> Result<Vec<Triple>> {
    let f = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
    read_triples(f, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_round_trip_in_memory() {
        let triples = vec![
            Triple {
                subject: Qid(42),
                property: Pid(31),
                object: Qid(5),
                rank: Rank::Normal,
                statement_id: "Q42$abc".into(),
            },
            Triple {
                subject: Qid(90),
                property: Pid(17),
                object: Qid(142),
                rank: Rank::Preferred,
                statement_id: String::new(),
            },
        ];
        let bytes = write_triples(Vec::new(), &triples, Path::new("mem")).unwrap();
        let back = read_triples(bytes::Bytes::from(bytes), Path::new("mem")).unwrap();
        assert_eq!(back, triples);
    }
}
