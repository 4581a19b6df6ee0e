//! The falsity rule over what extract kept: each item's values, statements without a value and types, the
//! subjects of distinct-values properties, the P279 graph, and the constraints.
//!
//! Memory: 16 bytes per (subject, property) row of values, per P31/P279 statement and per (property, object)
//! pair of a distinct-values property, all in sorted vectors (lookups are binary searches), plus the
//! constraints. The tier is asked only of statements the distortion guards let through — not stated at any
//! rank — so "a value other than o" is any value and "an item other than s" any subject.

use crate::core::error::Result;
use crate::core::falsity::{Constraint, Kind, Tier};
use crate::core::ids::{Pid, Qid};
use crate::store::tables::falsity as t;
use std::collections::{HashMap, HashSet};
use std::path::Path;

/// The paths of extract's four falsity tables.
pub struct Tables<'a> {
    pub constraints: &'a Path,
    pub values: &'a Path,
    pub types: &'a Path,
    pub distinct: &'a Path,
}

/// What [`load`] read: rows per table and the P279 cycles of the closure's graph.
#[derive(Clone, Copy, Debug, Default)]
pub struct Loaded {
    pub constraints: u64,
    pub values: u64,
    pub types: u64,
    pub distinct: u64,
    pub p279_cycles: u64,
}

/// Read extract's falsity tables into a [`Rule`], counting the P279 cycles (each is counted, and the closure
/// ends on it: docs/falsity.md).
pub fn load(paths: &Tables<'_>) -> Result<(Rule, Loaded)> {
    let mut b = RuleBuilder::default();
    let mut n = Loaded::default();
    for c in t::read_constraints(paths.constraints)? {
        b.constraint(c);
        n.constraints += 1;
    }
    n.values = t::for_each_subject_values(paths.values, |r| {
        b.values(
            r.subject,
            r.property,
            u64::from(r.values),
            r.somevalue,
            r.novalue,
        )
    })?;
    n.types = t::for_each_type_statement(paths.types, |r| {
        b.type_statement(r.subject, r.property, r.object)
    })?;
    n.distinct = t::for_each_distinct_value(paths.distinct, |r| b.distinct(r.property, r.object))?;
    let rule = b.finish();
    n.p279_cycles = p279_cycles(&rule.p279);
    Ok((rule, n))
}

/// Why a statement is `certain`: a set of reasons, as bits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Why(pub u8);

impl Why {
    pub const NOVALUE: Why = Why(1);
    pub const SINGLE_VALUE: Why = Why(2);
    pub const DISTINCT_VALUES: Why = Why(4);
    pub const SUBJECT_TYPE: Why = Why(8);
    pub const VALUE_TYPE: Why = Why(16);
    /// Every reason with its name, in the order names are listed (alphabetical).
    pub const NAMES: [(Why, &'static str); 5] = [
        (Why::DISTINCT_VALUES, "distinct_values"),
        (Why::NOVALUE, "novalue"),
        (Why::SINGLE_VALUE, "single_value"),
        (Why::SUBJECT_TYPE, "subject_type"),
        (Why::VALUE_TYPE, "value_type"),
    ];

    fn of(kind: Kind) -> Why {
        match kind {
            Kind::SingleValue => Why::SINGLE_VALUE,
            Kind::DistinctValues => Why::DISTINCT_VALUES,
            Kind::SubjectType => Why::SUBJECT_TYPE,
            Kind::ValueType => Why::VALUE_TYPE,
        }
    }

    /// No reason.
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// Has every reason of `other`.
    pub fn contains(self, other: Why) -> bool {
        self.0 & other.0 == other.0
    }

    /// The names of the reasons, alphabetical (`novalue`, `single_value`, …).
    pub fn names(self) -> Vec<&'static str> {
        Why::NAMES
            .iter()
            .filter(|(w, _)| self.contains(*w))
            .map(|(_, n)| *n)
            .collect()
    }
}

impl std::ops::BitOrAssign for Why {
    fn bitor_assign(&mut self, other: Why) {
        self.0 |= other.0;
    }
}

/// Flags of a (subject, property) row.
pub const VALUE: u8 = 1;
pub const SOMEVALUE: u8 = 2;
pub const NOVALUE: u8 = 4;

/// Collects what the rule needs; [`RuleBuilder::finish`] sorts it into a [`Rule`].
#[derive(Default)]
pub struct RuleBuilder {
    constraints: Vec<Constraint>,
    values: Vec<((Qid, Pid), u8)>,
    types: Vec<(Qid, Pid, Qid)>,
    p279: Vec<(Qid, Qid)>,
    distinct: Vec<(Pid, Qid)>,
}

