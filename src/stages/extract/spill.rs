//! Bounded memory for the join state of the extract stage (`--memory-limit`): what the streaming
//! pass keeps for the join (labelled entities, property metadata, candidate statements, seed statements) is
//! held in [`Runs`], one per kind. When the records held pass the budget, every kind's records are sorted and
//! written to a temporary folder beside the output as a *run*; at the end each kind is read back as one sorted,
//! deduplicated stream by a k-way merge of its runs and the records still in memory (the last run), the way
//! `sort -S` and DuckDB's `memory_limit` do. An unlimited run is the same code with a single in-memory run,
//! so the stream — and the Parquet written from it — does not depend on the limit.
//!
//! Order and ties: a run is sorted stably (records of one kind with equal keys keep their input order) and the
//! merge breaks ties by run number (runs are in input order), so the first record of a key in the input is
//! the one the stream keeps — what `sort` then `dedup` of the whole input keeps.
//!
//! Memory: the records held are counted with [`Record::mem`] (struct, heap bytes, a malloc header per
//! allocation); the merge reads at most [`FAN_IN`] runs of a kind at once through [`READ_BUF`] buffers (more
//! runs are first merged [`FAN_IN`] at a time into longer ones), so its buffers stay under [`MERGE_RESERVE`]
//! whatever the dump's size. A spill folder is removed when the stage ends, fails or panics; one left by a
//! killed run (its pid gone) is removed by the next run in the same directory.

#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::core::error::{Error, IoContext, Result};
use crate::core::records::{EntityRecord, PropertyRecord, Rank};
use crate::core::size::{ByteSize, SizeSetting};
use crate::stages::extract::cand::{Cand, StmtId};
use rayon::slice::ParallelSliceMut;
use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// Runs of one kind merged at once (more are first merged this many at a time).
pub const FAN_IN: usize = 16;
/// Read buffer per run during a merge, in bytes.
pub const READ_BUF: usize = 64 << 10;
/// Write buffer of a run being written, in bytes.
pub const WRITE_BUF: usize = 256 << 10;
/// What the merge's buffers take at most: three kinds (candidates, seed statements and the labelled items'
/// snaks without a value, merged together) of [`FAN_IN`] runs each, plus one run being written by an
/// intermediate merge: 3.25 MiB.
pub const MERGE_RESERVE: u64 = (3 * FAN_IN * READ_BUF + WRITE_BUF) as u64;
/// The smallest `--memory-limit` accepted: the merge's buffers and 0.75 MiB for the records.
pub const MIN_LIMIT: u64 = 4 << 20;
/// Prefix of a spill folder's name (`.extract-spill.<random>.sword.tmp.<pid>` in the run directory).
pub const DIR_PREFIX: &str = "extract-spill";

/// A record of the join state that can be held, sorted, spilled and merged.
pub trait Record: Sized {
    /// Bytes this record holds in memory (its struct, its heap, 16 bytes of malloc header per allocation).
    fn mem(&self) -> usize;
    /// The order of the merged stream.
    fn order(a: &Self, b: &Self) -> Ordering;
    /// Whether `b` (after `a` in the stream) is a duplicate of `a` that the stream drops.
    fn same(a: &Self, b: &Self) -> bool {
        Self::order(a, b) == Ordering::Equal
    }
    /// Sort a run in memory (stably, or so that equal records are identical).
    fn sort(v: &mut Vec<Self>);
    fn write(&self, w: &mut dyn Write) -> std::io::Result<()>;
    /// The next record, `None` at the end of the run.
    fn read(r: &mut dyn BufRead, scratch: &mut Vec<u8>) -> std::io::Result<Option<Self>>;
}

const HEADER: usize = 16;

fn string_mem(s: &str) -> usize {
    if s.is_empty() {
        0
    } else {
        s.len().saturating_add(HEADER)
    }
}

/// Entities and properties are sorted stably by id: sorting indices by (id, position) moves no record.
fn sort_by_id<T>(v: &mut Vec<T>, key: impl Fn(&T) -> (u8, u64)) {
    let mut idx: Vec<((u8, u64), u32)> = v
        .iter()
        .enumerate()
        .map(|(i, r)| (key(r), u32::try_from(i).unwrap_or(u32::MAX)))
        .collect();
    // Keys are unique (the position breaks ties), so the parallel sort gives the one order at any `-j`.
    idx.par_sort_unstable();
    let mut slots: Vec<Option<T>> = std::mem::take(v).into_iter().map(Some).collect();
    v.extend(
        idx.iter()
            .filter_map(|&(_, i)| slots.get_mut(i as usize).and_then(Option::take)),
    );
}

fn entity_key(e: &EntityRecord) -> (u8, u64) {
    match e.id {
        crate::core::ids::EntityId::Item(q) => (0, q.0),
        crate::core::ids::EntityId::Property(p) => (1, p.0),
    }
}

