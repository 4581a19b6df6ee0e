//! Multi-member gzip: parallel inflation of files laid out the way Wikimedia builds `latest-all.json.gz`, and a
//! writer for that layout.
//!
//! # Why
//! One core inflates only ≈550–650 MB/s of JSON with zlib-rs (≈120 MB/s with GNU `gzip -dc`), so a single
//! stream through a 140 GB file (≈1.5 TB of JSON) takes 40+ minutes of one core while the parser waits. Wikimedia
//! writes that file as hundreds of concatenated gzip members (8 shards × batches of pages, each member starting
//! at an entity line), so the members can be inflated independently on several cores, as long as we find where
//! each one starts.
//!
//! # How
//! A gzip member has no length field in its header, so member starts are found by scanning for the magic bytes
//! `1f 8b 08` followed by a plausible header (reserved flag bits zero, XFL 0, 2 or 4, a known OS byte). The same
//! bytes can occur by chance inside compressed data (about once per 16 MiB of random bytes before the header
//! checks), so each candidate is only a guess: it is inflated *streaming* on a rayon worker by a single-member
//! decoder (which checks CRC32 and ISIZE at the member's end), and when it ends we know how many compressed
//! bytes it used. The results are then reconciled in file order: a candidate is accepted only if it starts
//! exactly where the previously accepted member ended; a candidate inside an accepted member is a false one and
//! its result is dropped; if the previous member ends where no candidate starts (a header the scan judged
//! implausible), the member there is inflated sequentially. So every byte of the file belongs to exactly one
//! accepted member, in order, and anything else — bytes after the last member that are not gzip, a CRC or
//! length mismatch, a truncated member — is an [`Error::BadInput`] naming the byte offset.

use crate::error::{Error, Result};
use flate2::bufread::GzDecoder;
use flate2::{Compression, GzBuilder};
use std::collections::VecDeque;
use std::io::{self, BufRead, Read, Write};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

/// What [`par_members`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct MemberStats {
    /// Gzip members accepted (the real dump: hundreds; the generated 1000-entity fixture: 12).
    pub members: usize,
    /// Compressed bytes covered by the accepted members (equals the input length on success).
    pub compressed_bytes: u64,
    /// Decompressed bytes of all accepted members.
    pub decompressed_bytes: u64,
    /// Candidate starts found by the scan that were not member boundaries (magic bytes inside compressed data).
    pub false_candidates: usize,
    /// The data ends inside the last member, and `work` accepted what it decoded (see [`par_members`]).
    pub truncated: bool,
}

/// Size of the decompressed-data buffer each member reader hands to `work`.
const READ_BUF: usize = 256 * 1024;

/// Inflate every member of a multi-member gzip file in parallel (see the module docs).
///
/// `work(start, reader)` runs on a rayon worker for each candidate member; `start` is the byte offset of the
/// member in `data` (unique and strictly increasing in file order: use it to name the member in messages), and
/// `reader` yields the member's decompressed bytes, streaming (never the whole member in memory). `work` should
/// read to the end; whatever it leaves is drained, because the CRC32 and length are only checked there. `work`
/// may also run on candidates that turn out to be false; their results (and errors) are dropped, so `work` must
/// not have side effects that matter beyond its return value.
///
/// The results of the accepted members reach `sink` in file order, on the calling thread. At most `window`
/// members (at least 1) are in flight or waiting for `sink`, which bounds memory by `window` × the size of a
/// `work` result plus `window` × 256 KiB of buffers.
///
/// Returns `Ok(None)` without calling `work` when the scan finds fewer than two candidate members: the caller
/// then reads the data as one sequential stream (`MultiGzDecoder`). (For a single-member file that means one
/// `memchr` pass over the compressed bytes first; in a multi-member file the scan only runs ahead of the
/// window.) Errors: the first error of an accepted
/// member (inflate errors as [`Error::BadInput`] with its byte offset, `work` and `sink` errors as they are);
/// data that does not start with a gzip header, or that continues after the last member with something that is
/// not a gzip member, is [`Error::BadInput`] as well.
///
/// Truncation: when the data ends inside a member, that member's reader returns an
/// [`io::ErrorKind::UnexpectedEof`] error. If `work` returns that error (or any error), the member is a
/// truncated-member [`Error::BadInput`] naming its offset; if `work` returns `Ok` anyway (it chose to keep what
/// was decoded), its value reaches `sink` as the last member and [`MemberStats::truncated`] is set.
pub fn par_members<T: Send>(
    data: &[u8],
    window: usize,
    work: impl Fn(usize, &mut dyn BufRead) -> Result<T> + Sync,
    sink: impl FnMut(T) -> Result<()>,
) -> Result<Option<MemberStats>> {
    par_members_in(Path::new("<gzip data>"), data, window, work, sink)
}

