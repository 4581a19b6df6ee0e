//! How sure a false statement's "false" is (docs/falsity.md): `certain` when Wikidata's own constraints or a
//! `novalue` statement rule it out, `likely` when the subject has another value for the property, `open` when
//! nothing is recorded (an unrecorded truth cannot be told from a falsehood).
//!
//! This module holds the records the stages share: the tier, the constraints as the rule reads them, and the
//! counts of what the rule ignores. `stages::extract::constraints` reads the property-constraint statements
//! (P2302) of a property entity's line; `stages::distort::falsity` holds what the rule needs about items
//! (values, statements without a value, P31/P279, the subjects of distinct-values properties) and gives the
//! tier of a statement.
//!
//! Two readings that share no code with this module check it: `scripts/falsity-oracle` (a Python reading of a
//! raw dump) and `synth::Truth::falsity` (the generator's record of what it wrote).

use crate::core::ids::{Pid, Qid};
use serde::{Deserialize, Serialize};

/// How sure a false statement's "false" is, weakest first (so `max` and `>=` compare strength).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Tier {
    /// Nothing says the subject has any value for the property: possibly an unrecorded truth.
    Open,
    /// The subject has a value (or an unknown value) for the property, and nothing rules this one out.
    Likely,
    /// Ruled out by a `novalue` statement or a property constraint the statement breaks.
    Certain,
}

impl Tier {
    /// Every tier, weakest first.
    pub const ALL: [Tier; 3] = [Tier::Open, Tier::Likely, Tier::Certain];

    /// `open`, `likely`, `certain`.
    pub fn as_str(self) -> &'static str {
        match self {
            Tier::Open => "open",
            Tier::Likely => "likely",
            Tier::Certain => "certain",
        }
    }

    /// Parse [`Tier::as_str`]'s spelling.
    pub fn parse(s: &str) -> Option<Tier> {
        Tier::ALL.into_iter().find(|t| t.as_str() == s)
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The constraint types that decide tiers.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Kind {
    /// Q19474404: the subject has one value.
    SingleValue,
    /// Q21502410: no two subjects share a value.
    DistinctValues,
    /// Q21503250: the subject is of one of the classes.
    SubjectType,
    /// Q21510865: the value is of one of the classes.
    ValueType,
}

impl Kind {
    pub const ALL: [Kind; 4] = [
        Kind::SingleValue,
        Kind::DistinctValues,
        Kind::SubjectType,
        Kind::ValueType,
    ];

    /// The constraint type's item.
    pub fn qid(self) -> Qid {
        Qid(match self {
            Kind::SingleValue => 19474404,
            Kind::DistinctValues => 21502410,
            Kind::SubjectType => 21503250,
            Kind::ValueType => 21510865,
        })
    }

    /// `single_value`, `distinct_values`, `subject_type`, `value_type`.
    pub fn as_str(self) -> &'static str {
        match self {
            Kind::SingleValue => "single_value",
            Kind::DistinctValues => "distinct_values",
            Kind::SubjectType => "subject_type",
            Kind::ValueType => "value_type",
        }
    }

    /// Parse [`Kind::as_str`]'s spelling.
    pub fn parse(s: &str) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// The type of a constraint item, if it is one of the four.
    pub fn of(q: Qid) -> Option<Kind> {
        Kind::ALL.into_iter().find(|k| k.qid() == q)
    }

    /// A type constraint (classes and relation).
    pub fn is_type(self) -> bool {
        matches!(self, Kind::SubjectType | Kind::ValueType)
    }
}

/// The relation of a type constraint (P2309): which statements of the entity are checked against the classes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub enum Relation {
    /// Q21503252 (the default): P31.
    Instance,
    /// Q21514624: P279.
    Subclass,
    /// Q30208840: P31 and P279.
    InstanceOrSubclass,
}

impl Relation {
    pub const ALL: [Relation; 3] = [
        Relation::Instance,
        Relation::Subclass,
        Relation::InstanceOrSubclass,
    ];

    /// The relation's item.
    pub fn qid(self) -> Qid {
        Qid(match self {
            Relation::Instance => 21503252,
            Relation::Subclass => 21514624,
            Relation::InstanceOrSubclass => 30208840,
        })
    }

    /// `instance`, `subclass`, `instance_or_subclass`.
    pub fn as_str(self) -> &'static str {
        match self {
            Relation::Instance => "instance",
            Relation::Subclass => "subclass",
            Relation::InstanceOrSubclass => "instance_or_subclass",
        }
    }

    /// Parse [`Relation::as_str`]'s spelling.
    pub fn parse(s: &str) -> Option<Relation> {
        Relation::ALL.into_iter().find(|r| r.as_str() == s)
    }

    /// (looks at P31, looks at P279).
    pub fn looks_at(self) -> (bool, bool) {
        match self {
            Relation::Instance => (true, false),
            Relation::Subclass => (false, true),
            Relation::InstanceOrSubclass => (true, true),
        }
    }
}