/// One JSON document per line (serde_json escapes newlines inside strings).
pub(super) fn write_json<T: serde::Serialize>(v: &T, w: &mut dyn Write) -> std::io::Result<()> {
    serde_json::to_writer(&mut *w, v)?;
    w.write_all(b"\n")
}

pub(super) fn read_json<T: serde::de::DeserializeOwned>(
    r: &mut dyn BufRead,
    scratch: &mut Vec<u8>,
) -> std::io::Result<Option<T>> {
    scratch.clear();
    if r.read_until(b'\n', scratch)? == 0 {
        return Ok(None);
    }
    serde_json::from_slice(scratch)
        .map(Some)
        .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))
}

/// [`Record::write`] and [`Record::read`] of a record spilled as one JSON document per line ([`write_json`],
/// [`read_json`]), for the records with strings and lists.
macro_rules! json_lines {
    () => {
        fn write(&self, w: &mut dyn Write) -> std::io::Result<()> {
            write_json(self, w)
        }
        fn read(r: &mut dyn BufRead, scratch: &mut Vec<u8>) -> std::io::Result<Option<Self>> {
            read_json(r, scratch)
        }
    };
}
pub(super) use json_lines;

impl Record for EntityRecord {
    fn mem(&self) -> usize {
        let labels: usize = self
            .labels
            .iter()
            .map(|l| string_mem(&l.text))
            .fold(0, usize::saturating_add);
        let descriptions: usize = self
            .descriptions
            .iter()
            .flatten()
            .map(|d| string_mem(d))
            .fold(0, usize::saturating_add);
        std::mem::size_of::<Self>()
            .saturating_add(
                self.labels
                    .capacity()
                    .saturating_mul(std::mem::size_of::<crate::core::records::Label>()),
            )
            .saturating_add(
                self.descriptions
                    .capacity()
                    .saturating_mul(std::mem::size_of::<Option<String>>()),
            )
            .saturating_add(2 * HEADER)
            .saturating_add(labels)
            .saturating_add(descriptions)
            .saturating_add(self.modified.as_deref().map_or(0, string_mem))
    }
    fn order(a: &Self, b: &Self) -> Ordering {
        entity_key(a).cmp(&entity_key(b))
    }
    fn sort(v: &mut Vec<Self>) {
        sort_by_id(v, entity_key);
    }
    json_lines!();
}

impl Record for PropertyRecord {
    fn mem(&self) -> usize {
        let labels: usize = self
            .labels
            .iter()
            .flatten()
            .map(|l| string_mem(&l.text))
            .fold(0, usize::saturating_add);
        std::mem::size_of::<Self>()
            .saturating_add(
                self.labels
                    .capacity()
                    .saturating_mul(std::mem::size_of::<Option<crate::core::records::Label>>()),
            )
            .saturating_add(self.inverse.capacity().saturating_mul(8))
            .saturating_add(3 * HEADER)
            .saturating_add(labels)
            .saturating_add(string_mem(&self.datatype))
    }
    fn order(a: &Self, b: &Self) -> Ordering {
        a.id.cmp(&b.id)
    }
    fn sort(v: &mut Vec<Self>) {
        sort_by_id(v, |p| (1, p.id.0));
    }
    json_lines!();
}