/// [`par_members`], naming `path` in its errors.
pub fn par_members_in<T: Send>(
    path: &Path,
    data: &[u8],
    window: usize,
    work: impl Fn(usize, &mut dyn BufRead) -> Result<T> + Sync,
    mut sink: impl FnMut(T) -> Result<()>,
) -> Result<Option<MemberStats>> {
    if data.len() < 2 || data[..2] != [0x1f, 0x8b] {
        return Err(Error::bad_input(
            path,
            "not gzip data: no gzip header at byte offset 0",
        ));
    }
    let mut scan = Candidates::new(data);
    let first: Vec<usize> = scan.by_ref().take(2).collect();
    if first.len() < 2 {
        return Ok(None);
    }
    let window = window.max(1);
    let cancel = AtomicBool::new(false);
    let work = &work;
    let cancel_ref = &cancel;

    let result = rayon::in_place_scope_fifo(|scope| -> Result<MemberStats> {
        let (tx, rx) = mpsc::channel::<(u64, Outcome<T>)>();
        let mut pending: VecDeque<(usize, Option<Outcome<T>>)> = VecDeque::new();
        let mut spawned: u64 = 0; // tasks spawned so far = sequence number of the next one
        let mut front_seq: u64 = 0; // sequence number of pending.front()
        let mut cands = first.into_iter().chain(scan);
        let mut rec = Reconciler::new(path, data);

        let run = |result: Result<MemberStats>| {
            if result.is_err() {
                cancel_ref.store(true, Ordering::Relaxed);
            }
            result
        };
        run((|| {
            loop {
                while pending.len() < window {
                    let Some(start) = cands.next() else { break };
                    let tx = tx.clone();
                    let seq = spawned;
                    scope.spawn_fifo(move |_| {
                        let out = panic::catch_unwind(AssertUnwindSafe(|| {
                            inflate_member(data, start, work, cancel_ref)
                        }))
                        .unwrap_or_else(Outcome::Panicked);
                        // The receiver is gone only when the coordinator has already failed.
                        let _ = tx.send((seq, out));
                    });
                    spawned += 1;
                    pending.push_back((start, None));
                }
                let Some(front) = pending.front() else { break };
                if front.1.is_none() {
                    let (seq, out) = wait_one(&rx);
                    let slot = (seq - front_seq) as usize;
                    pending[slot].1 = Some(out);
                    continue;
                }
                let (start, out) = pending.pop_front().expect("front exists");
                front_seq += 1;
                rec.candidate(
                    start,
                    out.expect("checked above"),
                    work,
                    cancel_ref,
                    &mut sink,
                )?;
            }
            rec.finish(work, cancel_ref, &mut sink)
        })())
    });
    result.map(Some)
}

/// Wait for one task message, helping the pool meanwhile when this thread belongs to it (so a one-thread pool
/// cannot deadlock on its own coordinator).
fn wait_one<M>(rx: &mpsc::Receiver<M>) -> M {
    loop {
        if let Ok(m) = rx.try_recv() {
            return m;
        }
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => continue,
            Some(rayon::Yield::Idle) => {
                if let Ok(m) = rx.recv_timeout(Duration::from_micros(500)) {
                    return m;
                }
            }
            // Not a pool thread: the tasks run elsewhere; the coordinator holds a sender, so this cannot hang
            // unless a task never ends.
            None => return rx.recv().expect("coordinator holds a sender"),
        }
    }
}

