//! `sword eval run` and `eval batch-read`: the suite's requests answered (through [`crate::llm`]) and written as
//! samples: `DIR/samples.jsonl` (each request's id, suite, meta, prompt messages, raw answer, usage and parsed
//! outcome), `DIR/samples.parquet`, `DIR/results.json` (counts and token totals).

use crate::core::error::Result;
use crate::llm::batch::read_batch_output;
use crate::llm::client::RunConfig;
use crate::llm::request::Request;
use crate::llm::resume::{add_tokens, ask_all, Answered, LogLine, RunSummary};
use crate::stages::folder::{execute_folder, Folder, FolderCommand};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;

/// What `sword eval run` and `eval batch-read` write into their folder (besides the `answers.jsonl` resume
/// log, an append-only journal of the runner), the manifest `eval.manifest.json` last.
pub const COMMAND: FolderCommand = FolderCommand {
    name: "eval",
    writes: &["samples.jsonl", "samples.parquet", "results.json"],
};

/// Run every request (read from `requests_file`) not already answered in `dir/answers.jsonl`, then write
/// `samples.jsonl`, `samples.parquet` and `results.json`: on the folder contract ([`execute_folder`]: the
/// folder locked for the whole run, the requests file hashed, the manifest last).
pub fn run(
    dir: &Path,
    requests_file: &Path,
    requests: &[Request],
    cfg: &RunConfig,
) -> Result<RunSummary> {
    // Provenance: the settings (the key's variable name only, never its value), counts and output hashes.
    let config = serde_json::to_value(cfg.redacted()).unwrap_or_default();
    let (_, summary) = execute_folder(&COMMAND, dir, config, |f| {
        f.input(requests_file)?;
        let Answered {
            keys,
            answers,
            mut summary,
            ..
        } = ask_all(
            &f.dir().join("answers.jsonl"),
            requests,
            &[],
            cfg,
            "eval run",
        )?;
        write_outputs(f, requests, &keys, &answers, Some(&cfg.model), &mut summary)?;
        count_summary(f, &summary);
        Ok(summary)
    })?;
    Ok(summary)
}

/// The summary's numbers as the manifest's counts.
fn count_summary(f: &mut Folder, summary: &RunSummary) {
    if let Value::Object(counts) = serde_json::to_value(summary).unwrap_or_default() {
        for (k, v) in counts {
            f.count(&k, v.as_u64().unwrap_or(0));
        }
    }
}

/// Write `samples.jsonl` (every request, answered or not) and `results.json` from the answered lines.
fn write_outputs(
    f: &Folder,
    requests: &[Request],
    keys: &[String],
    answers: &HashMap<String, LogLine>,
    model: Option<&str>,
    summary: &mut RunSummary,
) -> Result<()> {
    let mut samples = String::new();
    add_tokens(summary, keys, answers);
    for (r, k) in requests.iter().zip(keys) {
        let a = answers.get(k);
        let usage = a.and_then(|l| l.usage.clone());
        let mut v = json!({
            "id": r.id, "suite": r.suite, "meta": r.meta, "messages": r.messages,
            "answer": a.and_then(|l| l.answer.clone()), "usage": usage,
        });
        if let (Some(m), Some(o)) = (model, v.as_object_mut()) {
            o.insert("model".into(), json!(m));
        }
        samples.push_str(&v.to_string());
        samples.push('\n');
    }
    f.write("samples.jsonl", |w| w.write_all(samples.as_bytes()))?;
    let rows: Vec<SampleRow> = requests
        .iter()
        .zip(keys)
        .map(|(r, k)| {
            let a = answers.get(k);
            let answer = a.and_then(|l| l.answer.clone());
            let usage = a.and_then(|l| l.usage.clone()).unwrap_or(Value::Null);
            let tok = |n: &str| usage.get(n).and_then(Value::as_u64);
            let prompt = r
                .messages
                .iter()
                .map(|m| format!("[{}] {}", m.role, m.content))
                .collect::<Vec<_>>()
                .join("\n");
            SampleRow {
                parsed: parsed_outcome(r, answer.as_deref()),
                id: r.id.clone(),
                suite: r.suite.clone(),
                prompt,
                answer,
                prompt_tokens: tok("prompt_tokens"),
                completion_tokens: tok("completion_tokens"),
            }
        })
        .collect();
    let pq = f.dir().join("samples.parquet");
    let bytes = samples_parquet(&rows, &pq)?;
    f.write("samples.parquet", |w| w.write_all(&bytes))?;
    let mut s = serde_json::to_string_pretty(summary).unwrap_or_default();
    s.push('\n');
    f.write("results.json", |w| w.write_all(s.as_bytes()))?;
    Ok(())
}

/// One row of `samples.parquet`.
#[derive(Clone, Debug, PartialEq)]
pub struct SampleRow {
    pub id: String,
    pub suite: String,
    /// The messages, one `[role] content` per line.
    pub prompt: String,
    /// Raw answer (null when none was obtained).
    pub answer: Option<String>,
    /// Parsed outcome: SWORD true/false/unparsed; sycophancy yes/no/uncertain/unparsed; AdversaRiskQA
    /// `valid` or the invalid class (empty, echo, template_leak, fragment); `none` without an answer.
    pub parsed: String,
    pub prompt_tokens: Option<u64>,
    pub completion_tokens: Option<u64>,
}

