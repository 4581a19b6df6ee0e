//! `sword extract --shard i/n` and `--join-shards n`: the extract stage past one machine.
//!
//! A shard reads a disjoint share of the dump and writes what its accumulator gathered (entities, properties,
//! candidate statements, counts, bad lines with positions relative to the shard start, …) plus the fragments at
//! its edges — the bytes before its first newline (`head`, when the shard may start inside a line) and after its
//! last one (`tail`) — into `OUT/parts/extract-part-<i>-of-<n>.json.zst`, with a small manifest
//! `extract-part-<i>-of-<n>.manifest.json` (byte range, members, counts, timings, input size + hash, config).
//!
//! The join (the extract stage's `--join-shards`) checks the parts ([`prepare_join`]) and replays them in order
//! through the unchanged accumulator [`Acc`] as one big chunk each ([`replay_parts`]), so the lines that
//! straddle shard boundaries are glued and parsed once and line numbers / byte offsets become absolute; then
//! the extract stage's unchanged join and writers run. The artifacts are byte-identical to an unsharded run of
//! the same dump and config.
//!
//! Shares:
//! - plain JSON: boundary `k` (0 < k < n) is just after the first newline at or after `floor(k·len/n)`
//!   ([`plain_boundaries`]); shard `k` takes the lines starting in `[b_k, b_{k+1})`;
//! - multi-member gzip: shard `k` takes the members whose start lies in `[floor(k·len/n), floor((k+1)·len/n))`;
//!   the first member at or after a boundary is the first candidate start (`gz::Candidates`) from which a valid
//!   member inflates (CRC32 and ISIZE checked) that ends exactly at another candidate or at the end of the file.
//!
//! bzip2, zstd, single-member gzip and stdin cannot be split: exit code 2 with a message suggesting the
//! unsharded run.

#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::core::error::{Error, IoContext, Result};
use crate::core::falsity::Constraint;
use crate::core::ids::Pid;
use crate::core::progress::{self, Progress, Unit};
use crate::core::records::{EntityRecord, PropertyRecord};
use crate::dump::{self, gz, ChunkOut, Format, Joiner, LineChunker, MultiGz, ReadOpts, ReadStats};
use crate::stages::extract::cand::Cand;
use crate::stages::extract::config::Config;
use crate::stages::extract::counts;
use crate::stages::extract::falsity::{self, Pair, Snak};
use crate::stages::extract::keep::{self, absorb_records, Acc, Part, Rules};
use crate::store::manifest::xxh3_hex;
use crate::store::{self, AtomicFile, FileRef, Manifest};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

/// Version of the part file layout (a join refuses parts of another version).
pub const PART_VERSION: u32 = 6;

/// The first 64 KiB of `data` (what the dump-start checks look at).
fn head_of(data: &[u8]) -> &[u8] {
    data.get(..data.len().min(64 << 10)).unwrap_or(data)
}

/// Parse `i/n` (`0 ≤ i < n`).
pub fn parse_spec(s: &str) -> Result<(u32, u32)> {
    let bad = || {
        Error::Config(format!(
            "--shard `{s}`: expected I/N with 0 ≤ I < N, e.g. 0/4"
        ))
    };
    let (a, b) = s.split_once('/').ok_or_else(bad)?;
    let i: u32 = a.trim().parse().map_err(|_| bad())?;
    let n: u32 = b.trim().parse().map_err(|_| bad())?;
    if n == 0 || i >= n {
        return Err(bad());
    }
    Ok((i, n))
}

/// `floor(k·len/n)`.
fn cut(k: u32, n: u32, len: usize) -> usize {
    let at = u128::from(k)
        .saturating_mul(len as u128)
        .checked_div(u128::from(n))
        .unwrap_or(0);
    usize::try_from(at).unwrap_or(len)
}

/// The `n + 1` boundaries of a plain JSON dump: `b_0 = 0`, `b_n = len`, and for `0 < k < n` the position just
/// after the first newline at or after `floor(k·len/n)` (or `len` when there is none). Non-decreasing, so the
/// shares `[b_k, b_{k+1})` are disjoint, cover the data and start at line starts.
pub fn plain_boundaries(data: &[u8], n: u32) -> Vec<usize> {
    let len = data.len();
    let mut b = Vec::with_capacity((n as usize).saturating_add(1));
    b.push(0);
    for k in 1..n {
        let p = cut(k, n, len);
        let at = data
            .get(p..)
            .and_then(|rest| memchr::memchr(b'\n', rest))
            .map_or(len, |i| p.saturating_add(i).saturating_add(1));
        b.push(at);
    }
    b.push(len);
    b
}

/// Whether a complete, valid gzip member starts at `data[at]` and ends exactly at the end of `data` or at a
/// plausible member header.
fn is_member_start(data: &[u8], at: usize) -> bool {
    let Some(input) = data.get(at..) else {
        return false;
    };
    let mut dec = flate2::bufread::GzDecoder::new(input);
    if std::io::copy(&mut dec, &mut std::io::sink()).is_err() {
        return false;
    }
    let end = at.saturating_add(input.len().saturating_sub(dec.get_ref().len()));
    end > at
        && data
            .get(end..)
            .is_some_and(|rest| rest.is_empty() || gz::plausible_header(rest))
}

