//! The existence index and its guards: what is known to be true ((S, P, O) of every rank, symmetric, inverse and
//! transitive properties), packed into sorted `u64` arrays; and the candidate pools each strategy draws its
//! replacements from.

use crate::core::ids::{Pid, Qid};
use crate::core::records::{PropertyRecord, Triple};
use crate::core::records::{Role, Strategy};
use std::collections::{HashMap, HashSet, VecDeque};

/// The node budget of one transitive reachability search unless a stage's settings say otherwise
/// (`transitive_max_visits` of distort and revalidate, which must agree for revalidation to judge a variant
/// as distort would): 100 000, a few ms.
pub const DEFAULT_MAX_VISITS: usize = 100_000;

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

/// Per (property, id): the other ids of its statements with an id wider than 32 bits, sorted.
type WideEdges = HashMap<(Pid, Qid), Vec<Qid>>;

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
    fwd_wide: WideEdges,
    rev_wide: WideEdges,
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
        let mut fwd_wide = WideEdges::new();
        let mut rev_wide = WideEdges::new();
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

    /// The edge lists a reachability search through P follows, looked up once per search rather than per
    /// node: P's (subject, object) pairs; its (object, subject) pairs when P is symmetric; the (object,
    /// subject) pairs of each inverse P′ of P ((y, P′, x) means (x, P, y)).
    fn edges(&self, p: Pid) -> Vec<EdgeList<'_>> {
        fn list<'a>(packed: Option<&'a Vec<u64>>, wide: &'a WideEdges, q: Pid) -> EdgeList<'a> {
            EdgeList {
                packed: packed.map_or(&[], Vec::as_slice),
                wide: (!wide.is_empty()).then_some((wide, q)),
            }
        }
        let mut out = vec![list(self.exists.get(&p), &self.fwd_wide, p)];
        if self.symmetric.contains(&p) {
            out.push(list(self.rev.get(&p), &self.rev_wide, p));
        }
        for &q in self.inverse.get(&p).into_iter().flatten() {
            out.push(list(self.rev.get(&q), &self.rev_wide, q));
        }
        out
    }

    /// Bounded breadth-first search: `Some(true)` if `to` is reachable from `from` through P, `Some(false)`
    /// if not, `None` if `max_visits` nodes were expanded without an answer.
    pub fn reachable(&self, p: Pid, from: Qid, to: Qid, max_visits: usize) -> Option<bool> {
        Reach::new(self, p, from, max_visits).answer(to)
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
        self.check_with(strategy, s, p, o, &mut Searches::new(self, max_visits))
    }

    /// [`Index::check`], its reachability search taken from `searches` (which reuses the previous search when
    /// it started from the same subject through the same property): the same verdict, for less work when
    /// consecutive checks share (P, S).
    pub fn check_with(
        &self,
        strategy: Strategy,
        s: Qid,
        p: Pid,
        o: Qid,
        searches: &mut Searches<'_>,
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
            match searches.reachable(p, s, o) {
                Some(true) => return Err(Reason::Transitive),
                None => return Err(Reason::TransitiveBound),
                Some(false) => {}
            }
        }
        Ok(())
    }

    /// Is P transitive (do its checks search)?
    pub fn is_transitive(&self, p: Pid) -> bool {
        self.transitive.contains(&p)
    }
}

/// One list of edges of a reachability search: pairs packed and sorted by their first id, and the statements
/// with a wider id beside them (their map, when not empty, and the property to look up in it).
#[derive(Clone, Copy)]
struct EdgeList<'a> {
    packed: &'a [u64],
    wide: Option<(&'a WideEdges, Pid)>,
}