/// A candidate on disk: s, o (8 bytes each, little-endian), p (4), rank (1), then the id: tag 0 = GUID (16
/// bytes + flags), 1 = other (4-byte length + UTF-8), 2 = missing.
impl Record for Cand {
    fn mem(&self) -> usize {
        match &self.id {
            StmtId::Other(s) => std::mem::size_of::<Self>().saturating_add(string_mem(s)),
            _ => std::mem::size_of::<Self>(),
        }
    }
    fn order(a: &Self, b: &Self) -> Ordering {
        Cand::cmp_as_triple(a, b)
    }
    fn same(a: &Self, b: &Self) -> bool {
        a == b
    }
    fn sort(v: &mut Vec<Self>) {
        // Records that compare equal are identical (an id's text decides its encoding), so unstable is exact
        // and the parallel sort (the join's first step, while the other cores would idle) gives the same order
        // at any `-j`.
        v.par_sort_unstable_by(Cand::cmp_as_triple);
    }
    fn write(&self, w: &mut dyn Write) -> std::io::Result<()> {
        let mut b = [0u8; 21];
        let (s, rest) = b.split_at_mut(8);
        s.copy_from_slice(&self.s.to_le_bytes());
        let (o, rest) = rest.split_at_mut(8);
        o.copy_from_slice(&self.o.to_le_bytes());
        let (p, rest) = rest.split_at_mut(4);
        p.copy_from_slice(&self.p.to_le_bytes());
        if let Some(r) = rest.first_mut() {
            *r = match self.rank {
                Rank::Deprecated => 0,
                Rank::Normal => 1,
                Rank::Preferred => 2,
            };
        }
        w.write_all(&b)?;
        match &self.id {
            StmtId::Guid(g, flags) => {
                w.write_all(&[0])?;
                w.write_all(g)?;
                w.write_all(&[*flags])
            }
            StmtId::Other(s) => {
                let len = u32::try_from(s.len()).map_err(|_| {
                    std::io::Error::new(std::io::ErrorKind::InvalidData, "statement id too long")
                })?;
                w.write_all(&[1])?;
                w.write_all(&len.to_le_bytes())?;
                w.write_all(s.as_bytes())
            }
            StmtId::Missing => w.write_all(&[2]),
        }
    }
    fn read(r: &mut dyn BufRead, scratch: &mut Vec<u8>) -> std::io::Result<Option<Self>> {
        let mut b = [0u8; 22];
        match r.read_exact(&mut b) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
            Err(e) => return Err(e),
        }
        let bad =
            |what: &str| std::io::Error::new(std::io::ErrorKind::InvalidData, what.to_string());
        let [s @ .., _, _, _, _, _, _, _, _, _, _, _, _, _, _] = b;
        let [_, _, _, _, _, _, _, _, o @ .., _, _, _, _, _, _] = b;
        let [_, _, _, _, _, _, _, _, _, _, _, _, _, _, _, _, p @ .., rank, tag] = b;
        let rank = match rank {
            0 => Rank::Deprecated,
            1 => Rank::Normal,
            2 => Rank::Preferred,
            _ => return Err(bad("bad rank in a spill run")),
        };
        let id = match tag {
            0 => {
                let mut g = [0u8; 17];
                r.read_exact(&mut g)?;
                let [guid @ .., flags] = g;
                StmtId::Guid(guid, flags)
            }
            1 => {
                let mut l = [0u8; 4];
                r.read_exact(&mut l)?;
                let len = usize::try_from(u32::from_le_bytes(l)).unwrap_or(usize::MAX);
                scratch.clear();
                scratch.resize(len, 0);
                r.read_exact(scratch)?;
                let s = std::str::from_utf8(scratch).map_err(|_| bad("bad id in a spill run"))?;
                StmtId::Other(s.into())
            }
            2 => StmtId::Missing,
            _ => return Err(bad("bad id tag in a spill run")),
        };
        Ok(Some(Cand {
            s: u64::from_le_bytes(s),
            o: u64::from_le_bytes(o),
            p: u32::from_le_bytes(p),
            rank,
            id,
        }))
    }
}

/// The spill bytes of one kind of record: written in all (intermediate merges included), on disk now, and the
/// most that were on disk at once.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct KindBytes {
    pub total: u64,
    #[serde(skip)]
    pub now: u64,
    pub peak: u64,
}

/// The spill folder of a stage: created at the first spill, removed with everything in it when dropped.
pub struct SpillDir {
    base: PathBuf,
    dir: Option<tempfile::TempDir>,
    next: u64,
    /// Bytes written to runs, and runs written (intermediate merges included).
    pub bytes: u64,
    pub runs: u64,
    /// Bytes of runs on disk now (runs an intermediate merge consumed are deleted), and the most at once.
    pub on_disk: u64,
    pub peak: u64,
    /// The same per kind (`candidates`, `pairs`, …).
    pub kinds: std::collections::BTreeMap<&'static str, KindBytes>,
    /// Most bytes the runs may take on disk at once (`--spill-budget`; `None`: no budget), and the setting as
    /// given, for the message.
    budget: Option<u64>,
    budget_text: String,
}

impl SpillDir {
    /// A spill folder to be made in `base` (the run directory) when first needed, without a disk budget.
    pub fn new(base: &Path) -> SpillDir {
        SpillDir {
            base: base.to_path_buf(),
            dir: None,
            next: 0,
            bytes: 0,
            runs: 0,
            on_disk: 0,
            peak: 0,
            kinds: std::collections::BTreeMap::new(),
            budget: None,
            budget_text: String::new(),
        }
    }

    /// At most `budget` bytes of runs on disk at once (`--spill-budget`, given as `text`): a run that would
    /// pass it fails the stage with exit code 2 (the folder goes with everything in it).
    pub fn with_budget(mut self, budget: Option<u64>, text: &str) -> SpillDir {
        self.budget = budget;
        self.budget_text = text.to_string();
        self
    }

    /// The budget, when there is one.
    pub fn budget(&self) -> Option<u64> {
        self.budget
    }

    fn freed(&mut self, kind: &'static str, bytes: u64) {
        self.on_disk = self.on_disk.saturating_sub(bytes);
        let k = self.kinds.entry(kind).or_default();
        k.now = k.now.saturating_sub(bytes);
    }

    /// The folder, when one was made.
    pub fn path(&self) -> Option<&Path> {
        self.dir.as_ref().map(tempfile::TempDir::path)
    }

