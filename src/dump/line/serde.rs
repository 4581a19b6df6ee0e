//! The serde path: one dump line → a small borrowed [`Entity`] through a hand-written serde visitor driven
//! by simd-json, reading only what the extract stage reads.
//!
//! The parser is a hand-written serde visitor driven by simd-json ([`parse_entity`]; the verdict on a raw line,
//! with and without the skim, is `parse_line` in the direct module, which calls this one). It reads the top-level
//! keys in any order and keeps: `type`, `id`, the labels and descriptions of the configured languages (plus `mul`),
//! the number of sitelinks (their content is skipped), `lastrevid`, `modified`, `datatype`, and for every statement
//! its claim key, rank, statement id and — when the main snak is a `wikibase-entityid` value — the item or property
//! it points to. Aliases, qualifiers, references, other languages and every other value are skipped with
//! `IgnoredAny`. Strings are `Cow`: simd-json unescapes in place, so `\uXXXX` escapes (surrogate pairs included)
//! arrive as borrowed, already-decoded text; other serde deserializers may hand owned strings.
//!
//! Quirks of real dumps handled here: `"labels":[]` / `"claims":[]` / `"sitelinks":[]` written as arrays
//! (empty maps of old PHP serialisers), missing `claims`, entity values with `numeric-id` but no `id`
//! (pre-2016), form/sense values with `id` but no `numeric-id`, `somevalue` / `novalue` snaks.

use crate::core::ids::{Pid, Qid};
use crate::core::records::Rank;
use crate::dump::entity::{
    Entity, EntityValue, FrameKind, Kind, Langs, Line, LineError, SnakCounts, Statement,
    KNOWN_DATATYPES,
};
use serde::de::{self, DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// `impl Deserialize for $ty` through a visitor `V` with the given methods (and `expecting` = `$what`), driven
/// by `Deserializer::$how`.
macro_rules! visited {
    ($ty:ty, $what:literal, $how:ident, { $($methods:tt)* }) => {
        impl<'de> de::Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
                struct V;
                impl<'de> Visitor<'de> for V {
                    type Value = $ty;
                    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                        f.write_str($what)
                    }
                    $($methods)*
                }
                d.$how(V)
            }
        }
    };
}

/// The `visit_*` methods of a visitor for the kinds of JSON value it does not read: each gives `$v` (an array
/// or an object is skipped whole). Kinds: `str`, `bool`, `i64`, `u64`, `f64`, `unit`, `none`, `seq`, `map`.
macro_rules! others_give {
    ($v:expr => $($kind:ident),+) => { $(others_give!(@ $kind, $v);)+ };
    (@ str, $v:expr) => { others_give!(@ visit_str(_: &str), $v); };
    (@ bool, $v:expr) => { others_give!(@ visit_bool(_: bool), $v); };
    (@ i64, $v:expr) => { others_give!(@ visit_i64(_: i64), $v); };
    (@ u64, $v:expr) => { others_give!(@ visit_u64(_: u64), $v); };
    (@ f64, $v:expr) => { others_give!(@ visit_f64(_: f64), $v); };
    (@ unit, $v:expr) => { others_give!(@ visit_unit(), $v); };
    (@ none, $v:expr) => { others_give!(@ visit_none(), $v); };
    (@ $method:ident($($arg:tt)*), $v:expr) => {
        fn $method<E: de::Error>(self, $($arg)*) -> Result<Self::Value, E> {
            Ok($v)
        }
    };
    (@ seq, $v:expr) => {
        fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
            while a.next_element::<IgnoredAny>()?.is_some() {}
            Ok($v)
        }
    };
    (@ map, $v:expr) => {
        fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
            while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
            Ok($v)
        }
    };
}