/// Sequential bookkeeping in file order.
struct Reconciler<'a> {
    path: &'a Path,
    data: &'a [u8],
    /// Byte offset where the next member must start (end of the last accepted member).
    expected: usize,
    stats: MemberStats,
}

impl<'a> Reconciler<'a> {
    fn new(path: &'a Path, data: &'a [u8]) -> Self {
        Reconciler {
            path,
            data,
            expected: 0,
            stats: MemberStats::default(),
        }
    }

    /// The next candidate in file order, with the outcome of its parallel inflation.
    fn candidate<T>(
        &mut self,
        start: usize,
        out: Outcome<T>,
        work: &(impl Fn(usize, &mut dyn BufRead) -> Result<T> + Sync),
        cancel: &AtomicBool,
        sink: &mut impl FnMut(T) -> Result<()>,
    ) -> Result<()> {
        // A member starts where no candidate was found: inflate it here, before this candidate.
        while self.expected < start {
            let at = self.expected;
            let out = inflate_member(self.data, at, work, cancel);
            self.accept(at, out, sink)?;
        }
        if start < self.expected {
            self.stats.false_candidates += 1;
            return Ok(());
        }
        self.accept(start, out, sink)
    }

    /// After the last candidate: whatever follows the last member must itself be members.
    fn finish<T>(
        mut self,
        work: &(impl Fn(usize, &mut dyn BufRead) -> Result<T> + Sync),
        cancel: &AtomicBool,
        sink: &mut impl FnMut(T) -> Result<()>,
    ) -> Result<MemberStats> {
        while self.expected < self.data.len() {
            let at = self.expected;
            let out = inflate_member(self.data, at, work, cancel);
            self.accept(at, out, sink)?;
        }
        Ok(self.stats)
    }

    /// The member at `self.expected` (= `start`) with its outcome: it must be valid.
    fn accept<T>(
        &mut self,
        start: usize,
        out: Outcome<T>,
        sink: &mut impl FnMut(T) -> Result<()>,
    ) -> Result<()> {
        debug_assert_eq!(start, self.expected);
        let n = self.stats.members;
        let what = |e: &str| {
            if n == 0 {
                format!("gzip member at byte offset {start}: {e}")
            } else {
                format!(
                    "gzip member {} at byte offset {start} (after {n} valid members): {e}",
                    n + 1
                )
            }
        };
        match out {
            Outcome::Member {
                value,
                compressed,
                decompressed,
            } => {
                self.expected = start + compressed;
                self.stats.members += 1;
                self.stats.compressed_bytes += compressed as u64;
                self.stats.decompressed_bytes += decompressed;
                sink(value)
            }
            Outcome::Truncated {
                value,
                decompressed,
            } => {
                // The decoder ran out of input: this member runs to the end of the data.
                self.expected = self.data.len();
                self.stats.members += 1;
                self.stats.compressed_bytes += (self.data.len() - start) as u64;
                self.stats.decompressed_bytes += decompressed;
                self.stats.truncated = true;
                sink(value)
            }
            Outcome::Inflate(e) => Err(Error::bad_input(
                self.path,
                format!("{}; the file is damaged, download it again", what(&e)),
            )),
            Outcome::Work(e) => Err(e),
            Outcome::Cancelled => Err(Error::bad_input(self.path, what("cancelled"))),
            Outcome::Panicked(p) => panic::resume_unwind(p),
        }
    }
}