/// Successors of `x` along `edges`, list by list, each in order: the packed ones, then the wide ones, which
/// are larger (a wide statement with a narrow `x` has a wide other id).
fn successors(edges: &[EdgeList<'_>], x: Qid, out: &mut Vec<Qid>) {
    out.clear();
    for e in edges {
        packed_range(e.packed, x, out);
        if let Some(v) = e.wide.and_then(|(m, q)| m.get(&(q, x))) {
            out.extend_from_slice(v);
        }
    }
}

/// Hasher of the searches' sets of ids: one 64×64→128-bit multiply, folded. SipHash, the default, cost about
/// as much as the rest of a search step; the keys are ids of the dump, so flooding is no concern.
#[derive(Clone, Copy, Default)]
struct IdHasher(u64);

impl std::hash::Hasher for IdHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.write_u64(u64::from(b));
        }
    }

    fn write_u64(&mut self, x: u64) {
        let m = u128::from(self.0 ^ x) * 0x9E37_79B9_7F4A_7C15_u128;
        self.0 = (m as u64) ^ ((m >> 64) as u64);
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

type IdSet = HashSet<Qid, std::hash::BuildHasherDefault<IdHasher>>;

/// A breadth-first search from `from` through P (the order of [`Index::reachable`]), extended only as far as
/// the targets asked of it need: [`Reach::answer`] gives, for any number of targets in any order, exactly
/// what `reachable(p, from, to, max_visits)` gives for each, for the work of the one search they share.
///
/// Why it is exact: the order in which the plain search expands nodes and meets successors does not depend
/// on its target; it stops early when it meets the target (during expansion k ≤ `max_visits`: `Some(true)`),
/// when the queue runs out (`Some(false)`) or when it would expand node `max_visits` + 1 (`None`). Here the
/// expansions go on past one target's answer for the next target, and each target is answered by the same
/// three events.
pub struct Reach<'a> {
    index: &'a Index,
    p: Pid,
    edges: Vec<EdgeList<'a>>,
    from: Qid,
    max_visits: usize,
    /// `from` and every node met as a successor.
    seen: IdSet,
    /// Was `from` itself met as a successor (a cycle back to it)?
    from_met: bool,
    queue: VecDeque<Qid>,
    next: Vec<Qid>,
    /// Nodes expanded.
    visits: usize,
}

impl<'a> Reach<'a> {
    /// A search from `from` through P, nothing expanded yet.
    pub fn new(index: &'a Index, p: Pid, from: Qid, max_visits: usize) -> Reach<'a> {
        let mut r = Reach {
            index,
            p,
            edges: index.edges(p),
            from,
            max_visits,
            seen: IdSet::default(),
            from_met: false,
            queue: VecDeque::new(),
            next: Vec::new(),
            visits: 0,
        };
        r.restart(p, from);
        r
    }

    /// Start again from `from` through P, keeping the allocations.
    fn restart(&mut self, p: Pid, from: Qid) {
        if p != self.p {
            self.edges = self.index.edges(p);
        }
        self.p = p;
        self.from = from;
        // Clearing costs the set's capacity: a set grown by a large search is dropped rather than cleared for
        // each of the small searches after it.
        if self.seen.capacity() > 1 << 16 {
            self.seen = IdSet::default();
        } else {
            self.seen.clear();
        }
        self.queue.clear();
        self.seen.insert(from);
        self.queue.push_back(from);
        self.from_met = false;
        self.visits = 0;
    }

    fn met(&self, to: Qid) -> bool {
        if to == self.from {
            self.from_met
        } else {
            self.seen.contains(&to)
        }
    }

    /// `Some(true)` if `to` is reachable, `Some(false)` if not, `None` if `max_visits` nodes were expanded
    /// without an answer: what [`Index::reachable`] answers.
    pub fn answer(&mut self, to: Qid) -> Option<bool> {
        while !self.met(to) {
            if self.queue.is_empty() {
                return Some(false);
            }
            if self.visits >= self.max_visits {
                return None;
            }
            let x = self.queue.pop_front().expect("not empty");
            self.visits += 1;
            successors(&self.edges, x, &mut self.next);
            for &y in &self.next {
                self.from_met |= y == self.from;
                if self.seen.insert(y) {
                    self.queue.push_back(y);
                }
            }
        }
        Some(true)
    }

    /// Nodes expanded so far.
    pub fn visits(&self) -> usize {
        self.visits
    }
}

/// The reachability searches of a sequence of checks (one worker's): the last search is kept, and extended
/// when the next check searches from the same subject through the same property — the candidates of an OS or
/// POS variant in distort, statements ordered by (property, subject) in revalidation. Memory: one search
/// (its set of met nodes; at most the successors of `max_visits` nodes).
pub struct Searches<'a> {
    index: &'a Index,
    max_visits: usize,
    last: Option<Reach<'a>>,
    /// What the searches did so far.
    pub stats: SearchStats,
}

/// The work of reachability searches, for a log line: targets asked, searches started for them (fewer when
/// targets shared a search), nodes expanded, answers the budget gave (`transitive_bound`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SearchStats {
    pub questions: u64,
    pub searches: u64,
    pub visits: u64,
    pub out_of_budget: u64,
}