/// `Deserialize` for `$ty` from a JSON object: `$v` starts as `$init`; the value of each listed key is read
/// by its statement (the map is `$m`), the other values are skipped; the result is `$done`. After the table,
/// the visitor's other methods.
macro_rules! object {
    (
        $ty:ty, $what:literal, $how:ident, |$v:ident, $m:ident| $init:expr => $done:expr,
        { $($key:literal => $read:expr,)* } $($others:tt)*
    ) => {
        visited!($ty, $what, $how, {
            fn visit_map<A: MapAccess<'de>>(self, mut $m: A) -> Result<Self::Value, A::Error> {
                let mut $v = $init;
                while let Some(CowStr(k)) = $m.next_key::<CowStr>()? {
                    match k.as_ref() {
                        $($key => $read,)*
                        _ => {
                            $m.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok($done)
            }
            $($others)*
        });
    };
}

/// A string that borrows from the input when it can.
struct CowStr<'a>(Cow<'a, str>);

visited!(CowStr<'de>, "a string", deserialize_str, {
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(CowStr(Cow::Borrowed(v)))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(CowStr(Cow::Owned(v.to_owned())))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(CowStr(Cow::Owned(v)))
    }
});

/// Any JSON value, read as a string if it is one, else skipped (`None`).
struct MaybeStr<'a>(Option<Cow<'a, str>>);

visited!(MaybeStr<'de>, "any value", deserialize_any, {
    fn visit_borrowed_str<E: de::Error>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(MaybeStr(Some(Cow::Borrowed(v))))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(MaybeStr(Some(Cow::Owned(v.to_owned()))))
    }
    fn visit_string<E: de::Error>(self, v: String) -> Result<Self::Value, E> {
        Ok(MaybeStr(Some(Cow::Owned(v))))
    }
    others_give!(MaybeStr(None) => bool, i64, u64, f64, unit, none, seq, map);
});

/// A non-negative integer if the value is one (numbers, or digit strings), else `None`.
struct MaybeNum(Option<u64>);

visited!(MaybeNum, "a number", deserialize_any, {
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(MaybeNum(Some(v)))
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(MaybeNum(u64::try_from(v).ok()))
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(MaybeNum(v.parse().ok()))
    }
    others_give!(MaybeNum(None) => f64, bool, unit, seq, map);
});

// ---- the entity ----------------------------------------------------------------------------------------

/// Seed that parses one entity object for the given languages.
pub struct EntitySeed<'l> {
    pub langs: &'l Langs,
}

impl<'de> DeserializeSeed<'de> for EntitySeed<'_> {
    type Value = Entity<'de>;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for EntitySeed<'_> {
    type Value = Entity<'de>;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("an entity object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        let n = self.langs.langs.len();
        let mut e = Entity {
            labels: vec![None; n],
            descriptions: vec![None; n],
            claims_missing: true,
            ..Entity::default()
        };
        while let Some(CowStr(key)) = m.next_key::<CowStr>()? {
            match key.as_ref() {
                "type" => {
                    let CowStr(t) = m.next_value()?;
                    e.kind = Some(match t.as_ref() {
                        "item" => Kind::Item,
                        "property" => Kind::Property,
                        _ => Kind::Other(t),
                    });
                }
                "id" => e.id = Some(m.next_value::<CowStr>()?.0),
                "labels" => {
                    let (mul, arr) = m.next_value_seed(TermsSeed {
                        langs: self.langs,
                        out: &mut e.labels,
                    })?;
                    e.mul_label = mul;
                    e.terms_as_array |= arr;
                }
                "descriptions" => {
                    let (_, arr) = m.next_value_seed(TermsSeed {
                        langs: self.langs,
                        out: &mut e.descriptions,
                    })?;
                    e.terms_as_array |= arr;
                }
                "sitelinks" => {
                    let (count, arr) = m.next_value_seed(CountSeed)?;
                    e.sitelinks = u32::try_from(count).unwrap_or(u32::MAX);
                    e.terms_as_array |= arr && count == 0;
                }
                // Written by `skim` in place of a `sitelinks` object: its number of entries.
                "sitelinks#" => {
                    let count = m.next_value::<MaybeNum>()?.0.unwrap_or(0);
                    e.sitelinks = u32::try_from(count).unwrap_or(u32::MAX);
                }
                "claims" => {
                    e.claims_missing = false;
                    e.claims_as_array |= m.next_value_seed(ClaimsSeed {
                        out: &mut e.statements,
                        snaks: &mut e.snaks,
                    })?;
                }
                "datatype" => e.datatype = m.next_value::<MaybeStr>()?.0,
                "lastrevid" => e.lastrevid = m.next_value::<MaybeNum>()?.0,
                "modified" => e.modified = m.next_value::<MaybeStr>()?.0,
                _ => {
                    m.next_value::<IgnoredAny>()?;
                }
            }
        }
        Ok(e)
    }
}

