//! The statements' texts in every language: `sword translate` ([`generate`]) asks an OpenAI-compatible
//! endpoint, `sword import-translations` ([`import`]) reads OpenAI Batch output back; both write
//! `statements_text.parquet` and mark every text with the checks of [`check`].

pub mod check;
pub mod generate;
pub mod import;
pub mod only;
pub mod stage;

pub use self::stage::{ImportStage, TranslateStage};
