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

use crate::core::error::{IoContext, Result};
use crate::kb::prompt::{render, split_custom_id, DEFAULT_TEMPLATE};
use crate::stages::contract::Context;
use crate::store::layout::{SWORD, TEXTS_IMPORTED, TRANSLATION_REQUESTS};
use crate::store::tables;
pub use crate::store::tables::sword::{read_sources, statement_meta, KeyColumns, Source, Sources};
pub use crate::store::tables::texts::{read_texts_file, text_schema, write_texts, StatementText};
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::BufRead;
use std::path::{Path, PathBuf};

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

/// Flags of `sword import-translations`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ImportArgs {
    /// OpenAI Batch output JSONL.
    #[arg(long, required = true)]
    pub batch_output: PathBuf,
}

/// The work: parse the batch output, join it with `sword.parquet` (and check every text) and with the
/// requests when they are there, write the texts.
pub(super) fn run(cx: &mut Context, batch_output: &Path) -> Result<()> {
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
    use crate::core::error::Error;

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