/// Labels or descriptions: `{lang: {language, value}}` (or `[]`). Returns (mul value, was an array).
struct TermsSeed<'l, 'o, 'de> {
    langs: &'l Langs,
    out: &'o mut Vec<Option<Cow<'de, str>>>,
}

impl<'de> DeserializeSeed<'de> for TermsSeed<'_, '_, 'de> {
    type Value = (Option<Cow<'de, str>>, bool);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for TermsSeed<'_, '_, 'de> {
    type Value = (Option<Cow<'de, str>>, bool);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of terms")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok((None, true))
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok((None, false))
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        let mut mul = None;
        while let Some(CowStr(lang)) = m.next_key::<CowStr>()? {
            if lang == "mul" {
                mul = m.next_value::<Term>()?.0;
            } else if let Some(i) = self.langs.index(&lang) {
                self.out[i] = m.next_value::<Term>()?.0;
            } else {
                m.next_value::<IgnoredAny>()?;
            }
        }
        Ok((mul, false))
    }
}

/// `{language, value}` → value.
struct Term<'a>(Option<Cow<'a, str>>);

object!(
    Term<'de>, "a term object", deserialize_any, |value, m| None => Term(value),
    {
        "value" => value = m.next_value::<MaybeStr>()?.0,
    }
    others_give!(Term(None) => seq, unit);
);

/// Counts the entries of a map (or array) without reading them. Returns (count, was an array).
struct CountSeed;

impl<'de> DeserializeSeed<'de> for CountSeed {
    type Value = (u64, bool);
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for CountSeed {
    type Value = (u64, bool);
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        let mut n = 0;
        while m.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok((n, false))
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        let mut n = 0;
        while a.next_element::<IgnoredAny>()?.is_some() {
            n += 1;
        }
        Ok((n, true))
    }
    others_give!((0, false) => unit);
}

/// `claims`: `{P: [statement...]}` (or `[]`). Returns whether it was an array.
struct ClaimsSeed<'o, 'de> {
    out: &'o mut Vec<Statement<'de>>,
    snaks: &'o mut SnakCounts,
}

impl<'de> DeserializeSeed<'de> for ClaimsSeed<'_, 'de> {
    type Value = bool;
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for ClaimsSeed<'_, 'de> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a map of claims")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<Self::Value, A::Error> {
        while a.next_element::<IgnoredAny>()?.is_some() {}
        Ok(true)
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(false)
    }
    fn visit_map<A: MapAccess<'de>>(self, mut m: A) -> Result<Self::Value, A::Error> {
        while let Some(CowStr(prop)) = m.next_key::<CowStr>()? {
            m.next_value_seed(StatementsSeed {
                property: prop,
                out: self.out,
                snaks: self.snaks,
            })?;
        }
        Ok(false)
    }
}

struct StatementsSeed<'o, 'de> {
    property: Cow<'de, str>,
    out: &'o mut Vec<Statement<'de>>,
    snaks: &'o mut SnakCounts,
}

