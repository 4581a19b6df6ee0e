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
//! checks), so each candidate is only a guess: it is inflated *speculatively* on the rayon workers, and only
//! accepted when it starts exactly where the previously accepted member ended (a candidate inside an accepted
//! member is a false one and its results are dropped; if the previous member ends where no candidate starts — a
//! header the scan judged implausible — the member there is read all the same). So every byte of the file belongs
//! to exactly one accepted member, in order, and anything else — bytes after the last member that are not gzip, a
//! CRC or length mismatch — is an [`Error::BadInput`] naming the byte offset.
//!
//! # Memory: bounded by [`Limits`], never by the input
//! A member is never collected whole (a member may hold gigabytes: the real dump's hold hundreds of MB, a crafted
//! one 3 GB of spaces). Each open member has a *reader*, a task that runs on one worker and reads the member
//! chunk by chunk: it inflates the next chunk (≤ [`Limits::chunk`] bytes, cut after its last newline; the partial
//! line is carried into the next one), parses it (`work`) and reports it, and goes on with the next chunk without
//! waiting for anyone; when fewer readers run than there are workers, it hands the parse to an idle worker and
//! inflates the next chunk meanwhile. The coordinator hands the parsed chunks to `sink` in file order as soon as
//! every chunk before them is handed on, so the checks in `sink` (the line bound, the bad-line limits) see a
//! member's lines while it streams. The member being handed on (the front) always proceeds; a reader behind it
//! pauses (handing its stream back to the coordinator, which restarts it later) when the parsed chunks waiting
//! for their turn hold `ahead × chunk` bytes as `weigh` counts them: a chunk of a decode-only run holds nothing,
//! one of extract the records it kept (a few percent of its bytes), so members run ahead far more than whole
//! chunks would allow, in the same memory. At any time the reader holds one chunk buffer per running reader and
//! per parse handed over (a parse is handed over only while fewer than `threads` of the two are busy: at most
//! 2 × threads buffers), `members` carried partial lines (< one chunk each), the
//! parsed chunks (≤ `ahead × chunk` bytes, plus the one each running reader is making), and one inflate state per
//! open member (≈ 50 KiB).

use super::inorder::wait_one;
use crate::core::error::{Error, Result};
use flate2::bufread::GzDecoder;
use std::collections::VecDeque;
use std::io::{self, Read};
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{mpsc, Arc, Mutex};

mod write;
pub use write::{compress_member, write_member, write_members, write_wikimedia_layout};

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
    /// The data ends inside the last member; what it decoded up to there was passed on (the caller decides
    /// whether a cut file is acceptable).
    pub truncated: bool,
}

/// How far the parallel reader may run ahead of the chunk being handed to `sink` (all at least 1). See the
/// module docs for what each one bounds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Members open at once (being read, paused, or done and waiting for their turn). Typical: 2 × threads.
    pub members: usize,
    /// Parse steps handed to idle workers at once (each holds one chunk buffer). Typical: 2 × threads.
    pub tasks: usize,
    /// Parsed chunks held for the members behind the front, waiting for their turn, in bytes as `weigh` counts
    /// them, in units of `chunk` (the budget is `ahead × chunk` bytes). Typical: 4 × threads.
    pub ahead: usize,
    /// Bytes of decompressed data per chunk (typical 4 MiB). A chunk ends after its last newline; a chunk
    /// without one is a piece of a longer line.
    pub chunk: usize,
    /// Worker threads of the rayon pool the members are inflated on (the caller's; a stage's context has
    /// it): how many parse steps may be handed to idle workers. Never changes the output.
    pub threads: usize,
}

impl Limits {
    /// The limits for `threads` workers with `per_thread` chunks each in flight, of `chunk` bytes.
    pub fn new(threads: usize, per_thread: usize, chunk: usize) -> Limits {
        let n = threads.max(1) * per_thread.max(1);
        Limits {
            members: n,
            tasks: n,
            ahead: 2 * n,
            chunk: chunk.max(1),
            threads: threads.max(1),
        }
    }

    fn sane(self) -> Limits {
        Limits {
            members: self.members.max(1),
            tasks: self.tasks.max(1),
            ahead: self.ahead.max(1),
            chunk: self.chunk.max(1),
            threads: self.threads.max(1),
        }
    }
}

/// One chunk of a member's decompressed bytes, as `work` sees it.
#[derive(Clone, Copy, Debug)]
pub struct Piece<'a> {
    /// Byte offset of the member in the data (names the member in messages).
    pub member: usize,
    /// 0-based number of the chunk within its member.
    pub index: u64,
    /// Whether the chunk starts at a line start: `false` for a member's first chunk (a layout need not start
    /// members at line starts) and after a chunk that ended inside a line.
    pub at_line_start: bool,
    /// The bytes (ending with `\n` unless the member ends here or the chunk is a piece of a longer line).
    pub bytes: &'a [u8],
}

