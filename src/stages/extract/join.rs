//! The join of the extract stage (pure): from what the streaming pass kept — labelled entities, property
//! metadata, candidate statements of labelled subjects and seed statements of unlabelled ones — to the five
//! artifacts' rows: entities and properties sorted and deduplicated, the existence index (`statements`), the
//! final `triples` and the statements of transitive properties.

use crate::core::error::{Error, Result};
use crate::core::falsity::{Constraint, DistinctValue, Kind, SubjectValues, TypeStatement};
use crate::core::ids::{EntityId, Pid, Qid};
use crate::core::records::{EntityRecord, PropertyRecord, Rank, Triple};
use crate::dump::inorder::wait_one;
use crate::stages::extract::cand::Cand;
use crate::stages::extract::falsity::{self, Pair, Snak, Values};
use crate::stages::extract::keep::Acc;
use crate::stages::extract::spill::{self, Runs, SpillDir};
use crate::store::tables::items::ItemSet;
use crate::store::tables::STREAM_BATCH;
use rayon::iter::{IntoParallelRefIterator, ParallelIterator};
use rayon::slice::ParallelSliceMut;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;

/// The join's products.
pub struct Joined {
    pub entities: Vec<EntityRecord>,
    pub properties: Vec<PropertyRecord>,
    pub triples: Vec<Triple>,
    pub statements: Vec<Triple>,
    /// Sorted like `Triple` (subject, property, object, rank, statement id); converted to rows while writing.
    pub transitive: Vec<Cand>,
    /// Statements with unlabelled subjects of transitive properties outside the seed (not kept).
    pub transitive_missed: u64,
    pub duplicate_entities: u64,
}

/// Properties whose statements between labelled items go to the existence index: the labelled properties,
/// and every inverse partner of a labelled property (P1696 stated on either side) even when the partner itself
/// is not labelled in every language.
///
/// Why the partners: a distortion (S′, P, O′) of a labelled P is true when (O′, P′, S′) is stated for an inverse
/// P′ of P, and Wikidata often states such a fact on one side only. An index restricted to labelled properties
/// would be blind to it whenever P′ lacks a Korean or Japanese label, and the distortion stage would label a
/// true statement false. Partners add few rows (there are a few hundred inverse pairs in Wikidata).
pub fn index_properties(
    properties: &[PropertyRecord],
    labelled: &HashSet<EntityId>,
) -> HashSet<Pid> {
    let labelled_props: HashSet<Pid> = labelled
        .iter()
        .filter_map(|e| match e {
            EntityId::Property(p) => Some(*p),
            EntityId::Item(_) => None,
        })
        .collect();
    index_properties_of(
        properties.iter().map(|p| (p.id, p.inverse.as_slice())),
        &labelled_props,
    )
}

/// [`index_properties`] from the labelled properties and each property's declared inverses.
fn index_properties_of<'a>(
    inverses: impl Iterator<Item = (Pid, &'a [Pid])>,
    labelled_props: &HashSet<Pid>,
) -> HashSet<Pid> {
    let mut out = labelled_props.clone();
    for (p, inverse) in inverses {
        for &q in inverse {
            if labelled_props.contains(&p) {
                out.insert(q);
            }
            if labelled_props.contains(&q) {
                out.insert(p);
            }
        }
    }
    out
}

/// Sort, deduplicate and join (pure, in memory): the reference that [`State::join`], which the stage runs,
/// is tested against.
pub fn join(
    mut entities: Vec<EntityRecord>,
    mut properties: Vec<PropertyRecord>,
    candidates: Vec<Cand>,
    seed_other: Vec<Cand>,
    unlabelled_by_prop: &HashMap<Pid, u64>,
    seed: &[Pid],
) -> Joined {
    entities.sort_by_key(|e| e.id);
    let before = entities.len();
    entities.dedup_by(|b, a| a.id == b.id);
    let duplicate_entities = before.saturating_sub(entities.len()) as u64;
    properties.sort_by_key(|p| p.id);
    properties.dedup_by(|b, a| a.id == b.id);
    let labelled: HashSet<EntityId> = entities.iter().map(|e| e.id).collect();
    let transitive_props: HashSet<Pid> = properties
        .iter()
        .filter(|p| p.transitive)
        .map(|p| p.id)
        .collect();
    // The statements of unlabelled subjects hold P279 for the falsity tier whatever the seed says:
    // `transitive.parquet` takes only those of the seed.
    let mut transitive: Vec<Cand> = candidates
        .iter()
        .chain(
            seed_other
                .iter()
                .filter(|c| seed.contains(&Pid(u64::from(c.p)))),
        )
        .filter(|c| transitive_props.contains(&Pid(u64::from(c.p))))
        .cloned()
        .collect();
    drop(seed_other);
    transitive.sort_unstable_by(Cand::cmp_as_triple);
    transitive.dedup();
    let index_props = index_properties(&properties, &labelled);
    let mut statements: Vec<Triple> = candidates
        .iter()
        .filter(|c| {
            index_props.contains(&Pid(u64::from(c.p)))
                && labelled.contains(&EntityId::Item(Qid(c.o)))
        })
        .map(Cand::to_triple)
        .collect();
    drop(candidates);
    statements.sort_unstable();
    statements.dedup();
    // Final triples: P labelled, deprecated out, one row per (S, P, O) with the best rank (ties: smallest
    // statement id).
    let mut triples: Vec<Triple> = Vec::new();
    for t in statements
        .iter()
        .filter(|t| t.rank != Rank::Deprecated)
        .filter(|t| labelled.contains(&EntityId::Property(t.property)))
    {
        match triples.last_mut() {
            Some(last) if last.key() == t.key() => {
                if t.rank > last.rank {
                    *last = t.clone();
                }
            }
            _ => triples.push(t.clone()),
        }
    }
    let transitive_missed = transitive_props
        .iter()
        .filter(|p| !seed.contains(p))
        .map(|p| unlabelled_by_prop.get(p).copied().unwrap_or(0))
        .sum();
    Joined {
        entities,
        properties,
        triples,
        statements,
        transitive,
        transitive_missed,
        duplicate_entities,
    }
}

/// Where the join's rows go, in order, in batches of any size (the stage: Parquet writers, which cut them into
/// row groups themselves; tests: vectors). The three statement tables get their rows as candidates, which the
/// writers turn into text columns directly.
pub trait Out {
    fn entities(&mut self, rows: Vec<EntityRecord>) -> Result<()>;
    /// Every entity row was given (the stage finishes `entities.parquet` here, freeing its writer).
    fn entities_done(&mut self) -> Result<()> {
        Ok(())
    }
    fn properties(&mut self, rows: Vec<PropertyRecord>) -> Result<()>;
    /// Every property row was given.
    fn properties_done(&mut self) -> Result<()> {
        Ok(())
    }
    fn statements(&mut self, rows: Vec<Cand>) -> Result<()>;
    fn triples(&mut self, rows: Vec<Cand>) -> Result<()>;
    fn transitive(&mut self, rows: Vec<Cand>) -> Result<()>;
    /// The falsity tier's tables (`extract::falsity`), each in its sorted order; by default dropped (the
    /// tests of the five artifacts).
    fn constraints(&mut self, rows: Vec<Constraint>) -> Result<()> {
        let _ = rows;
        Ok(())
    }
    fn values(&mut self, rows: Vec<SubjectValues>) -> Result<()> {
        let _ = rows;
        Ok(())
    }
    fn types(&mut self, rows: Vec<TypeStatement>) -> Result<()> {
        let _ = rows;
        Ok(())
    }
    fn distinct(&mut self, rows: Vec<DistinctValue>) -> Result<()> {
        let _ = rows;
        Ok(())
    }
}

