//! The two stages of this folder through the contract: `sword translate` ([`TranslateStage`], the work in
//! [`super::generate`]) and `sword import-translations` ([`ImportStage`], the work in [`super::import`]). Both
//! write `statements_text.parquet`, each declaring it, so the later one replaces it and neither removes it.

use super::generate::{self, Summary, TranslateArgs};
use super::import::{self, ImportArgs};
use crate::core::error::{Error, Result};
use crate::core::stdout::print_json;
use crate::stages::contract::{Context, Input, NoSettings, Stage};
use crate::store::layout::{
    self, Artifact, SWORD, TEXTS_GENERATED, TEXTS_IMPORTED, TRANSLATION_REQUESTS,
};
use crate::store::Manifest;
use std::path::Path;

/// The translate stage: `sword.parquet` → `statements_text.parquet`, asking an endpoint (the answer log
/// `translate/answers.jsonl` beside it makes a rerun resume).
#[derive(Clone, Copy, Debug, Default)]
pub struct TranslateStage;

impl Stage for TranslateStage {
    const NAME: &'static str = layout::TRANSLATE;
    const CONFIG_FILE: bool = false;
    const FORCE: bool = false;
    type Settings = NoSettings;
    type Args = TranslateArgs;
    type Outcome = Summary;

    /// `sword.parquet` as it is (it may come from elsewhere: a downloaded benchmark), and the template.
    fn inputs(&self, _: &NoSettings, args: &TranslateArgs) -> Vec<Input> {
        let mut v = vec![Input::Hashed(SWORD)];
        v.extend(args.template.clone().map(Input::File));
        v.extend(args.only.clone().map(Input::File));
        v
    }

    const WRITES: &'static [Artifact] = &[TEXTS_GENERATED];

    fn run(&self, cx: &mut Context, _: &NoSettings, args: &TranslateArgs) -> Result<Summary> {
        generate::run(cx, args)
    }

    /// Prints the summary as JSON on stdout; with `--require-complete`, a request left without an answer is
    /// then exit code 5 (the outputs and the manifest stay: a rerun resumes).
    fn done(&self, out: &Path, m: &Manifest, s: Summary, args: &TranslateArgs) -> Result<()> {
        crate::core::progress::log(self.summary(out, m));
        print_json(&s)?;
        if args.require_complete && s.unanswered > 0 {
            return Err(Error::Remote {
                url: crate::llm::secret::redact_url(&args.cfg.base_url),
                what: format!(
                    "{} of {} translation requests have no answer yet ({} errors, {} not attempted); rerun to resume",
                    s.unanswered, s.pairs, s.errors, s.pending
                ),
            });
        }
        Ok(())
    }

    fn summary(&self, _: &Path, m: &Manifest) -> String {
        format!(
            "translate: {} of {} pairs translated, {} text_ok, {} unanswered",
            m.count("translated"),
            m.count("pairs"),
            m.count("text_ok"),
            m.count("unanswered")
        )
    }
}

/// The import-translations stage: OpenAI Batch output → `statements_text.parquet` (checked against
/// `sword.parquet` and `translation_requests.jsonl` when they are in the run folder).
#[derive(Clone, Copy, Debug, Default)]
pub struct ImportStage;

impl Stage for ImportStage {
    const NAME: &'static str = layout::IMPORT_TRANSLATIONS;
    const CONFIG_FILE: bool = false;
    const FORCE: bool = false;
    type Settings = NoSettings;
    type Args = ImportArgs;
    type Outcome = ();

    fn inputs(&self, _: &NoSettings, args: &ImportArgs) -> Vec<Input> {
        vec![
            Input::File(args.batch_output.clone()),
            Input::HashedIfPresent(SWORD),
            Input::HashedIfPresent(TRANSLATION_REQUESTS),
        ]
    }

    const WRITES: &'static [Artifact] = &[TEXTS_IMPORTED];

    fn identity(&self, _: &NoSettings, args: &ImportArgs) -> serde_json::Value {
        serde_json::json!({ "batch_output": args.batch_output.to_string_lossy() })
    }

    fn run(&self, cx: &mut Context, _: &NoSettings, args: &ImportArgs) -> Result<()> {
        import::run(cx, &args.batch_output)
    }

    fn summary(&self, _: &Path, m: &Manifest) -> String {
        format!(
            "import-translations: {} translated, {} failed, {} missing",
            m.count("translated"),
            m.rejects.get("failed").copied().unwrap_or(0),
            m.rejects.get("missing").copied().unwrap_or(0)
        )
    }
}
