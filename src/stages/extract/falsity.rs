//! What the extract stage keeps for the falsity tier (docs/falsity.md), beside what it keeps for the triples:
//!
//! - the property constraints (P2302) of every property line ([`constraints`](super::constraints));
//! - the live `somevalue` / `novalue` statements of labelled items ([`Snak`], 16 bytes each);
//! - the live item values of every item as (property, object) pairs ([`Pair`], 16 bytes each), for "another
//!   item has o as a value" of distinct-values properties — dropped for a property as soon as one of its lines
//!   has shown that it is unlabelled or has no such constraint ([`Known`]: a verdict that no later line takes
//!   back, so any order of lines and any cut into shards give the same rows), for an object whose line left
//!   it unlabelled when the join state compacts them, and at the join kept only for the properties and
//!   entities of the final triples (the only ones a tier is asked of);
//! - the P279 statements of every item (kept with the seed statements whatever the transitive seed says).
//!
//! At the join ([`Values`]) the labelled items' candidates and their snaks give `values.parquet`, their P31 and
//! P279 statements (with the unlabelled items' P279) `types.parquet`, the pairs `distinct.parquet`.

#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::core::error::{Error, Result};
use crate::core::falsity::{Constraint, Kind, SubjectValues, Summary, TypeStatement};
use crate::core::ids::{Pid, Qid};
use crate::stages::extract::counts::Counts;
use crate::stages::extract::spill::{json_lines, read_json, write_json, Record};
use rayon::slice::ParallelSliceMut;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::{BufRead, Write};

/// P279 (subclass of): its statements are kept whatever their subject, for the closure.
pub const P279: Pid = Pid(279);
/// P31 (instance of).
pub const P31: Pid = Pid(31);

/// A live `somevalue` or `novalue` statement of a labelled item.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Snak {
    pub s: u64,
    pub p: u32,
    /// `novalue` (else `somevalue`).
    pub novalue: bool,
}

/// A live item value of some item: property and object (the subject does not matter).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Pair {
    pub p: u32,
    pub o: u64,
}

/// A property id as the candidates hold it (`P31` → 31), `None` for anything else.
pub fn p32(property: &str) -> Option<u32> {
    Pid::parse(property).and_then(|p| u32::try_from(p.0).ok())
}

/// The manifest counts of the constraint reader, under the oracle's names with a `falsity_` prefix
/// (`constraints_by_kind` spelled `falsity_constraints_<kind>`).
pub const SUMMARY_COUNTS: [&str; 14] = [
    "falsity_constraints",
    "falsity_constraints_single_value",
    "falsity_constraints_distinct_values",
    "falsity_constraints_subject_type",
    "falsity_constraints_value_type",
    "falsity_constraints_other_kind",
    "falsity_constraints_deprecated",
    "falsity_constraints_with_separator",
    "falsity_constraints_with_exceptions",
    "falsity_bad_constraint_without_type",
    "falsity_bad_constraint_without_classes",
    "falsity_bad_constraint_unknown_relation",
    "falsity_bad_qualifier_without_value",
    "falsity_property_lines_unread",
];

/// Read the constraints of a property line (its raw bytes: the fast parsers skip qualifiers) into
/// `constraints`, and what was counted into `counts`. A line serde_json does not read (the fast parser
/// accepted it) is counted as `falsity_property_lines_unread` and contributes no constraint.
pub fn property_line(constraints: &mut Vec<Constraint>, counts: &mut Counts, raw: &[u8]) {
    let Ok(Some((cs, sum))) = super::constraints::read_property_line(raw) else {
        counts.add("falsity_property_lines_unread", 1);
        return;
    };
    constraints.extend(cs);
    let by = |k: Kind| {
        sum.constraints_by_kind
            .get(k.as_str())
            .copied()
            .unwrap_or(0)
    };
    for (k, v) in [
        ("falsity_constraints", sum.constraints),
        ("falsity_constraints_single_value", by(Kind::SingleValue)),
        (
            "falsity_constraints_distinct_values",
            by(Kind::DistinctValues),
        ),
        ("falsity_constraints_subject_type", by(Kind::SubjectType)),
        ("falsity_constraints_value_type", by(Kind::ValueType)),
        ("falsity_constraints_other_kind", sum.constraints_other_kind),
        ("falsity_constraints_deprecated", sum.constraints_deprecated),
        (
            "falsity_constraints_with_separator",
            sum.constraints_with_separator,
        ),
        (
            "falsity_constraints_with_exceptions",
            sum.constraints_with_exceptions,
        ),
        (
            "falsity_bad_constraint_without_type",
            sum.bad_constraint_without_type,
        ),
        (
            "falsity_bad_constraint_without_classes",
            sum.bad_constraint_without_classes,
        ),
        (
            "falsity_bad_constraint_unknown_relation",
            sum.bad_constraint_unknown_relation,
        ),
        (
            "falsity_bad_qualifier_without_value",
            sum.bad_qualifier_without_value,
        ),
    ] {
        counts.add(k, v);
    }
}

