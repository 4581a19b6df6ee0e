//! How sure a false statement's "false" is (docs/falsity.md): `certain` when Wikidata's own constraints or a
//! `novalue` statement rule it out, `likely` when the subject has another value for the property, `open` when
//! nothing is recorded (an unrecorded truth cannot be told from a falsehood).
//!
//! - [`constraint`] reads the property-constraint statements (P2302) of a property entity's line, with the
//!   qualifiers the rule needs, and counts what it must ignore;
//! - [`rule`] holds what the rule needs about items (values, statements without a value, P31/P279, the subjects
//!   of distinct-values properties) and gives the tier of a statement.
//!
//! Two readings that share no code with this module check it: `scripts/falsity-oracle` (a Python reading of a
//! raw dump) and `synth::Truth::falsity` (the generator's record of what it wrote).

use crate::ids::Qid;
use serde::{Deserialize, Serialize};

pub mod constraint;
pub mod rule;

pub use constraint::{read_property_line, Constraint, Kind, Relation};
pub use rule::{p279_cycles, Rule, RuleBuilder, Why};

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
