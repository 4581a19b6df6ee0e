//! `sword import-translations`: read OpenAI Batch output (one JSON object per line:
//! `{"custom_id", "response": {"status_code", "body": {"choices": [{"message": {"content"}}]}}, "error"}`)
//! back into `statements_text.parquet` (custom_id, statement_id, language, text, and — when `sword.parquet`
//! is in the run directory — original_id, strategy, label, which `sword eval` reads), reporting the requests that
//! failed (non-200 status, an `error`, or no content) and those missing from the output (when
//! `translation_requests.jsonl` is in the run directory). A line that is not such an object is an error
//! naming the file, line and byte offset.
//!
//! `sword translate` ([`endpoint`]) writes the same file from an OpenAI-compatible endpoint instead, through
//! the evaluation runner. Both mark every text with `text_ok` and `text_reason` ([`check`]); the import does
//! so when `sword.parquet` (which has the labels) is in the run directory, and leaves them null otherwise.

use crate::core::error::{Error, IoContext, Result};
use crate::stages::contract::{Context, Input, NoSettings, Stage};
use crate::stages::export::{render, split_custom_id, DEFAULT_TEMPLATE};
use crate::store::layout::{self, Artifact, SWORD, TEXTS_IMPORTED, TRANSLATION_REQUESTS};
use crate::store::tables;
use crate::store::Manifest;
use arrow_array::{ArrayRef, RecordBatch, StringArray};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How many ids of each kind (failed, missing, duplicate) the manifest lists.
pub const EXAMPLES: usize = 10;

#[derive(Deserialize)]
struct OutLine {
    custom_id: String,
    #[serde(default)]
    response: Option<Response>,
    #[serde(default)]
    error: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Response {
    #[serde(default)]
    status_code: Option<u16>,
    #[serde(default)]
    body: Option<serde_json::Value>,
}

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

/// The key columns of a `sword.parquet` batch: statement_id, strategy, original_id and label.
pub(crate) struct KeyColumns<'a> {
    pub statement_id: &'a StringArray,
    pub strategy: &'a StringArray,
    pub original_id: &'a arrow_array::UInt32Array,
    pub label: &'a arrow_array::BooleanArray,
}

impl<'a> KeyColumns<'a> {
    /// The key columns of `b`, or `Corrupt` naming `path` when one is missing or of the wrong type.
    pub(crate) fn of(b: &'a RecordBatch, path: &Path) -> Result<KeyColumns<'a>> {
        let oid = b
            .column_by_name("original_id")
            .and_then(|c| c.as_any().downcast_ref::<arrow_array::UInt32Array>());
        let lab = b
            .column_by_name("label")
            .and_then(|c| c.as_any().downcast_ref::<arrow_array::BooleanArray>());
        let (Some(original_id), Some(label)) = (oid, lab) else {
            return Err(Error::Corrupt {
                path: path.to_path_buf(),
                what: "missing original_id (uint32) or label (bool)".into(),
            });
        };
        Ok(KeyColumns {
            statement_id: tables::string_column(b, "statement_id", path)?,
            strategy: tables::string_column(b, "strategy", path)?,
            original_id,
            label,
        })
    }

    /// Is any key of row `i` null?
    pub(crate) fn has_null(&self, i: usize) -> bool {
        use arrow_array::Array;
        self.statement_id.is_null(i)
            || self.strategy.is_null(i)
            || self.original_id.is_null(i)
            || self.label.is_null(i)
    }
}

/// statement_id → (original_id, strategy, label) from a `sword.parquet`.
pub fn statement_meta(path: &Path) -> Result<HashMap<String, (String, String, bool)>> {
    let f = std::fs::File::open(path).at(path)?;
    let mut out = HashMap::new();
    for b in tables::read_batches(f, path)? {
        let k = KeyColumns::of(&b, path)?;
        for i in 0..b.num_rows() {
            if k.has_null(i) {
                continue;
            }
            out.insert(
                k.statement_id.value(i).to_string(),
                (
                    k.original_id.value(i).to_string(),
                    k.strategy.value(i).to_string(),
                    k.label.value(i),
                ),
            );
        }
    }
    Ok(out)
}

/// What the batch output held.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Imported {
    /// Successful translations, sorted by custom_id.
    pub texts: Vec<StatementText>,
    /// Failed custom_ids with the reason, in input order.
    pub failed: Vec<(String, String)>,
    /// custom_ids seen more than once (the first occurrence is kept).
    pub duplicates: Vec<String>,
    /// Lines read (non-blank).
    pub lines: u64,
}

