//! Distortions: sample original triples and draw SS / OS / PSS / POS variants that are false.
//!
//! For each sampled original (S, P, O) (paper Table 1):
//! - **SS** replaces S by a random entity of the graph (any subject or object of the final triples);
//! - **OS** replaces O by a random entity of the graph;
//! - **PSS** replaces S by another subject of P (an entity that is the subject of P elsewhere);
//! - **POS** replaces O by another object of P.
//!
//! The replacement is never the original entity. A candidate is rejected (and another one drawn, up to
//! `max_attempts` draws) when any existence check says the variant may be true:
//! 1. `self_loop`: the variant's subject equals its object (reflexive statements are not reliably false);
//! 2. `exists` (SS/PSS): (S′, P, O′) is in the existence index (statements of every rank, plus the final
//!    triples);
//! 3. `subject_has_value` (OS/POS): S already has O′ among its values of P (multi-valued properties) — the
//!    same index lookup, counted under its own name because the subject is the original's;
//! 4. `symmetric`: P is symmetric and (O′, P, S′) exists;
//! 5. `inverse`: P has an inverse P′ (P1696 on either side) and (O′, P′, S′) exists;
//! 6. `transitive`: P is transitive and O′ is reachable from S′ through P-edges (also through reversed edges of
//!    P's inverses, and reversed P-edges when P is symmetric), searched breadth-first over the transitive
//!    statements; `transitive_bound`: the search visited `transitive_max_visits` nodes without an answer —
//!    rejected conservatively and counted.
//!
//! A variant without a valid replacement within the limit is dropped and counted by reason; it is never
//! emitted. Every emitted variant carries the cosine similarity (raw and centred) between the original and
//! the replacement embeddings. Each original uses its own ChaCha8 stream seeded from (seed, original index),
//! and results are collected in input order, so the output does not depend on the thread count.

use crate::core::error::{Error, IoContext, Result};
use crate::core::ids::{Pid, Qid};
use crate::core::records::{PropertyRecord, Rank, Triple};
use crate::stages::contract::{Context, Input, NoSettings, Stage};
use crate::store::layout::{
    self, Artifact, DISTORTIONS, EMBEDDINGS_NPY, EMBEDDINGS_W2V, NODES, PROPERTIES, STATEMENTS,
    TRANSITIVE, TRIPLES,
};
use crate::store::tables;
use crate::store::Manifest;
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float32Array, RecordBatch, StringArray, UInt32Array,
};
use arrow_schema::{DataType, Field, Schema};
use parquet::arrow::ArrowWriter;
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::io::Write;
use std::path::Path;
use std::sync::Arc;

/// Version of the `distortions.parquet` layout (bump on any column change).
pub const DISTORTIONS_FORMAT_VERSION: u32 = 1;

/// Settings of `sword distort` (`pipeline/distort.toml`; the same names as its flags).
#[derive(Clone, Debug, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct DistortConfig {
    /// Seed of every random draw (sampling and replacements). Same seed → byte-identical output. Typical: 42.
    #[arg(long, required = false)]
    pub seed: u64,
    /// Number of original triples to sample (the paper uses 500). Fewer when the frame is smaller.
    #[arg(long, required = false)]
    pub samples: usize,
    /// Sample per property: at most `per_property_cap` originals per property enter the pool that is then
    /// sampled uniformly (uniform sampling over triples is dominated by a few properties such as P31).
    #[arg(long, action = clap::ArgAction::Set, num_args = 0, default_missing_value = "true", required = false)]
    pub stratify_by_property: bool,
    /// Cap per property when stratifying (originals per property). Typical: 5–20.
    #[arg(long, required = false)]
    pub per_property_cap: usize,
    /// Candidate draws per variant before it is dropped. Typical: 100.
    #[arg(long, required = false)]
    pub max_attempts: u32,
    /// Node budget of one transitive reachability search; when exhausted the candidate is rejected
    /// (`transitive_bound`). Typical: 100 000 (a few ms).
    #[arg(long, required = false)]
    pub transitive_max_visits: usize,
    /// Guard probe: further candidates per variant on which every guard is run and its verdict counted
    /// (`extra.guard_probe` of the manifest), the whole pool when it is smaller. They come from a random
    /// stream of their own and never enter the output, so the probe changes no row. It measures how often a
    /// uniform draw would be true, per strategy and guard (a 500-original run draws ≈ 2 000 candidates, too
    /// few to meet the rarer near-misses). Default 100 (`max_attempts`); 0 turns it off.
    #[arg(long, required = false)]
    pub probe_candidates: usize,
}

impl Default for DistortConfig {
    fn default() -> Self {
        DistortConfig {
            seed: 42,
            samples: 500,
            stratify_by_property: false,
            per_property_cap: 10,
            max_attempts: 100,
            transitive_max_visits: 100_000,
            probe_candidates: 100,
        }
    }
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
            Reason::EmptyPool => "empty_pool",
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
}

/// Statement id for an original index and strategy.
pub fn statement_id(original_id: u32, strategy: Strategy) -> String {
    format!("{original_id:06}-{}", strategy.as_str())
}

/// Cosine similarity between two entities, raw and centred. Tests pass hand-made ones.
pub trait Similarity: Sync {
    /// Raw cosine (as the paper), `None` when an embedding is missing.
    fn cosine(&self, a: Qid, b: Qid) -> Option<f32>;
    /// Cosine after subtracting the mean vector.
    fn cosine_centred(&self, a: Qid, b: Qid) -> Option<f32>;
}

/// No embeddings: every cosine is `None`.
pub struct NoSimilarity;

impl Similarity for NoSimilarity {
    fn cosine(&self, _: Qid, _: Qid) -> Option<f32> {
        None
    }
    fn cosine_centred(&self, _: Qid, _: Qid) -> Option<f32> {
        None
    }
}

/// A similarity from a function returning (raw, centred).
pub struct FnSimilarity<F>(pub F);

impl<F: Fn(Qid, Qid) -> (Option<f32>, Option<f32>) + Sync> Similarity for FnSimilarity<F> {
    fn cosine(&self, a: Qid, b: Qid) -> Option<f32> {
        (self.0)(a, b).0
    }
    fn cosine_centred(&self, a: Qid, b: Qid) -> Option<f32> {
        (self.0)(a, b).1
    }
}

/// Cosines from the train stage's embeddings (keys "Q42"): raw, and centred (mean vector subtracted).
pub struct EmbeddingSimilarity {
    raw: crate::store::embeddings::Embeddings,
    centred: crate::store::embeddings::Embeddings,
}

impl EmbeddingSimilarity {
    /// Wrap embeddings (computes the centred copy once).
    pub fn new(raw: crate::store::embeddings::Embeddings) -> EmbeddingSimilarity {
        let centred = raw.centred();
        EmbeddingSimilarity { raw, centred }
    }
}