/// Rows gathered into batches of [`STREAM_BATCH`] before they go out (handed over owned, so that a writer on
/// another thread can take them without a copy).
struct Batch<T> {
    rows: Vec<T>,
    n: u64,
}

impl<T> Batch<T> {
    fn new() -> Self {
        Batch {
            rows: Vec::new(),
            n: 0,
        }
    }
    fn push(&mut self, r: T, out: &mut dyn FnMut(Vec<T>) -> Result<()>) -> Result<()> {
        if self.rows.capacity() == 0 {
            self.rows.reserve_exact(STREAM_BATCH);
        }
        self.rows.push(r);
        self.n = self.n.saturating_add(1);
        if self.rows.len() >= STREAM_BATCH {
            out(std::mem::take(&mut self.rows))?;
        }
        Ok(())
    }
    fn flush(&mut self, out: &mut dyn FnMut(Vec<T>) -> Result<()>) -> Result<()> {
        if !self.rows.is_empty() {
            out(std::mem::take(&mut self.rows))?;
        }
        Ok(())
    }
}

/// A set of property numbers, for the lookups the join makes per statement: a bitmap (a dump's property
/// numbers are small: P1 to ≈ P13000 in 2024), or a hash set for numbers past 2²⁴ (a crafted dump).
struct PropSet {
    bits: Vec<u64>,
    big: HashSet<u64>,
}

impl PropSet {
    const BITMAP_MAX: u64 = 1 << 24;

    fn new(props: impl IntoIterator<Item = u64>) -> PropSet {
        let mut s = PropSet {
            bits: Vec::new(),
            big: HashSet::new(),
        };
        for p in props {
            if p < Self::BITMAP_MAX {
                let w = (p / 64) as usize;
                if s.bits.len() <= w {
                    s.bits.resize(w.saturating_add(1), 0);
                }
                if let Some(word) = s.bits.get_mut(w) {
                    *word |= 1 << (p % 64);
                }
            } else {
                s.big.insert(p);
            }
        }
        s
    }

    fn contains(&self, p: u64) -> bool {
        if p < Self::BITMAP_MAX {
            self.bits
                .get((p / 64) as usize)
                .is_some_and(|w| w & (1 << (p % 64)) != 0)
        } else {
            self.big.contains(&p)
        }
    }
}

/// What the statements of labelled subjects are checked against, shared by the workers that filter blocks.
struct Filter<'a> {
    transitive: PropSet,
    /// Properties of the existence index ([`index_properties`]).
    index: PropSet,
    /// Labelled items and properties, sorted.
    items: &'a [u64],
    labelled_props: PropSet,
    /// `transitive_seed`: the transitive statements of unlabelled subjects kept are of these.
    seed: PropSet,
    /// Labelled properties of item datatype: the falsity tier's `values.parquet` rows are of these.
    item_props: PropSet,
}

/// What one block of the merged statements gives each of the three tables.
#[derive(Default)]
struct Filtered {
    statements: Vec<Cand>,
    triples: Vec<Cand>,
    transitive: Vec<Cand>,
    values: Vec<SubjectValues>,
    types: Vec<TypeStatement>,
    /// The subjects and objects of `triples` (indices into the labelled items) and their properties: the
    /// entities and properties a benchmark statement can have, the only ones `distinct.parquet` keeps.
    ends: Vec<usize>,
    props: Vec<u32>,
}

/// One block of the merged statements (`true`: a candidate, `false`: a statement of an unlabelled subject),
/// with the labelled items' snaks without a value up to its last subject (all that are left, for the last
/// block).
#[derive(Default)]
struct Block {
    rows: Vec<(Cand, bool)>,
    snaks: Vec<Snak>,
}

/// Statements of candidates and seed statements merged, fed to the workers in blocks of at least this many,
/// cut where the subject changes (so that the statements of one (S, P, O), which compete for its final triple,
/// are in one block).
const BLOCK: usize = 16 << 10;

impl Filter<'_> {
    /// Filter one block of the merged stream (`true`: a candidate, `false`: a seed statement of an unlabelled
    /// subject), in order.
    fn block(&self, block: &Block) -> Filtered {
        let mut f = Filtered::default();
        // The falsity tier's rows: values of the labelled subjects (the block's snaks merged in by key) and
        // their live P31/P279, with the P279 of every subject.
        let mut values = Values::new(block.snaks.iter().copied().map(Ok));
        let mut pending: Vec<SubjectValues> = Vec::new();
        let item_props = &self.item_props;
        let keep = |r: &SubjectValues| {
            item_props.contains(r.property.0) && (r.values > 0 || r.somevalue || r.novalue)
        };
        for (c, is_cand) in &block.rows {
            let live = c.rank != Rank::Deprecated;
            if *is_cand {
                values.statement(c.s, c.p, c.o, live, &mut |r| pending.push(r));
                f.values.extend(pending.drain(..).filter(keep));
            }
            let p = Pid(u64::from(c.p));
            if live && ((*is_cand && p == falsity::P31) || p == falsity::P279) {
                f.types.extend(values.type_row(c.s, c.p, c.o));
            }
        }
        // The snak stream is a vector: it cannot fail.
        let _ = values.finish(&mut |r| pending.push(r));
        f.values.extend(pending.drain(..).filter(keep));
        let block = &block.rows;
        // The best statement of the current (S, P, O) for `triples`: ranks ascend within a key, so a higher rank
        // replaces it and an equal one (a larger statement id) does not.
        let mut best: Option<&Cand> = None;
        for (c, is_cand) in block {
            let p = u64::from(c.p);
            let transitive = self.transitive.contains(p) && (*is_cand || self.seed.contains(p));
            let indexed =
                *is_cand && self.index.contains(p) && self.items.binary_search(&c.o).is_ok();
            if transitive {
                f.transitive.push(c.clone());
            }
            if !indexed {
                continue;
            }
            f.statements.push(c.clone());
            if c.rank == Rank::Deprecated || !self.labelled_props.contains(p) {
                continue;
            }
            match best {
                Some(last) if (last.s, last.p, last.o) == (c.s, c.p, c.o) => {
                    if c.rank > last.rank {
                        best = Some(c);
                    }
                }
                _ => {
                    if let Some(done) = best.replace(c) {
                        f.triples.push(done.clone());
                    }
                }
            }
        }
        if let Some(done) = best {
            f.triples.push(done.clone());
        }
        for t in &f.triples {
            for x in [t.s, t.o] {
                if let Ok(i) = self.items.binary_search(&x) {
                    f.ends.push(i);
                }
            }
            f.props.push(t.p);
        }
        f.props.sort_unstable();
        f.props.dedup();
        f
    }
}

/// The entities and properties of the final triples (what a benchmark statement, original or distorted, can
/// have: distort draws its replacements from the final triples' subjects and objects and keeps the original's
/// property): a bit per labelled item, and the property numbers.
struct TripleEnds {
    items: Vec<u64>,
    props: HashSet<u32>,
}

impl TripleEnds {
    fn new(labelled_items: usize) -> Self {
        TripleEnds {
            items: vec![0; labelled_items.div_ceil(64)],
            props: HashSet::new(),
        }
    }
    fn mark(&mut self, f: &Filtered) {
        for &i in &f.ends {
            if let Some(w) = self.items.get_mut(i / 64) {
                *w |= 1 << (i % 64);
            }
        }
        self.props.extend(f.props.iter().copied());
    }
    /// Item number `i` of the labelled items is a subject or object of a final triple.
    fn has(&self, i: usize) -> bool {
        self.items
            .get(i / 64)
            .is_some_and(|w| w & (1 << (i % 64)) != 0)
    }
}

