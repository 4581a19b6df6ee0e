//! Reading the answers of several models: samples files (or folders searched for them), every line checked,
//! each answer reduced to (model, variant, statement, language, correct).
//!
//! Lines are read with the samples reader of `eval score` ([`samples::flatten`], [`samples::sword_row`]:
//! `meta` merged over the top level, the same required fields, the same [`SwordRow::correct`]), in batches
//! parsed in parallel and merged in file order, so the first bad line of a file is the one reported whatever
//! the thread count. On top of `eval score`'s checks: the language and strategy must be SWORD's, one
//! statement keeps one original, strategy and label across every file, a (model, variant) answers a statement
//! once per language, and a model comes from one input only.

use crate::core::error::{Error, IoContext, Result};
use crate::eval::parse::TrueFalse;
use crate::eval::samples;
use crate::eval::suites::sword::{SwordRow, LANGUAGES, STRATEGIES};
use crate::llm::jsonl::{self, Pos};
use rayon::prelude::*;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

/// Lines parsed per parallel batch (≈ 0.5 KB each in `eval run`'s samples: ≈ 30 MB of text per batch).
const BATCH_LINES: usize = 1 << 16;

/// One statement (original triple or distortion), shared by every model and language.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement {
    pub id: String,
    /// The original triple it derives from (the bootstrap's resampling unit).
    pub original: String,
    /// Index into [`STRATEGIES`].
    pub strategy: u8,
    pub label: bool,
}

/// One statement as one (model, variant) answered it, in every language it was asked in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Answered {
    /// Index into [`Data::statements`].
    pub statement: u32,
    /// Bit `l` set: asked in `LANGUAGES[l]`.
    pub asked: u8,
    /// Bit `l` set: answered correctly in `LANGUAGES[l]` (a subset of `asked`).
    pub correct: u8,
}

/// The answers of one (model, variant).
#[derive(Clone, Debug, Default)]
pub struct Group {
    pub model: String,
    pub variant: String,
    /// The input file it was read from.
    pub file: PathBuf,
    /// Sorted by statement index, one entry per statement.
    pub answered: Vec<Answered>,
    /// Answers per language: all, without a verdict (unparsed, scored wrong), without any answer (null).
    pub answers: [u64; 8],
    pub unparsed: [u64; 8],
    pub unanswered: [u64; 8],
}

/// Every answer read, by (model, variant).
#[derive(Clone, Debug, Default)]
pub struct Data {
    /// Sorted by (model, variant).
    pub groups: Vec<Group>,
    pub statements: Vec<Statement>,
    /// The samples files read, in the order given (folders expanded, sorted).
    pub files: Vec<PathBuf>,
    /// Files found in folders but left out because their answers are of another suite: (file, suite).
    pub skipped: Vec<(PathBuf, String)>,
    /// With `--benchmark`: the falsity tier of each statement (by index; `None` for ORG).
    pub tiers: Option<Vec<Option<crate::core::falsity::Tier>>>,
}

/// The samples files named by `paths`: a file as is; a folder searched (recursively, sorted, hidden entries
/// left out) for files named `samples.jsonl`. The same file named twice is read once.
pub fn discover(paths: &[PathBuf]) -> Result<Vec<(PathBuf, bool)>> {
    let mut out: Vec<(PathBuf, bool)> = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for p in paths {
        let meta = std::fs::metadata(p).at(p)?;
        let found: Vec<(PathBuf, bool)> = if meta.is_dir() {
            let mut v = Vec::new();
            walk(p, &mut v)?;
            v.sort();
            if v.is_empty() {
                return Err(Error::bad_input(p, "no samples.jsonl in this folder"));
            }
            v.into_iter().map(|f| (f, true)).collect()
        } else {
            vec![(p.clone(), false)]
        };
        for (f, searched) in found {
            let key = std::fs::canonicalize(&f).unwrap_or_else(|_| f.clone());
            if seen.insert(key) {
                out.push((f, searched));
            }
        }
    }
    Ok(out)
}

fn walk(dir: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    for e in std::fs::read_dir(dir).at(dir)? {
        let e = e.at(dir)?;
        let name = e.file_name();
        if name.to_string_lossy().starts_with('.') {
            continue;
        }
        let ty = e.file_type().at(e.path())?;
        if ty.is_dir() {
            walk(&e.path(), out)?;
        } else if name == "samples.jsonl" {
            out.push(e.path());
        }
    }
    Ok(())
}

/// One line reduced: (model, variant) and the answer, or the line's error.
struct Line {
    pos: Pos,
    key: (String, String),
    row: SwordRow,
    language: u8,
    strategy: u8,
    /// The line had no answer at all (null or missing), as opposed to an answer without a verdict.
    unanswered: bool,
}

/// The suite of a record, when it says one.
fn suite_of(o: &serde_json::Map<String, serde_json::Value>) -> Option<&str> {
    o.get("suite").and_then(serde_json::Value::as_str)
}

