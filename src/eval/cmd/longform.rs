//! AdversaRiskQA long form: `decompose-prompts` (atomic facts of each answer, JSON schema), `verify-prompts`
//! (a verdict per fact) and `collect-longform` (the authors' fact-check file layout).

use crate::core::error::Result;
use crate::eval::output::{print_json, write_requests};
use crate::eval::samples;
use crate::eval::suites::longform::factcheck;
use crate::stages::folder::execute_folder_writing;
use std::path::PathBuf;

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

/// Write the decomposition requests.
pub fn decompose(a: DecomposeArgs) -> Result<()> {
    let answers = factcheck::answered(&samples::read_jsonl(&a.samples)?, &a.samples)?;
    let reqs = factcheck::decompose_requests(&answers, a.format);
    crate::core::progress::log(format!(
        "decompose-prompts: {} of {} answers to decompose ({} missing or invalid)",
        reqs.len(),
        answers.len(),
        answers.len() - reqs.len()
    ));
    write_requests(&a.out, &reqs)
}

/// Write the verification requests.
pub fn verify(a: VerifyArgs) -> Result<()> {
    let answers = factcheck::answered(&samples::read_jsonl(&a.samples)?, &a.samples)?;
    let (decomposed, counts) = factcheck::decompositions(&samples::read_jsonl(&a.decomposed)?);
    let reqs = factcheck::verify_requests(&answers, &decomposed, a.api, a.format);
    crate::core::progress::log(format!(
        "verify-prompts: {} facts to check; decompositions {} strict, {} lenient, {} unreadable, {} missing",
        reqs.len(),
        counts.strict,
        counts.lenient,
        counts.failed,
        counts.missing
    ));
    write_requests(&a.out, &reqs)
}

/// Lay the long-form answers, facts and verdicts out as fact-check files, on the folder contract: `--out`
/// locked, the three samples files hashed, a file of an earlier collect of this model that this one did not
/// write removed (another model's files stay), `collect-longform.manifest.json` last.
pub fn collect(a: CollectLongformArgs) -> Result<()> {
    let writes = factcheck::collect_writes(&a.model)?;
    let answers = samples::read_jsonl(&a.samples)?;
    let decomposed = samples::read_jsonl(&a.decomposed)?;
    let verified = samples::read_jsonl(&a.verified)?;
    let config = serde_json::json!({ "model": a.model });
    let (_, s) = execute_folder_writing("collect-longform", writes, &a.out, config, |f| {
        for p in [&a.samples, &a.decomposed, &a.verified] {
            f.input(p)?;
        }
        let s = factcheck::collect(f, &answers, &a.samples, &decomposed, &verified, &a.model)?;
        f.count("answers", s.answers as u64);
        f.count("failed_answers", s.failed_answers as u64);
        f.count("facts", s.facts as u64);
        f.count("files", s.files.len() as u64);
        Ok(s)
    })?;
    print_json(&serde_json::to_value(&s).unwrap_or_default())
}
