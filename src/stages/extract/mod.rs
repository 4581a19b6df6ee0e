//! `sword extract`: stream a Wikidata JSON dump into labelled entities, triples, the existence index, property
//! metadata and the statements of transitive properties (Parquet), plus `extract.manifest.json`.
//!
//! One streaming pass (`dump::read_dump`, chunks parsed in parallel, merged in input order) keeps
//! - every labelled entity (labelled = a non-empty label in every configured language, or a `mul` label for
//!   the languages listed in `mul_fallback`),
//! - every property's metadata,
//! - the item→item statements of labelled subjects (candidates), and the item→item statements of presumed
//!   transitive properties (`transitive_seed`) whatever their subject;
//!
//! then a join keeps the candidates whose object is labelled: `statements.parquet` (all ranks, the existence
//! index; property labelled or an inverse partner of a labelled property, see [`index_properties`]) and
//! `triples.parquet` (property labelled, deprecated out, one row per (S, P, O) with the best rank).
//! `transitive.parquet` holds every kept statement whose property turned out transitive (P31 Q18647515).

#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

pub mod cand;
pub mod config;
pub mod constraints;
pub mod counts;
pub mod falsity;
pub mod join;
pub mod keep;
pub mod shard;
pub mod spill;
pub mod stage;
mod write;

pub use self::cand::{Cand, StmtId};
pub use self::config::{Config, UnlabelledStatements};
pub use self::counts::{BadLine, Counts};
pub use self::join::{index_properties, join, JoinCounts, Joined, Out, State};
pub use self::keep::{handle_line, work_chunk, Acc, Part, Rules};
pub use self::stage::*;
