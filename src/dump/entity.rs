//! The entity of one dump line as the extract stage reads it: a small borrowed [`Entity`] (type, id, the labels
//! and descriptions of the configured languages, the sitelink count, the statements' claim keys, ranks, ids
//! and item values), and what a line is ([`Line`]: an entity or a frame line `[`, `]`, blank). The parsers
//! that make one are in the `line` module beside this one.

use crate::core::ids::{Pid, Qid};
use crate::core::records::Rank;
use std::borrow::Cow;

/// simd-json's reusable parse buffers, as [`parse_entity`] takes them.
pub use simd_json::Buffers;

/// The languages whose labels and descriptions are kept.
#[derive(Clone, Debug)]
pub struct Langs {
    /// Configured languages, in output order.
    pub langs: Vec<String>,
}

impl Langs {
    /// Index of `lang` among the configured languages.
    #[inline]
    pub(crate) fn index(&self, lang: &str) -> Option<usize> {
        self.langs.iter().position(|l| l == lang)
    }

    /// The same for a raw key (no escapes).
    #[inline]
    pub(crate) fn index_bytes(&self, lang: &[u8]) -> Option<usize> {
        self.langs.iter().position(|l| l.as_bytes() == lang)
    }
}

/// Entity type from the `type` key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Kind<'a> {
    Item,
    Property,
    /// `lexeme`, `form`, `sense`, `mediainfo`, `entity-schema`, ...: skipped and counted.
    Other(Cow<'a, str>),
}

/// The value a statement's main snak points to: an item or a property, or no value at all (`somevalue`: some
/// unknown value; `novalue`: none), which the falsity tier reads (docs/falsity.md).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntityValue {
    Item(Qid),
    Property(Pid),
    SomeValue,
    NoValue,
}

/// One statement whose main snak is an item or property value, `somevalue` or `novalue`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement<'a> {
    /// The claim key ("P31").
    pub property: Cow<'a, str>,
    /// `None` when the rank is missing or unknown (counted; treated as normal by the caller).
    pub rank: Option<Rank>,
    /// Statement GUID.
    pub id: Option<Cow<'a, str>>,
    pub value: EntityValue,
}

/// Counts of snak shapes seen in one entity (summed into the manifest).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SnakCounts {
    /// Main snaks with `snaktype: value`.
    pub value: u64,
    pub somevalue: u64,
    pub novalue: u64,
    /// Main snaks whose `datatype` is not one this crate knows (kept if the value is an item anyway).
    pub unknown_datatype: u64,
    /// Entity values given only by `numeric-id` (no `id`; dumps before 2016).
    pub numeric_id_only: u64,
    /// Entity values that are not items or properties (lexemes, forms, senses, schemas).
    pub other_entity_value: u64,
    /// Entity values with neither a usable `id` nor `numeric-id`.
    pub bad_entity_value: u64,
    /// Statements without a (known) rank.
    pub bad_rank: u64,
}

/// What the extract stage reads from one entity line.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Entity<'a> {
    pub kind: Option<Kind<'a>>,
    pub id: Option<Cow<'a, str>>,
    /// Label per configured language (`None` when absent); empty strings are kept as given.
    pub labels: Vec<Option<Cow<'a, str>>>,
    /// The `mul` ("default for all languages") label.
    pub mul_label: Option<Cow<'a, str>>,
    pub descriptions: Vec<Option<Cow<'a, str>>>,
    pub sitelinks: u32,
    pub lastrevid: Option<u64>,
    pub modified: Option<Cow<'a, str>>,
    /// Property datatype (property entities).
    pub datatype: Option<Cow<'a, str>>,
    pub statements: Vec<Statement<'a>>,
    pub snaks: SnakCounts,
    /// `"labels":[]` (or descriptions / sitelinks) written as an array.
    pub terms_as_array: bool,
    /// `"claims":[]` written as an array.
    pub claims_as_array: bool,
    /// No `claims` key at all.
    pub claims_missing: bool,
}