/// The parsed outcome of an answer to a request, by suite.
pub fn parsed_outcome(r: &Request, answer: Option<&str>) -> String {
    let Some(a) = answer else {
        return "none".into();
    };
    match r.suite.as_str() {
        "sword" => crate::eval::parse::parse_true_false(a).as_str().into(),
        "sycophancy" => crate::eval::parse::parse_yes_no(a).as_str().into(),
        "adversariskqa" => {
            let prompt = r.meta.get("prompt").and_then(Value::as_str).unwrap_or("");
            match crate::eval::parse::detect_invalid(a, prompt) {
                None => "valid".into(),
                Some(k) => serde_json::to_value(k)
                    .ok()
                    .and_then(|v| v.as_str().map(str::to_string))
                    .unwrap_or_default(),
            }
        }
        _ => "raw".into(),
    }
}

/// `samples.parquet` bytes: id, suite, prompt, answer, parsed (utf8), prompt_tokens, completion_tokens
/// (uint64, null when unknown).
pub fn samples_parquet(rows: &[SampleRow], path: &Path) -> Result<Vec<u8>> {
    use arrow_array::{ArrayRef, StringArray, UInt64Array};
    use arrow_schema::{DataType, Field, Schema};
    use std::sync::Arc;
    let schema = Arc::new(Schema::new(vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("suite", DataType::Utf8, false),
        Field::new("prompt", DataType::Utf8, false),
        Field::new("answer", DataType::Utf8, true),
        Field::new("parsed", DataType::Utf8, false),
        Field::new("prompt_tokens", DataType::UInt64, true),
        Field::new("completion_tokens", DataType::UInt64, true),
    ]));
    let s = |f: &dyn Fn(&SampleRow) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(rows.iter().map(f)))
    };
    crate::eval::output::parquet_bytes(
        schema,
        vec![
            s(&|r| r.id.clone()),
            s(&|r| r.suite.clone()),
            s(&|r| r.prompt.clone()),
            Arc::new(StringArray::from(
                rows.iter().map(|r| r.answer.clone()).collect::<Vec<_>>(),
            )),
            s(&|r| r.parsed.clone()),
            Arc::new(UInt64Array::from(
                rows.iter().map(|r| r.prompt_tokens).collect::<Vec<_>>(),
            )),
            Arc::new(UInt64Array::from(
                rows.iter().map(|r| r.completion_tokens).collect::<Vec<_>>(),
            )),
        ],
        path,
    )
}

/// Offline mode, read back: write `samples.jsonl`, `samples.parquet` and `results.json` in `dir` from Batch
/// output, on the folder contract as [`run`] (the requests and the Batch output hashed).
pub fn import_batch(
    dir: &Path,
    requests_file: &Path,
    requests: &[Request],
    batch_output: &Path,
    model: Option<&str>,
) -> Result<RunSummary> {
    let config =
        serde_json::json!({ "batch_output": batch_output.display().to_string(), "model": model });
    let (_, summary) = execute_folder(&COMMAND, dir, config, |f| {
        f.input(requests_file)?;
        f.input(batch_output)?;
        let summary = import_batch_into(f, requests, batch_output, model)?;
        count_summary(f, &summary);
        Ok(summary)
    })?;
    Ok(summary)
}

fn import_batch_into(
    f: &Folder,
    requests: &[Request],
    batch_output: &Path,
    model: Option<&str>,
) -> Result<RunSummary> {
    let (answers, failed) = read_batch_output(batch_output)?;
    let keys: Vec<String> = requests.iter().map(|r| r.id.clone()).collect();
    let lines: HashMap<String, LogLine> = answers
        .into_iter()
        .map(|(id, (a, u))| {
            (
                id.clone(),
                LogLine {
                    key: id.clone(),
                    id,
                    status: "ok".into(),
                    answer: Some(a),
                    usage: u,
                    error: None,
                    attempts: 1,
                },
            )
        })
        .collect();
    let mut summary = RunSummary {
        requests: requests.len(),
        answered: keys.iter().filter(|k| lines.contains_key(*k)).count(),
        errors: failed,
        ..Default::default()
    };
    summary.pending = summary.requests - summary.answered;
    write_outputs(f, requests, &keys, &lines, model, &mut summary)?;
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn samples_parquet_round_trip() {
        use arrow_array::{Array, StringArray, UInt64Array};
        let row = |id: &str, answer: Option<&str>, parsed: &str, pt: Option<u64>| SampleRow {
            id: id.into(),
            suite: "sword".into(),
            prompt: "[user] x".into(),
            answer: answer.map(str::to_string),
            parsed: parsed.into(),
            prompt_tokens: pt,
            completion_tokens: pt,
        };
        let rows = vec![
            row("a", Some("False"), "false", Some(3)),
            row("b", None, "none", None),
        ];
        let p = Path::new("mem");
        let bytes = samples_parquet(&rows, p).unwrap();
        let batches = crate::store::tables::read_batches(bytes::Bytes::from(bytes), p).unwrap();
        let b = &batches[0];
        let ans = b.column_by_name("answer").unwrap();
        let ans = ans.as_any().downcast_ref::<StringArray>().unwrap();
        assert_eq!(ans.value(0), "False");
        assert!(ans.is_null(1));
        let parsed = crate::store::tables::string_column(b, "parsed", p).unwrap();
        assert_eq!((parsed.value(0), parsed.value(1)), ("false", "none"));
        let pt = b.column_by_name("prompt_tokens").unwrap();
        let pt = pt.as_any().downcast_ref::<UInt64Array>().unwrap();
        assert_eq!(pt.value(0), 3);
        assert!(pt.is_null(1));
    }
}
