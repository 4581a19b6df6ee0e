//! The offline OpenAI Batch round trip: requests written as Batch input JSONL, Batch output read back.

use super::request::Request;
use crate::core::error::{IoContext, Result};
use serde_json::{json, Value};
use std::collections::HashMap;
use std::path::Path;

/// Offline mode: the requests as OpenAI Batch input lines (`custom_id` = request id).
pub fn batch_lines(
    requests: &[Request],
    cfg_model: &str,
    temperature: f64,
    max_tokens: u32,
) -> String {
    let mut out = String::new();
    for r in requests {
        let v = json!({
            "custom_id": r.id, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": cfg_model, "messages": r.messages, "temperature": temperature, "max_tokens": max_tokens},
        });
        out.push_str(&v.to_string());
        out.push('\n');
    }
    out
}

/// Batch answers: request id → (answer, usage).
pub type BatchAnswers = HashMap<String, (String, Option<Value>)>;

/// Read OpenAI Batch output (`custom_id`, `response.status_code`, `response.body`) into id → (answer, usage);
/// failed or empty entries are left out and counted. Returns (answers, failed count).
pub fn read_batch_output(path: &Path) -> Result<(BatchAnswers, usize)> {
    let f = std::fs::File::open(path).at(path)?;
    let mut out = HashMap::new();
    let mut failed = 0;
    for (_, v) in super::jsonl::read_values(std::io::BufReader::new(f), path)? {
        let id = v["custom_id"].as_str().unwrap_or_default().to_string();
        let code = v["response"]["status_code"].as_u64().unwrap_or(0);
        let body = &v["response"]["body"];
        let answer = body
            .pointer("/choices/0/message/content")
            .and_then(Value::as_str);
        match answer {
            Some(a) if code == 200 && !a.trim().is_empty() && !id.is_empty() => {
                out.insert(id, (a.to_string(), body.get("usage").cloned()));
            }
            _ => failed += 1,
        }
    }
    Ok((out, failed))
}