impl Similarity for EmbeddingSimilarity {
    fn cosine(&self, a: Qid, b: Qid) -> Option<f32> {
        self.raw.cosine(&a.to_string(), &b.to_string())
    }
    fn cosine_centred(&self, a: Qid, b: Qid) -> Option<f32> {
        self.centred.cosine(&a.to_string(), &b.to_string())
    }
}

/// Cosines read from the train stage's `embeddings.npy` through a memory map (rows keyed by `nodes.txt`):
/// the same numbers as [`EmbeddingSimilarity`] on the word2vec text, without parsing or holding the matrix.
/// Memory: the keys (16 bytes per node), the mean row, and the pages of the rows looked up.
pub struct NpySimilarity {
    npy: crate::store::npy::NpyMap,
    /// (entity, row), sorted by entity.
    rows: Vec<(Qid, u32)>,
    mean: Vec<f32>,
}

impl NpySimilarity {
    /// Open `npy` and pair its rows with the keys of `nodes` (one per line, row `i` = line `i + 1`); keys that
    /// are not Q-ids (an edge list's own ids) are never looked up.
    pub fn open(npy: &Path, nodes: &Path) -> Result<NpySimilarity> {
        use std::io::BufRead;
        let map = crate::store::npy::NpyMap::open(npy)?;
        let f = std::fs::File::open(nodes).at(nodes)?;
        let mut rows = Vec::new();
        let mut n = 0usize;
        let mut line = String::new();
        let mut r = std::io::BufReader::with_capacity(1 << 20, f);
        loop {
            line.clear();
            if r.read_line(&mut line).at(nodes)? == 0 {
                break;
            }
            let key = line.strip_suffix('\n').unwrap_or(&line);
            // The word2vec keys were looked up as `Q<n>` text: only the canonical spelling matches.
            if let Some(q) = Qid::parse(key).filter(|q| q.to_string() == key) {
                let row = u32::try_from(n).map_err(|_| {
                    Error::bad_input(nodes, "more than 4 294 967 295 nodes".to_string())
                })?;
                rows.push((q, row));
            }
            n += 1;
        }
        if n != map.rows() {
            return Err(Error::bad_input(
                npy,
                format!(
                    "npy: {} rows, but {} lists {n} nodes (one row per node)",
                    map.rows(),
                    nodes.display()
                ),
            ));
        }
        rows.sort_unstable();
        if let Some(w) = rows.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::bad_input(
                nodes,
                format!(
                    "key {} occurs twice (lines {} and {})",
                    w[0].0,
                    w[0].1 + 1,
                    w[1].1 + 1
                ),
            ));
        }
        let mean = map.mean_row();
        Ok(NpySimilarity {
            npy: map,
            rows,
            mean,
        })
    }

    fn row(&self, q: Qid, out: &mut Vec<f32>) -> Option<()> {
        let k = self.rows.binary_search_by_key(&q, |r| r.0).ok()?;
        self.npy.row_into(self.rows[k].1 as usize, out);
        Some(())
    }

    fn pair(&self, a: Qid, b: Qid, centred: bool) -> Option<f32> {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        self.row(a, &mut x)?;
        self.row(b, &mut y)?;
        if centred {
            for v in [&mut x, &mut y] {
                for (e, m) in v.iter_mut().zip(&self.mean) {
                    *e -= m;
                }
            }
        }
        Some(crate::store::embeddings::cosine_rows(&x, &y))
    }
}

impl Similarity for NpySimilarity {
    fn cosine(&self, a: Qid, b: Qid) -> Option<f32> {
        self.pair(a, b, false)
    }
    fn cosine_centred(&self, a: Qid, b: Qid) -> Option<f32> {
        self.pair(a, b, true)
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

/// SplitMix64 finaliser: decorrelates (seed, index) into a per-item seed.
fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The RNG of item `index` under `seed` (domain `tag` separates sampling from distortion draws).
fn item_rng(seed: u64, tag: u64, index: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(splitmix(splitmix(seed ^ tag) ^ index))
}

/// Uniform integer in 0..n (n > 0), by rejection so that it is exact and stable across crate versions.
fn below<R: Rng>(rng: &mut R, n: u64) -> u64 {
    debug_assert!(n > 0);
    let zone = u64::MAX - (u64::MAX % n);
    loop {
        let x = rng.next_u64();
        if x < zone {
            return x % n;
        }
    }
}

/// Choose `k` distinct indices of 0..n uniformly (partial Fisher–Yates on a sparse map), in draw order.
fn sample_indices<R: Rng>(rng: &mut R, n: usize, k: usize) -> Vec<usize> {
    let k = k.min(n);
    let mut swapped: HashMap<usize, usize> = HashMap::new();
    let mut out = Vec::with_capacity(k);
    for i in 0..k {
        let j = i + below(rng, (n - i) as u64) as usize;
        let vj = *swapped.get(&j).unwrap_or(&j);
        let vi = *swapped.get(&i).unwrap_or(&i);
        swapped.insert(j, vi);
        out.push(vj);
    }
    out
}

/// How the originals were sampled (recorded in the manifest).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SamplingFrame {
    /// `uniform` or `stratified`.
    pub mode: String,
    /// What the frame is.
    pub frame: String,
    /// Triples in the frame.
    pub frame_size: u64,
    /// Triples excluded from the frame (deprecated rank).
    pub excluded_deprecated: u64,
    /// Triples in the candidate pool of the final uniform draw (the frame, or the capped per-property picks).
    pub pool_size: u64,
    /// Probability that a pooled triple is drawn: originals / pool size.
    pub draw_probability: f64,
    /// Per property: triples in the frame, originals drawn, and the inclusion weight (probability that a
    /// given triple of that property enters the candidate pool before the final uniform draw). A triple's
    /// overall sampling probability is `weight × draw_probability`.
    pub per_property: Vec<PropertyWeight>,
}

/// Per-property sampling record.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PropertyWeight {
    pub property: String,
    pub frame_count: u64,
    pub sampled: u64,
    pub weight: f64,
}

/// Draw the originals: indices into `triples`, in output order.
pub fn sample_originals(triples: &[Triple], cfg: &DistortConfig) -> (Vec<usize>, SamplingFrame) {
    sample_frame(
        triples.len(),
        |i| (triples[i].property, triples[i].rank),
        cfg,
    )
}