/// Inflate every member of a multi-member gzip file in parallel (see the module docs), without hooks; every
/// result of `work` is counted as one whole chunk against [`Limits::ahead`].
pub fn par_members<T: Send>(
    data: &[u8],
    limits: &Limits,
    work: impl Fn(Piece<'_>) -> Result<T> + Sync,
    sink: impl FnMut(T) -> Result<()>,
) -> Result<Option<MemberStats>> {
    let chunk = limits.chunk;
    par_members_in(
        Path::new("<gzip data>"),
        data,
        limits,
        work,
        &|_: &T| chunk,
        sink,
        &mut |_| {},
        &|_, _| {},
        &|_, _| {},
    )
}

/// Inflate every member of a multi-member gzip file in parallel (see the module docs), naming `path` in errors.
///
/// `work(piece)` runs on the rayon workers for every chunk of every candidate member; its results reach `sink`
/// in file order, on the calling thread. `work` may also run on candidates that turn out to be false; their
/// results (and errors) are dropped, so `work` must not have side effects that matter beyond its return value.
/// `weigh(result)` is the bytes a result holds while it waits for its turn (counted against [`Limits::ahead`]).
/// `done(offset)` is called on the calling thread whenever the compressed bytes before `offset` are handled
/// (progress); `release(offset, len)` says that bytes of `data` will not be read again soon (a memory-mapped
/// caller drops their pages from its resident set; it may be called from any thread, and a range may still be
/// read after it, at the cost of reading it again). `scanned(offset, len)` says that the search for member starts
/// has just read those bytes (in file order, 256 KiB at a time, skipping what it need not search): a caller that
/// hashes the file hashes them now, while they are in the cache, instead of reading them again later.
///
/// Returns `Ok(None)` without calling `work` when the scan finds fewer than two candidate members: the caller
/// then reads the data as one sequential stream. Errors, in file order: the first error of an accepted member
/// (inflate errors as [`Error::BadInput`] with the member's byte offset, `work` and `sink` errors as they are);
/// data that does not start with a gzip header, or that continues after the last member with something that is
/// not a gzip member, is [`Error::BadInput`] as well. When the data ends inside a member, what that member
/// decoded up to the cut is passed on and [`MemberStats::truncated`] is set.
#[allow(clippy::too_many_arguments)]
pub fn par_members_in<T: Send>(
    path: &Path,
    data: &[u8],
    limits: &Limits,
    work: impl Fn(Piece<'_>) -> Result<T> + Sync,
    weigh: &(dyn Fn(&T) -> usize + Sync),
    mut sink: impl FnMut(T) -> Result<()>,
    done: &mut dyn FnMut(usize),
    release: &(dyn Fn(usize, usize) + Sync),
    scanned: &(dyn Fn(usize, usize) + Sync),
) -> Result<Option<MemberStats>> {
    if !data.starts_with(&[0x1f, 0x8b]) {
        return Err(Error::bad_input(
            path,
            "not gzip data: no gzip header at byte offset 0",
        ));
    }
    let mut scan = Candidates::new(data).releasing(release).scanning(scanned);
    let first: Vec<usize> = scan.by_ref().take(2).collect();
    if first.len() < 2 {
        return Ok(None);
    }
    let limits = limits.sane();
    let shared = Shared {
        work: &work,
        weigh,
        limits,
        threads: limits.threads,
        cancel: AtomicBool::new(false),
        front: AtomicUsize::new(0),
        held: AtomicUsize::new(0),
        running: AtomicUsize::new(0),
        offloaded: AtomicUsize::new(0),
        outstanding: AtomicUsize::new(0),
        buffers: Mutex::new(Vec::new()),
    };
    let sh = &shared;
    rayon::in_place_scope_fifo(|scope| {
        let (tx, rx) = mpsc::channel::<Msg<'_, T>>();
        let mut c = Coordinator {
            path,
            data,
            slots: VecDeque::new(),
            next_id: 0,
            expected: 0,
            released: 0,
            stats: MemberStats::default(),
            release,
        };
        let mut first = first.into_iter();
        let result = (|| -> Result<MemberStats> {
            loop {
                if c.reconcile(sh, &mut sink, done)? {
                    return Ok(c.stats.clone());
                }
                while c.slots.len() < limits.members {
                    // Bytes before `released` belong to accepted members or to the front one, which starts at
                    // `expected`: no member starts there, and scanning them again would fault back in the
                    // pages just dropped (at -j 1, with two members open, most of every member's pages).
                    let next = first.next().or_else(|| {
                        scan.skip_to(c.released);
                        scan.next()
                    });
                    let Some(start) = next else { break };
                    c.open(start);
                }
                if c.slots.is_empty() {
                    // Past the last candidate: whatever follows the last member must itself be members.
                    c.open(c.expected);
                }
                sh.front.store(
                    c.slots.front().map_or(usize::MAX, |s| s.start),
                    Ordering::Relaxed,
                );
                c.schedule(sh, |id, start, stop, stream| {
                    let tx = tx.clone();
                    sh.outstanding.fetch_add(1, Ordering::Relaxed);
                    scope.spawn_fifo(move |scope| {
                        read_member(sh, scope, &tx, id, start, &stop, stream);
                    });
                });
                if sh.outstanding.load(Ordering::Relaxed) == 0 {
                    // Cannot happen (the front member can always go on); fail rather than hang.
                    return Err(Error::internal(format!(
                        "{}: the gzip member reader stalled at byte offset {}",
                        path.display(),
                        c.expected
                    )));
                }
                match wait_one(&rx) {
                    Msg::Parsed {
                        id,
                        index,
                        result,
                        weight,
                        consumed,
                        offloaded,
                    } => {
                        if offloaded {
                            sh.outstanding.fetch_sub(1, Ordering::Relaxed);
                        }
                        match c.slots.iter_mut().find(|s| s.id == id) {
                            Some(slot) => slot.put(index, result, weight, consumed),
                            // A false candidate already dropped.
                            None => {
                                sh.held.fetch_sub(weight, Ordering::Relaxed);
                            }
                        }
                    }
                    Msg::Paused { id, stream } => {
                        sh.outstanding.fetch_sub(1, Ordering::Relaxed);
                        if let Some(slot) = c.slots.iter_mut().find(|s| s.id == id) {
                            slot.running = false;
                            slot.stream = Some(stream);
                        }
                    }
                    Msg::Ended {
                        id,
                        end,
                        chunks,
                        consumed,
                        decompressed,
                    } => {
                        sh.outstanding.fetch_sub(1, Ordering::Relaxed);
                        if let Some(slot) = c.slots.iter_mut().find(|s| s.id == id) {
                            slot.running = false;
                            slot.end = Some(end);
                            slot.chunks = Some(chunks);
                            slot.consumed = slot.consumed.max(consumed);
                            slot.decompressed = decompressed;
                        }
                    }
                    Msg::Panicked(p) => panic::resume_unwind(p),
                }
            }
        })();
        if result.is_err() {
            sh.cancel.store(true, Ordering::Relaxed);
        }
        for s in &c.slots {
            s.stop.store(true, Ordering::Relaxed);
        }
        result
    })
    .map(Some)
}

/// What the coordinator and the member readers share.
struct Shared<'w, T> {
    work: &'w (dyn Fn(Piece<'_>) -> Result<T> + Sync),
    weigh: &'w (dyn Fn(&T) -> usize + Sync),
    limits: Limits,
    threads: usize,
    /// A member failed (or `sink` did): every reader stops at its next chunk.
    cancel: AtomicBool,
    /// Where the member being handed on (the front) starts: it never pauses.
    front: AtomicUsize,
    /// Bytes (by `weigh`) of parsed chunks not yet handed to `sink`.
    held: AtomicUsize,
    /// Member readers running on a worker.
    running: AtomicUsize,
    /// Parse steps a member reader handed to another worker, not yet finished.
    offloaded: AtomicUsize,
    /// Member readers spawned and parse steps handed over whose last message the coordinator has not had:
    /// when 0, no message can come.
    outstanding: AtomicUsize,
    /// Chunk buffers to reuse.
    buffers: Mutex<Vec<Vec<u8>>>,
}