/// The candidates and the seed statements, each a sorted stream without duplicates, merged into one stream in
/// the order of their triples (a statement in both is a candidate), and cut into blocks.
struct Merged<A: Iterator, B: Iterator, S: Iterator> {
    cs: std::iter::Peekable<A>,
    ss: std::iter::Peekable<B>,
    /// The labelled items' snaks without a value, sorted: each block takes those up to its last subject.
    snaks: std::iter::Peekable<S>,
    /// The statements are all handed out.
    ended: bool,
}

impl<A, B, S> Merged<A, B, S>
where
    A: Iterator<Item = Result<Cand>>,
    B: Iterator<Item = Result<Cand>>,
    S: Iterator<Item = Result<Snak>>,
{
    fn next(&mut self) -> Result<Option<(Cand, bool)>> {
        let order = match (self.cs.peek(), self.ss.peek()) {
            (None, None) => return Ok(None),
            (Some(Err(_)), _) | (Some(_), None) => std::cmp::Ordering::Less,
            (_, Some(Err(_))) | (None, Some(_)) => std::cmp::Ordering::Greater,
            (Some(Ok(c)), Some(Ok(s))) => Cand::cmp_as_triple(c, s),
        };
        let next = match order {
            std::cmp::Ordering::Less => self.cs.next().map(|c| (c, true)),
            std::cmp::Ordering::Greater => self.ss.next().map(|s| (s, false)),
            std::cmp::Ordering::Equal => {
                self.ss.next();
                self.cs.next().map(|c| (c, true))
            }
        };
        match next {
            Some((Ok(c), is_cand)) => Ok(Some((c, is_cand))),
            Some((Err(e), _)) => Err(e),
            None => {
                self.ended = true;
                Ok(None)
            }
        }
    }

    /// The next block: at least [`BLOCK`] statements (fewer at the end), up to the end of a subject.
    fn block(&mut self) -> Result<Block> {
        let mut rows = self.rows()?;
        let last = rows.last().map(|x| x.0.s);
        let mut snaks = Vec::new();
        loop {
            let take = match self.snaks.peek() {
                None => false,
                Some(Err(_)) => true,
                Some(Ok(x)) => self.ended || last.is_some_and(|l| x.s <= l),
            };
            if !take {
                break;
            }
            match self.snaks.next() {
                Some(Ok(x)) => snaks.push(x),
                Some(Err(e)) => return Err(e),
                None => break,
            }
        }
        rows.shrink_to_fit();
        Ok(Block { rows, snaks })
    }

    fn rows(&mut self) -> Result<Vec<(Cand, bool)>> {
        let mut b = Vec::with_capacity(BLOCK);
        while let Some(x) = self.next()? {
            let subject = x.0.s;
            b.push(x);
            if b.len() >= BLOCK {
                let same = |i: Option<&Result<Cand>>| matches!(i, Some(Ok(c)) if c.s == subject);
                while same(self.cs.peek()) || same(self.ss.peek()) {
                    match self.next()? {
                        Some(x) => b.push(x),
                        None => break,
                    }
                }
                break;
            }
        }
        Ok(b)
    }
}

/// What the join counted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct JoinCounts {
    pub entities: u64,
    pub labelled_items: u64,
    pub duplicate_entities: u64,
    pub properties: u64,
    pub transitive_properties: u64,
    pub candidates: u64,
    pub seed_other: u64,
    pub statements: u64,
    pub triples: u64,
    pub transitive: u64,
    pub transitive_missed: u64,
    /// The transitive properties outside `transitive_seed`, sorted: their statements with unlabelled subjects
    /// are not in `transitive.parquet` (counted by `transitive_missed` when unlabelled statements are read).
    pub transitive_outside_seed: Vec<Pid>,
    /// Rows of the falsity tables.
    pub constraints: u64,
    /// Labelled properties with several lines in the dump, one of which does not keep the distinct-value
    /// pairs (unlabelled, or without the constraint) while another has a distinct-values constraint: that
    /// constraint is left out of `constraints.parquet` (its pairs were dropped as they were read; see
    /// `falsity::Known`). Sorted.
    pub distinct_left_out: Vec<Pid>,
    pub values: u64,
    pub types: u64,
    pub distinct: u64,
    /// Bytes written to spill runs, and the runs (intermediate merges included); 0 when all fit the limit.
    pub spilled_bytes: u64,
    pub spill_runs: u64,
    /// The most bytes of runs on disk at once, and per kind the bytes written and the most on disk at once.
    pub spill_peak: u64,
    pub spill_kinds: BTreeMap<&'static str, spill::KindBytes>,
    /// The distinct-value pairs: pushed by the readers (one per live item value of any item), the most held
    /// in memory at once after a compaction, the compactions.
    pub pairs: PairCounts,
}

/// What became of the distinct-value pairs (`falsity::Pair`) while reading.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PairCounts {
    /// Pairs the stage thread took from the readers (after dropping those of properties already known not
    /// to need them).
    pub taken: u64,
    /// The most pairs held in memory at once, and right after a compaction.
    pub held_peak: u64,
    pub compacted_peak: u64,
    /// Compactions (drop what cannot decide a tier, sort, deduplicate).
    pub compactions: u64,
    /// Pairs dropped by compactions.
    pub dropped: u64,
}

/// The join state of the stage in bounded memory: what the accumulator keeps is moved here after every chunk
/// ([`State::drain`]) and spilled in sorted runs when it passes the budget (see `extract::spill`); the ids of
/// the labelled entities stay in memory (8 bytes each), since every candidate is looked up in them.
pub struct State {
    entities: Runs<EntityRecord>,
    properties: Runs<PropertyRecord>,
    candidates: Runs<Cand>,
    seed_other: Runs<Cand>,
    snaks: Runs<Snak>,
    pairs: Runs<Pair>,
    constraints: Runs<Constraint>,
    items: Vec<u64>,
    props: Vec<u64>,
    dir: SpillDir,
    /// Bytes of records held before a spill (`None`: no limit).
    budget: Option<usize>,
    /// The limit as given, for messages.
    limit: u64,
    /// Most bytes the labelled ids may take: half the records' share of the limit.
    ids_cap: usize,
    /// The pairs are compacted when this many are held (then twice what is left, at least [`PAIRS_COMPACT`]).
    pairs_next: usize,
    pairs_count: PairCounts,
    /// Worker threads of the pool the join runs on (the stage context's; 1 unless [`State::with_threads`]):
    /// bounds the blocks filtered at once, never the rows.
    threads: usize,
}

/// The fewest held pairs that start a compaction (16 MiB of pairs).
pub const PAIRS_COMPACT: usize = 1 << 20;
/// Bytes of budget per pair for a quarter of the budget: 4 × 16.
const QUARTER_PER_PAIR: usize = 4 * std::mem::size_of::<Pair>();

/// Held pairs that start the first compaction: a quarter of the records' budget, at least
/// [`PAIRS_COMPACT`] (none without a budget: nothing bounds the memory then, and a compaction is a sort).
/// Below it the pairs cost one push each until the join filters them; later compactions start at twice
/// what the last one left.
fn pairs_first_compaction(budget: Option<usize>) -> usize {
    budget.map_or(usize::MAX, |b| {
        b.checked_div(QUARTER_PER_PAIR)
            .unwrap_or(0)
            .max(PAIRS_COMPACT)
    })
}

