//! The existence index and its guards: what is known to be true ((S, P, O) of every rank, symmetric, inverse and
//! transitive properties), packed into sorted `u64` arrays; and the candidate pools each strategy draws its
//! replacements from.

use crate::core::ids::{Pid, Qid};
use crate::core::records::{PropertyRecord, Triple};
use crate::core::records::{Role, Strategy};
use std::collections::{HashMap, HashSet, VecDeque};

/// Why a candidate replacement was rejected (or a variant dropped).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Reason {
    SelfLoop,
    Exists,
    SubjectHasValue,
    Symmetric,
    Inverse,
    Transitive,
    TransitiveBound,
    /// False, but less sure than `--min-falsity` asks (docs/falsity.md).
    FalsityOpen,
    FalsityLikely,
    /// No candidate other than the original in the pool (dropped without attempts).
    EmptyPool,
}

impl Reason {
    /// Name used in manifests and reports.
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::SelfLoop => "self_loop",
            Reason::Exists => "exists",
            Reason::SubjectHasValue => "subject_has_value",
            Reason::Symmetric => "symmetric",
            Reason::Inverse => "inverse",
            Reason::Transitive => "transitive",
            Reason::TransitiveBound => "transitive_bound",
            Reason::FalsityOpen => "falsity_open",
            Reason::FalsityLikely => "falsity_likely",
            Reason::EmptyPool => "empty_pool",
        }
    }
}

/// The extract artifacts distort reads, as typed values.
#[derive(Clone, Debug, Default)]
pub struct KnowledgeBase {
    /// Final triples (`triples.parquet`): labelled in every language; the sampling frame and the pools.
    pub final_triples: Vec<Triple>,
    /// Existence index (`statements.parquet`): every item→item statement at any rank.
    pub statements: Vec<Triple>,
    /// Statements of transitive properties (`transitive.parquet`), for reachability.
    pub transitive: Vec<Triple>,
    /// Property metadata (`properties.parquet`).
    pub properties: Vec<PropertyRecord>,
}

type Key = (Qid, Pid, Qid);

/// `(a, b)` as one sorted-order-preserving `u64` (`a << 32 | b`) when both ids fit in 32 bits — every real
/// Q-id does (Wikidata is at Q1.3·10⁸) — so the existence index costs 8 bytes per statement. Keys with a wider
/// id (only crafted input has them) live in plain sets beside ([`Index`]).
fn pack(a: Qid, b: Qid) -> Option<u64> {
    let fits = |q: Qid| q.0 <= u64::from(u32::MAX);
    (fits(a) && fits(b)).then_some((a.0 << 32) | b.0)
}

/// The second ids of the packed pairs in `v` (sorted) whose first id is `x`, in order.
fn packed_range(v: &[u64], x: Qid, out: &mut Vec<Qid>) {
    if x.0 > u64::from(u32::MAX) {
        return;
    }
    let lo = x.0 << 32;
    let from = v.partition_point(|&k| k < lo);
    out.extend(
        v[from..]
            .iter()
            .take_while(|&&k| k >> 32 == x.0)
            .map(|&k| Qid(k & u64::from(u32::MAX))),
    );
}