impl<T> Shared<'_, T> {
    /// Whether a member behind the front may read another chunk: the parsed chunks held stay under the budget.
    fn room_ahead(&self) -> bool {
        self.held.load(Ordering::Relaxed) < self.limits.ahead.saturating_mul(self.limits.chunk)
    }

    fn buffer(&self) -> Vec<u8> {
        self.buffers
            .lock()
            .ok()
            .and_then(|mut b| b.pop())
            .unwrap_or_default()
    }

    fn recycle(&self, buf: Vec<u8>) {
        if let Ok(mut b) = self.buffers.lock() {
            b.push(buf);
        }
    }
}

/// A parse step handed to another worker, taken by whichever thread gets to it first: a worker that was idle,
/// or the member reader itself before its next inflate step (so it never waits behind a busy worker's queue).
type Handoff<'s> = Arc<Mutex<Option<Box<dyn FnOnce() + Send + 's>>>>;

fn run_handoff(h: &Handoff<'_>) {
    let job = h.lock().ok().and_then(|mut j| j.take());
    if let Some(job) = job {
        job();
    }
}

/// Parse one chunk and report it (on the member reader's thread or on the worker it was handed to).
#[allow(clippy::too_many_arguments)]
fn parse_chunk<'a, T: Send>(
    sh: &Shared<'_, T>,
    tx: &mpsc::Sender<Msg<'a, T>>,
    id: u64,
    member: usize,
    consumed: usize,
    ch: Chunk,
    offloaded: bool,
) {
    let out = panic::catch_unwind(AssertUnwindSafe(|| {
        (sh.work)(Piece {
            member,
            index: ch.index,
            at_line_start: ch.at_line_start,
            bytes: ch.buf.get(..ch.len).unwrap_or_default(),
        })
    }));
    sh.recycle(ch.buf);
    let _ = tx.send(match out {
        Ok(result) => {
            let weight = result.as_ref().map_or(0, |r| (sh.weigh)(r));
            sh.held.fetch_add(weight, Ordering::Relaxed);
            Msg::Parsed {
                id,
                index: ch.index,
                result,
                weight,
                consumed,
                offloaded,
            }
        }
        Err(p) => Msg::Panicked(p),
    });
}

