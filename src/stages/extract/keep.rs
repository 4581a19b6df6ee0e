//! The per-line core of the extract stage and its sequential accumulator: parse each line of a dump, keep what
//! the stage needs (labelled entities, property metadata, candidate statements; counts and bad lines), and
//! merge the chunk results in input order. Pure (no I/O besides log lines), shared by the unsharded stage and
//! by shards (which replay their parts through the same [`Acc`]), so it sits below both.
//!
//! It reads input, so no indexing, slicing or arithmetic that could panic on it (the lints below).

#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use super::cand::{Cand, StmtId};
use super::config::{Config, UnlabelledStatements, CHUNK_KIB_MAX, MAX_LINE_MIB_MAX};
use super::counts::{is_timestamp, BadLine, BadLines, Counts, BAD_EXAMPLES, BAD_KEEP};
use crate::core::error::{Error, Result};
use crate::core::falsity::Constraint;
use crate::core::ids::{EntityId, Pid, Qid};
use crate::core::progress::{self, Progress};
use crate::core::records::{EntityRecord, Label, PropertyRecord, Rank};
use crate::dump::entity::{self, Entity, EntityValue, Kind, Line};
use crate::dump::line::direct;
use crate::dump::{self, ChunkOut, Joiner};
use crate::stages::extract::falsity::{self, Pair, Snak};
use crate::store::tables::items::ItemSet;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

/// The line the joiner still holds, when it is already longer than `max_line_mib` (lines longer than a chunk
/// are held whole until their newline, so this is what bounds memory on a file without line structure; a
/// completed line is checked by [`handle_line`]). `(0-based line, byte offset)` in the joiner's stream.
pub(crate) fn overlong_pending(rules: &Rules, joiner: &Joiner) -> Option<(u64, u64)> {
    joiner
        .pending()
        .filter(|x| x.2 > rules.max_line)
        .map(|(l, o, _)| (l, o))
}

/// What to say about an over-long line (`ended`: its newline was seen).
pub(crate) fn overlong_message(rules: &Rules, ended: bool) -> String {
    let mib = rules.max_line >> 20;
    format!(
        "this line is {} {mib} MiB{} (extract.max_line_mib); a dump line is one entity, a few MB at most, so the \
         file has no line-per-entity structure (a minified JSON array, or damaged data). Pass --max-line-mib to \
         accept longer lines",
        if ended { "longer than" } else { "already longer than" },
        if ended { "" } else { " and has no newline yet" },
    )
}

/// Config resolved for the hot loop.
pub struct Rules {
    langs: entity::Langs,
    mul_ok: Vec<bool>,
    /// `transitive_seed`, sorted and deduplicated: a handful of properties, so a linear scan (the per-statement
    /// path) beats hashing.
    pub(crate) seed: Vec<Pid>,
    /// The properties whose statements are kept whatever their subject: the seed and P279 (the falsity tier's
    /// closure; `extract::falsity`).
    pub(crate) keep_unlabelled: Vec<Pid>,
    skim: bool,
    /// What the parser may jump over: the descriptions of items without all labels, and with
    /// `unlabelled_statements = "skip"` their statements.
    jump: direct::Jump,
    /// `max_line_mib` in bytes.
    pub(crate) max_line: u64,
    /// Malformed lines a chunk keeps with their message: `max_bad_lines + 1`, at most [`BAD_KEEP`].
    pub(crate) bad_keep: u64,
}

impl Rules {
    /// Resolve and validate a config.
    pub fn new(cfg: &Config) -> Result<Rules> {
        if cfg.languages.is_empty() {
            return Err(Error::Config("extract.languages is empty".into()));
        }
        if !(0.0..=1.0).contains(&cfg.max_bad_share) {
            return Err(Error::Config(format!(
                "extract.max_bad_share: {} is not a share between 0 and 1 (e.g. 0.01 for 1%)",
                cfg.max_bad_share
            )));
        }
        let mut seen = HashSet::new();
        for l in &cfg.languages {
            if l.is_empty() || l == "mul" || !seen.insert(l) {
                return Err(Error::Config(format!(
                    "extract.languages: `{l}` is empty, `mul` or repeated"
                )));
            }
        }
        let mut seed: Vec<Pid> = cfg
            .transitive_seed
            .iter()
            .map(|p| {
                Pid::parse(p).ok_or_else(|| {
                    Error::Config(format!("extract.transitive_seed: `{p}` is not a P-id"))
                })
            })
            .collect::<Result<_>>()?;
        seed.sort_unstable();
        seed.dedup();
        if !(1..=CHUNK_KIB_MAX).contains(&cfg.chunk_kib) {
            return Err(Error::Config(format!(
                "extract.chunk_kib: {} KiB is outside 1..={CHUNK_KIB_MAX} (default 4096)",
                cfg.chunk_kib
            )));
        }
        if !(1..=MAX_LINE_MIB_MAX).contains(&cfg.max_line_mib) {
            return Err(Error::Config(format!(
                "extract.max_line_mib (--max-line-mib): {} MiB is outside 1..={MAX_LINE_MIB_MAX} (default 256; \
                 a line is held whole in memory, so the bound must be a size this machine can hold)",
                cfg.max_line_mib
            )));
        }
        // Both in range: no product below overflows.
        if cfg.max_line_mib.saturating_mul(1 << 10) < cfg.chunk_kib as u64 {
            return Err(Error::Config(format!(
                "extract.max_line_mib: {} MiB is below the chunk size ({} KiB); a line longer than a chunk is \
                 what the limit is for (default 256)",
                cfg.max_line_mib, cfg.chunk_kib
            )));
        }
        let mul_ok: Vec<bool> = cfg
            .languages
            .iter()
            .map(|l| cfg.mul_fallback.contains(l))
            .collect();
        let mut keep_unlabelled = seed.clone();
        keep_unlabelled.push(falsity::P279);
        keep_unlabelled.sort_unstable();
        keep_unlabelled.dedup();
        // The descriptions of items without all labels are never read; their statements only with
        // `unlabelled_statements = "skip"`.
        let jump = direct::Jump {
            mul_ok: mul_ok.clone(),
            keep: keep_unlabelled.clone(),
            statements: cfg.unlabelled_statements == UnlabelledStatements::Skip,
        };
        Ok(Rules {
            max_line: cfg.max_line_mib.saturating_mul(1 << 20),
            bad_keep: cfg.max_bad_lines.saturating_add(1).min(BAD_KEEP),
            langs: entity::Langs {
                langs: cfg.languages.clone(),
            },
            mul_ok,
            seed,
            keep_unlabelled,
            skim: cfg.skim,
            jump,
        })
    }
}

