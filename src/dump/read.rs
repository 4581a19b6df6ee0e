//! The dump reader: one entry point ([`read_dump`]) that sniffs the format and takes the fastest path for it
//! (see the module documentation of [`super`]), handing chunks of decompressed JSON to the workers and their
//! results, in input order, to the sink.

use super::chunk::ChunkOut;
use super::{bz2, gz, start, Format};
use crate::core::error::{Error, IoContext, Result};
use crate::core::progress::Progress;
use rayon::prelude::*;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

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
    /// Worker threads of the pool the reader runs on, given by the caller (a stage: its context's
    /// `threads()`): sizes the batches and queues only, never what is read.
    pub threads: usize,
    /// Hash a gzip file's bytes while reading them ([`ReadStats::input_hash`]): the manifest's hash of the input
    /// without a second read of the file (see [`FileHash`]).
    pub hash_input: bool,
}

impl ReadOpts {
    /// How far the parallel gzip reader may run ahead, on [`ReadOpts::threads`] workers.
    pub fn gz_limits(&self) -> gz::Limits {
        gz::Limits::new(self.threads, self.chunks_per_thread, self.chunk_size)
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
            threads: 1,
            hash_input: false,
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
    /// The xxh3-128 of the whole input file, from the bytes the reader read ([`ReadOpts::hash_input`], a gzip
    /// file: [`hashes_input`]); `None` otherwise, or when the bytes hashed were not the whole file.
    #[serde(skip)]
    pub input_hash: Option<FileHash>,
}

/// The size and xxh3-128 of a whole file, computed by its reader.
///
/// Why: the manifest records the hash of extract's dump. A thread of its own used to read the file a second time
/// for it (from the page cache, just behind the reader), which cost a copy of every page into its buffer and a
/// tenth of the CPU the hash itself took again in system time. The parallel gzip reader has every byte of the
/// file in its memory map anyway: it hashes each stretch just before it drops the stretch's pages, in file
/// order ([`Following`]); the sequential gzip reader hashes what it reads from the file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FileHash {
    pub size: u64,
    pub xxh3_128: u128,
}

/// Whether [`read_dump`] with [`ReadOpts::hash_input`] hashes `path` ([`ReadStats::input_hash`]): a regular file
/// that starts like gzip (a caller hashes the other inputs itself). An unreadable file says `false` (the read
/// then fails on its own).
pub fn hashes_input(path: &Path) -> bool {
    if start::is_stream(path) {
        return false;
    }
    let Ok(file) = std::fs::File::open(path) else {
        return false;
    };
    let mut first = [0u8; 4];
    read_up_to(&file, &mut first).is_ok_and(|n| Format::sniff(&first[..n]) == Format::Gzip)
}

/// A hash of a memory-mapped file fed in file order by the stretches its reader releases: a stretch that
/// continues (or overlaps) what was hashed so far is hashed, then its pages may go; one further on is left for
/// later (hashed from the map, paging it in again, when the stretches before it come); [`Following::finish`]
/// hashes whatever is left. Whatever order the stretches come in, the result is the hash of the whole map.
pub(crate) struct Following {
    h: xxhash_rust::xxh3::Xxh3,
    next: usize,
}

impl Following {
    fn new() -> Following {
        Following {
            h: xxhash_rust::xxh3::Xxh3::new(),
            next: 0,
        }
    }

    /// The reader is done with `data[offset..offset + len]`.
    fn released(&mut self, data: &[u8], offset: usize, len: usize) {
        if offset <= self.next {
            self.upto(data, offset.saturating_add(len));
        }
    }

    fn upto(&mut self, data: &[u8], end: usize) {
        let end = end.min(data.len());
        if end > self.next {
            self.h.update(&data[self.next..end]);
            self.next = end;
        }
    }

    fn finish(mut self, data: &[u8]) -> FileHash {
        self.upto(data, data.len());
        FileHash {
            size: data.len() as u64,
            xxh3_128: self.h.digest128(),
        }
    }
}

/// Per-chunk worker: `(bytes, at_line_start) → ChunkOut`.
pub type Work<'a, T> = dyn Fn(&[u8], bool) -> ChunkOut<T> + Sync + 'a;

