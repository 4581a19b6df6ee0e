//! The knowledge base the stages share, below them and itself no stage: what is known to be true and the
//! searches over it ([`index`]: the existence index, its guards, the reachability searches, the candidate
//! pools), the one reader of a published benchmark ([`benchmark`]: `sword.parquet` of formats 1–3 as
//! [`Distortion`](crate::core::records::Distortion) rows), the status of a benchmark's statement against a
//! newer dump ([`verdict`]), and the text of a statement in other languages ([`prompt`]).
//!
//! distort draws with the index and carries with the verdicts; revalidate judges with both; export, translate
//! and import-translations share the prompt and its request ids; `sword synth --later` reads a benchmark. A
//! stage folder imports from here, never from another stage folder (`tests/it/modules.rs` checks it). The
//! records themselves (`Distortion`, `Strategy`, `Triple`, …) live further down, in `core::records`, because
//! the Parquet schemas of `store` hold them.

pub mod benchmark;
pub mod index;
pub mod prompt;
pub mod verdict;

pub use self::benchmark::{original_of, OldBenchmark};
pub use self::index::{Index, IndexBuilder, KnowledgeBase, Reach, Reason, SearchStats, Searches};
pub use self::verdict::{NewFacts, Status, Verdict};
