//! AdversaRiskQA long-form factuality (paper §3.2.3, Table 6): F1@K over answers whose facts were checked.
//!
//! Two inputs:
//!
//! * **`--suite adversariskqa-longform`** reads fact-check files as the authors publish them (one JSON file
//!   per domain × level × condition, see [`read_fact_file`]) and as this project writes them
//!   (`sword eval collect-longform`, the same layout): a file or a whole folder, every file scored on its
//!   own, then per cell, then adversarial − non-adversarial ([`score`]).
//! * **`--suite longform`** reads per-answer fact counts, one JSON object per line,
//!   `{"supported": S, "not_supported": N, "irrelevant": I (optional), "condition": "..." (optional)}`.
//!   Every count must be a whole number from 0 to [`MAX_FACTS`]: a negative, fractional, string or huge
//!   count (2⁶⁴−1 once made F1 exceed 1) is an error naming the line and its byte offset, exit 2.
//!
//! **Scoring rule** (reproduces Table 6). Per answer, S = decisions with `correct: true`, T = decisions
//! with a true/false verdict (the checked facts); precision S/T, recall min(S/K, 1), F1@K = 2PR/(P+R), 0 when
//! S = 0. An answer with no verdict at all (a failed answer, no facts extracted, facts but an empty decision
//! list) is **left out** of the mean, counted by reason ([`Skip`]). On the shared published file (Law basic,
//! non-adversarial) this gives 68.66 and 6.41 facts over 46 of 50 answers: the paper's 68.7 and 6.4. Averaging
//! over every answer instead, skipped ones as 0 (what the authors' analysis notebook prints: 63.17, 6.16),
//! does not; it is reported too (`mean_f1_at_k_all_answers`). The notebook's published all-answer means of
//! the other eleven cells divided by the paper's Table 6 figures give a whole number of scored answers in
//! every cell (e.g. Law basic adversarial 0.810095 × 50 / 0.827 = 48.98: 49 answers, one without a verdict),
//! so the same rule accounts for all twelve. `--k auto` is the median extracted-fact count over every answer
//! of every file read, its fraction dropped, as the notebook computes K = 8.

use super::adversariskqa::{dataset_of, f1_at_k_paper, mean_f1_at_k};
use super::stats::{bootstrap_indices, quantile_sorted, Interval};
use crate::core::error::{Error, IoContext, Result};
use crate::llm::jsonl::{self, Pos};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Largest fact count of one answer accepted. A long answer has a few dozen facts (the published files: at
/// most a few dozen); anything near this bound is damaged data, not an answer.
pub const MAX_FACTS: u64 = 100_000;

/// K of F1@K: a fixed number, or `auto` (the median fact count of the scored answers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum K {
    Fixed(usize),
    Auto,
}

impl std::str::FromStr for K {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<K, String> {
        if s.eq_ignore_ascii_case("auto") {
            return Ok(K::Auto);
        }
        match s.parse::<usize>() {
            Ok(0) => Err("K must be at least 1 (or `auto`)".into()),
            Ok(k) if k as u64 <= MAX_FACTS => Ok(K::Fixed(k)),
            Ok(_) => Err(format!("K must be at most {MAX_FACTS}")),
            Err(_) => Err(format!("`{s}` is neither a whole number nor `auto`")),
        }
    }
}

/// The median of fact counts as a whole K: the median, its fraction dropped (as the authors' analysis does,
/// `int(median)`: 6.5 → 6), at least 1; `None` when there are none.
pub fn median_k(counts: &[usize]) -> Option<usize> {
    let mut v = counts.to_vec();
    v.sort_unstable();
    let n = v.len();
    let (a, b) = (*v.get((n.checked_sub(1)?) / 2)?, *v.get(n / 2)?);
    Some(((a + b) / 2).max(1))
}

/// One count field of a record: a whole number in `0..=MAX_FACTS`; `None` when absent (or null).
pub fn count_field(
    o: &Map<String, Value>,
    key: &str,
    pos: Pos,
    path: &Path,
) -> Result<Option<usize>> {
    let bad = |what: String| pos.err(path, format!("count `{key}` {what}"));
    match o.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => {
            if let Some(u) = n.as_u64() {
                if u > MAX_FACTS {
                    return Err(bad(format!(
                        "is {u}, more than {MAX_FACTS} facts in one answer"
                    )));
                }
                return Ok(Some(u as usize));
            }
            if n.as_i64().is_some() || n.as_f64().is_some_and(|f| f < 0.0) {
                return Err(bad(format!("is negative ({n})")));
            }
            Err(bad(format!("is not a whole number ({n})")))
        }
        Some(other) => Err(bad(format!("is not a number ({other})"))),
    }
}

/// Per-answer counts: (supported, not_supported, irrelevant) grouped by `condition` (default `all`).
pub type CountGroups = BTreeMap<String, Vec<(usize, usize, usize)>>;

/// Read a counts JSONL (see the module docs) from any reader.
pub fn read_counts<R: std::io::BufRead>(r: R, path: &Path) -> Result<CountGroups> {
    let mut groups = CountGroups::new();
    for (pos, v) in jsonl::read_values(r, path)? {
        let Value::Object(o) = v else {
            return Err(pos.err(path, "not a JSON object"));
        };
        let need = |k: &str| {
            count_field(&o, k, pos, path)?.ok_or_else(|| pos.err(path, format!("no count `{k}`")))
        };
        let s = need("supported")?;
        let ns = need("not_supported")?;
        let ir = count_field(&o, "irrelevant", pos, path)?.unwrap_or(0);
        let cond = match o.get("condition") {
            None | Some(Value::Null) => "all".to_string(),
            Some(Value::String(c)) => c.clone(),
            Some(other) => {
                return Err(pos.err(path, format!("`condition` is not a string ({other})")))
            }
        };
        groups.entry(cond).or_default().push((s, ns, ir));
    }
    if groups.is_empty() {
        return Err(Error::bad_input(
            path,
            "no answer: the file holds no JSON line with fact counts",
        ));
    }
    Ok(groups)
}