impl<'de> DeserializeSeed<'de> for StatementsSeed<'_, 'de> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<Self::Value, D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for StatementsSeed<'_, 'de> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a list of statements")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut a: A) -> Result<(), A::Error> {
        while let Some(st) = a.next_element::<RawStatement>()? {
            add_statement(&self.property, st, self.out, self.snaks);
        }
        Ok(())
    }
    others_give!(() => map, unit);
}

/// Count one statement's main snak and keep it when its value is an item or property (shared by the serde
/// visitor and by the direct reader of plain lines, `dump::direct`, so both count and keep alike).
#[allow(clippy::ptr_arg)] // the Cow is cloned into every statement: a borrowed key stays borrowed
pub(super) fn add_statement<'de>(
    property: &Cow<'de, str>,
    st: RawStatement<'de>,
    out: &mut Vec<Statement<'de>>,
    snaks: &mut SnakCounts,
) {
    let snak = st.snak;
    match snak.snaktype.as_deref() {
        Some("value") => snaks.value += 1,
        Some("somevalue") => snaks.somevalue += 1,
        Some("novalue") => snaks.novalue += 1,
        _ => {}
    }
    if let Some(dt) = snak.datatype.as_deref() {
        if !KNOWN_DATATYPES.contains(&dt) {
            snaks.unknown_datatype += 1;
        }
    }
    let without = match snak.snaktype.as_deref() {
        Some("somevalue") => Some(EntityValue::SomeValue),
        Some("novalue") => Some(EntityValue::NoValue),
        _ => None,
    };
    if let Some(value) = without {
        // Kept for the falsity tier; its rank is read as for a value (a bad rank is counted on values only).
        out.push(Statement {
            property: property.clone(),
            rank: st.rank.as_deref().and_then(Rank::parse),
            id: st.id,
            value,
        });
        return;
    }
    if snak.snaktype.as_deref() != Some("value")
        || snak.dv_type.as_deref() != Some("wikibase-entityid")
    {
        return;
    }
    let value = match resolve_entity_value(&snak.value) {
        Resolved::Value(v, numeric_only) => {
            if numeric_only {
                snaks.numeric_id_only += 1;
            }
            v
        }
        Resolved::Other => {
            snaks.other_entity_value += 1;
            return;
        }
        Resolved::Bad => {
            snaks.bad_entity_value += 1;
            return;
        }
    };
    let rank = st.rank.as_deref().and_then(Rank::parse);
    if rank.is_none() {
        snaks.bad_rank += 1;
    }
    out.push(Statement {
        property: property.clone(),
        rank,
        id: st.id,
        value,
    });
}

enum Resolved {
    /// The value, and whether it came from `numeric-id` alone.
    Value(EntityValue, bool),
    Other,
    Bad,
}

fn resolve_entity_value(v: &RawEntityValue) -> Resolved {
    if let Some(id) = v.id.as_deref() {
        if let Some(q) = Qid::parse(id) {
            return Resolved::Value(EntityValue::Item(q), false);
        }
        if let Some(p) = Pid::parse(id) {
            return Resolved::Value(EntityValue::Property(p), false);
        }
        return if id.is_empty() {
            Resolved::Bad
        } else {
            Resolved::Other
        };
    }
    match (v.entity_type.as_deref(), v.numeric_id) {
        (Some("item"), Some(n)) if n > 0 => Resolved::Value(EntityValue::Item(Qid(n)), true),
        (Some("property"), Some(n)) if n > 0 => {
            Resolved::Value(EntityValue::Property(Pid(n)), true)
        }
        (Some("item") | Some("property") | None, _) => Resolved::Bad,
        _ => Resolved::Other,
    }
}

#[derive(Default)]
pub(super) struct RawEntityValue<'a> {
    pub(super) entity_type: Option<Cow<'a, str>>,
    pub(super) numeric_id: Option<u64>,
    pub(super) id: Option<Cow<'a, str>>,
}