    fn new_file(&mut self, kind: &str) -> Result<(PathBuf, BufWriter<std::fs::File>)> {
        if self.dir.is_none() {
            remove_stale(&self.base);
            let d = tempfile::Builder::new()
                .prefix(&format!(".{DIR_PREFIX}."))
                .suffix(&format!(
                    "{}{}",
                    crate::store::TEMP_MARK,
                    std::process::id()
                ))
                .rand_bytes(10)
                .tempdir_in(&self.base)
                .at(&self.base)?;
            self.dir = Some(d);
        }
        let dir = self.path().unwrap_or(&self.base).to_path_buf();
        self.next = self.next.saturating_add(1);
        let path = dir.join(format!("{kind}-{:06}.run", self.next));
        let f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .at(&path)?;
        self.runs = self.runs.saturating_add(1);
        Ok((path, BufWriter::with_capacity(WRITE_BUF, f)))
    }

    /// Write `records` (sorted) as a run; returns its path and size. Past the budget: exit code 2 naming it
    /// and `kind` (the half-written run goes with the folder).
    fn write_run<T: Record>(
        &mut self,
        kind: &'static str,
        records: impl Iterator<Item = Result<T>>,
    ) -> Result<(PathBuf, u64)> {
        let (path, mut w) = self.new_file(kind)?;
        let room = self
            .budget
            .map_or(u64::MAX, |b| b.saturating_sub(self.on_disk));
        let mut n = CountingWriter {
            inner: &mut w,
            bytes: 0,
            room,
            refused: false,
        };
        for r in records {
            let r = r?;
            if let Err(e) = r.write(&mut n) {
                if n.refused {
                    return Err(self.over_budget(kind));
                }
                return Err(e).at(&path);
            }
        }
        let bytes = n.bytes;
        let f = w.into_inner().map_err(|e| e.into_error()).at(&path)?;
        f.sync_data().at(&path)?;
        self.bytes = self.bytes.saturating_add(bytes);
        self.on_disk = self.on_disk.saturating_add(bytes);
        self.peak = self.peak.max(self.on_disk);
        let k = self.kinds.entry(kind).or_default();
        k.total = k.total.saturating_add(bytes);
        k.now = k.now.saturating_add(bytes);
        k.peak = k.peak.max(k.now);
        crate::store::crash_point("extract-spill");
        Ok((path, bytes))
    }

    fn over_budget(&self, kind: &str) -> Error {
        let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
        let by: Vec<String> = self
            .kinds
            .iter()
            .filter(|(_, k)| k.now > 0)
            .map(|(n, k)| format!("{n} {:.1} MiB", mib(k.now)))
            .collect();
        Error::Config(format!(
            "--spill-budget {} ({:.1} MiB): the spilled {kind} outgrew it: the next run of {kind} would pass \
             it, with {:.1} MiB of runs already on disk ({}); the spill folder was removed and no artifact \
             written. Give a larger --spill-budget (or `none`) or a larger --memory-limit (docs/extract.md, \
             what a full dump needs)",
            self.budget_text,
            mib(self.budget.unwrap_or(0)),
            mib(self.on_disk),
            if by.is_empty() {
                "none yet".to_string()
            } else {
                by.join(", ")
            }
        ))
    }
}

/// Remove the spill folders that killed runs left in `base` (their pid no longer running).
fn remove_stale(base: &Path) {
    let Ok(entries) = std::fs::read_dir(base) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        let Some((target, pid)) = name.to_str().and_then(crate::store::parse_temp_name) else {
            continue;
        };
        let alive = pid == std::process::id() || Path::new("/proc").join(pid.to_string()).exists();
        let is_dir = std::fs::symlink_metadata(e.path()).is_ok_and(|m| m.file_type().is_dir());
        if target == DIR_PREFIX && !alive && is_dir {
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// Counts what goes through, and refuses (`refused`) what would pass `room` bytes.
struct CountingWriter<'a, W: Write> {
    inner: &'a mut W,
    bytes: u64,
    room: u64,
    refused: bool,
}

impl<W: Write> Write for CountingWriter<'_, W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.bytes.saturating_add(buf.len() as u64) > self.room {
            self.refused = true;
            return Err(std::io::Error::other("past the spill budget"));
        }
        let n = self.inner.write(buf)?;
        self.bytes = self.bytes.saturating_add(n as u64);
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// The records of one kind: sorted runs on disk (in input order) and the records since the last spill.
pub struct Runs<T> {
    kind: &'static str,
    /// The runs on disk and their sizes.
    files: Vec<(PathBuf, u64)>,
    held: Vec<T>,
    held_mem: usize,
    /// Records pushed.
    pub pushed: u64,
}

impl<T: Record> Runs<T> {
    pub fn new(kind: &'static str) -> Runs<T> {
        Runs {
            kind,
            files: Vec::new(),
            held: Vec::new(),
            held_mem: 0,
            pushed: 0,
        }
    }

    pub fn push(&mut self, r: T) {
        self.held_mem = self.held_mem.saturating_add(r.mem());
        self.pushed = self.pushed.saturating_add(1);
        self.held.push(r);
    }

