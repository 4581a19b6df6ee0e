//! `statements_text.parquet`: each statement's text in each language, from `sword translate` or
//! `sword import-translations`, with the verdict of the text checks.

use crate::core::error::{Error, IoContext, Result};
use crate::store::tables;
use arrow_array::{ArrayRef, StringArray};
use arrow_schema::{DataType, Field, Schema};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// One translated statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatementText {
    pub custom_id: String,
    pub statement_id: String,
    pub language: String,
    pub text: String,
    /// From `sword.parquet` when it is in the run directory: the original's index (decimal string),
    /// the strategy and the truth label.
    pub original_id: Option<String>,
    pub strategy: Option<String>,
    pub label: Option<bool>,
    /// The check's verdict ([`check::check`]); `None` = not checked.
    pub text_ok: Option<bool>,
    /// Why `text_ok` is false (`empty`, `echo`, `too_long`, `wrong_script`, `wrong_language`).
    pub text_reason: Option<String>,
}

/// Schema of `statements_text.parquet`.
pub fn text_schema() -> Arc<Schema> {
    Arc::new(Schema::new(vec![
        Field::new("custom_id", DataType::Utf8, false),
        Field::new("statement_id", DataType::Utf8, false),
        Field::new("language", DataType::Utf8, false),
        Field::new("text", DataType::Utf8, false),
        Field::new("original_id", DataType::Utf8, true),
        Field::new("strategy", DataType::Utf8, true),
        Field::new("label", DataType::Boolean, true),
        Field::new("text_ok", DataType::Boolean, true),
        Field::new("text_reason", DataType::Utf8, true),
    ]))
}

/// Write statements with text as Parquet (`complete == false` marks an incomplete build, see
/// [`tables::writer_props_marked`]).
pub fn write_texts<W: Write + Send>(
    w: W,
    rows: &[StatementText],
    complete: bool,
    path: &Path,
) -> Result<W> {
    tables::write_rows(w, text_schema(), rows, complete, path, |s, chunk| {
        let col = |f: &dyn Fn(&StatementText) -> &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(chunk.iter().map(f)))
        };
        s.batch(vec![
            col(&|t| &t.custom_id),
            col(&|t| &t.statement_id),
            col(&|t| &t.language),
            col(&|t| &t.text),
            Arc::new(
                chunk
                    .iter()
                    .map(|t| t.original_id.as_deref())
                    .collect::<StringArray>(),
            ),
            Arc::new(
                chunk
                    .iter()
                    .map(|t| t.strategy.as_deref())
                    .collect::<StringArray>(),
            ),
            Arc::new(
                chunk
                    .iter()
                    .map(|t| t.label)
                    .collect::<arrow_array::BooleanArray>(),
            ),
            Arc::new(
                chunk
                    .iter()
                    .map(|t| t.text_ok)
                    .collect::<arrow_array::BooleanArray>(),
            ),
            Arc::new(
                chunk
                    .iter()
                    .map(|t| t.text_reason.as_deref())
                    .collect::<StringArray>(),
            ),
        ])
    })
}

/// Read `statements_text.parquet`.
pub fn read_texts_file(path: &Path) -> Result<Vec<StatementText>> {
    let f = std::fs::File::open(path).at(path)?;
    let mut out = Vec::new();
    for b in tables::read_batches(f, path)? {
        let c = tables::string_column(&b, "custom_id", path)?;
        let s = tables::string_column(&b, "statement_id", path)?;
        let l = tables::string_column(&b, "language", path)?;
        let t = tables::string_column(&b, "text", path)?;
        let o = tables::string_column(&b, "original_id", path)?;
        let st = tables::string_column(&b, "strategy", path)?;
        let lab = b
            .column_by_name("label")
            .and_then(|c| c.as_any().downcast_ref::<arrow_array::BooleanArray>())
            .ok_or_else(|| Error::Corrupt {
                path: path.to_path_buf(),
                what: "missing bool column `label`".into(),
            })?;
        use arrow_array::Array;
        // Files written before the check existed have no text_ok / text_reason: read as unchecked.
        let ok = b
            .column_by_name("text_ok")
            .and_then(|c| c.as_any().downcast_ref::<arrow_array::BooleanArray>());
        let reason = b
            .column_by_name("text_reason")
            .and_then(|c| c.as_any().downcast_ref::<StringArray>());
        for i in 0..b.num_rows() {
            out.push(StatementText {
                custom_id: c.value(i).into(),
                statement_id: s.value(i).into(),
                language: l.value(i).into(),
                text: t.value(i).into(),
                original_id: o.is_valid(i).then(|| o.value(i).to_string()),
                strategy: st.is_valid(i).then(|| st.value(i).to_string()),
                label: lab.is_valid(i).then(|| lab.value(i)),
                text_ok: ok.filter(|c| c.is_valid(i)).map(|c| c.value(i)),
                text_reason: reason
                    .filter(|c| c.is_valid(i))
                    .map(|c| c.value(i).to_string()),
            });
        }
    }
    Ok(out)
}