/// The counters that every entity line adds to, as plain integers while a chunk is parsed, moved into
/// [`Part::counts`] when it is done ([`Part::settle`]): a `BTreeMap` add per counter per line (≈ 15 string-keyed
/// lookups a line) was ≈ 1 % of extract's instructions. The manifest gets the same counts.
macro_rules! tally_keys {
    ($($name:ident = $key:literal,)*) => {
        /// A counter of [`Tally`].
        #[derive(Clone, Copy)]
        enum T { $($name,)* }
        /// The manifest's name of each [`T`], in its order.
        const TALLY_KEYS: &[&str] = &[$($key,)*];
    };
}
tally_keys!(
    EntitiesTypeInferred = "entities_type_inferred_from_id",
    EntitiesItem = "entities_item",
    EntitiesProperty = "entities_property",
    TermsAsArray = "terms_as_array",
    ClaimsAsArray = "claims_as_array",
    ClaimsMissing = "claims_missing",
    SnaksValue = "snaks_value",
    SnaksSomevalue = "snaks_somevalue",
    SnaksNovalue = "snaks_novalue",
    SnaksUnknownDatatype = "snaks_unknown_datatype",
    ValuesNumericIdOnly = "values_numeric_id_only",
    ValuesOtherEntityType = "values_other_entity_type",
    ValuesBadEntity = "values_bad_entity",
    StatementsBadRank = "statements_bad_rank",
    ModifiedInvalid = "modified_invalid",
    LabelledEntities = "labelled_entities",
    LabelsFromMul = "labels_from_mul",
    LabelledOnlyThanksToMul = "labelled_only_thanks_to_mul",
    ItemStatements = "item_statements",
    StatementsWithoutId = "statements_without_id",
    StatementsBadProperty = "statements_bad_property",
);

/// See [`tally_keys`].
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Tally([u64; TALLY_KEYS.len()]);

impl Tally {
    #[inline]
    fn add(&mut self, k: T, n: u64) {
        if let Some(x) = self.0.get_mut(k as usize) {
            *x = x.saturating_add(n);
        }
    }
}

/// Statements of unlabelled items per property, in a chunk: an update per such statement (most statements of
/// a dump), so counted in a vector indexed by the property number (P1 to ≈ P13000 in 2024) rather than hashed
/// (SipHash per statement was ≈ 1 % of extract's instructions); numbers past [`PropCounts::DENSE`] (a crafted
/// dump) go to a map. Iterated as `(property, count)` for the counts that are not zero, in no fixed order.
///
/// A chunk's counts leave its worker thread [compacted](PropCounts::compact): only the properties it counted,
/// while the vector stays with the thread for its next chunk. Why: the stage thread merges every chunk's
/// counts while the workers parse; merging whole vectors (13 k entries, 104 KB written by the other core) was
/// its largest own cost after the reader (≈ 20 ms of a 200 k-entity dump's 1.2 s at `-j 2`), and growing a new
/// vector in every chunk cost the workers copies and first touches.
#[derive(Clone, Debug, Default)]
pub(crate) struct PropCounts {
    dense: Vec<u64>,
    /// Counts moved out of `dense` by [`PropCounts::compact`]: (property number, count), numbers ascending
    /// and distinct, counts not zero.
    sparse: Vec<(u32, u64)>,
    big: HashMap<Pid, u64>,
}

thread_local! {
    /// The dense vector a thread's last compacted counts left behind: all zero (taken by the next chunk's
    /// first count on the same thread).
    static SPARE_DENSE: std::cell::Cell<Vec<u64>> = const { std::cell::Cell::new(Vec::new()) };
}

impl PropCounts {
    const DENSE: u64 = 1 << 16;

    /// Add `n` statements of `p`.
    #[inline]
    pub(crate) fn add_n(&mut self, p: Pid, n: u64) {
        if p.0 < Self::DENSE {
            let i = p.0 as usize;
            if self.dense.len() <= i {
                self.grow(i);
            }
            if let Some(x) = self.dense.get_mut(i) {
                *x = x.saturating_add(n);
            }
        } else {
            let x = self.big.entry(p).or_insert(0);
            *x = x.saturating_add(n);
        }
    }

    /// Make room for index `i` of `dense` (below [`PropCounts::DENSE`]), first taking the thread's spare
    /// vector when this one has none.
    #[cold]
    fn grow(&mut self, i: usize) {
        if self.dense.capacity() == 0 {
            self.dense = SPARE_DENSE.take();
            debug_assert!(self.dense.iter().all(|&x| x == 0));
        }
        if self.dense.len() <= i {
            self.dense.resize(i.saturating_add(1), 0);
        }
    }

    /// Move the dense counts into `sparse` and leave the (zeroed) vector to the thread's next chunk.
    pub(crate) fn compact(&mut self) {
        if self.dense.is_empty() {
            return;
        }
        let mut dense = std::mem::take(&mut self.dense);
        let had = self.sparse.len();
        for (i, x) in dense.iter_mut().enumerate() {
            if *x != 0 {
                // `i < DENSE = 2^16`: fits.
                self.sparse.push((i as u32, *x));
                *x = 0;
            }
        }
        if had > 0 {
            // Compacted before: keep the numbers ascending and distinct.
            self.sparse.sort_by_key(|&(i, _)| i);
            self.sparse.dedup_by(|later, kept| {
                let same = later.0 == kept.0;
                if same {
                    kept.1 = kept.1.saturating_add(later.1);
                }
                same
            });
        }
        SPARE_DENSE.set(dense);
    }

