//! `sword eval`: evaluate models on SWORD and on its two sibling suites (AdversaRiskQA, Chinese factual
//! sycophancy) with one runner and one scorer, reproducing each paper's measures.
//!
//! Modules: [`parse`] (answer parsers), [`adversariskqa`] (published-result re-scoring, F1@K), [`stats`]
//! (normal CDF, bootstrap, logistic regression with clustered errors).
//!
//! Independent of the pipeline stages: it reads files.

pub mod adversariskqa;
pub mod chain;
pub mod compare;
pub mod factcheck;
pub mod jsonl;
pub mod longform;
pub mod parse;
pub mod prompts;
pub mod report;
pub mod request;
pub mod runner;
pub mod samples;
pub mod secret;
pub mod stats;
pub mod sword;
pub mod syco;

use crate::error::{Error, Result};
use std::io::Write;
use std::path::PathBuf;

/// Command-line arguments.
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(clap::Subcommand, Debug)]
enum Cmd {
    /// Score model answers (AdversaRiskQA: re-score published, judged result files).
    Score(ScoreArgs),
    /// Render a suite's input files as chat requests (requests.jsonl).
    Prompts(PromptArgs),
    /// Ask an OpenAI-compatible endpoint every request (resumable), writing answers and samples. A flag
    /// given twice takes its last value (so `make` can add to EVAL_FLAGS).
    #[command(args_override_self = true)]
    Run(RunArgs),
    /// Offline mode: write the requests as OpenAI Batch input JSONL.
    BatchWrite(BatchWriteArgs),
    /// Offline mode: read OpenAI Batch output back into samples.jsonl / results.json.
    BatchRead(BatchReadArgs),
    /// Markdown + SVG report for SWORD or sycophancy samples.
    Report(ReportArgs),
    /// AdversaRiskQA: judge requests (fact, premise, question, answer) for answered samples.
    JudgePrompts(JudgePromptArgs),
    /// AdversaRiskQA: answers + judge outputs laid out as published result files (for `score`).
    Collect(CollectArgs),
    /// The report of `make eval`: translation text_ok shares, SWORD per language × strategy, other suites.
    ChainReport(chain::Args),
    /// AdversaRiskQA long form: decomposition requests (atomic facts, JSON schema) for the answered samples.
    DecomposePrompts(DecomposeArgs),
    /// AdversaRiskQA long form: one verification request per decomposed fact.
    VerifyPrompts(VerifyArgs),
    /// AdversaRiskQA long form: answers, facts and verdicts laid out as the authors' fact-check files.
    CollectLongform(CollectLongformArgs),
    /// SWORD: several models side by side (the paper's Figs. 2–5 and gap): figures.parquet/.csv, SVG
    /// figures, report.html and report.md.
    Compare(compare::Args),
}

/// `sword eval decompose-prompts`.
#[derive(clap::Args, Debug)]
pub struct DecomposeArgs {
    /// samples.jsonl of the long-form answers (requests from `prompts --suite adversariskqa-longform`).
    #[arg(long)]
    samples: PathBuf,
    /// How the JSON schema is sent: `json-schema` (OpenAI structured output), `json-object` (the schema
    /// inside a json_object response_format, for servers such as llama-cpp-python's that refuse
    /// json_schema) or `none` (the prompt alone; read leniently).
    #[arg(long, value_enum, default_value_t = factcheck::SchemaFormat::JsonSchema)]
    format: factcheck::SchemaFormat,
    /// Output requests JSONL.
    #[arg(long)]
    out: PathBuf,
}