impl State {
    /// The state of a stage writing into `out` (where a spill folder goes), with a memory limit in bytes
    /// (`None`: never spill). The records may take the limit less the merge's buffers.
    pub fn new(out: &Path, limit: Option<u64>) -> State {
        let budget = limit
            .map(|l| usize::try_from(l.saturating_sub(spill::MERGE_RESERVE)).unwrap_or(usize::MAX));
        Self::with_budget(out, budget, limit.unwrap_or(0))
    }

    /// [`State::new`] with the records' budget itself (tests spill at a few bytes), the labelled ids allowed
    /// half of what `limit` leaves the records.
    pub fn with_budget(out: &Path, budget: Option<usize>, limit: u64) -> State {
        State {
            entities: Runs::new("entities"),
            properties: Runs::new("properties"),
            candidates: Runs::new("candidates"),
            seed_other: Runs::new("seed"),
            snaks: Runs::new("snaks"),
            pairs: Runs::new("pairs"),
            constraints: Runs::new("constraints"),
            items: Vec::new(),
            props: Vec::new(),
            dir: SpillDir::new(out),
            budget,
            limit,
            ids_cap: usize::try_from(limit.saturating_sub(spill::MERGE_RESERVE) / 2)
                .unwrap_or(usize::MAX),
            pairs_next: pairs_first_compaction(budget),
            pairs_count: PairCounts::default(),
            threads: 1,
        }
    }

    /// The join on a pool of `threads` workers (the stage context's `threads()`).
    pub fn with_threads(mut self, threads: usize) -> State {
        self.threads = threads;
        self
    }

    /// At most `budget` bytes of spill runs on disk at once (`--spill-budget`, given as `text`; `None`: no
    /// budget).
    pub fn with_spill_budget(mut self, budget: Option<u64>, text: &str) -> State {
        let base = std::mem::replace(&mut self.dir, SpillDir::new(Path::new(".")));
        self.dir = base.with_budget(budget, text);
        self
    }

    /// Drop the held pairs that cannot decide a tier — those of a property whose line has shown that it is
    /// unlabelled or has no distinct-values constraint without a separator (`known`), and those whose object's
    /// line was read (`seen`) and left it unlabelled —, then sort and deduplicate the rest. The join keeps a
    /// subset of what is left (docs/extract.md), so the artifacts do not change.
    fn compact_pairs(&mut self, known: &falsity::Known, seen: &ItemSet) {
        self.items.par_sort_unstable();
        self.items.dedup();
        let items = &self.items;
        let before = self.pairs.held_len();
        self.pairs.rework(|v| {
            let mut kept: Vec<Pair> = v
                .par_iter()
                .copied()
                .filter(|x| {
                    !known.drops(x.p) && (!seen.contains(x.o) || items.binary_search(&x.o).is_ok())
                })
                .collect();
            kept.par_sort_unstable();
            kept.dedup();
            *v = kept;
        });
        let after = self.pairs.held_len();
        let c = &mut self.pairs_count;
        c.compactions = c.compactions.saturating_add(1);
        c.dropped = c
            .dropped
            .saturating_add(before.saturating_sub(after) as u64);
        c.compacted_peak = c.compacted_peak.max(after as u64);
        self.pairs_next = after
            .saturating_mul(2)
            .max(pairs_first_compaction(self.budget));
    }

    /// Take what the accumulator gathered since the last call; spill when over the budget.
    pub fn drain(&mut self, acc: &mut Acc<'_>) -> Result<()> {
        for e in &acc.entities {
            match e.id {
                EntityId::Item(q) => self.items.push(q.0),
                EntityId::Property(p) => self.props.push(p.0),
            }
        }
        self.entities.append(&mut acc.entities);
        self.properties.append(&mut acc.properties);
        self.candidates.append(&mut acc.candidates);
        self.seed_other.append(&mut acc.seed_other);
        self.snaks.append(&mut acc.snaks);
        self.pairs_count.taken = self
            .pairs_count
            .taken
            .saturating_add(acc.pairs.len() as u64);
        self.pairs.append(&mut acc.pairs);
        self.constraints.append(&mut acc.constraints);
        let held = self.pairs.held_len();
        self.pairs_count.held_peak = self.pairs_count.held_peak.max(held as u64);
        if held >= self.pairs_next {
            self.compact_pairs(&acc.distinct_known, &acc.items);
        }
        if self.over_budget() && self.pairs.held_len() > 0 {
            // The pairs may be most of what is held: compacting them may spare a spill.
            self.compact_pairs(&acc.distinct_known, &acc.items);
        }
        self.check()
    }

    fn over_budget(&self) -> bool {
        self.budget.is_some_and(|b| self.held() > b)
    }

    fn ids_mem(&self) -> usize {
        self.items
            .capacity()
            .saturating_add(self.props.capacity())
            .saturating_mul(8)
    }

    /// Bytes held: the records since the last spill and the labelled ids.
    pub fn held(&self) -> usize {
        [
            self.entities.mem(),
            self.properties.mem(),
            self.candidates.mem(),
            self.seed_other.mem(),
            self.snaks.mem(),
            self.pairs.mem(),
            self.constraints.mem(),
            self.ids_mem(),
        ]
        .into_iter()
        .fold(0, usize::saturating_add)
    }

    fn check(&mut self) -> Result<()> {
        let Some(budget) = self.budget else {
            return Ok(());
        };
        if self.held() <= budget {
            return Ok(());
        }
        self.spill_all()?;
        let ids = self.ids_mem();
        if ids > self.ids_cap {
            let need = (ids as u64)
                .saturating_mul(4)
                .saturating_add(spill::MERGE_RESERVE);
            return Err(Error::Config(format!(
                "--memory-limit {} MiB is too small for this dump: the ids of its {} labelled entities, which \
                 the join holds in memory, already take {} MiB; use at least {}M",
                self.limit >> 20,
                self.items.len().saturating_add(self.props.len()),
                ids >> 20,
                (need >> 20).saturating_add(1)
            )));
        }
        Ok(())
    }

    /// Every kind's records to a run of its own.
    fn spill_all(&mut self) -> Result<()> {
        self.entities.spill(&mut self.dir)?;
        self.properties.spill(&mut self.dir)?;
        self.candidates.spill(&mut self.dir)?;
        self.seed_other.spill(&mut self.dir)?;
        self.snaks.spill(&mut self.dir)?;
        self.pairs.spill(&mut self.dir)?;
        self.constraints.spill(&mut self.dir)?;
        spill::release_free_memory();
        Ok(())
    }

    /// The spill folder, when one was made.
    pub fn spill_dir(&self) -> Option<&Path> {
        self.dir.path()
    }