    /// Add the counts of `other`.
    pub(crate) fn merge(&mut self, other: PropCounts) {
        if self.dense.len() < other.dense.len() {
            self.dense.resize(other.dense.len(), 0);
        }
        for (x, n) in self.dense.iter_mut().zip(other.dense) {
            *x = x.saturating_add(n);
        }
        for (p, n) in other.sparse {
            self.add_n(Pid(u64::from(p)), n);
        }
        for (p, n) in other.big {
            self.add_n(p, n);
        }
    }

    /// The counts as a map (for the join).
    pub(crate) fn into_map(self) -> HashMap<Pid, u64> {
        self.into_iter().collect()
    }

    /// Bytes held (for [`dump::Held`]).
    fn held(&self) -> usize {
        self.dense
            .capacity()
            .saturating_mul(8)
            .saturating_add(self.sparse.capacity().saturating_mul(16))
            .saturating_add(self.big.capacity().saturating_mul(24))
    }
}

impl IntoIterator for PropCounts {
    type Item = (Pid, u64);
    type IntoIter = Box<dyn Iterator<Item = (Pid, u64)>>;
    fn into_iter(mut self) -> Self::IntoIter {
        // Each property once: what was compacted goes back into the dense counts first.
        for (p, n) in std::mem::take(&mut self.sparse) {
            self.add_n(Pid(u64::from(p)), n);
        }
        let dense = self
            .dense
            .into_iter()
            .enumerate()
            .filter(|&(_, n)| n > 0)
            .map(|(p, n)| (Pid(p as u64), n));
        Box::new(dense.chain(self.big))
    }
}

impl FromIterator<(Pid, u64)> for PropCounts {
    fn from_iter<I: IntoIterator<Item = (Pid, u64)>>(iter: I) -> Self {
        let mut c = PropCounts::default();
        for (p, n) in iter {
            c.add_n(p, n);
        }
        c
    }
}

/// What one chunk (or one joined line) contributes.
#[derive(Default)]
pub struct Part {
    pub(crate) entities: Vec<EntityRecord>,
    pub(crate) properties: Vec<PropertyRecord>,
    /// Item→item statements of labelled subjects.
    pub(crate) candidates: Vec<Cand>,
    /// Item→item statements of unlabelled subjects whose property is in the transitive seed.
    pub(crate) seed_other: Vec<Cand>,
    /// Item→item statements of unlabelled subjects, by property (to report transitive statements missed).
    pub(crate) unlabelled_by_prop: PropCounts,
    /// The Q-number of every item line, labelled or not (`items.parquet`).
    pub(crate) items: Vec<u64>,
    /// For the falsity tier (`extract::falsity`): the live snaks without a value of labelled items, the live
    /// (property, object) pairs of every item, the constraints of the property lines.
    pub(crate) snaks: Vec<Snak>,
    pub(crate) pairs: Vec<Pair>,
    pub(crate) constraints: Vec<Constraint>,
    /// Per property line, in line order: its property number and whether the line keeps its pairs
    /// (`falsity::line_keeps_pairs`).
    pub(crate) distinct_lines: Vec<(u32, bool)>,
    pub(crate) counts: Counts,
    /// Counters not yet in `counts` (see [`tally_keys`]); zero once [`handle_line`] or [`work_chunk`] returns.
    pub(crate) tally: Tally,
    /// Malformed lines: counted, the first few kept with their position (relative to the chunk).
    pub(crate) bad: BadLines,
    pub(crate) max_modified: Option<String>,
    /// The first line longer than `max_line_mib` (relative line, relative offset): not parsed; the reader
    /// fails on it.
    pub(crate) overlong: Option<(u64, u64)>,
}

impl Part {
    /// Move the tallied counters into `counts`, and compact the per-property counts (on the worker that
    /// counted them, see [`PropCounts`]).
    pub(crate) fn settle(&mut self) {
        self.unlabelled_by_prop.compact();
        let t = std::mem::take(&mut self.tally);
        for (k, v) in TALLY_KEYS.iter().zip(t.0) {
            self.counts.add(k, v);
        }
    }

    /// The part's overlong line (see `overlong`) at its absolute position: (0-based line, byte offset) of a
    /// part that starts at line `base_line`, byte `base_offset`.
    pub(crate) fn overlong_at(&self, base_line: u64, base_offset: u64) -> Option<(u64, u64)> {
        self.overlong
            .map(|(l, o)| (base_line.saturating_add(l), base_offset.saturating_add(o)))
    }
}

impl dump::Held for Part {
    /// The records kept (counted as the join state counts them: `spill::Record::mem`) and the per-property
    /// tallies; what a parsed chunk holds until its turn.
    fn held(&self) -> usize {
        use super::spill::Record;
        fn sum<T: Record>(v: &[T]) -> usize {
            v.iter().map(Record::mem).fold(0, usize::saturating_add)
        }
        [
            sum(&self.entities),
            sum(&self.properties),
            sum(&self.candidates),
            sum(&self.seed_other),
            sum(&self.snaks),
            sum(&self.pairs),
            sum(&self.constraints),
            self.unlabelled_by_prop.held(),
        ]
        .into_iter()
        .fold(0, usize::saturating_add)
    }
}

/// Parse one line and add what it contributes to `part` (the per-line core: pure, no I/O).
pub fn handle_line(
    rules: &Rules,
    part: &mut Part,
    scratch: &mut Vec<u8>,
    buffers: &mut simd_json::Buffers,
    rel_line: u64,
    rel_offset: u64,
    raw: &[u8],
) {
    tally_line(rules, part, scratch, buffers, rel_line, rel_offset, raw);
    part.settle();
}