fn parse_line(path: &Path, pos: Pos, text: &str) -> Result<Line> {
    let v: serde_json::Value =
        serde_json::from_str(text).map_err(|e| pos.err(path, e.to_string()))?;
    let o = samples::flatten(v).ok_or_else(|| pos.err(path, "not a JSON object"))?;
    if let Some(s) = suite_of(&o).filter(|s| *s != "sword") {
        return Err(pos.err(path, format!("an answer of suite `{s}`, not SWORD")));
    }
    // Models are told apart by `model`: a line without one would become a model named "model" beside the
    // others (eval score, which reads one model's file, takes that default; compare does not).
    if o.get("model")
        .and_then(serde_json::Value::as_str)
        .is_none_or(|m| m.trim().is_empty())
    {
        return Err(pos.err(
            path,
            "no `model` (a non-empty string): eval compare tells the models apart by it",
        ));
    }
    let (key, row) = samples::sword_row(&o, path, pos.line)?;
    // The index of `value` among SWORD's `what` (its languages or strategies).
    let index = |what: &str, all: &[&str], value: &str| {
        all.iter()
            .position(|x| *x == value)
            .map(|i| i as u8)
            .ok_or_else(|| {
                pos.err(
                    path,
                    format!("unknown {what} `{value}` (SWORD's are {})", all.join(" ")),
                )
            })
    };
    let language = index("language", &LANGUAGES, &row.language)?;
    let strategy = index("strategy", &STRATEGIES, &row.strategy)?;
    let unanswered = o.get("answer").is_none_or(|a| a.is_null());
    Ok(Line {
        pos,
        key,
        row,
        language,
        strategy,
        unanswered,
    })
}

/// Where a statement was first seen: (file index, line).
type Seen = (usize, u64);

/// The reader's state across files.
struct Reader<'a> {
    variant: Option<&'a str>,
    files: Vec<PathBuf>,
    statements: Vec<Statement>,
    statement_seen: Vec<Seen>,
    statement_index: HashMap<String, u32>,
    /// Per (model, variant): the group and, per statement index, its position in `answered`.
    groups: BTreeMap<(String, String), (Group, HashMap<u32, usize>)>,
    /// The file each model came from (index into `files`).
    model_file: HashMap<String, usize>,
}

impl Reader<'_> {
    fn add(&mut self, file: usize, line: Line) -> Result<()> {
        let path = &self.files[file];
        if self.variant.is_some_and(|v| v != line.key.1) {
            return Ok(());
        }
        match self.model_file.get(&line.key.0) {
            Some(&f) if f != file => {
                return Err(line.pos.err(
                    path,
                    format!(
                        "model `{}` is also in {}: each model must come from one input (give one of them)",
                        line.key.0,
                        self.files[f].display()
                    ),
                ))
            }
            Some(_) => {}
            None => {
                self.model_file.insert(line.key.0.clone(), file);
            }
        }
        let r = &line.row;
        let strategy = line.strategy;
        let s = match self.statement_index.get(r.statement.as_str()) {
            Some(&s) => {
                let st = &self.statements[s as usize];
                if st.original != r.original || st.strategy != strategy || st.label != r.label {
                    let (f0, l0) = self.statement_seen[s as usize];
                    return Err(line.pos.err(
                        path,
                        format!(
                            "statement `{}` is (original `{}`, {}, label {}) here but (original `{}`, {}, label {}) at {} line {l0}",
                            r.statement, r.original, r.strategy, r.label, st.original,
                            STRATEGIES[st.strategy as usize], st.label, self.files[f0].display()
                        ),
                    ));
                }
                s
            }
            None => {
                let s = u32::try_from(self.statements.len())
                    .map_err(|_| line.pos.err(path, "more than 2^32 statements"))?;
                self.statements.push(Statement {
                    id: r.statement.clone(),
                    original: r.original.clone(),
                    strategy,
                    label: r.label,
                });
                self.statement_seen.push((file, line.pos.line));
                self.statement_index.insert(r.statement.clone(), s);
                s
            }
        };
        let (g, index) = self.groups.entry(line.key.clone()).or_insert_with(|| {
            (
                Group {
                    model: line.key.0.clone(),
                    variant: line.key.1.clone(),
                    file: path.clone(),
                    ..Group::default()
                },
                HashMap::new(),
            )
        });
        let at = *index.entry(s).or_insert_with(|| {
            g.answered.push(Answered {
                statement: s,
                asked: 0,
                correct: 0,
            });
            g.answered.len() - 1
        });
        let a = &mut g.answered[at];
        let bit = 1u8 << line.language;
        if a.asked & bit != 0 {
            return Err(line.pos.err(
                path,
                format!(
                    "a second answer of statement `{}` in `{}` for model `{}` ({}); each statement is asked once per language",
                    r.statement, r.language, line.key.0, line.key.1
                ),
            ));
        }
        a.asked |= bit;
        if r.correct() {
            a.correct |= bit;
        }
        let l = line.language as usize;
        g.answers[l] += 1;
        if r.answer == TrueFalse::Unparsed {
            g.unparsed[l] += 1;
        }
        if line.unanswered {
            g.unanswered[l] += 1;
        }
        Ok(())
    }
}