/// [`sample_originals`] over `n` final triples known by `(property, rank)` of each index.
pub fn sample_frame(
    n: usize,
    key: impl Fn(usize) -> (Pid, Rank),
    cfg: &DistortConfig,
) -> (Vec<usize>, SamplingFrame) {
    // Indices as u32 (half the memory of usize for a frame of millions of triples; the caller refuses more
    // than u32::MAX final triples).
    debug_assert!(n <= u32::MAX as usize);
    let frame: Vec<u32> = (0..n)
        .filter(|&i| key(i).1 != Rank::Deprecated)
        .map(|i| i as u32)
        .collect();
    let mut frame_count: BTreeMap<Pid, u64> = BTreeMap::new();
    for &i in &frame {
        *frame_count.entry(key(i as usize).0).or_default() += 1;
    }
    let mut rng = item_rng(cfg.seed, 1, 0);
    let (chosen, weights, pool_size): (Vec<usize>, BTreeMap<Pid, f64>, usize) =
        if cfg.stratify_by_property {
            let mut by_prop: BTreeMap<Pid, Vec<u32>> = BTreeMap::new();
            for &i in &frame {
                by_prop.entry(key(i as usize).0).or_default().push(i);
            }
            let cap = cfg.per_property_cap.max(1);
            let mut pool = Vec::new();
            let mut w = BTreeMap::new();
            for (p, idx) in &by_prop {
                let mut prng = item_rng(cfg.seed, 2, p.0);
                let take = sample_indices(&mut prng, idx.len(), cap);
                let mut picked: Vec<usize> = take.into_iter().map(|k| idx[k] as usize).collect();
                picked.sort_unstable();
                pool.extend(picked);
                w.insert(*p, (cap as f64 / idx.len() as f64).min(1.0));
            }
            let picks = sample_indices(&mut rng, pool.len(), cfg.samples);
            (picks.into_iter().map(|k| pool[k]).collect(), w, pool.len())
        } else {
            let picks = sample_indices(&mut rng, frame.len(), cfg.samples);
            let w = if frame.is_empty() { 0.0 } else { 1.0 };
            (
                picks.into_iter().map(|k| frame[k] as usize).collect(),
                frame_count.keys().map(|p| (*p, w)).collect(),
                frame.len(),
            )
        };
    let mut sampled: BTreeMap<Pid, u64> = BTreeMap::new();
    for &i in &chosen {
        *sampled.entry(key(i).0).or_default() += 1;
    }
    let per_property = frame_count
        .iter()
        .map(|(p, count)| PropertyWeight {
            property: p.to_string(),
            frame_count: *count,
            sampled: sampled.get(p).copied().unwrap_or(0),
            weight: weights.get(p).copied().unwrap_or(0.0),
        })
        .collect();
    let sf = SamplingFrame {
        mode: if cfg.stratify_by_property {
            format!("stratified (per-property cap {})", cfg.per_property_cap)
        } else {
            "uniform".into()
        },
        frame: "final triples (triples.parquet) with rank preferred or normal".into(),
        frame_size: frame.len() as u64,
        excluded_deprecated: (n - frame.len()) as u64,
        pool_size: pool_size as u64,
        draw_probability: if pool_size == 0 {
            0.0
        } else {
            chosen.len() as f64 / pool_size as f64
        },
        per_property,
    };
    (chosen, sf)
}

/// Outcome of one variant draw.
#[derive(Clone, Debug, PartialEq)]
pub enum VariantOutcome {
    Emitted(Distortion),
    Dropped {
        strategy: Strategy,
        reason: Reason,
        attempts: u32,
    },
}

/// Result of one original: its ORG row, its variants and the rejections met on the way.
#[derive(Clone, Debug)]
pub struct OriginalResult {
    pub org: Distortion,
    pub variants: Vec<VariantOutcome>,
    /// Rejected candidates by reason (every failed attempt counts once).
    pub rejections: BTreeMap<Reason, u64>,
    /// The guard probe of this original, per variant strategy (in `Strategy::VARIANTS` order).
    pub probe: [ProbeTally; 4],
}

/// What the guard probe saw for one strategy (see [`DistortConfig::probe_candidates`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProbeTally {
    /// Variants probed (those with a candidate other than the original).
    pub variants: u64,
    /// Candidates checked.
    pub candidates: u64,
    /// Variants whose whole pool was checked (pool no larger than `probe_candidates`).
    pub exact_pools: u64,
    /// Candidates rejected, by reason (the first guard that says the candidate may be true).
    pub rejected: BTreeMap<Reason, u64>,
    /// Sum over variants of the share of their candidates each reason rejected; divided by `variants` it is
    /// the estimated chance that one uniform draw is rejected for that reason.
    pub share_sum: BTreeMap<Reason, f64>,
}

impl ProbeTally {
    fn add(&mut self, other: &ProbeTally) {
        self.variants += other.variants;
        self.candidates += other.candidates;
        self.exact_pools += other.exact_pools;
        for (r, c) in &other.rejected {
            *self.rejected.entry(*r).or_default() += c;
        }
        for (r, x) in &other.share_sum {
            *self.share_sum.entry(*r).or_default() += x;
        }
    }
}

/// The entity of `t` that `strategy` replaces.
fn replaced(t: &Triple, strategy: Strategy) -> Qid {
    match strategy.role() {
        Some(Role::Subject) => t.subject,
        _ => t.object,
    }
}

/// The candidates of a variant: its replacement pool without the original entity.
struct Pool<'a> {
    items: &'a [Qid],
    /// The original's slot in `items`, skipped.
    skip: Option<usize>,
}

impl Pool<'_> {
    /// Candidates (the pool without the original).
    fn len(&self) -> usize {
        self.items.len() - usize::from(self.skip.is_some())
    }

    /// Candidate `k` (`k < len()`).
    fn get(&self, k: usize) -> Qid {
        self.items[k + usize::from(self.skip.is_some_and(|s| k >= s))]
    }
}