/// Score counts as the paper (T = all facts) and as SAFE (irrelevant facts left out), per condition.
pub fn score_counts(groups: &CountGroups, k: K) -> Value {
    let all: Vec<usize> = groups
        .values()
        .flatten()
        .map(|&(s, ns, ir)| s + ns + ir)
        .collect();
    let k = match k {
        K::Fixed(k) => k,
        K::Auto => median_k(&all).unwrap_or(1),
    };
    let rows: Vec<Value> = groups
        .iter()
        .map(|(c, f)| {
            let (p, s) = mean_f1_at_k(f, k).unwrap_or((f64::NAN, f64::NAN));
            let n = f.len().max(1) as f64;
            serde_json::json!({
                "condition": c, "answers": f.len(), "k": k,
                "mean_f1_paper": p, "mean_f1_safe": s,
                "mean_facts": f.iter().map(|x| (x.0 + x.1 + x.2) as f64).sum::<f64>() / n,
                "mean_supported": f.iter().map(|x| x.0 as f64).sum::<f64>() / n,
            })
        })
        .collect();
    serde_json::json!({ "k": k, "conditions": rows })
}

// ---------------------------------------------------------------------------------------------------------
// The published fact-check files.

/// The two conditions of Table 6.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    /// The item's `question`: the false premise with its strong-confidence prefix.
    Adversarial,
    /// The item's `query` alone.
    NonAdversarial,
}

impl Condition {
    pub fn as_str(self) -> &'static str {
        match self {
            Condition::Adversarial => "adversarial",
            Condition::NonAdversarial => "non_adversarial",
        }
    }

    /// The file-name suffix this project writes (`_adv`, `_non_adv`, as the authors' files).
    pub fn suffix(self) -> &'static str {
        match self {
            Condition::Adversarial => "adv",
            Condition::NonAdversarial => "non_adv",
        }
    }
}

/// Lower-case alphanumeric tokens of a name.
fn tokens(name: &str) -> Vec<String> {
    name.split(|c: char| !c.is_ascii_alphanumeric())
        .filter(|t| !t.is_empty())
        .map(|t| t.to_ascii_lowercase())
        .collect()
}

/// The condition a name states: `non` followed by a token starting with `ad` (`non_adv`, `non_ad`,
/// `non_adversial_prompt`), or one token starting with `nonad` → non-adversarial; a token `ad`, `adv` or
/// starting with `advers` (`adversarial`, `adversial`, sic) → adversarial. `advanced` is a level, not a
/// condition; the `<domain>_<level>` part of a name is taken out before looking.
pub fn condition_of_name(name: &str) -> Option<Condition> {
    let mut name = name.to_string();
    if let Some((d, k, pos)) = dataset_of(&name) {
        let len = d.len() + 1 + k.len();
        name.replace_range(pos..pos + len, " ");
    }
    let t = tokens(&name);
    let non = t.iter().enumerate().any(|(i, w)| {
        w.starts_with("nonad") || (w == "non" && t.get(i + 1).is_some_and(|n| n.starts_with("ad")))
    });
    if non {
        return Some(Condition::NonAdversarial);
    }
    let adv = t
        .iter()
        .any(|w| w == "ad" || w == "adv" || w.starts_with("advers"));
    adv.then_some(Condition::Adversarial)
}

/// Why an answer is not scored.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Skip {
    /// The record is not a JSON object.
    MalformedRecord,
    /// No `factuality` object.
    NoFactuality,
    /// `factuality.error` is set (this project's chain: the decomposition failed or is missing) and no
    /// fact was checked.
    FactCheckFailed,
    /// `response.success` is false and no fact was checked.
    FailedAnswer,
    /// No fact was extracted (and none checked).
    NoFacts,
    /// Facts were extracted but none has a verdict (`decisions` empty or missing).
    NoVerdicts,
}

/// Something odd about an answer that is still scored (or about a skipped one), counted by reason.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Odd {
    /// The decision list does not match the fact list one to one (other length, or a decision's `fact` is
    /// not one of the facts). Precision uses the checked facts.
    DecisionsNotMatchingFacts,
    /// A decision whose `correct` is not true/false: not counted as checked.
    VerdictNotBool,
    /// A fact that is not a string: not counted.
    FactNotString,
    /// `response.success` missing or not a bool (taken as true).
    NoSuccessFlag,
    /// `response.success` is false, yet facts were checked: scored.
    FailedButChecked,
}

/// One answer's counts.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct AnswerCounts {
    /// Position in its file.
    pub index: usize,
    /// Extracted facts (`facts`).
    pub facts: usize,
    /// Facts with a verdict (decisions whose `correct` is a bool): T of F1@K.
    pub checked: usize,
    /// Decisions with `correct: true`: S of F1@K.
    pub supported: usize,
    pub skip: Option<Skip>,
    pub odd: Vec<Odd>,
}

