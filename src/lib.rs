//! `sword`: rebuild the SWORD benchmark from a Wikidata dump, and evaluate models on it and two sibling suites.
//!
//! ```text
//!  dump (.json/.gz/.bz2/.zst/-) ──extract──► entities, triples, statements, properties, transitive (Parquet)
//!                                              │
//!                         triples ──graph──► graph.csr ──walks──► walks.bin ──train──► embeddings.npy/.w2v
//!                                                                                          │
//!  triples, statements, properties, transitive, embeddings ──distort──► distortions.parquet
//!  entities, triples, distortions ──export──► sword.parquet, translation_requests.jsonl, report/
//!  translated statements, AdversaRiskQA files, sycophancy questions, model answers ──eval──► results
//! ```
//!
//! Each stage is a module with a pure, deterministic core over typed values and a `run` that reads its input
//! artifacts (checked against their manifests), writes its outputs atomically and then its manifest
//! (`artifact`). `main.rs` only parses arguments and dispatches to `<stage>::cli`.

pub mod core;
pub mod dump;
pub mod eval;
pub mod llm;
pub mod stages;
pub mod store;
pub mod synth;

pub use crate::core::error::{Error, Result};