/// The oracle's summary (`scripts/falsity-oracle --summary`, without `p279_cycles`, which distort counts) from
/// the manifest counts.
pub fn summary_of(counts: &std::collections::BTreeMap<String, u64>) -> Summary {
    let get = |k: &str| counts.get(&format!("falsity_{k}")).copied().unwrap_or(0);
    let mut s = Summary::new();
    s.constraints = get("constraints");
    for k in Kind::ALL {
        s.constraints_by_kind.insert(
            k.as_str().to_string(),
            get(&format!("constraints_{}", k.as_str())),
        );
    }
    s.constraints_other_kind = get("constraints_other_kind");
    s.constraints_deprecated = get("constraints_deprecated");
    s.constraints_with_separator = get("constraints_with_separator");
    s.constraints_with_exceptions = get("constraints_with_exceptions");
    s.bad_constraint_without_type = get("bad_constraint_without_type");
    s.bad_constraint_without_classes = get("bad_constraint_without_classes");
    s.bad_constraint_unknown_relation = get("bad_constraint_unknown_relation");
    s.bad_qualifier_without_value = get("bad_qualifier_without_value");
    s
}

/// Whether one property line can have a benchmark statement whose tier a pair decides: the line is labelled
/// (a final triple's property is) and carries a distinct-values constraint that applies (no separator).
/// `constraints` are the constraints read from that line alone.
pub fn line_keeps_pairs(labelled: bool, constraints: &[Constraint]) -> bool {
    labelled
        && constraints
            .iter()
            .any(|c| c.kind == Kind::DistinctValues && !c.separator)
}

/// Note the verdicts of a part's property lines (in dump order: `(property number, the line keeps its
/// pairs)`, see [`line_keeps_pairs`]). Their pairs are then kept or dropped as they come.
pub fn learn(known: &mut Known, lines: &[(u32, bool)]) {
    for &(p, keep) in lines {
        known.learn(p, keep);
    }
}

/// What the property lines read so far say of their pairs, per property number: not seen yet, every line
/// keeps them (a labelled property with a distinct-values constraint without a separator), or some line
/// does not. Two bitmaps (property numbers are small: P1 to ≈ P13000 in 2024), a hash map past 2²⁴ (a
/// crafted dump): the stage thread asks once per pair, so this must cost a few instructions, not a hash.
///
/// **Why "every line".** A dump may hold two lines of one property (an entity edited while the dump was
/// written: `duplicate_entities`). The pairs are dropped as they are read, so the verdict must never go from
/// drop back to keep, whichever line comes first and whatever else the reader has seen (a shard of a sharded
/// extract sees only its own lines). "Keep while every line read so far keeps" is such a verdict: a drop is
/// final, and the end result is the same for any order and any cut of the lines. A labelled property with a
/// line that drops (unlabelled, or without the constraint: the versions disagree) then has none of its pairs
/// past that line, and the join leaves its distinct-values constraints out of `constraints.parquet`, so that
/// no tier reads a constraint whose pairs were dropped.
#[derive(Clone, Debug, Default)]
pub struct Known {
    seen: Vec<u64>,
    /// Every line read keeps the pairs.
    keep: Vec<u64>,
    big: HashMap<u32, bool>,
}

impl Known {
    const DENSE: u32 = 1 << 24;

