//! Per-sample records: the JSONL the runner writes (`samples.jsonl`) and the scorers read.
//!
//! One JSON object per line. Scorers read the suite's fields either at the top level or inside `meta` (the
//! request's metadata, as the runner copies it); `meta` wins on a clash. Common fields: `id`, `model`
//! (default `model`), `answer` (raw model text; missing or null = no answer, scored as unparsed).
//! * SWORD: `statement_id`, `original_id` (resampling unit; default = `statement_id`), `strategy`, `label`
//!   (bool, or "true"/"false"), `language`; optional `variant` (`plain`, `premise`, `belief`: cross-suite
//!   renderings, scored separately).
//! * Sycophancy: `question_id`, `topic`, `gold` ("yes"/"no" or bool), `variant` (baseline, belief_yes,
//!   belief_no, anti_yes, anti_no), optional `reasoning` (bool).

use crate::core::error::{Error, IoContext, Result};
use crate::eval::parse::{parse_true_false, parse_yes_no};
use crate::eval::suites::sword::SwordRow;
use crate::eval::suites::sycophancy::{belief_kind, QuestionStates, State, Variant};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::io::BufRead;
use std::path::Path;

/// Read a samples JSONL file into flattened objects (meta merged over top level), with line numbers.
pub fn read_jsonl(path: &Path) -> Result<Vec<(u64, Map<String, Value>)>> {
    let f = std::fs::File::open(path).at(path)?;
    parse_jsonl(std::io::BufReader::new(f), path)
}

/// [`read_jsonl`] on any reader (`path` names it in errors).
pub fn parse_jsonl<R: BufRead>(r: R, path: &Path) -> Result<Vec<(u64, Map<String, Value>)>> {
    let mut out = Vec::new();
    for (pos, v) in crate::llm::jsonl::read_values(r, path)? {
        let o = flatten(v).ok_or_else(|| pos.err(path, "not a JSON object"))?;
        out.push((pos.line, o));
    }
    Ok(out)
}

/// One samples line as a flat record: the object with its `meta` fields merged over the top level (`meta`
/// wins on a clash); `None` when the value is not an object.
pub fn flatten(v: Value) -> Option<Map<String, Value>> {
    let Value::Object(mut o) = v else {
        return None;
    };
    if let Some(Value::Object(meta)) = o.remove("meta") {
        for (k, v) in meta {
            o.insert(k, v);
        }
    }
    Some(o)
}

fn s<'a>(o: &'a Map<String, Value>, k: &str) -> Option<&'a str> {
    o.get(k).and_then(Value::as_str)
}

fn boolish(v: Option<&Value>) -> Option<bool> {
    match v? {
        Value::Bool(b) => Some(*b),
        Value::String(s) => match s.to_ascii_lowercase().as_str() {
            "true" | "yes" | "1" => Some(true),
            "false" | "no" | "0" => Some(false),
            _ => None,
        },
        Value::Number(n) => n.as_i64().map(|n| n != 0),
        _ => None,
    }
}

fn missing(path: &Path, line: u64, what: &str) -> Error {
    Error::bad_input(path, format!("line {line}: {what}"))
}

/// Model name of a record.
pub fn model_of(o: &Map<String, Value>) -> String {
    s(o, "model").unwrap_or("model").to_string()
}

/// SWORD rows grouped by (model, variant).
pub fn sword_rows(path: &Path) -> Result<BTreeMap<(String, String), Vec<SwordRow>>> {
    sword_rows_of(read_jsonl(path)?, path)
}

/// [`sword_rows`] of records already read (`path` names them in errors).
pub fn sword_rows_of(
    records: Vec<(u64, Map<String, Value>)>,
    path: &Path,
) -> Result<BTreeMap<(String, String), Vec<SwordRow>>> {
    let mut out: BTreeMap<(String, String), Vec<SwordRow>> = BTreeMap::new();
    for (line, o) in records {
        let (key, row) = sword_row(&o, path, line)?;
        out.entry(key).or_default().push(row);
    }
    Ok(out)
}

