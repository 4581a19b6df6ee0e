//! Typed records shared between stages (what the Parquet artifacts hold, as Rust values).

use crate::core::ids::{Pid, Qid};
use serde::{Deserialize, Serialize};

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

/// Statement type: the original or one of the four distortions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Strategy {
    ORG,
    SS,
    OS,
    PSS,
    POS,
}

impl Strategy {
    /// All strategies in output order.
    pub const ALL: [Strategy; 5] = [
        Strategy::ORG,
        Strategy::SS,
        Strategy::OS,
        Strategy::PSS,
        Strategy::POS,
    ];
    /// The four distortions in draw order.
    pub const VARIANTS: [Strategy; 4] = [Strategy::SS, Strategy::OS, Strategy::PSS, Strategy::POS];

    /// `ORG`, `SS`, `OS`, `PSS`, `POS`.
    pub fn as_str(self) -> &'static str {
        match self {
            Strategy::ORG => "ORG",
            Strategy::SS => "SS",
            Strategy::OS => "OS",
            Strategy::PSS => "PSS",
            Strategy::POS => "POS",
        }
    }

    /// Parse `as_str`'s spelling.
    pub fn parse(s: &str) -> Option<Strategy> {
        Strategy::ALL.into_iter().find(|x| x.as_str() == s)
    }

    /// Which role the strategy replaces (`None` for ORG).
    pub fn role(self) -> Option<Role> {
        match self {
            Strategy::ORG => None,
            Strategy::SS | Strategy::PSS => Some(Role::Subject),
            Strategy::OS | Strategy::POS => Some(Role::Object),
        }
    }
}

/// Replaced role of a variant.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Role {
    Subject,
    Object,
}

impl Role {
    /// `subject` / `object`.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Subject => "subject",
            Role::Object => "object",
        }
    }
    /// Parse `as_str`'s spelling.
    pub fn parse(s: &str) -> Option<Role> {
        match s {
            "subject" => Some(Role::Subject),
            "object" => Some(Role::Object),
            _ => None,
        }
    }
}

/// One statement of the benchmark: an original (ORG) or an emitted variant.
#[derive(Clone, Debug, PartialEq)]
pub struct Distortion {
    /// `<original_id, 6 digits>-<strategy>`, e.g. `000042-PSS`; unique within a run.
    pub statement_id: String,
    /// Index of the original in the sample (0-based).
    pub original_id: u32,
    pub strategy: Strategy,
    pub subject: Qid,
    pub property: Pid,
    pub object: Qid,
    /// `None` for ORG.
    pub replaced_role: Option<Role>,
    /// The entity that was replaced (`None` for ORG).
    pub original_entity: Option<Qid>,
    /// The replacement (`None` for ORG).
    pub replacement_entity: Option<Qid>,
    /// Cosine of original and replacement embeddings (`None` for ORG or a missing embedding).
    pub cosine: Option<f32>,
    /// Same after subtracting the mean embedding.
    pub cosine_centred: Option<f32>,
    /// Candidate draws used (1 = first candidate accepted; 0 for ORG).
    pub attempts: u32,
    /// Rank of the original statement.
    pub original_rank: Rank,
    /// Wikidata GUID of the original statement (empty when unknown).
    pub original_statement_id: String,
    /// How sure the statement's "false" is (docs/falsity.md); `None` for ORG, and when extract's falsity tables
    /// are missing (a run folder of an older extract).
    pub falsity: Option<crate::core::falsity::Tier>,
}

impl Distortion {
    /// The (S, P, O) key.
    pub fn key(&self) -> (Qid, Pid, Qid) {
        (self.subject, self.property, self.object)
    }

    /// The three entities, in role order.
    pub fn entities(&self) -> [crate::core::ids::EntityId; 3] {
        use crate::core::ids::EntityId;
        [
            EntityId::Item(self.subject),
            EntityId::Property(self.property),
            EntityId::Item(self.object),
        ]
    }

    /// The original statement `t` itself, as the benchmark's row of `original_id` (strategy ORG, nothing
    /// replaced).
    pub fn original(original_id: u32, t: &Triple) -> Distortion {
        Distortion {
            statement_id: statement_id(original_id, Strategy::ORG),
            original_id,
            strategy: Strategy::ORG,
            subject: t.subject,
            property: t.property,
            object: t.object,
            replaced_role: None,
            original_entity: None,
            replacement_entity: None,
            cosine: None,
            cosine_centred: None,
            attempts: 0,
            original_rank: t.rank,
            original_statement_id: t.statement_id.clone(),
            falsity: None,
        }
    }
}

/// Statement id for an original index and strategy.
pub fn statement_id(original_id: u32, strategy: Strategy) -> String {
    format!("{original_id:06}-{}", strategy.as_str())
}