    /// Sort, deduplicate and join what was gathered, streaming the five artifacts' rows to `out`: entities
    /// and properties by id (the first of an id in input order kept), then the candidates and seed statements
    /// merged into `statements`, `triples` and `transitive`. The same rows as [`join`] of the same input,
    /// whatever was spilled. The spill folder goes when this returns.
    ///
    /// `known`: what the property lines said of their distinct-value pairs (the accumulator's, after the
    /// whole dump): a labelled property with a line that dropped them has its distinct-values constraints
    /// left out of `constraints.parquet`.
    pub fn join(
        mut self,
        unlabelled_by_prop: &HashMap<Pid, u64>,
        seed: &[Pid],
        known: &falsity::Known,
        out: &mut dyn Out,
    ) -> Result<JoinCounts> {
        if self.dir.runs > 0 {
            // Something was spilled (the state passed the limit): the last records go to disk as well, so that
            // while the artifacts are written only the merge's buffers and the writers are in memory, not up to
            // a whole budget of records beside them (which the writers would then add to).
            self.spill_all()?;
        }
        let State {
            entities,
            properties,
            candidates,
            seed_other,
            snaks,
            mut pairs,
            constraints,
            mut items,
            mut props,
            mut dir,
            pairs_count,
            threads,
            ..
        } = self;
        items.par_sort_unstable();
        items.dedup();
        props.par_sort_unstable();
        props.dedup();
        let mut k = JoinCounts {
            candidates: candidates.pushed,
            seed_other: seed_other.pushed,
            ..JoinCounts::default()
        };

        let pushed = entities.pushed;
        let mut b = Batch::new();
        for e in entities.into_stream(&mut dir)? {
            let e = e?;
            if matches!(e.id, EntityId::Item(_)) {
                k.labelled_items = k.labelled_items.saturating_add(1);
            }
            b.push(e, &mut |r| out.entities(r))?;
        }
        b.flush(&mut |r| out.entities(r))?;
        out.entities_done()?;
        spill::release_free_memory();
        k.entities = b.n;
        k.duplicate_entities = pushed.saturating_sub(b.n);

        let mut transitive_props: HashSet<Pid> = HashSet::new();
        let mut inverses: Vec<(Pid, Vec<Pid>)> = Vec::new();
        // Labelled or not: the properties of item datatype (the falsity tier's `values.parquet` keeps them).
        let mut item_props: Vec<u64> = Vec::new();
        let mut b = Batch::new();
        for p in properties.into_stream(&mut dir)? {
            let p = p?;
            if p.datatype == "wikibase-item" {
                item_props.push(p.id.0);
            }
            if p.transitive {
                transitive_props.insert(p.id);
            }
            if !p.inverse.is_empty() {
                inverses.push((p.id, p.inverse.clone()));
            }
            b.push(p, &mut |r| out.properties(r))?;
        }
        b.flush(&mut |r| out.properties(r))?;
        out.properties_done()?;
        k.properties = b.n;
        k.transitive_properties = transitive_props.len() as u64;
        let labelled_props: HashSet<Pid> = props.iter().map(|&p| Pid(p)).collect();
        let index_props = index_properties_of(
            inverses.iter().map(|(p, v)| (*p, v.as_slice())),
            &labelled_props,
        );
        drop(inverses);
        let dropped_pairs = |p: Pid| {
            props.binary_search(&p.0).is_ok() && u32::try_from(p.0).is_ok_and(|p| known.drops(p))
        };
        let (n, distinct_props, left_out) =
            falsity_constraints(constraints, &mut dir, out, &dropped_pairs)?;
        k.constraints = n;
        k.distinct_left_out = left_out;

        let filter = Filter {
            transitive: PropSet::new(transitive_props.iter().map(|p| p.0)),
            index: PropSet::new(index_props.iter().map(|p| p.0)),
            items: &items,
            labelled_props: PropSet::new(props.iter().copied()),
            seed: PropSet::new(seed.iter().map(|p| p.0)),
            item_props: PropSet::new(
                item_props
                    .iter()
                    .copied()
                    .filter(|p| props.binary_search(p).is_ok()),
            ),
        };
        let mut merged = Merged {
            cs: candidates.into_stream(&mut dir)?.peekable(),
            ss: seed_other.into_stream(&mut dir)?.peekable(),
            snaks: snaks.into_stream(&mut dir)?.peekable(),
            ended: false,
        };
        let mut ends = TripleEnds::new(items.len());
        filter_blocks(&mut merged, &filter, threads, out, &mut k, &mut ends)?;
        drop(merged);
        // Distinct values: the pairs of properties with a distinct-values constraint that can decide a tier —
        // the property of a final triple, the object a subject or object of one (what distort asks about).
        // The held pairs are filtered before they are sorted (most are of other properties).
        let keep_props = PropSet::new(
            distinct_props
                .iter()
                .map(|p| p.0)
                .filter(|&p| u32::try_from(p).is_ok_and(|p| ends.props.contains(&p))),
        );
        let keep = |x: &Pair| {
            keep_props.contains(u64::from(x.p))
                && items.binary_search(&x.o).is_ok_and(|i| ends.has(i))
        };
        pairs.rework(|v| v.retain(keep));
        let mut db = Batch::new();
        for x in pairs.into_stream(&mut dir)? {
            let x = x?;
            let p = Pid(u64::from(x.p));
            if keep(&x) {
                let row = DistinctValue {
                    property: p,
                    object: Qid(x.o),
                };
                db.push(row, &mut |r| out.distinct(r))?;
            }
        }
        db.flush(&mut |r| out.distinct(r))?;
        k.distinct = db.n;
        k.transitive_outside_seed = transitive_props
            .iter()
            .filter(|p| !seed.contains(p))
            .copied()
            .collect();
        k.transitive_outside_seed.sort_unstable();
        k.transitive_missed = k
            .transitive_outside_seed
            .iter()
            .map(|p| unlabelled_by_prop.get(p).copied().unwrap_or(0))
            .sum();
        k.spilled_bytes = dir.bytes;
        k.spill_runs = dir.runs;
        k.spill_peak = dir.peak;
        k.spill_kinds = dir.kinds.clone();
        k.pairs = pairs_count;
        Ok(k)
    }
}
/// Filter the merged statements block by block on the rayon pool ([`Filter::block`]), at most two blocks per
/// thread in flight, and hand each block's rows to `out` in order, counting them into `k`.
///
/// Why: the merge is a few comparisons per statement, but the lookups behind each statement (labelled object,
/// transitive or indexed property, the best rank of its triple) were the stage thread's work after the dump was
/// read, a serial tail beside the idle workers.
fn filter_blocks<A, B, S>(
    merged: &mut Merged<A, B, S>,
    filter: &Filter<'_>,
    threads: usize,
    out: &mut dyn Out,
    k: &mut JoinCounts,
    ends: &mut TripleEnds,
) -> Result<()>
where
    A: Iterator<Item = Result<Cand>>,
    B: Iterator<Item = Result<Cand>>,
    S: Iterator<Item = Result<Snak>>,
{
    let max_in_flight = threads.max(1).saturating_mul(2);
    rayon::in_place_scope_fifo(|scope| -> Result<()> {
        let (tx, rx) = std::sync::mpsc::channel::<(u64, std::thread::Result<Filtered>)>();
        let (mut spawned, mut handed) = (0u64, 0u64);
        let mut done: BTreeMap<u64, Filtered> = BTreeMap::new();
        let mut exhausted = false;
        loop {
            while !exhausted && spawned.saturating_sub(handed) < max_in_flight as u64 {
                let block = merged.block()?;
                if block.rows.is_empty() && block.snaks.is_empty() {
                    exhausted = true;
                    break;
                }
                let (tx, seq) = (tx.clone(), spawned);
                spawned = spawned.saturating_add(1);
                scope.spawn_fifo(move |_| {
                    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        filter.block(&block)
                    }));
                    let _ = tx.send((seq, r));
                });
            }
            if handed == spawned {
                return Ok(());
            }
            let (seq, r) = wait_one(&rx);
            done.insert(seq, r.unwrap_or_else(|p| std::panic::resume_unwind(p)));
            while let Some(f) = done.remove(&handed) {
                handed = handed.saturating_add(1);
                ends.mark(&f);
                k.statements = k.statements.saturating_add(f.statements.len() as u64);
                k.triples = k.triples.saturating_add(f.triples.len() as u64);
                k.transitive = k.transitive.saturating_add(f.transitive.len() as u64);
                k.values = k.values.saturating_add(f.values.len() as u64);
                k.types = k.types.saturating_add(f.types.len() as u64);
                if !f.statements.is_empty() {
                    out.statements(f.statements)?;
                }
                if !f.triples.is_empty() {
                    out.triples(f.triples)?;
                }
                if !f.transitive.is_empty() {
                    out.transitive(f.transitive)?;
                }
                if !f.values.is_empty() {
                    out.values(f.values)?;
                }
                if !f.types.is_empty() {
                    out.types(f.types)?;
                }
            }
        }
    })
}