/// `sword eval verify-prompts`.
#[derive(clap::Args, Debug)]
pub struct VerifyArgs {
    /// samples.jsonl of the long-form answers.
    #[arg(long)]
    samples: PathBuf,
    /// samples.jsonl of the decomposition run.
    #[arg(long)]
    decomposed: PathBuf,
    /// Where the facts are checked: a chat model from what it knows (`chat`, weaker than the paper's
    /// web-search agent) or the Responses API with the web_search tool (`responses`; run it with
    /// `eval run --api responses`).
    #[arg(long, value_enum, default_value_t = factcheck::VerifyApi::Chat)]
    api: factcheck::VerifyApi,
    /// With `--api chat`: how the JSON schema is sent (as for `decompose-prompts --format`). The Responses
    /// API always gets it as `text.format`.
    #[arg(long, value_enum, default_value_t = factcheck::SchemaFormat::JsonSchema)]
    format: factcheck::SchemaFormat,
    /// Output requests JSONL.
    #[arg(long)]
    out: PathBuf,
}

/// `sword eval collect-longform`.
#[derive(clap::Args, Debug)]
pub struct CollectLongformArgs {
    /// samples.jsonl of the long-form answers.
    #[arg(long)]
    samples: PathBuf,
    /// samples.jsonl of the decomposition run.
    #[arg(long)]
    decomposed: PathBuf,
    /// samples.jsonl of the verification run.
    #[arg(long)]
    verified: PathBuf,
    /// Model name (the folder under each condition).
    #[arg(long)]
    model: String,
    /// Output folder: adversarial/MODEL/*_adv.json, non_adversarial/MODEL/*_non_adv.json, collect.json.
    #[arg(long)]
    out: PathBuf,
}

fn write_requests(path: &std::path::Path, reqs: &[prompts::Request]) -> Result<()> {
    let mut text = String::new();
    for r in reqs {
        text.push_str(&serde_json::to_string(r).map_err(|e| Error::Config(e.to_string()))?);
        text.push('\n');
    }
    crate::artifact::write_atomic(path, |w| w.write_all(text.as_bytes()))
}

/// `sword eval report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// `sword` or `sycophancy`.
    #[arg(long, value_enum)]
    suite: Suite,
    /// samples.jsonl of a run.
    #[arg(long)]
    results: PathBuf,
    /// Report directory (one sub-folder per model, and per variant for SWORD).
    #[arg(long)]
    out: PathBuf,
    /// Bootstrap replicates.
    #[arg(long, default_value_t = 1000)]
    bootstrap: usize,
    /// Bootstrap seed.
    #[arg(long, default_value_t = 0)]
    seed: u64,
}

/// `sword eval judge-prompts`.
#[derive(clap::Args, Debug)]
pub struct JudgePromptArgs {
    /// samples.jsonl of an AdversaRiskQA run.
    #[arg(long)]
    samples: PathBuf,
    /// Output requests JSONL.
    #[arg(long)]
    out: PathBuf,
}

/// `sword eval collect`.
#[derive(clap::Args, Debug)]
pub struct CollectArgs {
    /// samples.jsonl of the AdversaRiskQA answers.
    #[arg(long)]
    samples: PathBuf,
    /// samples.jsonl of the judge run (its requests from `judge-prompts`).
    #[arg(long)]
    judged: PathBuf,
    /// Model name (sub-folder).
    #[arg(long)]
    model: String,
    /// Results directory (one sub-folder per model).
    #[arg(long)]
    out: PathBuf,
}

/// `sword eval prompts`.
#[derive(clap::Args, Debug)]
pub struct PromptArgs {
    /// Which suite.
    #[arg(long, value_enum)]
    suite: Suite,
    /// SWORD: translated statements (Parquet from `sword import-translations`, or JSONL with statement_id,
    /// language, text, optional original_id/strategy/label). AdversaRiskQA: a directory of
    /// `<domain>_<difficulty>*.json` prompt files. Sycophancy: JSONL of {id, question, gold, topic}.
    #[arg(long)]
    input: PathBuf,
    /// SWORD: the export's sword.parquet, joined on statement_id to fill original_id, strategy and label
    /// (the translations Parquet does not carry them).
    #[arg(long)]
    sword: Option<PathBuf>,
    /// SWORD: ask in the statement's language instead of the paper's English question.
    #[arg(long)]
    localized: bool,
    /// SWORD: also render the cross-suite variants (strong-confidence premise, stated user belief).
    #[arg(long)]
    cross_suite: bool,
    /// SWORD: also ask about statements whose translation failed its check (`text_ok` false); by default
    /// only checked-good (or unchecked) texts are asked.
    #[arg(long)]
    include_bad_text: bool,
    /// Output requests JSONL.
    #[arg(long)]
    out: PathBuf,
}