/// The replacement pool of a variant strategy, without the original.
fn pool_of<'a>(index: &'a Index, t: &Triple, strategy: Strategy, empty: &'a Vec<Qid>) -> Pool<'a> {
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
fn variant_of(t: &Triple, strategy: Strategy, cand: Qid) -> (Qid, Qid) {
    match strategy.role() {
        Some(Role::Subject) => (cand, t.object),
        _ => (t.subject, cand),
    }
}

/// The guard probe of one original: every guard's verdict on up to `probe_candidates` candidates per variant
/// (the whole pool when it is no larger), drawn from the stream (seed, 4, original).
pub fn probe_one(
    index: &Index,
    original_id: u32,
    t: &Triple,
    cfg: &DistortConfig,
) -> [ProbeTally; 4] {
    let mut out: [ProbeTally; 4] = Default::default();
    let k = cfg.probe_candidates;
    if k == 0 {
        return out;
    }
    let mut rng = item_rng(cfg.seed, 4, u64::from(original_id));
    let empty = Vec::new();
    for (slot, strategy) in Strategy::VARIANTS.into_iter().enumerate() {
        let pool = pool_of(index, t, strategy, &empty);
        let n = pool.len();
        if n == 0 {
            continue;
        }
        let tally = &mut out[slot];
        tally.variants = 1;
        let exact = n <= k;
        tally.exact_pools = u64::from(exact);
        let draws = if exact { n } else { k };
        let mut local: BTreeMap<Reason, u64> = BTreeMap::new();
        for i in 0..draws {
            let j = if exact {
                i
            } else {
                below(&mut rng, n as u64) as usize
            };
            let (s, o) = variant_of(t, strategy, pool.get(j));
            if let Err(r) = index.check(strategy, s, t.property, o, cfg.transitive_max_visits) {
                *local.entry(r).or_default() += 1;
            }
        }
        tally.candidates = draws as u64;
        for (r, c) in local {
            tally.share_sum.insert(r, c as f64 / draws as f64);
            tally.rejected.insert(r, c);
        }
    }
    out
}

/// Draw the four variants of one original.
pub fn distort_one(
    index: &Index,
    original_id: u32,
    t: &Triple,
    cfg: &DistortConfig,
    sim: &dyn Similarity,
) -> OriginalResult {
    let mut rng = item_rng(cfg.seed, 3, u64::from(original_id));
    let org = Distortion {
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
    };
    let empty = Vec::new();
    let mut rejections = BTreeMap::new();
    let mut variants = Vec::with_capacity(4);
    for strategy in Strategy::VARIANTS {
        let role = strategy.role().expect("variants have a role");
        let original = replaced(t, strategy);
        // Draw from the pool without the original.
        let pool = pool_of(index, t, strategy, &empty);
        let n = pool.len();
        if n == 0 {
            variants.push(VariantOutcome::Dropped {
                strategy,
                reason: Reason::EmptyPool,
                attempts: 0,
            });
            continue;
        }
        let mut local: BTreeMap<Reason, u64> = BTreeMap::new();
        let mut accepted = None;
        let mut attempts = 0;
        while attempts < cfg.max_attempts {
            attempts += 1;
            let cand = pool.get(below(&mut rng, n as u64) as usize);
            let (s, o) = variant_of(t, strategy, cand);
            match index.check(strategy, s, t.property, o, cfg.transitive_max_visits) {
                Ok(()) => {
                    accepted = Some((cand, s, o));
                    break;
                }
                Err(r) => *local.entry(r).or_default() += 1,
            }
        }
        for (r, c) in &local {
            *rejections.entry(*r).or_default() += c;
        }
        match accepted {
            Some((cand, s, o)) => variants.push(VariantOutcome::Emitted(Distortion {
                statement_id: statement_id(original_id, strategy),
                original_id,
                strategy,
                subject: s,
                property: t.property,
                object: o,
                replaced_role: Some(role),
                original_entity: Some(original),
                replacement_entity: Some(cand),
                cosine: sim.cosine(original, cand),
                cosine_centred: sim.cosine_centred(original, cand),
                attempts,
                original_rank: t.rank,
                original_statement_id: t.statement_id.clone(),
            })),
            None => {
                // The most frequent rejection reason names the drop (ties: the first check in order).
                let reason = local
                    .iter()
                    .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                    .map(|(r, _)| *r)
                    .unwrap_or(Reason::Exists);
                variants.push(VariantOutcome::Dropped {
                    strategy,
                    reason,
                    attempts,
                });
            }
        }
    }
    OriginalResult {
        org,
        variants,
        rejections,
        probe: probe_one(index, original_id, t, cfg),
    }
}

/// Everything the core produces.
#[derive(Clone, Debug)]
pub struct DistortOutput {
    /// ORG and emitted variants, grouped by original in sample order, strategies in `Strategy::ALL` order.
    pub rows: Vec<Distortion>,
    pub sampling: SamplingFrame,
    pub counts: BTreeMap<String, u64>,
    pub rejects: BTreeMap<String, u64>,
    /// Histogram of attempts of emitted variants: attempts → variants.
    pub attempts_histogram: BTreeMap<u32, u64>,
    /// The guard probe summed over originals, per variant strategy (`Strategy::VARIANTS` order).
    pub probe: [ProbeTally; 4],
}

/// The pure core: sample originals and draw their variants. Deterministic for a config.
pub fn distort(kb: &KnowledgeBase, cfg: &DistortConfig, sim: &dyn Similarity) -> DistortOutput {
    let index = Index::build(kb);
    distort_with_index(kb, &index, cfg, sim)
}

/// `distort` with indexes already built from the same knowledge base.
pub fn distort_with_index(
    kb: &KnowledgeBase,
    index: &Index,
    cfg: &DistortConfig,
    sim: &dyn Similarity,
) -> DistortOutput {
    let (chosen, sampling) = sample_originals(&kb.final_triples, cfg);
    let originals: Vec<Triple> = chosen
        .iter()
        .map(|&i| kb.final_triples[i].clone())
        .collect();
    let sizes = InputSizes {
        final_triples: kb.final_triples.len() as u64,
        statements: kb.statements.len() as u64,
        transitive: kb.transitive.len() as u64,
    };
    draw_all(index, &originals, sampling, sizes, cfg, sim)
}

/// Rows of the three triple files distort reads (counted in its manifest).
#[derive(Clone, Copy, Debug, Default)]
pub struct InputSizes {
    pub final_triples: u64,
    pub statements: u64,
    pub transitive: u64,
}

/// Draw the variants of the sampled `originals` (in sample order) and gather the output.
pub fn draw_all(
    index: &Index,
    originals: &[Triple],
    sampling: SamplingFrame,
    sizes: InputSizes,
    cfg: &DistortConfig,
    sim: &dyn Similarity,
) -> DistortOutput {
    let results: Vec<OriginalResult> = originals
        .par_iter()
        .enumerate()
        .map(|(i, t)| distort_one(index, i as u32, t, cfg, sim))
        .collect();
    let mut rows = Vec::new();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut rejects: BTreeMap<String, u64> = BTreeMap::new();
    let mut attempts_histogram: BTreeMap<u32, u64> = BTreeMap::new();
    counts.insert("final_triples".into(), sizes.final_triples);
    counts.insert("statements".into(), sizes.statements);
    counts.insert("transitive_statements".into(), sizes.transitive);
    counts.insert("graph_entities".into(), index.all_entities.len() as u64);
    counts.insert("originals".into(), results.len() as u64);
    for s in Strategy::ALL {
        counts.insert(format!("emitted_{}", s.as_str()), 0);
    }
    let mut probe: [ProbeTally; 4] = Default::default();
    for r in results {
        for (acc, p) in probe.iter_mut().zip(&r.probe) {
            acc.add(p);
        }
        rows.push(r.org);
        *counts.entry("emitted_ORG".into()).or_default() += 1;
        for (reason, c) in r.rejections {
            *rejects
                .entry(format!("attempt_rejected:{}", reason.as_str()))
                .or_default() += c;
        }
        for v in r.variants {
            match v {
                VariantOutcome::Emitted(d) => {
                    *counts
                        .entry(format!("emitted_{}", d.strategy.as_str()))
                        .or_default() += 1;
                    *attempts_histogram.entry(d.attempts).or_default() += 1;
                    rows.push(d);
                }
                VariantOutcome::Dropped {
                    strategy, reason, ..
                } => {
                    *rejects
                        .entry(format!(
                            "variant_dropped:{}:{}",
                            strategy.as_str(),
                            reason.as_str()
                        ))
                        .or_default() += 1;
                    *counts
                        .entry(format!("dropped_{}", strategy.as_str()))
                        .or_default() += 1;
                }
            }
        }
    }
    DistortOutput {
        rows,
        sampling,
        counts,
        rejects,
        attempts_histogram,
        probe,
    }
}

/// The guard probe as the manifest states it (`extra.guard_probe`).
pub fn probe_json(probe: &[ProbeTally; 4], candidates_per_variant: usize) -> serde_json::Value {
    let mut total: BTreeMap<&str, u64> = BTreeMap::new();
    let mut by = serde_json::Map::new();
    for (strategy, t) in Strategy::VARIANTS.iter().zip(probe) {
        for (r, c) in &t.rejected {
            *total.entry(r.as_str()).or_default() += c;
        }
        let share: BTreeMap<&str, f64> = t
            .share_sum
            .iter()
            .map(|(r, x)| {
                (
                    r.as_str(),
                    if t.variants == 0 {
                        0.0
                    } else {
                        x / t.variants as f64
                    },
                )
            })
            .collect();
        let rejected: BTreeMap<&str, u64> =
            t.rejected.iter().map(|(r, c)| (r.as_str(), *c)).collect();
        by.insert(
            strategy.as_str().to_string(),
            serde_json::json!({
                "variants": t.variants,
                "candidates": t.candidates,
                "exact_pools": t.exact_pools,
                "rejected": rejected,
                "share": share,
            }),
        );
    }
    serde_json::json!({
        "candidates_per_variant": candidates_per_variant,
        "what": "every guard's verdict on up to candidates_per_variant further candidates per variant (the whole \
                 pool when it is smaller), drawn from a random stream of their own; they never enter the output. \
                 rejected counts candidates by the first guard that says they may be true; share is the mean over \
                 variants of the share of their candidates each reason rejects: the chance that one uniform draw \
                 would be true by that guard",
        "rejected": total,
        "by_strategy": by,
    })
}

/// Schema of `distortions.parquet` (one row per statement; see `Distortion` for the meaning of each column).
pub fn distortions_schema() -> Arc<Schema> {
    let mut md = HashMap::new();
    md.insert(
        "sword.distortions_format_version".to_string(),
        DISTORTIONS_FORMAT_VERSION.to_string(),
    );
    Arc::new(Schema::new_with_metadata(
        vec![
            Field::new("statement_id", DataType::Utf8, false),
            Field::new("original_id", DataType::UInt32, false),
            Field::new("strategy", DataType::Utf8, false),
            Field::new("label", DataType::Boolean, false),
            Field::new("subject", DataType::Utf8, false),
            Field::new("property", DataType::Utf8, false),
            Field::new("object", DataType::Utf8, false),
            Field::new("replaced_role", DataType::Utf8, true),
            Field::new("original_entity", DataType::Utf8, true),
            Field::new("replacement_entity", DataType::Utf8, true),
            Field::new("cosine", DataType::Float32, true),
            Field::new("cosine_centred", DataType::Float32, true),
            Field::new("attempts", DataType::UInt32, false),
            Field::new("original_rank", DataType::Utf8, false),
            Field::new("original_statement_id", DataType::Utf8, false),
        ],
        md,
    ))
}

/// The columns that `distortions.parquet` and `sword.parquet` share, in schema order (statement id through
/// original statement id), for one chunk of rows.
pub fn distortion_columns(chunk: &[Distortion]) -> Vec<ArrayRef> {
    let strs = |f: &dyn Fn(&Distortion) -> String| -> ArrayRef {
        Arc::new(StringArray::from_iter_values(chunk.iter().map(f)))
    };
    let opt = |f: &dyn Fn(&Distortion) -> Option<String>| -> ArrayRef {
        Arc::new(chunk.iter().map(f).collect::<StringArray>())
    };
    vec![
        strs(&|d| d.statement_id.clone()),
        Arc::new(UInt32Array::from_iter_values(
            chunk.iter().map(|d| d.original_id),
        )),
        strs(&|d| d.strategy.as_str().to_string()),
        Arc::new(BooleanArray::from(
            chunk
                .iter()
                .map(|d| d.strategy == Strategy::ORG)
                .collect::<Vec<_>>(),
        )),
        strs(&|d| d.subject.to_string()),
        strs(&|d| d.property.to_string()),
        strs(&|d| d.object.to_string()),
        opt(&|d| d.replaced_role.map(|r| r.as_str().to_string())),
        opt(&|d| d.original_entity.map(|q| q.to_string())),
        opt(&|d| d.replacement_entity.map(|q| q.to_string())),
        Arc::new(chunk.iter().map(|d| d.cosine).collect::<Float32Array>()),
        Arc::new(
            chunk
                .iter()
                .map(|d| d.cosine_centred)
                .collect::<Float32Array>(),
        ),
        Arc::new(UInt32Array::from_iter_values(
            chunk.iter().map(|d| d.attempts),
        )),
        strs(&|d| d.original_rank.as_str().to_string()),
        strs(&|d| d.original_statement_id.clone()),
    ]
}

/// Write distortion rows as Parquet (`complete == false` marks an incomplete build, see
/// [`tables::writer_props_marked`]).
pub fn write_distortions<W: Write + Send>(
    w: W,
    rows: &[Distortion],
    complete: bool,
    path: &Path,
) -> Result<W> {
    let schema = distortions_schema();
    let mut writer = ArrowWriter::try_new(
        w,
        schema.clone(),
        Some(tables::writer_props_marked(complete)),
    )
    .map_err(|e| Error::parquet(path, e))?;
    for chunk in rows.chunks(tables::ROW_GROUP) {
        let cols: Vec<ArrayRef> = distortion_columns(chunk);
        let batch =
            RecordBatch::try_new(schema.clone(), cols).map_err(|e| Error::parquet(path, e))?;
        writer.write(&batch).map_err(|e| Error::parquet(path, e))?;
    }
    writer.into_inner().map_err(|e| Error::parquet(path, e))
}

fn column<'a, T: 'static>(batch: &'a RecordBatch, name: &str, path: &Path) -> Result<&'a T> {
    batch
        .column_by_name(name)
        .and_then(|c| c.as_any().downcast_ref::<T>())
        .ok_or_else(|| Error::Corrupt {
            path: path.to_path_buf(),
            what: format!("missing or mistyped column `{name}`"),
        })
}

/// Read `distortions.parquet`.
pub fn read_distortions<R: parquet::file::reader::ChunkReader + 'static>(
    src: R,
    path: &Path,
) -> Result<Vec<Distortion>> {
    let mut out = Vec::new();
    let mut row = 0usize;
    for batch in tables::read_batches(src, path)? {
        let sid = tables::string_column(&batch, "statement_id", path)?;
        let oid = column::<UInt32Array>(&batch, "original_id", path)?;
        let strat = tables::string_column(&batch, "strategy", path)?;
        let s = tables::string_column(&batch, "subject", path)?;
        let p = tables::string_column(&batch, "property", path)?;
        let o = tables::string_column(&batch, "object", path)?;
        let role = tables::string_column(&batch, "replaced_role", path)?;
        let oe = tables::string_column(&batch, "original_entity", path)?;
        let re = tables::string_column(&batch, "replacement_entity", path)?;
        let cos = column::<Float32Array>(&batch, "cosine", path)?;
        let cosc = column::<Float32Array>(&batch, "cosine_centred", path)?;
        let att = column::<UInt32Array>(&batch, "attempts", path)?;
        let rank = tables::string_column(&batch, "original_rank", path)?;
        let osid = tables::string_column(&batch, "original_statement_id", path)?;
        for i in 0..batch.num_rows() {
            let bad = |what: &str| Error::Corrupt {
                path: path.to_path_buf(),
                what: format!("row {}: bad {what}", row + i),
            };
            let opt_q = |a: &StringArray, what: &str| -> Result<Option<Qid>> {
                if a.is_null(i) {
                    Ok(None)
                } else {
                    Qid::parse(a.value(i)).map(Some).ok_or_else(|| bad(what))
                }
            };
            let f = |a: &Float32Array| (!a.is_null(i)).then(|| a.value(i));
            out.push(Distortion {
                statement_id: sid.value(i).to_string(),
                original_id: oid.value(i),
                strategy: Strategy::parse(strat.value(i)).ok_or_else(|| bad("strategy"))?,
                subject: Qid::parse(s.value(i)).ok_or_else(|| bad("subject"))?,
                property: Pid::parse(p.value(i)).ok_or_else(|| bad("property"))?,
                object: Qid::parse(o.value(i)).ok_or_else(|| bad("object"))?,
                replaced_role: if role.is_null(i) {
                    None
                } else {
                    Some(Role::parse(role.value(i)).ok_or_else(|| bad("replaced_role"))?)
                },
                original_entity: opt_q(oe, "original_entity")?,
                replacement_entity: opt_q(re, "replacement_entity")?,
                cosine: f(cos),
                cosine_centred: f(cosc),
                attempts: att.value(i),
                original_rank: Rank::parse(rank.value(i)).ok_or_else(|| bad("original_rank"))?,
                original_statement_id: osid.value(i).to_string(),
            });
        }
        row += batch.num_rows();
    }
    Ok(out)
}

/// Read `distortions.parquet` from disk.
pub fn read_distortions_file(path: &Path) -> Result<Vec<Distortion>> {
    let f = std::fs::File::open(path).at(path)?;
    read_distortions(f, path)
}

/// Read `properties.parquet` (the extract stage's reader).
fn load_properties(path: &Path) -> Result<Vec<PropertyRecord>> {
    tables::read_properties(path)
}

/// The distort stage: the extract artifacts (and, when present, the embeddings) → `distortions.parquet`.
#[derive(Clone, Copy, Debug, Default)]
pub struct DistortStage;

impl Stage for DistortStage {
    const NAME: &'static str = layout::DISTORT;
    type Settings = DistortConfig;
    type Args = NoSettings;
    type Outcome = ();

    fn inputs(&self, _: &DistortConfig, _: &NoSettings) -> Vec<Input> {
        vec![
            Input::Vouched(TRIPLES),
            Input::Vouched(STATEMENTS),
            Input::Vouched(TRANSITIVE),
            Input::Vouched(PROPERTIES),
            Input::Optional(EMBEDDINGS_NPY),
            Input::Optional(NODES),
            Input::Optional(EMBEDDINGS_W2V),
        ]
    }

    fn outputs(&self, _: &DistortConfig, _: &NoSettings) -> Vec<Artifact> {
        vec![DISTORTIONS]
    }

    fn validate(&self, cfg: &DistortConfig, _: &NoSettings) -> Result<()> {
        if cfg.max_attempts == 0 {
            return Err(Error::Config("--max-attempts must be at least 1".into()));
        }
        Ok(())
    }

    fn seed(&self, cfg: &DistortConfig) -> Option<u64> {
        Some(cfg.seed)
    }

    fn run(&self, cx: &mut Context, cfg: &DistortConfig, _: &NoSettings) -> Result<()> {
        run(cx, cfg)
    }

    fn summary(&self, _: &Path, m: &Manifest) -> String {
        let mut line = String::from("distort:");
        for s in Strategy::ALL {
            let k = format!("emitted_{}", s.as_str());
            line.push_str(&format!(
                " {}={}",
                s.as_str(),
                m.counts.get(&k).copied().unwrap_or(0)
            ));
        }
        line
    }
}

/// The work of the stage: the existence index from the triples, statements and transitive statements (streamed
/// into the compact index: nothing else of them is held), the sample, the draws, `distortions.parquet`.
fn run(cx: &mut Context, cfg: &DistortConfig) -> Result<()> {
    let properties = load_properties(&cx.path(&PROPERTIES))?;
    let mut builder = IndexBuilder::default();
    let finals_path = cx.path(&TRIPLES);
    let mut finals: Vec<(Pid, Rank)> = Vec::new();
    let mut final_keys: Vec<(Qid, Qid)> = Vec::new();
    let n_final = tables::for_each_triple(&finals_path, true, |_, s, p, o, rank| {
        builder.final_triple(s, p, o);
        finals.push((p, rank));
        final_keys.push((s, o));
    })?;
    if n_final > u64::from(u32::MAX) {
        return Err(Error::bad_input(
            &finals_path,
            format!("{n_final} final triples: more than the 4 294 967 295 distort samples from"),
        ));
    }
    let mut sizes = InputSizes {
        final_triples: n_final,
        ..InputSizes::default()
    };
    sizes.statements = tables::for_each_triple(&cx.path(&STATEMENTS), false, |_, s, p, o, _| {
        builder.statement(s, p, o)
    })?;
    sizes.transitive = tables::for_each_triple(&cx.path(&TRANSITIVE), false, |_, s, p, o, _| {
        builder.statement(s, p, o)
    })?;
    let index = builder.finish(&properties);
    drop(properties);
    let (chosen, sampling) = sample_frame(finals.len(), |i| finals[i], cfg);
    let rows: Vec<u64> = chosen.iter().map(|&i| i as u64).collect();
    let ids = tables::statement_ids_at(&finals_path, &rows)?;
    let originals: Vec<Triple> = chosen
        .iter()
        .zip(ids)
        .map(|(&i, statement_id)| Triple {
            subject: final_keys[i].0,
            property: finals[i].0,
            object: final_keys[i].1,
            rank: finals[i].1,
            statement_id,
        })
        .collect();
    drop((finals, final_keys));
    let (sim, embeddings_present): (Box<dyn Similarity>, bool) =
        if let Some(npy) = cx.optional_input(&EMBEDDINGS_NPY)? {
            let nodes = cx.input(&NODES)?;
            (Box::new(NpySimilarity::open(&npy, &nodes)?), true)
        } else if let Some(w2v) = cx.optional_input(&EMBEDDINGS_W2V)? {
            // Only the text form (embeddings made elsewhere): parsed whole, as before embeddings.npy was read.
            let e = crate::store::embeddings::Embeddings::read_w2v(&w2v)?;
            (Box::new(EmbeddingSimilarity::new(e)), true)
        } else {
            crate::core::progress::log(format!(
                "distort: {} missing: cosines will be null",
                cx.path(&EMBEDDINGS_NPY).display()
            ));
            (Box::new(NoSimilarity), false)
        };
    cx.lap("read");
    let out = draw_all(&index, &originals, sampling, sizes, cfg, sim.as_ref());
    drop(index);
    cx.lap("distort");
    // An incomplete build (its extract kept what a truncated dump held) marks this file too.
    let complete = cx.inputs_incomplete().is_empty();
    let dest = cx.path(&DISTORTIONS);
    let mut file = cx.create(&DISTORTIONS)?;
    write_distortions(&mut file, &out.rows, complete, &dest)?;
    file.commit()?;
    let manifest = cx.manifest();
    manifest.counts = out.counts;
    manifest
        .counts
        .insert("embeddings_present".into(), u64::from(embeddings_present));
    manifest.rejects = out.rejects;
    let diff = |a, b, centred| {
        let d = differences(&out.rows, a, b, centred);
        let mean = (!d.is_empty()).then(|| d.iter().sum::<f64>() / d.len() as f64);
        serde_json::json!({"n": d.len(), "mean": mean})
    };
    let differences = serde_json::json!({
        "PSS-SS": diff(Strategy::PSS, Strategy::SS, false),
        "POS-OS": diff(Strategy::POS, Strategy::OS, false),
        "PSS-SS_centred": diff(Strategy::PSS, Strategy::SS, true),
        "POS-OS_centred": diff(Strategy::POS, Strategy::OS, true),
    });
    manifest.extra = serde_json::json!({
        "format_version": DISTORTIONS_FORMAT_VERSION,
        "cosine_differences_per_original": differences,
        "sampling": out.sampling,
        "attempts_histogram": out.attempts_histogram.iter().map(|(k, v)| (k.to_string(), *v)).collect::<BTreeMap<_, _>>(),
        "transitive_bound": format!("breadth-first search expands at most {} nodes per check", cfg.transitive_max_visits),
        "guard_probe": probe_json(&out.probe, cfg.probe_candidates),
    });
    Ok(())
}

/// Per-original differences `cos(a) − cos(b)` (raw or centred) for originals that have both variants.
pub fn differences(rows: &[Distortion], a: Strategy, b: Strategy, centred: bool) -> Vec<f64> {
    let mut by: BTreeMap<u32, [Option<f32>; 2]> = BTreeMap::new();
    for d in rows {
        let c = if centred { d.cosine_centred } else { d.cosine };
        if d.strategy == a {
            by.entry(d.original_id).or_default()[0] = c;
        } else if d.strategy == b {
            by.entry(d.original_id).or_default()[1] = c;
        }
    }
    by.values()
        .filter_map(|[x, y]| Some(f64::from((*x)?) - f64::from((*y)?)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(s: u64, p: u64, o: u64) -> Triple {
        Triple {
            subject: Qid(s),
            property: Pid(p),
            object: Qid(o),
            rank: Rank::Normal,
            statement_id: String::new(),
        }
    }

    fn prop(id: u64, symmetric: bool, transitive: bool, inverse: Vec<u64>) -> PropertyRecord {
        PropertyRecord {
            id: Pid(id),
            datatype: "wikibase-item".into(),
            labels: vec![],
            transitive,
            symmetric,
            inverse: inverse.into_iter().map(Pid).collect(),
        }
    }

    #[test]
    fn checks_catch_each_rule() {
        // P1 symmetric, P2 ↔ P3 inverse, P4 transitive.
        let statements = vec![
            t(1, 1, 2),
            t(10, 2, 11),
            t(20, 4, 21),
            t(21, 4, 22),
            t(30, 5, 31),
        ];
        let kb = KnowledgeBase {
            final_triples: statements.clone(),
            statements: statements.clone(),
            transitive: vec![t(20, 4, 21), t(21, 4, 22)],
            properties: vec![
                prop(1, true, false, vec![]),
                prop(2, false, false, vec![3]),
                prop(4, false, true, vec![]),
            ],
        };
        let ix = Index::build(&kb);
        let c = |st, s, p, o| ix.check(st, Qid(s), Pid(p), Qid(o), 1000);
        assert_eq!(c(Strategy::SS, 1, 1, 2), Err(Reason::Exists));
        assert_eq!(c(Strategy::SS, 2, 1, 1), Err(Reason::Symmetric));
        assert_eq!(c(Strategy::SS, 11, 3, 10), Err(Reason::Inverse));
        assert_eq!(c(Strategy::SS, 20, 4, 22), Err(Reason::Transitive));
        assert_eq!(c(Strategy::SS, 22, 4, 20), Ok(()));
        assert_eq!(c(Strategy::SS, 5, 5, 5), Err(Reason::SelfLoop));
        assert_eq!(c(Strategy::OS, 30, 5, 31), Err(Reason::SubjectHasValue));
        assert_eq!(c(Strategy::SS, 30, 5, 32), Ok(()));
        // A budget of one node cannot decide a two-hop chain: rejected conservatively.
        assert_eq!(
            ix.check(Strategy::SS, Qid(20), Pid(4), Qid(23), 1),
            Err(Reason::TransitiveBound)
        );
    }

    /// The knowledge base of the probe tests: P2 ↔ P3 inverse; final triples (10,2,11), (12,2,13), (14,2,15),
    /// (16,2,11); stated only: (11,3,12) and (13,3,10).
    fn probe_kb() -> KnowledgeBase {
        let finals = vec![t(10, 2, 11), t(12, 2, 13), t(14, 2, 15), t(16, 2, 11)];
        let mut statements = finals.clone();
        statements.extend([t(11, 3, 12), t(13, 3, 10)]);
        KnowledgeBase {
            final_triples: finals,
            statements,
            transitive: vec![],
            properties: vec![
                prop(2, false, false, vec![3]),
                prop(3, false, false, vec![]),
            ],
        }
    }

    #[test]
    fn the_probe_checks_whole_small_pools_exactly() {
        // Original (10, P2, 11). Worked out by hand from the statements above:
        // SS over {11..16}: 11 self loop, 12 inverse (11 P3 12), 16 exists, 13 14 15 false.
        // OS over {10, 12..16}: 10 self loop, 13 inverse (13 P3 10), the rest false.
        // PSS over {12, 14, 16}: 12 inverse, 16 exists, 14 false. POS over {13, 15}: 13 inverse, 15 false.
        let kb = probe_kb();
        let ix = Index::build(&kb);
        let cfg = DistortConfig::default();
        let p = probe_one(&ix, 0, &kb.final_triples[0], &cfg);
        let want = |pairs: &[(Reason, u64)]| pairs.iter().copied().collect::<BTreeMap<_, _>>();
        let expect = [
            (
                6,
                want(&[
                    (Reason::SelfLoop, 1),
                    (Reason::Inverse, 1),
                    (Reason::Exists, 1),
                ]),
            ),
            (6, want(&[(Reason::SelfLoop, 1), (Reason::Inverse, 1)])),
            (3, want(&[(Reason::Inverse, 1), (Reason::Exists, 1)])),
            (2, want(&[(Reason::Inverse, 1)])),
        ];
        for (slot, (n, rejected)) in expect.into_iter().enumerate() {
            let got = &p[slot];
            assert_eq!(
                (got.variants, got.exact_pools, got.candidates),
                (1, 1, n),
                "slot {slot}"
            );
            assert_eq!(got.rejected, rejected, "slot {slot}");
            for (r, c) in &got.rejected {
                assert!((got.share_sum[r] - *c as f64 / n as f64).abs() < 1e-12);
            }
        }
        // Off: nothing probed.
        let off = DistortConfig {
            probe_candidates: 0,
            ..DistortConfig::default()
        };
        assert_eq!(
            probe_one(&ix, 0, &kb.final_triples[0], &off),
            <[ProbeTally; 4]>::default()
        );
    }

    #[test]
    fn the_probe_samples_large_pools_and_never_changes_the_output() {
        let kb = probe_kb();
        let ix = Index::build(&kb);
        let small = DistortConfig {
            probe_candidates: 2,
            ..DistortConfig::default()
        };
        let p = probe_one(&ix, 0, &kb.final_triples[0], &small);
        // SS, OS and PSS pools (6, 6, 3 candidates) are sampled twice; POS (2) is enumerated.
        assert_eq!(
            p.iter()
                .map(|x| (x.candidates, x.exact_pools))
                .collect::<Vec<_>>(),
            vec![(2, 0), (2, 0), (2, 0), (2, 1)]
        );
        assert_eq!(
            p,
            probe_one(&ix, 0, &kb.final_triples[0], &small),
            "deterministic"
        );
        let with = distort(&kb, &DistortConfig::default(), &NoSimilarity);
        let without = distort(
            &kb,
            &DistortConfig {
                probe_candidates: 0,
                ..DistortConfig::default()
            },
            &NoSimilarity,
        );
        assert_eq!(with.rows, without.rows);
        assert_eq!(with.rejects, without.rejects);
        assert!(with.probe[0].candidates > 0 && without.probe[0].candidates == 0);
        let j = probe_json(&with.probe, 100);
        let inverse = j["rejected"]["inverse"].as_u64().unwrap();
        let summed: u64 = with
            .probe
            .iter()
            .map(|t| t.rejected.get(&Reason::Inverse).copied().unwrap_or(0))
            .sum();
        assert_eq!(inverse, summed);
    }

    #[test]
    fn variants_without_a_false_candidate_are_dropped_and_counted() {
        // P9: every subject has the same object, so every PSS candidate exists; POS has one object only.
        let triples: Vec<Triple> = (1..=4).map(|i| t(i, 9, 50)).collect();
        let kb = KnowledgeBase {
            final_triples: triples.clone(),
            statements: triples,
            ..Default::default()
        };
        let cfg = DistortConfig {
            samples: 4,
            max_attempts: 7,
            ..Default::default()
        };
        let out = distort(&kb, &cfg, &NoSimilarity);
        assert!(out
            .rows
            .iter()
            .all(|d| d.strategy != Strategy::PSS && d.strategy != Strategy::POS));
        assert_eq!(out.rejects["variant_dropped:PSS:exists"], 4);
        assert_eq!(out.rejects["variant_dropped:POS:empty_pool"], 4);
        // 7 rejected draws per PSS variant, plus whatever SS drew among the other subjects.
        assert!(out.rejects["attempt_rejected:exists"] >= 28);
        assert_eq!(out.counts["dropped_PSS"], 4);
        let idx = Index::build(&kb);
        for d in &out.rows {
            assert!(d.strategy == Strategy::ORG || !idx.exists(d.subject, d.property, d.object));
        }
    }

    #[test]
    fn sample_indices_are_distinct_and_in_range() {
        let mut rng = item_rng(7, 0, 0);
        let v = sample_indices(&mut rng, 50, 50);
        let mut s = v.clone();
        s.sort_unstable();
        assert_eq!(s, (0..50).collect::<Vec<_>>());
        let v = sample_indices(&mut rng, 1000, 10);
        assert_eq!(v.len(), 10);
        assert!(v.iter().all(|&x| x < 1000));
        assert_eq!(v.iter().collect::<HashSet<_>>().len(), 10);
    }

    #[test]
    fn stratified_sampling_respects_the_cap() {
        let mut triples: Vec<Triple> = (0..100).map(|i| t(i + 1, 31, 5)).collect();
        triples.extend((0..3).map(|i| t(i + 200, 17, 6)));
        let cfg = DistortConfig {
            samples: 100,
            stratify_by_property: true,
            per_property_cap: 4,
            ..Default::default()
        };
        let (chosen, frame) = sample_originals(&triples, &cfg);
        assert_eq!(chosen.len(), 7);
        let p31 = frame
            .per_property
            .iter()
            .find(|w| w.property == "P31")
            .unwrap();
        assert_eq!((p31.frame_count, p31.sampled), (100, 4));
        assert!((p31.weight - 0.04).abs() < 1e-12);
    }

    #[test]
    fn distortions_round_trip_through_parquet() {
        let kb = KnowledgeBase {
            final_triples: (1..30).map(|i| t(i, 7, i + 100)).collect(),
            ..Default::default()
        };
        let sim = FnSimilarity(|a: Qid, b: Qid| {
            let x = (a.0 as f32 - b.0 as f32).abs() / 200.0;
            (Some(1.0 - x), Some(0.5 - x))
        });
        let out = distort(
            &kb,
            &DistortConfig {
                samples: 10,
                ..Default::default()
            },
            &sim,
        );
        assert_eq!(out.rows.len(), 50);
        let bytes = write_distortions(Vec::new(), &out.rows, true, Path::new("mem")).unwrap();
        let back = read_distortions(bytes::Bytes::from(bytes), Path::new("mem")).unwrap();
        assert_eq!(back, out.rows);
    }
}

/// The compact index against the plain one it replaced (hash sets of (S, P, O) and hash maps of successor
/// lists): the same verdict, reason and search budget on every check, on random knowledge bases whose ids
/// are partly wider than 32 bits (crafted input) and partly not.
#[cfg(test)]
mod compact_index {
    use super::*;
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