/// Result of inflating one candidate member.
enum Outcome<T> {
    /// A complete, valid member: `work`'s value, compressed length (header to trailer), decompressed length.
    Member {
        value: T,
        compressed: usize,
        decompressed: u64,
    },
    /// The data ends inside this member, and `work` kept what was decoded.
    Truncated { value: T, decompressed: u64 },
    /// Not a valid member at this offset (bad header, corrupt deflate data, CRC/length mismatch, truncated).
    Inflate(String),
    /// `work` failed on data that inflated without error so far.
    Work(Error),
    /// Stopped because another member failed.
    Cancelled,
    /// `work` panicked.
    Panicked(Box<dyn std::any::Any + Send + 'static>),
}

/// Inflate the member starting at `data[start]`, running `work` on its bytes.
fn inflate_member<T>(
    data: &[u8],
    start: usize,
    work: &(impl Fn(usize, &mut dyn BufRead) -> Result<T> + Sync),
    cancel: &AtomicBool,
) -> Outcome<T> {
    let input = &data[start..];
    let mut r = MemberReader {
        dec: GzDecoder::new(input),
        buf: vec![0; READ_BUF].into_boxed_slice(),
        pos: 0,
        filled: 0,
        out: 0,
        failed: None,
        cancel,
    };
    let res = work(start, &mut r);
    let drained = match &res {
        Ok(_) => r.drain(),
        Err(_) => Ok(()),
    };
    if let Some(e) = r.failed.take() {
        return match (e, res) {
            (Failure::Cancelled, _) => Outcome::Cancelled,
            (Failure::Inflate(io::ErrorKind::UnexpectedEof, _), Ok(value)) => Outcome::Truncated {
                value,
                decompressed: r.out,
            },
            (Failure::Inflate(kind, msg), _) => Outcome::Inflate(describe(kind, &msg)),
        };
    }
    match (res, drained) {
        (Err(e), _) => Outcome::Work(e),
        (Ok(_), Err(e)) => Outcome::Inflate(e.to_string()),
        (Ok(value), Ok(())) => Outcome::Member {
            value,
            compressed: input.len() - r.dec.get_ref().len(),
            decompressed: r.out,
        },
    }
}

fn describe(kind: io::ErrorKind, msg: &str) -> String {
    match kind {
        io::ErrorKind::UnexpectedEof => format!("truncated member ({msg})"),
        _ if msg.contains("checksum") => {
            "CRC32 or length mismatch (corrupt or altered member)".to_string()
        }
        _ => msg.to_string(),
    }
}

enum Failure {
    Cancelled,
    Inflate(io::ErrorKind, String),
}

/// `BufRead` over one member's decompressed bytes, remembering the first inflate error.
struct MemberReader<'a> {
    dec: GzDecoder<&'a [u8]>,
    buf: Box<[u8]>,
    pos: usize,
    filled: usize,
    out: u64,
    failed: Option<Failure>,
    cancel: &'a AtomicBool,
}

impl MemberReader<'_> {
    /// Read and discard to the member's end (which checks CRC32 and ISIZE).
    fn drain(&mut self) -> io::Result<()> {
        loop {
            let n = self.fill_buf()?.len();
            if n == 0 {
                return Ok(());
            }
            self.consume(n);
        }
    }
}

impl Read for MemberReader<'_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let avail = self.fill_buf()?;
        let n = avail.len().min(out.len());
        out[..n].copy_from_slice(&avail[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for MemberReader<'_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        if self.pos >= self.filled {
            match &self.failed {
                Some(Failure::Cancelled) => {
                    return Err(io::Error::other("cancelled: another gzip member failed"))
                }
                Some(Failure::Inflate(kind, msg)) => {
                    return Err(io::Error::new(*kind, msg.clone()))
                }
                None => {}
            }
            if self.cancel.load(Ordering::Relaxed) {
                self.failed = Some(Failure::Cancelled);
                return Err(io::Error::other("cancelled: another gzip member failed"));
            }
            loop {
                match self.dec.read(&mut self.buf) {
                    Ok(n) => {
                        self.pos = 0;
                        self.filled = n;
                        self.out += n as u64;
                        break;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        self.failed = Some(Failure::Inflate(e.kind(), e.to_string()));
                        return Err(e);
                    }
                }
            }
        }
        Ok(&self.buf[self.pos..self.filled])
    }

    fn consume(&mut self, amt: usize) {
        self.pos = (self.pos + amt).min(self.filled);
    }
}

