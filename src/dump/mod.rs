//! Reading Wikidata dumps: format sniffing, decoders, line framing, parallel chunks, the entity parser.
//!
//! # Chunk model
//! Every input path produces *chunks* of the decompressed stream. A worker (`frame`) handles the complete lines
//! inside one chunk and returns the fragments at its edges: the bytes before the first newline (`head`, when the
//! chunk may start inside a line) and after the last one (`tail`). The sequential [`Joiner`] glues the tail of
//! one chunk to the head of the next, so a line that straddles chunks (or gzip members) is parsed once, and it
//! turns chunk-relative line numbers and byte offsets into absolute ones. Results are consumed in input order,
//! so nothing downstream depends on the number of threads.
//!
//! # Paths
//! - plain file: memory-mapped, cut into ranges that end at newlines, ranges parsed in parallel (rayon), in
//!   batches of a few chunks per thread (bounded memory);
//! - bzip2 file: blocks found at bit offsets and decoded in parallel by `bz2::read_parallel`;
//! - bzip2 on stdin: the same, by `bz2::read_parallel_stream`, over a bounded window of the stream (each piece
//!   copied out to its worker);
//! - bzip2 with `parallel_bzip2 = false`, zstd, single-member gzip, other stdin: one thread decodes into chunks
//!   cut at the last newline (the partial line moves into the next chunk), sent through a bounded
//!   `sync_channel`; the rayon threads parse them;
//! - multi-member gzip (the Wikimedia layout of `latest-all.json.gz`): members are inflated in parallel by
//!   `gz::par_members` when available; otherwise decoded member after member on one thread as above.
//!
//! Why parallel inflate matters: one core inflates only ≈270 MB/s of JSON with GNU-zlib-class decoders (≈630 MB/s
//! with zlib-rs), so the ≈1.5 TB of JSON in a full dump needs 40–90 minutes of inflate on one core alone, and
//! with one decoding thread the parsers can never run faster than that one core.

pub mod bz2;
pub mod direct;
pub mod entity;
pub mod gz;
pub mod skim;
pub mod start;

use crate::core::error::{Error, IoContext, Result};
use crate::core::progress::Progress;
use rayon::prelude::*;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Compression format of a dump, detected from its first bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Format {
    Plain,
    Gzip,
    Bzip2,
    Zstd,
}

impl Format {
    /// Detect the format from magic bytes: gzip `1f 8b`, bzip2 `BZh`, zstd `28 b5 2f fd` or a zstd skippable
    /// frame `5? 2a 4d 18` (RFC 8878 §3.1.2: `pzstd` and other multi-threaded writers start with one); anything
    /// else is plain JSON.
    pub fn sniff(first: &[u8]) -> Format {
        if first.starts_with(&[0x1f, 0x8b]) {
            Format::Gzip
        } else if first.starts_with(b"BZh") {
            Format::Bzip2
        } else if first.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) || is_zstd_skippable(first) {
            Format::Zstd
        } else {
            Format::Plain
        }
    }

    /// Lower-case name.
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Plain => "plain",
            Format::Gzip => "gzip",
            Format::Bzip2 => "bzip2",
            Format::Zstd => "zstd",
        }
    }
}

/// `b` starts with the magic of a zstd skippable frame: `0x184D2A5?` little-endian.
pub fn is_zstd_skippable(b: &[u8]) -> bool {
    matches!(b, [m, 0x2a, 0x4d, 0x18, ..] if m & 0xf0 == 0x50)
}

/// The result of framing one chunk: the worker's data plus the fragments the joiner needs.
#[derive(Debug)]
pub struct ChunkOut<T> {
    /// Bytes in the chunk.
    pub len: u64,
    /// Newlines in the chunk.
    pub newlines: u64,
    /// Bytes before the first newline when the chunk may start inside a line (`None`: the chunk starts at a line
    /// start and the worker parsed its first line itself). Without any newline, the whole chunk.
    pub head: Option<Vec<u8>>,
    /// Whether the chunk contains a newline.
    pub has_newline: bool,
    /// Bytes after the last newline (a line continued in the next chunk, or the unterminated last line).
    pub tail: Vec<u8>,
    /// What the worker made of the complete lines.
    pub data: T,
}