/// The first true member start at or after `p` (`0` for `p == 0`; `data.len()` when there is none).
pub fn first_member_at_or_after(data: &[u8], p: usize) -> usize {
    if p == 0 {
        return 0;
    }
    if p >= data.len() {
        return data.len();
    }
    gz::Candidates::new(data.get(p..).unwrap_or_default())
        .map(|c| c.saturating_add(p))
        .find(|&c| is_member_start(data, c))
        .unwrap_or(data.len())
}

/// The compressed byte range `[lo, hi)` of shard `i` of `n` in a multi-member gzip file.
pub fn gzip_range(data: &[u8], i: u32, n: u32) -> (usize, usize) {
    let lo = first_member_at_or_after(data, cut(i, n, data.len()));
    let next = i.saturating_add(1);
    let hi = if next >= n {
        data.len()
    } else {
        first_member_at_or_after(data, cut(next, n, data.len()))
    };
    (lo, hi.max(lo))
}

/// The shard-level accumulator: a [`Joiner`] and one [`Part`] with positions relative to the shard start.
struct ShardAcc<'r> {
    rules: &'r Rules,
    joiner: Joiner,
    part: Part,
    head: Option<Vec<u8>>,
    seen_newline: bool,
    len: u64,
    newlines: u64,
    max_bad: u64,
    path: PathBuf,
    /// Properties seen: whether every line of them keeps its distinct-value pairs (`extract::falsity::Known`).
    distinct_known: falsity::Known,
}

impl<'r> ShardAcc<'r> {
    fn new(rules: &'r Rules, max_bad: u64, path: &Path) -> Self {
        ShardAcc {
            rules,
            joiner: Joiner::new(),
            part: Part::default(),
            head: None,
            seen_newline: false,
            len: 0,
            newlines: 0,
            max_bad,
            path: path.to_path_buf(),
            distinct_known: Default::default(),
        }
    }

    fn feed(&mut self, mut c: ChunkOut<Part>) -> Result<()> {
        self.len = self.len.saturating_add(c.len);
        self.newlines = self.newlines.saturating_add(c.newlines);
        if !self.seen_newline {
            // Bytes before the shard's first newline belong to a line that may have started in the previous
            // shard: keep them for the join instead of gluing them here.
            if let Some(h) = c.head.take() {
                self.head.get_or_insert_with(Vec::new).extend_from_slice(&h);
            }
            self.seen_newline = c.has_newline;
        }
        let (base, joined, data) = self.joiner.feed(c);
        // Before its first newline a shard's bytes go to `head`; after it, to the joiner: either may hold one
        // line whole, so both are bounded by max_line_mib.
        let head_too_long = self
            .head
            .as_ref()
            .is_some_and(|h| h.len() as u64 > self.rules.max_line);
        let held = head_too_long
            .then_some((0, 0))
            .or_else(|| keep::overlong_pending(self.rules, &self.joiner));
        if let Some((line, offset)) = held {
            return Err(self.overlong(line, offset, false));
        }
        if let Some(j) = joined {
            let p = line_part(self.rules, &j.bytes);
            self.absorb(p, j.line, j.offset)?;
        }
        self.absorb(data, base.line, base.offset)
    }

    /// The error for a line longer than `max_line_mib` (0-based `line` and `offset` within the shard).
    fn overlong(&self, line: u64, offset: u64, ended: bool) -> Error {
        Error::bad_input(
            &self.path,
            format!(
                "line {} of this shard (at byte offset {offset} of its decompressed data): {}",
                line.saturating_add(1),
                keep::overlong_message(self.rules, ended)
            ),
        )
    }

    fn absorb(&mut self, p: Part, base_line: u64, base_offset: u64) -> Result<()> {
        if let Some((line, offset)) = p.overlong_at(base_line, base_offset) {
            return Err(self.overlong(line, offset, true));
        }
        absorb_records!(self.part, self.distinct_known, p);
        // The join replays the part through its own accumulator, which learns the verdicts again.
        keep::append_records(&mut self.part.distinct_lines, p.distinct_lines);
        let s = &mut self.part;
        s.bad
            .append(p.bad, base_line, base_offset, self.rules.bad_keep);
        if s.bad.total > self.max_bad {
            return Err(Error::bad_input(
                &self.path,
                format!(
                    "more than {} malformed lines in this shard alone (--max-bad-lines)",
                    self.max_bad
                ),
            ));
        }
        Ok(())
    }

    /// The part: (accumulated data, head, tail, decompressed length, newlines).
    fn finish(self) -> (Part, Option<Vec<u8>>, Vec<u8>, u64, u64) {
        let tail = self.joiner.finish().map(|j| j.bytes).unwrap_or_default();
        (self.part, self.head, tail, self.len, self.newlines)
    }
}

fn line_part(rules: &Rules, bytes: &[u8]) -> Part {
    let mut part = Part::default();
    let mut scratch = Vec::new();
    let mut buffers = simd_json::Buffers::new(bytes.len().max(16));
    keep::handle_line(rules, &mut part, &mut scratch, &mut buffers, 0, 0, bytes);
    part
}