    /// Push every record of `v` (left empty), in order: what the stage thread does with each chunk's records,
    /// so one move of the whole vector rather than a push per record.
    pub fn append(&mut self, v: &mut Vec<T>) {
        let mem = v.iter().map(Record::mem).fold(0, usize::saturating_add);
        self.held_mem = self.held_mem.saturating_add(mem);
        self.pushed = self.pushed.saturating_add(v.len() as u64);
        self.held.append(v);
    }

    /// Bytes the held records take (their slots in the vector included).
    pub fn mem(&self) -> usize {
        self.held_mem.saturating_add(
            self.held
                .capacity()
                .saturating_sub(self.held.len())
                .saturating_mul(std::mem::size_of::<T>()),
        )
    }

    /// Records held (not yet spilled).
    pub fn held_len(&self) -> usize {
        self.held.len()
    }

    /// Rework the held records in place (`f` may drop, sort and deduplicate them: what was pushed and is
    /// gone was never needed), then count them again and give back the slots they freed.
    pub fn rework(&mut self, f: impl FnOnce(&mut Vec<T>)) {
        f(&mut self.held);
        self.held.shrink_to_fit();
        self.held_mem = self
            .held
            .iter()
            .map(Record::mem)
            .fold(0, usize::saturating_add);
    }

    /// Sort the held records, write them as a run and free them.
    pub fn spill(&mut self, dir: &mut SpillDir) -> Result<()> {
        if self.held.is_empty() {
            return Ok(());
        }
        let mut held = std::mem::take(&mut self.held);
        self.held_mem = 0;
        T::sort(&mut held);
        let run = dir.write_run(self.kind, dedup(held.into_iter().map(Ok)))?;
        self.files.push(run);
        Ok(())
    }

    /// Runs on disk.
    pub fn spilled_runs(&self) -> usize {
        self.files.len()
    }

    /// The whole kind as one sorted, deduplicated stream: the runs merged (first [`FAN_IN`] at a time while
    /// there are more), then the held records as the last run. Intermediate merges write to `dir`.
    pub fn into_stream(mut self, dir: &mut SpillDir) -> Result<Merge<T>> {
        while self.files.len() > FAN_IN {
            let mut next = Vec::new();
            let files = std::mem::take(&mut self.files);
            for group in files.chunks(FAN_IN) {
                if let [one] = group {
                    next.push(one.clone());
                    continue;
                }
                let paths: Vec<PathBuf> = group.iter().map(|f| f.0.clone()).collect();
                let m = Merge::<T>::open(&paths, Vec::new())?;
                let run = dir.write_run(self.kind, m)?;
                for (f, bytes) in group {
                    let _ = std::fs::remove_file(f);
                    dir.freed(self.kind, *bytes);
                }
                next.push(run);
            }
            self.files = next;
        }
        let mut held = std::mem::take(&mut self.held);
        T::sort(&mut held);
        let paths: Vec<PathBuf> = self.files.iter().map(|f| f.0.clone()).collect();
        Merge::open(&paths, held)
    }
}

/// Drop the records equal (by [`Record::same`]) to the one before them.
fn dedup<T: Record>(it: impl Iterator<Item = Result<T>>) -> impl Iterator<Item = Result<T>> {
    let mut it = it.peekable();
    std::iter::from_fn(move || {
        let cur = match it.next()? {
            Ok(c) => c,
            Err(e) => return Some(Err(e)),
        };
        while let Some(Ok(n)) = it.peek() {
            if T::same(&cur, n) {
                it.next();
            } else {
                break;
            }
        }
        Some(Ok(cur))
    })
}

struct Head<T> {
    rec: T,
    src: usize,
}

impl<T: Record> PartialEq for Head<T> {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == Ordering::Equal
    }
}
impl<T: Record> Eq for Head<T> {}
impl<T: Record> PartialOrd for Head<T> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<T: Record> Ord for Head<T> {
    /// Reversed (the heap pops its largest): smallest record first, ties by source (input order).
    fn cmp(&self, o: &Self) -> Ordering {
        T::order(&o.rec, &self.rec).then(o.src.cmp(&self.src))
    }
}

enum Source<T> {
    File(BufReader<std::fs::File>, PathBuf),
    Held(std::vec::IntoIter<T>),
}

/// A k-way merge of sorted runs into one sorted stream without duplicates (the first of equal records, in
/// source order, is kept). Yields `Err` when a run cannot be read.
pub struct Merge<T> {
    sources: Vec<Source<T>>,
    heap: BinaryHeap<Head<T>>,
    scratch: Vec<u8>,
    last: Option<T>,
    started: bool,
    failed: bool,
    /// Records dropped as duplicates (within the merge; runs were deduplicated when written).
    pub dropped: u64,
}

impl<T: Record> Merge<T> {
    fn open(files: &[PathBuf], held: Vec<T>) -> Result<Merge<T>> {
        let mut sources = Vec::new();
        for f in files {
            let file = std::fs::File::open(f).at(f)?;
            sources.push(Source::File(
                BufReader::with_capacity(READ_BUF, file),
                f.clone(),
            ));
        }
        sources.push(Source::Held(held.into_iter()));
        Ok(Merge {
            sources,
            heap: BinaryHeap::new(),
            scratch: Vec::new(),
            last: None,
            started: false,
            failed: false,
            dropped: 0,
        })
    }