/// [`handle_line`], its counters left in `part.tally` (the caller settles them).
fn tally_line(
    rules: &Rules,
    part: &mut Part,
    scratch: &mut Vec<u8>,
    buffers: &mut simd_json::Buffers,
    rel_line: u64,
    rel_offset: u64,
    raw: &[u8],
) {
    if raw.len() as u64 > rules.max_line {
        // Never copied or parsed: the reader fails on it (a memory map may hand over a line of any length).
        part.overlong.get_or_insert((rel_line, rel_offset));
        return;
    }
    // Skimmed or whole: the same verdict and entity either way (see `direct::parse_line`).
    match crate::dump::line::parse_line(
        raw,
        &rules.langs,
        rules.skim,
        Some(&rules.jump),
        scratch,
        buffers,
    ) {
        Ok(Line::Frame(k)) => part.counts.add(
            match k {
                entity::FrameKind::Blank => "blank_lines",
                entity::FrameKind::Open => "open_bracket_lines",
                entity::FrameKind::Close => "close_bracket_lines",
            },
            1,
        ),
        Ok(Line::Entity(e)) => {
            if let Err((kind, msg)) = keep_entity(rules, part, e, raw) {
                part.bad
                    .push(rules.bad_keep, rel_line, rel_offset, kind, msg);
            }
        }
        Err(e) => part
            .bad
            .push(rules.bad_keep, rel_line, rel_offset, e.kind, e.message),
    }
}

fn label_of(rules: &Rules, e: &Entity<'_>, i: usize) -> Option<Label> {
    let mul_ok = rules.mul_ok.get(i).copied().unwrap_or(false);
    match e.labels.get(i).and_then(|l| l.as_deref()) {
        Some(t) if !t.is_empty() => Some(Label {
            text: t.to_string(),
            from_mul: false,
        }),
        _ => match e.mul_label.as_deref() {
            Some(m) if mul_ok && !m.is_empty() => Some(Label {
                text: m.to_string(),
                from_mul: true,
            }),
            _ => None,
        },
    }
}