#[derive(Default)]
pub(super) struct RawSnak<'a> {
    pub(super) snaktype: Option<Cow<'a, str>>,
    pub(super) datatype: Option<Cow<'a, str>>,
    pub(super) dv_type: Option<Cow<'a, str>>,
    pub(super) value: RawEntityValue<'a>,
}

pub(super) struct RawStatement<'a> {
    pub(super) snak: RawSnak<'a>,
    pub(super) rank: Option<Cow<'a, str>>,
    pub(super) id: Option<Cow<'a, str>>,
}

object!(
    RawStatement<'de>, "a statement", deserialize_map,
    |st, m| RawStatement { snak: RawSnak::default(), rank: None, id: None } => st,
    {
        "mainsnak" => st.snak = m.next_value()?,
        "rank" => st.rank = m.next_value::<MaybeStr>()?.0,
        "id" => st.id = m.next_value::<MaybeStr>()?.0,
    }
);

object!(
    RawSnak<'de>, "a snak", deserialize_map, |s, m| RawSnak::default() => s,
    {
        "snaktype" => s.snaktype = m.next_value::<MaybeStr>()?.0,
        "datatype" => s.datatype = m.next_value::<MaybeStr>()?.0,
        "datavalue" => {
            let dv: RawDataValue = m.next_value()?;
            s.dv_type = dv.ty;
            s.value = dv.value;
        },
    }
);

struct RawDataValue<'a> {
    ty: Option<Cow<'a, str>>,
    value: RawEntityValue<'a>,
}

object!(
    RawDataValue<'de>, "a datavalue", deserialize_map,
    |dv, m| RawDataValue { ty: None, value: RawEntityValue::default() } => dv,
    {
        "type" => dv.ty = m.next_value::<MaybeStr>()?.0,
        "value" => dv.value = m.next_value::<ValueAny>()?.0,
    }
);

/// A datavalue's `value`: read the entity keys if it is a map, skip anything else.
struct ValueAny<'a>(RawEntityValue<'a>);

object!(
    ValueAny<'de>, "a value", deserialize_any, |v, m| RawEntityValue::default() => ValueAny(v),
    {
        "entity-type" => v.entity_type = m.next_value::<MaybeStr>()?.0,
        "numeric-id" => v.numeric_id = m.next_value::<MaybeNum>()?.0,
        "id" => v.id = m.next_value::<MaybeStr>()?.0,
    }
    others_give!(ValueAny(RawEntityValue::default()) => seq, str, u64, i64, f64, bool, unit);
);

// ---- line framing --------------------------------------------------------------------------------------

/// Parse one dump line in place (simd-json rewrites `buf`). `buf` holds exactly the trimmed line. Error
/// positions are byte offsets in `buf`.
pub fn parse_entity<'a>(
    buf: &'a mut [u8],
    langs: &Langs,
    buffers: &mut simd_json::Buffers,
) -> Result<Line<'a>, LineError> {
    parse_entity_at(buf, langs, buffers, 0)
}

/// [`parse_entity`] of bytes that start `base` bytes into their line (error positions count from the line).
pub(crate) fn parse_entity_at<'a>(
    buf: &'a mut [u8],
    langs: &Langs,
    buffers: &mut simd_json::Buffers,
    base: usize,
) -> Result<Line<'a>, LineError> {
    match &*buf {
        b"" => return Ok(Line::Frame(FrameKind::Blank)),
        b"[" => return Ok(Line::Frame(FrameKind::Open)),
        b"]" => return Ok(Line::Frame(FrameKind::Close)),
        _ => {}
    }
    if buf.first() != Some(&b'{') {
        return Err(LineError {
            kind: "not_object",
            message: "line does not start with `{`".into(),
        });
    }
    let mut de = simd_json::Deserializer::from_slice_with_buffers(buf, buffers)
        .map_err(|e| json_error(&e, base))?;
    EntitySeed { langs }
        .deserialize(&mut de)
        .map(Line::Entity)
        .map_err(|e| json_error(&e, base))
}