/// `sword eval run`.
#[derive(clap::Args, Debug)]
pub struct RunArgs {
    /// Requests JSONL from `sword eval prompts`.
    #[arg(long)]
    requests: PathBuf,
    /// Output directory (answers.jsonl resume log, samples.jsonl, results.json).
    #[arg(long)]
    out: PathBuf,
    /// Fail (exit 5, after writing the outputs) when a request is left without an answer (errors or
    /// --max-requests; an empty answer counts as answered): for make, so that an interrupted run is not taken as done.
    #[arg(long)]
    require_complete: bool,
    #[command(flatten)]
    cfg: runner::RunConfig,
}

/// `sword eval batch-write`.
#[derive(clap::Args, Debug)]
pub struct BatchWriteArgs {
    #[arg(long)]
    requests: PathBuf,
    #[arg(long)]
    model: String,
    #[arg(long, default_value_t = 0.0)]
    temperature: f64,
    #[arg(long, default_value_t = 512)]
    max_tokens: u32,
    /// Batch input JSONL to write.
    #[arg(long)]
    out: PathBuf,
}

/// `sword eval batch-read`.
#[derive(clap::Args, Debug)]
pub struct BatchReadArgs {
    #[arg(long)]
    requests: PathBuf,
    /// Batch output JSONL.
    #[arg(long)]
    batch_output: PathBuf,
    /// Model name recorded in the samples (scores are grouped by it).
    #[arg(long)]
    model: Option<String>,
    /// Output directory (samples.jsonl, results.json).
    #[arg(long)]
    out: PathBuf,
}

/// The three suites.
#[derive(clap::ValueEnum, Clone, Copy, Debug, PartialEq, Eq)]
pub enum Suite {
    Sword,
    Adversariskqa,
    Sycophancy,
    /// AdversaRiskQA long-form factuality: JSONL of per-answer fact counts {supported, not_supported,
    /// irrelevant, optional condition} (from a fact-checking step), scored as mean F1@K.
    Longform,
    /// AdversaRiskQA long-form factuality from fact-check files as the authors publish them (and as
    /// `collect-longform` writes them): a file or a folder; Mean F1@K per file and cell, adversarial −
    /// non-adversarial.
    AdversariskqaLongform,
}