fn keep_entity(
    rules: &Rules,
    part: &mut Part,
    e: Entity<'_>,
    raw: &[u8],
) -> std::result::Result<(), (&'static str, String)> {
    let kind = match &e.kind {
        Some(k) => k.clone(),
        None => e.kind_from_id().ok_or((
            "no_type",
            "entity without `type` and without a Q/P id".to_string(),
        ))?,
    };
    if e.kind.is_none() {
        part.tally.add(T::EntitiesTypeInferred, 1);
    }
    let id_str = e.id.as_deref().unwrap_or("");
    let id = match kind {
        Kind::Item => EntityId::Item(
            Qid::parse(id_str).ok_or(("bad_id", format!("item with id `{id_str}`")))?,
        ),
        Kind::Property => EntityId::Property(
            Pid::parse(id_str).ok_or(("bad_id", format!("property with id `{id_str}`")))?,
        ),
        Kind::Other(t) => {
            let c = &mut part.counts;
            c.add("entities_other", 1);
            c.add_other_type(&t, 1);
            return Ok(());
        }
    };
    if let EntityId::Item(q) = id {
        part.items.push(q.0);
    }
    let c = &mut part.tally;
    c.add(
        match id {
            EntityId::Item(_) => T::EntitiesItem,
            EntityId::Property(_) => T::EntitiesProperty,
        },
        1,
    );
    c.add(T::TermsAsArray, u64::from(e.terms_as_array));
    c.add(T::ClaimsAsArray, u64::from(e.claims_as_array));
    c.add(T::ClaimsMissing, u64::from(e.claims_missing));
    let s = e.snaks;
    c.add(T::SnaksValue, s.value);
    c.add(T::SnaksSomevalue, s.somevalue);
    c.add(T::SnaksNovalue, s.novalue);
    c.add(T::SnaksUnknownDatatype, s.unknown_datatype);
    c.add(T::ValuesNumericIdOnly, s.numeric_id_only);
    c.add(T::ValuesOtherEntityType, s.other_entity_value);
    c.add(T::ValuesBadEntity, s.bad_entity_value);
    c.add(T::StatementsBadRank, s.bad_rank);
    // A timestamp of the shape Wikidata writes, or nothing: the dump date is read from it, and the manifest
    // and entities.parquet carry it.
    let modified = e.modified.as_deref().filter(|m| is_timestamp(m));
    if e.modified.is_some() && modified.is_none() {
        c.add(T::ModifiedInvalid, 1);
    }
    if let Some(m) = modified {
        if part.max_modified.as_deref().is_none_or(|x| m > x) {
            part.max_modified = Some(m.to_string());
        }
    }
    // Decide without allocating (most entities are not labelled); build the strings only when kept.
    let n_langs = rules.langs.langs.len();
    let labelled = e.labelled_in_all(&rules.mul_ok);
    let labels: Vec<Option<Label>> = if labelled || matches!(id, EntityId::Property(_)) {
        (0..n_langs).map(|i| label_of(rules, &e, i)).collect()
    } else {
        Vec::new()
    };
    if labelled {
        c.add(T::LabelledEntities, 1);
        let from_mul = labels.iter().flatten().filter(|l| l.from_mul).count() as u64;
        c.add(T::LabelsFromMul, from_mul);
        c.add(T::LabelledOnlyThanksToMul, u64::from(from_mul > 0));
    }
    if let EntityId::Property(pid) = id {
        let is = |p: &str, v: EntityValue, st: &entity::Statement<'_>| {
            st.property == p && st.value == v && st.rank != Some(Rank::Deprecated)
        };
        let transitive = e
            .statements
            .iter()
            .any(|st| is("P31", EntityValue::Item(Qid(18647515)), st));
        let symmetric = e.statements.iter().any(|st| {
            is("P31", EntityValue::Item(Qid(18647518)), st)
                || is("P2302", EntityValue::Item(Qid(21510862)), st)
        });
        let mut inverse: Vec<Pid> = e
            .statements
            .iter()
            .filter(|st| st.property == "P1696" && st.rank != Some(Rank::Deprecated))
            .filter_map(|st| match st.value {
                EntityValue::Property(p) => Some(p),
                _ => None,
            })
            .collect();
        inverse.sort_unstable();
        inverse.dedup();
        let datatype = e.datatype.as_deref().unwrap_or("").to_string();
        if !entity::KNOWN_DATATYPES.contains(&datatype.as_str()) {
            part.counts.add("properties_unknown_datatype", 1);
        }
        let before = part.constraints.len();
        falsity::property_line(&mut part.constraints, &mut part.counts, raw);
        if let Ok(p32) = u32::try_from(pid.0) {
            let own = part.constraints.get(before..).unwrap_or_default();
            let keep = falsity::line_keeps_pairs(labelled, own);
            part.distinct_lines.push((p32, keep));
        }
        part.properties.push(PropertyRecord {
            id: pid,
            datatype,
            labels: labels.clone(),
            transitive,
            symmetric,
            inverse,
        });
    }
    if let EntityId::Item(subject) = id {
        // Per-entity tallies, added to the named counters once (a counter lookup per statement is measurable).
        let (mut item_statements, mut without_id, mut bad_property) = (0u64, 0u64, 0u64);
        for st in &e.statements {
            let live = st.rank != Some(Rank::Deprecated);
            let object = match st.value {
                EntityValue::Item(object) => object,
                EntityValue::SomeValue | EntityValue::NoValue => {
                    if let (true, true, Some(p)) = (labelled, live, falsity::p32(&st.property)) {
                        let novalue = st.value == EntityValue::NoValue;
                        part.snaks.push(Snak {
                            s: subject.0,
                            p,
                            novalue,
                        });
                    }
                    continue;
                }
                EntityValue::Property(_) => continue,
            };
            let Some(property) = Pid::parse(&st.property) else {
                bad_property = bad_property.saturating_add(1);
                continue;
            };
            item_statements = item_statements.saturating_add(1);
            without_id = without_id.saturating_add(u64::from(st.id.is_none()));
            let Ok(p32) = u32::try_from(property.0) else {
                bad_property = bad_property.saturating_add(1);
                continue;
            };
            let t = || Cand {
                s: subject.0,
                o: object.0,
                p: p32,
                rank: st.rank.unwrap_or(Rank::Normal),
                id: StmtId::encode(subject.0, st.id.as_deref()),
            };
            if live {
                part.pairs.push(Pair {
                    p: p32,
                    o: object.0,
                });
            }
            if labelled {
                part.candidates.push(t());
                continue;
            }
            if rules.keep_unlabelled.contains(&property) {
                part.seed_other.push(t());
            }
            if !rules.seed.contains(&property) {
                part.unlabelled_by_prop.add_n(property, 1);
            }
        }
        let c = &mut part.tally;
        c.add(T::ItemStatements, item_statements);
        c.add(T::StatementsWithoutId, without_id);
        c.add(T::StatementsBadProperty, bad_property);
    }
    if labelled {
        part.entities.push(EntityRecord {
            id,
            labels: labels.into_iter().flatten().collect(),
            descriptions: e
                .descriptions
                .iter()
                .map(|d| d.as_deref().filter(|s| !s.is_empty()).map(str::to_string))
                .collect(),
            sitelinks: e.sitelinks,
            lastrevid: e.lastrevid,
            modified: modified.map(str::to_string),
        });
    }
    Ok(())
}

/// Frame and parse one chunk (runs on a worker thread).
pub fn work_chunk(rules: &Rules, bytes: &[u8], at_line_start: bool) -> ChunkOut<Part> {
    let mut scratch = Vec::new();
    let mut buffers = simd_json::Buffers::new(1 << 16);
    let mut out = dump::frame(bytes, at_line_start, Part::default(), |part, l, o, line| {
        tally_line(rules, part, &mut scratch, &mut buffers, l, o, line)
    });
    out.data.settle();
    out
}

// ---- merge and join ----------------------------------------------------------------------------------------

/// `into.extend(v)`, without copying `v`'s records when `into` is empty: the accumulator is drained into the
/// join state after every chunk, so each chunk's records were copied twice on the stage thread (the thread
/// that, at `-j 2`, runs beside both workers); now once, into the join state.
pub(crate) fn append_records<T>(into: &mut Vec<T>, mut v: Vec<T>) {
    if into.is_empty() {
        std::mem::swap(into, &mut v);
    } else {
        into.append(&mut v);
    }
}

/// Moves the records of `$part` (a [`Part`] in a local variable; its `bad` and `overlong` are left to the
/// caller) into `$into`: an [`Acc`], or the [`Part`] a shard of a sharded extract gathers (fields of the same
/// names). First learns from the part's property lines which properties keep their distinct-value pairs
/// (`$known`, every line so far: `falsity::Known`), so that the pairs of the others are dropped as they come;
/// the lines' verdicts stay in `$part` (a shard's part keeps them for the join, the accumulator needs only
/// `$known`).
macro_rules! absorb_records {
    ($into:expr, $known:expr, $part:ident) => {{
        falsity::learn(&mut $known, &$part.distinct_lines);
        let known = &$known;
        let mut pairs = $part.pairs;
        pairs.retain(|x| !known.drops(x.p));
        $crate::stages::extract::keep::append_records(&mut $into.pairs, pairs);
        $crate::stages::extract::keep::append_records(&mut $into.snaks, $part.snaks);
        $crate::stages::extract::keep::append_records(&mut $into.constraints, $part.constraints);
        $crate::stages::extract::keep::append_records(&mut $into.entities, $part.entities);
        $crate::stages::extract::keep::append_records(&mut $into.properties, $part.properties);
        $crate::stages::extract::keep::append_records(&mut $into.candidates, $part.candidates);
        $crate::stages::extract::keep::append_records(&mut $into.seed_other, $part.seed_other);
        $into.items.extend($part.items);
        $into.unlabelled_by_prop.merge($part.unlabelled_by_prop);
        $into.counts.merge($part.counts);
        if let Some(m) = $part.max_modified {
            if $into.max_modified.as_ref().is_none_or(|x| &m > x) {
                $into.max_modified = Some(m);
            }
        }
    }};
}
pub(crate) use absorb_records;