/// Read one member from where its stream stands, chunk after chunk, on this worker: inflate a chunk, parse it
/// (here, or on an idle worker while the next chunk inflates), report it; until the member ends, the reader is
/// told to stop, or — for a member behind the front — the parsed chunks held reach the budget (it then pauses,
/// handing its stream back).
///
/// Why a member runs on one worker: when each inflate step was a task of its own, the next step of a member
/// could start only once the coordinator had seen the last one, and every chunk waited for that round trip
/// (at -j 2, 15 % of the workers' time was idle; with 1 MiB chunks, 40 %). The coordinator now only hands the
/// parsed chunks on in order.
fn read_member<'s, 'a: 's, T: Send + 's>(
    sh: &'s Shared<'s, T>,
    scope: &rayon::ScopeFifo<'s>,
    tx: &mpsc::Sender<Msg<'a, T>>,
    id: u64,
    start: usize,
    stop: &AtomicBool,
    mut st: Box<Stream<'a>>,
) {
    sh.running.fetch_add(1, Ordering::Relaxed);
    let mut handed: Option<Handoff<'s>> = None;
    let out = panic::catch_unwind(AssertUnwindSafe(|| -> Msg<'a, T> {
        loop {
            let ended = |end: End, st: &Stream<'_>| Msg::Ended {
                id,
                end,
                chunks: st.index,
                consumed: start.saturating_add(st.consumed()),
                decompressed: st.out,
            };
            if sh.cancel.load(Ordering::Relaxed) || stop.load(Ordering::Relaxed) {
                return ended(End::Cancelled, &st);
            }
            if sh.front.load(Ordering::Relaxed) != start && !sh.room_ahead() {
                return Msg::Paused { id, stream: st };
            }
            let (chunk, end) = step(&mut st, sh.buffer(), sh.limits.chunk, &sh.cancel);
            if let Some(h) = handed.take() {
                // The previous chunk's parse, if no worker has taken it yet.
                run_handoff(&h);
            }
            if let Some(ch) = chunk {
                let consumed = start.saturating_add(st.consumed());
                let idle = sh.threads.saturating_sub(
                    sh.running.load(Ordering::Relaxed) + sh.offloaded.load(Ordering::Relaxed),
                );
                if idle > 0
                    && end.is_none()
                    && sh.offloaded.load(Ordering::Relaxed) < sh.limits.tasks
                {
                    // A worker is idle (fewer members running than threads): parse there while this one
                    // inflates the next chunk.
                    sh.offloaded.fetch_add(1, Ordering::Relaxed);
                    sh.outstanding.fetch_add(1, Ordering::Relaxed);
                    let tx2 = tx.clone();
                    let job: Box<dyn FnOnce() + Send + 's> = Box::new(move || {
                        parse_chunk(sh, &tx2, id, start, consumed, ch, true);
                        sh.offloaded.fetch_sub(1, Ordering::Relaxed);
                    });
                    let h: Handoff<'s> = Arc::new(Mutex::new(Some(job)));
                    let h2 = Arc::clone(&h);
                    scope.spawn_fifo(move |_| run_handoff(&h2));
                    handed = Some(h);
                } else {
                    parse_chunk(sh, tx, id, start, consumed, ch, false);
                }
            }
            if let Some(end) = end {
                return ended(end, &st);
            }
        }
    }));
    if let Some(h) = handed.take() {
        run_handoff(&h);
    }
    sh.running.fetch_sub(1, Ordering::Relaxed);
    let _ = tx.send(match out {
        Ok(m) => m,
        Err(p) => Msg::Panicked(p),
    });
}

/// A report to the coordinator.
enum Msg<'a, T> {
    /// `work` on chunk `index` of member `id` (`consumed`: the member's compressed bytes up to the end of that
    /// chunk, absolute; `offloaded`: it ran as a task of its own).
    Parsed {
        id: u64,
        index: u64,
        result: Result<T>,
        weight: usize,
        consumed: usize,
        offloaded: bool,
    },
    /// A member behind the front stopped for the budget: its stream, to go on from later.
    Paused {
        id: u64,
        stream: Box<Stream<'a>>,
    },
    /// A member's reader finished: how the member ended, after how many chunks.
    Ended {
        id: u64,
        end: End,
        chunks: u64,
        consumed: usize,
        decompressed: u64,
    },
    Panicked(Box<dyn std::any::Any + Send + 'static>),
}

/// A chunk made by an inflate step: `buf[..len]`.
struct Chunk {
    buf: Vec<u8>,
    len: usize,
    index: u64,
    at_line_start: bool,
}

/// How a member ended.
#[derive(Debug)]
enum End {
    /// A complete, valid member of `compressed` bytes (header to trailer, CRC32 and ISIZE checked).
    Member { compressed: usize },
    /// The data ends inside this member (what it decoded was passed on).
    Truncated,
    /// Not a valid member at this offset (bad header, corrupt deflate data, CRC/length mismatch).
    Failed(String),
    /// Stopped because another member failed.
    Cancelled,
}

/// One member being inflated, carried from step to step.
struct Stream<'a> {
    dec: GzDecoder<&'a [u8]>,
    input_len: usize,
    /// The bytes after the last newline of the previous chunk (a line continued in the next one).
    pending: Vec<u8>,
    /// Whether the next chunk starts at a line start.
    at_line_start: bool,
    /// Number of the next chunk.
    index: u64,
    /// Decompressed bytes so far.
    out: u64,
    /// The input starts with the gzip magic `1f 8b 08` (or a prefix of it, at the very end of the data).
    magic: bool,
}