/// The serialised content of one part.
#[derive(Serialize, Deserialize)]
struct PartData {
    version: u32,
    len: u64,
    newlines: u64,
    head: Option<Vec<u8>>,
    tail: Vec<u8>,
    entities: Vec<EntityRecord>,
    properties: Vec<PropertyRecord>,
    candidates: Vec<Cand>,
    seed_other: Vec<Cand>,
    snaks: Vec<Snak>,
    pairs: Vec<Pair>,
    constraints: Vec<Constraint>,
    /// Per property line of the shard, in order: its number and whether it keeps its distinct-value pairs
    /// (layout 6).
    distinct_lines: Vec<(u32, bool)>,
    unlabelled_by_prop: Vec<(u64, u64)>,
    /// The Q-number of every item line of the shard (layout 4).
    items: Vec<u64>,
    counts: BTreeMap<String, u64>,
    other_types: BTreeMap<String, u64>,
    /// The first malformed lines: (line, offset) relative to the shard start, kind, message.
    bad: Vec<(u64, u64, String, String)>,
    /// Malformed lines in the shard (kept in `bad` or not), in total and by kind.
    bad_total: u64,
    bad_by_kind: BTreeMap<String, u64>,
    max_modified: Option<String>,
}

/// The manifest of one part (`extract-part-<i>-of-<n>.manifest.json`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct PartManifest {
    pub version: u32,
    pub shard: u32,
    pub shards: u32,
    pub crate_version: String,
    pub format: Format,
    /// The dump: its path and size (not its hash: a shard reads only its range, and hashing the whole dump made
    /// every shard read all of it; the join hashes it once and checks `range_xxh3`).
    pub input: FileRef,
    /// xxh3-128 (32 hex digits) of the dump's bytes in `range`, the bytes this part was made from.
    pub range_xxh3: String,
    /// The extract config, without the fields that do not change the outputs (`chunk_kib`, `parallel_gzip`).
    pub config: serde_json::Value,
    /// Compressed (gzip) or plain byte range `[start, end)` of the dump read by this shard.
    pub range: [u64; 2],
    /// gzip members in the range (gzip only).
    pub members: Option<u64>,
    /// Decompressed bytes and newlines in the range.
    pub json_bytes: u64,
    pub newlines: u64,
    pub counts: BTreeMap<String, u64>,
    pub timings: BTreeMap<String, f64>,
    /// The data file (name relative to `parts/`, size, hash).
    pub data: FileRef,
}

/// Directory of the parts in a run directory.
pub fn parts_dir(out: &Path) -> PathBuf {
    out.join("parts")
}

/// File names of part `i` of `n`: (data, manifest).
pub fn part_names(i: u32, n: u32) -> (String, String) {
    (
        format!("extract-part-{i}-of-{n}.json.zst"),
        format!("extract-part-{i}-of-{n}.manifest.json"),
    )
}

fn config_key(cfg: &Config) -> serde_json::Value {
    let mut v = serde_json::to_value(cfg).expect("config serialises");
    if let Some(o) = v.as_object_mut() {
        o.remove("chunk_kib");
        o.remove("parallel_gzip");
        o.remove("parallel_bzip2");
    }
    v
}

fn unsplittable(path: &Path, what: &str) -> Error {
    Error::bad_input(
        path,
        format!(
            "{what} cannot be split into shards (only plain JSON and multi-member gzip can); \
             run `sword extract` without --shard"
        ),
    )
}