/// Read every samples file of `paths` (see [`discover`]), keeping only `variant` when given.
///
/// Errors (exit 2) name the file and the line: a line that is not JSON or not an object, a missing
/// `statement_id` / `strategy` / `language` or a `label` that is not a boolean (as `eval score`), a language or
/// strategy SWORD does not have, a statement whose original, strategy or label differs from an earlier line,
/// a second answer of one statement in one language, a model found in two inputs, a line of another suite in
/// a file given by name (a file found in a folder whose first answer is of another suite is skipped and
/// listed in [`Data::skipped`]). No answer at all, or two models without a statement in common, is an error
/// too.
pub fn read(paths: &[PathBuf], variant: Option<&str>) -> Result<Data> {
    let found = discover(paths)?;
    let mut rd = Reader {
        variant,
        files: Vec::new(),
        statements: Vec::new(),
        statement_seen: Vec::new(),
        statement_index: HashMap::new(),
        groups: BTreeMap::new(),
        model_file: HashMap::new(),
    };
    let mut skipped = Vec::new();
    for (path, searched) in found {
        if searched {
            if let Some(suite) = first_suite(&path)?.filter(|s| s != "sword") {
                skipped.push((path, suite));
                continue;
            }
        }
        rd.files.push(path.clone());
        let file = rd.files.len() - 1;
        let f = std::fs::File::open(&path).at(&path)?;
        let mut batch: Vec<(Pos, String)> = Vec::with_capacity(BATCH_LINES);
        let flush = |batch: &mut Vec<(Pos, String)>, rd: &mut Reader| -> Result<()> {
            let lines: Vec<Result<Line>> = batch
                .par_iter()
                .map(|(pos, text)| parse_line(&path, *pos, text))
                .collect();
            batch.clear();
            for l in lines {
                rd.add(file, l?)?;
            }
            Ok(())
        };
        jsonl::for_each_line(std::io::BufReader::new(f), &path, |pos, text| {
            batch.push((pos, text.to_string()));
            if batch.len() == BATCH_LINES {
                flush(&mut batch, &mut rd)?;
            }
            Ok(())
        })?;
        flush(&mut batch, &mut rd)?;
    }
    let groups: Vec<Group> = rd
        .groups
        .into_values()
        .map(|(mut g, _)| {
            g.answered.sort_unstable_by_key(|a| a.statement);
            g
        })
        .collect();
    if groups.is_empty() {
        let what = match variant {
            Some(v) => format!("no SWORD answer of variant `{v}` in the input"),
            None => "no SWORD answer in the input".to_string(),
        };
        let at = paths.first().cloned().unwrap_or_default();
        return Err(Error::bad_input(at, what));
    }
    for (i, a) in groups.iter().enumerate() {
        for b in &groups[i + 1..] {
            if common(&a.answered, &b.answered) == 0 {
                return Err(Error::bad_input(
                    &b.file,
                    format!(
                        "model `{}` ({}, {} statements, from {}) and model `{}` ({}, {} statements) have no statement in common: were they asked about the same SWORD build?",
                        a.model,
                        a.variant,
                        a.answered.len(),
                        a.file.display(),
                        b.model,
                        b.variant,
                        b.answered.len()
                    ),
                ));
            }
        }
    }
    Ok(Data {
        groups,
        statements: rd.statements,
        files: rd.files,
        skipped,
        tiers: None,
    })
}

/// The `suite` of the first non-blank line of a samples file (None when it says none, is empty or cannot be
/// read as JSON: the strict reader then reports it with its line).
fn first_suite(path: &Path) -> Result<Option<String>> {
    use std::io::BufRead;
    let f = std::fs::File::open(path).at(path)?;
    let mut r = std::io::BufReader::new(f);
    let mut buf = Vec::new();
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf).at(path)? == 0 {
            return Ok(None);
        }
        let line = String::from_utf8_lossy(&buf);
        if line.trim().is_empty() {
            continue;
        }
        return Ok(serde_json::from_str::<serde_json::Value>(&line)
            .ok()
            .and_then(samples::flatten)
            .and_then(|o| suite_of(&o).map(str::to_string)));
    }
}

/// Number of statements in both sorted lists.
pub fn common(a: &[Answered], b: &[Answered]) -> usize {
    let (mut i, mut j, mut n) = (0, 0, 0);
    while i < a.len() && j < b.len() {
        match a[i].statement.cmp(&b[j].statement) {
            std::cmp::Ordering::Less => i += 1,
            std::cmp::Ordering::Greater => j += 1,
            std::cmp::Ordering::Equal => {
                n += 1;
                i += 1;
                j += 1;
            }
        }
    }
    n
}
