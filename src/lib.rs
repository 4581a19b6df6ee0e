//! `sword`: rebuild the SWORD benchmark from a Wikidata dump, and evaluate models on it and two sibling suites.
//!
//! The modules below are the crate's layers, listed bottom up: a module imports only from its own layer or a
//! lower one (`tests/it/modules.rs` reads this list and fails on an import from a lower layer to a higher
//! one, and on one between two stage folders).
//!
//! - [`core`]: errors and their exit codes, Q/P ids, the records the tables hold, settings loading, progress;
//! - [`store`]: the run folder (layout, atomic files, the lock, manifests) and every Parquet schema;
//! - [`dump`]: reading a dump (formats, parallel decompression, line framing, the parsers, the entity model);
//! - [`llm`]: the OpenAI-compatible client, the resumable answer log, Batch files;
//! - [`kb`]: the knowledge base the stages share (the existence index and its searches, the benchmark reader,
//!   revalidation's verdicts, the translation prompt); no stage;
//! - [`synth`]: the generator of realistic dumps, and of later versions of a benchmark's world;
//! - [`stages`]: the contract (`Stage`, the context that runs it), one folder per stage, `sword run`;
//! - [`eval`]: the evaluation suites and the `sword eval` subcommands.
//!
//! `main.rs` parses the command line and dispatches one line per subcommand. How the artifacts flow from the
//! dump to the scores: the diagram in docs/architecture.md ("Data flow").

// One group per layer (a blank line apart, so that rustfmt keeps the order), bottom up.
pub mod core;

pub mod store;

pub mod dump;

pub mod llm;

pub mod kb;

pub mod synth;

pub mod stages;

pub mod eval;

pub use crate::core::error::{Error, Result};