/// Split `bytes` into lines; call `f(rel_line, rel_offset, line)` for every complete line the chunk owns
/// (`rel_line` = newlines in the chunk before the line, `rel_offset` = byte offset of the line in the chunk;
/// `line` excludes the newline). Returns the fragments for the [`Joiner`].
pub fn frame<T>(
    bytes: &[u8],
    at_line_start: bool,
    data: T,
    mut f: impl FnMut(&mut T, u64, u64, &[u8]),
) -> ChunkOut<T> {
    let mut data = data;
    let first_nl = memchr_nl(bytes, 0);
    let Some(first_nl) = first_nl else {
        return ChunkOut {
            len: bytes.len() as u64,
            newlines: 0,
            head: Some(bytes.to_vec()),
            has_newline: false,
            tail: Vec::new(),
            data,
        };
    };
    let mut newlines = 0u64;
    let head = if at_line_start {
        f(&mut data, 0, 0, &bytes[..first_nl]);
        None
    } else {
        Some(bytes[..first_nl].to_vec())
    };
    newlines += 1;
    let mut start = first_nl + 1;
    while let Some(nl) = memchr_nl(bytes, start) {
        f(&mut data, newlines, start as u64, &bytes[start..nl]);
        newlines += 1;
        start = nl + 1;
    }
    ChunkOut {
        len: bytes.len() as u64,
        newlines,
        head,
        has_newline: true,
        tail: bytes[start..].to_vec(),
        data,
    }
}

#[inline]
fn memchr_nl(b: &[u8], from: usize) -> Option<usize> {
    // SIMD search: every byte of the dump passes through here once.
    memchr::memchr(b'\n', &b[from..]).map(|p| p + from)
}

/// A line completed by the joiner (it straddled chunks, or is the unterminated last line).
#[derive(Debug, PartialEq, Eq)]
pub struct JoinedLine {
    /// 0-based line index in the decompressed stream.
    pub line: u64,
    /// Byte offset of the line start in the decompressed stream.
    pub offset: u64,
    pub bytes: Vec<u8>,
}

/// Where a chunk starts in the decompressed stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Base {
    /// 0-based line index of the chunk's first byte.
    pub line: u64,
    /// Byte offset of the chunk's first byte.
    pub offset: u64,
}

/// Sequential glue between chunks (see the module docs).
#[derive(Debug, Default)]
pub struct Joiner {
    carry: Vec<u8>,
    carry_started: bool,
    carry_line: u64,
    carry_offset: u64,
    offset: u64,
    line: u64,
}

impl Joiner {
    /// A joiner at the start of the stream.
    pub fn new() -> Joiner {
        Joiner::default()
    }

    /// Bytes consumed so far.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Lines started so far (newlines seen).
    pub fn lines(&self) -> u64 {
        self.line
    }

    /// Feed the next chunk. Returns the chunk's base position and, when the chunk completes a line that started
    /// in earlier chunks, that line (to be handled *before* the chunk's own lines).
    pub fn feed<T>(&mut self, c: ChunkOut<T>) -> (Base, Option<JoinedLine>, T) {
        let base = Base {
            line: self.line,
            offset: self.offset,
        };
        let mut joined = None;
        if !self.carry_started {
            self.carry_line = self.line;
            self.carry_offset = self.offset;
        }
        if !c.has_newline {
            if let Some(h) = c.head {
                if !h.is_empty() {
                    self.carry_started = true;
                }
                self.carry.extend_from_slice(&h);
            }
        } else {
            match c.head {
                Some(h) => {
                    self.carry.extend_from_slice(&h);
                    joined = Some(self.take_carry());
                }
                None => {
                    if self.carry_started {
                        joined = Some(self.take_carry());
                    }
                }
            }
            if !c.tail.is_empty() {
                self.carry = c.tail;
                self.carry_started = true;
                self.carry_line = self.line + c.newlines;
                self.carry_offset = self.offset + c.len - self.carry.len() as u64;
            }
        }
        self.offset += c.len;
        self.line += c.newlines;
        (base, joined, c.data)
    }

    fn take_carry(&mut self) -> JoinedLine {
        self.carry_started = false;
        JoinedLine {
            line: self.carry_line,
            offset: self.carry_offset,
            bytes: std::mem::take(&mut self.carry),
        }
    }

    /// The line held across chunks so far, if any: (0-based line, byte offset of its start, bytes held).
    pub fn pending(&self) -> Option<(u64, u64, u64)> {
        self.carry_started
            .then_some((self.carry_line, self.carry_offset, self.carry.len() as u64))
    }