/// Parse Batch output JSONL. `path` names the source in errors.
pub fn parse_batch_output<R: BufRead>(r: R, path: &Path) -> Result<Imported> {
    let mut out = Imported::default();
    let mut seen = HashSet::new();
    crate::llm::jsonl::for_each_line(r, path, |pos, buf| {
        out.lines += 1;
        let rec: OutLine = serde_json::from_str(buf)
            .map_err(|e| pos.err(path, format!("not a batch output record: {e}")))?;
        let Some((sid, lang)) = split_custom_id(&rec.custom_id) else {
            return Err(pos.err(
                path,
                format!(
                    "custom_id `{}` is not `<statement_id>:<language>`",
                    rec.custom_id
                ),
            ));
        };
        if !seen.insert(rec.custom_id.clone()) {
            out.duplicates.push(rec.custom_id);
            return Ok(());
        }
        let content = rec
            .response
            .as_ref()
            .and_then(|r| r.body.as_ref())
            .and_then(|b| b.pointer("/choices/0/message/content"))
            .and_then(|c| c.as_str());
        let status = rec.response.as_ref().and_then(|r| r.status_code);
        let reason = match (&rec.error, status, content) {
            (Some(e), _, _) if !e.is_null() => Some(format!("error: {e}")),
            (_, Some(s), _) if s != 200 => Some(format!("status {s}")),
            (_, None, _) => Some("no response".to_string()),
            (_, _, None) => Some("no message content".to_string()),
            (_, _, Some(c)) if c.trim().is_empty() => Some("empty message content".to_string()),
            _ => None,
        };
        match reason {
            Some(r) => out.failed.push((rec.custom_id, r)),
            None => out.texts.push(StatementText {
                statement_id: sid.to_string(),
                language: lang.to_string(),
                text: content.unwrap_or_default().trim().to_string(),
                custom_id: rec.custom_id,
                original_id: None,
                strategy: None,
                label: None,
                text_ok: None,
                text_reason: None,
            }),
        }
        Ok(())
    })?;
    out.texts.sort_by(|a, b| a.custom_id.cmp(&b.custom_id));
    Ok(out)
}

/// custom_ids of a `translation_requests.jsonl`, in file order.
pub fn request_ids<R: BufRead>(r: R, path: &Path) -> Result<Vec<String>> {
    let mut ids = Vec::new();
    for (pos, v) in crate::llm::jsonl::read_values(r, path)? {
        let id = v
            .get("custom_id")
            .and_then(|c| c.as_str())
            .ok_or_else(|| pos.err(path, "no custom_id"))?;
        ids.push(id.to_string());
    }
    Ok(ids)
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
    let schema = text_schema();
    let mut writer = ArrowWriter::try_new(
        w,
        schema.clone(),
        Some(tables::writer_props_marked(complete)),
    )
    .map_err(|e| Error::parquet(path, e))?;
    for chunk in rows.chunks(tables::ROW_GROUP) {
        let col = |f: &dyn Fn(&StatementText) -> &str| -> ArrayRef {
            Arc::new(StringArray::from_iter_values(chunk.iter().map(f)))
        };
        let batch = RecordBatch::try_new(
            schema.clone(),
            vec![
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
            ],
        )
        .map_err(|e| Error::parquet(path, e))?;
        writer.write(&batch).map_err(|e| Error::parquet(path, e))?;
    }
    writer.into_inner().map_err(|e| Error::parquet(path, e))
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

/// One statement of `sword.parquet` with its labels.
#[derive(Clone, Debug, PartialEq)]
pub struct Source {
    pub statement_id: String,
    pub original_id: u32,
    pub strategy: String,
    pub label: bool,
    /// Per language (in [`Sources::languages`] order): subject, property, object labels.
    pub labels: Vec<[Option<String>; 3]>,
}

impl Source {
    /// The three labels in `lang`, when all exist.
    pub fn labels_in<'a>(&'a self, languages: &[String], lang: &str) -> Option<[&'a str; 3]> {
        let l = languages.iter().position(|x| x == lang)?;
        let [s, p, o] = self.labels.get(l)?;
        Some([s.as_deref()?, p.as_deref()?, o.as_deref()?])
    }
}

/// The statements of a `sword.parquet`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Sources {
    /// Languages with label columns (`subject_label_<lang>`), in column order.
    pub languages: Vec<String>,
    pub rows: Vec<Source>,
}

