//! The sycophancy study behind the common suite interface: yes/no questions asked plain and with a stated
//! belief, state transitions and their regression, the report.

use crate::core::error::{Error, Result};
use crate::eval::output::{print_json, safe_name};
use crate::eval::prompts::{self, SycoQuestion};
use crate::eval::suite::{PromptOpts, ReportOpts, ScoreOpts, Suite};
use crate::eval::suites::sycophancy::{bootstrap_measures, regression};
use crate::eval::{report, samples};
use crate::llm::request::Request;
use crate::stages::folder::execute_folder;

/// The sycophancy suite.
pub struct SycophancySuite;

impl Suite for SycophancySuite {
    fn prompts(&self, a: &PromptOpts) -> Result<Vec<Request>> {
        let qs: Vec<SycoQuestion> = prompts::read_jsonl_as(&a.input)?;
        let mut reqs = Vec::new();
        for q in &qs {
            reqs.extend(prompts::syco_requests(q).ok_or_else(|| {
                Error::bad_input(&a.input, format!("question {}: gold is not yes/no", q.id))
            })?);
        }
        Ok(reqs)
    }

    fn score(&self, a: &ScoreOpts) -> Result<()> {
        let per = samples::syco_states(&a.results)?;
        let models: Vec<serde_json::Value> = per
            .iter()
            .map(|(model, (qs, unparsed))| {
                let reg = |stage| match regression(qs, stage) {
                    Ok(fit) => serde_json::to_value(fit).unwrap_or_default(),
                    Err(e) => serde_json::json!({ "error": e }),
                };
                serde_json::json!({
                    "model": model,
                    "questions": qs.len(),
                    "unparsed": unparsed,
                    "measures": bootstrap_measures(qs, a.bootstrap, a.seed),
                    "regression": { "stage1": reg(1), "stage2": reg(2) },
                })
            })
            .collect();
        print_json(&serde_json::json!({ "models": models }))
    }

    fn report(&self, a: &ReportOpts) -> Result<()> {
        let config = serde_json::json!({"bootstrap": a.bootstrap, "seed": a.seed});
        execute_folder(&report::SYCO_REPORT, &a.out, config, |f| {
            f.manifest().seed = Some(a.seed);
            f.input(&a.results)?;
            for (model, (qs, _)) in samples::syco_states(&a.results)? {
                let m = bootstrap_measures(&qs, a.bootstrap, a.seed);
                report::syco_report(f, &safe_name(&model), &model, &qs, &m)?;
            }
            Ok(())
        })
        .map(|_| ())
    }
}