    /// End of stream: the unterminated last line, if any.
    pub fn finish(mut self) -> Option<JoinedLine> {
        (self.carry_started && !self.carry.is_empty()).then(|| self.take_carry())
    }
}

/// How to read.
#[derive(Clone, Debug)]
pub struct ReadOpts {
    /// Target chunk size in bytes of decompressed JSON (4 MiB: a few hundred entity lines; lines longer than a
    /// chunk are joined across chunks).
    pub chunk_size: usize,
    /// Chunks in flight per thread (bounded memory: threads × this × chunk_size).
    pub chunks_per_thread: usize,
    /// Try to inflate the members of a multi-member gzip in parallel.
    pub parallel_gzip: bool,
    /// Decode the blocks of a bzip2 file in parallel (`dump::bz2`); `false`: one decoding thread.
    pub parallel_bzip2: bool,
    /// Longest line a memory-mapped chunk may be stretched to so that it ends at a newline; a line without
    /// one that far is handed over in chunk-size pieces (joined, and bounded, by the caller's [`Joiner`]).
    pub max_line: usize,
}

impl ReadOpts {
    /// How far the parallel gzip reader may run ahead, on the current rayon pool.
    pub fn gz_limits(&self) -> gz::Limits {
        gz::Limits::new(
            rayon::current_num_threads(),
            self.chunks_per_thread,
            self.chunk_size,
        )
    }
}

impl Default for ReadOpts {
    fn default() -> Self {
        ReadOpts {
            chunk_size: 4 << 20,
            chunks_per_thread: 2,
            parallel_gzip: true,
            parallel_bzip2: true,
            max_line: 256 << 20,
        }
    }
}

/// What reading found out about the input.
#[derive(Clone, Debug, Default, serde::Serialize)]
pub struct ReadStats {
    pub format: Option<Format>,
    /// Size of the input file (None for stdin).
    pub input_bytes: Option<u64>,
    /// Bytes of decompressed JSON.
    pub json_bytes: u64,
    /// gzip members (gzip only).
    pub gzip_members: Option<u64>,
    /// Whether the gzip members were inflated, or the bzip2 blocks decoded, in parallel.
    pub parallel_inflate: bool,
    /// bzip2 streams and blocks (bzip2 decoded in parallel only).
    pub bzip2_streams: Option<u64>,
    pub bzip2_blocks: Option<u64>,
    /// The compressed stream ended early (truncated file); what was decoded before was passed on. Whether that
    /// is acceptable is the caller's decision (the extract stage refuses it unless `allow_truncated`).
    pub truncated_stream: bool,
}

/// Per-chunk worker: `(bytes, at_line_start) → ChunkOut`.
pub type Work<'a, T> = dyn Fn(&[u8], bool) -> ChunkOut<T> + Sync + 'a;

