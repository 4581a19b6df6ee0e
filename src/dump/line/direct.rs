//! Direct: the [`Entity`] of a plain dump line read straight from the line's bytes, with no copy and no tokenising.
//!
//! Why: the skim ([`super::skim`]) drops the bytes the stage never reads, but it still copies the kept quarter of
//! a line into a buffer that simd-json then tokenises, builds a tape of and hands, node by node, to the serde
//! visitor. That second pass over the kept bytes cost about as much CPU as the skim itself (BENCHMARKS.md,
//! "Extract"). This module walks the line once with the skim's cursor (the same 64-byte block scan jumps over
//! aliases, qualifiers, references and the values of other languages) and fills the entity as it goes: strings
//! without escapes are borrowed from the line, escaped ones decoded once.
//!
//! Equivalence: whenever [`entity`] returns an entity, [`super::skim::skim`] accepts the line and simd-json
//! parses the skimmed copy to the same entity (property-tested on generated, mutated and real lines). It
//! reads only what the skimmed copy would contain and is strict about it: every kept value must be in the shape
//! Wikidata writes — strings with only the standard escapes (surrogate pairs paired) and no raw control bytes,
//! non-negative integers without sign, fraction or leading zero, `null`, objects where the visitor expects
//! objects, `[]` for the empty arrays of old dumps — and no top-level key the visitor reads may occur twice.
//! Anything else returns an error and the caller takes the skim-and-simd-json path, so a line's verdict (and a
//! bad line's message) is exactly what it was before this module existed.

use super::cursor::{Cur, Res};
use super::serde::{add_statement, RawEntityValue, RawSnak, RawStatement};
use crate::core::ids::Pid;
use crate::dump::entity::{Entity, Kind, Langs, SnakCounts};
use std::borrow::Cow;

/// What the extract stage need not read of an item not labelled in every configured language (most of a dump's
/// items and bytes: 76 % of a generated dump's): its descriptions, never written, always; and with `statements`
/// (`extract.unlabelled_statements = "skip"`) its statements, except those of the `keep` properties (the
/// transitive seed, which the transitive closure follows through unlabelled items). An entity read with a jump is
/// cut down by [`Jump::apply`], whatever path read it; the direct reader does not even walk what it would drop,
/// only checks its structure (the 64-byte bracket scan of `Cur::value`), when the line gives `type` and `labels`
/// first (as every dump does).
///
/// Why the descriptions in every mode: reading them (each configured language's term, member by member) was
/// about 1.3 % of extract's instructions on a generated dump, for text no artifact holds. Their content is then
/// no longer checked (a malformed description of such an item no longer makes its line bad), as the skip mode
/// never checked it; their structure still is.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Jump {
    /// One flag per configured language: whether a `mul` label stands in for it (`extract.mul_fallback`).
    pub mul_ok: Vec<bool>,
    /// Properties whose statements are kept all the same, sorted (when `statements`).
    pub keep: Vec<Pid>,
    /// Whether the statements are cut too (`extract.unlabelled_statements = "skip"`), or only the descriptions.
    pub statements: bool,
}

impl Jump {
    /// Whether the statements of `e` are cut down (an item without a label in some configured language).
    pub fn cuts(&self, e: &Entity<'_>) -> bool {
        e.is_item() && !e.labelled_in_all(&self.mul_ok)
    }

    /// Whether a claim key names a kept property (the extract stage's reading of claim keys, `Pid::parse`).
    fn keeps(&self, key: &str) -> bool {
        !self.statements || Pid::parse(key).is_some_and(|p| self.keep.binary_search(&p).is_ok())
    }

    /// Cut `e` down: for an item not labelled in every language, the descriptions are dropped (an unlabelled
    /// item's descriptions are never written) and, with `statements`, only the statements of kept properties
    /// stay, and the snak counts are dropped (they would only count what some paths read).
    pub fn apply(&self, e: &mut Entity<'_>) {
        if self.cuts(e) {
            if self.statements {
                e.statements.retain(|s| self.keeps(&s.property));
                e.snaks = SnakCounts::default();
            }
            e.descriptions.iter_mut().for_each(|d| *d = None);
        }
    }
}

/// The statements an entity is given room for before its claims are read (see [`entity`]).
const STATEMENTS_AT_ONCE: usize = 14;

/// Read one trimmed entity line (UTF-8 already checked, starting with `{`); an error means "take the usual path".
/// With a `jump`, the claim arrays that [`Jump::apply`] would drop are only checked for structure.
pub fn entity<'a>(line: &'a str, langs: &Langs, jump: Option<&Jump>) -> Res<Entity<'a>> {
    let n = langs.langs.len();
    let mut e = Entity {
        labels: vec![None; n],
        descriptions: vec![None; n],
        // Room for the item and somevalue/novalue statements of a usual line at once (7 on average in a generated
        // dump): growing from empty took three reallocations a line. 14 of 72 bytes stay within the allocator's
        // per-thread cache of small blocks.
        statements: Vec::with_capacity(STATEMENTS_AT_ONCE),
        claims_missing: true,
        ..Entity::default()
    };
    let t = line;
    let keys = LangKeys::new(langs);
    let mut c = Cur {
        s: line.as_bytes(),
        i: 0,
    };
    // Top-level keys the visitor reads, each at most once (bit per key).
    let mut seen = 0u16;
    c.members(|c, key| {
        let bit = match key {
            b"type" => 1,
            b"id" => 2,
            b"datatype" => 4,
            b"lastrevid" => 8,
            b"modified" => 16,
            b"labels" => 32,
            b"descriptions" => 64,
            b"sitelinks" => 128,
            b"claims" => 256,
            _ => {
                c.value()?;
                return Ok(());
            }
        };
        if seen & bit != 0 {
            return c.err("a key read twice");
        }
        seen |= bit;
        match key {
            b"type" => {
                let k = text(c, t)?;
                e.kind = Some(match k.as_ref() {
                    "item" => Kind::Item,
                    "property" => Kind::Property,
                    _ => Kind::Other(k),
                });
            }
            b"id" => e.id = Some(text(c, t)?),
            b"datatype" => e.datatype = Some(text(c, t)?),
            b"modified" => e.modified = Some(text(c, t)?),
            b"lastrevid" => e.lastrevid = Some(uint(c)?),
            b"labels" => {
                let (mul, arr) = terms(c, t, &keys, &mut e.labels)?;
                e.mul_label = mul;
                e.terms_as_array |= arr;
            }
            b"descriptions" => {
                // Only kept entities need them: jumped over where `Jump::apply` drops them.
                if c.peek() == Some(b'{') && jump.is_some_and(|j| seen & 33 == 33 && j.cuts(&e)) {
                    return c.value().map(drop);
                }
                let (_, arr) = terms(c, t, &keys, &mut e.descriptions)?;
                e.terms_as_array |= arr;
            }
            b"sitelinks" => match c.peek() {
                Some(b'{') => {
                    let mut count = 0u64;
                    c.members(|c, _| {
                        count += 1;
                        skip_sitelink(c)
                    })?;
                    e.sitelinks = u32::try_from(count).unwrap_or(u32::MAX);
                }
                Some(b'[') => {
                    empty_array(c)?;
                    e.terms_as_array = true;
                }
                _ => null(c)?,
            },
            _ => {
                e.claims_missing = false;
                match c.peek() {
                    Some(b'{') => {
                        // Decided here, so only when `type` and `labels` came first (a key comes once).
                        let jump = jump.filter(|j| j.statements && seen & 33 == 33 && j.cuts(&e));
                        let (statements, snaks) = (&mut e.statements, &mut e.snaks);
                        c.members(|c, prop| {
                            let property = Cow::Borrowed(key_text(c, t, prop)?);
                            if c.peek() != Some(b'[') {
                                return null(c);
                            }
                            if jump.is_some_and(|j| !j.keeps(&property)) {
                                return c.value().map(drop);
                            }
                            c.elements(|c| {
                                let st = statement(c, t)?;
                                add_statement(&property, st, statements, snaks);
                                Ok(())
                            })
                        })?;
                    }
                    Some(b'[') => {
                        empty_array(c)?;
                        e.claims_as_array = true;
                    }
                    _ => null(c)?,
                }
            }
        }
        Ok(())
    })?;
    if c.peek().is_some() {
        return c.err("bytes after the entity object");
    }
    Ok(e)
}