impl<'a> Stream<'a> {
    fn new(input: &'a [u8]) -> Stream<'a> {
        const MAGIC: [u8; 3] = [0x1f, 0x8b, 0x08];
        let n = input.len().min(3);
        Stream {
            magic: input.get(..n) == MAGIC.get(..n),
            dec: GzDecoder::new(input),
            input_len: input.len(),
            pending: Vec::new(),
            at_line_start: false,
            index: 0,
            out: 0,
        }
    }

    /// Compressed bytes consumed so far.
    fn consumed(&self) -> usize {
        self.input_len.saturating_sub(self.dec.get_ref().len())
    }
}

/// Inflate the next chunk of `st` into `buf` (a buffer of at least `chunk` initialised bytes).
fn step(st: &mut Stream<'_>, mut buf: Vec<u8>, chunk: usize, cancel: &AtomicBool) -> StepOut {
    if cancel.load(Ordering::Relaxed) {
        return (None, Some(End::Cancelled));
    }
    if !st.magic {
        // Not even a cut header: bytes after a member that are no gzip data.
        return (
            None,
            Some(End::Failed(
                "not a gzip member (no gzip header here)".to_string(),
            )),
        );
    }
    if buf.len() < chunk {
        buf.resize(chunk, 0);
    }
    let mut len = st.pending.len().min(chunk);
    if let (Some(dst), Some(src)) = (buf.get_mut(..len), st.pending.get(..len)) {
        dst.copy_from_slice(src);
    }
    st.pending.clear();
    let mut end = None;
    while len < chunk {
        let Some(room) = buf.get_mut(len..chunk) else {
            break;
        };
        match st.dec.read(room) {
            Ok(0) => {
                end = Some(End::Member {
                    compressed: st.consumed(),
                });
                break;
            }
            Ok(n) => {
                len += n;
                st.out += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => {
                end = Some(End::Truncated);
                break;
            }
            Err(e) => return (None, Some(End::Failed(describe(e.kind(), &e.to_string())))),
        }
    }
    let filled = buf.get(..len).unwrap_or_default();
    if end.is_none() {
        // Cut after the last newline; the partial line goes into the next chunk.
        if let Some(p) = memchr::memrchr(b'\n', filled) {
            st.pending
                .extend_from_slice(filled.get(p + 1..).unwrap_or_default());
            len = p + 1;
        }
    }
    let Some(&last) = buf.get(..len).and_then(<[u8]>::last) else {
        return (None, end);
    };
    let at_line_start = std::mem::replace(&mut st.at_line_start, last == b'\n');
    let index = st.index;
    st.index += 1;
    (
        Some(Chunk {
            buf,
            len,
            index,
            at_line_start,
        }),
        end,
    )
}

type StepOut = (Option<Chunk>, Option<End>);

fn describe(kind: io::ErrorKind, msg: &str) -> String {
    match kind {
        io::ErrorKind::UnexpectedEof => format!("truncated member ({msg})"),
        _ if msg.contains("checksum") => {
            "CRC32 or length mismatch (corrupt or altered member)".to_string()
        }
        _ => msg.to_string(),
    }
}

/// A candidate member and what is known of it.
struct Slot<'a, T> {
    id: u64,
    start: usize,
    /// The stream while no reader has it (`None` while one runs, and after the member ended).
    stream: Option<Box<Stream<'a>>>,
    running: bool,
    /// Tells its reader to stop (the candidate was dropped, or the run ends).
    stop: Arc<AtomicBool>,
    /// Results of the chunks `first_index..`, in order, with their weight (`None`: not parsed yet).
    parsed: VecDeque<Option<(Result<T>, usize)>>,
    first_index: u64,
    /// How the member ended, and after how many chunks (set by its reader's last report).
    end: Option<End>,
    chunks: Option<u64>,
    /// Absolute offset up to which its compressed bytes were consumed.
    consumed: usize,
    decompressed: u64,
}

impl<T> Slot<'_, T> {
    fn put(&mut self, index: u64, result: Result<T>, weight: usize, consumed: usize) {
        self.consumed = self.consumed.max(consumed);
        let Some(k) = index
            .checked_sub(self.first_index)
            .and_then(|k| usize::try_from(k).ok())
        else {
            return;
        };
        while self.parsed.len() <= k {
            self.parsed.push_back(None);
        }
        if let Some(p) = self.parsed.get_mut(k) {
            *p = Some((result, weight));
        }
    }

    /// Bytes its parsed chunks hold.
    fn held(&self) -> usize {
        self.parsed.iter().flatten().map(|(_, w)| *w).sum()
    }
}

/// Sequential bookkeeping in file order (runs on the calling thread).
struct Coordinator<'a, T> {
    path: &'a Path,
    data: &'a [u8],
    /// Open candidates in file order; after [`Coordinator::reconcile`] the front one starts at `expected`.
    slots: VecDeque<Slot<'a, T>>,
    next_id: u64,
    /// Byte offset where the next member must start (end of the last accepted member).
    expected: usize,
    /// Offset up to which `release` and `done` were told.
    released: usize,
    stats: MemberStats,
    release: &'a (dyn Fn(usize, usize) + Sync),
}