/// Read a dump (`-` = stdin), calling `work` on chunks in parallel and `sink` on the results in input order.
pub fn read_dump<T: Send>(
    path: &Path,
    opts: &ReadOpts,
    work: &Work<'_, T>,
    sink: &mut dyn FnMut(ChunkOut<T>) -> Result<()>,
    progress: &Progress,
) -> Result<ReadStats> {
    let is_stdin = path == Path::new("-");
    let mut stats = ReadStats::default();
    start::check_path(path)?;
    if is_stdin {
        let stdin = std::io::stdin();
        let mut r = BufReader::with_capacity(1 << 20, stdin);
        let first = r.fill_buf().at("-")?;
        let format = Format::sniff(first);
        stats.format = Some(format);
        let mut counted = CountingReader::new(r, progress);
        if format == Format::Bzip2 && opts.parallel_bzip2 {
            let read = bz2::read_parallel_stream(&mut counted, opts, work, sink, Path::new("-"))?;
            return Ok(bz2_stats(stats, &read));
        }
        return read_stream(counted, format, Path::new("-"), opts, work, sink, stats);
    }
    let file = std::fs::File::open(path).at(path)?;
    let len = file.metadata().at(path)?.len();
    stats.input_bytes = Some(len);
    let mut first = [0u8; 4];
    let n = read_up_to(&file, &mut first).at(path)?;
    let format = Format::sniff(&first[..n]);
    stats.format = Some(format);
    if len == 0 {
        return Err(start::empty_file(path));
    }
    if format == Format::Plain {
        stats.json_bytes = len;
        // SAFETY: the file is opened read-only; a dump changed under us while we read it gives wrong counts or
        // bad lines (never UB in safe code that copies each line before parsing), which is the usual mmap caveat.
        let map = unsafe { memmap2::Mmap::map(&file) }.at(path)?;
        start::check_start(path, format, &map[..map.len().min(START_BYTES)])?;
        advise_sequential(&map);
        read_mapped(&map, 0..map.len(), opts, work, sink, progress)?;
        return Ok(stats);
    }
    // Parallel in-process decoders, one branch per format that has one. Each reads the memory-mapped file,
    // decodes on the rayon workers and hands `sink` the chunks in input order, holding a bounded number of chunks
    // ahead (see `gz_parallel`); `None` (a file it cannot split) falls through to the one-thread stream below.
    // A new parallel decoder (bzip2 blocks, issue 22) goes here; a decoder that is parallel inside a `Read` can
    // instead replace the sequential one in `read_stream`.
    let parallel = match format {
        Format::Gzip if opts.parallel_gzip => {
            // SAFETY: as above.
            let map = unsafe { memmap2::Mmap::map(&file) }.at(path)?;
            advise_sequential(&map);
            gz_parallel(&map, 0..map.len(), opts, work, sink, progress, path)?
        }
        _ => None,
    };
    if let Some(read) = parallel {
        stats.gzip_members = Some(read.members);
        stats.json_bytes = read.json_bytes;
        stats.parallel_inflate = true;
        stats.truncated_stream = read.truncated;
        return Ok(stats);
    }
    if format == Format::Bzip2 && opts.parallel_bzip2 {
        // SAFETY: as above.
        let map = unsafe { memmap2::Mmap::map(&file) }.at(path)?;
        advise_sequential(&map);
        let read = bz2::read_parallel(&map, opts, work, sink, progress, path)?;
        return Ok(bz2_stats(stats, &read));
    }
    let file = std::fs::File::open(path).at(path)?;
    let counted = CountingReader::new(file, progress);
    read_stream(counted, format, path, opts, work, sink, stats)
}

/// `stats` with what the parallel bzip2 decoder read (a file or stdin).
fn bz2_stats(mut stats: ReadStats, read: &bz2::BlockStats) -> ReadStats {
    stats.json_bytes = read.decompressed_bytes;
    stats.parallel_inflate = true;
    stats.truncated_stream = read.truncated;
    stats.bzip2_streams = Some(read.streams);
    stats.bzip2_blocks = Some(read.blocks);
    stats
}