/// Indexes built once from the knowledge base, shared read-only by all workers.
///
/// Memory: 8 bytes per distinct statement of the existence index (`statements.parquet` ∪ the final triples ∪
/// `transitive.parquet`, per property, sorted), 8 more per statement of a property taking part in a
/// reachability search (transitive properties and their inverses: the reversed pairs), and 8 per entity of
/// each pool; lookups are binary searches.
pub struct Index {
    /// Per property: the (subject, object) pairs, packed, sorted, distinct.
    exists: HashMap<Pid, Vec<u64>>,
    /// Statements with an id wider than 32 bits.
    exists_wide: HashSet<Key>,
    symmetric: HashSet<Pid>,
    inverse: HashMap<Pid, Vec<Pid>>,
    transitive: HashSet<Pid>,
    /// Per property of a reachability search: the (object, subject) pairs, packed, sorted.
    rev: HashMap<Pid, Vec<u64>>,
    /// Successors and predecessors through wide statements of those properties, sorted.
    fwd_wide: HashMap<(Pid, Qid), Vec<Qid>>,
    rev_wide: HashMap<(Pid, Qid), Vec<Qid>>,
    /// Every entity of the graph (subjects and objects of the final triples), sorted.
    pub all_entities: Vec<Qid>,
    /// Subjects of P in the final triples, sorted.
    pub subjects_of: HashMap<Pid, Vec<Qid>>,
    /// Objects of P in the final triples, sorted.
    pub objects_of: HashMap<Pid, Vec<Qid>>,
}

fn sort_dedup<T: Ord>(v: &mut Vec<T>) {
    v.sort_unstable();
    v.dedup();
    v.shrink_to_fit();
}

/// Builds an [`Index`] from statements fed one at a time (from Parquet batches or a [`KnowledgeBase`]).
#[derive(Default)]
pub struct IndexBuilder {
    exists: HashMap<Pid, Vec<u64>>,
    exists_wide: HashSet<Key>,
    all_entities: Vec<Qid>,
    subjects_of: HashMap<Pid, Vec<Qid>>,
    objects_of: HashMap<Pid, Vec<Qid>>,
    /// Pairs added since the last compaction (sort + dedup of every property's pairs).
    since_compact: usize,
    /// Pairs kept after the last compaction.
    kept: usize,
}

impl IndexBuilder {
    /// A statement of the existence index (any rank).
    pub fn statement(&mut self, s: Qid, p: Pid, o: Qid) {
        match pack(s, o) {
            Some(k) => {
                self.exists.entry(p).or_default().push(k);
                self.since_compact += 1;
                // Duplicates (the final triples are statements too) are folded once as many pairs came in as
                // were kept: the vectors never hold more than about twice the distinct pairs.
                if self.since_compact > self.kept.max(1 << 20) {
                    self.compact();
                }
            }
            None => {
                self.exists_wide.insert((s, p, o));
            }
        }
    }

    fn compact(&mut self) {
        self.kept = 0;
        for v in self.exists.values_mut() {
            v.sort_unstable();
            v.dedup();
            self.kept += v.len();
        }
        self.since_compact = 0;
    }

    /// A final triple: a statement of the existence index and a member of the replacement pools.
    pub fn final_triple(&mut self, s: Qid, p: Pid, o: Qid) {
        self.statement(s, p, o);
        self.all_entities.push(s);
        self.all_entities.push(o);
        self.subjects_of.entry(p).or_default().push(s);
        self.objects_of.entry(p).or_default().push(o);
    }