/// Sequential accumulator (input order).
pub struct Acc<'r> {
    pub(crate) rules: &'r Rules,
    pub(crate) joiner: Joiner,
    pub(crate) entities: Vec<EntityRecord>,
    pub(crate) properties: Vec<PropertyRecord>,
    pub(crate) candidates: Vec<Cand>,
    pub(crate) seed_other: Vec<Cand>,
    pub(crate) unlabelled_by_prop: PropCounts,
    pub(crate) items: ItemSet,
    pub(crate) snaks: Vec<Snak>,
    pub(crate) pairs: Vec<Pair>,
    pub(crate) constraints: Vec<Constraint>,
    /// Properties whose line was seen: whether every line of them keeps their pairs (the pairs of the
    /// others are dropped as they come).
    pub(crate) distinct_known: falsity::Known,
    pub(crate) counts: Counts,
    pub(crate) bad_total: u64,
    pub(crate) bad_by_kind: BTreeMap<&'static str, u64>,
    pub(crate) bad_examples: Vec<BadLine>,
    pub(crate) max_bad: u64,
    pub(crate) max_modified: Option<String>,
    pub(crate) path: PathBuf,
    pub(crate) progress: Option<&'r Progress>,
    /// The unterminated last line when it does not parse (a cut line): (0-based line, byte offset, length).
    pub(crate) cut_line: Option<(u64, u64, u64)>,
}