impl RuleBuilder {
    /// A constraint (one read by `stages::extract::constraints::read_claims`).
    pub fn constraint(&mut self, c: Constraint) {
        self.constraints.push(c);
    }

    /// Subject s and property p: `values` live item values, and live `somevalue` / `novalue` statements.
    pub fn values(&mut self, s: Qid, p: Pid, values: u64, somevalue: bool, novalue: bool) {
        let flags = (u8::from(values > 0) * VALUE)
            | (u8::from(somevalue) * SOMEVALUE)
            | (u8::from(novalue) * NOVALUE);
        if flags != 0 {
            self.values.push(((s, p), flags));
        }
    }

    /// A live P31 or P279 value `v` of item `x` (what a type check looks at); P279 values also make the
    /// closure.
    pub fn type_statement(&mut self, x: Qid, p: Pid, v: Qid) {
        if p == Pid(279) {
            self.p279.push((x, v));
        }
        if p == Pid(31) || p == Pid(279) {
            self.types.push((x, p, v));
        }
    }

    /// A live P279 value of an item whose type is never checked: only the closure needs it.
    pub fn p279_only(&mut self, x: Qid, v: Qid) {
        self.p279.push((x, v));
    }

    /// Some item has `o` as a live value of the distinct-values property `p`.
    pub fn distinct(&mut self, p: Pid, o: Qid) {
        self.distinct.push((p, o));
    }

    pub fn finish(mut self) -> Rule {
        let mut constraints: HashMap<Pid, Vec<Constraint>> = HashMap::new();
        self.constraints.sort();
        for c in self.constraints {
            // A constraint with a separator is never applied.
            if !c.separator {
                constraints.entry(c.property).or_default().push(c);
            }
        }
        self.values.sort_unstable();
        // Rows of the same (subject, property) from several sources merge their flags.
        let mut values: Vec<((Qid, Pid), u8)> = Vec::with_capacity(self.values.len());
        for (k, f) in self.values {
            match values.last_mut() {
                Some(last) if last.0 == k => last.1 |= f,
                _ => values.push((k, f)),
            }
        }
        values.shrink_to_fit();
        sort_dedup(&mut self.types);
        sort_dedup(&mut self.p279);
        sort_dedup(&mut self.distinct);
        Rule {
            constraints,
            values,
            types: self.types,
            p279: self.p279,
            distinct: self.distinct,
        }
    }
}

fn sort_dedup<T: Ord>(v: &mut Vec<T>) {
    v.sort_unstable();
    v.dedup();
    v.shrink_to_fit();
}

/// What the rule needs, sorted for lookups (see the module doc for its memory).
pub struct Rule {
    /// The constraints without a separator, per property.
    constraints: HashMap<Pid, Vec<Constraint>>,
    values: Vec<((Qid, Pid), u8)>,
    types: Vec<(Qid, Pid, Qid)>,
    p279: Vec<(Qid, Qid)>,
    distinct: Vec<(Pid, Qid)>,
}

impl Rule {
    fn flags(&self, s: Qid, p: Pid) -> u8 {
        self.values
            .binary_search_by(|r| r.0.cmp(&(s, p)))
            .map_or(0, |i| self.values[i].1)
    }