    /// The index, with the property metadata (symmetric, inverse, transitive).
    pub fn finish(self, properties: &[PropertyRecord]) -> Index {
        let IndexBuilder {
            mut exists,
            exists_wide,
            mut all_entities,
            mut subjects_of,
            mut objects_of,
            ..
        } = self;
        for v in exists.values_mut() {
            sort_dedup(v);
        }
        let mut symmetric = HashSet::new();
        let mut transitive = HashSet::new();
        let mut inverse: HashMap<Pid, Vec<Pid>> = HashMap::new();
        for p in properties {
            if p.symmetric {
                symmetric.insert(p.id);
            }
            if p.transitive {
                transitive.insert(p.id);
            }
            for &q in &p.inverse {
                // P1696 is declared on one or both sides; treat it as mutual.
                inverse.entry(p.id).or_default().push(q);
                inverse.entry(q).or_default().push(p.id);
            }
        }
        for v in inverse.values_mut() {
            sort_dedup(v);
        }
        // Properties whose edges take part in a reachability search: transitive ones and their inverses.
        let mut relevant: HashSet<Pid> = transitive.clone();
        for p in &transitive {
            if let Some(inv) = inverse.get(p) {
                relevant.extend(inv.iter().copied());
            }
        }
        let mut rev: HashMap<Pid, Vec<u64>> = HashMap::new();
        for p in &relevant {
            if let Some(v) = exists.get(p) {
                let mut r: Vec<u64> = v.iter().map(|k| k.rotate_left(32)).collect();
                r.sort_unstable();
                rev.insert(*p, r);
            }
        }
        let mut fwd_wide: HashMap<(Pid, Qid), Vec<Qid>> = HashMap::new();
        let mut rev_wide: HashMap<(Pid, Qid), Vec<Qid>> = HashMap::new();
        for &(s, p, o) in &exists_wide {
            if relevant.contains(&p) {
                fwd_wide.entry((p, s)).or_default().push(o);
                rev_wide.entry((p, o)).or_default().push(s);
            }
        }
        for v in fwd_wide.values_mut().chain(rev_wide.values_mut()) {
            sort_dedup(v);
        }
        sort_dedup(&mut all_entities);
        for v in subjects_of.values_mut().chain(objects_of.values_mut()) {
            sort_dedup(v);
        }
        Index {
            exists,
            exists_wide,
            symmetric,
            inverse,
            transitive,
            rev,
            fwd_wide,
            rev_wide,
            all_entities,
            subjects_of,
            objects_of,
        }
    }
}

impl Index {
    /// Build the indexes.
    pub fn build(kb: &KnowledgeBase) -> Index {
        let mut b = IndexBuilder::default();
        for t in kb.statements.iter().chain(&kb.transitive) {
            b.statement(t.subject, t.property, t.object);
        }
        for t in &kb.final_triples {
            b.final_triple(t.subject, t.property, t.object);
        }
        b.finish(&kb.properties)
    }

    /// Is (s, p, o) in the existence index?
    pub fn exists(&self, s: Qid, p: Pid, o: Qid) -> bool {
        match pack(s, o) {
            Some(k) => self
                .exists
                .get(&p)
                .is_some_and(|v| v.binary_search(&k).is_ok()),
            None => self.exists_wide.contains(&(s, p, o)),
        }
    }

    /// Objects of the statements (x, p, ·) (p a property of a reachability search), sorted: the packed ones,
    /// then the wide ones, which are larger (a wide statement with a narrow `x` has a wide object).
    fn forward(&self, p: Pid, x: Qid, out: &mut Vec<Qid>) {
        if let Some(v) = self.exists.get(&p) {
            packed_range(v, x, out);
        }
        if let Some(v) = self.fwd_wide.get(&(p, x)) {
            out.extend_from_slice(v);
        }
    }

    /// Subjects of the statements (·, p, x), sorted, likewise.
    fn backward(&self, p: Pid, x: Qid, out: &mut Vec<Qid>) {
        if let Some(v) = self.rev.get(&p) {
            packed_range(v, x, out);
        }
        if let Some(v) = self.rev_wide.get(&(p, x)) {
            out.extend_from_slice(v);
        }
    }

    /// Successors of `x` for a reachability search through P.
    fn successors(&self, p: Pid, x: Qid, out: &mut Vec<Qid>) {
        out.clear();
        self.forward(p, x, out);
        if self.symmetric.contains(&p) {
            self.backward(p, x, out);
        }
        if let Some(inv) = self.inverse.get(&p) {
            for &q in inv {
                // (y, P', x) means (x, P, y).
                self.backward(q, x, out);
            }
        }
    }