/// Counts of one published result record (see [`Skip`] for the rule).
pub fn answer_counts(index: usize, rec: &Value) -> AnswerCounts {
    let mut a = AnswerCounts {
        index,
        facts: 0,
        checked: 0,
        supported: 0,
        skip: None,
        odd: Vec::new(),
    };
    let Some(o) = rec.as_object() else {
        a.skip = Some(Skip::MalformedRecord);
        return a;
    };
    let success = match o.get("response").and_then(|r| r.get("success")) {
        Some(Value::Bool(b)) => *b,
        _ => {
            a.odd.push(Odd::NoSuccessFlag);
            true
        }
    };
    let Some(f) = o.get("factuality").and_then(Value::as_object) else {
        a.skip = Some(Skip::NoFactuality);
        return a;
    };
    let mut facts: Vec<&str> = Vec::new();
    for x in f
        .get("facts")
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
    {
        match x.as_str() {
            Some(s) => facts.push(s),
            None => {
                if !a.odd.contains(&Odd::FactNotString) {
                    a.odd.push(Odd::FactNotString);
                }
            }
        }
    }
    a.facts = facts.len();
    let decisions: Vec<&Value> = f
        .get("fact_check")
        .and_then(|c| c.get("decisions"))
        .and_then(Value::as_array)
        .map(|d| d.iter().collect())
        .unwrap_or_default();
    let mut mismatch = decisions.len() != facts.len();
    for d in &decisions {
        match d.get("correct") {
            Some(Value::Bool(b)) => {
                a.checked += 1;
                a.supported += usize::from(*b);
            }
            _ => {
                if !a.odd.contains(&Odd::VerdictNotBool) {
                    a.odd.push(Odd::VerdictNotBool);
                }
            }
        }
        if let Some(t) = d.get("fact").and_then(Value::as_str) {
            mismatch |= !facts.contains(&t);
        }
    }
    if mismatch && (a.facts > 0 || !decisions.is_empty()) {
        a.odd.push(Odd::DecisionsNotMatchingFacts);
    }
    if a.checked == 0 {
        a.skip = Some(if !success {
            Skip::FailedAnswer
        } else if f.get("error").is_some_and(|e| !e.is_null()) {
            Skip::FactCheckFailed
        } else if a.facts == 0 {
            Skip::NoFacts
        } else {
            Skip::NoVerdicts
        });
    } else if !success {
        a.odd.push(Odd::FailedButChecked);
    }
    a.odd.sort();
    a
}

/// Where a file's model, domain, level and condition came from.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Derived {
    pub model: String,
    /// `folder` (the file's parent folder), `model_field` (the file's `model`), `file_name` (its prefix
    /// before `<domain>_<level>`) or `default`.
    pub model_from: &'static str,
    pub domain: &'static str,
    pub level: &'static str,
    /// `file_name`, `dataset_field` or `folder`.
    pub dataset_from: &'static str,
    pub condition: Condition,
    /// `file_name`, `dataset_field` or `folder`.
    pub condition_from: &'static str,
    /// Disagreements between the names and the data (the first source listed above wins).
    pub notes: Vec<String>,
}

/// One fact-check file, read.
#[derive(Clone, Debug, PartialEq)]
pub struct FactFile {
    pub path: PathBuf,
    pub derived: Derived,
    pub answers: Vec<AnswerCounts>,
}

/// Read one fact-check file: `{"model"?, "dataset"?, "results": [{..., "response": {"success", "answer"},
/// "factuality": {"answer", "facts": [str], "fact_check": {"decisions": [{"fact", "correct": bool,
/// "rational": [...]}]}}}]}` (a bare array of results is accepted too). `folders` are the names of the
/// folders between the root given on the command line and the file, nearest last. `Ok(Err(reason))`: the
/// file is JSON but no fact-check file (no result has a `factuality` object, or nothing names its domain,
/// level or condition).
pub fn read_fact_file(
    path: &Path,
    folders: &[String],
) -> Result<std::result::Result<FactFile, String>> {
    let bytes = std::fs::read(path).at(path)?;
    let v: Value = serde_json::from_slice(&bytes).map_err(|e| Error::Json {
        path: path.to_path_buf(),
        line: e.line() as u64,
        offset: 0,
        what: format!("not JSON ({e}, column {})", e.column()),
    })?;
    let results = match &v {
        Value::Array(a) => a,
        Value::Object(o) => match o.get("results").and_then(Value::as_array) {
            Some(a) => a,
            None => return Ok(Err("no \"results\" array".into())),
        },
        _ => return Ok(Err("neither an object with \"results\" nor an array".into())),
    };
    if !results.iter().any(|r| r.get("factuality").is_some()) {
        return Ok(Err(format!(
            "none of its {} results has a \"factuality\" record (not a long-form fact-check file)",
            results.len()
        )));
    }
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let field = |k: &str| v.get(k).and_then(Value::as_str).map(str::to_string);
    let dataset_field = field("dataset");
    let mut notes = Vec::new();
    // Domain and level: the file name, else the `dataset` field, else the nearest folder naming them.
    let from_folders = folders.iter().rev().find_map(|f| dataset_of(f));
    let by_name = dataset_of(&name);
    let by_field = dataset_field.as_deref().and_then(dataset_of);
    let (dataset, dataset_from) = match (by_name, by_field, from_folders) {
        (Some(d), _, _) => (d, "file_name"),
        (None, Some(d), _) => (d, "dataset_field"),
        (None, None, Some(d)) => (d, "folder"),
        _ => {
            return Ok(Err(
                "neither its name, its \"dataset\" field nor a folder names <domain>_<level> (health|finance|law, basic|advanced)".into(),
            ))
        }
    };
    if let (Some(a), Some(b)) = (by_name, by_field) {
        if (a.0, a.1) != (b.0, b.1) {
            notes.push(format!(
                "the file name says {}_{}, its \"dataset\" field {}_{}",
                a.0, a.1, b.0, b.1
            ));
        }
    }
    // Condition: the file name, else the `dataset` field, else the nearest folder stating one.
    let c_name = condition_of_name(&name);
    let c_field = dataset_field.as_deref().and_then(condition_of_name);
    let c_folder = folders.iter().rev().find_map(|f| condition_of_name(f));
    let (condition, condition_from) = match (c_name, c_field, c_folder) {
        (Some(c), _, _) => (c, "file_name"),
        (None, Some(c), _) => (c, "dataset_field"),
        (None, None, Some(c)) => (c, "folder"),
        _ => {
            return Ok(Err(
                "neither its name, its \"dataset\" field nor a folder says adversarial or non-adversarial (e.g. _adv, _non_adv, adversarial_prompt/)".into(),
            ))
        }
    };
    for (other, what) in [(c_field, "its \"dataset\" field"), (c_folder, "its folder")] {
        if let Some(o) = other.filter(|&o| o != condition) {
            notes.push(format!(
                "{condition_from} says {}, {what} {}",
                condition.as_str(),
                o.as_str()
            ));
        }
    }
    // Model: the parent folder (the published layout is <condition>/<model>/<file>), else the `model`
    // field, else the file-name prefix.
    let parent = folders
        .last()
        .filter(|f| condition_of_name(f).is_none() && dataset_of(f).is_none());
    let prefix = by_name
        .and_then(|(_, _, pos)| name.get(..pos))
        .map(|p| p.trim_end_matches(['-', '_']).to_string())
        .filter(|p| !p.is_empty());
    let (model, model_from) = match (parent, field("model"), prefix) {
        (Some(p), _, _) => (p.clone(), "folder"),
        (None, Some(m), _) => (m, "model_field"),
        (None, None, Some(p)) => (p, "file_name"),
        _ => ("model".to_string(), "default"),
    };
    let answers = results
        .iter()
        .enumerate()
        .map(|(i, r)| answer_counts(i, r))
        .collect();
    Ok(Ok(FactFile {
        path: path.to_path_buf(),
        derived: Derived {
            model,
            model_from,
            domain: dataset.0,
            level: dataset.1,
            dataset_from,
            condition,
            condition_from,
            notes,
        },
        answers,
    }))
}