    /// A line of property `p` was read and says `keep`: the property keeps its pairs while every line of it
    /// does (a drop is never taken back).
    pub fn learn(&mut self, p: u32, keep: bool) {
        if p >= Self::DENSE {
            *self.big.entry(p).or_insert(true) &= keep;
            return;
        }
        let w = (p / 64) as usize;
        if self.seen.len() <= w {
            self.seen.resize(w.saturating_add(1), 0);
            self.keep.resize(w.saturating_add(1), 0);
        }
        let bit = 1u64 << (p % 64);
        if let (Some(s), Some(k)) = (self.seen.get_mut(w), self.keep.get_mut(w)) {
            if *s & bit == 0 {
                *s |= bit;
                if keep {
                    *k |= bit;
                }
            } else if !keep {
                *k &= !bit;
            }
        }
    }

    /// The pairs of `p` cannot decide a tier: a line of it was read that does not keep them (final).
    #[inline]
    pub fn drops(&self, p: u32) -> bool {
        if p >= Self::DENSE {
            return self.big.get(&p) == Some(&false);
        }
        let w = (p / 64) as usize;
        let bit = 1u64 << (p % 64);
        match (self.seen.get(w), self.keep.get(w)) {
            (Some(s), Some(k)) => s & bit != 0 && k & bit == 0,
            _ => false,
        }
    }
}

fn read_exact_or_end<const N: usize>(r: &mut dyn BufRead) -> std::io::Result<Option<[u8; N]>> {
    let mut b = [0u8; N];
    match r.read_exact(&mut b) {
        Ok(()) => Ok(Some(b)),
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
        Err(e) => Err(e),
    }
}

/// [`Record::mem`], [`Record::order`] and [`Record::sort`] of a record with no heap data, in the order of its
/// `Ord` (equal records are identical, so the parallel unstable sort is exact and the same at any `-j`).
macro_rules! flat_record {
    () => {
        fn mem(&self) -> usize {
            std::mem::size_of::<Self>()
        }
        fn order(a: &Self, b: &Self) -> Ordering {
            a.cmp(b)
        }
        fn sort(v: &mut Vec<Self>) {
            v.par_sort_unstable();
        }
    };
}

/// On disk: s (8 bytes, little-endian), p (4), novalue (1).
impl Record for Snak {
    flat_record!();
    fn write(&self, w: &mut dyn Write) -> std::io::Result<()> {
        w.write_all(&self.s.to_le_bytes())?;
        w.write_all(&self.p.to_le_bytes())?;
        w.write_all(&[u8::from(self.novalue)])
    }
    fn read(r: &mut dyn BufRead, _: &mut Vec<u8>) -> std::io::Result<Option<Self>> {
        let Some(b) = read_exact_or_end::<13>(r)? else {
            return Ok(None);
        };
        let [s @ .., _, _, _, _, _] = b;
        let [_, _, _, _, _, _, _, _, p @ .., n] = b;
        Ok(Some(Snak {
            s: u64::from_le_bytes(s),
            p: u32::from_le_bytes(p),
            novalue: n != 0,
        }))
    }
}

/// On disk: p (4 bytes, little-endian), o (8).
impl Record for Pair {
    flat_record!();
    fn write(&self, w: &mut dyn Write) -> std::io::Result<()> {
        w.write_all(&self.p.to_le_bytes())?;
        w.write_all(&self.o.to_le_bytes())
    }
    fn read(r: &mut dyn BufRead, _: &mut Vec<u8>) -> std::io::Result<Option<Self>> {
        let Some(b) = read_exact_or_end::<12>(r)? else {
            return Ok(None);
        };
        let [p @ .., _, _, _, _, _, _, _, _] = b;
        let [_, _, _, _, o @ ..] = b;
        Ok(Some(Pair {
            p: u32::from_le_bytes(p),
            o: u64::from_le_bytes(o),
        }))
    }
}

/// Constraints on disk: one JSON document per line.
impl Record for Constraint {
    fn mem(&self) -> usize {
        let ids = self
            .exceptions
            .capacity()
            .saturating_add(self.classes.capacity())
            .saturating_mul(8);
        std::mem::size_of::<Self>()
            .saturating_add(self.statement_id.len())
            .saturating_add(ids)
            .saturating_add(48)
    }
    fn order(a: &Self, b: &Self) -> Ordering {
        a.cmp(b)
    }
    fn sort(v: &mut Vec<Self>) {
        v.sort();
    }
    json_lines!();
}