/// Wikibase datatypes this crate knows (others are counted as unknown, never an error).
pub const KNOWN_DATATYPES: &[&str] = &[
    "wikibase-item",
    "wikibase-property",
    "wikibase-lexeme",
    "wikibase-form",
    "wikibase-sense",
    "string",
    "external-id",
    "time",
    "quantity",
    "monolingualtext",
    "globe-coordinate",
    "commonsMedia",
    "url",
    "math",
    "geo-shape",
    "tabular-data",
    "musical-notation",
    "entity-schema",
];

// ---- small helpers -------------------------------------------------------------------------------------

/// What one dump line is.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per line, never stored
pub enum Line<'a> {
    /// Blank, `[` or `]`.
    Frame(FrameKind),
    Entity(Entity<'a>),
}

/// Non-entity lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FrameKind {
    Blank,
    Open,
    Close,
}

/// Why a line could not be read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LineError {
    /// Counter name (`json`, `not_object`).
    pub kind: &'static str,
    pub message: String,
}

/// Trim whitespace (incl. `\r`) and the trailing comma of a dump line; returns the byte range kept.
pub fn trim_line(line: &[u8]) -> (usize, usize) {
    let mut start = 0;
    let mut end = line.len();
    while start < end && line[start].is_ascii_whitespace() {
        start += 1;
    }
    while end > start && line[end - 1].is_ascii_whitespace() {
        end -= 1;
    }
    if end > start && line[end - 1] == b',' {
        end -= 1;
        while end > start && line[end - 1].is_ascii_whitespace() {
            end -= 1;
        }
    }
    (start, end)
}

impl Line<'_> {
    /// The same line, owning its strings.
    pub fn into_owned(self) -> Line<'static> {
        match self {
            Line::Frame(k) => Line::Frame(k),
            Line::Entity(e) => Line::Entity(e.into_owned()),
        }
    }
}

fn own(c: Option<Cow<'_, str>>) -> Option<Cow<'static, str>> {
    c.map(|c| Cow::Owned(c.into_owned()))
}

impl Entity<'_> {
    /// Labelled in every configured language (the extract stage's rule): a non-empty label, or a non-empty `mul`
    /// label where `mul_ok` (one flag per configured language, from `extract.mul_fallback`) lets it stand in.
    pub fn labelled_in_all(&self, mul_ok: &[bool]) -> bool {
        let mul = self.mul_label.as_deref().is_some_and(|m| !m.is_empty());
        mul_ok.iter().enumerate().all(|(i, &ok)| {
            let own = self.labels.get(i).and_then(|l| l.as_deref());
            own.is_some_and(|t| !t.is_empty()) || (ok && mul)
        })
    }

    /// The kind an entity without `type` has by its id (the extract stage's rule): an item for a `Q…` id, a
    /// property for a `P…` one, `None` for anything else.
    pub fn kind_from_id(&self) -> Option<Kind<'static>> {
        match self.id.as_deref()?.as_bytes().first()? {
            b'Q' => Some(Kind::Item),
            b'P' => Some(Kind::Property),
            _ => None,
        }
    }

    /// An item: `type` says so, or there is no `type` and the id says so ([`Entity::kind_from_id`]).
    pub fn is_item(&self) -> bool {
        match &self.kind {
            Some(k) => *k == Kind::Item,
            None => self.kind_from_id() == Some(Kind::Item),
        }
    }

    /// The same entity, owning its strings.
    pub fn into_owned(self) -> Entity<'static> {
        Entity {
            kind: self.kind.map(|k| match k {
                Kind::Item => Kind::Item,
                Kind::Property => Kind::Property,
                Kind::Other(s) => Kind::Other(Cow::Owned(s.into_owned())),
            }),
            id: own(self.id),
            labels: self.labels.into_iter().map(own).collect(),
            mul_label: own(self.mul_label),
            descriptions: self.descriptions.into_iter().map(own).collect(),
            sitelinks: self.sitelinks,
            lastrevid: self.lastrevid,
            modified: own(self.modified),
            datatype: own(self.datatype),
            statements: self
                .statements
                .into_iter()
                .map(|s| Statement {
                    property: Cow::Owned(s.property.into_owned()),
                    rank: s.rank,
                    id: own(s.id),
                    value: s.value,
                })
                .collect(),
            snaks: self.snaks,
            terms_as_array: self.terms_as_array,
            claims_as_array: self.claims_as_array,
            claims_missing: self.claims_missing,
        }
    }
}