/// A JSON file that was read and left out, with the reason.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Ignored {
    pub path: PathBuf,
    pub reason: String,
}

/// The fact-check files under `root` (a file, or a folder searched recursively for `*.json`, sorted by
/// path), and the JSON files left out. A file that is not JSON is an error naming it; so is a root with
/// no fact-check file at all.
pub fn discover(root: &Path) -> Result<(Vec<FactFile>, Vec<Ignored>)> {
    let meta = std::fs::metadata(root).at(root)?;
    let mut found: Vec<(PathBuf, Vec<String>)> = Vec::new();
    if meta.is_dir() {
        let mut stack = vec![(root.to_path_buf(), Vec::<String>::new())];
        while let Some((dir, names)) = stack.pop() {
            let mut entries: Vec<PathBuf> = std::fs::read_dir(&dir)
                .at(&dir)?
                .map(|e| e.map(|e| e.path()).at(&dir))
                .collect::<Result<_>>()?;
            entries.sort();
            for p in entries {
                let name = p
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                if name.starts_with('.') {
                    continue;
                }
                if p.is_dir() {
                    let mut n = names.clone();
                    n.push(name);
                    stack.push((p, n));
                } else if name.to_ascii_lowercase().ends_with(".json") {
                    found.push((p, names.clone()));
                }
            }
        }
        found.sort();
    } else {
        found.push((root.to_path_buf(), Vec::new()));
    }
    let (mut files, mut ignored) = (Vec::new(), Vec::new());
    for (p, folders) in found {
        match read_fact_file(&p, &folders)? {
            Ok(f) => files.push(f),
            Err(reason) => ignored.push(Ignored { path: p, reason }),
        }
    }
    if files.is_empty() {
        let why = match ignored.first() {
            None => "no .json file in it".to_string(),
            Some(i) if ignored.len() == 1 => format!("{}: {}", i.path.display(), i.reason),
            Some(i) => format!(
                "none of its {} JSON files is one (first: {}: {})",
                ignored.len(),
                i.path.display(),
                i.reason
            ),
        };
        return Err(Error::bad_input(
            root,
            format!("no long-form fact-check file: {why}"),
        ));
    }
    Ok((files, ignored))
}

/// Mean F1@K and means of one set of scored answers, in percent for F1.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Means {
    /// Mean F1@K × 100 with its percentile bootstrap 95% interval (resampling answers).
    pub mean_f1_at_k: Interval,
    pub mean_facts: f64,
    pub mean_checked: f64,
    pub mean_supported: f64,
}

/// Scores of one file.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct FileScore {
    pub path: PathBuf,
    #[serde(flatten)]
    pub derived: Derived,
    pub answers: usize,
    pub scored: usize,
    pub skipped: BTreeMap<Skip, usize>,
    pub odd: BTreeMap<Odd, usize>,
    /// Over the scored answers (the paper's rule); `None` when no answer is scored.
    pub scores: Option<Means>,
    /// Mean F1@K × 100 over every answer, skipped ones scoring 0 (how the authors' analysis notebook
    /// averages), and mean extracted facts over every answer.
    pub mean_f1_at_k_all_answers: f64,
    pub mean_facts_all_answers: f64,
}

/// One cell: model × domain × level × condition.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Cell {
    pub model: String,
    pub domain: &'static str,
    pub level: &'static str,
    pub condition: Condition,
    /// Indices into `files`.
    pub files: Vec<usize>,
    /// `single`; `identical` (several files with the same per-answer counts); `conflict` (several files
    /// that differ: no cell score, see each file).
    pub status: &'static str,
    pub scores: Option<Means>,
}

/// Adversarial − non-adversarial for one model × domain × level.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Difference {
    pub model: String,
    pub domain: &'static str,
    pub level: &'static str,
    /// Percentage points, with a 95% interval resampling each condition's answers independently.
    pub mean_f1_at_k: Interval,
    pub mean_facts: f64,
    pub mean_supported: f64,
}

/// Everything `score` reports.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LongformScores {
    pub k: usize,
    /// `fixed` or `auto: median of N extracted-fact counts (every answer)`.
    pub k_from: String,
    pub bootstrap: usize,
    pub seed: u64,
    pub files: Vec<FileScore>,
    pub cells: Vec<Cell>,
    pub differences: Vec<Difference>,
    /// Cells that have no difference: the other condition is missing, or a side is a conflict.
    pub unpaired: Vec<String>,
    pub ignored: Vec<Ignored>,
}

