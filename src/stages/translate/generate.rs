//! `sword translate`: generate each statement's text in each language from an OpenAI-compatible endpoint,
//! through the evaluation runner ([`crate::llm::resume::ask_all`]: concurrency, retries with backoff, the
//! append-only answer log `RUN/translate/answers.jsonl` keyed by request, resume after a kill,
//! `--max-requests`, the API key from an environment variable, progress), and write
//! `RUN/statements_text.parquet` with the schema `import-translations` writes.
//!
//! The requests are those of `translation_requests.jsonl` (one per statement × language whose three labels
//! exist, `custom_id` `<statement_id>:<lang>`), rendered from `sword.parquet`'s labels with the paper's
//! prompt ([`crate::kb::prompt::DEFAULT_TEMPLATE`]) or a template file (`{language}`, `{subject}`, `{property}`, `{object}`).
//! Every answer is checked ([`super::check`]); `--retry-bad N` asks a failed one again up to N times, round
//! r with `seed` r (a new request key, so the log keeps both). The first answer that passes is kept, else
//! the last one, marked `text_ok` false with its reason. A request never answered has no row.
//!
//! `--only FILE` ([`only`]) translates again only the (statement, language) pairs a Parquet file lists
//! (`eval compare`'s `suspects.parquet`): each is asked as a new request (seed [`only::SEED`]), checked the
//! same way, and its row replaces the run's old one in `statements_text.parquet`; every other row stays.

use super::check::{self, Reason};
use super::import::{read_sources, read_texts_file, write_texts, Source, StatementText};
use crate::core::error::{Error, IoContext, Result};
use crate::kb::prompt::{custom_id, render, DEFAULT_TEMPLATE};
use crate::llm::client::RunConfig;
use crate::llm::request::{Message, Request};
use crate::llm::resume::{self as runner, RunSummary};
use crate::stages::contract::Context;
use crate::store::layout::{DISTORT, LINEAGE, SWORD, TEXTS_GENERATED, TRANSLATE};
use crate::store::tables;
use crate::store::tables::lineage::read_lineage;
use crate::store::{FileRef, Manifest};
use serde::Serialize;
use serde_json::{json, Map};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// Keep the rows of the first `n` originals (smallest original ids) with all their variants.
pub fn first_originals(rows: &[Source], n: Option<usize>) -> Vec<&Source> {
    let Some(n) = n else {
        return rows.iter().collect();
    };
    let keep: BTreeSet<u32> = rows
        .iter()
        .map(|r| r.original_id)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .take(n)
        .collect();
    rows.iter()
        .filter(|r| keep.contains(&r.original_id))
        .collect()
}

/// Flags of `sword translate` (it has no settings file: these are all given on the command line).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct TranslateArgs {
    /// Prompt template file (`{language}`, `{subject}`, `{property}`, `{object}`); default: the paper's.
    #[arg(long)]
    pub template: Option<PathBuf>,
    /// Translate only the first N originals (smallest original ids) with all their variants.
    #[arg(long)]
    pub originals: Option<usize>,
    /// Ask an answer that fails the check again, up to N times (round r with seed r).
    #[arg(long, default_value_t = 0)]
    pub retry_bad: u32,
    /// Translate again only the (statement_id, language) pairs of this Parquet file (e.g. the
    /// suspects.parquet of `sword eval compare`): new requests (seed 1000, retries 1000 + r), the same
    /// checks; their rows replace those of the run's statements_text.parquet, every other row is kept.
    #[arg(long, value_name = "PARQUET")]
    pub only: Option<PathBuf>,
    /// Fail (exit 5, after writing what was answered) when a request is left without an answer (errors or
    /// --max-requests): for make, so that an interrupted run is not taken as done.
    #[arg(long)]
    pub require_complete: bool,
    #[command(flatten)]
    pub cfg: RunConfig,
}