impl<'a, T> Coordinator<'a, T> {
    fn new_slot(&mut self, start: usize) -> Slot<'a, T> {
        self.next_id += 1;
        Slot {
            id: self.next_id,
            start,
            stream: Some(Box::new(Stream::new(
                self.data.get(start..).unwrap_or_default(),
            ))),
            running: false,
            stop: Arc::new(AtomicBool::new(false)),
            parsed: VecDeque::new(),
            first_index: 0,
            end: None,
            chunks: None,
            consumed: start,
            decompressed: 0,
        }
    }

    /// Open the candidate at `start` behind the others.
    fn open(&mut self, start: usize) {
        let s = self.new_slot(start);
        self.slots.push_back(s);
    }

    /// Drop the front slot (a false candidate, or a member handed on): its reader stops, its held chunks are
    /// freed.
    fn pop_front(&mut self, sh: &Shared<'_, T>) {
        if let Some(s) = self.slots.pop_front() {
            s.stop.store(true, Ordering::Relaxed);
            sh.held.fetch_sub(s.held(), Ordering::Relaxed);
        }
    }

    /// Settle the front: drop false candidates, open a member the scan missed, hand the front's parsed chunks to
    /// `sink`, and close members that are done. Returns `true` when the data is read to its end.
    fn reconcile(
        &mut self,
        sh: &Shared<'_, T>,
        sink: &mut impl FnMut(T) -> Result<()>,
        done: &mut dyn FnMut(usize),
    ) -> Result<bool> {
        loop {
            let expected = self.expected;
            let Some(front) = self.slots.front() else {
                return Ok(expected >= self.data.len());
            };
            if front.start < expected {
                // Inside an accepted member: a false candidate (a reader still running reports to nobody).
                self.pop_front(sh);
                self.stats.false_candidates += 1;
                continue;
            }
            if front.start > expected {
                // A member starts where the scan found no candidate (a header it judged implausible).
                let s = self.new_slot(expected);
                self.slots.push_front(s);
                continue;
            }
            let n = self.stats.members;
            let Some(front) = self.slots.front_mut() else {
                continue;
            };
            while let Some(Some(_)) = front.parsed.front() {
                if let Some(Some((r, weight))) = front.parsed.pop_front() {
                    front.first_index += 1;
                    sh.held.fetch_sub(weight, Ordering::Relaxed);
                    sink(r?)?;
                }
            }
            let consumed = front.consumed;
            self.advance(consumed, false, done);
            let Some(front) = self.slots.front_mut() else {
                continue;
            };
            if front.running || front.chunks.is_none_or(|n| front.first_index < n) {
                return Ok(false);
            }
            let start = front.start;
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
            match front.end.take() {
                None => return Ok(false),
                Some(End::Member { compressed }) => {
                    self.expected = start.saturating_add(compressed.max(1));
                    self.stats.members += 1;
                    self.stats.compressed_bytes += compressed as u64;
                    self.stats.decompressed_bytes += front.decompressed;
                }
                Some(End::Truncated) => {
                    self.expected = self.data.len();
                    self.stats.members += 1;
                    self.stats.compressed_bytes += self.data.len().saturating_sub(start) as u64;
                    self.stats.decompressed_bytes += front.decompressed;
                    self.stats.truncated = true;
                }
                Some(End::Failed(e)) => {
                    return Err(Error::bad_input(
                        self.path,
                        format!("{}; the file is damaged, download it again", what(&e)),
                    ))
                }
                Some(End::Cancelled) => return Err(Error::bad_input(self.path, what("cancelled"))),
            }
            self.pop_front(sh);
            self.advance(self.expected.min(self.data.len()), true, done);
        }
    }

    /// The compressed bytes before `to` are handled: drop their pages, report progress. In steps of at least
    /// [`RELEASE_STEP`] within a member (each release is a system call that makes every CPU running one of
    /// our threads flush its TLB: once per chunk, it was a tenth of the coordinator's time), and at every
    /// member's end (`all`).
    fn advance(&mut self, to: usize, all: bool, done: &mut dyn FnMut(usize)) {
        if to > self.released && (all || to - self.released >= RELEASE_STEP) {
            (self.release)(self.released, to - self.released);
            self.released = to;
            done(to);
        }
    }

    /// Start a reader on every member that has none and may go on: the front always, the others in file order
    /// while the parsed chunks held stay under the budget.
    fn schedule(
        &mut self,
        sh: &Shared<'_, T>,
        mut spawn: impl FnMut(u64, usize, Arc<AtomicBool>, Box<Stream<'a>>),
    ) {
        for (i, s) in self.slots.iter_mut().enumerate() {
            if s.running || s.end.is_some() {
                continue;
            }
            if i > 0 && !sh.room_ahead() {
                break;
            }
            let Some(stream) = s.stream.take() else {
                continue;
            };
            s.running = true;
            spawn(s.id, s.start, Arc::clone(&s.stop), stream);
        }
    }
}

/// Candidate member starts in file order: every `1f 8b 08` followed by a plausible header (offset 0 included
/// when its header is plausible).
pub struct Candidates<'a> {
    data: &'a [u8],
    next: usize,
    finder: memchr::memmem::Finder<'static>,
    release: Option<&'a (dyn Fn(usize, usize) + Sync)>,
    scanned: Option<&'a (dyn Fn(usize, usize) + Sync)>,
}

/// Compressed bytes of a member released at a time behind its reader ([`Coordinator::advance`]).
const RELEASE_STEP: usize = 4 << 20;

/// Bytes searched at a time: a stretch this long without a candidate is released behind the scan.
const SCAN_WINDOW: usize = 8 << 20;

/// Bytes searched at a time within a window before the caller is told they were read ([`Candidates::scanning`]):
/// small enough that they are still in the core's cache.
const SCAN_STEP: usize = 256 << 10;

impl<'a> Candidates<'a> {
    /// Scan `data` lazily (the scan runs ahead of the inflation only as far as the window needs).
    pub fn new(data: &'a [u8]) -> Self {
        Candidates {
            data,
            next: 0,
            finder: memchr::memmem::Finder::new(&[0x1f, 0x8b, 0x08]),
            release: None,
            scanned: None,
        }
    }

    /// Call `scanned(offset, len)` on every stretch (of at most [`SCAN_STEP`] bytes, in file order) the search has
    /// just read.
    pub fn scanning(mut self, scanned: &'a (dyn Fn(usize, usize) + Sync)) -> Self {
        self.scanned = Some(scanned);
        self
    }

    /// Call `release(offset, len)` on every 8 MiB stretch scanned without a candidate (inside a large member, or
    /// a single-member file), so that a memory-mapped file's scanned pages do not stay resident until the
    /// decoders get there.
    pub fn releasing(mut self, release: &'a (dyn Fn(usize, usize) + Sync)) -> Self {
        self.release = Some(release);
        self
    }

    /// Go on scanning at `at` at the earliest (bytes before it are known to hold no member start).
    pub fn skip_to(&mut self, at: usize) {
        self.next = self.next.max(at);
    }
}

impl Iterator for Candidates<'_> {
    type Item = usize;
    fn next(&mut self) -> Option<usize> {
        while self.next < self.data.len() {
            let from = self.next;
            let end = from.saturating_add(SCAN_WINDOW).min(self.data.len());
            // The window is searched a step at a time, each step's bytes told to `scanned` while cached.
            let mut step = from;
            let mut found = None;
            while step < end {
                let step_end = step.saturating_add(SCAN_STEP).min(end);
                // Two bytes past the step, so that a magic across its edge is found.
                let hay = self
                    .data
                    .get(step..step_end.saturating_add(2).min(self.data.len()))?;
                found = self.finder.find(hay).map(|i| step + i);
                if let Some(s) = self.scanned {
                    s(step, step_end - step);
                }
                if found.is_some() {
                    break;
                }
                step = step_end;
            }
            let Some(at) = found else {
                if let Some(r) = self.release {
                    r(from, end - from);
                }
                self.next = end;
                continue;
            };
            self.next = at + 1;
            if plausible_header(self.data.get(at..).unwrap_or_default()) {
                return Some(at);
            }
        }
        None
    }
}