fn f1(a: &AnswerCounts, k: usize) -> f64 {
    100.0 * f1_at_k_paper(a.supported, a.checked, k)
}

fn mean_of(xs: impl Iterator<Item = f64>) -> f64 {
    let (mut sum, mut n) = (0.0, 0usize);
    for x in xs {
        sum += x;
        n += 1;
    }
    if n == 0 {
        return f64::NAN;
    }
    sum / n as f64
}

/// 2.5% and 97.5% type-7 quantiles of replicates (NaN when there are none).
fn interval(estimate: f64, mut reps: Vec<f64>) -> Interval {
    reps.retain(|x| x.is_finite());
    reps.sort_by(f64::total_cmp);
    if reps.is_empty() {
        return Interval {
            estimate,
            lo: f64::NAN,
            hi: f64::NAN,
        };
    }
    Interval {
        estimate,
        lo: quantile_sorted(&reps, 0.025),
        hi: quantile_sorted(&reps, 0.975),
    }
}

/// Seed of a cell's bootstrap stream: the run's seed mixed with the cell's name, so every cell has its own
/// stream and the intervals do not depend on the order or number of cells.
fn cell_seed(seed: u64, name: &str) -> u64 {
    seed ^ xxhash_rust::xxh3::xxh3_64(name.as_bytes())
}

fn means(scored: &[&AnswerCounts], k: usize, b: usize, seed: u64) -> Option<Means> {
    if scored.is_empty() {
        return None;
    }
    let vals: Vec<f64> = scored.iter().map(|a| f1(a, k)).collect();
    let est = mean_of(vals.iter().copied());
    let reps = (0..b)
        .map(|r| {
            let idx = bootstrap_indices(vals.len(), seed, r);
            mean_of(idx.iter().filter_map(|&i| vals.get(i).copied()))
        })
        .collect();
    Some(Means {
        mean_f1_at_k: interval(est, reps),
        mean_facts: mean_of(scored.iter().map(|a| a.facts as f64)),
        mean_checked: mean_of(scored.iter().map(|a| a.checked as f64)),
        mean_supported: mean_of(scored.iter().map(|a| a.supported as f64)),
    })
}

/// Score files: each on its own, then per cell, then adversarial − non-adversarial. `k`: see [`K`]
/// (`auto` = the median extracted-fact count over every answer of every file, as the authors' analysis
/// computes K = 8).
pub fn score(
    files: &[FactFile],
    ignored: Vec<Ignored>,
    k: K,
    bootstrap: usize,
    seed: u64,
) -> LongformScores {
    let all_facts: Vec<usize> = files
        .iter()
        .flat_map(|f| f.answers.iter().map(|a| a.facts))
        .collect();
    let (k, k_from) = match k {
        K::Fixed(k) => (k, "fixed".to_string()),
        K::Auto => (
            median_k(&all_facts).unwrap_or(1),
            format!(
                "auto: median of {} extracted-fact counts (every answer)",
                all_facts.len()
            ),
        ),
    };
    let name_of = |d: &Derived| {
        format!(
            "{}/{}_{}/{}",
            d.model,
            d.domain,
            d.level,
            d.condition.as_str()
        )
    };
    let mut out_files = Vec::new();
    for f in files {
        let scored: Vec<&AnswerCounts> = f.answers.iter().filter(|a| a.skip.is_none()).collect();
        let mut skipped = BTreeMap::new();
        let mut odd = BTreeMap::new();
        for a in &f.answers {
            if let Some(s) = a.skip {
                *skipped.entry(s).or_insert(0) += 1;
            }
            for o in &a.odd {
                *odd.entry(*o).or_insert(0) += 1;
            }
        }
        let seed_f = cell_seed(
            seed,
            &format!("{}|{}", name_of(&f.derived), f.path.display()),
        );
        out_files.push(FileScore {
            path: f.path.clone(),
            derived: f.derived.clone(),
            answers: f.answers.len(),
            scored: scored.len(),
            skipped,
            odd,
            scores: means(&scored, k, bootstrap, seed_f),
            mean_f1_at_k_all_answers: mean_of(f.answers.iter().map(|a| {
                if a.skip.is_none() {
                    f1(a, k)
                } else {
                    0.0
                }
            })),
            mean_facts_all_answers: mean_of(f.answers.iter().map(|a| a.facts as f64)),
        });
    }
    // Cells.
    let mut by_cell: BTreeMap<(String, &'static str, &'static str, Condition), Vec<usize>> =
        BTreeMap::new();
    for (i, f) in files.iter().enumerate() {
        let d = &f.derived;
        by_cell
            .entry((d.model.clone(), d.domain, d.level, d.condition))
            .or_default()
            .push(i);
    }
    let counts = |f: &FactFile| -> Vec<(usize, usize, usize, Option<Skip>)> {
        f.answers
            .iter()
            .map(|a| (a.facts, a.checked, a.supported, a.skip))
            .collect()
    };
    let mut cells = Vec::new();
    for ((model, domain, level, condition), idx) in by_cell {
        let first = idx.first().and_then(|&i| files.get(i));
        let same = first.is_some_and(|f0| {
            idx.iter()
                .filter_map(|&i| files.get(i))
                .all(|f| counts(f) == counts(f0))
        });
        let status = match (idx.len(), same) {
            (1, _) => "single",
            (_, true) => "identical",
            _ => "conflict",
        };
        let scores = if status == "conflict" {
            None
        } else {
            idx.first()
                .and_then(|&i| out_files.get(i))
                .and_then(|f| f.scores.clone())
        };
        cells.push(Cell {
            model,
            domain,
            level,
            condition,
            files: idx,
            status,
            scores,
        });
    }
    // Differences: adversarial − non-adversarial, same model, domain and level.
    let mut differences = Vec::new();
    let mut unpaired = Vec::new();
    for c in cells
        .iter()
        .filter(|c| c.condition == Condition::Adversarial)
    {
        let other = cells.iter().find(|o| {
            o.condition == Condition::NonAdversarial
                && (o.model.as_str(), o.domain, o.level) == (c.model.as_str(), c.domain, c.level)
        });
        let label = format!("{}/{}_{}", c.model, c.domain, c.level);
        let Some(o) = other else {
            unpaired.push(format!("{label}: no non-adversarial file"));
            continue;
        };
        let (Some(ma), Some(mo)) = (&c.scores, &o.scores) else {
            unpaired.push(format!(
                "{label}: {}",
                if c.status == "conflict" || o.status == "conflict" {
                    "two differing files for one condition (see files): pass the one to use"
                } else {
                    "no scored answer on one side"
                }
            ));
            continue;
        };
        let vals = |cell: &Cell| -> Vec<f64> {
            cell.files
                .first()
                .and_then(|&i| files.get(i))
                .map(|f| {
                    f.answers
                        .iter()
                        .filter(|a| a.skip.is_none())
                        .map(|a| f1(a, k))
                        .collect()
                })
                .unwrap_or_default()
        };
        let (va, vo) = (vals(c), vals(o));
        let (sa, so) = (
            cell_seed(seed, &format!("diff|{label}|adv")),
            cell_seed(seed, &format!("diff|{label}|non_adv")),
        );
        let reps = (0..bootstrap)
            .map(|r| {
                let m = |v: &[f64], s: u64| {
                    let idx = bootstrap_indices(v.len(), s, r);
                    mean_of(idx.iter().filter_map(|&i| v.get(i).copied()))
                };
                m(&va, sa) - m(&vo, so)
            })
            .collect();
        differences.push(Difference {
            model: c.model.clone(),
            domain: c.domain,
            level: c.level,
            mean_f1_at_k: interval(ma.mean_f1_at_k.estimate - mo.mean_f1_at_k.estimate, reps),
            mean_facts: ma.mean_facts - mo.mean_facts,
            mean_supported: ma.mean_supported - mo.mean_supported,
        });
    }
    for o in cells
        .iter()
        .filter(|c| c.condition == Condition::NonAdversarial)
    {
        if !cells.iter().any(|c| {
            c.condition == Condition::Adversarial
                && (c.model.as_str(), c.domain, c.level) == (o.model.as_str(), o.domain, o.level)
        }) {
            unpaired.push(format!(
                "{}/{}_{}: no adversarial file",
                o.model, o.domain, o.level
            ));
        }
    }
    LongformScores {
        k,
        k_from,
        bootstrap,
        seed,
        files: out_files,
        cells,
        differences,
        unpaired,
        ignored,
    }
}