/// Read the statements and their labels from `sword.parquet`.
pub fn read_sources(path: &Path) -> Result<Sources> {
    use arrow_array::Array;
    let f = std::fs::File::open(path).at(path)?;
    let mut out = Sources::default();
    for b in tables::read_batches(f, path)? {
        if out.languages.is_empty() {
            out.languages = b
                .schema()
                .fields()
                .iter()
                .filter(|f| f.data_type() == &arrow_schema::DataType::Utf8)
                .filter_map(|f| f.name().strip_prefix("subject_label_").map(str::to_string))
                .collect();
        }
        let k = KeyColumns::of(&b, path)?;
        let mut cols = Vec::new();
        for l in &out.languages {
            let c = |r: &str| tables::string_column(&b, &format!("{r}_label_{l}"), path);
            cols.push([c("subject")?, c("property")?, c("object")?]);
        }
        for i in 0..b.num_rows() {
            if k.has_null(i) {
                return Err(Error::Corrupt {
                    path: path.to_path_buf(),
                    what: format!("row {i}: null statement_id, original_id, strategy or label"),
                });
            }
            let get = |c: &arrow_array::StringArray| c.is_valid(i).then(|| c.value(i).to_string());
            out.rows.push(Source {
                statement_id: k.statement_id.value(i).to_string(),
                original_id: k.original_id.value(i),
                strategy: k.strategy.value(i).to_string(),
                label: k.label.value(i),
                labels: cols
                    .iter()
                    .map(|[s, p, o]| [get(s), get(p), get(o)])
                    .collect(),
            });
        }
    }
    Ok(out)
}

/// Flags of `sword import-translations`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ImportArgs {
    /// OpenAI Batch output JSONL.
    #[arg(long, required = true)]
    pub batch_output: PathBuf,
}

/// The import-translations stage: OpenAI Batch output → `statements_text.parquet` (checked against
/// `sword.parquet` and `translation_requests.jsonl` when they are in the run folder).
#[derive(Clone, Copy, Debug, Default)]
pub struct ImportStage;

impl Stage for ImportStage {
    const NAME: &'static str = layout::IMPORT_TRANSLATIONS;
    const CONFIG_FILE: bool = false;
    const FORCE: bool = false;
    type Settings = NoSettings;
    type Args = ImportArgs;
    type Outcome = ();

    fn inputs(&self, _: &NoSettings, args: &ImportArgs) -> Vec<Input> {
        vec![
            Input::File(args.batch_output.clone()),
            Input::HashedIfPresent(SWORD),
            Input::HashedIfPresent(TRANSLATION_REQUESTS),
        ]
    }

    fn outputs(&self, _: &NoSettings, _: &ImportArgs) -> Vec<Artifact> {
        vec![TEXTS_IMPORTED]
    }

    fn identity(&self, _: &NoSettings, args: &ImportArgs) -> serde_json::Value {
        serde_json::json!({ "batch_output": args.batch_output.to_string_lossy() })
    }

    fn run(&self, cx: &mut Context, _: &NoSettings, args: &ImportArgs) -> Result<()> {
        run(cx, &args.batch_output)
    }

    fn summary(&self, _: &Path, m: &Manifest) -> String {
        format!(
            "import-translations: {} translated, {} failed, {} missing",
            m.counts.get("translated").copied().unwrap_or(0),
            m.rejects.get("failed").copied().unwrap_or(0),
            m.rejects.get("missing").copied().unwrap_or(0)
        )
    }
}