/// Counts of one `sword translate`.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    /// Statement × language pairs to translate (labels present in that language).
    pub pairs: usize,
    /// Pairs left out because a label is missing in that language.
    pub missing_label: usize,
    /// Pairs whose text was taken from the run carried from (a statement carried as `valid`: the same
    /// labels, so the same prompt), not asked.
    pub reused: usize,
    /// Requests over every round (first asks and retries).
    pub requests: usize,
    pub cached: usize,
    pub answered: usize,
    pub empty: usize,
    pub errors: usize,
    pub pending: usize,
    /// Responses from which the API key or the URL's password was scrubbed (the server echoed it).
    pub redacted: usize,
    /// Retry requests (rounds ≥ 1).
    pub retried: usize,
    pub prompt_tokens: u64,
    pub completion_tokens: u64,
    pub total_tokens: u64,
    /// Rows written (pairs with an answer).
    pub translated: usize,
    /// Pairs without any answer.
    pub unanswered: usize,
    pub text_ok: usize,
    /// Rows whose `<think>` block was stripped.
    pub think_stripped: usize,
    /// Rows by failing reason.
    pub reasons: BTreeMap<String, usize>,
    /// With `--only`: rows of the earlier statements_text.parquet replaced by a new translation.
    pub replaced: usize,
    /// Per language: pairs, translated, text_ok and the share text_ok / pairs.
    pub languages: BTreeMap<String, LangCounts>,
}

/// Counts of one language.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LangCounts {
    pub pairs: usize,
    pub translated: usize,
    pub text_ok: usize,
    /// text_ok / pairs (0 when there are no pairs).
    pub text_ok_share: f64,
}

struct Job<'a> {
    src: &'a Source,
    lang: &'a str,
    labels: [&'a str; 3],
    prompt: String,
}

fn request_of(job: &Job) -> Request {
    let mut meta = Map::new();
    meta.insert("statement_id".into(), json!(job.src.statement_id));
    meta.insert("language".into(), json!(job.lang));
    Request {
        id: custom_id(&job.src.statement_id, job.lang),
        suite: "translate".into(),
        meta,
        messages: vec![Message::new("user", job.prompt.clone())],
        body: Map::new(),
    }
}

fn add(total: &mut Summary, s: &RunSummary) {
    total.requests += s.requests;
    total.cached += s.cached;
    total.answered += s.answered;
    total.empty += s.empty;
    total.errors += s.errors;
    total.pending += s.pending;
    total.redacted += s.redacted;
}

/// Reusable texts by `custom_id`, and the files that said they are reusable.
type Reusable = (HashMap<String, StatementText>, Vec<FileRef>);

/// The texts a carried run can take from the run it was carried from, by `custom_id`, and the files that
/// said so (for the manifest): `None` unless the run has `lineage.parquet`, distort's manifest names the old
/// run (`extra.carry.from`), and that run has texts from `sword translate` with the same template. Only the
/// statements carried as `valid` (labels unchanged: the same prompt) whose old text passed the check.
fn reusable_texts(dir: &Path, template: &str) -> Result<Option<Reusable>> {
    let lineage_path = dir.join(LINEAGE.file);
    let dm = Manifest::path_in(dir, DISTORT);
    if !lineage_path.is_file() || !dm.is_file() {
        return Ok(None);
    }
    let Some(old) = Manifest::read(&dm)?.extra["carry"]["from"]
        .as_str()
        .map(PathBuf::from)
    else {
        return Ok(None);
    };
    let (texts, tm) = (
        old.join(TEXTS_GENERATED.file),
        Manifest::path_in(&old, TRANSLATE),
    );
    if !texts.is_file() || !tm.is_file() || Manifest::read(&tm)?.config["template"] != template {
        crate::core::progress::log(format!(
            "translate: no texts of {} from `sword translate` with this template to reuse",
            old.display()
        ));
        return Ok(None);
    }
    let valid: HashSet<String> = read_lineage(&lineage_path)?
        .into_iter()
        .filter(|l| l.action == "carried" && l.status == "valid")
        .map(|l| l.statement_id)
        .collect();
    let map = read_texts_file(&texts)?
        .into_iter()
        .filter(|t| t.text_ok == Some(true) && valid.contains(&t.statement_id))
        .map(|t| (t.custom_id.clone(), t))
        .collect();
    Ok(Some((
        map,
        vec![FileRef::of(&lineage_path)?, FileRef::of(&texts)?],
    )))
}