/// `h` starts with a gzip member header as real writers produce it: magic, deflate, no reserved flag bits,
/// XFL 0/2/4, OS byte 0–13 or 255 (RFC 1952). A header that fails this is still read if it follows a member.
pub fn plausible_header(h: &[u8]) -> bool {
    match h.get(..10) {
        Some(&[0x1f, 0x8b, 0x08, flags, _, _, _, _, xfl, os]) => {
            flags & 0xe0 == 0 && matches!(xfl, 0 | 2 | 4) && (os <= 13 || os == 255)
        }
        _ => false,
    }
}
#[cfg(test)]
mod tests {
    use super::*;
    use flate2::bufread::MultiGzDecoder;
    use flate2::Compression;
    use proptest::prelude::*;

    /// Concatenate the members through `par_members`.
    /// Limits for a window of `w` members, and chunks of `chunk` bytes.
    fn lim(w: usize, chunk: usize) -> Limits {
        Limits {
            members: w,
            tasks: w,
            ahead: w,
            chunk,
            threads: rayon::current_num_threads(),
        }
    }

    fn inflate_with(data: &[u8], limits: &Limits) -> Result<Option<(Vec<u8>, MemberStats)>> {
        let mut out = Vec::new();
        let mut pieces: Vec<(usize, u64)> = Vec::new();
        let stats = par_members(
            data,
            limits,
            |p| {
                assert!(!p.bytes.is_empty() && p.bytes.len() <= limits.chunk);
                Ok((p.member, p.index, p.bytes.to_vec()))
            },
            |(m, i, v)| {
                // In order: chunks of a member are numbered 0, 1, ... and members increase.
                match pieces.last() {
                    Some(&(pm, pi)) if pm == m => assert_eq!(i, pi + 1),
                    Some(&(pm, _)) => assert!(m > pm && i == 0),
                    None => assert_eq!(i, 0),
                }
                pieces.push((m, i));
                out.extend_from_slice(&v);
                Ok(())
            },
        )?;
        Ok(stats.map(|s| (out, s)))
    }