/// Labels or descriptions: `{lang: {language, value}}` (`[]` in old dumps, or `null`). Returns (mul, was an array).
fn terms<'a>(
    c: &mut Cur<'a>,
    t: &'a str,
    langs: &LangKeys<'_>,
    out: &mut [Option<Cow<'a, str>>],
) -> Res<(Option<Cow<'a, str>>, bool)> {
    match c.peek() {
        Some(b'{') => {
            let mut mul = None;
            c.members(|c, lang| {
                if lang == b"mul" {
                    mul = term(c, t)?;
                } else if let Some(i) = langs.index(lang) {
                    out[i] = term(c, t)?;
                } else {
                    skip_term(c)?;
                }
                Ok(())
            })?;
            Ok((mul, false))
        }
        Some(b'[') => {
            empty_array(c)?;
            Ok((None, true))
        }
        _ => {
            null(c)?;
            Ok((None, false))
        }
    }
}

/// The configured languages as packed words: a language key of a labels object (hundreds per popular item) is
/// found with one load and a few integer compares instead of a string compare per language.
struct LangKeys<'l> {
    langs: &'l Langs,
    /// Key bytes and length in one word, for languages of at most 7 bytes; `None` when some language is longer
    /// or there are more than 16 (then the keys are compared as strings).
    packed: Option<([u64; 16], usize)>,
}