/// `sword extract --shard i/n`: read share `i` of `n` of `dump` and write its part into `out/parts/`.
pub fn run_shard(dump: &Path, out: &Path, cfg: &Config, i: u32, n: u32) -> Result<PartManifest> {
    let t0 = Instant::now();
    if i >= n {
        return Err(Error::Config(format!("--shard {i}/{n}: need 0 ≤ i < n")));
    }
    if dump == Path::new("-") {
        return Err(unsplittable(dump, "stdin"));
    }
    let rules = Rules::new(cfg)?;
    let dir = parts_dir(out);
    store::ensure_dir(&dir)?;
    // Only this shard's leftovers: other shards may be writing into the same (shared) directory right now, from
    // other machines whose process ids mean nothing here.
    let own = format!("extract-part-{i}-of-{n}.");
    for e in std::fs::read_dir(&dir).at(&dir)? {
        let e = e.at(&dir)?;
        let name = e.file_name().to_string_lossy().into_owned();
        let temp_of = store::parse_temp_name(&name).map(|(target, _)| target);
        if temp_of.is_some_and(|t| t.starts_with(&own)) && e.path().is_file() {
            std::fs::remove_file(e.path()).at(e.path())?;
        }
    }
    let file = std::fs::File::open(dump).at(dump)?;
    let len = file.metadata().at(dump)?.len();
    let mut first = [0u8; 4];
    let k = (&file).take(4).read(&mut first).at(dump)?;
    let format = Format::sniff(first.get(..k).unwrap_or_default());
    match format {
        Format::Bzip2 => return Err(unsplittable(dump, "a bzip2 dump")),
        Format::Zstd => return Err(unsplittable(dump, "a zstd dump")),
        Format::Plain | Format::Gzip => {}
    }
    let map: Option<memmap2::Mmap> = if len == 0 {
        None
    } else {
        // SAFETY: read-only map; a dump changed under us gives wrong data, never UB in this safe code.
        Some(unsafe { memmap2::Mmap::map(&file) }.at(dump)?)
    };
    let data: &[u8] = map.as_deref().unwrap_or(&[]);
    if data.is_empty() {
        return Err(dump::start::empty_file(dump));
    }
    if format == Format::Plain {
        dump::start::check_start(dump, format, head_of(data))?;
    }
    if format == Format::Gzip && gz::Candidates::new(data).take(2).count() < 2 {
        return Err(unsplittable(dump, "a single-member gzip dump"));
    }
    let input = FileRef::unhashed(dump, len);
    let opts = cfg.read_opts(crate::stages::contract::pool_threads());
    let (lo, hi) = match format {
        Format::Plain => {
            let b = plain_boundaries(data, n);
            let at = |k: u32| b.get(k as usize).copied().unwrap_or(data.len());
            (at(i), at(i.saturating_add(1)))
        }
        _ => gzip_range(data, i, n),
    };
    let slice = data.get(lo..hi).unwrap_or_default();
    // The bytes this part is made from, for the join to check against the dump it hashes once: read from the
    // file, not the mapping (whose pages would stay in this process's resident set until the reading releases
    // them), which leaves them in the page cache for the reading below.
    let th = Instant::now();
    let range_xxh3 = hash_range(dump, &file, lo as u64, hi as u64)?;
    let t_hash = th.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let progress = Progress::new(
        &format!("extract shard {i}/{n}"),
        Some(slice.len() as u64),
        Unit::Bytes,
    );
    let mut acc = ShardAcc::new(&rules, cfg.max_bad_lines, dump);
    let work = |bytes: &[u8], s: bool| keep::work_chunk(&rules, bytes, s);
    let mut members = None;
    let mut truncated = false;
    {
        let mut sink = |c: ChunkOut<Part>| acc.feed(c);
        if let Some(map) = map.as_ref().filter(|_| !slice.is_empty()) {
            if format == Format::Plain {
                dump::read_mapped(map, lo..hi, &opts, &work, &mut sink, &progress)?;
            } else {
                let par = if opts.parallel_gzip {
                    dump::gz_parallel(map, lo..hi, &opts, &work, &mut sink, &progress, dump, None)?
                } else {
                    None
                };
                let (m, cut) = match par {
                    Some(r) => (r.members, r.truncated),
                    None => read_members_sequential(slice, lo, &opts, &work, &mut sink, dump)?,
                };
                members = Some(m);
                truncated = cut;
            }
        } else if format == Format::Gzip {
            members = Some(0);
        }
    }
    if truncated {
        if !cfg.allow_truncated {
            return Err(Error::bad_input(
                dump,
                format!(
                    "the gzip stream ends early: the file stops at byte {len} inside a gzip member of shard \
                     {i}/{n}; the file is incomplete (an interrupted download or copy): download it again, or \
                     pass --allow-truncated to keep what was decoded (the run is then marked incomplete)"
                ),
            ));
        }
        acc.part.counts.add("truncated_stream", 1);
    }
    progress.finish();
    let t_read = t1.elapsed().as_secs_f64();
    let (part, head, tail, json_bytes, newlines) = acc.finish();
    let mut counts: BTreeMap<String, u64> = part
        .counts
        .map
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    counts.insert("entities_kept".into(), part.entities.len() as u64);
    counts.insert("candidate_statements".into(), part.candidates.len() as u64);
    counts.insert("bad_lines".into(), part.bad.total);
    let pd = PartData {
        version: PART_VERSION,
        len: json_bytes,
        newlines,
        head,
        tail,
        entities: part.entities,
        properties: part.properties,
        candidates: part.candidates,
        seed_other: part.seed_other,
        snaks: part.snaks,
        pairs: part.pairs,
        constraints: part.constraints,
        distinct_lines: part.distinct_lines,
        unlabelled_by_prop: {
            let mut v: Vec<(u64, u64)> = part
                .unlabelled_by_prop
                .into_iter()
                .map(|(p, c)| (p.0, c))
                .collect();
            v.sort_unstable();
            v
        },
        items: part.items,
        counts: part
            .counts
            .map
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        other_types: part.counts.other_types,
        bad: part
            .bad
            .first
            .into_iter()
            .map(|(l, o, k, m)| (l, o, k.to_string(), m))
            .collect(),
        bad_total: part.bad.total,
        bad_by_kind: part
            .bad
            .by_kind
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect(),
        max_modified: part.max_modified,
    };
    let t2 = Instant::now();
    let (data_name, manifest_name) = part_names(i, n);
    let data_path = dir.join(&data_name);
    let f = AtomicFile::create(&data_path)?;
    let mut enc = zstd::Encoder::new(f, 3).at(&data_path)?;
    serde_json::to_writer(&mut enc, &pd).map_err(|e| Error::io(&data_path, e.into()))?;
    let f = enc.finish().at(&data_path)?;
    f.commit()?;
    drop(pd);
    let mut data_ref = FileRef::of(&data_path)?;
    data_ref.path = data_name;
    let mut timings = BTreeMap::new();
    timings.insert("hash_input".into(), t_hash);
    timings.insert("read_parse".into(), t_read);
    timings.insert("write".into(), t2.elapsed().as_secs_f64());
    timings.insert("total".into(), t0.elapsed().as_secs_f64());
    let pm = PartManifest {
        version: PART_VERSION,
        shard: i,
        shards: n,
        crate_version: store::CRATE_VERSION.to_string(),
        format,
        input,
        range_xxh3,
        config: config_key(cfg),
        range: [lo as u64, hi as u64],
        members,
        json_bytes,
        newlines,
        counts,
        timings,
        data: data_ref,
    };
    let json = serde_json::to_vec_pretty(&pm).expect("part manifest serialises");
    store::write_atomic(dir.join(&manifest_name), |w| {
        std::io::Write::write_all(w, &json)?;
        std::io::Write::write_all(w, b"\n")
    })?;
    progress::log(format!(
        "extract shard {i}/{n}: bytes [{lo}, {hi}) of {}, {json_bytes} bytes of JSON, {} entities kept → {}",
        dump.display(),
        pm.counts.get("entities_kept").copied().unwrap_or(0),
        dir.join(&manifest_name).display()
    ));
    Ok(pm)
}