impl SearchStats {
    /// Add `o`'s counts.
    pub fn add(&mut self, o: &SearchStats) {
        self.questions += o.questions;
        self.searches += o.searches;
        self.visits += o.visits;
        self.out_of_budget += o.out_of_budget;
    }
}

impl std::fmt::Display for SearchStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} reachability questions, {} searches, {} nodes expanded, {} answered by the budget",
            self.questions, self.searches, self.visits, self.out_of_budget
        )
    }
}

impl<'a> Searches<'a> {
    /// No search yet; each expands at most `max_visits` nodes.
    pub fn new(index: &'a Index, max_visits: usize) -> Searches<'a> {
        Searches {
            index,
            max_visits,
            last: None,
            stats: SearchStats::default(),
        }
    }

    /// [`Index::reachable`]`(p, from, to, max_visits)`.
    pub fn reachable(&mut self, p: Pid, from: Qid, to: Qid) -> Option<bool> {
        self.stats.questions += 1;
        match self.last.as_mut() {
            Some(r) if r.p == p && r.from == from => {}
            Some(r) => {
                r.restart(p, from);
                self.stats.searches += 1;
            }
            None => {
                self.last = Some(Reach::new(self.index, p, from, self.max_visits));
                self.stats.searches += 1;
            }
        }
        let r = self.last.as_mut().expect("set above");
        let before = r.visits;
        let answer = r.answer(to);
        self.stats.visits += (r.visits - before) as u64;
        self.stats.out_of_budget += u64::from(answer.is_none());
        answer
    }
}

/// The entity of `t` that `strategy` replaces.
pub fn replaced(t: &Triple, strategy: Strategy) -> Qid {
    match strategy.role() {
        Some(Role::Subject) => t.subject,
        _ => t.object,
    }
}

/// The candidates of a variant: its replacement pool without the original entity.
pub struct Pool<'a> {
    items: &'a [Qid],
    /// The original's slot in `items`, skipped.
    skip: Option<usize>,
}

impl Pool<'_> {
    /// Candidates (the pool without the original).
    pub fn len(&self) -> usize {
        self.items.len() - usize::from(self.skip.is_some())
    }

    /// No candidate at all.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Candidate `k` (`k < len()`).
    pub fn get(&self, k: usize) -> Qid {
        self.items[k + usize::from(self.skip.is_some_and(|s| k >= s))]
    }
}

