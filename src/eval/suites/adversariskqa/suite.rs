//! AdversaRiskQA behind the common suite interface: its prompt files rendered as questions, published (judged)
//! result files re-scored.

use crate::core::error::{Error, Result};
use crate::eval::output::stdout_write;
use crate::eval::prompts;
use crate::eval::suite::{PromptOpts, ScoreOpts, Suite};
use crate::eval::suites::adversariskqa::{
    dataset_of, read_prompt_file, read_results_dir, score, Item,
};
use crate::llm::request::Request;
use std::path::{Path, PathBuf};

/// The AdversaRiskQA suite.
pub struct AdversariskqaSuite;

/// The items of every `<domain>_<difficulty>*.json` prompt file of `dir`, in file-name order (the long-form
/// suite asks about the same items).
pub fn prompt_items(dir: &Path) -> Result<Vec<Item>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| Error::io(dir, e))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.extension().is_some_and(|e| e == "json")
                && dataset_of(&p.file_name().unwrap_or_default().to_string_lossy()).is_some()
        })
        .collect();
    files.sort();
    if files.is_empty() {
        return Err(Error::bad_input(
            dir,
            "no <domain>_<difficulty>*.json prompt file in this folder",
        ));
    }
    let mut items = Vec::new();
    for f in files {
        items.extend(read_prompt_file(&f)?);
    }
    Ok(items)
}

impl Suite for AdversariskqaSuite {
    fn prompts(&self, a: &PromptOpts) -> Result<Vec<Request>> {
        Ok(prompt_items(&a.input)?
            .iter()
            .map(prompts::arqa_request)
            .collect())
    }

    fn score(&self, a: &ScoreOpts) -> Result<()> {
        let models = read_results_dir(&a.results)?;
        let scores = score(&models);
        if a.json {
            let mut s = serde_json::to_string_pretty(&scores)
                .map_err(|e| Error::Config(format!("serialise scores: {e}")))?;
            s.push('\n');
            return stdout_write(s.as_bytes());
        }
        let mut s =
            String::from("model\taccuracy_all\taccuracy_filtered\tinvalid\tmean_abs_delta_all\n");
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
