//! The language-model client the translate stage and the evaluation share: requests ([`request`]), an
//! OpenAI-compatible endpoint asked with retries ([`client`]), resumable through an append-only answer log
//! ([`resume`]), the offline Batch files ([`batch`]), keys and URL passwords kept out of everything written or
//! printed ([`secret`]), and the JSON Lines reader every answer and request file goes through ([`jsonl`]).

pub mod batch;
pub mod client;
pub mod jsonl;
pub mod request;
pub mod resume;
pub mod secret;