    /// Bounded breadth-first search: `Some(true)` if `to` is reachable from `from` through P, `Some(false)`
    /// if not, `None` if `max_visits` nodes were expanded without an answer.
    pub fn reachable(&self, p: Pid, from: Qid, to: Qid, max_visits: usize) -> Option<bool> {
        let mut seen: HashSet<Qid> = HashSet::new();
        let mut queue = VecDeque::new();
        let mut next = Vec::new();
        seen.insert(from);
        queue.push_back(from);
        let mut visits = 0usize;
        while let Some(x) = queue.pop_front() {
            if visits >= max_visits {
                return None;
            }
            visits += 1;
            self.successors(p, x, &mut next);
            for &y in &next {
                if y == to {
                    return Some(true);
                }
                if seen.insert(y) {
                    queue.push_back(y);
                }
            }
        }
        Some(false)
    }

    /// Run every existence check on the variant (s, p, o) of `strategy`; `Err(reason)` when it may be true.
    pub fn check(
        &self,
        strategy: Strategy,
        s: Qid,
        p: Pid,
        o: Qid,
        max_visits: usize,
    ) -> std::result::Result<(), Reason> {
        if s == o {
            return Err(Reason::SelfLoop);
        }
        if self.exists(s, p, o) {
            // For OS/POS the subject is the original's: an existing (S, P, O′) means S already has O′ among its
            // values of P (multi-valued property), counted under its own reason.
            return Err(match strategy {
                Strategy::OS | Strategy::POS => Reason::SubjectHasValue,
                _ => Reason::Exists,
            });
        }
        if self.symmetric.contains(&p) && self.exists(o, p, s) {
            return Err(Reason::Symmetric);
        }
        if let Some(inv) = self.inverse.get(&p) {
            if inv.iter().any(|&q| self.exists(o, q, s)) {
                return Err(Reason::Inverse);
            }
        }
        if self.transitive.contains(&p) {
            match self.reachable(p, s, o, max_visits) {
                Some(true) => return Err(Reason::Transitive),
                None => return Err(Reason::TransitiveBound),
                Some(false) => {}
            }
        }
        Ok(())
    }
}

/// The entity of `t` that `strategy` replaces.
pub(super) fn replaced(t: &Triple, strategy: Strategy) -> Qid {
    match strategy.role() {
        Some(Role::Subject) => t.subject,
        _ => t.object,
    }
}

/// The candidates of a variant: its replacement pool without the original entity.
pub(super) struct Pool<'a> {
    items: &'a [Qid],
    /// The original's slot in `items`, skipped.
    skip: Option<usize>,
}

impl Pool<'_> {
    /// Candidates (the pool without the original).
    pub(super) fn len(&self) -> usize {
        self.items.len() - usize::from(self.skip.is_some())
    }

    /// Candidate `k` (`k < len()`).
    pub(super) fn get(&self, k: usize) -> Qid {
        self.items[k + usize::from(self.skip.is_some_and(|s| k >= s))]
    }
}

/// The replacement pool of a variant strategy, without the original.
pub(super) fn pool_of<'a>(
    index: &'a Index,
    t: &Triple,
    strategy: Strategy,
    empty: &'a Vec<Qid>,
) -> Pool<'a> {
    let items: &Vec<Qid> = match strategy {
        Strategy::SS | Strategy::OS => &index.all_entities,
        Strategy::PSS => index.subjects_of.get(&t.property).unwrap_or(empty),
        Strategy::POS => index.objects_of.get(&t.property).unwrap_or(empty),
        Strategy::ORG => empty,
    };
    Pool {
        items,
        skip: items.binary_search(&replaced(t, strategy)).ok(),
    }
}

/// The variant of `t` with `cand` in the role `strategy` replaces.
pub(super) fn variant_of(t: &Triple, strategy: Strategy, cand: Qid) -> (Qid, Qid) {
    match strategy.role() {
        Some(Role::Subject) => (cand, t.object),
        _ => (t.subject, cand),
    }
}