    /// The live values of `x` for `p` (P31 or P279).
    fn types_of(&self, x: Qid, p: Pid) -> impl Iterator<Item = Qid> + '_ {
        let from = self.types.partition_point(|t| (t.0, t.1) < (x, p));
        self.types[from..]
            .iter()
            .take_while(move |t| t.0 == x && t.1 == p)
            .map(|t| t.2)
    }

    /// Does `x` reach one of `classes` (sorted): is it one, or is one in its closure over P279 values? A search
    /// with a visited set, so it ends on cycles.
    fn reaches(&self, x: Qid, classes: &[Qid]) -> bool {
        let mut seen = HashSet::from([x]);
        let mut todo = vec![x];
        while let Some(y) = todo.pop() {
            if classes.binary_search(&y).is_ok() {
                return true;
            }
            let from = self.p279.partition_point(|e| e.0 < y);
            for &(_, z) in self.p279[from..].iter().take_while(|e| e.0 == y) {
                if seen.insert(z) {
                    todo.push(z);
                }
            }
        }
        false
    }

    /// `x` has values of the properties the constraint's relation looks at, and none reaches a class.
    fn breaks_type(&self, x: Qid, c: &Constraint) -> bool {
        let (p31, p279) = c.relation.map_or((true, false), |r| r.looks_at());
        let mut any = false;
        for p in [(p31, Pid(31)), (p279, Pid(279))]
            .into_iter()
            .filter(|x| x.0)
            .map(|x| x.1)
        {
            for v in self.types_of(x, p) {
                if self.reaches(v, &c.classes) {
                    return false;
                }
                any = true;
            }
        }
        any
    }

    /// The tier of the false statement (s, p, o) — one not stated at any rank — and why it is `certain`.
    pub fn tier(&self, s: Qid, p: Pid, o: Qid) -> (Tier, Why) {
        let flags = self.flags(s, p);
        let mut why = Why::default();
        if flags & NOVALUE != 0 {
            why |= Why::NOVALUE;
        }
        for c in self.constraints.get(&p).into_iter().flatten() {
            if c.exceptions.binary_search(&s).is_ok() {
                continue;
            }
            let broken = match c.kind {
                Kind::SingleValue => flags & VALUE != 0,
                Kind::DistinctValues => self.distinct.binary_search(&(p, o)).is_ok(),
                Kind::SubjectType => self.breaks_type(s, c),
                Kind::ValueType => self.breaks_type(o, c),
            };
            if broken {
                why |= Why::of(c.kind);
            }
        }
        let tier = if !why.is_empty() {
            Tier::Certain
        } else if flags & (VALUE | SOMEVALUE) != 0 {
            Tier::Likely
        } else {
            Tier::Open
        };
        (tier, why)
    }
}