/// Stream the constraints (sorted, identical ones once) to `out`, but a distinct-values constraint that
/// applies (no separator) of a property whose pairs were dropped (`dropped_pairs`: a labelled property one
/// of whose lines did not keep them); returns their number, the properties with a distinct-values constraint
/// that applies, and those left out (sorted).
fn falsity_constraints(
    constraints: Runs<Constraint>,
    dir: &mut SpillDir,
    out: &mut dyn Out,
    dropped_pairs: &dyn Fn(Pid) -> bool,
) -> Result<(u64, HashSet<Pid>, Vec<Pid>)> {
    let mut distinct = HashSet::new();
    let mut left_out = Vec::new();
    let mut b = Batch::new();
    for c in constraints.into_stream(dir)? {
        let c = c?;
        if c.kind == Kind::DistinctValues && !c.separator {
            if dropped_pairs(c.property) {
                if left_out.last() != Some(&c.property) {
                    left_out.push(c.property);
                }
                continue;
            }
            distinct.insert(c.property);
        }
        b.push(c, &mut |r| out.constraints(r))?;
    }
    b.flush(&mut |r| out.constraints(r))?;
    Ok((b.n, distinct, left_out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_keeps_labelled_properties_and_inverse_partners_of_labelled_ones() {
        let prop = |id: u64, inverse: &[u64]| PropertyRecord {
            id: Pid(id),
            datatype: "wikibase-item".into(),
            labels: vec![],
            transitive: false,
            symmetric: false,
            inverse: inverse.iter().map(|&q| Pid(q)).collect(),
        };
        // P1 labelled, declares P2 (unlabelled); P3 unlabelled, declares P4 (labelled); P5 and P6 unlabelled
        // partners of each other; P7 unlabelled, no inverse; P8 labelled, no inverse.
        let props = [
            prop(1, &[2]),
            prop(2, &[]),
            prop(3, &[4]),
            prop(4, &[]),
            prop(5, &[6]),
            prop(6, &[5]),
            prop(7, &[]),
            prop(8, &[]),
        ];
        let labelled: HashSet<EntityId> = [1, 4, 8]
            .into_iter()
            .map(|p| EntityId::Property(Pid(p)))
            .chain([EntityId::Item(Qid(1))])
            .collect();
        let mut got: Vec<u64> = index_properties(&props, &labelled)
            .into_iter()
            .map(|p| p.0)
            .collect();
        got.sort_unstable();
        assert_eq!(got, [1, 2, 3, 4, 8]);
    }

    #[test]
    fn join_keeps_labelled_merges_ranks_and_drops_deprecated() {
        let e = |id: EntityId| EntityRecord {
            id,
            labels: vec![],
            descriptions: vec![],
            sitelinks: 0,
            lastrevid: None,
            modified: None,
        };
        let t = |s, p, o, rank, id: &str| Triple {
            subject: Qid(s),
            property: Pid(p),
            object: Qid(o),
            rank,
            statement_id: id.into(),
        };
        let entities = vec![
            e(EntityId::Item(Qid(1))),
            e(EntityId::Item(Qid(2))),
            e(EntityId::Property(Pid(10))),
        ];
        let props = vec![PropertyRecord {
            id: Pid(10),
            datatype: "wikibase-item".into(),
            labels: vec![],
            transitive: true,
            symmetric: false,
            inverse: vec![],
        }];
        let c = |t: Triple| Cand::from_triple(&t).unwrap();
        let cands = vec![
            c(t(1, 10, 2, Rank::Preferred, "b")),
            c(t(1, 10, 2, Rank::Normal, "a")),
            c(t(2, 10, 1, Rank::Deprecated, "c")),
            c(t(1, 10, 3, Rank::Normal, "d")), // object unlabelled
            c(t(1, 11, 2, Rank::Normal, "e")), // property unlabelled
        ];
        // A seed statement of an unlabelled subject (P10 in the transitive seed).
        let other = vec![c(t(3, 10, 4, Rank::Normal, "f"))];
        let j = join(entities, props, cands, other, &HashMap::new(), &[Pid(10)]);
        assert_eq!(j.triples, vec![t(1, 10, 2, Rank::Preferred, "b")]);
        assert_eq!(
            j.statements,
            vec![
                t(1, 10, 2, Rank::Normal, "a"),
                t(1, 10, 2, Rank::Preferred, "b"),
                t(2, 10, 1, Rank::Deprecated, "c")
            ]
        );
        assert_eq!(j.transitive.len(), 5);
        let tr: Vec<Triple> = j.transitive.iter().map(Cand::to_triple).collect();
        let mut sorted = tr.clone();
        sorted.sort();
        assert_eq!(tr, sorted);
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod state_tests {
    use super::*;
    use crate::stages::extract::cand::StmtId;
    use crate::stages::extract::config::Config;
    use crate::stages::extract::keep::Rules;

    #[derive(Default)]
    struct VecOut {
        entities: Vec<EntityRecord>,
        properties: Vec<PropertyRecord>,
        statements: Vec<Triple>,
        triples: Vec<Triple>,
        transitive: Vec<Triple>,
        batches: usize,
        /// What came in, in order: e/p/s/t/x for a batch of entities, properties, statements, triples,
        /// transitive; E and P for entities_done and properties_done.
        events: Vec<char>,
        distinct: Vec<(u64, u64)>,
    }

    impl Out for VecOut {
        fn entities(&mut self, rows: Vec<EntityRecord>) -> Result<()> {
            assert!(rows.len() <= STREAM_BATCH && !rows.is_empty());
            self.batches += 1;
            self.events.push('e');
            self.entities.extend(rows);
            Ok(())
        }
        fn entities_done(&mut self) -> Result<()> {
            self.events.push('E');
            Ok(())
        }
        fn properties(&mut self, rows: Vec<PropertyRecord>) -> Result<()> {
            self.events.push('p');
            self.properties.extend(rows);
            Ok(())
        }
        fn properties_done(&mut self) -> Result<()> {
            self.events.push('P');
            Ok(())
        }
        fn statements(&mut self, rows: Vec<Cand>) -> Result<()> {
            self.events.push('s');
            self.statements.extend(rows.iter().map(Cand::to_triple));
            Ok(())
        }
        fn triples(&mut self, rows: Vec<Cand>) -> Result<()> {
            self.events.push('t');
            self.triples.extend(rows.iter().map(Cand::to_triple));
            Ok(())
        }
        fn transitive(&mut self, rows: Vec<Cand>) -> Result<()> {
            self.events.push('x');
            self.transitive.extend(rows.iter().map(Cand::to_triple));
            Ok(())
        }
        fn distinct(&mut self, rows: Vec<DistinctValue>) -> Result<()> {
            self.distinct
                .extend(rows.iter().map(|r| (r.property.0, r.object.0)));
            Ok(())
        }
    }

    /// A world for the distinct-value pairs: labelled items (< 20 of 0..30) and properties, candidates
    /// between items, distinct-values constraints, the pairs, the item lines seen, fed in pieces.
    type PairWorld = (
        Vec<u64>,
        Vec<u64>,
        Vec<(u64, u32, u64)>,
        Vec<u64>,
        Vec<(u32, u64)>,
        Vec<u64>,
    );

    fn pair_world() -> impl proptest::strategy::Strategy<Value = PairWorld> {
        use proptest::collection::vec;
        (
            vec(0u64..30, 0..20),
            vec(0u64..8, 0..8),
            vec((0u64..30, 0u32..8, 0u64..30), 0..60),
            vec(0u64..8, 0..5),
            vec((0u32..9, 0u64..32), 0..400),
            vec(0u64..32, 0..32),
        )
    }

    /// `distinct.parquet`'s rows through [`State`] (budget `budget`, the pairs fed in `chunks` pieces, the
    /// property lines and item lines learnt before them), against the rule written out: the distinct
    /// (property, object) pairs whose property has a distinct-values constraint and is the property of a
    /// final triple, and whose object is a subject or object of one — the final triples taken from the
    /// in-memory [`join`].
    fn check_pairs(w: PairWorld, budget: Option<usize>, chunks: usize) -> Vec<(u64, u64)> {
        use crate::core::falsity::{Constraint, Kind};
        let (items, props, stmts, distinct, pairs, seen) = w;
        let mut entities: Vec<EntityRecord> = items
            .iter()
            .map(|&q| entity(EntityId::Item(Qid(q)), 0))
            .collect();
        entities.extend(props.iter().map(|&p| entity(EntityId::Property(Pid(p)), 0)));
        let candidates: Vec<Cand> = stmts
            .iter()
            .filter(|x| items.contains(&x.0))
            .map(|&(s, p, o)| Cand {
                s,
                o,
                p,
                rank: Rank::Normal,
                id: StmtId::Missing,
            })
            .collect();
        let want_triples = join(
            entities.clone(),
            Vec::new(),
            candidates.clone(),
            Vec::new(),
            &HashMap::new(),
            &[],
        )
        .triples;
        let ends: HashSet<u64> = want_triples
            .iter()
            .flat_map(|t| [t.subject.0, t.object.0])
            .collect();
        let tprops: HashSet<u64> = want_triples.iter().map(|t| t.property.0).collect();
        let mut want: Vec<(u64, u64)> = pairs
            .iter()
            .map(|&(p, o)| (u64::from(p), o))
            .filter(|(p, o)| distinct.contains(p) && tprops.contains(p) && ends.contains(o))
            .collect();
        want.sort_unstable();
        want.dedup();

        let constraints: Vec<Constraint> = distinct
            .iter()
            .map(|&p| Constraint {
                property: Pid(p),
                kind: Kind::DistinctValues,
                statement_id: String::new(),
                separator: false,
                exceptions: vec![],
                classes: vec![],
                relation: None,
            })
            .collect();
        let rules = Rules::new(&Config::default()).unwrap();
        let mut acc = Acc::new(&rules, 0, Path::new("t"));
        let base = tempfile::tempdir().unwrap();
        let mut state = State::with_budget(base.path(), budget, 1 << 30);
        acc.entities = entities;
        acc.candidates = candidates;
        acc.constraints = constraints;
        // What the property lines said (labelled, with the constraint) and the item lines read.
        for p in 0..8u32 {
            let keep = props.contains(&u64::from(p)) && distinct.contains(&u64::from(p));
            acc.distinct_known.learn(p, keep);
        }
        acc.items
            .extend(seen.iter().copied().chain(items.iter().copied()));
        for piece in pairs.chunks(pairs.len().div_ceil(chunks.max(1)).max(1)) {
            acc.pairs = piece
                .iter()
                .filter(|x| !acc.distinct_known.drops(x.0))
                .map(|&(p, o)| Pair { p, o })
                .collect();
            state.drain(&mut acc).unwrap();
            if budget.is_some() {
                state.compact_pairs(&acc.distinct_known, &acc.items);
            }
        }
        state.drain(&mut acc).unwrap();
        let mut out = VecOut::default();
        let k = state
            .join(&HashMap::new(), &[], &acc.distinct_known, &mut out)
            .unwrap();
        assert_eq!(out.distinct, want);
        assert_eq!(k.distinct, want.len() as u64);
        if budget == Some(0) && !out.distinct.is_empty() {
            assert!(k.spill_kinds.get("pairs").is_some_and(|b| b.total > 0));
        }
        out.distinct
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn distinct_rows_are_the_pairs_that_can_decide_a_tier(
            w in pair_world(),
            budget in proptest::option::of(0usize..3000),
            chunks in 1usize..10,
        ) {
            let _ = check_pairs(w, budget, chunks);
        }
    }

    /// By hand: one final triple (Q1 P5 Q2); P5 and P6 carry the constraint, P6 has no final triple, P7 is not
    /// labelled; Q3 is labelled but in no final triple, Q4 was read unlabelled, Q99 never read.
    #[test]
    fn distinct_rows_by_hand() {
        let w: PairWorld = (
            vec![1, 2, 3],
            vec![5, 6],
            vec![(1, 5, 2), (1, 6, 9)],
            vec![5, 6, 7],
            vec![
                (5, 2),
                (5, 3),
                (6, 2),
                (7, 2),
                (5, 2),
                (5, 1),
                (5, 4),
                (5, 31),
            ],
            vec![4],
        );
        for budget in [None, Some(0), Some(40)] {
            assert_eq!(check_pairs(w.clone(), budget, 3), vec![(5, 1), (5, 2)]);
        }
    }

    type Raw = (
        Vec<(bool, u64, u8)>,
        Vec<(u64, bool, Vec<u64>, u8)>,
        Vec<(bool, u64, u32, u64, u8, u8)>,
    );

    fn entity(id: EntityId, tag: u8) -> EntityRecord {
        EntityRecord {
            id,
            labels: vec![crate::core::records::Label {
                text: format!("l{tag}"),
                from_mul: false,
            }],
            descriptions: vec![None],
            sitelinks: u32::from(tag),
            lastrevid: None,
            modified: None,
        }
    }

    /// The streaming join through [`State`] with a budget of `budget` bytes, the input fed in `chunks`
    /// pieces; against the in-memory [`join`] of the same input.
    fn check(raw: Raw, budget: Option<usize>, chunks: usize) {
        let (ents, props, stmts) = raw;
        let entities: Vec<EntityRecord> = ents
            .iter()
            .map(|&(is_prop, n, tag)| {
                entity(
                    if is_prop {
                        EntityId::Property(Pid(n))
                    } else {
                        EntityId::Item(Qid(n))
                    },
                    tag,
                )
            })
            .collect();
        let properties: Vec<PropertyRecord> = props
            .iter()
            .map(|(p, transitive, inverse, tag)| PropertyRecord {
                id: Pid(*p),
                datatype: format!("d{tag}"),
                labels: vec![None],
                transitive: *transitive,
                symmetric: false,
                inverse: inverse.iter().map(|&q| Pid(q)).collect(),
            })
            .collect();
        let cand = |&(_, s, p, o, rank, id): &(bool, u64, u32, u64, u8, u8)| Cand {
            s,
            o,
            p,
            rank: [Rank::Deprecated, Rank::Normal, Rank::Preferred][usize::from(rank % 3)],
            id: match id % 4 {
                0 => StmtId::Missing,
                1 => StmtId::encode(
                    s,
                    Some(&format!("Q{s}$8AB2F3F8-6C97-4B66-8AD4-0123456789AB")),
                ),
                2 => StmtId::encode(s, Some("odd")),
                _ => StmtId::encode(s, Some("z")),
            },
        };
        let candidates: Vec<Cand> = stmts.iter().filter(|x| x.0).map(cand).collect();
        let seed_other: Vec<Cand> = stmts.iter().filter(|x| !x.0).map(cand).collect();
        let unlabelled: HashMap<Pid, u64> = [(Pid(1), 3), (Pid(2), 5)].into_iter().collect();
        let seed = [Pid(2)];
        let want = join(
            entities.clone(),
            properties.clone(),
            candidates.clone(),
            seed_other.clone(),
            &unlabelled,
            &seed,
        );

        let rules = Rules::new(&Config::default()).unwrap();
        let mut acc = Acc::new(&rules, 0, Path::new("t"));
        let base = tempfile::tempdir().unwrap();
        let mut state = State::with_budget(base.path(), budget, 1 << 30);
        let piece = |n: usize| n.div_ceil(chunks.max(1)).max(1);
        let (mut e, mut p, mut c, mut s) = (
            entities.chunks(piece(entities.len())),
            properties.chunks(piece(properties.len())),
            candidates.chunks(piece(candidates.len())),
            seed_other.chunks(piece(seed_other.len())),
        );
        loop {
            let mut any = false;
            if let Some(x) = e.next() {
                acc.entities.extend_from_slice(x);
                any = true;
            }
            if let Some(x) = p.next() {
                acc.properties.extend_from_slice(x);
                any = true;
            }
            if let Some(x) = c.next() {
                acc.candidates.extend_from_slice(x);
                any = true;
            }
            if let Some(x) = s.next() {
                acc.seed_other.extend_from_slice(x);
                any = true;
            }
            if !any {
                break;
            }
            state.drain(&mut acc).unwrap();
        }
        let spill_dir = state.spill_dir().map(Path::to_path_buf);
        let mut out = VecOut::default();
        let k = state
            .join(&unlabelled, &seed, &acc.distinct_known, &mut out)
            .unwrap();
        if let Some(d) = spill_dir {
            assert!(!d.exists(), "the spill folder goes with the join");
        }
        if budget == Some(0) && !stmts.is_empty() {
            assert!(k.spill_runs > 0 && k.spilled_bytes > 0);
        }
        // Entities, then their end (the stage finishes entities.parquet there), then properties and their
        // end, then the three statement tables: never two of the first writers open beside the last three.
        let ev: String = out.events.iter().collect();
        let (ents, rest) = ev.split_once('E').expect("entities_done");
        let (props, tail) = rest.split_once('P').expect("properties_done");
        assert!(ents.chars().all(|c| c == 'e'), "{ev}");
        assert!(props.chars().all(|c| c == 'p'), "{ev}");
        assert!(tail.chars().all(|c| "stx".contains(c)), "{ev}");
        assert_eq!(out.entities, want.entities);
        assert_eq!(out.properties, want.properties);
        assert_eq!(out.statements, want.statements);
        assert_eq!(out.triples, want.triples);
        let tr: Vec<Triple> = want.transitive.iter().map(Cand::to_triple).collect();
        assert_eq!(out.transitive, tr);
        assert_eq!(k.duplicate_entities, want.duplicate_entities);
        assert_eq!(k.transitive_missed, want.transitive_missed);
        assert_eq!(
            (k.entities, k.statements, k.triples, k.transitive),
            (
                want.entities.len() as u64,
                want.statements.len() as u64,
                want.triples.len() as u64,
                want.transitive.len() as u64
            )
        );
    }

    fn raw() -> impl proptest::strategy::Strategy<Value = Raw> {
        use proptest::collection::vec;
        (
            vec((proptest::bool::weighted(0.2), 0u64..30, 0u8..4), 0..60),
            vec(
                (0u64..6, proptest::bool::ANY, vec(0u64..6, 0..2), 0u8..3),
                0..10,
            ),
            vec(
                (
                    proptest::bool::ANY,
                    0u64..30,
                    0u32..6,
                    0u64..30,
                    0u8..3,
                    0u8..4,
                ),
                0..200,
            ),
        )
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        #[test]
        fn spilling_join_equals_the_in_memory_join(
            r in raw(),
            budget in proptest::option::of(0usize..3000),
            chunks in 1usize..40,
        ) {
            check(r, budget, chunks);
        }
    }

    /// Past 16 runs of a kind the merge goes through intermediate runs: still the same rows.
    #[test]
    fn many_runs_merge_through_intermediate_runs() {
        let stmts: Vec<(bool, u64, u32, u64, u8, u8)> = (0..2000u64)
            .map(|i| {
                (
                    i % 3 != 0,
                    i * 7919 % 97,
                    (i % 5) as u32,
                    i * 31 % 89,
                    (i % 3) as u8,
                    (i % 4) as u8,
                )
            })
            .collect();
        let ents: Vec<(bool, u64, u8)> = (0..300u64)
            .map(|i| (i % 7 == 0, i * 13 % 101, (i % 4) as u8))
            .collect();
        let props = (0..6u64)
            .map(|p| (p, p % 2 == 0, vec![(p + 1) % 6], 0u8))
            .collect();
        check((ents, props, stmts), Some(0), 100);
    }

    /// Once the state has spilled, the join writes what is still held as one more run before it streams the
    /// artifacts (so the writers never sit beside a budget of records); a state that never passed the limit
    /// writes nothing. The rows are the same either way.
    #[test]
    fn after_a_spill_the_join_spills_what_is_still_held() {
        use crate::stages::extract::spill::Record;
        let c = |i: u64| Cand {
            s: i % 17,
            o: i % 5,
            p: (i % 3) as u32,
            rank: Rank::Normal,
            id: StmtId::Missing,
        };
        let rules = Rules::new(&Config::default()).unwrap();
        let unit = c(0).mem();
        let run = |budget: Option<usize>| {
            let mut acc = Acc::new(&rules, 0, Path::new("t"));
            let base = tempfile::tempdir().unwrap();
            let mut state = State::with_budget(base.path(), budget, 1 << 30);
            // 64 candidates pass a budget of 60; the 20 after them (32 slots) and 3 properties stay under it.
            acc.candidates = (0..64).map(c).collect();
            state.drain(&mut acc).unwrap();
            let spilled_while_reading = state.dir.runs;
            acc.candidates = (64..84).map(c).collect();
            acc.properties = (0..3)
                .map(|p| PropertyRecord {
                    id: Pid(p),
                    datatype: "wikibase-item".into(),
                    labels: vec![],
                    transitive: true,
                    symmetric: false,
                    inverse: vec![],
                })
                .collect();
            state.drain(&mut acc).unwrap();
            assert_eq!(state.dir.runs, spilled_while_reading, "no second spill");
            let mut out = VecOut::default();
            let k = state
                .join(&HashMap::new(), &[], &acc.distinct_known, &mut out)
                .unwrap();
            (
                spilled_while_reading,
                k.spill_runs,
                out.transitive,
                k.candidates,
            )
        };
        let (during, total, rows, n) = run(Some(60 * unit));
        // Spilled while reading: the first 64 candidates; at the join: the 20 others and the 3 properties.
        assert_eq!((during, total, n), (1, 3, 84));
        assert!(!rows.is_empty());
        let (during, total, rows_unlimited, _) = run(None);
        assert_eq!((during, total), (0, 0));
        assert_eq!(rows, rows_unlimited);
    }

    #[test]
    fn too_small_for_the_labelled_ids_says_how_much_is_needed() {
        let rules = Rules::new(&Config::default()).unwrap();
        let mut acc = Acc::new(&rules, 0, Path::new("t"));
        let base = tempfile::tempdir().unwrap();
        let mut state = State::with_budget(base.path(), Some(1000), spill::MERGE_RESERVE + 4096);
        acc.entities = (0..1000)
            .map(|q| entity(EntityId::Item(Qid(q)), 0))
            .collect();
        let e = state.drain(&mut acc).unwrap_err();
        assert_eq!(e.exit_code(), 2);
        assert!(e.to_string().contains("use at least"), "{e}");
    }
}