fn read_up_to(mut f: &std::fs::File, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match f.read(&mut buf[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// Bytes of the decompressed stream's start that [`start::check_start`] looks at (the first chunk at most).
const START_BYTES: usize = 64 << 10;

/// What [`gz_parallel`] read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GzRead {
    /// Members accepted.
    pub members: u64,
    /// Decompressed bytes.
    pub json_bytes: u64,
    /// The last member was cut short (the file ends inside it); what it decoded was passed on.
    pub truncated: bool,
}

/// Multi-member gzip in parallel (`gz::par_members_in`). Returns what was read, or `None` when the file cannot
/// be split (fewer than two members: the caller then decodes it sequentially). Members are inflated and parsed
/// chunk by chunk ([`ReadOpts::gz_limits`] bounds how far they run ahead); a member's first chunk is framed as
/// if it started inside a line, so the layout does not have to put member starts at line starts. The start of
/// the stream (when `range` starts at 0) is checked with [`start::check_start`]; a last member cut short passes
/// on what it decoded and sets `truncated`.
///
/// `range` is the byte range of the file to read (the whole file, or the whole members of one shard of a
/// sharded extract); the range must start at a member start.
pub(crate) fn gz_parallel<T: Send>(
    map: &memmap2::Mmap,
    range: std::ops::Range<usize>,
    opts: &ReadOpts,
    work: &Work<'_, T>,
    sink: &mut dyn FnMut(ChunkOut<T>) -> Result<()>,
    progress: &Progress,
    path: &Path,
) -> Result<Option<GzRead>> {
    let data: &[u8] = map.get(range.clone()).unwrap_or_default();
    let limits = opts.gz_limits();
    let at_stream_start = range.start == 0;
    let piece = |p: gz::Piece<'_>| -> Result<ChunkOut<T>> {
        if at_stream_start && p.member == 0 && p.index == 0 {
            start::check_start(
                path,
                Format::Gzip,
                p.bytes.get(..START_BYTES).unwrap_or(p.bytes),
            )?;
        }
        Ok(work(p.bytes, p.at_line_start))
    };
    let mut json = 0u64;
    let mut last = 0usize;
    let mut done = |upto: usize| {
        progress.inc(upto.saturating_sub(last) as u64);
        last = last.max(upto);
    };
    // Members and stretches behind the readers are done: drop their pages from our resident set.
    let drop_pages =
        |offset: usize, len: usize| release(map, range.start.saturating_add(offset), len);
    let stats = gz::par_members_in(
        path,
        data,
        &limits,
        piece,
        |o: ChunkOut<T>| {
            json += o.len;
            sink(o)
        },
        &mut done,
        &drop_pages,
    )?;
    Ok(stats.map(|s| GzRead {
        members: s.members as u64,
        json_bytes: json,
        truncated: s.truncated,
    }))
}

/// Tell the kernel the mapping is read front to back (bigger read-ahead).
fn advise_sequential(map: &memmap2::Mmap) {
    #[cfg(unix)]
    let _ = map.advise(memmap2::Advice::Sequential);
    #[cfg(not(unix))]
    let _ = map;
}

/// Drop already-processed pages of a read-only file mapping from the resident set, so RSS stays bounded
/// whatever the file size (the pages are clean: a later access would just read the file again).
fn release(map: &memmap2::Mmap, offset: usize, len: usize) {
    #[cfg(unix)]
    {
        let page = 4096;
        let start = offset.div_ceil(page).saturating_mul(page);
        let end = offset.saturating_add(len).min(map.len()) / page * page;
        if end > start {
            // SAFETY: the mapping is read-only and file-backed; MADV_DONTNEED only discards clean pages, which
            // are re-read from the file if touched again (a slice into the range still reads the same bytes,
            // at the cost of a page fault), so no reader sees anything but the file's bytes.
            let _ = unsafe {
                map.unchecked_advise_range(memmap2::UncheckedAdvice::DontNeed, start, end - start)
            };
        }
    }
    #[cfg(not(unix))]
    let _ = (map, offset, len);
}

/// Read the bytes `range` of a mapped plain file (the whole file, or one shard's share, which must start at
/// a line start) in parallel chunks cut at newlines.
pub(crate) fn read_mapped<T: Send>(
    map: &memmap2::Mmap,
    range: std::ops::Range<usize>,
    opts: &ReadOpts,
    work: &Work<'_, T>,
    sink: &mut dyn FnMut(ChunkOut<T>) -> Result<()>,
    progress: &Progress,
) -> Result<()> {
    let batch = rayon::current_num_threads().max(1) * opts.chunks_per_thread.max(1);
    let data: &[u8] = &map[..range.end];
    let mut start = range.start;
    let mut at_line_start = true;
    while start < data.len() {
        let mut ranges = Vec::with_capacity(batch);
        while ranges.len() < batch && start < data.len() {
            let target = start.saturating_add(opts.chunk_size.max(1)).min(data.len());
            // A chunk ends after a newline, looked for at most one more chunk size past its target; a line longer
            // than that goes on in the next chunk (which then starts inside a line), and the caller's `Joiner`
            // holds it (bounded by the caller's line limit). So a batch maps at most 2 × batch chunk sizes.
            let bound = target
                .saturating_add(opts.chunk_size.max(1))
                .min(data.len());
            let from = target.saturating_sub(1).max(start);
            let (end, ends_line) = match memchr::memchr(b'\n', &data[from..bound]) {
                Some(i) => (from + i + 1, true),
                None if bound < data.len() => (target, false),
                None => (data.len(), true),
            };
            ranges.push((start..end, at_line_start));
            at_line_start = ends_line;
            start = end;
        }
        let outs: Vec<ChunkOut<T>> = ranges
            .par_iter()
            .map(|(r, at)| {
                let out = work(&data[r.clone()], *at);
                progress.inc(r.len() as u64);
                out
            })
            .collect();
        for o in outs {
            sink(o)?;
        }
        if let (Some(first), Some(last)) = (ranges.first(), ranges.last()) {
            release(map, first.0.start, last.0.end - first.0.start);
        }
    }
    Ok(())
}

/// Counts compressed bytes read (into the progress bar and [`SourceState`]) and remembers whether the source
/// itself failed, so that a decoder's error can be told apart from a failing disk.
struct CountingReader<'p, R> {
    inner: R,
    progress: &'p Progress,
    state: Arc<SourceState>,
}