/// The work: parse the batch output, join it with `sword.parquet` (and check every text) and with the
/// requests when they are there, write the texts.
fn run(cx: &mut Context, batch_output: &Path) -> Result<()> {
    let f = std::fs::File::open(batch_output).at(batch_output)?;
    let mut imported = parse_batch_output(std::io::BufReader::new(f), batch_output)?;
    let sword_path = cx.path(&SWORD);
    let req_path = cx.path(&TRANSLATION_REQUESTS);
    let mut unknown_statement = 0u64;
    let m = cx.manifest();
    if sword_path.exists() {
        let meta = statement_meta(&sword_path)?;
        let sources = read_sources(&sword_path)?;
        let by_id: HashMap<&str, &Source> = sources
            .rows
            .iter()
            .map(|r| (r.statement_id.as_str(), r))
            .collect();
        for t in &mut imported.texts {
            match meta.get(&t.statement_id) {
                Some((o, s, l)) => {
                    t.original_id = Some(o.clone());
                    t.strategy = Some(s.clone());
                    t.label = Some(*l);
                }
                None => unknown_statement += 1,
            }
            let labels = by_id
                .get(t.statement_id.as_str())
                .and_then(|r| r.labels_in(&sources.languages, &t.language));
            if let Some(labels) = labels {
                let prompt = render(DEFAULT_TEMPLATE, &t.language, labels);
                let c = super::check::check(&t.language, &t.text, &prompt, labels);
                t.text = c.text.clone();
                t.text_ok = Some(c.ok());
                t.text_reason = c.reason.map(|r| r.as_str().to_string());
            }
        }
        let bad = imported
            .texts
            .iter()
            .filter(|t| t.text_ok == Some(false))
            .count();
        m.counts.insert(
            "text_ok".into(),
            imported
                .texts
                .iter()
                .filter(|t| t.text_ok == Some(true))
                .count() as u64,
        );
        m.rejects.insert("text_not_ok".into(), bad as u64);
        m.rejects
            .insert("unknown_statement_id".into(), unknown_statement);
    }
    let mut missing: Vec<String> = Vec::new();
    let mut unexpected: Vec<String> = Vec::new();
    if req_path.exists() {
        let f = std::fs::File::open(&req_path).at(&req_path)?;
        let ids = request_ids(std::io::BufReader::new(f), &req_path)?;
        let answered: HashSet<&str> = imported
            .texts
            .iter()
            .map(|t| t.custom_id.as_str())
            .chain(imported.failed.iter().map(|f| f.0.as_str()))
            .collect();
        missing = ids
            .iter()
            .filter(|i| !answered.contains(i.as_str()))
            .cloned()
            .collect();
        let requested: HashSet<&str> = ids.iter().map(String::as_str).collect();
        unexpected = answered
            .iter()
            .filter(|i| !requested.contains(*i))
            .map(|s| s.to_string())
            .collect();
        unexpected.sort();
        m.counts.insert("requests".into(), ids.len() as u64);
    }
    let dest = cx.path(&TEXTS_IMPORTED);
    let mut file = cx.create(&TEXTS_IMPORTED)?;
    // The statements of an incomplete build (sword.parquet says `sword.complete = false`) stay marked.
    let complete = !sword_path.exists() || tables::file_is_complete(&sword_path)?;
    write_texts(&mut file, &imported.texts, complete, &dest)?;
    file.commit()?;
    let m = cx.manifest();
    m.counts.insert("lines".into(), imported.lines);
    m.counts
        .insert("translated".into(), imported.texts.len() as u64);
    m.rejects
        .insert("failed".into(), imported.failed.len() as u64);
    m.rejects.insert("missing".into(), missing.len() as u64);
    m.rejects
        .insert("duplicate".into(), imported.duplicates.len() as u64);
    m.rejects
        .insert("not_requested".into(), unexpected.len() as u64);
    let mut failed_by_reason: BTreeMap<String, u64> = BTreeMap::new();
    for (_, r) in &imported.failed {
        let key = r.split(':').next().unwrap_or(r).to_string();
        *failed_by_reason.entry(key).or_default() += 1;
    }
    m.extra = serde_json::json!({
        "failed_examples": imported.failed.iter().take(EXAMPLES).map(|(id, r)| serde_json::json!({"custom_id": id, "reason": r})).collect::<Vec<_>>(),
        "failed_by_reason": failed_by_reason,
        "missing_examples": missing.iter().take(EXAMPLES).collect::<Vec<_>>(),
        "duplicate_examples": imported.duplicates.iter().take(EXAMPLES).collect::<Vec<_>>(),
        "not_requested_examples": unexpected.iter().take(EXAMPLES).collect::<Vec<_>>(),
    });
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_success_failure_and_names_bad_lines() {
        let text = concat!(
            r#"{"custom_id":"000001-SS:fr","response":{"status_code":200,"body":{"choices":[{"message":{"content":" Paris est la capitale. "}}]}},"error":null}"#,
            "\n",
            r#"{"custom_id":"000001-SS:en","response":{"status_code":500,"body":{}},"error":null}"#,
            "\n\n",
            r#"{"custom_id":"000001-SS:de","response":null,"error":{"code":"x","message":"y"}}"#,
            "\n",
            r#"{"custom_id":"000001-SS:fr","response":null,"error":null}"#,
            "\n"
        );
        let got = parse_batch_output(text.as_bytes(), Path::new("b.jsonl")).unwrap();
        assert_eq!(got.lines, 4);
        assert_eq!(got.texts.len(), 1);
        assert_eq!(got.texts[0].text, "Paris est la capitale.");
        assert_eq!(got.texts[0].statement_id, "000001-SS");
        assert_eq!(got.texts[0].language, "fr");
        assert_eq!(got.failed.len(), 2);
        assert_eq!(got.failed[0].1, "status 500");
        assert_eq!(got.duplicates, vec!["000001-SS:fr".to_string()]);
        let bad = "{\"custom_id\":\"a:en\",\"error\":null}\n{not json\n";
        match parse_batch_output(bad.as_bytes(), Path::new("b.jsonl")) {
            Err(Error::Json { line, offset, .. }) => assert_eq!((line, offset), (2, 34)),
            other => panic!("{other:?}"),
        }
    }
}