/// A simd-json error as a line error; `base` is added to its position (the bytes trimmed off the line's start).
fn json_error(e: &simd_json::Error, base: usize) -> LineError {
    let message = match e.error() {
        // Raised by the entity visitor (a value of the wrong type): simd-json has no position for these.
        simd_json::ErrorType::Serde(m) => m.clone(),
        t => {
            let at = e.index().saturating_add(base);
            match e.character() {
                Some(c) => format!("{t:?} at byte {at} of the line ({c:?})"),
                None => format!("{t:?} at byte {at} of the line"),
            }
        }
    };
    LineError {
        kind: "json",
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dump::entity::trim_line;

    fn langs() -> Langs {
        Langs {
            langs: ["en", "fr", "de", "es", "it", "pt", "ko", "ja"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }

    fn parse(s: &str) -> Entity<'static> {
        let mut b = s.as_bytes().to_vec();
        let mut buffers = simd_json::Buffers::new(b.len());
        let line = parse_entity(&mut b, &langs(), &mut buffers).unwrap();
        match line {
            Line::Entity(e) => e.into_owned(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn reads_what_is_needed_in_any_key_order() {
        let line = r#"{"claims":{"P31":[{"mainsnak":{"datavalue":{"value":{"numeric-id":5,"entity-type":"item"},"type":"wikibase-entityid"},"property":"P31","snaktype":"value","datatype":"wikibase-item"},"qualifiers":{"P580":[{"snaktype":"value"}]},"references":[{"snaks":{}}],"rank":"preferred","id":"Q42$X","type":"statement"}],"P18":[{"mainsnak":{"snaktype":"value","property":"P18","datavalue":{"value":"a.jpg","type":"string"},"datatype":"commonsMedia"},"type":"statement","id":"Q42$Y","rank":"normal"}],"P40":[{"mainsnak":{"snaktype":"somevalue","property":"P40","datatype":"wikibase-item"},"rank":"normal","id":"Q42$Z"},{"mainsnak":{"snaktype":"novalue","property":"P40","datatype":"wikibase-item"},"rank":"normal"}]},"sitelinks":{"enwiki":{"site":"enwiki","title":"A","badges":[]},"frwiki":{"site":"frwiki","title":"B","badges":[]}},"labels":{"en":{"language":"en","value":"Douglas Adams"},"mul":{"language":"mul","value":"DA"},"xx":{"language":"xx","value":"ignored"},"ja":{"language":"ja","value":"\u30c0\u30b0\u30e9\u30b9 \ud83d\ude00"}},"descriptions":{"fr":{"language":"fr","value":"\u00e9crivain"}},"id":"Q42","type":"item","lastrevid":123,"modified":"2015-11-01T00:00:00Z"}"#;
        let e = parse(line);
        assert_eq!(e.kind, Some(Kind::Item));
        assert_eq!(e.id.as_deref(), Some("Q42"));
        assert_eq!(e.labels[0].as_deref(), Some("Douglas Adams"));
        assert_eq!(e.labels[7].as_deref(), Some("ダグラス 😀"));
        assert_eq!(e.mul_label.as_deref(), Some("DA"));
        assert_eq!(e.descriptions[1].as_deref(), Some("écrivain"));
        assert_eq!(e.sitelinks, 2);
        assert_eq!(e.lastrevid, Some(123));
        assert_eq!(e.modified.as_deref(), Some("2015-11-01T00:00:00Z"));
        // P31's item value, and P40's `somevalue` and `novalue` (kept for the falsity tier); P18's string is not.
        assert_eq!(e.statements.len(), 3);
        assert_eq!(e.statements[0].property, "P31");
        assert_eq!(e.statements[0].rank, Some(Rank::Preferred));
        assert_eq!(e.statements[0].id.as_deref(), Some("Q42$X"));
        assert_eq!(e.statements[0].value, EntityValue::Item(Qid(5)));
        let p40: Vec<_> = e.statements[1..]
            .iter()
            .map(|s| (s.property.as_ref(), s.value, s.id.as_deref()))
            .collect();
        assert_eq!(
            p40,
            [
                ("P40", EntityValue::SomeValue, Some("Q42$Z")),
                ("P40", EntityValue::NoValue, None)
            ]
        );
        assert_eq!(e.snaks.value, 2);
        assert_eq!(e.snaks.somevalue, 1);
        assert_eq!(e.snaks.novalue, 1);
        assert_eq!(e.snaks.numeric_id_only, 1);
        assert!(!e.claims_missing);
    }

    #[test]
    fn arrays_for_empty_maps_missing_claims_and_other_values() {
        let e = parse(
            r#"{"type":"item","id":"Q8","labels":[],"descriptions":[],"sitelinks":[],"claims":[]}"#,
        );
        assert!(e.terms_as_array && e.claims_as_array && !e.claims_missing);
        assert!(e.labels.iter().all(Option::is_none));
        let e = parse(r#"{"type":"property","id":"P1","datatype":"wikibase-foo","labels":{}}"#);
        assert!(e.claims_missing);
        assert_eq!(e.datatype.as_deref(), Some("wikibase-foo"));
        let e = parse(
            r#"{"type":"item","id":"Q1","claims":{"P5":[{"mainsnak":{"snaktype":"value","datatype":"wikibase-form","datavalue":{"type":"wikibase-entityid","value":{"entity-type":"form","id":"L1-F1"}}},"rank":"normal"},{"mainsnak":{"snaktype":"value","datatype":"new-type","datavalue":{"type":"wikibase-entityid","value":{"entity-type":"item","id":"Q7","numeric-id":7}}},"rank":"deprecated"},{"mainsnak":{"snaktype":"value","datatype":"wikibase-property","datavalue":{"type":"wikibase-entityid","value":{"entity-type":"property","numeric-id":9}}},"rank":"bogus"}]}}"#,
        );
        assert_eq!(e.snaks.other_entity_value, 1);
        assert_eq!(e.snaks.unknown_datatype, 1);
        assert_eq!(e.snaks.bad_rank, 1);
        assert_eq!(e.statements.len(), 2);
        assert_eq!(e.statements[0].value, EntityValue::Item(Qid(7)));
        assert_eq!(e.statements[0].rank, Some(Rank::Deprecated));
        assert_eq!(e.statements[1].value, EntityValue::Property(Pid(9)));
    }

    #[test]
    fn framing_and_bad_lines() {
        assert_eq!(trim_line(b"  {\"a\":1},\r\n"), (2, 9));
        assert_eq!(trim_line(b"[\n"), (0, 1));
        let mut buffers = simd_json::Buffers::new(16);
        for (line, kind) in [
            ("[", FrameKind::Open),
            ("]", FrameKind::Close),
            ("", FrameKind::Blank),
        ] {
            let mut b = line.as_bytes().to_vec();
            assert!(
                matches!(parse_entity(&mut b, &langs(), &mut buffers), Ok(Line::Frame(k)) if k == kind)
            );
        }
        for (bad, kind) in [
            (
                &b"{\"type\":\"item\",\"id\":\"Q1\",\"labels\":{\"en\""[..],
                "json",
            ),
            (b"nonsense", "not_object"),
            (b"{\"type\":\"item\",\"labels\":5}", "json"),
            (b"{\"id\":\"Q\xff\"}", "json"),
        ] {
            let mut b = bad.to_vec();
            let err = parse_entity(&mut b, &langs(), &mut buffers).unwrap_err();
            assert_eq!(err.kind, kind, "{}", String::from_utf8_lossy(bad));
        }
    }
}