/// What the source of a stream did: compressed bytes read, and whether a read of the source failed.
#[derive(Default)]
struct SourceState {
    read: AtomicU64,
    failed: std::sync::atomic::AtomicBool,
}

impl<'p, R> CountingReader<'p, R> {
    fn new(inner: R, progress: &'p Progress) -> Self {
        CountingReader {
            inner,
            progress,
            state: Arc::default(),
        }
    }
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        match self.inner.read(buf) {
            Ok(n) => {
                self.progress.inc(n as u64);
                self.state.read.fetch_add(n as u64, Ordering::Relaxed);
                Ok(n)
            }
            Err(e) => {
                if e.kind() != std::io::ErrorKind::Interrupted {
                    self.state.failed.store(true, Ordering::Relaxed);
                }
                Err(e)
            }
        }
    }
}

/// gzip decoder that reads every member and counts them (a single-member decoder would stop after `[`).
pub struct MultiGz<R: BufRead> {
    inner: Option<flate2::bufread::GzDecoder<R>>,
    members: Arc<AtomicU64>,
}

impl<R: BufRead> MultiGz<R> {
    /// Wrap a reader positioned at the first member.
    pub fn new(r: R) -> MultiGz<R> {
        MultiGz {
            inner: Some(flate2::bufread::GzDecoder::new(r)),
            members: Arc::new(AtomicU64::new(1)),
        }
    }

    /// Shared member counter.
    pub fn members(&self) -> Arc<AtomicU64> {
        self.members.clone()
    }
}

impl<R: BufRead> Read for MultiGz<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        if buf.is_empty() {
            return Ok(0);
        }
        loop {
            let Some(dec) = self.inner.as_mut() else {
                return Ok(0);
            };
            let n = dec.read(buf)?;
            if n > 0 {
                return Ok(n);
            }
            let dec = self.inner.take().expect("present");
            let mut r = dec.into_inner();
            if r.fill_buf()?.is_empty() {
                return Ok(0);
            }
            self.members.fetch_add(1, Ordering::Relaxed);
            self.inner = Some(flate2::bufread::GzDecoder::new(r));
        }
    }
}

/// Cuts a byte stream into chunks that end at a newline (the partial last line moves to the next chunk).
pub struct LineChunker<R> {
    inner: R,
    chunk_size: usize,
    pending: Vec<u8>,
    eof: bool,
}

impl<R: Read> LineChunker<R> {
    pub fn new(inner: R, chunk_size: usize) -> Self {
        LineChunker {
            inner,
            chunk_size: chunk_size.max(1),
            pending: Vec::new(),
            eof: false,
        }
    }

    /// The next chunk (ends with `\n` unless it is the end of the stream or a line longer than the chunk size).
    pub fn next_chunk(&mut self) -> std::io::Result<Option<Vec<u8>>> {
        if self.eof && self.pending.is_empty() {
            return Ok(None);
        }
        let mut buf = std::mem::take(&mut self.pending);
        let want = self.chunk_size.max(buf.len() + 1);
        buf.reserve(want.saturating_sub(buf.len()));
        while buf.len() < self.chunk_size && !self.eof {
            let old = buf.len();
            let grow = (self.chunk_size - old).max(1);
            buf.resize(old + grow, 0);
            match self.inner.read(&mut buf[old..]) {
                Ok(0) => {
                    buf.truncate(old);
                    self.eof = true;
                }
                Ok(n) => buf.truncate(old + n),
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => buf.truncate(old),
                Err(e) => {
                    buf.truncate(old);
                    self.pending = buf;
                    return Err(e);
                }
            }
        }
        if !self.eof {
            if let Some(last_nl) = buf.iter().rposition(|&c| c == b'\n') {
                self.pending = buf[last_nl + 1..].to_vec();
                buf.truncate(last_nl + 1);
            }
        }
        if buf.is_empty() {
            return Ok(None);
        }
        Ok(Some(buf))
    }

    /// Whatever was read but not yet returned (after an error).
    pub fn take_pending(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.pending)
    }
}