/// The `values.parquet` and `types.parquet` rows of the join's merged statement stream (sorted by subject,
/// property, object, rank), with the labelled items' snaks (sorted by subject, property) merged in.
pub struct Values<I: Iterator<Item = Result<Snak>>> {
    snaks: I,
    peeked: Option<Snak>,
    /// The error that ended the snak stream (returned by [`Values::finish`]).
    err: Option<Error>,
    /// The (subject, property) being counted, its distinct live values, and the last live object counted.
    cur: Option<(u64, u32, u32, Option<u64>)>,
    /// The last `types.parquet` row given (rows of one statement repeat with other ranks and ids).
    last_type: Option<(u64, u32, u64)>,
}

impl<I: Iterator<Item = Result<Snak>>> Values<I> {
    pub fn new(snaks: I) -> Self {
        Values {
            snaks,
            peeked: None,
            err: None,
            cur: None,
            last_type: None,
        }
    }

    fn peek(&mut self) -> Option<Snak> {
        if self.peeked.is_none() && self.err.is_none() {
            match self.snaks.next() {
                Some(Ok(s)) => self.peeked = Some(s),
                Some(Err(e)) => self.err = Some(e),
                None => {}
            }
        }
        self.peeked
    }

    /// The snak flags of `key`, consuming its snaks; the snaks of keys before it go to `out` as rows of their
    /// own.
    fn flags(&mut self, key: (u64, u32), out: &mut dyn FnMut(SubjectValues)) -> (bool, bool) {
        let (mut some, mut no) = (false, false);
        let mut alone: Option<(u64, u32, bool, bool)> = None;
        while let Some(sn) = self.peek() {
            let k = (sn.s, sn.p);
            if k >= key {
                if k > key {
                    break;
                }
                self.peeked = None;
                no |= sn.novalue;
                some |= !sn.novalue;
                continue;
            }
            self.peeked = None;
            // A key with snaks and no statement: a row of its own.
            match &mut alone {
                Some(a) if (a.0, a.1) == k => {
                    a.2 |= !sn.novalue;
                    a.3 |= sn.novalue;
                }
                _ => {
                    if let Some(a) = alone.take() {
                        out(row(a.0, a.1, 0, a.2, a.3));
                    }
                    alone = Some((sn.s, sn.p, !sn.novalue, sn.novalue));
                }
            }
        }
        if let Some(a) = alone {
            out(row(a.0, a.1, 0, a.2, a.3));
        }
        (some, no)
    }

    fn flush(&mut self, out: &mut dyn FnMut(SubjectValues)) {
        if let Some((s, p, n, _)) = self.cur.take() {
            let (some, no) = self.flags((s, p), out);
            out(row(s, p, n, some, no));
        }
    }

    /// A statement of a labelled subject (`live`: not deprecated), in stream order.
    pub fn statement(
        &mut self,
        s: u64,
        p: u32,
        o: u64,
        live: bool,
        out: &mut dyn FnMut(SubjectValues),
    ) {
        if self.cur.is_some_and(|c| (c.0, c.1) != (s, p)) {
            self.flush(out);
        }
        let cur = self.cur.get_or_insert((s, p, 0, None));
        if live && cur.3 != Some(o) {
            cur.2 = cur.2.saturating_add(1);
            cur.3 = Some(o);
        }
    }

    /// A `types.parquet` row for a live P31/P279 statement, once per (s, p, o).
    pub fn type_row(&mut self, s: u64, p: u32, o: u64) -> Option<TypeStatement> {
        if self.last_type == Some((s, p, o)) {
            return None;
        }
        self.last_type = Some((s, p, o));
        Some(TypeStatement {
            subject: Qid(s),
            property: Pid(u64::from(p)),
            object: Qid(o),
        })
    }

    /// The end of the stream: the last rows, and the snaks after every statement; the snak stream's error.
    pub fn finish(mut self, out: &mut dyn FnMut(SubjectValues)) -> Result<()> {
        self.flush(out);
        let (some, no) = self.flags((u64::MAX, u32::MAX), out);
        if some || no {
            out(row(u64::MAX, u32::MAX, 0, some, no));
        }
        match self.err {
            Some(e) => Err(e),
            None => Ok(()),
        }
    }
}