/// The replacement pool of a variant strategy, without the original.
pub fn pool_of<'a>(
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
pub fn variant_of(t: &Triple, strategy: Strategy, cand: Qid) -> (Qid, Qid) {
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
    pub(super) struct Plain {
        exists: HashSet<Key>,
        symmetric: HashSet<Pid>,
        inverse: HashMap<Pid, Vec<Pid>>,
        transitive: HashSet<Pid>,
        fwd: HashMap<(Pid, Qid), Vec<Qid>>,
        rev: HashMap<(Pid, Qid), Vec<Qid>>,
    }

    impl Plain {
        pub(super) fn build(kb: &KnowledgeBase) -> Plain {
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

        pub(super) fn reachable(&self, p: Pid, from: Qid, to: Qid, max: usize) -> Option<bool> {
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

        pub(super) fn check(
            &self,
            st: Strategy,
            s: Qid,
            p: Pid,
            o: Qid,
            max: usize,
        ) -> Result<(), Reason> {
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
    pub(super) fn qid() -> impl proptest::strategy::Strategy<Value = Qid> {
        (0u64..12, prop::bool::weighted(0.2))
            .prop_map(|(n, wide)| Qid(if wide { (1 << 32) + n } else { n }))
    }

    pub(super) fn kb() -> impl proptest::strategy::Strategy<Value = KnowledgeBase> {
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

/// The shared searches against the plain search of the test above (the index as it was, its own breadth-first
/// search per question): a [`Reach`] asked many targets in any order, and a [`Searches`] over a sequence of
/// checks that keeps and switches sources, answer every question as a fresh plain search does — on random
/// graphs with cycles, symmetric and inverse properties, and budgets small enough to run out.
#[cfg(test)]
mod shared_searches {
    use super::compact_index::{kb, qid, Plain};
    use super::*;
    use proptest::prelude::{prop, prop_assert, prop_assert_eq, proptest};

    proptest! {
        #[test]
        fn a_shared_search_answers_each_target_as_a_search_of_its_own(
            kb in kb(),
            asked in prop::collection::vec((qid(), 1u64..5, prop::collection::vec(qid(), 1..10)), 1..8),
            max in 1usize..10,
        ) {
            let (compact, plain) = (Index::build(&kb), Plain::build(&kb));
            // Searches are asked through transitive properties only (the plain index has edge lists for
            // those alone).
            for (from, p, tos) in asked.iter().filter(|a| compact.is_transitive(Pid(a.1))) {
                let mut r = Reach::new(&compact, Pid(*p), *from, max);
                for &to in tos {
                    prop_assert_eq!(
                        r.answer(to),
                        plain.reachable(Pid(*p), *from, to, max),
                        "P{} from {:?} to {:?}, max {}", p, from, to, max
                    );
                    prop_assert!(r.visits() <= max);
                }
            }
            // One `Searches` over all the questions in turn (runs of one source, then another), through the
            // whole check.
            let mut searches = Searches::new(&compact, max);
            for (from, p, tos) in &asked {
                for (k, &to) in tos.iter().enumerate() {
                    let st = Strategy::VARIANTS[k % 4];
                    prop_assert_eq!(
                        compact.check_with(st, *from, Pid(*p), to, &mut searches),
                        plain.check(st, *from, Pid(*p), to, max)
                    );
                }
            }
        }
    }

    /// A chain 1 → 2 → 3 → 4 → 5 of P1 (transitive) with a cycle back 5 → 1, and a branch 2 → 9.
    fn chain() -> Index {
        let t = |s, o| Triple {
            subject: Qid(s),
            property: Pid(1),
            object: Qid(o),
            rank: crate::core::records::Rank::Normal,
            statement_id: String::new(),
        };
        let kb = KnowledgeBase {
            transitive: vec![t(1, 2), t(2, 3), t(3, 4), t(4, 5), t(5, 1), t(2, 9)],
            properties: vec![PropertyRecord {
                id: Pid(1),
                datatype: "wikibase-item".into(),
                labels: Vec::new(),
                transitive: true,
                symmetric: false,
                inverse: Vec::new(),
            }],
            ..KnowledgeBase::default()
        };
        Index::build(&kb)
    }

    #[test]
    fn the_budget_decides_as_in_a_search_of_its_own_whatever_was_asked_before() {
        let ix = chain();
        // By hand, from 1: expansion 1 (node 1) meets 2; 2 (node 2) meets 3 and 9; 3 (node 3) meets 4; 4 (node
        // 9) meets nothing; 5 (node 4) meets 5; 6 (node 5) meets 1 itself.
        let mut r = Reach::new(&ix, Pid(1), Qid(1), 4);
        assert_eq!(r.answer(Qid(4)), Some(true)); // met at expansion 3
        assert_eq!(r.visits(), 3);
        assert_eq!(r.answer(Qid(2)), Some(true)); // met already
        assert_eq!(r.answer(Qid(5)), None); // met at expansion 5 > 4
        assert_eq!(r.answer(Qid(1)), None); // the cycle back, later still
        assert_eq!(r.answer(Qid(9)), Some(true)); // met at expansion 2, asked after the budget ran out
        assert_eq!(r.answer(Qid(7)), None); // not in the graph, but the search did not finish
        let mut r = Reach::new(&ix, Pid(1), Qid(1), 6);
        assert_eq!(r.answer(Qid(1)), Some(true)); // the cycle: met at expansion 6
        assert_eq!(r.answer(Qid(7)), Some(false)); // the search ends: 6 nodes, every one expanded
        assert_eq!(r.visits(), 6);
        // The same through `Searches` and distort's check, the source switching back and forth.
        let mut s = Searches::new(&ix, 4);
        for (from, to, want) in [
            (1, 4, Err(Reason::Transitive)),
            (3, 9, Err(Reason::TransitiveBound)),
            (1, 5, Err(Reason::TransitiveBound)),
            (9, 1, Ok(())),
            (1, 9, Err(Reason::Transitive)),
        ] {
            assert_eq!(
                ix.check_with(Strategy::OS, Qid(from), Pid(1), Qid(to), &mut s),
                want,
                "{from} → {to}"
            );
            assert_eq!(ix.check(Strategy::OS, Qid(from), Pid(1), Qid(to), 4), want);
        }
    }
}