enum Msg {
    Chunk(Vec<u8>, bool),
    Truncated,
    Err(Error),
}

fn read_stream<R: Read + Send, T: Send>(
    r: CountingReader<'_, R>,
    format: Format,
    path: &Path,
    opts: &ReadOpts,
    work: &Work<'_, T>,
    sink: &mut dyn FnMut(ChunkOut<T>) -> Result<()>,
    mut stats: ReadStats,
) -> Result<ReadStats> {
    let source = r.state.clone();
    let r = BufReader::with_capacity(1 << 20, r);
    let mut members = None;
    // The sequential decoders (one thread; the rayon workers parse). A decoder that is parallel inside its
    // `Read` (and keeps its look-ahead bounded) can be swapped in here per format.
    let decoder: Box<dyn Read + Send> = match format {
        Format::Plain => Box::new(r),
        Format::Gzip => {
            let d = MultiGz::new(r);
            members = Some(d.members());
            Box::new(d)
        }
        Format::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(r)),
        Format::Zstd => Box::new(zstd::stream::read::Decoder::with_buffer(r).at(path)?),
    };
    let batch = rayon::current_num_threads().max(1) * opts.chunks_per_thread.max(1);
    let (tx, rx) = std::sync::mpsc::sync_channel::<Msg>(batch);
    let chunk_size = opts.chunk_size;
    let json_bytes = std::thread::scope(|s| -> Result<u64> {
        // The receiver lives in this closure: when the sink fails and the closure returns early, dropping it
        // wakes the decoding thread blocked on a full channel (its send fails), so the scope can end.
        let rx = rx;
        s.spawn(move || {
            let mut chunker = LineChunker::new(decoder, chunk_size);
            let mut at_line_start = true;
            let mut first = true;
            let mut decoded = 0u64;
            loop {
                match chunker.next_chunk() {
                    Ok(Some(c)) => {
                        if std::mem::take(&mut first) {
                            if let Err(e) =
                                start::check_start(path, format, &c[..c.len().min(START_BYTES)])
                            {
                                let _ = tx.send(Msg::Err(e));
                                return;
                            }
                        }
                        decoded += c.len() as u64;
                        let next_at_start = c.last() == Some(&b'\n');
                        if tx.send(Msg::Chunk(c, at_line_start)).is_err() {
                            return;
                        }
                        at_line_start = next_at_start;
                    }
                    Ok(None) => return,
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                        // A stream cut short: keep what was decoded, then report the truncation.
                        let rest = chunker.take_pending();
                        if !rest.is_empty() && tx.send(Msg::Chunk(rest, at_line_start)).is_err() {
                            return;
                        }
                        let _ = tx.send(Msg::Truncated);
                        return;
                    }
                    Err(e) => {
                        // A failing source (disk, pipe) is an I/O error; anything else the decoder says is
                        // about the bytes: damaged data.
                        let err = if source.failed.load(Ordering::Relaxed) {
                            Error::io(path, e)
                        } else {
                            corrupt_stream(
                                path,
                                format,
                                source.read.load(Ordering::Relaxed),
                                decoded,
                                &e,
                            )
                        };
                        let _ = tx.send(Msg::Err(err));
                        return;
                    }
                }
            }
        });
        let mut json = 0u64;
        let mut done = false;
        let mut truncated = false;
        while !done {
            let mut chunks = Vec::with_capacity(batch);
            while chunks.len() < batch {
                match rx.recv() {
                    Ok(Msg::Chunk(c, s)) => chunks.push((c, s)),
                    Ok(Msg::Truncated) => {
                        truncated = true;
                        done = true;
                        break;
                    }
                    Ok(Msg::Err(e)) => return Err(e),
                    Err(_) => {
                        done = true;
                        break;
                    }
                }
            }
            let outs: Vec<ChunkOut<T>> = chunks.par_iter().map(|(c, s)| work(c, *s)).collect();
            for o in outs {
                json += o.len;
                sink(o)?;
            }
        }
        if truncated {
            stats.truncated_stream = true;
        }
        Ok(json)
    })?;
    stats.json_bytes = json_bytes;
    stats.gzip_members = members.map(|m| m.load(Ordering::Relaxed));
    Ok(stats)
}