    fn inflate_all(data: &[u8], window: usize) -> Result<Option<(Vec<u8>, MemberStats)>> {
        inflate_with(data, &lim(window, 4096))
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
    fn truncated_file_passes_on_what_it_decoded() {
        let lines = sample_lines(30);
        let (gz, plain) = layout(&lines, 10, Compression::default());
        let starts: Vec<usize> = Candidates::new(&gz).collect();
        // Cuts inside the trailer, inside deflate data, and inside the last member's header (whose candidate is
        // then implausible: the previous member ends where the scan listed nothing, and that member is read all
        // the same).
        for cut in [
            gz.len() - 1,
            gz.len() - 8,
            starts[4] - 3,
            starts[3] + 20,
            starts[4] + 5,
        ] {
            let (out, stats) = inflate_all(&gz[..cut], 2).unwrap().unwrap();
            assert!(stats.truncated, "cut {cut}");
            assert!(plain.starts_with(&out), "cut {cut}");
            // What was decoded is what a sequential decoder gets out before the cut.
            let mut d = MultiGzDecoder::new(&gz[..cut]);
            let mut prefix = Vec::new();
            assert!(d.read_to_end(&mut prefix).is_err());
            assert_eq!(out, prefix, "cut {cut}");
        }
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
        // Both false candidates lie inside the outer member. With one member open at a time, the scan resumes
        // only after the outer member is read to its end, at the released offset: both are skipped, never
        // opened (0). With 8 open, all five candidates are opened before any member is read: both are opened
        // and dropped (2). With 2 open, it depends on how far the outer member's reader has got when the first
        // member is accepted (the scan then resumes at what the front has consumed): 0 to 2, on one thread as on
        // two, and the bytes are the same either way.
        let one = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .build()
            .unwrap();
        for (window, pool, false_candidates) in [
            (1, false, 0),
            (8, false, 2),
            (2, true, usize::MAX),
            (2, false, usize::MAX),
        ] {
            let run = || inflate_all(&gz, window).unwrap().unwrap();
            let (out, stats) = if pool { one.install(run) } else { run() };
            assert_eq!(out, oracle(&gz));
            assert_eq!(stats.members, 3);
            if false_candidates == usize::MAX {
                assert!(stats.false_candidates <= 2, "{stats:?}");
            } else {
                assert_eq!(stats.false_candidates, false_candidates, "window {window}");
            }
            assert_eq!(stats.compressed_bytes, gz.len() as u64);
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        /// What the search tells `scanned` covers the data from its first byte to its last, in order (a
        /// stretch may go over what an earlier one told, never past a gap), in stretches of at most
        /// `SCAN_STEP`: a caller hashing from it (extract's input hash) meets every byte, and the candidates
        /// are those of the search without the hook.
        #[test]
        fn the_scan_tells_every_byte_it_reads_in_order(
            seed in any::<u64>(),
            len in 0usize..(3 * SCAN_STEP),
            magics in proptest::collection::vec(0usize..(3 * SCAN_STEP), 0..6),
        ) {
            let mut data: Vec<u8> = (0..len as u64)
                .map(|i| (i.wrapping_add(seed).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 56) as u8)
                .collect();
            for m in magics.into_iter().filter(|&m| m + 10 <= len) {
                data[m..m + 10].copy_from_slice(&[0x1f, 0x8b, 0x08, 0, 0, 0, 0, 0, 0, 3]);
            }
            let told = std::sync::Mutex::new(Vec::new());
            let hook = |at: usize, n: usize| told.lock().unwrap().push((at, n));
            let with: Vec<usize> = Candidates::new(&data).scanning(&hook).collect();
            let without: Vec<usize> = Candidates::new(&data).collect();
            prop_assert_eq!(with, without);
            let mut covered = 0usize;
            for (at, n) in told.into_inner().unwrap() {
                prop_assert!(at <= covered, "a gap before {at} (covered up to {covered})");
                prop_assert!(n <= SCAN_STEP);
                covered = covered.max(at + n);
            }
            prop_assert_eq!(covered, data.len());
        }
    }

    #[test]
    fn the_scan_never_goes_back_over_released_bytes() {
        // A member of 20 MiB without a gzip magic inside (stored blocks of text): the scan releases each 8 MiB
        // stretch it searches without a candidate. Those stretches must start at or after the offset the
        // coordinator has released (told through `done`): scanning released bytes would fault back in the
        // pages of a memory-mapped file that were just dropped (measured: at -j 1 a quarter of the file stayed
        // resident). The coordinator's own releases are the ones followed by `done` at their end.
        let big: Vec<u8> = b"{\"id\":\"Q1\",\"x\":\"abcdefghij\"},\n"
            .iter()
            .copied()
            .cycle()
            .take(20 << 20)
            .collect();
        let mut gz = compress_member(b"[\n", Compression::default());
        gz.extend_from_slice(&compress_member(&big, Compression::none()));
        gz.extend_from_slice(&compress_member(b"{}\n]\n", Compression::default()));
        #[derive(Debug, Clone, Copy, PartialEq)]
        enum Ev {
            Release(usize, usize),
            Done(usize),
        }
        for window in [1, 2, 4] {
            let log = std::sync::Mutex::new(Vec::new());
            let stats = par_members_in(
                Path::new("t.json.gz"),
                &gz,
                &lim(window, 1 << 20),
                |p| Ok(p.bytes.len()),
                &|_| 1 << 20,
                |_| Ok(()),
                &mut |to| log.lock().unwrap().push(Ev::Done(to)),
                &|at, len| log.lock().unwrap().push(Ev::Release(at, len)),
                &|_, _| {},
            )
            .unwrap()
            .unwrap();
            assert_eq!(stats.members, 3);
            let log = log.into_inner().unwrap();
            let mut released = 0;
            let mut scanned = 0;
            for (i, ev) in log.iter().enumerate() {
                match *ev {
                    Ev::Done(to) => released = to,
                    Ev::Release(at, len) if log.get(i + 1) == Some(&Ev::Done(at + len)) => {}
                    Ev::Release(at, len) => {
                        assert!(
                            at >= released,
                            "window {window}: the scan searched {at}..{} after {released} was released",
                            at + len
                        );
                        scanned += len;
                    }
                }
            }
            assert_eq!(released, gz.len());
            if window == 1 {
                // One member open at a time: the big member is read to its end before the scan resumes, which
                // then finds the last member at once, so the scan never searches the big member's bytes.
                assert_eq!(scanned, 0);
            }
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
            &lim(2, 64),
            |p| {
                if p.member == bad && p.index == 1 {
                    return Err(Error::Config("work failed".into()));
                }
                Ok(p.bytes.len())
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
            &lim(2, 4096),
            |p| Ok(p.bytes.len()),
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
    fn a_bad_crc_after_good_chunks_is_still_an_error() {
        let lines = sample_lines(30);
        let (mut gz, _) = layout(&lines, 10, Compression::default());
        let starts: Vec<usize> = Candidates::new(&gz).collect();
        gz[starts[2] - 8] ^= 1;
        let mut handed = 0;
        let e = par_members(
            &gz,
            &lim(2, 64),
            |p| Ok(p.bytes.len()),
            |n| {
                handed += n;
                Ok(())
            },
        )
        .unwrap_err();
        assert!(e.to_string().contains("CRC32"), "{e}");
        assert!(
            e.to_string()
                .contains(&format!("byte offset {}", starts[1])),
            "{e}"
        );
        // The member's chunks were handed on as they streamed, before its trailer was checked.
        assert!(handed > 0);
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
                for chunk in [1, 100, 1 << 20] {
                    let r = pool
                        .install(|| inflate_with(&gz, &lim(window, chunk)))
                        .unwrap()
                        .unwrap();
                    assert_eq!(r.0, plain);
                    results.push(r);
                }
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
            ahead in 1usize..6,
            chunk in 1usize..400,
            level in 0u32..10,
        ) {
            let (gz, plain) = layout(&lines, batch, Compression::new(level));
            let limits = Limits { members: window, tasks: window, ahead, chunk, threads: rayon::current_num_threads() };
            let got = inflate_with(&gz, &limits).unwrap();
            let (out, stats) = got.expect("at least the [ and ] members");
            prop_assert_eq!(&out, &plain);
            prop_assert_eq!(out, oracle(&gz));
            prop_assert_eq!(stats.compressed_bytes, gz.len() as u64);
            // Random bytes in stored blocks may contain plausible headers; those are false candidates.
            prop_assert_eq!(stats.members, 2 + lines.len().div_ceil(batch));
        }
    }
}