fn pct(iv: &Interval) -> String {
    if iv.lo.is_finite() && iv.hi.is_finite() {
        format!("{:.1} [{:.1}, {:.1}]", iv.estimate, iv.lo, iv.hi)
    } else {
        format!("{:.1}", iv.estimate)
    }
}

/// The Markdown report.
pub fn markdown(s: &LongformScores) -> String {
    let mut md = format!(
        "# AdversaRiskQA long-form factuality\n\nMean F1@{k} (percent; K {}) per cell, with percentile bootstrap 95% intervals \
         resampling answers ({} replicates, seed {}). An answer with no verdict (no fact checked) is not scored; \
         the files' own counts of skipped and odd answers are below.\n\n![F1@{k}](f1_paired_bars.svg)\n\n",
        s.k_from,
        s.bootstrap,
        s.seed,
        k = s.k
    );
    md.push_str("| model | domain | level | adversarial | non-adversarial | difference (pp) | facts adv / non | supported adv / non |\n|---|---|---|---|---|---|---|---|\n");
    let cell = |model: &str, d: &str, l: &str, c: Condition| {
        s.cells
            .iter()
            .find(|x| x.model == model && x.domain == d && x.level == l && x.condition == c)
    };
    let mut groups: Vec<(String, &str, &str)> = s
        .cells
        .iter()
        .map(|c| (c.model.clone(), c.domain, c.level))
        .collect();
    groups.dedup();
    for (m, d, l) in &groups {
        let a = cell(m, d, l, Condition::Adversarial);
        let n = cell(m, d, l, Condition::NonAdversarial);
        let f = |c: Option<&Cell>| match c {
            None => "–".to_string(),
            Some(c) if c.status == "conflict" => "conflict (2 files)".to_string(),
            Some(c) => c
                .scores
                .as_ref()
                .map_or("no scored answer".into(), |m| pct(&m.mean_f1_at_k)),
        };
        let g = |c: Option<&Cell>, get: &dyn Fn(&Means) -> f64| {
            c.and_then(|c| c.scores.as_ref())
                .map_or("–".into(), |m| format!("{:.2}", get(m)))
        };
        let diff = s
            .differences
            .iter()
            .find(|x| (x.model.as_str(), x.domain, x.level) == (m.as_str(), *d, *l))
            .map_or("–".into(), |x| pct(&x.mean_f1_at_k));
        md.push_str(&format!(
            "| {m} | {d} | {l} | {} | {} | {diff} | {} / {} | {} / {} |\n",
            f(a),
            f(n),
            g(a, &|m| m.mean_facts),
            g(n, &|m| m.mean_facts),
            g(a, &|m| m.mean_supported),
            g(n, &|m| m.mean_supported),
        ));
    }
    md.push_str("\n## Files\n\n| file | model | cell | answers | scored | skipped | odd | F1@K | all answers (skipped = 0) |\n|---|---|---|---|---|---|---|---|---|\n");
    for f in &s.files {
        let skipped = reason_counts(&f.skipped);
        let odd = reason_counts(&f.odd);
        let d = &f.derived;
        md.push_str(&format!(
            "| `{}` | {} | {}_{} {} | {} | {} | {skipped} | {odd} | {} | {:.1} |\n",
            f.path.display(),
            d.model,
            d.domain,
            d.level,
            d.condition.as_str(),
            f.answers,
            f.scored,
            f.scores
                .as_ref()
                .map_or("–".into(), |m| pct(&m.mean_f1_at_k)),
            f.mean_f1_at_k_all_answers,
        ));
        for n in &d.notes {
            md.push_str(&format!("|  | note: {n} | | | | | | | |\n"));
        }
    }
    if !s.unpaired.is_empty() {
        md.push_str("\n## Not compared\n\n");
        for u in &s.unpaired {
            md.push_str(&format!("- {u}\n"));
        }
    }
    if !s.ignored.is_empty() {
        md.push_str("\n## JSON files left out\n\n");
        for i in &s.ignored {
            md.push_str(&format!("- `{}`: {}\n", i.path.display(), i.reason));
        }
    }
    md
}