    /// The source number of the record most recently returned (for callers that merge two kinds).
    fn pull(&mut self, src: usize) -> Result<()> {
        let rec = match self.sources.get_mut(src) {
            Some(Source::File(r, path)) => T::read(r, &mut self.scratch).at(&*path)?,
            Some(Source::Held(it)) => it.next(),
            None => None,
        };
        if let Some(rec) = rec {
            self.heap.push(Head { rec, src });
        }
        Ok(())
    }

    fn next_raw(&mut self) -> Result<Option<Head<T>>> {
        // Nothing spilled: the held records alone, already sorted (no heap to go through; the stage thread
        // feeds the join's workers from here).
        if let [Source::Held(it)] = self.sources.as_mut_slice() {
            return Ok(it.next().map(|rec| Head { rec, src: 0 }));
        }
        if !self.started {
            self.started = true;
            for s in 0..self.sources.len() {
                self.pull(s)?;
            }
        }
        let Some(h) = self.heap.pop() else {
            return Ok(None);
        };
        self.pull(h.src)?;
        Ok(Some(h))
    }

    fn next_rec(&mut self) -> Result<Option<T>> {
        loop {
            let Some(h) = self.next_raw()? else {
                return Ok(self.last.take());
            };
            match self.last.take() {
                None => self.last = Some(h.rec),
                Some(prev) if T::same(&prev, &h.rec) => {
                    self.dropped = self.dropped.saturating_add(1);
                    self.last = Some(prev);
                }
                Some(prev) => {
                    self.last = Some(h.rec);
                    return Ok(Some(prev));
                }
            }
        }
    }
}

impl<T: Record> Iterator for Merge<T> {
    type Item = Result<T>;
    fn next(&mut self) -> Option<Result<T>> {
        if self.failed {
            return None;
        }
        match self.next_rec() {
            Ok(r) => r.map(Ok),
            Err(e) => {
                self.failed = true;
                Some(Err(e))
            }
        }
    }
}

/// Hand the allocator's free pages back to the system (glibc: `malloc_trim(0)`, every arena; elsewhere
/// nothing). Called after a spill and when a writer is finished: the records freed there were allocated by the
/// reading threads, in their own glibc arenas, which the writers (on the stage's thread, in the main arena)
/// would not reuse, so without it the peak RSS would hold both. Takes a few milliseconds.
pub fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free memory to the system; it does not touch live allocations.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// `--memory-limit SIZE` (`memory_limit`): bytes with an optional suffix K, M, G or T (powers of 1024; `64M`,
/// `8G`, `1.5G`, see [`ByteSize`]), `auto` (see [`auto_limit`]) or `none` (no limit). Parsed once, by clap or
/// serde; below [`MIN_LIMIT`] it is refused there (exit code 2 naming it). Keeps the text as given for messages.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct MemoryLimit {
    text: String,
    setting: SizeSetting,
}

impl MemoryLimit {
    /// `auto`, the default.
    pub fn auto() -> MemoryLimit {
        MemoryLimit {
            text: "auto".into(),
            setting: SizeSetting::Auto,
        }
    }

    /// The limit in bytes (`auto` worked out now, from the machine's memory); `None`: no limit.
    pub fn bytes(&self) -> Option<u64> {
        match self.setting {
            SizeSetting::None => None,
            SizeSetting::Auto => Some(auto_limit()),
            SizeSetting::Size(ByteSize(b)) => Some(b),
        }
    }
}

impl FromStr for MemoryLimit {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<MemoryLimit, String> {
        let setting: SizeSetting = s.parse().map_err(|_| {
            format!(
                "--memory-limit `{s}`: expected a size such as 64M, 8G or 1.5G (K, M, G, T: powers of 1024), \
                 `auto` or `none`"
            )
        })?;
        if let SizeSetting::Size(ByteSize(bytes)) = setting {
            if bytes < MIN_LIMIT {
                return Err(format!(
                    "--memory-limit {s}: below the smallest workable limit, {} MiB (the merge's read buffers, {} \
                     KiB, plus room for the records); use at least {}M",
                    MIN_LIMIT >> 20,
                    MERGE_RESERVE >> 10,
                    MIN_LIMIT >> 20
                ));
            }
        }
        Ok(MemoryLimit {
            text: s.to_string(),
            setting,
        })
    }
}

/// `--spill-budget SIZE` (`spill_budget`): the most bytes the spill runs may take on disk at once — a size
/// (`64G`, `500M`, any number of bytes), `none` (no budget) or `auto` (the default, [`auto_budget`] of the
/// folder the runs go to). Parsed once, by clap or serde. Keeps the text as given for messages.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "String", into = "String")]
pub struct SpillBudget {
    text: String,
    setting: SizeSetting,
}