/// The error for compressed data the decoder rejects (not a failing disk): name the position and say what to do.
fn corrupt_stream(
    path: &Path,
    format: Format,
    compressed_read: u64,
    json: u64,
    e: &std::io::Error,
) -> Error {
    Error::bad_input(
        path,
        format!(
            "the {} data is damaged ({e}): the decoder failed within the first {compressed_read} compressed \
             bytes, after {json} bytes of JSON; download the dump again",
            format.as_str()
        ),
    )
}

/// Where a dump path points, for messages (`-` is stdin).
pub fn display_path(p: &Path) -> PathBuf {
    p.to_path_buf()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lines_of(bytes: &[u8], cuts: &[usize]) -> Vec<(u64, u64, Vec<u8>)> {
        // Feed `bytes` cut at `cuts` through frame + Joiner, collecting (line, offset, text) in order.
        let mut out = Vec::new();
        let mut j = Joiner::new();
        let mut prev = 0;
        let mut bounds: Vec<usize> = cuts.to_vec();
        bounds.push(bytes.len());
        for &b in &bounds {
            let piece = &bytes[prev..b];
            let at_start = prev == 0;
            let c = frame(piece, at_start, Vec::new(), |d: &mut Vec<_>, l, o, s| {
                d.push((l, o, s.to_vec()))
            });
            let (base, joined, data) = j.feed(c);
            if let Some(jl) = joined {
                out.push((jl.line, jl.offset, jl.bytes));
            }
            for (l, o, s) in data {
                out.push((base.line + l, base.offset + o, s));
            }
            prev = b;
        }
        if let Some(jl) = j.finish() {
            out.push((jl.line, jl.offset, jl.bytes));
        }
        out
    }

    #[test]
    fn joiner_gives_the_same_lines_for_any_cuts() {
        let text = b"[\n{\"a\":1},\n{\"bb\":22},\n\n{\"c\":3}\n]";
        let expect = lines_of(text, &[]);
        assert_eq!(expect.len(), 6);
        assert_eq!(expect[5], (5, text.len() as u64 - 1, b"]".to_vec()));
        for a in 0..=text.len() {
            for b in a..=text.len() {
                assert_eq!(lines_of(text, &[a, b]), expect, "cuts {a} {b}");
            }
        }
    }

    #[test]
    fn sniffs_formats() {
        assert_eq!(Format::sniff(&[0x1f, 0x8b, 8]), Format::Gzip);
        assert_eq!(Format::sniff(b"BZh9"), Format::Bzip2);
        assert_eq!(Format::sniff(&[0x28, 0xb5, 0x2f, 0xfd]), Format::Zstd);
        // What pzstd writes first: a skippable frame (magic 0x184D2A50, little-endian).
        assert_eq!(Format::sniff(&[0x50, 0x2a, 0x4d, 0x18, 4, 0]), Format::Zstd);
        assert_eq!(Format::sniff(&[0x5f, 0x2a, 0x4d, 0x18]), Format::Zstd);
        assert_eq!(Format::sniff(&[0x60, 0x2a, 0x4d, 0x18]), Format::Plain);
        assert_eq!(Format::sniff(&[0x50, 0x2a, 0x4d]), Format::Plain);
        assert_eq!(Format::sniff(b"[\n"), Format::Plain);
        assert_eq!(Format::sniff(b""), Format::Plain);
    }

    #[test]
    fn line_chunker_cuts_at_newlines_and_keeps_every_byte() {
        let text = b"aaaa\nbb\ncccccccccc\nd".to_vec();
        for size in 1..25 {
            let mut c = LineChunker::new(&text[..], size);
            let mut all = Vec::new();
            while let Some(ch) = c.next_chunk().unwrap() {
                assert!(!ch.is_empty());
                all.extend_from_slice(&ch);
            }
            assert_eq!(all, text, "size {size}");
        }
    }

    #[test]
    fn multi_member_gzip_reads_every_member() {
        use std::io::Write;
        let mut bytes = Vec::new();
        for part in [&b"[\n"[..], b"{\"x\":1},\n", b"]\n"] {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(part).unwrap();
            bytes.extend(e.finish().unwrap());
        }
        let mut d = MultiGz::new(&bytes[..]);
        let mut s = String::new();
        d.read_to_string(&mut s).unwrap();
        assert_eq!(s, "[\n{\"x\":1},\n]\n");
        assert_eq!(d.members().load(Ordering::Relaxed), 3);
    }
}