/// Inflate the members of `slice` one after the other (one member, or parallel inflate switched off). The
/// first chunk is framed as if it started inside a line, like every member in the parallel path. Returns the
/// members and whether the data ends inside the last one (what it decoded is passed on).
fn read_members_sequential(
    slice: &[u8],
    lo: usize,
    opts: &ReadOpts,
    work: &dump::Work<'_, Part>,
    sink: &mut dyn FnMut(ChunkOut<Part>) -> Result<()>,
    path: &Path,
) -> Result<(u64, bool)> {
    let dec = MultiGz::new(slice);
    let members = dec.members();
    let mut chunker = LineChunker::new(dec, opts.chunk_size);
    let mut at_line_start = false;
    let mut first = lo == 0;
    let mut truncated = false;
    loop {
        let c = match chunker.next_chunk() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                truncated = true;
                Some(chunker.take_pending()).filter(|r| !r.is_empty())
            }
            Err(e) => {
                return Err(Error::bad_input(
                    path,
                    format!("gzip members from byte offset {lo}: {e}; the file is damaged, download it again"),
                ))
            }
        };
        let Some(c) = c else { break };
        if std::mem::take(&mut first) {
            dump::start::check_start(path, Format::Gzip, head_of(&c))?;
        }
        let next = c.last() == Some(&b'\n');
        sink(work(&c, at_line_start))?;
        at_line_start = next;
        if truncated {
            break;
        }
    }
    Ok((
        members.load(std::sync::atomic::Ordering::Relaxed),
        truncated,
    ))
}

/// Distinct count keys and bad-line kinds that the parts of one process may bring, at most (the code writes a
/// few dozen; more means the part files were not written by sword).
const INTERN_MAX: usize = 4096;

/// Intern a count key or bad-line kind read from a part (the accumulator keys are `&'static str`; the set of
/// distinct keys is small and fixed by the code that wrote the part, so each is leaked at most once). `None`
/// for a key no sword writes: longer than 64 bytes, or past [`INTERN_MAX`] distinct keys.
fn intern(s: String) -> Option<&'static str> {
    static SET: std::sync::Mutex<BTreeSet<&'static str>> = std::sync::Mutex::new(BTreeSet::new());
    let mut set = SET.lock().unwrap_or_else(|e| e.into_inner());
    if let Some(k) = set.get(s.as_str()) {
        return Some(k);
    }
    if s.len() > 64 || set.len() >= INTERN_MAX {
        return None;
    }
    let k: &'static str = Box::leak(s.into_boxed_str());
    set.insert(k);
    Some(k)
}

fn read_part_data(path: &Path) -> Result<PartData> {
    let corrupt = |what: String| Error::Corrupt {
        path: path.to_path_buf(),
        what,
    };
    let f = std::fs::File::open(path).at(path)?;
    let dec = zstd::Decoder::new(f).at(path)?;
    let pd: PartData = serde_json::from_reader(std::io::BufReader::with_capacity(1 << 20, dec))
        .map_err(|e| corrupt(format!("part data does not decode: {e}")))?;
    if pd.version != PART_VERSION {
        return Err(corrupt(format!(
            "part layout version {} (this binary reads {PART_VERSION})",
            pd.version
        )));
    }
    Ok(pd)
}