/// One live constraint statement of the four types, as the rule reads it (a row of `constraints.parquet`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Constraint {
    pub property: Pid,
    pub kind: Kind,
    /// The GUID of the P2302 statement (empty when it has none).
    pub statement_id: String,
    /// Has a usable separator (P4155): never applied.
    pub separator: bool,
    /// Subjects it does not apply to (P2303), sorted, distinct.
    pub exceptions: Vec<Qid>,
    /// Type constraints: the classes (P2308), sorted, distinct; empty otherwise.
    pub classes: Vec<Qid>,
    /// Type constraints: the relation; `None` otherwise.
    pub relation: Option<Relation>,
}

/// What a reader of the constraint statements and the P279 graph counted, under the names
/// `scripts/falsity-oracle --summary` uses (the extract manifest's `extra.falsity`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Summary {
    /// Live constraint statements of the four types that decide tiers.
    pub constraints: u64,
    /// Of which per type: `single_value`, `distinct_values`, `subject_type`, `value_type`.
    pub constraints_by_kind: std::collections::BTreeMap<String, u64>,
    /// Live constraint statements of other types (symmetric, format, …): they decide nothing.
    pub constraints_other_kind: u64,
    /// Deprecated constraint statements: ignored.
    pub constraints_deprecated: u64,
    /// Constraints with a separator (P4155): kept, never applied.
    pub constraints_with_separator: u64,
    /// Constraints with exceptions (P2303).
    pub constraints_with_exceptions: u64,
    /// Bad input, counted and ignored: a P2302 statement whose main snak is not an item.
    pub bad_constraint_without_type: u64,
    /// A type constraint without a usable class (P2308).
    pub bad_constraint_without_classes: u64,
    /// A type constraint whose relation (P2309) is none of the three, or two different ones.
    pub bad_constraint_unknown_relation: u64,
    /// Qualifier snaks without a usable value (each ignored).
    pub bad_qualifier_without_value: u64,
    /// Cycles of the P279 graph (strongly connected sets of more than one item, or an item that is its own
    /// P279 value): counted; the closure ends on them.
    pub p279_cycles: u64,
}

impl Summary {
    /// A summary with every constraint type at zero (so the keys are always there).
    pub fn new() -> Summary {
        let mut s = Summary::default();
        for k in Kind::ALL {
            s.constraints_by_kind.insert(k.as_str().to_string(), 0);
        }
        s
    }

    /// Add `other`'s counts.
    pub fn add(&mut self, other: &Summary) {
        self.constraints += other.constraints;
        for (k, v) in &other.constraints_by_kind {
            *self.constraints_by_kind.entry(k.clone()).or_default() += v;
        }
        self.constraints_other_kind += other.constraints_other_kind;
        self.constraints_deprecated += other.constraints_deprecated;
        self.constraints_with_separator += other.constraints_with_separator;
        self.constraints_with_exceptions += other.constraints_with_exceptions;
        self.bad_constraint_without_type += other.bad_constraint_without_type;
        self.bad_constraint_without_classes += other.bad_constraint_without_classes;
        self.bad_constraint_unknown_relation += other.bad_constraint_unknown_relation;
        self.bad_qualifier_without_value += other.bad_qualifier_without_value;
        self.p279_cycles += other.p279_cycles;
    }
}

/// Item ids as the artifacts write lists of them: comma-separated, in order (`Q5,Q43229`).
pub fn join_ids(ids: &[Qid]) -> String {
    let mut out = String::new();
    for (i, q) in ids.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&q.to_string());
    }
    out
}

/// The inverse of [`join_ids`]; `None` when an element is not an item id.
pub fn split_ids(s: &str) -> Option<Vec<Qid>> {
    if s.is_empty() {
        return Some(Vec::new());
    }
    s.split(',').map(Qid::parse).collect()
}

/// A row of `values.parquet`: what a labelled item states for a labelled item-datatype property.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SubjectValues {
    pub subject: Qid,
    pub property: Pid,
    /// Distinct live item values (any item, whatever its labels, in the dump or not).
    pub values: u32,
    /// A live `somevalue` statement.
    pub somevalue: bool,
    /// A live `novalue` statement.
    pub novalue: bool,
}

/// A row of `types.parquet`: a live P31 or P279 value of an item (the statements the type checks and the P279
/// closure follow).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct TypeStatement {
    pub subject: Qid,
    pub property: Pid,
    pub object: Qid,
}

/// A row of `distinct.parquet`: some item has `object` as a live value of the distinct-values property
/// `property`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct DistinctValue {
    pub property: Pid,
    pub object: Qid,
}