impl SpillBudget {
    /// `auto`, the default.
    pub fn auto() -> SpillBudget {
        SpillBudget {
            text: "auto".into(),
            setting: SizeSetting::Auto,
        }
    }

    /// The budget in bytes for runs written under `base` (`auto` worked out now, from its free space); `None`:
    /// no budget.
    pub fn bytes(&self, base: &Path) -> Option<u64> {
        match self.setting {
            SizeSetting::None => None,
            SizeSetting::Auto => auto_budget(base),
            SizeSetting::Size(ByteSize(b)) => Some(b),
        }
    }
}

impl FromStr for SpillBudget {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<SpillBudget, String> {
        let setting = s.parse().map_err(|_| {
            format!(
                "--spill-budget `{s}`: expected a size such as 500M, 64G or 1.5T (K, M, G, T: powers of 1024), \
                 `auto` or `none`"
            )
        })?;
        Ok(SpillBudget {
            text: s.to_string(),
            setting,
        })
    }
}

macro_rules! text_setting {
    ($t:ty) => {
        impl std::fmt::Display for $t {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.text)
            }
        }
        impl TryFrom<String> for $t {
            type Error = String;
            fn try_from(s: String) -> std::result::Result<$t, String> {
                s.parse()
            }
        }
        impl From<$t> for String {
            fn from(x: $t) -> String {
                x.text
            }
        }
    };
}
text_setting!(MemoryLimit);
text_setting!(SpillBudget);

/// The default spill budget (`auto`): half the space free to this user on the filesystem of `base` (its
/// nearest existing folder) when the stage starts. Half, because the artifacts are written to the same folder
/// after the runs, and because a disk that fills up should be met as a budget named in a message (exit 2)
/// rather than as a failed write (exit 4). `None` (no budget) when the free space cannot be read.
pub fn auto_budget(base: &Path) -> Option<u64> {
    let mut dir = Some(base);
    while let Some(d) = dir {
        if let Some(free) = free_bytes(d) {
            return Some(free / 2);
        }
        dir = d.parent();
    }
    None
}

/// Bytes free to an unprivileged user on the filesystem holding `path` (`statvfs`), `None` when unknown.
fn free_bytes(path: &Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    // SAFETY: `c` is a valid NUL-terminated path and `st` a zeroed struct statvfs that the call fills in.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: as above; statvfs writes only into `st`.
    let r = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    let (blocks, size): (u64, u64) = (st.f_bavail, st.f_frsize);
    (r == 0).then(|| blocks.saturating_mul(size))
}