fn to_chunk(path: &Path, pd: PartData) -> Result<ChunkOut<Part>> {
    let key = |k: String| {
        intern(k).ok_or_else(|| Error::Corrupt {
            path: path.to_path_buf(),
            what: "part data holds count keys that sword does not write".into(),
        })
    };
    let mut part = Part {
        entities: pd.entities,
        properties: pd.properties,
        candidates: pd.candidates,
        seed_other: pd.seed_other,
        snaks: pd.snaks,
        pairs: pd.pairs,
        constraints: pd.constraints,
        distinct_lines: pd.distinct_lines,
        unlabelled_by_prop: pd
            .unlabelled_by_prop
            .into_iter()
            .map(|(p, c)| (Pid(p), c))
            .collect(),
        items: pd.items,
        max_modified: pd.max_modified.filter(|m| counts::is_timestamp(m)),
        ..Part::default()
    };
    for (k, v) in pd.counts {
        part.counts.add(key(k)?, v);
    }
    for (t, v) in pd.other_types {
        part.counts.add_other_type(&t, v);
    }
    let mut by_kind = BTreeMap::new();
    for (k, v) in pd.bad_by_kind {
        by_kind.insert(key(k)?, v);
    }
    let mut first = Vec::with_capacity(pd.bad.len());
    for (l, o, k, m) in pd.bad {
        first.push((l, o, key(k)?, counts::short_message(m)));
    }
    part.bad = counts::BadLines {
        total: pd.bad_total,
        by_kind,
        first,
    };
    Ok(ChunkOut {
        len: pd.len,
        newlines: pd.newlines,
        head: pd.head,
        has_newline: pd.newlines > 0,
        tail: pd.tail,
        data: part,
    })
}

/// Read and check the manifests of all `n` parts in `out/parts/` against `input` and `cfg`.
pub fn check_parts(out: &Path, input: &FileRef, cfg: &Config, n: u32) -> Result<Vec<PartManifest>> {
    let dir = parts_dir(out);
    let key = config_key(cfg);
    let mut parts: Vec<PartManifest> = Vec::with_capacity(n as usize);
    for i in 0..n {
        let (_, mname) = part_names(i, n);
        let path = dir.join(&mname);
        if !path.exists() {
            return Err(Error::Stale {
                path,
                what: format!(
                    "part {i} of {n} is missing: run `sword extract --shard {i}/{n}` first"
                ),
            });
        }
        let bytes = std::fs::read(&path).at(&path)?;
        let pm: PartManifest = serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
            path: path.clone(),
            what: format!("part manifest is not valid: {e}"),
        })?;
        let stale = |what: String| Error::Stale {
            path: path.clone(),
            what,
        };
        if pm.version != PART_VERSION || pm.shard != i || pm.shards != n {
            return Err(stale(format!(
                "describes part {}/{} (layout {}), expected {i}/{n} (layout {PART_VERSION})",
                pm.shard, pm.shards, pm.version
            )));
        }
        if pm.input.size != input.size {
            return Err(stale(format!(
                "made from a different dump ({}, {} bytes) than {} ({} bytes)",
                pm.input.path, pm.input.size, input.path, input.size
            )));
        }
        if pm.config != key {
            return Err(stale(format!(
                "made with a different extract config ({}), this run has {key}",
                pm.config
            )));
        }
        let expect_start = parts.last().map_or(0, |p| p.range[1]);
        if pm.range[0] != expect_start || pm.range[1] < pm.range[0] {
            return Err(Error::Corrupt {
                path: path.clone(),
                what: format!(
                    "byte range [{}, {}) does not follow the previous part (expected start {expect_start})",
                    pm.range[0], pm.range[1]
                ),
            });
        }
        parts.push(pm);
    }
    if let Some(last) = parts.last() {
        if last.range[1] != input.size {
            return Err(Error::Corrupt {
                path: dir.join(part_names(n.saturating_sub(1), n).1),
                what: format!(
                    "the parts cover bytes [0, {}) of a {}-byte dump",
                    last.range[1], input.size
                ),
            });
        }
    }
    Ok(parts)
}

/// Check what a join needs before it reads anything: `n ≥ 1`, a dump file (not stdin), and all `n` parts in
/// `out/parts/` made from this dump and config. Returns the dump's [`FileRef`] and the part manifests in order.
pub fn prepare_join(
    dump: &Path,
    out: &Path,
    cfg: &Config,
    n: u32,
) -> Result<(FileRef, Vec<PartManifest>)> {
    if n == 0 {
        return Err(Error::Config("--join-shards needs n ≥ 1".into()));
    }
    if dump == Path::new("-") {
        return Err(unsplittable(dump, "stdin"));
    }
    let size = std::fs::metadata(dump).at(dump)?.len();
    let parts = check_parts(out, &FileRef::unhashed(dump, size), cfg, n)?;
    // One pass over the dump: its hash (the joined manifest's input) and the hash of every part's range, which
    // must be the bytes that part was made from.
    let ranges: Vec<[u64; 2]> = parts.iter().map(|p| p.range).collect();
    let (input, hashes) = hash_ranges(dump, &ranges)?;
    for (pm, now) in parts.iter().zip(&hashes) {
        if *now != pm.range_xxh3 {
            return Err(Error::Stale {
                path: parts_dir(out).join(part_names(pm.shard, pm.shards).1),
                what: format!(
                    "made from a different dump: bytes [{}, {}) of {} hash to {now}, the part read {}",
                    pm.range[0],
                    pm.range[1],
                    dump.display(),
                    pm.range_xxh3
                ),
            });
        }
    }
    Ok((input, parts))
}