fn row(s: u64, p: u32, values: u32, somevalue: bool, novalue: bool) -> SubjectValues {
    SubjectValues {
        subject: Qid(s),
        property: Pid(u64::from(p)),
        values,
        somevalue,
        novalue,
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;

    #[test]
    fn values_count_distinct_live_objects_and_merge_snaks_by_key() {
        let snaks = vec![
            Snak {
                s: 1,
                p: 5,
                novalue: true,
            },
            Snak {
                s: 2,
                p: 1,
                novalue: false,
            },
            Snak {
                s: 2,
                p: 7,
                novalue: false,
            },
            Snak {
                s: 2,
                p: 7,
                novalue: true,
            },
            Snak {
                s: 9,
                p: 9,
                novalue: false,
            },
        ];
        let mut v = Values::new(snaks.into_iter().map(Ok));
        let mut rows = Vec::new();
        let mut out = |r: SubjectValues| {
            rows.push((r.subject.0, r.property.0, r.values, r.somevalue, r.novalue))
        };
        // (2, 7): Q3 twice (two ranks), Q4 deprecated only, Q5
        for (s, p, o, live) in [
            (1, 5, 10, false),
            (2, 7, 3, true),
            (2, 7, 3, true),
            (2, 7, 4, false),
            (2, 7, 5, true),
            (4, 1, 1, true),
        ] {
            v.statement(s, p, o, live, &mut out);
        }
        v.finish(&mut out).unwrap();
        assert_eq!(
            rows,
            vec![
                (1, 5, 0, false, true),
                (2, 1, 0, true, false),
                (2, 7, 2, true, true),
                (4, 1, 1, false, false),
                (9, 9, 0, true, false),
            ]
        );
    }

    #[test]
    fn records_round_trip_on_disk() {
        let mut buf = Vec::new();
        let s = Snak {
            s: u64::MAX - 3,
            p: 279,
            novalue: true,
        };
        let p = Pair { p: 7, o: 1 << 40 };
        s.write(&mut buf).unwrap();
        p.write(&mut buf).unwrap();
        let mut r = std::io::BufReader::new(&buf[..]);
        let mut scratch = Vec::new();
        assert_eq!(Snak::read(&mut r, &mut scratch).unwrap(), Some(s));
        assert_eq!(Pair::read(&mut r, &mut scratch).unwrap(), Some(p));
        assert_eq!(Pair::read(&mut r, &mut scratch).unwrap(), None);
    }

    /// The verdict after any lines, in any order, is "every line keeps" for a property that was seen, no
    /// drop for one that was not; a drop is never taken back while the lines come (hand-checked cases
    /// first, then any sequence, dense and past 2²⁴).
    #[test]
    fn a_property_keeps_its_pairs_while_every_line_of_it_does() {
        let mut k = Known::default();
        assert!(!k.drops(36));
        k.learn(36, true);
        assert!(!k.drops(36));
        k.learn(36, false);
        assert!(k.drops(36));
        k.learn(36, true);
        assert!(
            k.drops(36),
            "a later line that keeps does not bring the pairs back"
        );
        k.learn(1 << 30, false);
        k.learn(1 << 30, true);
        assert!(k.drops(1 << 30));
        k.learn(40, false);
        assert!(k.drops(40) && !k.drops(41) && !k.drops(1 << 29));
    }

    proptest::proptest! {
        #[test]
        fn the_verdict_is_every_line_in_any_order_and_never_taken_back(
            lines in proptest::collection::vec(
                (proptest::prop_oneof![0u32..200, (1u32 << 24)..(1u32 << 24) + 4], proptest::bool::ANY),
                0..60,
            ),
            rotate in 0usize..60,
        ) {
            let mut k = Known::default();
            let mut dropped = std::collections::HashSet::new();
            for &(p, keep) in &lines {
                k.learn(p, keep);
                if !keep {
                    dropped.insert(p);
                }
                for &q in &dropped {
                    proptest::prop_assert!(k.drops(q));
                }
            }
            let mut other = lines.clone();
            other.reverse();
            let r = rotate % other.len().max(1);
            other.rotate_left(r);
            let mut k2 = Known::default();
            learn(&mut k2, &other);
            for p in (0u32..201).chain((1u32 << 24)..(1u32 << 24) + 5) {
                let want = lines.iter().any(|&(q, keep)| q == p && !keep);
                proptest::prop_assert_eq!(k.drops(p), want, "p {}", p);
                proptest::prop_assert_eq!(k2.drops(p), want, "p {} reordered", p);
            }
        }
    }
}