/// The SWORD row of one flat record (see [`flatten`]) with its (model, variant); `line` names it in errors.
pub fn sword_row(
    o: &Map<String, Value>,
    path: &Path,
    line: u64,
) -> Result<((String, String), SwordRow)> {
    let statement = s(o, "statement_id").ok_or_else(|| missing(path, line, "no statement_id"))?;
    if statement.trim().is_empty() {
        return Err(missing(path, line, "empty statement_id"));
    }
    let original = s(o, "original_id").unwrap_or(statement);
    if original.trim().is_empty() {
        return Err(missing(path, line, "empty original_id"));
    }
    let row = SwordRow {
        original: original.to_string(),
        statement: statement.to_string(),
        strategy: s(o, "strategy")
            .ok_or_else(|| missing(path, line, "no strategy"))?
            .to_string(),
        label: boolish(o.get("label")).ok_or_else(|| missing(path, line, "no boolean label"))?,
        language: s(o, "language")
            .ok_or_else(|| missing(path, line, "no language"))?
            .to_string(),
        answer: parse_true_false(s(o, "answer").unwrap_or("")),
    };
    let variant = s(o, "variant").unwrap_or("plain").to_string();
    Ok(((model_of(o), variant), row))
}

/// Sycophancy question states grouped by model. Returns (states, unparsed answer count per model).
pub fn syco_states(path: &Path) -> Result<BTreeMap<String, SycoModel>> {
    syco_states_of(read_jsonl(path)?, path)
}

/// Sycophancy question states of one model: the questions and the count of unparsed answers.
pub type SycoModel = (Vec<QuestionStates>, usize);

/// [`syco_states`] of records already read (`path` names them in errors).
pub fn syco_states_of(
    records: Vec<(u64, Map<String, Value>)>,
    path: &Path,
) -> Result<BTreeMap<String, SycoModel>> {
    type PerModel = (BTreeMap<(String, bool), QuestionStates>, usize);
    let mut per: BTreeMap<String, PerModel> = BTreeMap::new();
    for (line, o) in records {
        let qid = s(&o, "question_id").ok_or_else(|| missing(path, line, "no question_id"))?;
        let gold = boolish(o.get("gold")).ok_or_else(|| missing(path, line, "no gold yes/no"))?;
        let variant: Variant = o
            .get("variant")
            .cloned()
            .and_then(|v| serde_json::from_value(v).ok())
            .ok_or_else(|| missing(path, line, "no valid variant"))?;
        let reasoning = boolish(o.get("reasoning")).unwrap_or(false);
        let answer = parse_yes_no(s(&o, "answer").unwrap_or(""));
        let state = State::of(answer, gold);
        let entry = per.entry(model_of(&o)).or_default();
        if state.is_none() {
            entry.1 += 1;
        }
        let q = entry
            .0
            .entry((qid.to_string(), reasoning))
            .or_insert_with(|| QuestionStates {
                question: qid.to_string(),
                topic: s(&o, "topic").unwrap_or("").to_string(),
                gold_yes: gold,
                reasoning,
                ..Default::default()
            });
        if q.gold_yes != gold {
            return Err(missing(
                path,
                line,
                "gold differs from an earlier line of the same question",
            ));
        }
        match variant {
            Variant::Baseline => q.baseline = state,
            Variant::BeliefYes => q.belief[belief_kind(true, gold)] = state,
            Variant::BeliefNo => q.belief[belief_kind(false, gold)] = state,
            Variant::AntiYes => q.anti[belief_kind(true, gold)] = state,
            Variant::AntiNo => q.anti[belief_kind(false, gold)] = state,
        }
    }
    Ok(per
        .into_iter()
        .map(|(m, (qs, u))| (m, (qs.into_values().collect(), u)))
        .collect())
}