/// The xxh3-128 (32 hex digits) of the bytes `[lo, hi)` of `file` (opened from `path`), read in 1 MiB steps.
fn hash_range(path: &Path, file: &std::fs::File, lo: u64, hi: u64) -> Result<String> {
    use std::io::{Seek, SeekFrom};
    let mut f = file;
    f.seek(SeekFrom::Start(lo)).at(path)?;
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut left = hi.saturating_sub(lo);
    while left > 0 {
        let want = usize::try_from(left).map_or(buf.len(), |l| l.min(buf.len()));
        let n = f.read(buf.get_mut(..want).unwrap_or_default()).at(path)?;
        let Some(got) = buf.get(..n).filter(|g| !g.is_empty()) else {
            return Err(Error::bad_input(
                path,
                format!(
                    "the file ends at byte {} inside the range [{lo}, {hi}) this shard reads",
                    hi.saturating_sub(left)
                ),
            ));
        };
        h.update(got);
        left = left.saturating_sub(n as u64);
    }
    Ok(xxh3_hex(&h))
}

/// The [`FileRef`] (size and xxh3-128) of the file at `path` and the xxh3-128 (32 hex digits) of each of
/// `ranges`, in one read of the file. The ranges follow each other from byte 0 (`[0, a)`, `[a, b)`, ...); bytes
/// after the last one count for the file's hash only.
pub fn hash_ranges(path: &Path, ranges: &[[u64; 2]]) -> Result<(FileRef, Vec<String>)> {
    use xxhash_rust::xxh3::Xxh3;
    let mut f = std::fs::File::open(path).at(path)?;
    let (mut whole, mut part) = (Xxh3::new(), Xxh3::new());
    let mut hashes = Vec::with_capacity(ranges.len());
    let mut buf = vec![0u8; 1 << 20];
    let (mut at, mut k) = (0u64, 0usize);
    loop {
        let n = f.read(&mut buf).at(path)?;
        let Some(mut chunk) = buf.get(..n).filter(|c| !c.is_empty()) else {
            break;
        };
        whole.update(chunk);
        while !chunk.is_empty() {
            // Close every range that ends here (empty ones included), then feed the open one up to its end.
            while ranges.get(k).is_some_and(|r| r[1] <= at) {
                hashes.push(xxh3_hex(&part));
                part = Xxh3::new();
                k = k.saturating_add(1);
            }
            let take = match ranges.get(k) {
                Some(r) => usize::try_from(r[1].saturating_sub(at))
                    .map_or(chunk.len(), |t| t.min(chunk.len())),
                None => chunk.len(),
            };
            let (head, rest) = chunk.split_at(take);
            if k < ranges.len() {
                part.update(head);
            }
            at = at.saturating_add(take as u64);
            chunk = rest;
        }
    }
    // The ranges that end at the end of the file, or past it (the file shrank: what there was of them).
    while hashes.len() < ranges.len() {
        hashes.push(xxh3_hex(&part));
        part = Xxh3::new();
    }
    Ok((FileRef::hashed(path, at, &whole), hashes))
}

/// Feed the parts (checked by [`prepare_join`]) in order into `acc`, each as one chunk, after checking each
/// data file against its manifest; `state` takes what each part adds to the join state (and spills it past
/// the memory limit). Returns the read statistics of the whole dump.
pub fn replay_parts(
    out: &Path,
    input: &FileRef,
    parts: &[PartManifest],
    acc: &mut Acc<'_>,
    state: &mut crate::stages::extract::join::State,
    progress: &Progress,
) -> Result<ReadStats> {
    let dir = parts_dir(out);
    let mut stats = ReadStats {
        format: parts.first().map(|p| p.format),
        input_bytes: Some(input.size),
        ..ReadStats::default()
    };
    for pm in parts {
        let path = dir.join(&pm.data.path);
        let now = FileRef::of(&path)?;
        if now.size != pm.data.size || now.xxh3 != pm.data.xxh3 {
            return Err(Error::Stale {
                path,
                what: format!(
                    "size or hash differs from its manifest (part {}/{}): rerun that shard",
                    pm.shard, pm.shards
                ),
            });
        }
        let pd = read_part_data(&path)?;
        if pd.len != pm.json_bytes || pd.newlines != pm.newlines {
            return Err(Error::Stale {
                path,
                what: "length or newline count differs from its manifest".into(),
            });
        }
        stats.json_bytes = stats.json_bytes.saturating_add(pd.len);
        if let Some(k) = pm.members {
            let m = stats.gzip_members.get_or_insert(0);
            *m = m.saturating_add(k);
        }
        acc.feed(to_chunk(&path, pd)?)?;
        state.drain(acc)?;
        progress.inc(pm.range[1].saturating_sub(pm.range[0]));
    }
    Ok(stats)
}