/// The cycles of a P279 graph given as (item, value) edges: strongly connected sets of more than one item,
/// plus items that are their own value (Tarjan's algorithm without recursion, so a chain of millions of
/// classes needs no deep stack).
pub fn p279_cycles(edges: &[(Qid, Qid)]) -> u64 {
    let mut edges = edges.to_vec();
    edges.sort_unstable();
    edges.dedup();
    let mut nodes: Vec<Qid> = edges.iter().flat_map(|e| [e.0, e.1]).collect();
    nodes.sort_unstable();
    nodes.dedup();
    let id = |q: Qid| nodes.binary_search(&q).unwrap_or(0);
    // Compressed rows of successors by node index.
    let n = nodes.len();
    let mut start = vec![0usize; n + 1];
    for e in &edges {
        start[id(e.0) + 1] += 1;
    }
    for i in 0..n {
        start[i + 1] += start[i];
    }
    let succ: Vec<usize> = edges.iter().map(|e| id(e.1)).collect();
    const NONE: usize = usize::MAX;
    let mut index = vec![NONE; n];
    let mut low = vec![0usize; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut next = 0usize;
    let mut found = 0u64;
    // (node, position in its successor list)
    let mut work: Vec<(usize, usize)> = Vec::new();
    for root in 0..n {
        if index[root] != NONE {
            continue;
        }
        // The node to visit next (the root, then each successor not visited yet).
        let mut open = Some(root);
        loop {
            if let Some(w) = open.take() {
                index[w] = next;
                low[w] = next;
                next += 1;
                stack.push(w);
                on_stack[w] = true;
                work.push((w, start[w]));
            }
            let Some(&mut (v, ref mut pos)) = work.last_mut() else {
                break;
            };
            if *pos < start[v + 1] {
                let w = succ[*pos];
                *pos += 1;
                if index[w] == NONE {
                    open = Some(w);
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            work.pop();
            if let Some(&(u, _)) = work.last() {
                low[u] = low[u].min(low[v]);
            }
            if low[v] == index[v] {
                let mut size = 0;
                loop {
                    let w = stack.pop().expect("v is on the stack");
                    on_stack[w] = false;
                    size += 1;
                    if w == v {
                        break;
                    }
                }
                let self_loop = succ[start[v]..start[v + 1]].contains(&v);
                if size > 1 || self_loop {
                    found += 1;
                }
            }
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::falsity::Relation;

    fn q(n: u64) -> Qid {
        Qid(n)
    }

    #[test]
    fn cycles_are_counted_once_each_and_chains_are_not() {
        let e = |a: u64, b: u64| (q(a), q(b));
        assert_eq!(p279_cycles(&[]), 0);
        assert_eq!(p279_cycles(&[e(1, 2), e(2, 3), e(3, 4)]), 0);
        assert_eq!(p279_cycles(&[e(1, 1)]), 1);
        assert_eq!(p279_cycles(&[e(1, 2), e(2, 1), e(2, 3), e(3, 3)]), 2);
        // two rings joined by a one-way edge, and a ring inside a bigger one counts once
        assert_eq!(
            p279_cycles(&[
                e(1, 2),
                e(2, 1),
                e(2, 5),
                e(5, 6),
                e(6, 5),
                e(7, 8),
                e(8, 9),
                e(9, 7),
                e(8, 7)
            ]),
            3
        );
        // a long chain closed at the end: one cycle, no deep recursion
        let mut long: Vec<(Qid, Qid)> = (1..200_000).map(|i| e(i, i + 1)).collect();
        long.push(e(200_000, 1));
        assert_eq!(p279_cycles(&long), 1);
    }

    /// The hand-made cases of data/falsity/README.md, with the rule's inputs written by hand.
    #[test]
    fn tiers_of_hand_made_cases() {
        let mut b = RuleBuilder::default();
        for (x, p, v) in [
            (2, 279, 3),
            (4, 279, 2),
            (5, 279, 6),
            (6, 279, 5),
            (8, 279, 8),
            (10, 31, 1),
            (11, 31, 1),
            (12, 31, 1),
            (14, 31, 9),
            (20, 31, 4),
            (21, 31, 2),
            (22, 31, 5),
            (23, 31, 8),
        ] {
            b.type_statement(q(x), Pid(p), q(v));
        }
        b.values(q(10), Pid(19), 1, false, false);
        b.values(q(10), Pid(26), 0, false, true);
        b.values(q(10), Pid(40), 0, true, false);
        b.values(q(11), Pid(19), 1, false, false);
        b.values(q(13), Pid(19), 0, true, false);
        b.values(q(70), Pid(36), 1, false, false);
        b.values(q(20), Pid(17), 1, false, false);
        b.distinct(Pid(36), q(20));
        b.distinct(Pid(36), q(23));
        let c = |p: u64,
                 kind: Kind,
                 exceptions: &[u64],
                 classes: &[u64],
                 relation: Option<Relation>| {
            Constraint {
                property: Pid(p),
                kind,
                statement_id: String::new(),
                separator: false,
                exceptions: exceptions.iter().map(|&x| q(x)).collect(),
                classes: classes.iter().map(|&x| q(x)).collect(),
                relation,
            }
        };
        b.constraint(c(19, Kind::SingleValue, &[], &[], None));
        b.constraint(c(
            19,
            Kind::SubjectType,
            &[24],
            &[1],
            Some(Relation::Instance),
        ));
        b.constraint(c(19, Kind::ValueType, &[], &[3], Some(Relation::Instance)));
        b.constraint(Constraint {
            separator: true,
            ..c(26, Kind::SingleValue, &[], &[], None)
        });
        b.constraint(c(
            26,
            Kind::SubjectType,
            &[],
            &[1],
            Some(Relation::InstanceOrSubclass),
        ));
        b.constraint(c(36, Kind::DistinctValues, &[73], &[], None));
        b.constraint(c(36, Kind::ValueType, &[], &[2], Some(Relation::Subclass)));
        b.constraint(c(17, Kind::SingleValue, &[], &[], None));
        let r = b.finish();
        let cases: [(u64, u64, u64, Tier, &[&str]); 22] = [
            (10, 19, 21, Tier::Certain, &["single_value"]),
            (12, 19, 21, Tier::Open, &[]),
            (13, 19, 22, Tier::Certain, &["value_type"]),
            (13, 19, 20, Tier::Likely, &[]),
            (21, 19, 20, Tier::Certain, &["subject_type"]),
            (24, 19, 20, Tier::Open, &[]),
            (11, 19, 20, Tier::Certain, &["single_value"]),
            (14, 19, 23, Tier::Certain, &["subject_type", "value_type"]),
            (12, 19, 24, Tier::Open, &[]),
            (10, 26, 11, Tier::Certain, &["novalue"]),
            (21, 26, 10, Tier::Certain, &["subject_type"]),
            (2, 26, 10, Tier::Certain, &["subject_type"]),
            (12, 26, 11, Tier::Open, &[]),
            (10, 40, 22, Tier::Likely, &[]),
            (21, 40, 10, Tier::Open, &[]),
            (71, 36, 20, Tier::Certain, &["distinct_values"]),
            (73, 36, 20, Tier::Open, &[]),
            (72, 36, 23, Tier::Certain, &["distinct_values"]),
            (70, 36, 21, Tier::Likely, &[]),
            (72, 36, 21, Tier::Open, &[]),
            (21, 17, 70, Tier::Open, &[]),
            (20, 17, 71, Tier::Certain, &["single_value"]),
        ];
        for (s, p, o, tier, why) in cases {
            let got = r.tier(q(s), Pid(p), q(o));
            assert_eq!(
                (got.0, got.1.names()),
                (tier, why.to_vec()),
                "Q{s} P{p} Q{o}"
            );
        }
    }
}
