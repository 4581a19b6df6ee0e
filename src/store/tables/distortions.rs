//! `distortions.parquet`: the sampled originals and their distortions, one row each.

use crate::core::error::{Error, IoContext, Result};
use crate::core::falsity::Tier;
use crate::core::ids::{Pid, Qid};
use crate::core::records::{Distortion, Rank, Role, Strategy};
use arrow_array::{Array, ArrayRef, BooleanArray, Float32Array, StringArray, UInt32Array};
use arrow_schema::{DataType, Field, Schema};
use std::collections::HashMap;
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use crate::store::tables;

/// Version of the `distortions.parquet` layout (bump on any column change).
pub const DISTORTIONS_FORMAT_VERSION: u32 = 2;

/// Schema of `distortions.parquet` (one row per statement; see `Distortion` for the meaning of each column).
pub fn distortions_schema() -> Arc<Schema> {
    let mut md = HashMap::new();
    md.insert(
        "sword.distortions_format_version".to_string(),
        DISTORTIONS_FORMAT_VERSION.to_string(),
    );
    Arc::new(Schema::new_with_metadata(distortion_fields(), md))
}

/// The fields of a distortion, in column order: all of `distortions.parquet`, and the first columns of
/// `sword.parquet`.
pub fn distortion_fields() -> Vec<Field> {
    vec![
        Field::new("statement_id", DataType::Utf8, false),
        Field::new("original_id", DataType::UInt32, false),
        Field::new("strategy", DataType::Utf8, false),
        Field::new("label", DataType::Boolean, false),
        Field::new("subject", DataType::Utf8, false),
        Field::new("property", DataType::Utf8, false),
        Field::new("object", DataType::Utf8, false),
        Field::new("replaced_role", DataType::Utf8, true),
        Field::new("original_entity", DataType::Utf8, true),
        Field::new("replacement_entity", DataType::Utf8, true),
        Field::new("cosine", DataType::Float32, true),
        Field::new("cosine_centred", DataType::Float32, true),
        Field::new("attempts", DataType::UInt32, false),
        Field::new("original_rank", DataType::Utf8, false),
        Field::new("original_statement_id", DataType::Utf8, false),
        Field::new("falsity", DataType::Utf8, true),
    ]
}

/// The columns that `distortions.parquet` and `sword.parquet` share, in schema order (statement id through
/// original statement id), for one chunk of rows.
pub fn distortion_columns(chunk: &[Distortion]) -> Vec<ArrayRef> {
    let strs = |f: &dyn Fn(&Distortion) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(chunk.iter().map(f)))
    };
    let opt = |f: &dyn Fn(&Distortion) -> Option<String>| -> ArrayRef {
        Arc::new(chunk.iter().map(f).collect::<StringArray>())
    };
    vec![
        strs(&|d| d.statement_id.clone()),
        Arc::new(UInt32Array::from_iter_values(
            chunk.iter().map(|d| d.original_id),
        )),
        strs(&|d| d.strategy.as_str().to_string()),
        Arc::new(BooleanArray::from(
            chunk
                .iter()
                .map(|d| d.strategy == Strategy::ORG)
                .collect::<Vec<_>>(),
        )),
        strs(&|d| d.subject.to_string()),
        strs(&|d| d.property.to_string()),
        strs(&|d| d.object.to_string()),
        opt(&|d| d.replaced_role.map(|r| r.as_str().to_string())),
        opt(&|d| d.original_entity.map(|q| q.to_string())),
        opt(&|d| d.replacement_entity.map(|q| q.to_string())),
        Arc::new(chunk.iter().map(|d| d.cosine).collect::<Float32Array>()),
        Arc::new(
            chunk
                .iter()
                .map(|d| d.cosine_centred)
                .collect::<Float32Array>(),
        ),
        Arc::new(UInt32Array::from_iter_values(
            chunk.iter().map(|d| d.attempts),
        )),
        strs(&|d| d.original_rank.as_str().to_string()),
        strs(&|d| d.original_statement_id.clone()),
        opt(&|d| d.falsity.map(|t| t.as_str().to_string())),
    ]
}