/// Read a dump (`-` = stdin), calling `work` on chunks in parallel and `sink` on the results in input order.
pub fn read_dump<T: Send + super::Held>(
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
        return read_whole_stream(
            std::io::stdin(),
            Path::new("-"),
            opts,
            work,
            sink,
            progress,
            stats,
        );
    }
    if start::is_stream(path) {
        // A named pipe (or a device): read once, front to back, like stdin; never mapped, never reopened.
        let file = std::fs::File::open(path).at(path)?;
        return read_whole_stream(file, path, opts, work, sink, progress, stats);
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
    // A new parallel decoder (as bzip2 blocks were) goes here; a decoder that is parallel inside a `Read` can
    // instead replace the sequential one in `read_stream`.
    let parallel = match format {
        Format::Gzip if opts.parallel_gzip => {
            // SAFETY: as above.
            let map = unsafe { memmap2::Mmap::map(&file) }.at(path)?;
            advise_sequential(&map);
            let following = opts
                .hash_input
                .then(|| std::sync::Mutex::new(Following::new()));
            let read = gz_parallel(
                &map,
                0..map.len(),
                opts,
                work,
                sink,
                progress,
                path,
                following.as_ref(),
            )?;
            if let (Some(_), Some(f)) = (&read, following) {
                let f = f
                    .into_inner()
                    .unwrap_or_else(std::sync::PoisonError::into_inner);
                stats.input_hash = Some(f.finish(&map));
            }
            read
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
        let read = read_parallel(&map, opts, work, sink, progress, path)?;
        return Ok(bz2_stats(stats, &read));
    }
    let file = std::fs::File::open(path).at(path)?;
    let mut counted = CountingReader::new(file, progress);
    let hashing = opts.hash_input && format == Format::Gzip;
    if hashing {
        counted.state = Arc::new(SourceState::hashing());
    }
    let source = Arc::clone(&counted.state);
    let mut stats = read_stream(counted, format, path, opts, work, sink, stats)?;
    if hashing {
        stats.input_hash = source.file_hash().filter(|h| h.size == len);
    }
    Ok(stats)
}

/// Read a stream (stdin, a named pipe) once: its first bytes are peeked through the buffer to sniff the format.
fn read_whole_stream<R: Read + Send, T: Send + super::Held>(
    r: R,
    path: &Path,
    opts: &ReadOpts,
    work: &Work<'_, T>,
    sink: &mut dyn FnMut(ChunkOut<T>) -> Result<()>,
    progress: &Progress,
    mut stats: ReadStats,
) -> Result<ReadStats> {
    let mut r = BufReader::with_capacity(1 << 20, r);
    let first = r.fill_buf().at(path)?;
    let format = Format::sniff(first);
    stats.format = Some(format);
    let mut counted = CountingReader::new(r, progress);
    if format == Format::Bzip2 && opts.parallel_bzip2 {
        let read = read_parallel_stream(&mut counted, opts, work, sink, path)?;
        return Ok(bz2_stats(stats, &read));
    }
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
///
/// With `following` (offsets in the map), every stretch released is fed to it before its pages go: the hash of
/// the whole file ([`ReadOpts::hash_input`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn gz_parallel<T: Send + super::Held>(
    map: &memmap2::Mmap,
    range: std::ops::Range<usize>,
    opts: &ReadOpts,
    work: &Work<'_, T>,
    sink: &mut dyn FnMut(ChunkOut<T>) -> Result<()>,
    progress: &Progress,
    path: &Path,
    following: Option<&std::sync::Mutex<Following>>,
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
    let drop_pages = |offset: usize, len: usize| {
        let at = range.start.saturating_add(offset);
        if let Some(f) = following {
            f.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .released(map, at, len);
        }
        release(map, at, len)
    };
    // Bytes the member scan has just read: hashed now, while they are in the cache (from memory at the
    // release, far behind, the hash cost three times as much CPU). Bytes the scan skipped are hashed when
    // released (`Following` takes only what continues its hash).
    let scanned = |offset: usize, len: usize| {
        if let Some(f) = following {
            f.lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .released(map, range.start.saturating_add(offset), len);
        }
    };
    let stats = gz::par_members_in(
        path,
        data,
        &limits,
        piece,
        &|o: &ChunkOut<T>| super::Held::held(o),
        |o: ChunkOut<T>| {
            json += o.len;
            sink(o)
        },
        &mut done,
        &drop_pages,
        &scanned,
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
    let batch = pieces(opts);
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
    /// The bytes read, hashed in order (only when asked: [`ReadOpts::hash_input`]).
    hash: Option<std::sync::Mutex<xxhash_rust::xxh3::Xxh3>>,
}

impl SourceState {
    fn hashing() -> SourceState {
        SourceState {
            hash: Some(std::sync::Mutex::new(xxhash_rust::xxh3::Xxh3::new())),
            ..SourceState::default()
        }
    }

    /// The hash of the bytes read so far, when hashing.
    fn file_hash(&self) -> Option<FileHash> {
        let h = self.hash.as_ref()?;
        let h = h.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        Some(FileHash {
            size: self.read.load(Ordering::Relaxed),
            xxh3_128: h.digest128(),
        })
    }
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
                if let Some(h) = &self.state.hash {
                    h.lock()
                        .unwrap_or_else(std::sync::PoisonError::into_inner)
                        .update(&buf[..n]);
                }
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
    let batch = pieces(opts);
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

/// Pieces in flight for the dump reader: a few per thread.
fn pieces(opts: &ReadOpts) -> usize {
    opts.threads.max(1) * opts.chunks_per_thread.max(1)
}

/// The dump reader's side of [`bz2::par_blocks_from`]: each block's bytes are framed by `work` on its worker (a block
/// may start and end inside a line: the caller's [`Joiner`] glues them), the first block's start
/// is checked with [`start::check_start`], and `consumed(byte)` hears how far the input is consumed.
fn read_blocks<T: Send>(
    input: bz2::Input<'_>,
    opts: &ReadOpts,
    work: &Work<'_, T>,
    sink: &mut dyn FnMut(ChunkOut<T>) -> Result<()>,
    path: &Path,
    mut consumed: impl FnMut(usize),
) -> Result<bz2::BlockStats> {
    let first = std::sync::OnceLock::new();
    bz2::par_blocks_from(
        path,
        input,
        pieces(opts),
        &|bit, bytes: &[u8]| {
            if first.get() == Some(&bit) {
                let head = &bytes[..bytes.len().min(START_BYTES)];
                start::check_start(path, Format::Bzip2, head)?;
            }
            Ok(work(bytes, false))
        },
        |bit| {
            let _ = first.set(bit);
        },
        |byte, out| {
            consumed(byte);
            sink(out)
        },
    )
}

/// Read a memory-mapped bzip2 dump with [`bz2::par_blocks`] (see [`read_blocks`]); consumed pages are released.
pub(crate) fn read_parallel<T: Send>(
    map: &memmap2::Mmap,
    opts: &ReadOpts,
    work: &Work<'_, T>,
    sink: &mut dyn FnMut(ChunkOut<T>) -> Result<()>,
    progress: &crate::core::progress::Progress,
    path: &Path,
) -> Result<bz2::BlockStats> {
    let data: &[u8] = map;
    let mut last = 0usize;
    let stats = read_blocks(bz2::Input::Mapped(data), opts, work, sink, path, |byte| {
        progress.inc(byte.saturating_sub(last) as u64);
        release(map, last, byte.saturating_sub(last));
        last = last.max(byte);
    })?;
    progress.inc(data.len().saturating_sub(last) as u64);
    Ok(stats)
}

/// Read a bzip2 dump from a stream (stdin) with [`bz2::par_blocks_stream`] (see [`read_blocks`]): the reader counts
/// the progress as it is read. The window holds [`bz2::STREAM_CAP`], or 1 MiB per piece in flight when that is more
/// (a level-9 block is at most ≈ 900 kB compressed; a dump's blocks are a tenth of that).
pub(crate) fn read_parallel_stream<T: Send>(
    reader: &mut dyn Read,
    opts: &ReadOpts,
    work: &Work<'_, T>,
    sink: &mut dyn FnMut(ChunkOut<T>) -> Result<()>,
    path: &Path,
) -> Result<bz2::BlockStats> {
    let cap = bz2::STREAM_CAP.max(pieces(opts) as u64 * (1 << 20));
    read_blocks(
        bz2::Input::Stream { reader, cap },
        opts,
        work,
        sink,
        path,
        |_| {},
    )
}

#[cfg(test)]
mod tests {
    use super::*;

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

    proptest::proptest! {
        /// Whatever stretches the reader releases, in whatever order, overlapping or not, the hash is the
        /// file's (the oracle: xxh3-128 of the whole byte string at once).
        #[test]
        fn following_hashes_the_whole_file_whatever_is_released(
            data in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000),
            releases in proptest::collection::vec((0usize..3500, 0usize..1200), 0..20),
        ) {
            let mut f = Following::new();
            for (offset, len) in releases {
                f.released(&data, offset, len);
            }
            let h = f.finish(&data);
            proptest::prop_assert_eq!(h.size, data.len() as u64);
            proptest::prop_assert_eq!(h.xxh3_128, xxhash_rust::xxh3::xxh3_128(&data));
        }
    }

    /// `read_dump` with `hash_input`: a gzip file's hash (read in parallel, many members, or sequentially, one
    /// member) is the hash of the file's bytes; other formats and reads without `hash_input` give none.
    #[test]
    fn the_reader_hashes_the_gzip_file_it_reads() {
        use std::io::Write;
        let dir = tempfile::tempdir().unwrap();
        let json: Vec<u8> = std::iter::once(b"[\n".to_vec())
            .chain(
                (0..20_000u32)
                    .map(|i| format!("{{\"type\":\"item\",\"id\":\"Q{i}\"}},\n").into_bytes()),
            )
            .chain(std::iter::once(b"]\n".to_vec()))
            .flatten()
            .collect();
        let mut many = Vec::new();
        for piece in json.chunks(20_000) {
            many.extend(gz::compress_member(piece, flate2::Compression::fast()));
        }
        let mut one = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        one.write_all(&json).unwrap();
        let one = one.finish().unwrap();
        let work = |b: &[u8], _: bool| ChunkOut {
            len: b.len() as u64,
            newlines: 0,
            head: None,
            has_newline: false,
            tail: Vec::new(),
            data: (),
        };
        let read = |name: &str, bytes: &[u8], hash: bool, chunk: usize| {
            let path = dir.path().join(name);
            std::fs::write(&path, bytes).unwrap();
            let opts = ReadOpts {
                hash_input: hash,
                chunk_size: chunk,
                threads: 2,
                ..ReadOpts::default()
            };
            let mut json_bytes = 0u64;
            let stats = read_dump(
                &path,
                &opts,
                &work,
                &mut |c| {
                    json_bytes += c.len;
                    Ok(())
                },
                &Progress::hidden(),
            )
            .unwrap();
            assert_eq!(json_bytes, json.len() as u64, "{name}: every byte read");
            (hashes_input(&path), stats)
        };
        let whole = |b: &[u8]| FileHash {
            size: b.len() as u64,
            xxh3_128: xxhash_rust::xxh3::xxh3_128(b),
        };
        for chunk in [1 << 12, 1 << 20] {
            let (gz, stats) = read("many.json.gz", &many, true, chunk);
            assert!(gz && stats.parallel_inflate && stats.gzip_members > Some(10));
            assert_eq!(
                stats.input_hash,
                Some(whole(&many)),
                "many members, chunk {chunk}"
            );
            let (gz, stats) = read("one.json.gz", &one, true, chunk);
            assert!(gz && !stats.parallel_inflate);
            assert_eq!(
                stats.input_hash,
                Some(whole(&one)),
                "one member, chunk {chunk}"
            );
        }
        assert_eq!(
            read("many.json.gz", &many, false, 1 << 20).1.input_hash,
            None
        );
        let (gz, stats) = read("plain.json", &json, true, 1 << 20);
        assert!(!gz && stats.input_hash.is_none());
    }
}
