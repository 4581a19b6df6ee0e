//! SWORD behind the common suite interface: true/false questions on the translated statements, accuracy per
//! language × strategy with bootstrap intervals over originals, the report's heatmaps.

use crate::core::error::Result;
use crate::eval::output::{print_json, safe_name};
use crate::eval::parse::TrueFalse;
use crate::eval::prompts::{self, SwordVariant};
use crate::eval::suite::{PromptOpts, ReportOpts, ScoreOpts, Suite};
use crate::eval::suites::sword::bootstrap_measures;
use crate::eval::{report, samples};
use crate::llm::request::Request;
use crate::stages::folder::execute_folder;

/// The SWORD suite.
pub struct SwordSuite;

impl Suite for SwordSuite {
    fn prompts(&self, a: &PromptOpts) -> Result<Vec<Request>> {
        let mut items = prompts::read_sword_items(&a.input)?;
        if !a.include_bad_text {
            let before = items.len();
            items.retain(|it| it.text_ok != Some(false));
            if items.len() < before {
                crate::core::progress::log(format!(
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
        let variants: &[SwordVariant] = if a.cross_suite {
            &[
                SwordVariant::Plain,
                SwordVariant::Premise,
                SwordVariant::Belief,
            ]
        } else {
            &[SwordVariant::Plain]
        };
        let mut reqs = Vec::new();
        for it in &items {
            for v in variants {
                reqs.push(prompts::sword_request(it, a.localized, *v));
            }
        }
        Ok(reqs)
    }

    fn score(&self, a: &ScoreOpts) -> Result<()> {
        let groups = samples::sword_rows(&a.results)?;
        let models: Vec<serde_json::Value> = groups
            .iter()
            .map(|((model, variant), rows)| {
                let unparsed = rows
                    .iter()
                    .filter(|r| r.answer == TrueFalse::Unparsed)
                    .count();
                serde_json::json!({
                    "model": model,
                    "variant": variant,
                    "n": rows.len(),
                    "unparsed": unparsed,
                    "measures": bootstrap_measures(rows, a.bootstrap, a.seed),
                })
            })
            .collect();
        print_json(&serde_json::json!({ "models": models }))
    }

    fn report(&self, a: &ReportOpts) -> Result<()> {
        let config = serde_json::json!({"bootstrap": a.bootstrap, "seed": a.seed});
        execute_folder(&report::SWORD_REPORT, &a.out, config, |f| {
            f.manifest().seed = Some(a.seed);
            f.input(&a.results)?;
            for ((model, variant), rows) in samples::sword_rows(&a.results)? {
                let m = bootstrap_measures(&rows, a.bootstrap, a.seed);
                let dir = format!("{}/{}", safe_name(&model), safe_name(&variant));
                report::sword_report(f, &dir, &format!("{model} ({variant})"), &m)?;
            }
            Ok(())
        })
        .map(|_| ())
    }
}