/// Write distortion rows as Parquet (`complete == false` marks an incomplete build, see
/// [`tables::writer_props_marked`]).
pub fn write_distortions<W: Write + Send>(
    w: W,
    rows: &[Distortion],
    complete: bool,
    path: &Path,
) -> Result<W> {
    tables::write_rows(w, distortions_schema(), rows, complete, path, |s, chunk| {
        s.batch(distortion_columns(chunk))
    })
}

/// Read `distortions.parquet`.
pub fn read_distortions<R: parquet::file::reader::ChunkReader + 'static>(
    src: R,
    path: &Path,
) -> Result<Vec<Distortion>> {
    let mut out = Vec::new();
    let mut row = 0usize;
    for batch in tables::read_batches(src, path)? {
        let sid = tables::string_column(&batch, "statement_id", path)?;
        let oid = tables::typed_column::<UInt32Array>(&batch, "original_id", path)?;
        let strat = tables::string_column(&batch, "strategy", path)?;
        let s = tables::string_column(&batch, "subject", path)?;
        let p = tables::string_column(&batch, "property", path)?;
        let o = tables::string_column(&batch, "object", path)?;
        let role = tables::string_column(&batch, "replaced_role", path)?;
        let oe = tables::string_column(&batch, "original_entity", path)?;
        let re = tables::string_column(&batch, "replacement_entity", path)?;
        let cos = tables::typed_column::<Float32Array>(&batch, "cosine", path)?;
        let cosc = tables::typed_column::<Float32Array>(&batch, "cosine_centred", path)?;
        let att = tables::typed_column::<UInt32Array>(&batch, "attempts", path)?;
        let rank = tables::string_column(&batch, "original_rank", path)?;
        let osid = tables::string_column(&batch, "original_statement_id", path)?;
        // Absent from files of format version 1 (before the falsity tier).
        let falsity = match batch.column_by_name("falsity") {
            Some(_) => Some(tables::string_column(&batch, "falsity", path)?),
            None => None,
        };
        for i in 0..batch.num_rows() {
            let bad = |what: &str| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("row {}: bad {what}", row + i),
            };
            let opt_q = |a: &StringArray, what: &str| -> Result<Option<Qid>> {
                if a.is_null(i) {
                    Ok(None)
                } else {
                    Qid::parse(a.value(i)).map(Some).ok_or_else(|| bad(what))
                }
            };
            let f = |a: &Float32Array| (!a.is_null(i)).then(|| a.value(i));
            out.push(Distortion {
                statement_id: sid.value(i).to_string(),
                original_id: oid.value(i),
                strategy: Strategy::parse(strat.value(i)).ok_or_else(|| bad("strategy"))?,
                subject: Qid::parse(s.value(i)).ok_or_else(|| bad("subject"))?,
                property: Pid::parse(p.value(i)).ok_or_else(|| bad("property"))?,
                object: Qid::parse(o.value(i)).ok_or_else(|| bad("object"))?,
                replaced_role: if role.is_null(i) {
                    None
                } else {
                    Some(Role::parse(role.value(i)).ok_or_else(|| bad("replaced_role"))?)
                },
                original_entity: opt_q(oe, "original_entity")?,
                replacement_entity: opt_q(re, "replacement_entity")?,
                cosine: f(cos),
                cosine_centred: f(cosc),
                attempts: att.value(i),
                original_rank: Rank::parse(rank.value(i)).ok_or_else(|| bad("original_rank"))?,
                original_statement_id: osid.value(i).to_string(),
                falsity: match falsity {
                    Some(a) if !a.is_null(i) => {
                        Some(Tier::parse(a.value(i)).ok_or_else(|| bad("falsity"))?)
                    }
                    _ => None,
                },
            });
        }
        row += batch.num_rows();
    }
    Ok(out)
}

/// Read `distortions.parquet` from disk.
pub fn read_distortions_file(path: &Path) -> Result<Vec<Distortion>> {
    let f = std::fs::File::open(path).at(path)?;
    read_distortions(f, path)
}