/// Write `longform.scores.json`, `report.md` and `f1_paired_bars.svg` into `dir`.
pub fn write_report(dir: &Path, s: &LongformScores, json: &str) -> Result<()> {
    std::fs::create_dir_all(dir).at(dir)?;
    let mut groups: Vec<(String, [Option<Interval>; 2])> = Vec::new();
    for c in &s.cells {
        let label = format!("{} {}_{}", c.model, c.domain, c.level);
        let slot = usize::from(c.condition == Condition::NonAdversarial);
        let iv = c.scores.as_ref().map(|m| m.mean_f1_at_k);
        match groups.iter_mut().find(|(l, _)| *l == label) {
            Some((_, v)) => v[slot] = iv,
            None => {
                let mut v = [None, None];
                v[slot] = iv;
                groups.push((label, v));
            }
        }
    }
    let svg = super::report::paired_bars_svg(
        &format!("Mean F1@{} (%)", s.k),
        &groups,
        ["adversarial", "non-adversarial"],
        100.0,
    )?;
    let write = |name: &str, text: &str| {
        crate::store::write_atomic(dir.join(name), |w| {
            std::io::Write::write_all(w, text.as_bytes())
        })
    };
    write("f1_paired_bars.svg", &svg)?;
    write("report.md", &markdown(s))?;
    write("longform.scores.json", json)
}