/// The work: render the prompts, ask (and ask again those that fail the check), write the texts.
pub(super) fn run(cx: &mut Context, args: &TranslateArgs) -> Result<Summary> {
    let dir = cx.dir().to_path_buf();
    let sword_path = cx.path(&SWORD);
    let sources = read_sources(&sword_path)?;
    let template = match &args.template {
        Some(p) => std::fs::read_to_string(p).at(p)?,
        None => DEFAULT_TEMPLATE.to_string(),
    };
    for k in ["{subject}", "{property}", "{object}"] {
        if !template.contains(k) {
            return Err(Error::Config(format!(
                "translation template has no {k} placeholder"
            )));
        }
    }
    let mut summary = Summary::default();
    let mut jobs: Vec<Job> = Vec::new();
    for src in first_originals(&sources.rows, args.originals) {
        for lang in &sources.languages {
            match src.labels_in(&sources.languages, lang) {
                Some(labels) => jobs.push(Job {
                    src,
                    lang,
                    labels,
                    prompt: render(&template, lang, labels),
                }),
                None => summary.missing_label += 1,
            }
        }
    }
    // `--only`: the listed pairs, each checked to be one of this run's.
    let earlier = match &args.only {
        Some(p) => {
            let pairs = super::only::read_pairs(p)?;
            super::only::retain(&mut jobs, |j| (&j.src.statement_id, j.lang), &pairs, p)?;
            Some(super::only::earlier_texts(&dir, cx)?)
        }
        None => None,
    };
    summary.pairs = jobs.len();
    // A carried run: the texts of statements carried as `valid` come from the old run, when it has them
    // for the same template and they passed the check.
    let mut reused_rows: Vec<StatementText> = Vec::new();
    let reusable = match earlier {
        Some(_) => None,
        None => reusable_texts(&dir, &template)?,
    };
    if let Some((reusable, inputs)) = reusable {
        cx.manifest().inputs.extend(inputs);
        jobs.retain(
            |job| match reusable.get(&custom_id(&job.src.statement_id, job.lang)) {
                Some(t) => {
                    reused_rows.push(StatementText {
                        original_id: Some(job.src.original_id.to_string()),
                        ..t.clone()
                    });
                    false
                }
                None => true,
            },
        );
    }
    summary.reused = reused_rows.len();
    let log = dir.join("translate").join("answers.jsonl");
    let mut cfg = args.cfg.clone();
    // best[j]: the kept (checked) answer and its usage key.
    let mut best: Vec<Option<check::Checked>> = vec![None; jobs.len()];
    let mut used_keys: Vec<String> = Vec::new();
    let mut answers_all = std::collections::HashMap::new();
    for round in 0..=args.retry_bad {
        let idx: Vec<usize> = if round == 0 {
            (0..jobs.len()).collect()
        } else {
            (0..jobs.len())
                .filter(|&j| best[j].as_ref().is_some_and(|c| !c.ok()))
                .collect()
        };
        if idx.is_empty() {
            break;
        }
        let reqs: Vec<Request> = idx.iter().map(|&j| request_of(&jobs[j])).collect();
        let seeds: Vec<Option<u64>> = match (round, args.only.is_some()) {
            (0, false) => Vec::new(),
            (r, false) => vec![Some(u64::from(r)); reqs.len()],
            (r, true) => vec![Some(super::only::SEED + u64::from(r)); reqs.len()],
        };
        let what = if round == 0 {
            "translate".to_string()
        } else {
            format!("translate retry {round}")
        };
        let a = runner::ask_all(&log, &reqs, &seeds, &cfg, &what)?;
        add(&mut summary, &a.summary);
        if round > 0 {
            summary.retried += reqs.len();
        }
        if let Some(m) = cfg.max_requests.as_mut() {
            *m = m.saturating_sub(a.summary.answered + a.summary.empty + a.summary.errors);
        }
        for (n, &j) in idx.iter().enumerate() {
            // An empty answer is the model's answer (checked as `empty`); an error is no answer.
            let answer = match a.answers.get(&a.keys[n]) {
                Some(line) => line.answer.as_deref().unwrap_or(""),
                None if a.empty.contains(&a.keys[n]) => "",
                None => continue,
            };
            let job = &jobs[j];
            let c = check::check(job.lang, answer, &job.prompt, job.labels);
            used_keys.push(a.keys[n].clone());
            best[j] = Some(c);
        }
        answers_all.extend(a.answers);
    }
    let mut tokens = RunSummary::default();
    runner::add_tokens(&mut tokens, &used_keys, &answers_all);
    summary.prompt_tokens = tokens.prompt_tokens;
    summary.completion_tokens = tokens.completion_tokens;
    summary.total_tokens = tokens.total_tokens;
    let mut rows = Vec::new();
    for (job, c) in jobs.iter().zip(&best) {
        let lc = summary.languages.entry(job.lang.to_string()).or_default();
        lc.pairs += 1;
        let Some(c) = c else {
            summary.unanswered += 1;
            continue;
        };
        lc.translated += 1;
        if c.ok() {
            lc.text_ok += 1;
            summary.text_ok += 1;
        }
        if c.think_stripped {
            summary.think_stripped += 1;
        }
        if let Some(r) = c.reason {
            *summary.reasons.entry(r.as_str().into()).or_default() += 1;
        }
        rows.push(StatementText {
            custom_id: custom_id(&job.src.statement_id, job.lang),
            statement_id: job.src.statement_id.clone(),
            language: job.lang.to_string(),
            text: c.text.clone(),
            original_id: Some(job.src.original_id.to_string()),
            strategy: Some(job.src.strategy.clone()),
            label: Some(job.src.label),
            text_ok: Some(c.ok()),
            text_reason: c.reason.map(|r| r.as_str().to_string()),
        });
    }
    for r in Reason::ALL {
        summary.reasons.entry(r.as_str().into()).or_default();
    }
    for lc in summary.languages.values_mut() {
        lc.text_ok_share = if lc.pairs == 0 {
            0.0
        } else {
            lc.text_ok as f64 / lc.pairs as f64
        };
    }
    for t in reused_rows {
        let lc = summary.languages.entry(t.language.clone()).or_default();
        lc.pairs += 1;
        lc.translated += 1;
        lc.text_ok += 1;
        summary.text_ok += 1;
        rows.push(t);
    }
    if let Some(old) = earlier {
        // The new rows replace their pairs' earlier ones; a pair left unanswered keeps its earlier row.
        let new: HashSet<String> = rows.iter().map(|r| r.custom_id.clone()).collect();
        summary.replaced = old.iter().filter(|t| new.contains(&t.custom_id)).count();
        rows.extend(old.into_iter().filter(|t| !new.contains(&t.custom_id)));
    }
    summary.translated = rows.len();
    rows.sort_by(|a, b| a.custom_id.cmp(&b.custom_id));
    let dest = cx.path(&TEXTS_GENERATED);
    let mut file = cx.create(&TEXTS_GENERATED)?;
    // The statements of an incomplete build (sword.parquet says `sword.complete = false`) stay marked.
    write_texts(
        &mut file,
        &rows,
        tables::file_is_complete(&sword_path)?,
        &dest,
    )?;
    file.commit()?;
    let m = cx.manifest();
    m.config = json!({
        "runner": args.cfg.redacted(),
        "template": template,
        "originals": args.originals,
        "retry_bad": args.retry_bad,
        "only": args.only.as_ref().map(|p| p.display().to_string()),
    });
    if let serde_json::Value::Object(o) = serde_json::to_value(&summary).unwrap_or_default() {
        for (k, v) in o {
            if let Some(n) = v.as_u64() {
                m.counts.insert(k, n);
            }
        }
    }
    m.extra = json!({ "reasons": summary.reasons, "languages": summary.languages, "reused": summary.reused });
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_template_is_the_export_prompt() {
        for lang in ["en", "fr", "ko", "ja"] {
            let labels = ["Paris", "capital of", "France"];
            assert_eq!(
                render(DEFAULT_TEMPLATE, lang, labels),
                crate::kb::prompt::prompt(
                    crate::kb::prompt::language_name(lang),
                    "Paris",
                    "capital of",
                    "France"
                )
            );
        }
    }

    #[test]
    fn render_is_one_pass() {
        assert_eq!(
            render(
                "{x} {subject}|{property}|{object} {language}{",
                "de",
                ["{object}", "p", "o"]
            ),
            "{x} {object}|p|o German{"
        );
    }

    fn src(o: u32, s: &str) -> Source {
        Source {
            statement_id: format!("{o:06}-{s}"),
            original_id: o,
            strategy: s.into(),
            label: s == "ORG",
            labels: vec![],
        }
    }

    #[test]
    fn first_originals_keeps_all_variants_of_the_smallest_ids() {
        let rows = vec![
            src(7, "ORG"),
            src(2, "ORG"),
            src(7, "SS"),
            src(2, "OS"),
            src(5, "ORG"),
        ];
        let ids = |v: Vec<&Source>| v.iter().map(|r| r.statement_id.clone()).collect::<Vec<_>>();
        assert_eq!(
            ids(first_originals(&rows, Some(2))),
            ["000002-ORG", "000002-OS", "000005-ORG"]
        );
        assert_eq!(first_originals(&rows, None).len(), 5);
        assert_eq!(first_originals(&rows, Some(0)).len(), 0);
    }
}