/// `sword eval score`.
#[derive(clap::Args, Debug)]
pub struct ScoreArgs {
    /// Which suite the results belong to.
    #[arg(long, value_enum)]
    suite: Suite,
    /// AdversaRiskQA: directory with one sub-folder per model of `*<domain>_<difficulty>*.json` result files
    /// (files directly in it are grouped by their name prefix).
    #[arg(long)]
    results: PathBuf,
    /// Print JSON on stdout (default: a plain table for AdversaRiskQA; the other suites always print JSON).
    #[arg(long)]
    json: bool,
    /// Bootstrap replicates for the 95% intervals (SWORD: resampling original triples; sycophancy:
    /// resampling questions). Typical 1000–10000.
    #[arg(long, default_value_t = 1000)]
    bootstrap: usize,
    /// Seed of the bootstrap (replicate r uses a ChaCha8 stream seeded from (seed, r)).
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Long-form: K of F1@K, a whole number or `auto` (the median extracted-fact count over every answer;
    /// the paper's K is 8).
    #[arg(long, default_value = "8")]
    k: longform::K,
    /// adversariskqa-longform: also write longform.scores.json, report.md and f1_paired_bars.svg here.
    #[arg(long)]
    out: Option<PathBuf>,
}

/// Entry point from the binary.
pub fn cli(args: Args) -> Result<()> {
    match args.cmd {
        Cmd::Score(a) => score_cli(a),
        Cmd::Prompts(a) => prompts_cli(a),
        Cmd::Report(a) => report_cli(a),
        Cmd::ChainReport(a) => chain::run(&a),
        Cmd::Compare(a) => compare::run(&a),
        Cmd::DecomposePrompts(a) => {
            let answers = factcheck::answered(&samples::read_jsonl(&a.samples)?, &a.samples)?;
            let reqs = factcheck::decompose_requests(&answers, a.format);
            crate::progress::log(format!(
                "decompose-prompts: {} of {} answers to decompose ({} missing or invalid)",
                reqs.len(),
                answers.len(),
                answers.len() - reqs.len()
            ));
            write_requests(&a.out, &reqs)
        }
        Cmd::VerifyPrompts(a) => {
            let answers = factcheck::answered(&samples::read_jsonl(&a.samples)?, &a.samples)?;
            let (decomposed, counts) =
                factcheck::decompositions(&samples::read_jsonl(&a.decomposed)?);
            let reqs = factcheck::verify_requests(&answers, &decomposed, a.api, a.format);
            crate::progress::log(format!(
                "verify-prompts: {} facts to check; decompositions {} strict, {} lenient, {} unreadable, {} missing",
                reqs.len(),
                counts.strict,
                counts.lenient,
                counts.failed,
                counts.missing
            ));
            write_requests(&a.out, &reqs)
        }
        Cmd::CollectLongform(a) => {
            let s = factcheck::collect(
                &samples::read_jsonl(&a.samples)?,
                &a.samples,
                &samples::read_jsonl(&a.decomposed)?,
                &samples::read_jsonl(&a.verified)?,
                &a.model,
                &a.out,
            )?;
            print_json(&serde_json::to_value(&s).unwrap_or_default())
        }
        Cmd::JudgePrompts(a) => {
            let reqs = adversariskqa::judge_requests(&samples::read_jsonl(&a.samples)?);
            let mut text = String::new();
            for r in &reqs {
                text.push_str(&serde_json::to_string(r).map_err(|e| Error::Config(e.to_string()))?);
                text.push('\n');
            }
            crate::artifact::write_atomic(&a.out, |w| w.write_all(text.as_bytes()))
        }
        Cmd::Collect(a) => {
            let s = samples::read_jsonl(&a.samples)?;
            let j = samples::read_jsonl(&a.judged)?;
            adversariskqa::collect_results(&s, &j, &a.model, &a.out).map(|_| ())
        }
        Cmd::Run(a) => {
            let reqs: Vec<prompts::Request> = prompts::read_jsonl_as(&a.requests)?;
            let s = runner::run(&a.out, &reqs, &a.cfg)?;
            print_json(&serde_json::to_value(&s).unwrap_or_default())?;
            // Empty answers are the model's answer (scored as unparsed); errors and pending are not.
            let unanswered = s.errors + s.pending;
            if a.require_complete && unanswered > 0 {
                return Err(Error::Remote {
                    url: secret::redact_url(&a.cfg.base_url),
                    what: format!(
                        "{unanswered} of {} requests have no answer yet ({} errors, {} not attempted); rerun to resume",
                        s.requests, s.errors, s.pending
                    ),
                });
            }
            Ok(())
        }
        Cmd::BatchWrite(a) => {
            let reqs: Vec<prompts::Request> = prompts::read_jsonl_as(&a.requests)?;
            let text = runner::batch_lines(&reqs, &a.model, a.temperature, a.max_tokens);
            crate::artifact::write_atomic(&a.out, |w| w.write_all(text.as_bytes()))
        }
        Cmd::BatchRead(a) => {
            let reqs: Vec<prompts::Request> = prompts::read_jsonl_as(&a.requests)?;
            let s = runner::import_batch(&a.out, &reqs, &a.batch_output, a.model.as_deref())?;
            print_json(&serde_json::to_value(s).unwrap_or_default())
        }
    }
}

fn safe_name(s: &str) -> String {
    s.chars()
        .map(|c| {
            if c.is_alphanumeric() || c == '-' || c == '.' {
                c
            } else {
                '_'
            }
        })
        .collect()
}

fn report_cli(a: ReportArgs) -> Result<()> {
    match a.suite {
        Suite::Sword => {
            for ((model, variant), rows) in samples::sword_rows(&a.results)? {
                let m = sword::bootstrap_measures(&rows, a.bootstrap, a.seed);
                let dir = a.out.join(safe_name(&model)).join(safe_name(&variant));
                report::sword_report(&dir, &format!("{model} ({variant})"), &m)?;
            }
            Ok(())
        }
        Suite::Sycophancy => {
            for (model, (qs, _)) in samples::syco_states(&a.results)? {
                let m = syco::bootstrap_measures(&qs, a.bootstrap, a.seed);
                report::syco_report(&a.out.join(safe_name(&model)), &model, &qs, &m)?;
            }
            Ok(())
        }
        Suite::Adversariskqa | Suite::Longform | Suite::AdversariskqaLongform => Err(Error::Config(
            "report: AdversaRiskQA results are reported by `score` (JSON or table; long-form: --out DIR)"
                .into(),
        )),
    }
}

fn prompts_cli(a: PromptArgs) -> Result<()> {
    let mut reqs = Vec::new();
    match a.suite {
        Suite::Sword => {
            let mut items = prompts::read_sword_items(&a.input)?;
            if !a.include_bad_text {
                let before = items.len();
                items.retain(|it| it.text_ok != Some(false));
                if items.len() < before {
                    crate::progress::log(format!(
                        "sword: {} of {before} statements left out (text_ok false; --include-bad-text keeps them)",
                        before - items.len()
                    ));
                }
            }
            if let Some(p) = &a.sword {
                let missing = prompts::join_sword_metadata(&mut items, p)?;
                if missing > 0 {
                    eprintln!("sword: {missing} statements have no row in {}", p.display());
                }
            }
            let variants: &[prompts::SwordVariant] = if a.cross_suite {
                &[
                    prompts::SwordVariant::Plain,
                    prompts::SwordVariant::Premise,
                    prompts::SwordVariant::Belief,
                ]
            } else {
                &[prompts::SwordVariant::Plain]
            };
            for it in &items {
                for v in variants {
                    reqs.push(prompts::sword_request(it, a.localized, *v));
                }
            }
        }
        Suite::Adversariskqa | Suite::AdversariskqaLongform => {
            let mut files: Vec<PathBuf> = std::fs::read_dir(&a.input)
                .map_err(|e| Error::io(&a.input, e))?
                .filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| {
                    p.extension().is_some_and(|e| e == "json")
                        && adversariskqa::dataset_of(
                            &p.file_name().unwrap_or_default().to_string_lossy(),
                        )
                        .is_some()
                })
                .collect();
            files.sort();
            if files.is_empty() {
                return Err(Error::bad_input(
                    &a.input,
                    "no <domain>_<difficulty>*.json prompt file in this folder",
                ));
            }
            for f in files {
                for it in adversariskqa::read_prompt_file(&f)? {
                    if a.suite == Suite::Adversariskqa {
                        reqs.push(prompts::arqa_request(&it));
                    } else {
                        reqs.extend(factcheck::answer_requests(&it));
                    }
                }
            }
        }
        Suite::Longform => {
            return Err(Error::Config(
                "prompts: the long-form requests are `--suite adversariskqa-longform`".into(),
            ))
        }
        Suite::Sycophancy => {
            let qs: Vec<prompts::SycoQuestion> = prompts::read_jsonl_as(&a.input)?;
            for q in &qs {
                reqs.extend(prompts::syco_requests(q).ok_or_else(|| {
                    Error::bad_input(&a.input, format!("question {}: gold is not yes/no", q.id))
                })?);
            }
        }
    }
    write_requests(&a.out, &reqs)
}