/// Candidate member starts in file order: offset 0, then every `1f 8b 08` followed by a plausible header.
pub struct Candidates<'a> {
    data: &'a [u8],
    next: usize,
    finder: memchr::memmem::Finder<'static>,
}

impl<'a> Candidates<'a> {
    /// Scan `data` lazily (the scan runs ahead of the inflation only as far as the window needs).
    pub fn new(data: &'a [u8]) -> Self {
        Candidates {
            data,
            next: 0,
            finder: memchr::memmem::Finder::new(&[0x1f, 0x8b, 0x08]),
        }
    }
}

impl Iterator for Candidates<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        while self.next < self.data.len() {
            let Some(i) = self.finder.find(&self.data[self.next..]) else {
                self.next = self.data.len();
                return None;
            };
            let at = self.next + i;
            self.next = at + 1;
            if plausible_header(&self.data[at..]) {
                return Some(at);
            }
        }
        None
    }
}

/// `h` starts with a gzip member header as real writers produce it: magic, deflate, no reserved flag bits,
/// XFL 0/2/4, OS byte 0–13 or 255 (RFC 1952). A header that fails this is still read if it follows a member.
pub fn plausible_header(h: &[u8]) -> bool {
    h.len() >= 10
        && h[0] == 0x1f
        && h[1] == 0x8b
        && h[2] == 0x08
        && h[3] & 0xe0 == 0
        && matches!(h[8], 0 | 2 | 4)
        && (h[9] <= 13 || h[9] == 255)
}

/// One complete gzip member holding `chunk` (header as GNU gzip writes it on Unix: no name, mtime 0, OS 3).
pub fn compress_member(chunk: &[u8], level: Compression) -> Vec<u8> {
    let mut out = Vec::with_capacity(chunk.len() / 4 + 64);
    write_member(&mut out, chunk, level).expect("writing to a Vec cannot fail");
    out
}

/// Write `chunk` as one complete gzip member; returns the compressed size.
pub fn write_member<W: Write>(w: W, chunk: &[u8], level: Compression) -> io::Result<u64> {
    let mut counter = CountingWriter { inner: w, n: 0 };
    let mut enc = GzBuilder::new()
        .operating_system(3)
        .write(&mut counter, level);
    enc.write_all(chunk)?;
    enc.finish()?;
    Ok(counter.n)
}

/// Write each chunk as its own gzip member; returns the compressed size of the whole file.
pub fn write_members<'c, W: Write>(
    mut w: W,
    chunks: impl IntoIterator<Item = &'c [u8]>,
    level: Compression,
) -> io::Result<u64> {
    let mut total = 0;
    for c in chunks {
        total += write_member(&mut w, c, level)?;
    }
    Ok(total)
}

/// Write entity lines in Wikimedia's `latest-all.json.gz` layout: a member holding `[\n`, one member per batch
/// of `batch` lines (each line followed by `,\n`, except the very last line), and a member holding `\n]\n`.
/// The decompressed bytes are exactly the plain dump `[\n` + lines joined by `,\n` + `\n]\n`.
pub fn write_wikimedia_layout<W: Write>(
    mut w: W,
    lines: &[&[u8]],
    batch: usize,
    level: Compression,
) -> io::Result<u64> {
    let mut total = write_member(&mut w, b"[\n", level)?;
    let batch = batch.max(1);
    let mut buf = Vec::new();
    for (b, group) in lines.chunks(batch).enumerate() {
        buf.clear();
        for (i, l) in group.iter().enumerate() {
            buf.extend_from_slice(l);
            let last = b * batch + i + 1 == lines.len();
            if !last {
                buf.extend_from_slice(b",\n");
            }
        }
        total += write_member(&mut w, &buf, level)?;
    }
    total += write_member(&mut w, b"\n]\n", level)?;
    Ok(total)
}