/// The compact index against the plain one it replaced (hash sets of (S, P, O) and hash maps of successor
/// lists): the same verdict, reason and search budget on every check, on random knowledge bases whose ids
/// are partly wider than 32 bits (crafted input) and partly not.
#[cfg(test)]
mod compact_index {
    use super::*;
    use crate::core::records::Rank;
    use proptest::prelude::{any, prop, prop_assert_eq, proptest};
    use proptest::strategy::Strategy as _;

    /// The index as it was: every statement a 24-byte hash-set key, successors in hash maps.
    struct Plain {
        exists: HashSet<Key>,
        symmetric: HashSet<Pid>,
        inverse: HashMap<Pid, Vec<Pid>>,
        transitive: HashSet<Pid>,
        fwd: HashMap<(Pid, Qid), Vec<Qid>>,
        rev: HashMap<(Pid, Qid), Vec<Qid>>,
    }

    impl Plain {
        fn build(kb: &KnowledgeBase) -> Plain {
            let exists: HashSet<Key> = kb
                .statements
                .iter()
                .chain(&kb.final_triples)
                .chain(&kb.transitive)
                .map(Triple::key)
                .collect();
            let (mut symmetric, mut transitive) = (HashSet::new(), HashSet::new());
            let mut inverse: HashMap<Pid, Vec<Pid>> = HashMap::new();
            for p in &kb.properties {
                if p.symmetric {
                    symmetric.insert(p.id);
                }
                if p.transitive {
                    transitive.insert(p.id);
                }
                for &q in &p.inverse {
                    inverse.entry(p.id).or_default().push(q);
                    inverse.entry(q).or_default().push(p.id);
                }
            }
            for v in inverse.values_mut() {
                v.sort_unstable();
                v.dedup();
            }
            let mut relevant = transitive.clone();
            for p in &transitive {
                relevant.extend(inverse.get(p).into_iter().flatten().copied());
            }
            let (mut fwd, mut rev): (HashMap<_, Vec<Qid>>, HashMap<_, Vec<Qid>>) =
                Default::default();
            for &(s, p, o) in &exists {
                if relevant.contains(&p) {
                    fwd.entry((p, s)).or_default().push(o);
                    rev.entry((p, o)).or_default().push(s);
                }
            }
            for v in fwd.values_mut().chain(rev.values_mut()) {
                v.sort_unstable();
                v.dedup();
            }
            Plain {
                exists,
                symmetric,
                inverse,
                transitive,
                fwd,
                rev,
            }
        }

        fn successors(&self, p: Pid, x: Qid) -> Vec<Qid> {
            let mut out = self.fwd.get(&(p, x)).cloned().unwrap_or_default();
            if self.symmetric.contains(&p) {
                out.extend(self.rev.get(&(p, x)).into_iter().flatten());
            }
            for q in self.inverse.get(&p).into_iter().flatten() {
                out.extend(self.rev.get(&(*q, x)).into_iter().flatten());
            }
            out
        }

        fn reachable(&self, p: Pid, from: Qid, to: Qid, max: usize) -> Option<bool> {
            let mut seen = HashSet::from([from]);
            let mut queue = VecDeque::from([from]);
            let mut visits = 0;
            while let Some(x) = queue.pop_front() {
                if visits >= max {
                    return None;
                }
                visits += 1;
                for y in self.successors(p, x) {
                    if y == to {
                        return Some(true);
                    }
                    if seen.insert(y) {
                        queue.push_back(y);
                    }
                }
            }
            Some(false)
        }

        fn check(&self, st: Strategy, s: Qid, p: Pid, o: Qid, max: usize) -> Result<(), Reason> {
            if s == o {
                return Err(Reason::SelfLoop);
            }
            if self.exists.contains(&(s, p, o)) {
                return Err(match st {
                    Strategy::OS | Strategy::POS => Reason::SubjectHasValue,
                    _ => Reason::Exists,
                });
            }
            if self.symmetric.contains(&p) && self.exists.contains(&(o, p, s)) {
                return Err(Reason::Symmetric);
            }
            if let Some(inv) = self.inverse.get(&p) {
                if inv.iter().any(|&q| self.exists.contains(&(o, q, s))) {
                    return Err(Reason::Inverse);
                }
            }
            if self.transitive.contains(&p) {
                match self.reachable(p, s, o, max) {
                    Some(true) => return Err(Reason::Transitive),
                    None => return Err(Reason::TransitiveBound),
                    Some(false) => {}
                }
            }
            Ok(())
        }
    }