/// The default limit (`auto`): half of the memory this process may use — the machine's `MemTotal`, or the
/// cgroup's `memory.max` when that is lower (a container, a Slurm job) — at least [`MIN_LIMIT`]. Half, because
/// the rest of the peak (reading buffers, parsed chunks in flight, Parquet writers) and the page cache need
/// room too.
pub fn auto_limit() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kb| kb.saturating_mul(1024));
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max")
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok());
    let avail = match (total, cgroup) {
        (Some(t), Some(c)) => t.min(c),
        (Some(t), None) => t,
        (None, Some(c)) => c,
        (None, None) => 8 << 30,
    };
    (avail / 2).max(MIN_LIMIT)
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use crate::core::ids::{EntityId, Qid};

    fn cand(s: u64, p: u32, o: u64, id: &str) -> Cand {
        Cand {
            s,
            o,
            p,
            rank: Rank::Normal,
            id: StmtId::encode(s, (!id.is_empty()).then_some(id)),
        }
    }

    #[test]
    fn limits_and_budgets_are_sizes_auto_or_none() {
        let limit = |s: &str| s.parse::<MemoryLimit>();
        assert_eq!(limit("64M").unwrap().bytes(), Some(64 << 20));
        assert_eq!(limit("8g").unwrap().bytes(), Some(8 << 30));
        assert_eq!(limit("1.5G").unwrap().bytes(), Some(3 << 29));
        assert_eq!(limit("4194304").unwrap().bytes(), Some(4 << 20));
        assert_eq!(limit(" 4096K").unwrap().bytes(), Some(4 << 20));
        assert_eq!(limit(" 4096K").unwrap().to_string(), " 4096K");
        assert!(limit("auto").unwrap().bytes().unwrap() >= MIN_LIMIT);
        assert_eq!(limit("none").unwrap().bytes(), None);
        for bad in ["", "x", "-1G", "1Q", "nanM", "1e30T"] {
            let e = limit(bad).unwrap_err();
            assert_eq!(
                e,
                format!(
                    "--memory-limit `{bad}`: expected a size such as 64M, 8G or 1.5G (K, M, G, T: powers of \
                     1024), `auto` or `none`"
                )
            );
        }
        let e = limit("1M").unwrap_err();
        assert!(
            e.starts_with("--memory-limit 1M: below") && e.ends_with("use at least 4M"),
            "{e}"
        );
        assert_eq!(limit("4M").unwrap().bytes(), Some(MIN_LIMIT));
        let budget = |s: &str| s.parse::<SpillBudget>();
        assert_eq!(budget("1M").unwrap().bytes(Path::new(".")), Some(1 << 20));
        assert_eq!(budget("0").unwrap().bytes(Path::new(".")), Some(0));
        assert_eq!(budget("NONE").unwrap().bytes(Path::new(".")), None);
        assert_eq!(budget("auto").unwrap().to_string(), "auto");
        assert!(budget("lots")
            .unwrap_err()
            .starts_with("--spill-budget `lots`: expected a size"));
    }

    #[test]
    fn candidates_round_trip_through_a_run() {
        let recs = vec![
            cand(1, 2, 3, "Q1$8AB2F3F8-6C97-4B66-8AD4-0123456789AB"),
            cand(1, 2, 4, "weird id"),
            cand(u64::MAX, u32::MAX, u64::MAX, ""),
            Cand {
                rank: Rank::Deprecated,
                ..cand(5, 6, 7, "q5$8ab2f3f8-6c97-4b66-8ad4-0123456789ab")
            },
            Cand {
                rank: Rank::Preferred,
                ..cand(5, 6, 7, "")
            },
        ];
        let mut buf = Vec::new();
        for r in &recs {
            r.write(&mut buf).unwrap();
        }
        let mut rd = &buf[..];
        let mut scratch = Vec::new();
        let mut back = Vec::new();
        while let Some(r) = Cand::read(&mut rd, &mut scratch).unwrap() {
            back.push(r);
        }
        assert_eq!(back, recs);
    }

    fn entity(q: u64, tag: &str) -> EntityRecord {
        EntityRecord {
            id: EntityId::Item(Qid(q)),
            labels: vec![crate::core::records::Label {
                text: tag.into(),
                from_mul: false,
            }],
            descriptions: vec![Some("line\nbreak".into())],
            sitelinks: 1,
            lastrevid: Some(q),
            modified: None,
        }
    }

    /// Push `recs` with a spill every `every` records (0: never); the merged stream.
    fn through<T: Record + Clone>(recs: &[T], every: usize) -> (Vec<T>, usize) {
        let base = tempfile::tempdir().unwrap();
        let mut dir = SpillDir::new(base.path());
        let mut runs = Runs::new("t");
        for (i, r) in recs.iter().enumerate() {
            runs.push(r.clone());
            if every > 0 && (i + 1) % every == 0 {
                runs.spill(&mut dir).unwrap();
            }
        }
        let n = runs.spilled_runs();
        let m = runs.into_stream(&mut dir).unwrap();
        let out: Vec<T> = m.collect::<Result<_>>().unwrap();
        let spill_path = dir.path().map(Path::to_path_buf);
        drop(dir);
        if let Some(p) = spill_path {
            assert!(!p.exists(), "spill folder removed");
        }
        (out, n)
    }

    #[test]
    fn entities_keep_the_first_of_an_id_in_input_order_across_runs() {
        let recs: Vec<EntityRecord> = [(3, "a"), (1, "b"), (3, "c"), (2, "d"), (1, "e"), (3, "f")]
            .iter()
            .map(|&(q, t)| entity(q, t))
            .collect();
        for every in [0, 1, 2, 4] {
            let (out, _) = through(&recs, every);
            let got: Vec<(u64, &str)> = out
                .iter()
                .map(|e| match e.id {
                    EntityId::Item(q) => (q.0, e.labels[0].text.as_str()),
                    EntityId::Property(_) => unreachable!(),
                })
                .collect();
            assert_eq!(got, [(1, "b"), (2, "d"), (3, "a")], "every {every}");
            assert_eq!(out[0].descriptions[0].as_deref(), Some("line\nbreak"));
        }
    }

    proptest::proptest! {
        /// Oracle: sort and dedup of the whole input in memory, whatever the spills and intermediate merges.
        #[test]
        fn the_merged_stream_is_the_sorted_deduplicated_input(
            raw in proptest::collection::vec((0u64..40, 0u32..3, 0u64..5, 0u8..3, 0u8..4), 0..400),
            every in 0usize..50,
        ) {
            let recs: Vec<Cand> = raw.iter().map(|&(s, p, o, rank, id)| Cand {
                rank: [Rank::Deprecated, Rank::Normal, Rank::Preferred][rank as usize],
                ..cand(s, p, o, match id {
                    0 => "",
                    1 => "other",
                    2 => "Q0$8AB2F3F8-6C97-4B66-8AD4-0123456789AB",
                    _ => "zz",
                })
            }).collect();
            let mut want = recs.clone();
            want.sort_unstable_by(Cand::cmp_as_triple);
            want.dedup();
            let (got, runs) = through(&recs, every);
            proptest::prop_assert_eq!(got, want);
            if let Some(n) = recs.len().checked_div(every) {
                proptest::prop_assert_eq!(runs, n);
            }
        }
    }
}