impl<'l> LangKeys<'l> {
    fn new(langs: &'l Langs) -> LangKeys<'l> {
        let mut words = [u64::MAX; 16];
        let mut ok = langs.langs.len() <= words.len();
        for (w, l) in words.iter_mut().zip(&langs.langs) {
            match pack(l.as_bytes()) {
                Some(p) => *w = p,
                None => ok = false,
            }
        }
        LangKeys {
            langs,
            packed: ok.then_some((words, langs.langs.len())),
        }
    }

    /// Index of the first configured language equal to `key` (as [`Langs`] finds it).
    #[inline]
    fn index(&self, key: &[u8]) -> Option<usize> {
        match &self.packed {
            Some((words, n)) => {
                let k = pack(key)?;
                words[..*n].iter().position(|&w| w == k)
            }
            None => self.langs.index_bytes(key),
        }
    }
}

/// Up to 7 bytes and their number in one word (distinct keys give distinct words).
#[inline]
fn pack(b: &[u8]) -> Option<u64> {
    if b.len() > 7 {
        return None;
    }
    let mut w = (b.len() as u64) << 56;
    for (i, &x) in b.iter().enumerate() {
        w |= u64::from(x) << (8 * i);
    }
    Some(w)
}

/// `{"language": "en", "value": "..."}` → the value (the last one when repeated, as the visitor reads it). The
/// skim copies a kept term whole, so simd-json checks all of it: other members must be plain scalars here.
fn term<'a>(c: &mut Cur<'a>, t: &'a str) -> Res<Option<Cow<'a, str>>> {
    let start = c.i;
    if let Some(v) = plain_term(c, t) {
        return Ok(Some(v));
    }
    c.i = start;
    if c.peek() != Some(b'{') {
        return c.err("a term that is not an object");
    }
    let mut value = None;
    c.members(|c, k| {
        if k == b"value" {
            value = Some(text(c, t)?);
        } else if has_control(k) {
            return c.err("a key with a control byte");
        } else {
            scalar(c, t)?;
        }
        Ok(())
    })?;
    Ok(value)
}

/// A kept term as Wikidata writes it, `{"language":L,"value":V}` with L and V strings: V, read by the same
/// functions as the member walk of [`term`] (`text` for both, as `scalar` reads a string; its usual case inline,
/// [`text_inline`]), so the same value;
/// `None` for anything else (the caller resets the cursor).
#[inline]
fn plain_term<'a>(c: &mut Cur<'a>, t: &'a str) -> Option<Cow<'a, str>> {
    lit(c, br#"{"language":"#)?;
    text_inline(c, t)?;
    lit(c, br#","value":"#)?;
    let v = text_inline(c, t)?;
    lit(c, b"}")?;
    Some(v)
}

/// Jump over the term of a language the stage does not read. The usual shape `{"language":"..","value":".."}`
/// is passed over string by string (two string scans instead of the bracket scan of `Cur::value`, which ends at
/// the same byte for such a term: the only bracket outside its strings is the last one); anything else takes
/// `Cur::value`.
#[inline]
fn skip_term(c: &mut Cur<'_>) -> Res<()> {
    skip_plain_or_value(c, |c| {
        two_strings(c, br#"{"language":"#, br#","value":"#)?;
        lit(c, b"}")
    })
}

/// Jump over the value of one sitelink. The usual shape `{"site":"..","title":"..","badges":[..]}` is passed
/// over string by string (the badges array by `Cur::value`), which ends where the bracket scan of `Cur::value`
/// would; anything else takes `Cur::value`.
#[inline]
fn skip_sitelink(c: &mut Cur<'_>) -> Res<()> {
    skip_plain_or_value(c, |c| {
        two_strings(c, br#"{"site":"#, br#","title":"#)?;
        if lit(c, br#","badges":[]}"#).is_some() {
            return Some(());
        }
        lit(c, br#","badges":["#)?;
        c.i -= 1;
        c.value().ok()?;
        lit(c, b"}")
    })
}

/// Jump over a value by `plain`, the walk over the usual shape that ends where `Cur::value` would (or
/// declines: `None`); a value `plain` declines is passed over again, from its start, by `Cur::value`.
#[inline(always)]
fn skip_plain_or_value(c: &mut Cur<'_>, plain: impl FnOnce(&mut Cur<'_>) -> Option<()>) -> Res<()> {
    let start = c.i;
    if plain(c).is_none() {
        c.i = start;
        c.value()?;
    }
    Ok(())
}

/// `first` then a string, `second` then a string (`{"k1":"..","k2":".."`, without the closing brace).
#[inline(always)]
fn two_strings(c: &mut Cur<'_>, first: &[u8], second: &[u8]) -> Option<()> {
    lit(c, first)?;
    skip_string(c)?;
    lit(c, second)?;
    skip_string(c)
}

/// At a `"` (no whitespace before it): jump over the string (escapes as `Cur::string` reads them).
#[inline(always)]
fn skip_string(c: &mut Cur<'_>) -> Option<()> {
    if c.s.get(c.i) != Some(&b'"') {
        return None;
    }
    c.string().ok().map(drop)
}

/// One statement: its main snak, rank and GUID; every other member is jumped over (the skim drops them).
fn statement<'a>(c: &mut Cur<'a>, t: &'a str) -> Res<RawStatement<'a>> {
    if c.peek() != Some(b'{') {
        return c.err("a statement that is not an object");
    }
    let start = c.i;
    if let Some(st) = plain_statement(c, t) {
        return Ok(st);
    }
    c.i = start;
    let mut st = RawStatement {
        snak: RawSnak::default(),
        rank: None,
        id: None,
    };
    c.members(|c, k| {
        match k {
            b"mainsnak" => st.snak = snak(c, t)?,
            b"rank" => st.rank = Some(text(c, t)?),
            b"id" => st.id = Some(text(c, t)?),
            _ => {
                c.value()?;
            }
        }
        Ok(())
    })?;
    Ok(st)
}

/// A statement as Wikidata serialises it, its keys matched byte for byte in their usual order:
/// `{"mainsnak":S,"type":"statement"[,"qualifiers":Q][,"qualifiers-order":O],"id":I,"rank":R[,"references":F]}`.
/// Each key occurs once, the values are read by the same functions as the member walk of [`statement`] (`snak`,
/// `text`, and `Cur::value` for the values it jumps over), so a match gives exactly the statement the walk
/// gives, without the walk's cost per member (key scan, key compare, separators). `None` for anything else
/// (the caller resets the cursor and walks the members).
#[inline]
fn plain_statement<'a>(c: &mut Cur<'a>, t: &'a str) -> Option<RawStatement<'a>> {
    lit(c, br#"{"mainsnak":"#)?;
    let snak = snak(c, t).ok()?;
    lit(c, br#","type":"statement""#)?;
    if lit(c, br#","qualifiers":"#).is_some() {
        c.value().ok()?;
    }
    if lit(c, br#","qualifiers-order":"#).is_some() {
        c.value().ok()?;
    }
    lit(c, br#","id":"#)?;
    let id = text_inline(c, t)?;
    lit(c, br#","rank":"#)?;
    let rank = rank(c, t)?;
    if lit(c, br#","references":"#).is_some() {
        c.value().ok()?;
    }
    lit(c, b"}")?;
    Some(RawStatement {
        snak,
        rank: Some(rank),
        id: Some(id),
    })
}

/// A statement's rank at the cursor: the three ranks Wikidata writes matched as whole strings (the text `text`
/// reads for them, borrowed likewise), anything else read by `text`.
#[inline(always)]
fn rank<'a>(c: &mut Cur<'a>, t: &'a str) -> Option<Cow<'a, str>> {
    for r in ["normal", "preferred", "deprecated"] {
        let at = c.i + 1;
        if c.s.get(c.i) == Some(&b'"')
            && c.s.get(at..at + r.len()) == Some(r.as_bytes())
            && c.s.get(at + r.len()) == Some(&b'"')
        {
            c.i = at + r.len() + 1;
            return Some(Cow::Borrowed(t.get(at..at + r.len())?));
        }
    }
    text_inline(c, t)
}

fn snak<'a>(c: &mut Cur<'a>, t: &'a str) -> Res<RawSnak<'a>> {
    if c.peek() != Some(b'{') {
        return c.err("a snak that is not an object");
    }
    if let Some(s) = plain_snak(c, t) {
        return Ok(s);
    }
    let mut s = RawSnak::default();
    c.members(|c, k| {
        match k {
            b"snaktype" => s.snaktype = Some(text(c, t)?),
            b"datatype" => s.datatype = Some(text(c, t)?),
            b"datavalue" => {
                if c.peek() != Some(b'{') {
                    return c.err("a datavalue that is not an object");
                }
                let (mut ty, mut value) = (None, RawEntityValue::default());
                c.members(|c, k| {
                    match k {
                        b"type" => ty = Some(text(c, t)?),
                        b"value" => value = datavalue_value(c, t)?,
                        _ => {
                            c.value()?;
                        }
                    }
                    Ok(())
                })?;
                s.dv_type = ty;
                s.value = value;
            }
            _ => {
                c.value()?;
            }
        }
        Ok(())
    })?;
    Ok(s)
}

/// The main snak of a value statement as Wikidata serialises it, matched byte for byte:
/// `{"snaktype":"value","property":"P1",["hash":"<hex>",]"datavalue":{"value":V,"type":"W"},"datatype":"W"}` with
/// V an entity value `{"entity-type":"W","numeric-id":N[,"id":"W"]}` (else read by [`datavalue_value`]), W words
/// of letters, digits and `-`, N a plain integer. A match reads the same fields as the member walk of [`snak`]
/// would (each key once, every string plain), a third of the work; `None` (cursor unmoved) for anything else.
fn plain_snak<'a>(c: &mut Cur<'a>, t: &'a str) -> Option<RawSnak<'a>> {
    let start = c.i;
    let r = plain_snak_at(c, t);
    if r.is_none() {
        c.i = start;
    }
    r
}

fn plain_snak_at<'a>(c: &mut Cur<'a>, t: &'a str) -> Option<RawSnak<'a>> {
    lit(c, br#"{"snaktype":"value","property":"P"#)?;
    digits(c)?;
    lit(c, b"\"")?;
    if lit(c, br#","hash":""#).is_some() {
        let n =
            c.s.get(c.i..)?
                .iter()
                .take_while(|b| b.is_ascii_hexdigit())
                .count();
        c.i += n;
        lit(c, b"\"")?;
    }
    lit(c, br#","datavalue":{"value":"#)?;
    let value = if lit(c, br#"{"entity-type":""#).is_some() {
        let entity_type = if lit(c, br#"item""#).is_some() {
            c.i -= 1;
            "item"
        } else {
            word(c, t)?
        };
        lit(c, br#"","numeric-id":"#)?;
        let numeric_id = digits(c)?;
        let id = if lit(c, br#","id":""#).is_some() {
            let id = word(c, t)?;
            lit(c, b"\"")?;
            Some(Cow::Borrowed(id))
        } else {
            None
        };
        lit(c, b"}")?;
        RawEntityValue {
            entity_type: Some(Cow::Borrowed(entity_type)),
            numeric_id: Some(numeric_id),
            id,
        }
    } else {
        datavalue_value(c, t).ok()?
    };
    // The usual pairs of datavalue type and datatype as one compare each (the same bytes `word` would read).
    // Byte 9 of a tail is the first of its datavalue type: one compare passes over most of the others.
    let first = c.s.get(c.i + 9).copied();
    for &(tail, dv_type, datatype) in TAILS {
        if first == Some(tail[9]) && lit(c, tail).is_some() {
            return Some(RawSnak {
                snaktype: Some(Cow::Borrowed("value")),
                datatype: Some(Cow::Borrowed(datatype)),
                dv_type: Some(Cow::Borrowed(dv_type)),
                value,
            });
        }
    }
    lit(c, br#","type":""#)?;
    let dv_type = word(c, t)?;
    lit(c, br#""},"datatype":""#)?;
    let datatype = word(c, t)?;
    lit(c, br#""}"#)?;
    Some(RawSnak {
        snaktype: Some(Cow::Borrowed("value")),
        datatype: Some(Cow::Borrowed(datatype)),
        dv_type: Some(Cow::Borrowed(dv_type)),
        value,
    })
}

/// The end of a plain main snak for the usual (datavalue type, datatype) pairs, most frequent first:
/// `","type":"T"},"datatype":"D"}` with T and D as `word` reads them.
const TAILS: &[(&[u8], &str, &str)] = &[
    (
        br#","type":"wikibase-entityid"},"datatype":"wikibase-item"}"#,
        "wikibase-entityid",
        "wikibase-item",
    ),
    (
        br#","type":"string"},"datatype":"external-id"}"#,
        "string",
        "external-id",
    ),
    (br#","type":"time"},"datatype":"time"}"#, "time", "time"),
    (
        br#","type":"string"},"datatype":"string"}"#,
        "string",
        "string",
    ),
    (br#","type":"string"},"datatype":"url"}"#, "string", "url"),
    (
        br#","type":"string"},"datatype":"commonsMedia"}"#,
        "string",
        "commonsMedia",
    ),
    (
        br#","type":"quantity"},"datatype":"quantity"}"#,
        "quantity",
        "quantity",
    ),
    (
        br#","type":"monolingualtext"},"datatype":"monolingualtext"}"#,
        "monolingualtext",
        "monolingualtext",
    ),
    (
        br#","type":"globecoordinate"},"datatype":"globe-coordinate"}"#,
        "globecoordinate",
        "globe-coordinate",
    ),
];

/// Exactly the bytes `l` at the cursor (moved past them).
#[inline(always)]
fn lit(c: &mut Cur<'_>, l: &[u8]) -> Option<()> {
    if c.s.get(c.i..)?.starts_with(l) {
        c.i += l.len();
        Some(())
    } else {
        None
    }
}

/// A plain integer at the cursor (as [`uint`] takes it), followed by a delimiter.
#[inline(always)]
fn digits(c: &mut Cur<'_>) -> Option<u64> {
    let rest = c.s.get(c.i..)?;
    let n = rest.iter().take_while(|b| b.is_ascii_digit()).count();
    if n == 0 || n > 19 || (n > 1 && rest[0] == b'0') {
        return None;
    }
    c.i += n;
    Some(
        rest[..n]
            .iter()
            .fold(0u64, |v, &x| v * 10 + u64::from(x - b'0')),
    )
}

/// One or more letters, digits or `-` at the cursor, as text (the string's closing quote is left to the caller).
#[inline(always)]
fn word<'a>(c: &mut Cur<'a>, t: &'a str) -> Option<&'a str> {
    let n =
        c.s.get(c.i..)?
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'-')
            .count();
    if n == 0 {
        return None;
    }
    let w = t.get(c.i..c.i + n)?;
    c.i += n;
    Some(w)
}

/// A datavalue's `value`: the entity keys of an object; strings, arrays, numbers and literals (which the skim
/// writes as `0`) and `null` read as nothing.
fn datavalue_value<'a>(c: &mut Cur<'a>, t: &'a str) -> Res<RawEntityValue<'a>> {
    match c.peek() {
        Some(b'{') => {
            let mut v = RawEntityValue::default();
            c.members(|c, k| {
                match k {
                    b"entity-type" => v.entity_type = Some(text(c, t)?),
                    b"numeric-id" => v.numeric_id = Some(uint(c)?),
                    b"id" => v.id = Some(text(c, t)?),
                    _ => {
                        c.value()?;
                    }
                }
                Ok(())
            })?;
            Ok(v)
        }
        Some(b'"' | b'[' | b'0'..=b'9' | b'-' | b't' | b'f') => {
            c.value()?;
            Ok(RawEntityValue::default())
        }
        _ => {
            null(c)?;
            Ok(RawEntityValue::default())
        }
    }
}

/// An object key as text (the cursor refuses keys with escapes); raw control bytes are refused.
fn key_text<'a>(c: &Cur<'a>, t: &'a str, key: &'a [u8]) -> Res<&'a str> {
    let a = key.as_ptr() as usize - c.s.as_ptr() as usize;
    match t.get(a..a + key.len()) {
        Some(k) if !has_control(key) => Ok(k),
        _ => c.err("a key with a control byte"),
    }
}

/// [`text`] for the plain paths (`plain_term`, `plain_statement`), its usual case read inline: a string right at
/// the cursor with neither escape nor control byte is the borrowed text `text` gives it (the same scan, the same
/// bounds); anything else, cursor unmoved, is read by `text` itself. `None` where `text` fails. Saves the call of
/// `text` and its return through memory on the two strings of every kept term and the GUID of every statement.
#[inline(always)]
fn text_inline<'a>(c: &mut Cur<'a>, t: &'a str) -> Option<Cow<'a, str>> {
    if c.s.get(c.i) == Some(&b'"') {
        let a = c.i + 1;
        if let Some(b) = find_string_stop(c.s, a) {
            if c.s[b] == b'"' {
                if let Some(s) = t.get(a..b) {
                    c.i = b + 1;
                    return Some(Cow::Borrowed(s));
                }
            }
        }
    }
    text(c, t).ok()
}

/// At a string: its text, borrowed when it has no escape, else decoded.
#[inline]
fn text<'a>(c: &mut Cur<'a>, t: &'a str) -> Res<Cow<'a, str>> {
    if c.peek() != Some(b'"') {
        return c.err("expected a string");
    }
    // Nearly every string has neither escape nor control byte: one scan finds its end and proves it.
    let a = c.i + 1;
    if let Some(b) = find_string_stop(c.s, a) {
        if c.s[b] == b'"' {
            if let Some(s) = t.get(a..b) {
                c.i = b + 1;
                return Ok(Cow::Borrowed(s));
            }
        }
    }
    let (a, b, escaped) = c.string()?;
    let raw = &c.s[a..b];
    if has_control(raw) {
        return c.err("a control byte in a string");
    }
    if !escaped {
        return match t.get(a..b) {
            Some(s) => Ok(Cow::Borrowed(s)),
            None => c.err("a string that is not text"),
        };
    }
    match unescape(raw) {
        Some(s) => Ok(Cow::Owned(s)),
        None => c.err("an escape read differently"),
    }
}

/// A plain scalar inside a kept term (checked as simd-json would: it reads the whole term).
fn scalar<'a>(c: &mut Cur<'a>, t: &'a str) -> Res<()> {
    match c.peek() {
        Some(b'"') => text(c, t).map(drop),
        Some(b'0'..=b'9') => uint(c).map(drop),
        _ => {
            let (a, b) = c.value()?;
            match &c.s[a..b] {
                b"null" | b"true" | b"false" => Ok(()),
                _ => c.err("not a plain scalar"),
            }
        }
    }
}

/// A non-negative integer as JSON writes it (no sign, fraction, exponent or leading zero; at most 19 digits).
fn uint(c: &mut Cur<'_>) -> Res<u64> {
    if !matches!(c.peek(), Some(b'0'..=b'9')) {
        return c.err("expected an integer");
    }
    let (a, b) = c.value()?;
    let d = &c.s[a..b];
    if d.len() > 19 || (d.len() > 1 && d[0] == b'0') || !d.iter().all(u8::is_ascii_digit) {
        return c.err("not a plain integer");
    }
    Ok(d.iter().fold(0u64, |n, &x| n * 10 + u64::from(x - b'0')))
}

/// Exactly `null`.
fn null(c: &mut Cur<'_>) -> Res<()> {
    if c.peek() != Some(b'n') {
        return c.err("unexpected value");
    }
    let (a, b) = c.value()?;
    if &c.s[a..b] == b"null" {
        Ok(())
    } else {
        c.err("unexpected value")
    }
}

/// Exactly `[]` (whitespace allowed).
fn empty_array(c: &mut Cur<'_>) -> Res<()> {
    c.i += 1;
    if c.peek() != Some(b']') {
        return c.err("a non-empty array");
    }
    c.i += 1;
    Ok(())
}

/// The first byte at or after `from` that is `"`, a backslash or a control byte (below 0x20), 16 bytes at a time.
#[inline(always)]
fn find_string_stop(s: &[u8], from: usize) -> Option<usize> {
    let mut j = from;
    #[cfg(target_arch = "x86_64")]
    while let Some(chunk) = s.get(j..j + 16) {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline; the load reads the 16 bytes of `chunk`.
        let m = unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            // v <= 0x1F (unsigned) exactly when min(v, 0x1F) == v.
            let ctrl = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x1F)), v);
            _mm_movemask_epi8(_mm_or_si128(
                _mm_or_si128(
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                    _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
                ),
                ctrl,
            ))
        };
        if m != 0 {
            return Some(j + m.trailing_zeros() as usize);
        }
        j += 16;
    }
    s.get(j..)?
        .iter()
        .position(|&b| b == b'"' || b == b'\\' || b < 0x20)
        .map(|k| j + k)
}

#[inline]
fn has_control(b: &[u8]) -> bool {
    b.iter().any(|&x| x < 0x20)
}

/// Decode JSON escapes (`\"` `\\` `\/` `\b` `\f` `\n` `\r` `\t`, `\uXXXX` with surrogate pairs); `None` for any
/// other escape or an unpaired surrogate.
fn unescape(raw: &[u8]) -> Option<String> {
    let mut out = Vec::with_capacity(raw.len());
    let mut i = 0;
    while i < raw.len() {
        let Some(k) = memchr::memchr(b'\\', &raw[i..]) else {
            out.extend_from_slice(&raw[i..]);
            break;
        };
        out.extend_from_slice(&raw[i..i + k]);
        i += k;
        let b = *raw.get(i + 1)?;
        i += 2;
        let ch = match b {
            b'"' => '"',
            b'\\' => '\\',
            b'/' => '/',
            b'b' => '\u{8}',
            b'f' => '\u{c}',
            b'n' => '\n',
            b'r' => '\r',
            b't' => '\t',
            b'u' => {
                let hi = hex4(raw.get(i..i + 4)?)?;
                i += 4;
                let cp = if (0xD800..0xDC00).contains(&hi) {
                    if raw.get(i..i + 2)? != b"\\u" {
                        return None;
                    }
                    let lo = hex4(raw.get(i + 2..i + 6)?)?;
                    if !(0xDC00..0xE000).contains(&lo) {
                        return None;
                    }
                    i += 6;
                    0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00)
                } else {
                    hi
                };
                char::from_u32(cp)?
            }
            _ => return None,
        };
        let mut buf = [0u8; 4];
        out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
    }
    String::from_utf8(out).ok()
}

fn hex4(h: &[u8]) -> Option<u32> {
    h.iter().try_fold(0u32, |n, &x| {
        let d = (x as char).to_digit(16)?;
        Some(n * 16 + d)
    })
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::dump::entity::Line;
    use crate::dump::line::serde::parse_entity;
    use crate::dump::line::skim::tests::{
        eight, langs, mutated_lines, real_fixture_lines, synth_lines,
    };

    /// The oracle: the skim path (skimmed copy parsed by simd-json), as a Debug string, when it accepts the line.
    fn skim_path(line: &[u8], langs: &Langs) -> Option<String> {
        let mut out = Vec::new();
        crate::dump::line::skim::skim(line, langs, &mut out).ok()?;
        let mut buffers = simd_json::Buffers::new(1024);
        match parse_entity(&mut out, langs, &mut buffers) {
            Ok(Line::Entity(e)) => Some(format!("{e:?}")),
            _ => None,
        }
    }

    /// Read `line` directly; when that succeeds, the skim path must give the same entity. Returns whether the
    /// direct reader took the line.
    fn agrees(line: &[u8], langs: &Langs) -> bool {
        let Ok(text) = std::str::from_utf8(line) else {
            return false;
        };
        match entity(text, langs, None) {
            Ok(e) => {
                assert_eq!(
                    Some(format!("{e:?}")),
                    skim_path(line, langs),
                    "{}",
                    String::from_utf8_lossy(&line[..line.len().min(300)])
                );
                true
            }
            Err(_) => false,
        }
    }

    /// Every generated line (current and 2015 serialisations, `mul`, lexemes, properties) is read directly, to
    /// the skim path's entity.
    #[test]
    fn generated_lines_are_read_directly_to_the_same_entity() {
        for seed in [1, 2, 3] {
            let ls = synth_lines(1500, seed, 0.3);
            assert!(ls.len() > 1000);
            for l in &ls {
                for langs in [eight(), langs()] {
                    assert!(agrees(l, &langs), "{}", String::from_utf8_lossy(l));
                }
            }
        }
    }

    /// The same on every real fixture line (`SWORD_REAL_FIXTURES`); lines it declines go the usual way.
    #[test]
    fn real_lines_are_read_directly_to_the_same_entity() {
        let Ok(root) = std::env::var("SWORD_REAL_FIXTURES") else {
            return;
        };
        let (mut n, mut direct) = (0usize, 0usize);
        for (_, ls) in real_fixture_lines(std::path::Path::new(&root)) {
            for l in &ls {
                for langs in [eight(), langs()] {
                    direct += usize::from(agrees(l, &langs));
                    n += 1;
                }
            }
        }
        assert!(n > 2000, "{n} lines");
        // The mock lines of broken dumps and a few odd real ones decline; nearly all are read directly.
        assert!(direct * 100 >= n * 98, "read directly {direct} of {n}");
    }

    /// The byte-for-byte shapes (plain statements, terms and sitelinks) next to their near misses, which take the
    /// member walk: every line is read directly, to the skim path's entity.
    #[test]
    fn plain_shapes_and_near_misses_agree() {
        let snak = r#"{"snaktype":"value","property":"P31","datavalue":{"value":{"entity-type":"item","numeric-id":5,"id":"Q5"},"type":"wikibase-entityid"},"datatype":"wikibase-item"}"#;
        let statements = [
            format!(r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$a","rank":"normal"}}"#),
            format!(
                r#"{{"mainsnak":{snak},"type":"statement","qualifiers":{{"P1":[{{"x":"}}]\"{{"}}]}},"qualifiers-order":["P1","]"],"id":"Q1$b","rank":"preferred","references":[{{"hash":"h","snaks":{{}}}}]}}"#
            ),
            format!(
                r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$\u0063","rank":"deprecated"}}"#
            ),
            // Near misses: another order, a repeated key, whitespace, another type, an extra key, no rank.
            format!(r#"{{"rank":"normal","mainsnak":{snak},"type":"statement","id":"Q1$d"}}"#),
            format!(
                r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$e","rank":"normal","id":"Q1$f"}}"#
            ),
            format!(r#"{{ "mainsnak":{snak},"type":"statement","id":"Q1$g","rank":"normal"}}"#),
            format!(r#"{{"mainsnak":{snak},"type":"claim","id":"Q1$h","rank":"normal"}}"#),
            format!(
                r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$i","rank":"normal","x":[1]}}"#
            ),
            format!(r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$j"}}"#),
            format!(r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$k","rank":"normal" }}"#),
            // Ranks near the three matched whole: escaped, longer, shorter, unknown, spaced, empty.
            format!(r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$l","rank":"nor\u006dal"}}"#),
            format!(r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$m","rank":"normalx"}}"#),
            format!(r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$n","rank":"preferre"}}"#),
            format!(r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$o","rank":"bogus"}}"#),
            format!(r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$p","rank": "deprecated"}}"#),
            format!(r#"{{"mainsnak":{snak},"type":"statement","id":"Q1$r","rank":""}}"#),
        ];
        let snaks = [
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":{"entity-type":"item","numeric-id":7},"type":"wikibase-entityid"},"datatype":"wikibase-item"}"#,
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":{"entity-type":"itemx","numeric-id":7},"type":"wikibase-entityid"},"datatype":"wikibase-item"}"#,
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":{"entity-type":"property","numeric-id":7},"type":"wikibase-entityid"},"datatype":"wikibase-property"}"#,
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":"x","type":"string"},"datatype":"commonsMedia"}"#,
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":"x","type":"string"},"datatype":"external-idx"}"#,
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":{"time":"+1","timezone":0},"type":"time"},"datatype":"time"}"#,
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":{"amount":"+1","unit":"1"},"type":"quantity"},"datatype":"quantity"}"#,
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":{"latitude":1,"longitude":2},"type":"globecoordinate"},"datatype":"globe-coordinate"}"#,
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":{"text":"t","language":"en"},"type":"monolingualtext"},"datatype":"monolingualtext"}"#,
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":"x","type":"stringy"},"datatype":"url"}"#,
            // The first byte of a usual tail's type, the rest not: `word` reads them.
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":"x","type":"strin"},"datatype":"url"}"#,
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":"x","type":"time"},"datatype":"timex"}"#,
            r#"{"snaktype":"value","property":"P2","datavalue":{"value":"x","type":"wikibase-entityid"},"datatype":"wikibase-lexeme"}"#,
        ];
        let mut claims: Vec<String> = statements.to_vec();
        for s in snaks {
            claims.push(format!(
                r#"{{"mainsnak":{s},"type":"statement","id":"Q1$s","rank":"normal"}}"#
            ));
        }
        let claims = claims.join(",");
        let labels = [
            r#""en":{"language":"en","value":"plain"}"#,
            r#""fr":{"language":"fr","value":"a \"q\" } ] { \\ \u00e9"}"#,
            r#""de":{"language":"de","value":"x","extra":1}"#,
            r#""es":{"value":"v","language":"es"}"#,
            r#""it":{ "language":"it","value":"w"}"#,
            r#""nl":{"language":"nl","value":"s } \" ] \\"}"#,
            r#""pl":{"language":"pl","value":"x","extra":{"a":"}"}}"#,
            r#""sv":{"language":"sv","value":"y" }"#,
            r#""ru":{"value":"z","language":"ru"}"#,
            r#""ja":{"language":"ja","value":"\u3054"}"#,
        ]
        .join(",");
        let sitelinks = [
            r#""enwiki":{"site":"enwiki","title":"T","badges":[]}"#,
            r#""dewiki":{"site":"dewiki","title":"a } \" ]","badges":["Q1","Q2"]}"#,
            r#""frwiki":{"site":"frwiki","title":"T","badges":[],"url":"u"}"#,
            r#""eswiki":{"title":"T","site":"eswiki","badges":[]}"#,
            r#""itwiki":{"site":"itwiki","title":"T","badges":[ ]}"#,
            r#""nlwiki":{"site":"nlwiki","title":"T","badges":["}"]}"#,
        ]
        .join(",");
        let line = format!(
            r#"{{"type":"item","id":"Q1","labels":{{{labels}}},"descriptions":{{{labels}}},"claims":{{"P31":[{claims}]}},"sitelinks":{{{sitelinks}}}}}"#
        );
        for langs in [eight(), langs()] {
            assert!(agrees(line.as_bytes(), &langs), "declined {line}");
        }
        // Each near miss alone as well (a failure names the shape).
        for st in &statements {
            let l = format!(r#"{{"type":"item","id":"Q1","claims":{{"P31":[{st}]}}}}"#);
            assert!(agrees(l.as_bytes(), &eight()), "declined {l}");
        }
        for s in snaks {
            let l = format!(
                r#"{{"type":"item","id":"Q1","claims":{{"P2":[{{"mainsnak":{s},"type":"statement","id":"Q1$s","rank":"normal"}}]}}}}"#
            );
            assert!(agrees(l.as_bytes(), &eight()), "declined {l}");
        }
    }

    /// Every usual snak tail starts with `","type":"`, so that its byte 9 is the first of the type (the byte
    /// `plain_snak_at` compares before the whole tail).
    #[test]
    fn snak_tails_have_the_type_at_byte_nine() {
        for &(tail, dv_type, datatype) in TAILS {
            let expected = format!(r#","type":"{dv_type}"}},"datatype":"{datatype}"}}"#);
            assert_eq!(tail, expected.as_bytes());
            assert_eq!(tail[9], dv_type.as_bytes()[0]);
        }
    }

    /// Hand-made lines for every shape the direct reader accepts or declines: accepted ones agree with the
    /// skim path, declined ones are those whose reading by simd-json it does not reproduce.
    #[test]
    fn odd_shapes_agree_or_decline() {
        let ok = [
            r#"{}"#,
            r#"{"type":"item","id":"Q1","labels":[],"descriptions":[],"claims":[],"sitelinks":[]}"#,
            r#"{"type":"item","id":"Q1","labels":null,"descriptions":null,"claims":null,"sitelinks":null}"#,
            r#"{"type":"item","id":"Q1","labels":{"en":{"language":"en","value":"a"},"en":{"language":"en","value":"b"},"mul":{"value":"m"},"xx":[1,{"a":[]}]}}"#,
            r#"{"type":"item","labels":{"en":{"language":"en"}},"descriptions":{"ko":{"language":"ko","value":"\uD55C\u00e9 \"q\" \\ \/ \uD83D\uDE00"}}}"#,
            r#" { "type" : "lexeme" , "id" : "L1" , "lemmas" : { "en" : 1e999 } } "#,
            r#"{"type":"item","id":"Q1","claims":{"P31":null,"P1":[],"P2":[{"mainsnak":{"snaktype":"value","datavalue":{"value":{"entity-type":"item","numeric-id":5},"type":"wikibase-entityid"}},"rank":"normal","id":"Q1$x"},{"mainsnak":{"snaktype":"somevalue"},"rank":"bogus"},{"mainsnak":{"snaktype":"value","datavalue":{"value":null,"type":"wikibase-entityid"}}},{"mainsnak":{"snaktype":"value","datavalue":{"value":"s","type":"string"}}},{"mainsnak":{"snaktype":"value","datavalue":{"value":{"id":"L5"},"type":"wikibase-entityid"}}}]}}"#,
            r#"{"id":"P7","type":"property","datatype":"wikibase-item","lastrevid":0,"modified":"2024","sitelinks":{"a":{"x":"}"},"b":[]}}"#,
            r#"{"type":"item","id":"Q1","sitelinks#":5,"claims":{"P5":[{"mainsnak":{"snaktype":"value","datavalue":{"type":"wikibase-entityid","value":{"entity-type":"property","id":"P9"}},"datatype":"wikibase-property"},"mainsnak":{"snaktype":"novalue"}}]}}"#,
            r#"{"type":"item","id":"Q2","claims":{"P31":[{"mainsnak":{"snaktype":"value","property":"P31","hash":"ad7d38a03cdd40cdc373de0dc4e7b7fcbccb31d9","datavalue":{"value":{"entity-type":"item","numeric-id":5,"id":"Q5"},"type":"wikibase-entityid"},"datatype":"wikibase-item"},"type":"statement","id":"Q2$1","rank":"preferred"}],"P5":[{"mainsnak":{"snaktype":"value","property":"P5","datavalue":{"value":{"entity-type":"form","id":"L1-F2"},"type":"wikibase-entityid"},"datatype":"wikibase-form"}},{"mainsnak":{"snaktype":"value","property":"P5","hash":"","datavalue":{"value":{"entity-type":"item","numeric-id":7},"type":"wikibase-entityid"},"datatype":"wikibase-item"}},{"mainsnak":{"snaktype":"value","property":"P5","datavalue":{"value":"a \"b\"","type":"string"},"datatype":"external-id"}},{"mainsnak":{"snaktype":"value","property":"P5","datavalue":{"value":{"time":"+2001","precision":11},"type":"time"},"datatype":"time"}},{"mainsnak":{"snaktype":"value","property":"P5","datavalue":{"value":{"entity-type":"item","numeric-id":0,"id":""},"type":"wikibase-entityid"},"datatype":"wikibase-item"}}]}}"#,
        ];
        for l in ok {
            assert!(agrees(l.as_bytes(), &eight()), "declined {l}");
        }
        let declined = [
            r#"{"type":"item","type":"property"}"#,
            r#"{"labels":{"en":{"language":"en","value":"a"}},"labels":{}}"#,
            r#"{"type":1}"#,
            r#"{"lastrevid":01}"#,
            r#"{"lastrevid":-1}"#,
            r#"{"lastrevid":1.5}"#,
            r#"{"lastrevid":12345678901234567890}"#,
            r#"{"lastrevid":"5"}"#,
            r#"{"labels":[1]}"#,
            r#"{"labels":{"en":"x"}}"#,
            r#"{"labels":{"en":{"language":"en","value":1}}}"#,
            r#"{"labels":{"en":{"language":[],"value":"a"}}}"#,
            r#"{"labels":{"en":{"language":"en","value":"\uD800"}}}"#,
            r#"{"labels":{"en":{"language":"en","value":"\uDC00x"}}}"#,
            r#"{"labels":{"en":{"language":"en","value":"\q"}}}"#,
            "{\"labels\":{\"en\":{\"language\":\"en\",\"value\":\"a\tb\"}}}",
            "{\"claims\":{\"P1\t\":[]}}",
            "{\"labels\":{\"en\":{\"lang\tuage\":\"en\",\"value\":\"a\"}}}",
            r#"{"claims":{"P1":{}}}"#,
            r#"{"claims":{"P1":[1]}}"#,
            r#"{"claims":{"P1":[{"mainsnak":[]}]}}"#,
            r#"{"claims":{"P1":[{"mainsnak":{"datavalue":"x"}}]}}"#,
            r#"{"claims":{"P1":[{"mainsnak":{"datavalue":{"value":nul}}}]}}"#,
            r#"{"claims":{"P1":[{"mainsnak":{"datavalue":{"value":{"numeric-id":"5"}}}}]}}"#,
            r#"{"claims":{"P1":[{"rank":null}]}}"#,
            r#"{"claims":{"P1":[{"mainsnak":{"snaktype":"value","property":"P1","datavalue":{"value":{"entity-type":"item","numeric-id":05,"id":"Q5"},"type":"wikibase-entityid"},"datatype":"wikibase-item"}}]}}"#,
            r#"{"claims":{"P1":[{"mainsnak":{"snaktype":"value","property":"P1","datavalue":{"value":{"entity-type":"item","numeric-id":5,"id":"Q5"},"type":"wikibase-entityid"},"datatype":"wikibase-item","datatype":1}}]}}"#,
            r#"{"sitelinks":[{}]}"#,
            r#"{"sitelinks":"x"}"#,
            r#"{"claims":[{}]}"#,
            r#"{"type":"item"} x"#,
            r#"{"ty\u0070e":"item"}"#,
            r#"{"type":"item""#,
        ];
        for l in declined {
            assert!(!agrees(l.as_bytes(), &eight()), "read {l}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(3000))]
        /// Cut, overwritten or extended generated lines: never a panic, and whatever the direct reader takes, the
        /// skim path reads to the same entity.
        #[test]
        fn mutated_lines_agree_with_the_skim_path(
            l in mutated_lines(5, vec![
                &b"1e999999"[..], b"\"", b"\\", b"{", b"]", b",", b"tru", b"\\u00", b"\\uD800", b"\\uDC00",
                b"\\uD83D\\uDE00", b"\\n", b"\t", b"-", b"01", b"null", b"[]", b"{}", b"\"labels\":{},",
                b"\"claims\":[],", b"\"sitelinks#\":3,", b"\"value\":\"x\",", b"\"mul\":{\"value\":\"m\"},",
            ]),
        ) {
            for langs in [eight(), langs()] {
                agrees(&l, &langs);
            }
        }
    }

    #[test]
    fn packed_language_keys_find_what_langs_finds() {
        let many = Langs {
            langs: (0..20).map(|i| format!("l{i}")).collect(),
        };
        let long = Langs {
            langs: vec!["en".into(), "be-tarask".into(), "en".into()],
        };
        for langs in [eight(), langs(), many, long] {
            let keys = LangKeys::new(&langs);
            for k in [
                &b"en"[..],
                b"ja",
                b"ko",
                b"e",
                b"",
                b"en\0",
                b"\0en",
                b"enn",
                b"l19",
                b"l7",
                b"be-tarask",
                b"be-taras",
                b"pt-br",
                b"mul",
            ] {
                assert_eq!(
                    keys.index(k),
                    langs.index_bytes(k),
                    "{:?}",
                    String::from_utf8_lossy(k)
                );
            }
        }
    }

    #[test]
    fn unescapes_like_json() {
        assert_eq!(unescape(br#"a\"b\\c\/d\n"#).as_deref(), Some("a\"b\\c/d\n"));
        assert_eq!(unescape(br"\u00e9\uD83D\uDE00x").as_deref(), Some("é😀x"));
        assert_eq!(unescape(br"\u00").as_deref(), None);
        assert_eq!(unescape(br"\uD83Dx").as_deref(), None);
        assert_eq!(unescape(br"\uDE00").as_deref(), None);
        assert_eq!(unescape(br"\x").as_deref(), None);
        assert_eq!(unescape(br"\u00E9").as_deref(), Some("é"));
        assert_eq!(unescape(b"\\").as_deref(), None);
    }
}
