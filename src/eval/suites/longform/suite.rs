//! The long-form factuality suites behind the common interface: per-answer fact counts (`--suite longform`)
//! and fact-check files as the authors publish them (`--suite adversariskqa-longform`, whose requests are the
//! long answers to the AdversaRiskQA items).

use crate::core::error::{Error, Result};
use crate::eval::output::{print_json, stdout_write};
use crate::eval::suite::{PromptOpts, ScoreOpts, Suite};
use crate::eval::suites::adversariskqa::suite::prompt_items;
use crate::eval::suites::longform::factcheck::answer_requests;
use crate::eval::suites::longform::{discover, read_counts, score, score_counts, write_report};
use crate::llm::request::Request;
use crate::stages::folder::execute_folder;

/// `--suite longform`: JSONL of per-answer fact counts, scored as mean F1@K.
pub struct CountsSuite;

/// `--suite adversariskqa-longform`: fact-check files, Mean F1@K per file and cell.
pub struct FactFilesSuite;

impl Suite for CountsSuite {
    fn prompts(&self, _: &PromptOpts) -> Result<Vec<Request>> {
        Err(Error::Config(
            "prompts: the long-form requests are `--suite adversariskqa-longform`".into(),
        ))
    }

    fn score(&self, a: &ScoreOpts) -> Result<()> {
        let f = std::fs::File::open(&a.results).map_err(|e| Error::io(&a.results, e))?;
        let groups = read_counts(std::io::BufReader::new(f), &a.results)?;
        print_json(&score_counts(&groups, a.k))
    }
}

impl Suite for FactFilesSuite {
    fn prompts(&self, a: &PromptOpts) -> Result<Vec<Request>> {
        Ok(prompt_items(&a.input)?
            .iter()
            .flat_map(answer_requests)
            .collect())
    }

    fn score(&self, a: &ScoreOpts) -> Result<()> {
        let (files, ignored) = discover(&a.results)?;
        let scores = score(&files, ignored, a.k, a.bootstrap, a.seed);
        let mut json = serde_json::to_string_pretty(&scores)
            .map_err(|e| Error::Config(format!("serialise scores: {e}")))?;
        json.push('\n');
        if let Some(dir) = &a.out {
            let config = serde_json::json!({"k": format!("{:?}", a.k), "bootstrap": a.bootstrap, "seed": a.seed});
            execute_folder(&super::report::COMMAND, dir, config, |f| {
                f.manifest().seed = Some(a.seed);
                for file in &files {
                    f.input(&file.path)?;
                }
                write_report(f, &scores, &json)
            })?;
        }
        stdout_write(json.as_bytes())
    }
}