/// Add the parts to the joined manifest: each data file and part manifest as an input, the shard count and the
/// shards' timings in `extra`.
pub fn describe_join(m: &mut Manifest, out: &Path, parts: &[PartManifest]) -> Result<()> {
    let dir = parts_dir(out);
    for pm in parts {
        let (_, mname) = part_names(pm.shard, pm.shards);
        let mut d = pm.data.clone();
        d.path = dir.join(&d.path).to_string_lossy().into_owned();
        m.inputs.push(d);
        m.inputs.push(FileRef::of(&dir.join(mname))?);
    }
    if let Some(o) = m.extra.as_object_mut() {
        o.insert("shards".into(), serde_json::json!(parts.len()));
        o.insert(
            "shard_timings".into(),
            serde_json::json!(parts.iter().map(|p| &p.timings).collect::<Vec<_>>()),
        );
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::indexing_slicing, clippy::arithmetic_side_effects)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Each range's hash is the xxh3 of its bytes and the file's the xxh3 of all of them, whatever the cuts
        /// (empty ranges and ranges across the 1 MiB reads included), and bytes after the last range count for
        /// the file only.
        #[test]
        fn range_hashes_are_the_hashes_of_the_ranges(
            len in 0usize..(3 << 20),
            mut cuts in proptest::collection::vec(0usize..(3 << 20), 0..6),
            tail in 0usize..3,
        ) {
            let bytes: Vec<u8> = (0..len).map(|i| (i * 31 % 251) as u8).collect();
            let dir = tempfile::tempdir().unwrap();
            let p = dir.path().join("d");
            std::fs::write(&p, &bytes).unwrap();
            // Cuts within the file, sorted; the last range ends `tail` cuts before the end of the file at most.
            cuts.iter_mut().for_each(|c| *c = (*c).min(len));
            cuts.sort_unstable();
            cuts.push(len);
            let keep = cuts.len().saturating_sub(tail.min(cuts.len() - 1));
            let mut ranges = Vec::new();
            let mut from = 0;
            for &c in &cuts[..keep] {
                ranges.push([from as u64, c as u64]);
                from = c;
            }
            let (file, hashes) = hash_ranges(&p, &ranges).unwrap();
            prop_assert_eq!(&file, &FileRef::of(&p).unwrap());
            prop_assert_eq!(hashes.len(), ranges.len());
            for (r, h) in ranges.iter().zip(&hashes) {
                let want = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes[r[0] as usize..r[1] as usize]));
                prop_assert_eq!(h, &want, "range {:?}", r);
            }
        }
    }

    #[test]
    fn parses_specs() {
        assert_eq!(parse_spec("0/4").unwrap(), (0, 4));
        assert_eq!(parse_spec("3/4").unwrap(), (3, 4));
        for bad in ["4/4", "1/0", "x/2", "1", "-1/3"] {
            assert!(parse_spec(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn boundaries_by_hand() {
        let d = b"ab\ncd\nef\n";
        // len 9, n 3: cuts at 3 and 6 → first newline at/after 3 is 5 → 6; at/after 6 is 8 → 9.
        assert_eq!(plain_boundaries(d, 3), vec![0, 6, 9, 9]);
        assert_eq!(plain_boundaries(d, 1), vec![0, 9]);
        assert_eq!(plain_boundaries(b"", 4), vec![0, 0, 0, 0, 0]);
    }

    proptest! {
        #[test]
        fn boundaries_are_disjoint_covering_and_line_aligned(
            text in proptest::collection::vec(prop_oneof![Just(b'\n'), Just(b'a'), Just(b'{')], 0..200),
            n in 1u32..12,
        ) {
            let b = plain_boundaries(&text, n);
            prop_assert_eq!(b.len(), n as usize + 1);
            prop_assert_eq!(b[0], 0);
            prop_assert_eq!(b[n as usize], text.len());
            for w in b.windows(2) {
                prop_assert!(w[0] <= w[1]);
            }
            for &x in &b[1..n as usize] {
                prop_assert!(x == text.len() || text[x - 1] == b'\n');
            }
            // Every line start belongs to exactly one share, and the shares rebuild the text.
            let mut all = Vec::new();
            for w in b.windows(2) {
                all.extend_from_slice(&text[w[0]..w[1]]);
            }
            prop_assert_eq!(all, text.clone());
        }
    }

    #[test]
    fn gzip_ranges_are_member_aligned() {
        let members: Vec<&[u8]> =
            vec![b"[\n", b"{\"a\":1},\n{\"b\":2},\n", b"{\"c\":3}", b",\n]\n"];
        let mut data = Vec::new();
        let mut starts = Vec::new();
        for m in &members {
            starts.push(data.len());
            data.extend(gz::compress_member(m, flate2::Compression::fast()));
        }
        for n in 1..10u32 {
            let mut prev = 0;
            for i in 0..n {
                let (lo, hi) = gzip_range(&data, i, n);
                assert_eq!(lo, prev);
                assert!(
                    lo == data.len() || starts.contains(&lo),
                    "n {n} i {i} lo {lo}"
                );
                prev = hi;
            }
            assert_eq!(prev, data.len());
        }
    }
}