    /// Ids from a small range, some lifted above 2³² (as a crafted dump could), so that chains form.
    fn qid() -> impl proptest::strategy::Strategy<Value = Qid> {
        (0u64..12, prop::bool::weighted(0.2))
            .prop_map(|(n, wide)| Qid(if wide { (1 << 32) + n } else { n }))
    }

    fn kb() -> impl proptest::strategy::Strategy<Value = KnowledgeBase> {
        let triple = || {
            (qid(), 1u64..5, qid()).prop_map(|(s, p, o)| Triple {
                subject: s,
                property: Pid(p),
                object: o,
                rank: Rank::Normal,
                statement_id: String::new(),
            })
        };
        let props = proptest::collection::vec(
            (any::<bool>(), any::<bool>(), proptest::option::of(1u64..5)),
            4,
        );
        (
            proptest::collection::vec(triple(), 0..40),
            proptest::collection::vec(triple(), 0..40),
            proptest::collection::vec(triple(), 0..40),
            props,
        )
            .prop_map(|(finals, statements, transitive, props)| KnowledgeBase {
                final_triples: finals,
                statements,
                transitive,
                properties: props
                    .into_iter()
                    .enumerate()
                    .map(|(i, (t, s, inv))| PropertyRecord {
                        id: Pid(i as u64 + 1),
                        datatype: "wikibase-item".into(),
                        labels: Vec::new(),
                        transitive: t,
                        symmetric: s,
                        inverse: inv.map(Pid).into_iter().collect(),
                    })
                    .collect(),
            })
    }

    proptest! {
        #[test]
        fn same_verdicts_as_the_plain_index(
            kb in kb(),
            queries in proptest::collection::vec((qid(), 1u64..5, qid(), 0usize..5, 1usize..6), 60),
        ) {
            let (compact, plain) = (Index::build(&kb), Plain::build(&kb));
            for (s, p, o, st, max) in queries {
                let st = Strategy::VARIANTS[st % 4];
                prop_assert_eq!(
                    compact.check(st, s, Pid(p), o, max),
                    plain.check(st, s, Pid(p), o, max),
                    "({:?}, P{}, {:?}) max {}", s, p, o, max
                );
                prop_assert_eq!(compact.exists(s, Pid(p), o), plain.exists.contains(&(s, Pid(p), o)));
            }
            // The pools: every subject / object of the final triples, sorted and distinct.
            let mut all: Vec<Qid> = kb.final_triples.iter().flat_map(|t| [t.subject, t.object]).collect();
            all.sort_unstable();
            all.dedup();
            prop_assert_eq!(&compact.all_entities, &all);
        }
    }

    #[test]
    fn packed_pairs_keep_the_order_of_the_ids() {
        let mut v: Vec<u64> = [(3, 9), (3, 1), (2, 7), (3, 4)]
            .iter()
            .map(|&(a, b)| pack(Qid(a), Qid(b)).unwrap())
            .collect();
        v.sort_unstable();
        let mut out = Vec::new();
        packed_range(&v, Qid(3), &mut out);
        assert_eq!(out, vec![Qid(1), Qid(4), Qid(9)]);
        out.clear();
        packed_range(&v, Qid(5), &mut out);
        assert!(out.is_empty());
        assert_eq!(pack(Qid(1 << 32), Qid(1)), None);
        assert_eq!(pack(Qid(u64::from(u32::MAX)), Qid(0)), Some(u64::MAX << 32));
    }
}