impl<'r> Acc<'r> {
    pub fn new(rules: &'r Rules, max_bad: u64, path: &Path) -> Acc<'r> {
        Acc {
            rules,
            joiner: Joiner::new(),
            entities: Vec::new(),
            properties: Vec::new(),
            candidates: Vec::new(),
            seed_other: Vec::new(),
            unlabelled_by_prop: PropCounts::default(),
            items: ItemSet::default(),
            snaks: Vec::new(),
            pairs: Vec::new(),
            constraints: Vec::new(),
            distinct_known: falsity::Known::default(),
            counts: Counts::default(),
            bad_total: 0,
            bad_by_kind: BTreeMap::new(),
            bad_examples: Vec::new(),
            max_bad,
            max_modified: None,
            path: path.to_path_buf(),
            progress: None,
            cut_line: None,
        }
    }

    /// The error for a line longer than `max_line_mib` (0-based `line`; `ended`: its newline was seen).
    fn overlong(&self, line: u64, offset: u64, ended: bool) -> Error {
        Error::Json {
            path: self.path.clone(),
            line: line.saturating_add(1),
            offset,
            what: overlong_message(self.rules, ended),
        }
    }

    fn absorb(&mut self, part: Part, base_line: u64, base_offset: u64) -> Result<()> {
        if let Some((line, offset)) = part.overlong_at(base_line, base_offset) {
            return Err(self.overlong(line, offset, true));
        }
        let n_ent = part.counts.entity_lines();
        if let Some(p) = self.progress {
            p.inc_extra("entities", n_ent);
        }
        absorb_records!(self, self.distinct_known, part);
        let BadLines {
            total,
            by_kind,
            first,
        } = part.bad;
        for (k, v) in by_kind {
            let n = self.bad_by_kind.entry(k).or_insert(0);
            *n = n.saturating_add(v);
        }
        let before = self.bad_total;
        for (l, o, kind, message) in first {
            self.bad_total = self.bad_total.saturating_add(1);
            let bad = BadLine {
                line: base_line.saturating_add(l).saturating_add(1),
                offset: base_offset.saturating_add(o),
                kind,
                message,
            };
            if self.bad_examples.len() < BAD_EXAMPLES {
                progress::log(format!(
                    "extract: {}: bad line {} (byte offset {}): {}: {}",
                    self.path.display(),
                    bad.line,
                    bad.offset,
                    kind,
                    bad.message
                ));
                self.bad_examples.push(bad.clone());
            }
            if self.bad_total > self.max_bad {
                return Err(Error::Json {
                    path: self.path.clone(),
                    line: bad.line,
                    offset: bad.offset,
                    what: format!(
                        "more than {} malformed lines (--max-bad-lines); this one: {kind}: {}",
                        self.max_bad, bad.message
                    ),
                });
            }
        }
        // The ones counted but not kept (only when a chunk has more than BAD_KEEP, i.e. max_bad ≥ BAD_KEEP).
        self.bad_total = before.saturating_add(total);
        if self.bad_total > self.max_bad {
            return Err(Error::Json {
                path: self.path.clone(),
                line: base_line.saturating_add(1),
                offset: base_offset,
                what: format!(
                    "more than {} malformed lines (--max-bad-lines): {total} of them in the chunk of the dump that \
                     starts at this line",
                    self.max_bad
                ),
            });
        }
        Ok(())
    }

    fn line_part(&self, bytes: &[u8]) -> Part {
        let mut part = Part::default();
        let mut scratch = Vec::new();
        let mut buffers = simd_json::Buffers::new(bytes.len().max(16));
        handle_line(
            self.rules,
            &mut part,
            &mut scratch,
            &mut buffers,
            0,
            0,
            bytes,
        );
        part
    }

    /// Take the next chunk result (input order).
    pub fn feed(&mut self, c: ChunkOut<Part>) -> Result<()> {
        let (base, joined, part) = self.joiner.feed(c);
        if let Some((line, offset)) = overlong_pending(self.rules, &self.joiner) {
            return Err(self.overlong(line, offset, false));
        }
        if let Some(j) = joined {
            let p = self.line_part(&j.bytes);
            self.absorb(p, j.line, j.offset)?;
        }
        self.absorb(part, base.line, base.offset)
    }

    /// End of stream: handle the unterminated last line (a cut line is counted and remembered, not a bad line;
    /// whether the dump is then acceptable is the stage's decision).
    pub fn finish(&mut self) -> Result<()> {
        let joiner = std::mem::take(&mut self.joiner);
        let lines = joiner.lines();
        if let Some(j) = joiner.finish() {
            let p = self.line_part(&j.bytes);
            if p.bad.total == 0 {
                self.counts.add("last_line_without_newline", 1);
                self.absorb(p, j.line, j.offset)?;
            } else {
                self.counts.add("truncated_last_line", 1);
                self.cut_line = Some((j.line, j.offset, j.bytes.len() as u64));
            }
            self.counts.add("lines", lines.saturating_add(1));
        } else {
            self.counts.add("lines", lines);
        }
        Ok(())
    }
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use crate::stages::extract::counts::{short_message, BAD_MESSAGE_MAX, OTHER_TYPES_MAX};

    fn rules(langs: &[&str], mul: &[&str]) -> Rules {
        Rules::new(&Config {
            languages: langs.iter().map(|s| s.to_string()).collect(),
            mul_fallback: mul.iter().map(|s| s.to_string()).collect(),
            ..Config::default()
        })
        .unwrap()
    }

    fn part_of(r: &Rules, text: &str) -> Part {
        work_chunk(r, text.as_bytes(), true).data
    }

    #[test]
    fn mul_fallback_and_from_mul() {
        let r = rules(&["en", "ko"], &["en"]);
        let p = part_of(
            &r,
            "{\"type\":\"item\",\"id\":\"Q1\",\"labels\":{\"mul\":{\"value\":\"X\"},\"ko\":{\"value\":\"엑스\"}}}\n\
             {\"type\":\"item\",\"id\":\"Q2\",\"labels\":{\"mul\":{\"value\":\"Y\"},\"en\":{\"value\":\"\"}}}\n\
             {\"type\":\"item\",\"id\":\"Q3\",\"labels\":{\"en\":{\"value\":\"Z\"},\"ko\":{\"value\":\"\"}}}\n",
        );
        assert_eq!(p.entities.len(), 1);
        assert_eq!(p.entities[0].id, EntityId::Item(Qid(1)));
        assert_eq!(
            p.entities[0].labels,
            vec![
                Label {
                    text: "X".into(),
                    from_mul: true
                },
                Label {
                    text: "엑스".into(),
                    from_mul: false
                }
            ]
        );
        assert_eq!(p.counts.get("labelled_only_thanks_to_mul"), 1);
        assert_eq!(p.counts.get("entities_item"), 3);
    }

    #[test]
    fn timestamps_by_hand() {
        for ok in [
            "2024-03-01T10:00:00Z",
            "2000-01-01T00:00:00Z",
            "2099-12-31T23:59:60Z",
        ] {
            assert!(is_timestamp(ok), "{ok}");
        }
        for bad in [
            "",
            "999999999é",
            "9999999999",
            "9999-12-31T23:59:59Z",
            "1999-12-31T23:59:59Z",
            "2024-13-01T10:00:00Z",
            "2024-00-01T10:00:00Z",
            "2024-03-32T10:00:00Z",
            "2024-03-01T24:00:00Z",
            "2024-03-01T10:60:00Z",
            "2024-03-01T10:00:61Z",
            "2024-03-01 10:00:00Z",
            "2024-03-01T10:00:00",
            "2024-03-01T10:00:00Z ",
            "+2024-03-01T10:00:00Z",
            "2024-0a-01T10:00:00Z",
            "２０２４-03-01T10:00Z",
        ] {
            assert!(!is_timestamp(bad), "{bad}");
        }
    }

    #[test]
    fn long_messages_are_cut_at_a_character_boundary() {
        assert_eq!(short_message("short".into()), "short");
        let m = short_message("é".repeat(500));
        assert!(m.len() <= BAD_MESSAGE_MAX, "{}", m.len());
        assert!(m.ends_with('…'));
        assert!(m.trim_end_matches('…').chars().all(|c| c == 'é'));
        let exact = "x".repeat(BAD_MESSAGE_MAX);
        assert_eq!(short_message(exact.clone()), exact);
    }

    #[test]
    fn a_chunk_of_junk_keeps_max_bad_plus_one_lines_and_counts_all() {
        let junk = "x\n".repeat(100_000);
        for (max_bad, kept) in [(5u64, 6usize), (1000, 1001), (1_000_000, BAD_KEEP as usize)] {
            let r = Rules::new(&Config {
                max_bad_lines: max_bad,
                ..Config::default()
            })
            .unwrap();
            let p = part_of(&r, &junk);
            assert_eq!(p.bad.total, 100_000);
            assert_eq!(p.bad.first.len(), kept, "max_bad {max_bad}");
            assert_eq!(p.bad.by_kind.values().sum::<u64>(), 100_000);
            // The kept ones are the first, in order: line k at byte offset 2k.
            for (k, b) in p.bad.first.iter().enumerate() {
                assert_eq!((b.0, b.1), (k as u64, 2 * k as u64));
            }
        }
    }

    /// `(property, count)` pairs sorted, for comparing counts whatever their order.
    fn sorted(c: PropCounts) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = c.into_iter().map(|(p, n)| (p.0, n)).collect();
        v.sort_unstable();
        v
    }