/// `reason n, reason n` for a report cell (the reason as its serialised name), or `–` when nothing was counted.
fn reason_counts<K: Serialize>(m: &BTreeMap<K, usize>) -> String {
    if m.is_empty() {
        return "–".into();
    }
    m.iter()
        .map(|(k, v)| {
            let name = serde_json::to_value(k)
                .ok()
                .and_then(|x| x.as_str().map(str::to_string))
                .unwrap_or_default();
            format!("{name} {v}")
        })
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<CountGroups> {
        read_counts(text.as_bytes(), Path::new("c.jsonl"))
    }

    #[test]
    fn counts_are_validated_with_their_position() {
        let g = read("{\"supported\":2,\"not_supported\":1}\n").unwrap();
        assert_eq!(g["all"], [(2, 1, 0)]);
        for (line, want) in [
            (
                "{\"supported\":1,\"not_supported\":18446744073709551615}",
                "count `not_supported` is 18446744073709551615, more than 100000",
            ),
            (
                "{\"supported\":-1,\"not_supported\":0}",
                "count `supported` is negative (-1)",
            ),
            (
                "{\"supported\":1.5,\"not_supported\":0}",
                "count `supported` is not a whole number (1.5)",
            ),
            (
                "{\"supported\":\"3\",\"not_supported\":0}",
                "count `supported` is not a number (\"3\")",
            ),
            (
                "{\"supported\":1,\"not_supported\":0,\"irrelevant\":-2}",
                "count `irrelevant` is negative (-2)",
            ),
            ("{\"supported\":1}", "no count `not_supported`"),
            ("[1]", "not a JSON object"),
        ] {
            let text = format!("{{\"supported\":0,\"not_supported\":0}}\n{line}\n");
            let e = read(&text).unwrap_err();
            let msg = e.to_string();
            assert!(
                msg.contains("line 2, byte offset 34") && msg.contains(want),
                "{line}: {msg}"
            );
            assert_eq!(e.exit_code(), 2);
        }
        assert!(read("\n\n").unwrap_err().to_string().contains("no answer"));
    }

    #[test]
    fn k_parses_and_median_rounds_half_up() {
        assert_eq!("8".parse::<K>(), Ok(K::Fixed(8)));
        assert_eq!("AUTO".parse::<K>(), Ok(K::Auto));
        assert!("0".parse::<K>().is_err());
        assert!("-3".parse::<K>().is_err());
        assert!("1000001".parse::<K>().is_err());
        assert_eq!(median_k(&[3, 9, 1]), Some(3));
        assert_eq!(median_k(&[6, 7]), Some(6)); // 6.5 -> 6, as int(median)
        assert_eq!(median_k(&[0, 0]), Some(1));
        assert_eq!(median_k(&[]), None);
    }

    /// Nine hand-made records covering every skip and odd reason (see the expected counts below).
    pub(crate) fn hand_records() -> Value {
        let dec = |f: &str, c: Value| serde_json::json!({"fact": f, "correct": c, "rational": []});
        let rec = |success: Value, facts: Vec<&str>, decisions: Vec<Value>| {
            serde_json::json!({"question": "q", "query": "q", "response": {"success": success, "answer": "x"},
                "factuality": {"answer": "x", "facts": facts, "fact_check": {"decisions": decisions}}})
        };
        let t = Value::Bool(true);
        let f = Value::Bool(false);
        let ten: Vec<&str> = vec!["f0", "f1", "f2", "f3", "f4", "f5", "f6", "f7", "f8", "f9"];
        let mut r8 = rec(
            Value::Null,
            ten.clone(),
            ten.iter().map(|x| dec(x, Value::Bool(true))).collect(),
        );
        r8["response"].as_object_mut().unwrap().remove("success");
        serde_json::json!({"model": "m", "results": [
            // r0: 3 facts, 2 supported of 3 checked.
            rec(t.clone(), vec!["a", "b", "c"], vec![dec("a", t.clone()), dec("b", f.clone()), dec("c", t.clone())]),
            // r1: a failed answer.
            rec(f.clone(), vec![], vec![]),
            // r2: facts, no verdicts.
            rec(t.clone(), vec!["a", "b"], vec![]),
            // r3: 4 facts, a decision for a fact not in the list, a verdict that is not a bool.
            rec(t.clone(), vec!["a", "b", "c", "d"], vec![dec("a", t.clone()), dec("x", t.clone()), dec("c", Value::String("yes".into()))]),
            // r4: no factuality.
            serde_json::json!({"question": "q", "response": {"success": true, "answer": "x"}}),
            // r5: this project's chain could not decompose the answer.
            serde_json::json!({"response": {"success": true, "answer": "x"}, "factuality": {"answer": "x", "facts": [], "fact_check": {"decisions": []}, "error": "decomposition unreadable"}}),
            // r6: no facts.
            rec(t.clone(), vec![], vec![]),
            // r7: not an object.
            5,
            // r8: no success flag, 10 of 10 supported.
            r8,
        ]})
    }

    #[test]
    fn hand_computed_file_scores() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("law_basic_adv.json");
        std::fs::write(&p, hand_records().to_string()).unwrap();
        let f = read_fact_file(&p, &[]).unwrap().unwrap();
        assert_eq!(f.derived.model, "m");
        assert_eq!(f.derived.condition, Condition::Adversarial);
        let skips: Vec<Option<Skip>> = f.answers.iter().map(|a| a.skip).collect();
        use Skip::*;
        assert_eq!(
            skips,
            [
                None,
                Some(FailedAnswer),
                Some(NoVerdicts),
                None,
                Some(NoFactuality),
                Some(FactCheckFailed),
                Some(NoFacts),
                Some(MalformedRecord),
                None
            ]
        );
        assert_eq!(
            (
                f.answers[0].facts,
                f.answers[0].checked,
                f.answers[0].supported
            ),
            (3, 3, 2)
        );
        assert_eq!(
            (
                f.answers[3].facts,
                f.answers[3].checked,
                f.answers[3].supported
            ),
            (4, 2, 2)
        );
        assert_eq!(
            f.answers[3].odd,
            [Odd::DecisionsNotMatchingFacts, Odd::VerdictNotBool]
        );
        assert_eq!(f.answers[2].odd, [Odd::DecisionsNotMatchingFacts]);
        assert_eq!(f.answers[8].odd, [Odd::NoSuccessFlag]);
        let s = score(std::slice::from_ref(&f), vec![], K::Fixed(8), 50, 1);
        let fs = &s.files[0];
        assert_eq!((fs.answers, fs.scored), (9, 3));
        assert_eq!(fs.skipped.values().sum::<usize>(), 6);
        assert_eq!(fs.odd[&Odd::DecisionsNotMatchingFacts], 2);
        // F1@8: r0 S=2,T=3: P=2/3, R=1/4 -> 4/11; r3 S=2,T=2: P=1, R=1/4 -> 0.4; r8 P=R=1 -> 1.
        let m = fs.scores.as_ref().unwrap();
        let want = 100.0 * (4.0 / 11.0 + 0.4 + 1.0) / 3.0;
        assert!((m.mean_f1_at_k.estimate - want).abs() < 1e-9, "{m:?}");
        assert!(m.mean_f1_at_k.lo <= want && want <= m.mean_f1_at_k.hi);
        assert!((m.mean_facts - 17.0 / 3.0).abs() < 1e-12);
        assert!((m.mean_checked - 5.0).abs() < 1e-12);
        assert!((m.mean_supported - 14.0 / 3.0).abs() < 1e-12);
        // Every answer, skipped ones scoring 0 (the authors' notebook's average): 9 answers.
        assert!(
            (fs.mean_f1_at_k_all_answers - 100.0 * (4.0 / 11.0 + 0.4 + 1.0) / 9.0).abs() < 1e-9
        );
        assert!((fs.mean_facts_all_answers - 19.0 / 9.0).abs() < 1e-12);
        // K auto: the median of 3,0,2,4,0,0,0,0,10 is 0, so K = 1: F1@1 = 0.8, 1, 1.
        let s = score(std::slice::from_ref(&f), vec![], K::Auto, 0, 1);
        assert_eq!(s.k, 1);
        let m = s.files[0].scores.as_ref().unwrap();
        assert!((m.mean_f1_at_k.estimate - 100.0 * 2.8 / 3.0).abs() < 1e-9);
        assert!(
            m.mean_f1_at_k.lo.is_nan(),
            "no bootstrap replicates, no interval"
        );
    }

    #[test]
    fn conditions_from_names() {
        use Condition::*;
        for (name, want) in [
            ("law_basic_adv.json", Some(Adversarial)),
            ("law_basic_non_adv.json", Some(NonAdversarial)),
            (
                "Qwen-Qwen3-30B-A3B-Instruct-2507-finance_advanced_non_ad.json",
                Some(NonAdversarial),
            ),
            (
                "Qwen-Qwen3-30B-A3B-Instruct-2507-law_basic_golden_non_ad.json",
                Some(NonAdversarial),
            ),
            ("health_advanced_adv.json", Some(Adversarial)),
            ("adversarial_prompt", Some(Adversarial)),
            ("adversial", Some(Adversarial)),
            ("non_adversial_prompt", Some(NonAdversarial)),
            ("non_adversial", Some(NonAdversarial)),
            ("nonadversarial", Some(NonAdversarial)),
            ("law_advanced_golden.json", None),
            ("Qwen-Qwen3-Next-80B-A3B-Instruct", None),
            ("finance_advanced.json", None),
        ] {
            assert_eq!(condition_of_name(name), want, "{name}");
        }
    }
}
