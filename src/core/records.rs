//! Typed records shared between stages (what the Parquet artifacts hold, as Rust values).

use crate::core::ids::{Pid, Qid};

/// Statement rank in Wikidata. Ordered so that `max` picks the best rank.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
#[serde(rename_all = "lowercase")]
pub enum Rank {
    Deprecated,
    Normal,
    Preferred,
}

impl Rank {
    /// The dump's spelling: `preferred`, `normal`, `deprecated`.
    pub fn as_str(self) -> &'static str {
        match self {
            Rank::Deprecated => "deprecated",
            Rank::Normal => "normal",
            Rank::Preferred => "preferred",
        }
    }

    /// Parse the dump's spelling.
    pub fn parse(s: &str) -> Option<Rank> {
        match s {
            "deprecated" => Some(Rank::Deprecated),
            "normal" => Some(Rank::Normal),
            "preferred" => Some(Rank::Preferred),
            _ => None,
        }
    }
}

/// An item → property → item statement (or, in `triples.parquet`, the merge of all statements with the same
/// subject, property and object, carrying the best rank and that statement's id).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Triple {
    pub subject: Qid,
    pub property: Pid,
    pub object: Qid,
    pub rank: Rank,
    /// Wikidata statement GUID, e.g. `Q42$8AB2...`; empty when unknown.
    pub statement_id: String,
}

impl Triple {
    /// The (S, P, O) key.
    pub fn key(&self) -> (Qid, Pid, Qid) {
        (self.subject, self.property, self.object)
    }
}

/// A label in one language, and whether it came from the entity's `mul` ("default for all languages") label.
#[derive(Clone, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub struct Label {
    pub text: String,
    pub from_mul: bool,
}

/// One labelled entity of `entities.parquet` (an item or a property labelled in every configured language).
/// `labels[i]` and `descriptions[i]` belong to the i-th configured language (the languages are recorded in the
/// column names `label_<lang>` and in the extract manifest).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct EntityRecord {
    pub id: crate::core::ids::EntityId,
    pub labels: Vec<Label>,
    pub descriptions: Vec<Option<String>>,
    /// Number of sitelinks (Wikipedia and sister-project pages): a popularity signal; Q42 has ≈ 150.
    pub sitelinks: u32,
    pub lastrevid: Option<u64>,
    /// ISO 8601 time of the last edit, as in the dump (`2015-11-01T12:00:00Z`).
    pub modified: Option<String>,
}

/// Metadata of a property entity (`properties.parquet`), kept for every property in the dump.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct PropertyRecord {
    pub id: Pid,
    /// Wikibase datatype (`wikibase-item`, `string`, `time`, ...).
    pub datatype: String,
    /// Label per configured language, `None` where missing (after `mul` fallback).
    pub labels: Vec<Option<Label>>,
    /// P31 has Q18647515 (transitive property).
    pub transitive: bool,
    /// P31 has Q18647518 (symmetric property), or a P2302 property-constraint Q21510862 (symmetric constraint).
    pub symmetric: bool,
    /// Values of P1696 (inverse property), sorted.
    pub inverse: Vec<Pid>,
}