    #[test]
    fn prop_counts_by_hand() {
        // Dense (P2, P70000 is past DENSE), compacted, counted again after the compaction, merged.
        let mut a = PropCounts::default();
        a.add_n(Pid(2), 1);
        a.add_n(Pid(5), 2);
        a.add_n(Pid(70_000), 1);
        a.compact();
        a.add_n(Pid(2), 4);
        a.add_n(Pid(9), 1);
        let mut b = PropCounts::default();
        b.add_n(Pid(5), 10);
        b.compact();
        b.compact();
        let mut acc = PropCounts::default();
        acc.merge(a);
        acc.merge(b);
        assert_eq!(sorted(acc), vec![(2, 5), (5, 12), (9, 1), (70_000, 1)]);
    }

    #[test]
    fn a_compacted_chunk_leaves_its_zeroed_vector_to_the_next() {
        std::thread::spawn(|| {
            let mut a = PropCounts::default();
            a.add_n(Pid(300), 3);
            a.compact();
            assert_eq!(a.sparse, vec![(300, 3)]);
            assert!(a.dense.is_empty());
            let mut b = PropCounts::default();
            b.add_n(Pid(7), 1);
            // The same allocation, long enough for P300 already, and zero but for the new count.
            assert!(b.dense.len() > 300);
            assert_eq!(b.dense.iter().sum::<u64>(), 1);
            assert_eq!(sorted(b), vec![(7, 1)]);
        })
        .join()
        .unwrap();
    }

    proptest::proptest! {
        /// Counts added to chunks, each compacted zero, one or two times with counts added between, then
        /// merged: the same totals as a map counting every addition (the oracle).
        #[test]
        fn prop_counts_merge_to_the_totals(
            chunks in proptest::collection::vec(
                (proptest::collection::vec((0u64..400, 1u64..5), 0..60), 0usize..3, 0usize..60),
                0..8,
            ),
            big in proptest::collection::vec(65_530u64..65_545, 0..5),
        ) {
            let mut want: HashMap<u64, u64> = HashMap::new();
            let mut acc = PropCounts::default();
            for (adds, compactions, at) in chunks {
                let mut c = PropCounts::default();
                for (k, &(p, n)) in adds.iter().enumerate() {
                    if compactions > 0 && k == at.min(adds.len()) {
                        c.compact();
                    }
                    c.add_n(Pid(p), n);
                    *want.entry(p).or_insert(0) += n;
                }
                for _ in 0..compactions {
                    c.compact();
                }
                acc.merge(c);
            }
            for &p in &big {
                acc.add_n(Pid(p), 1);
                *want.entry(p).or_insert(0) += 1;
            }
            let mut want: Vec<(u64, u64)> = want.into_iter().collect();
            want.sort_unstable();
            proptest::prop_assert_eq!(sorted(acc), want);
        }

        #[test]
        fn other_type_lists_do_not_depend_on_the_chunking(
            names in proptest::collection::vec(0u8..60, 0..300),
            cuts in proptest::collection::vec(0usize..300, 0..8),
        ) {
            let name = |n: u8| format!("t{n:02}");
            let mut whole = Counts::default();
            for &n in &names {
                whole.add_other_type(&name(n), 1);
            }
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(names.len())).collect();
            cuts.push(0);
            cuts.push(names.len());
            cuts.sort_unstable();
            let mut merged = Counts::default();
            for w in cuts.windows(2) {
                let mut c = Counts::default();
                for &n in &names[w[0]..w[1]] {
                    c.add_other_type(&name(n), 1);
                }
                merged.merge(c);
            }
            proptest::prop_assert_eq!(&whole.other_types, &merged.other_types);
            proptest::prop_assert_eq!(&whole.map, &merged.map);
            // The listed ones are the smallest names, with exact counts.
            let mut distinct: Vec<u8> = names.clone();
            distinct.sort_unstable();
            distinct.dedup();
            let want: BTreeMap<String, u64> = distinct
                .iter()
                .take(OTHER_TYPES_MAX)
                .map(|&n| (name(n), names.iter().filter(|&&m| m == n).count() as u64))
                .collect();
            proptest::prop_assert_eq!(&whole.other_types, &want);
            let listed: u64 = want.values().sum();
            proptest::prop_assert_eq!(whole.get("entities_other_unlisted"), names.len() as u64 - listed);
        }
    }

    #[test]
    fn statement_ids_round_trip_compactly() {
        for (s, id) in [
            (42, "Q42$8AB2F3F8-6C97-4B66-8AD4-0123456789AB"),
            (42, "q42$8ab2f3f8-6c97-4b66-8ad4-0123456789ab"),
            (7, "Q7$01234567-0123-0123-0123-012345678901"),
        ] {
            let e = StmtId::encode(s, Some(id));
            assert!(matches!(e, StmtId::Guid(..)), "{id}");
            assert_eq!(e.decode(s), id);
        }
        for (s, id) in [
            (42, "Q43$8AB2F3F8-6C97-4B66-8AD4-0123456789AB"),
            (42, "Q42$8ab2f3f8-6C97-4B66-8AD4-0123456789AB"),
            (42, "Q42$8AB2F3F8-6C97-4B66-8AD4-0123456789"),
            (42, "Q42$8AB2F3F8-6C97-4B66-8AD4-0123456789AG"),
            (42, "Q42$8AB2F3F8x6C97-4B66-8AD4-0123456789AB"),
            (42, "Q42$8AB2F3F8-6C97-4B66-8AD4-01234567-9AB"),
            (42, "Q042$8AB2F3F8-6C97-4B66-8AD4-0123456789AB"),
            (42, "Q42$a"),
            (42, "weird"),
            (42, ""),
        ] {
            let e = StmtId::encode(s, Some(id));
            assert!(matches!(e, StmtId::Other(_)), "{id}");
            assert_eq!(e.decode(s), id);
        }
        assert_eq!(StmtId::encode(1, None).decode(1), "");
        assert_eq!(std::mem::size_of::<Cand>(), 48);
    }
}