struct CountingWriter<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use flate2::bufread::MultiGzDecoder;
    use proptest::prelude::*;

    /// Concatenate the members through `par_members`.
    fn inflate_all(data: &[u8], window: usize) -> Result<Option<(Vec<u8>, MemberStats)>> {
        let mut out = Vec::new();
        let stats = par_members(
            data,
            window,
            |_, r| {
                let mut v = Vec::new();
                r.read_to_end(&mut v).map_err(|e| Error::io("member", e))?;
                Ok(v)
            },
            |v| {
                out.extend_from_slice(&v);
                Ok(())
            },
        )?;
        Ok(stats.map(|s| (out, s)))
    }

    fn oracle(data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        MultiGzDecoder::new(data).read_to_end(&mut v).unwrap();
        v
    }

    fn layout(lines: &[Vec<u8>], batch: usize, level: Compression) -> (Vec<u8>, Vec<u8>) {
        let refs: Vec<&[u8]> = lines.iter().map(|l| l.as_slice()).collect();
        let mut gz = Vec::new();
        write_wikimedia_layout(&mut gz, &refs, batch, level).unwrap();
        let mut plain = b"[\n".to_vec();
        plain.extend_from_slice(&refs.join(&b",\n"[..]));
        plain.extend_from_slice(b"\n]\n");
        (gz, plain)
    }

    fn sample_lines(n: usize) -> Vec<Vec<u8>> {
        (0..n)
            .map(|i| {
                format!(
                    "{{\"type\":\"item\",\"id\":\"Q{}\",\"labels\":{{\"en\":{{\"language\":\"en\",\"value\":\"x{}\"}}}}}}",
                    i * 7 + 1,
                    "y".repeat(i % 13)
                )
                .into_bytes()
            })
            .collect()
    }

    #[test]
    fn round_trip_layout_counts_members() {
        let lines = sample_lines(250);
        let (gz, plain) = layout(&lines, 100, Compression::default());
        let (out, stats) = inflate_all(&gz, 4).unwrap().unwrap();
        assert_eq!(out, plain);
        assert_eq!(oracle(&gz), plain);
        assert_eq!(stats.members, 5); // [ + 3 batches + ]
        assert_eq!(stats.compressed_bytes, gz.len() as u64);
        assert_eq!(stats.decompressed_bytes, plain.len() as u64);
        assert_eq!(stats.false_candidates, 0);
    }

    #[test]
    fn single_member_is_none() {
        let gz = compress_member(b"[\n{}\n]\n", Compression::default());
        assert!(inflate_all(&gz, 2).unwrap().is_none());
    }

    #[test]
    fn not_gzip_is_an_error() {
        let e = inflate_all(b"[\n{}\n]\n", 2).unwrap_err();
        assert!(e.to_string().contains("byte offset 0"), "{e}");
    }

    #[test]
    fn corrupted_crc_names_the_member_offset() {
        let lines = sample_lines(30);
        let (mut gz, _) = layout(&lines, 10, Compression::default());
        let starts: Vec<usize> = Candidates::new(&gz).collect();
        assert_eq!(starts.len(), 5);
        // Flip a CRC byte of member 3 (its trailer ends where member 4 starts).
        let crc_at = starts[3] - 8;
        gz[crc_at] ^= 0x55;
        let e = inflate_all(&gz, 3).unwrap_err();
        let msg = e.to_string();
        assert!(matches!(e, Error::BadInput { .. }), "{msg}");
        assert!(
            msg.contains(&format!("byte offset {}", starts[2])),
            "{msg} should name {}",
            starts[2]
        );
        assert!(msg.contains("CRC32"), "{msg}");
    }

    #[test]
    fn corrupted_length_is_an_error() {
        let lines = sample_lines(30);
        let (mut gz, _) = layout(&lines, 10, Compression::default());
        let starts: Vec<usize> = Candidates::new(&gz).collect();
        gz[starts[2] - 1] ^= 1; // ISIZE of member 1
        let msg = inflate_all(&gz, 2).unwrap_err().to_string();
        assert!(msg.contains(&format!("byte offset {}", starts[1])), "{msg}");
    }

    #[test]
    fn truncated_file_is_an_error() {
        let lines = sample_lines(30);
        let (gz, _) = layout(&lines, 10, Compression::default());
        let starts: Vec<usize> = Candidates::new(&gz).collect();
        for cut in [gz.len() - 1, gz.len() - 8, starts[4] - 3, starts[3] + 20] {
            let e = inflate_all(&gz[..cut], 2).unwrap_err();
            let msg = e.to_string();
            assert!(matches!(e, Error::BadInput { .. }), "cut {cut}: {msg}");
            assert!(msg.contains("byte offset"), "cut {cut}: {msg}");
        }
        // Cut inside the last member's header: the candidate there is not plausible any more, so the previous
        // member ends at a place the scan did not list, and the sequential path reports it.
        let msg = inflate_all(&gz[..starts[4] + 5], 2)
            .unwrap_err()
            .to_string();
        assert!(msg.contains(&format!("byte offset {}", starts[4])), "{msg}");
    }

    #[test]
    fn trailing_garbage_is_an_error() {
        let lines = sample_lines(30);
        let (mut gz, _) = layout(&lines, 10, Compression::default());
        let end = gz.len();
        gz.extend_from_slice(b"\0\0\0\0");
        let msg = inflate_all(&gz, 2).unwrap_err().to_string();
        assert!(msg.contains(&format!("byte offset {end}")), "{msg}");
    }

    #[test]
    fn implausible_header_is_read_sequentially() {
        // A member whose OS byte is not one a real writer uses is not a scan candidate, but it follows a member,
        // so it is still read, in order.
        let mut gz = compress_member(b"[\n", Compression::default());
        let mut odd = compress_member(b"{\"a\":1},\n", Compression::default());
        odd[9] = 200;
        gz.extend_from_slice(&odd);
        gz.extend_from_slice(&compress_member(b"{\"b\":2}", Compression::default()));
        gz.extend_from_slice(&compress_member(b"\n]\n", Compression::default()));
        let (out, stats) = inflate_all(&gz, 2).unwrap().unwrap();
        assert_eq!(out, oracle(&gz));
        assert_eq!(stats.members, 4);
    }

    /// A member holding stored (uncompressed) deflate blocks whose payload is `inner`: the scan sees any gzip
    /// header inside `inner` as a candidate.
    fn stored_member(inner: &[u8]) -> Vec<u8> {
        compress_member(inner, Compression::none())
    }

    #[test]
    fn magic_inside_a_member_is_a_false_candidate() {
        // Payload containing a complete, valid gzip member: the false candidate inflates successfully, and must
        // still be dropped because it starts inside the outer member.
        let nested = compress_member(b"NESTED DATA", Compression::default());
        let mut payload = b"{\"x\":\"".to_vec();
        payload.extend_from_slice(&nested);
        payload.extend_from_slice(b"\"},\n");
        // And a plausible header followed by garbage (a false candidate that fails to inflate).
        payload.extend_from_slice(&[0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff]);
        payload.extend_from_slice(b"tail,\n");
        let mut gz = compress_member(b"[\n", Compression::default());
        let outer_at = gz.len();
        let outer = stored_member(&payload);
        assert!(outer.windows(nested.len()).any(|w| w == nested));
        gz.extend_from_slice(&outer);
        gz.extend_from_slice(&compress_member(b"{}\n]\n", Compression::default()));
        let cands: Vec<usize> = Candidates::new(&gz).collect();
        assert_eq!(cands.len(), 5, "{cands:?}");
        assert_eq!(cands[1], outer_at);
        for window in [1, 2, 8] {
            let (out, stats) = inflate_all(&gz, window).unwrap().unwrap();
            assert_eq!(out, oracle(&gz));
            assert_eq!(stats.members, 3);
            assert_eq!(stats.false_candidates, 2);
            assert_eq!(stats.compressed_bytes, gz.len() as u64);
        }
    }

    #[test]
    fn false_candidate_in_the_last_member_and_missed_start() {
        // The only candidates after 0 are false ones inside the last member; the true second member start has an
        // implausible header (so it is a missed start, read sequentially).
        let nested = compress_member(b"zz", Compression::default());
        let mut gz = compress_member(b"[\n", Compression::default());
        let mut second = stored_member(&[b"{\"a\":\"".as_slice(), &nested, b"\"}\n]\n"].concat());
        second[8] = 9; // implausible XFL
        gz.extend_from_slice(&second);
        let (out, stats) = inflate_all(&gz, 2).unwrap().unwrap();
        assert_eq!(out, oracle(&gz));
        assert_eq!(stats.members, 2);
        assert_eq!(stats.false_candidates, 1);
    }

    #[test]
    fn work_errors_of_accepted_members_propagate() {
        let lines = sample_lines(30);
        let (gz, _) = layout(&lines, 10, Compression::default());
        let starts: Vec<usize> = Candidates::new(&gz).collect();
        let bad = starts[2];
        let e = par_members(
            &gz,
            2,
            |start, r| {
                let mut v = Vec::new();
                r.read_to_end(&mut v).map_err(|e| Error::io("m", e))?;
                if start == bad {
                    return Err(Error::Config("work failed".into()));
                }
                Ok(v.len())
            },
            |_| Ok(()),
        )
        .unwrap_err();
        assert!(
            matches!(e, Error::Config(ref m) if m == "work failed"),
            "{e}"
        );
        // And a sink error stops the run.
        let mut seen = 0;
        let e = par_members(
            &gz,
            2,
            |_, r| {
                let mut v = Vec::new();
                r.read_to_end(&mut v).map_err(|e| Error::io("m", e))?;
                Ok(v.len())
            },
            |_| {
                seen += 1;
                if seen == 2 {
                    Err(Error::Config("sink full".into()))
                } else {
                    Ok(())
                }
            },
        )
        .unwrap_err();
        assert!(matches!(e, Error::Config(ref m) if m == "sink full"));
        assert_eq!(seen, 2);
    }

    #[test]
    fn work_that_stops_early_is_drained_and_checked() {
        let lines = sample_lines(30);
        let (mut gz, plain) = layout(&lines, 10, Compression::default());
        let mut total = 0u64;
        let stats = par_members(
            &gz,
            2,
            |_, r| {
                let mut first = [0u8; 1];
                let n = r.read(&mut first).map_err(|e| Error::io("m", e))?;
                Ok(n)
            },
            |n| {
                total += n as u64;
                Ok(())
            },
        )
        .unwrap()
        .unwrap();
        assert_eq!(total, 5);
        assert_eq!(stats.decompressed_bytes, plain.len() as u64);
        // The CRC is still checked for a member `work` did not finish.
        let starts: Vec<usize> = Candidates::new(&gz).collect();
        gz[starts[2] - 8] ^= 1;
        let e = par_members(&gz, 2, |_, _| Ok(()), |_| Ok(())).unwrap_err();
        assert!(e.to_string().contains("CRC32"), "{e}");
    }

    #[test]
    fn one_and_two_threads_agree() {
        let lines = sample_lines(400);
        let (gz, plain) = layout(&lines, 37, Compression::fast());
        let mut results = Vec::new();
        for threads in [1, 2] {
            let pool = rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap();
            for window in [1, 3, 16] {
                let r = pool.install(|| inflate_all(&gz, window)).unwrap().unwrap();
                assert_eq!(r.0, plain);
                results.push(r);
            }
        }
        assert!(results.windows(2).all(|w| w[0] == w[1]));
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
        #[test]
        fn prop_round_trip(
            lines in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..300), 0..60),
            batch in 1usize..20,
            window in 1usize..6,
            level in 0u32..10,
        ) {
            let (gz, plain) = layout(&lines, batch, Compression::new(level));
            let got = inflate_all(&gz, window).unwrap();
            let (out, stats) = got.expect("at least the [ and ] members");
            prop_assert_eq!(&out, &plain);
            prop_assert_eq!(out, oracle(&gz));
            prop_assert_eq!(stats.compressed_bytes, gz.len() as u64);
            // Random bytes in stored blocks may contain plausible headers; those are false candidates.
            prop_assert_eq!(stats.members, 2 + lines.len().div_ceil(batch));
        }
    }
}