fn stdout_write(bytes: &[u8]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(bytes)
        .and_then(|_| out.flush())
        .map_err(|e| Error::io("-", e))
}

fn score_cli(a: ScoreArgs) -> Result<()> {
    match a.suite {
        Suite::Adversariskqa => {
            let models = adversariskqa::read_results_dir(&a.results)?;
            let scores = adversariskqa::score(&models);
            if a.json {
                let mut s = serde_json::to_string_pretty(&scores)
                    .map_err(|e| Error::Config(format!("serialise scores: {e}")))?;
                s.push('\n');
                stdout_write(s.as_bytes())
            } else {
                let mut s = String::from(
                    "model\taccuracy_all\taccuracy_filtered\tinvalid\tmean_abs_delta_all\n",
                );
                let f = |x: Option<f64>| x.map_or("-".into(), |v| format!("{v:.2}"));
                for m in &scores.models {
                    s.push_str(&format!(
                        "{}\t{}\t{}\t{}\t{}\n",
                        m.model,
                        f(m.accuracy_all),
                        f(m.accuracy_filtered),
                        m.invalid,
                        f(m.mean_abs_delta_all)
                    ));
                }
                stdout_write(s.as_bytes())
            }
        }
        Suite::Sword => {
            let groups = samples::sword_rows(&a.results)?;
            let models: Vec<serde_json::Value> = groups
                .iter()
                .map(|((model, variant), rows)| {
                    let unparsed = rows
                        .iter()
                        .filter(|r| r.answer == parse::TrueFalse::Unparsed)
                        .count();
                    serde_json::json!({
                        "model": model,
                        "variant": variant,
                        "n": rows.len(),
                        "unparsed": unparsed,
                        "measures": sword::bootstrap_measures(rows, a.bootstrap, a.seed),
                    })
                })
                .collect();
            print_json(&serde_json::json!({ "models": models }))
        }
        Suite::AdversariskqaLongform => {
            let (files, ignored) = longform::discover(&a.results)?;
            let scores = longform::score(&files, ignored, a.k, a.bootstrap, a.seed);
            let mut json = serde_json::to_string_pretty(&scores)
                .map_err(|e| Error::Config(format!("serialise scores: {e}")))?;
            json.push('\n');
            if let Some(dir) = &a.out {
                longform::write_report(dir, &scores, &json)?;
            }
            stdout_write(json.as_bytes())
        }
        Suite::Longform => {
            let f = std::fs::File::open(&a.results).map_err(|e| Error::io(&a.results, e))?;
            let groups = longform::read_counts(std::io::BufReader::new(f), &a.results)?;
            print_json(&longform::score_counts(&groups, a.k))
        }
        Suite::Sycophancy => {
            let per = samples::syco_states(&a.results)?;
            let models: Vec<serde_json::Value> = per
                .iter()
                .map(|(model, (qs, unparsed))| {
                    let reg = |stage| match syco::regression(qs, stage) {
                        Ok(fit) => serde_json::to_value(fit).unwrap_or_default(),
                        Err(e) => serde_json::json!({ "error": e }),
                    };
                    serde_json::json!({
                        "model": model,
                        "questions": qs.len(),
                        "unparsed": unparsed,
                        "measures": syco::bootstrap_measures(qs, a.bootstrap, a.seed),
                        "regression": { "stage1": reg(1), "stage2": reg(2) },
                    })
                })
                .collect();
            print_json(&serde_json::json!({ "models": models }))
        }
    }
}

fn print_json(v: &serde_json::Value) -> Result<()> {
    let mut s =
        serde_json::to_string_pretty(v).map_err(|e| Error::Config(format!("serialise: {e}")))?;
    s.push('\n');
    stdout_write(s.as_bytes())
}
