//! Distortions: sample original triples and draw SS / OS / PSS / POS variants that are false.
//!
//! For each sampled original (S, P, O) (paper Table 1):
//! - **SS** replaces S by a random entity of the graph (any subject or object of the final triples);
//! - **OS** replaces O by a random entity of the graph;
//! - **PSS** replaces S by another subject of P (an entity that is the subject of P elsewhere);
//! - **POS** replaces O by another object of P.
//!
//! The replacement is never the original entity. A candidate is rejected (and another one drawn, up to
//! `max_attempts` draws) when any existence check says the variant may be true:
//! 1. `self_loop`: the variant's subject equals its object (reflexive statements are not reliably false);
//! 2. `exists` (SS/PSS): (S′, P, O′) is in the existence index (statements of every rank, plus the final
//!    triples);
//! 3. `subject_has_value` (OS/POS): S already has O′ among its values of P (multi-valued properties) — the
//!    same index lookup, counted under its own name because the subject is the original's;
//! 4. `symmetric`: P is symmetric and (O′, P, S′) exists;
//! 5. `inverse`: P has an inverse P′ (P1696 on either side) and (O′, P′, S′) exists;
//! 6. `transitive`: P is transitive and O′ is reachable from S′ through P-edges (also through reversed edges of
//!    P's inverses, and reversed P-edges when P is symmetric), searched breadth-first over the transitive
//!    statements; `transitive_bound`: the search visited `transitive_max_visits` nodes without an answer —
//!    rejected conservatively and counted.
//!
//! A variant without a valid replacement within the limit is dropped and counted by reason; it is never
//! emitted. Every emitted variant carries the cosine similarity (raw and centred) between the original and
//! the replacement embeddings. Each original uses its own ChaCha8 stream seeded from (seed, original index),
//! and results are collected in input order, so the output does not depend on the thread count.

pub mod carry;
pub mod config;
pub mod draw;
pub mod falsity;
pub mod ids;
pub mod probe;
pub mod sample;
pub mod similarity;
pub mod stage;
#[cfg(test)]
mod tests;

pub use self::config::DistortConfig;
pub use self::draw::{
    distort, distort_one, distort_with_index, draw_all, draw_variant, DistortOutput, InputSizes,
    OriginalResult, VariantOutcome,
};
pub use self::probe::{probe_json, probe_one, ProbeTally};
pub use self::sample::{sample_frame, sample_originals, PropertyWeight, SamplingFrame};
pub use self::similarity::{
    EmbeddingSimilarity, FnSimilarity, NoSimilarity, NpySimilarity, Similarity,
};
pub use self::stage::{DistortArgs, DistortStage};
pub use crate::core::records::{statement_id, Distortion, Role, Strategy};
pub use crate::kb::benchmark::differences;
pub use crate::kb::index::{
    Index, IndexBuilder, KnowledgeBase, Reach, Reason, SearchStats, Searches,
};
pub use crate::store::tables::distortions::{
    distortion_columns, distortions_schema, read_distortions, read_distortions_file,
    write_distortions, DISTORTIONS_FORMAT_VERSION,
};
