//! bzip2 in parallel: the blocks of a (multi-stream) `.bz2` file decoded on the worker threads.
//!
//! # Why
//! One core decodes only ≈ 45–55 MB/s of JSON from bzip2 (libbzip2 and its Rust port alike), so the ≈ 1.5 TB of
//! JSON in a full `latest-all.json.bz2` is ≈ 8 hours of one core, however many cores the machine has. A bzip2
//! stream is a sequence of independent blocks (at most 900 kB of input each at level 9), so the blocks can be
//! decoded side by side, as `lbzip2 -d` does, if we find where each one starts.
//!
//! # Format
//! A stream is `BZh` + a level digit `1`–`9` (block size limit in 100 kB), then blocks, each starting with the
//! 48-bit magic `0x314159265359` and its 32-bit CRC, then the 48-bit end-of-stream magic `0x177245385090`, the
//! 32-bit combined CRC (for each block, `combined = rotl(combined, 1) ^ block_crc`) and zero bits up to the next
//! byte. Blocks are *bit*-aligned and have no length field. A file may hold many streams back to back: `pbzip2`
//! writes one per block, `lbzip2` one stream of many blocks (Wikimedia's dump is made by lbzip2).
//!
//! # How
//! The magics are looked for at every bit offset (a 256-entry table on the byte that each of the 16 shifted
//! patterns determines, then a 48-bit compare). A match is only a guess: the same 48 bits can occur inside
//! compressed data (≈ once per 35 TB of random bits, so in a full dump a few percent of the time; a crafted
//! file can hold any number). Each guess is decoded as a *piece*, the bits from one candidate to the next, by
//! sword's own block decoder ([`block`]: it reads the block at its bit offset, checks the block CRC against the
//! decoded bytes, and refuses whatever libbzip2 refuses; the two constructs it leaves to libbzip2's algorithm,
//! randomised blocks and over-subscribed Huffman codes, go to the `bzip2` crate, the piece re-wrapped as a
//! one-block stream), on a rayon worker. A piece counts only when the block decodes, its CRC matches and it
//! ends exactly at the next candidate. The results are then taken in file order by a sequential walker that
//! knows where the next block really starts: a piece that starts there and decoded is accepted; one that
//! starts inside an accepted block (a false match) is dropped; when the piece at the walker's position fails
//! (its end was a false match), the walker decodes the block once more up to the largest size a block can
//! have, and the block's own end names the real boundary (for a block left to the crate: from the same start to
//! the candidate after, and so on); a block that still does not decode is damaged, named by its byte and bit
//! offset and what is wrong (CRC, Huffman code, origPtr, selector, run past the block size...). At each
//! end-of-stream magic it checks the stored combined CRC against the accepted blocks' CRCs, then expects another
//! stream header or the end of the file. So every bit of the file belongs to exactly one accepted block or
//! header/trailer, in order, and the output is the bytes a sequential decoder gives (tested against the `bzip2`
//! crate's `MultiBzDecoder` and the `bzip2`, `lbzip2` and `pbzip2` tools).
//!
//! Memory: at most `window` pieces are in flight or waiting (plus the one the walker re-decodes), each holding
//! its decoded block (≤ 900 kB of JSON at level 9 in practice; a crafted run-length block can expand to ≈ 46 MB,
//! still bounded); each decoding thread keeps its [`block::Scratch`] (4.5 MB at level 9, whatever the input).
//! A piece longer than `max_block_bits` (≈ 2.4 MB at level 9) is refused undecoded; only a block left to the
//! crate is copied (re-wrapped) and needs one crate decoder state (≈ 3.6 MB at level 9).

use crate::core::error::{Error, Result};
use block::BlockError;
use std::cell::Cell;
use std::collections::VecDeque;
use std::io::Read;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

pub mod block;

/// Block magic: the first 48 bits of every block (BCD π).
pub const BLOCK_MAGIC: u64 = 0x3141_5926_5359;
/// End-of-stream magic (BCD √π), followed by the stream's combined CRC.
pub const EOS_MAGIC: u64 = 0x1772_4538_5090;

/// Which magic a candidate matched.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Magic {
    Block,
    Eos,
}

/// Bits `[bit, bit + n)` of `data`, most significant bit first (the bzip2 bit order), `n` ≤ 57. Bits past the end
/// of `data` read as zero.
#[inline]
fn bits(data: &[u8], bit: u64, n: u32) -> u64 {
    debug_assert!((1..=57).contains(&n));
    let byte = (bit / 8) as usize;
    let w = match data.get(byte..byte + 8) {
        Some(s) => u64::from_be_bytes(s.try_into().expect("8 bytes")),
        None => {
            let mut buf = [0u8; 8];
            let tail = data.get(byte..).unwrap_or(&[]);
            buf[..tail.len()].copy_from_slice(tail);
            u64::from_be_bytes(buf)
        }
    };
    (w << (bit % 8)) >> (64 - n)
}

/// The magic that starts at `bit`, if any (and it fits in `data`).
fn magic_at(data: &[u8], bit: u64) -> Option<Magic> {
    if bit + 48 > data.len() as u64 * 8 {
        return None;
    }
    match bits(data, bit, 48) {
        BLOCK_MAGIC => Some(Magic::Block),
        EOS_MAGIC => Some(Magic::Eos),
        _ => None,
    }
}

/// For each byte value: bit `r` set when a block magic starting at bit offset `r` of a byte `k` has this value
/// as byte `k + 3` (always fully inside the magic), bit `8 + r` the same for the end-of-stream magic.
static PREFILTER: [u16; 256] = prefilter();

const fn prefilter() -> [u16; 256] {
    let mut t = [0u16; 256];
    let mut r = 0;
    while r < 8 {
        t[((BLOCK_MAGIC >> (16 + r)) & 0xff) as usize] |= 1 << r;
        t[((EOS_MAGIC >> (16 + r)) & 0xff) as usize] |= 1 << (8 + r);
        r += 1;
    }
    t
}

/// The first magic (block or end of stream) starting at a bit offset ≥ `from`, in bits.
pub fn next_magic(data: &[u8], from: u64) -> Option<(u64, Magic)> {
    let total = data.len() as u64 * 8;
    // A magic at bit p = 8k + r is found through byte k + 3.
    let mut i = (from / 8) as usize + 3;
    while i < data.len() {
        let t = match data[i..].iter().position(|&b| PREFILTER[b as usize] != 0) {
            Some(j) => {
                i += j;
                PREFILTER[data[i] as usize]
            }
            None => return None,
        };
        let base = (i as u64 - 3) * 8;
        for r in 0..8u64 {
            let p = base + r;
            if t & (0x101 << r) == 0 || p < from || p + 48 > total {
                continue;
            }
            match bits(data, p, 48) {
                BLOCK_MAGIC => return Some((p, Magic::Block)),
                EOS_MAGIC => return Some((p, Magic::Eos)),
                _ => {}
            }
        }
        i += 1;
    }
    None
}

/// Bytes read past a piece's end (copied with a piece from a stream, and buffered past the largest block for the
/// walker): the block decoder's bit reader loads 8 bytes at a time and may look past where a damaged block
/// fails, so a piece decodes from a copy exactly as from the whole input.
const SLACK: u64 = 8 << 10;
/// Bytes asked of a stream per read.
const READ_BYTES: u64 = 128 << 10;
/// Compressed bytes the speculation may hold buffered beyond the walker when the input is a stream (stdin), at
/// least: [`read_parallel_stream`] allows 1 MiB per piece in flight when that is more.
pub const STREAM_CAP: u64 = 16 << 20;

/// The compressed input as the walker and the speculation read it, in absolute bit and byte offsets: all of a
/// memory-mapped file (pieces borrow it), or a window onto a stream, read on demand into a buffer that drops
/// the bytes the walker has passed (pieces are copied out of it). Candidate boundaries are the magics in the
/// data, plus (in tests) false ones injected at chosen bit offsets.
struct Window<'a> {
    /// The whole input, when it is memory-mapped.
    mapped: Option<&'a [u8]>,
    /// A stream's buffered bytes, the first at absolute byte offset `base`.
    buf: Vec<u8>,
    base: u64,
    reader: Option<&'a mut dyn Read>,
    /// The input ends where the buffered bytes end (for a stream: its reader said so).
    eof: bool,
    /// The walker has passed the bytes before this offset: a stream's buffer drops them before it grows.
    keep: u64,
    /// Bytes the speculation may buffer beyond `keep` (the walker may go past it for one block).
    cap: u64,
    /// Bytes read from the input in all (with `eof`: its length).
    read: u64,
    /// Most bytes a stream's buffer held.
    peak: u64,
    extra: &'a [(u64, Magic)],
}

impl<'a> Window<'a> {
    fn mapped(data: &'a [u8], extra: &'a [(u64, Magic)]) -> Window<'a> {
        Window {
            mapped: Some(data),
            buf: Vec::new(),
            base: 0,
            reader: None,
            eof: true,
            keep: 0,
            cap: u64::MAX,
            read: data.len() as u64,
            peak: 0,
            extra,
        }
    }

    fn stream(reader: &'a mut dyn Read, cap: u64, extra: &'a [(u64, Magic)]) -> Window<'a> {
        Window {
            mapped: None,
            buf: Vec::new(),
            base: 0,
            reader: Some(reader),
            eof: false,
            keep: 0,
            cap: cap.max(1),
            read: 0,
            peak: 0,
            extra,
        }
    }

    fn data(&self) -> &[u8] {
        self.mapped.unwrap_or(&self.buf)
    }

    /// Bit offset of the first buffered byte.
    fn origin(&self) -> u64 {
        self.base * 8
    }

    /// Absolute byte offset where the buffered bytes end.
    fn end(&self) -> u64 {
        self.base + self.data().len() as u64
    }

    /// Buffered bytes `[a, b)` (absolute; `None` when not all buffered).
    fn get(&self, a: u64, b: u64) -> Option<&[u8]> {
        self.data()
            .get((a - self.base) as usize..(b - self.base) as usize)
    }

    /// Bits `[bit, bit + n)` of the buffered bytes (past them: zero).
    fn bits(&self, bit: u64, n: u32) -> u64 {
        bits(self.data(), bit - self.origin(), n)
    }

    /// The walker has passed the bytes before `byte`.
    fn release(&mut self, byte: u64) {
        self.keep = self.keep.max(byte);
    }

    /// Buffer the bytes up to absolute byte `end`, or up to the end of the input when it ends before. A stream
    /// first drops the bytes the walker has passed, then reads at least [`READ_BYTES`] where its cap allows.
    fn fill(&mut self, end: u64) -> std::io::Result<()> {
        let Some(reader) = self.reader.as_mut() else {
            return Ok(());
        };
        if self.base + self.buf.len() as u64 >= end || self.eof {
            return Ok(());
        }
        let dead = self.keep.min(self.base + self.buf.len() as u64) - self.base;
        if dead > 0 {
            self.buf.drain(..dead as usize);
            self.base += dead;
        }
        let mut len = self.buf.len();
        let have = self.base + len as u64;
        let want = end.max((have + READ_BYTES).min(self.keep + self.cap));
        self.buf.resize((want - self.base) as usize, 0);
        self.peak = self.peak.max(self.buf.len() as u64);
        let r = loop {
            if self.base + len as u64 >= end {
                break Ok(());
            }
            match reader.read(&mut self.buf[len..]) {
                Ok(0) => {
                    self.eof = true;
                    break Ok(());
                }
                Ok(n) => {
                    len += n;
                    self.read += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(e),
            }
        };
        self.buf.truncate(len);
        r
    }

    /// The magic that starts at `bit`, if any (reading up to its end).
    fn magic_at(&mut self, bit: u64) -> std::io::Result<Option<Magic>> {
        self.fill((bit + 48).div_ceil(8))?;
        Ok(magic_at(self.data(), bit - self.origin()))
    }

    /// The first candidate at a bit offset ≥ `from` among those the buffered bytes show: every candidate that
    /// ends within them (a later one starts after all of these). `None` at the end of the input: none at all.
    fn next(&self, from: u64) -> Option<(u64, Magic)> {
        let o = self.origin();
        let real = next_magic(self.data(), from - o).map(|(p, m)| (p + o, m));
        let seen = self.end() * 8;
        let i = self.extra.partition_point(|&(p, _)| p < from);
        let extra = self.extra.get(i).filter(|x| self.eof || x.0 + 48 <= seen);
        match (real, extra) {
            (Some(r), Some(&x)) => Some(if x.0 < r.0 { x } else { r }),
            (r, x) => r.or(x.copied()),
        }
    }

    /// The first candidate at a bit offset ≥ `from` anywhere in the rest of the input. A stream is read on
    /// without keeping what is read (the buffer stays as it is), up to that candidate or to the end of the input
    /// (then `eof`, with `read` its length): only for a walker that stops after this question.
    fn candidate_after(&mut self, from: u64) -> std::io::Result<Option<u64>> {
        if let Some((p, _)) = self.next(from) {
            return Ok(Some(p));
        }
        if let Some(&(p, _)) = self
            .extra
            .get(self.extra.partition_point(|&(p, _)| p < from))
        {
            return Ok(Some(p));
        }
        let Some(reader) = self.reader.as_mut() else {
            return Ok(None);
        };
        if self.eof {
            return Ok(None);
        }
        // A magic may straddle the buffer's end: its last 6 bytes are scanned again with what follows.
        let tail = self.buf.len().saturating_sub(6);
        let mut chunk = vec![0u8; READ_BYTES as usize + 6];
        let mut len = self.buf.len() - tail;
        chunk[..len].copy_from_slice(&self.buf[tail..]);
        let mut chunk_base = self.base + tail as u64;
        let mut from = from;
        loop {
            if len == chunk.len() {
                chunk.copy_within(len - 6.., 0);
                chunk_base += len as u64 - 6;
                len = 6;
            }
            match reader.read(&mut chunk[len..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(None);
                }
                Ok(n) => {
                    len += n;
                    self.read += n as u64;
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e),
            }
            let o = chunk_base * 8;
            if let Some((p, _)) = next_magic(&chunk[..len], from.max(o) - o) {
                return Ok(Some(p + o));
            }
            // Every magic before the last 47 bits would have shown.
            from = from.max((o + len as u64 * 8).saturating_sub(47));
        }
    }

    /// The bytes a worker decodes `p` from: the whole mapped input, or a copy of the piece's bytes and
    /// [`SLACK`] (what is buffered of them), with the bit offset of its first byte.
    fn piece_bytes(&self, p: Piece) -> (Bytes<'a>, u64) {
        match self.mapped {
            Some(data) => (Bytes::Mapped(data), 0),
            None => {
                let a = p.start / 8;
                let b = (p.end.div_ceil(8) + SLACK).min(self.end());
                let copy = self
                    .get(a, b)
                    .expect("the speculation buffered the piece")
                    .to_vec();
                (Bytes::Copied(copy), a * 8)
            }
        }
    }
}

/// See [`Window::piece_bytes`].
enum Bytes<'a> {
    Mapped(&'a [u8]),
    Copied(Vec<u8>),
}

impl std::ops::Deref for Bytes<'_> {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        match self {
            Bytes::Mapped(d) => d,
            Bytes::Copied(v) => v,
        }
    }
}

/// Appends bits, most significant first, to a byte vector.
struct BitWriter<'a> {
    out: &'a mut Vec<u8>,
    acc: u64,
    n: u32,
}

impl BitWriter<'_> {
    #[inline]
    fn put(&mut self, v: u64, k: u32) {
        debug_assert!(k <= 32 && (k == 64 || v >> k == 0));
        self.acc = (self.acc << k) | v;
        self.n += k;
        while self.n >= 8 {
            self.n -= 8;
            self.out.push((self.acc >> self.n) as u8);
        }
        self.acc &= (1 << self.n) - 1;
    }

    /// Pad with zero bits to a byte boundary.
    fn flush(&mut self) {
        if self.n > 0 {
            let pad = 8 - self.n;
            self.put(0, pad);
        }
    }
}

/// Wrap the block in bits `[start, end)` of `data` (starting with its magic) as a one-block stream of `level`.
fn rewrap(data: &[u8], start: u64, end: u64, level: u8, out: &mut Vec<u8>) {
    out.clear();
    out.reserve(((end - start) / 8) as usize + 20);
    out.extend_from_slice(b"BZh");
    out.push(level);
    let mut w = BitWriter { out, acc: 0, n: 0 };
    if start.is_multiple_of(8) {
        let (a, b) = ((start / 8) as usize, (end / 8) as usize);
        w.out.extend_from_slice(&data[a..b]);
        let rest = (end % 8) as u32;
        if rest > 0 {
            w.put(bits(data, end - rest as u64, rest), rest);
        }
    } else {
        let mut p = start;
        while p + 32 <= end {
            w.put(bits(data, p, 32), 32);
            p += 32;
        }
        if p < end {
            let k = (end - p) as u32;
            w.put(bits(data, p, k), k);
        }
    }
    let crc = bits(data, start + 48, 32);
    w.put(EOS_MAGIC >> 16, 32);
    w.put(EOS_MAGIC & 0xffff, 16);
    w.put(crc, 32);
    w.flush();
}

/// The largest number of bits a block of `level` can take (a generous bound: 20-bit codes for every symbol of
/// a full block, plus the tables). Used to stop looking for a damaged block's end.
fn max_block_bits(level: u8) -> u64 {
    u64::from(level - b'0') * 100_000 * 21 + 200_000
}

/// Why bits `[start, end)` cannot be a block of `level` before any decoding (too short, past the data, or longer
/// than any block can be: such a piece is neither copied nor decoded).
fn piece_shape(data: &[u8], start: u64, end: u64, level: u8) -> std::result::Result<(), String> {
    if end.saturating_sub(start) > max_block_bits(level) {
        return Err("no block ends within the largest size a block can have".into());
    }
    if end < start + 80 || end > data.len() as u64 * 8 {
        return Err("the block is shorter than its header".into());
    }
    Ok(())
}

/// Decode the block in bits `[start, end)` of `data` with the `bzip2` crate (libbzip2's algorithm), into `out`:
/// its stored CRC, or why it is not one whole valid block ending at `end`. The piece is re-wrapped as a
/// one-block stream (the crate's decoder checks the block CRC).
#[doc(hidden)]
pub fn decode_block_crate(
    data: &[u8],
    start: u64,
    end: u64,
    level: u8,
    out: &mut Vec<u8>,
) -> std::result::Result<u32, String> {
    piece_shape(data, start, end, level)?;
    let mut wrapped = Vec::new();
    rewrap(data, start, end, level, &mut wrapped);
    let mut d = bzip2::Decompress::new(false);
    out.clear();
    out.reserve(usize::from(level - b'0') * 100_000 + 4096);
    loop {
        if out.len() == out.capacity() {
            out.reserve(out.len().max(1 << 20));
        }
        let (tin, tout) = (d.total_in(), d.total_out());
        match d.decompress_vec(&wrapped[tin as usize..], out) {
            Ok(bzip2::Status::StreamEnd) => break,
            Ok(_) => {
                if d.total_in() == tin && d.total_out() == tout && out.len() < out.capacity() {
                    return Err("the block's data ends before the block does".into());
                }
            }
            Err(e) => return Err(match e {
                bzip2::Error::Data | bzip2::Error::DataMagic => {
                    "the block does not decode (damaged data, or its CRC does not match its bytes)"
                        .into()
                }
                e => format!("the block does not decode ({e})"),
            }),
        }
    }
    if d.total_in() != wrapped.len() as u64 {
        return Err("the block ends before the next magic".into());
    }
    Ok(bits(data, start + 48, 32) as u32)
}

/// Decode the block in bits `[start, end)` of `data` with sword's own decoder ([`block::decode`]) into `s.out`
/// (the crate for the constructs it leaves to libbzip2): its stored CRC, or why it is not one whole valid block
/// ending at `end`.
#[doc(hidden)]
pub fn decode_block(
    data: &[u8],
    start: u64,
    end: u64,
    level: u8,
    s: &mut block::Scratch,
) -> std::result::Result<u32, String> {
    decode_piece(data, 0, start, end, level, s)
}

/// [`decode_block`] on bytes that start at bit `origin` of the input: `start`, `end` and the offsets in the
/// messages are the input's.
fn decode_piece(
    data: &[u8],
    origin: u64,
    start: u64,
    end: u64,
    level: u8,
    s: &mut block::Scratch,
) -> std::result::Result<u32, String> {
    let (start, end) = (start - origin, end.saturating_sub(origin));
    piece_shape(data, start, end, level)?;
    match block::decode(data, start, end, level - b'0', s) {
        Ok(b) if b.end == end => Ok(b.crc),
        Ok(b) => Err(format!(
            "the block ends at {}, where no magic follows (the next one is at {})",
            at(origin + b.end),
            at(origin + end)
        )),
        Err(BlockError::Bad { bit, what }) => Err(format!("{what} (at {})", at(origin + bit))),
        Err(BlockError::Unsupported(_)) => decode_block_crate(data, start, end, level, &mut s.out),
    }
}

thread_local! {
    /// Each decoding thread's buffers (4.5 MB at level 9), kept between blocks.
    static SCRATCH: Cell<Option<Box<block::Scratch>>> = const { Cell::new(None) };
}

/// Run `f` with this thread's scratch buffers. They are taken out while `f` runs, so a nested call (a rayon
/// task run while `f` waits) gets fresh ones instead of a double borrow.
fn with_scratch<R>(f: impl FnOnce(&mut block::Scratch) -> R) -> R {
    let mut s = SCRATCH.with(|c| c.take()).unwrap_or_default();
    let r = f(&mut s);
    s.trim();
    SCRATCH.with(|c| c.set(Some(s)));
    r
}

/// What [`par_blocks`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BlockStats {
    /// bzip2 streams (the real dump: one; pbzip2 output: one per block).
    pub streams: u64,
    /// Blocks accepted.
    pub blocks: u64,
    /// Decompressed bytes.
    pub decompressed_bytes: u64,
    /// Candidates that were not block boundaries (magic bits inside compressed data), and pieces re-decoded.
    pub false_candidates: u64,
    /// The data ends inside a stream (no end-of-stream marker after its last whole block).
    pub truncated: bool,
    /// Most compressed bytes buffered at once when reading a stream ([`read_parallel_stream`]; 0 for a
    /// memory-mapped input): at most the cap, or the largest block plus [`SLACK`] when that is more.
    pub buffered_peak: u64,
}

/// One guessed block: bits `[start, end)`, in a stream of `level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Piece {
    start: u64,
    end: u64,
    level: u8,
}

enum Outcome<T> {
    Block { value: T, crc: u32, len: u64 },
    Bad(String),
    Work(Error),
    Cancelled,
    Panicked(Box<dyn std::any::Any + Send + 'static>),
}

/// Decode piece `p` from `data`, whose first byte is bit `origin` of the input, and run `work` on its bytes.
fn run_piece<T>(
    data: &[u8],
    origin: u64,
    p: Piece,
    work: &(impl Fn(u64, &[u8]) -> Result<T> + Sync),
    cancel: &AtomicBool,
) -> Outcome<T> {
    if cancel.load(Ordering::Relaxed) {
        return Outcome::Cancelled;
    }
    with_scratch(
        |s| match decode_piece(data, origin, p.start, p.end, p.level, s) {
            Ok(crc) => match work(p.start, &s.out) {
                Ok(value) => Outcome::Block {
                    value,
                    crc,
                    len: s.out.len() as u64,
                },
                Err(e) => Outcome::Work(e),
            },
            Err(msg) => Outcome::Bad(msg),
        },
    )
}

/// What the speculation has next.
enum Spec {
    Piece(Piece),
    /// The next piece is not in the window yet, and the window may not grow before the walker moves on (or the
    /// piece would be longer than any block): the walker decodes at its position itself when nothing else is
    /// pending.
    Wait,
    /// Nothing to speculate: the end of the input, or a header the speculation does not see.
    End,
}

/// Speculates the pieces ahead of the walker, assuming every candidate is a real boundary.
struct Speculator {
    /// Start of the next piece (a block candidate), with its stream's level.
    next: Option<(u64, u8)>,
    /// No candidate starts in bits `[next start + 1, scanned)`: where to scan on after a wait.
    scanned: u64,
}

impl Speculator {
    fn at(start: u64, level: u8) -> Speculator {
        Speculator {
            next: Some((start, level)),
            scanned: 0,
        }
    }

    /// Buffer the bytes up to `end` if the window may hold them; false: wait for the walker.
    fn reach(win: &mut Window<'_>, end: u64) -> std::io::Result<bool> {
        if win.end() >= end || win.eof {
            return Ok(true);
        }
        if end > win.keep + win.cap {
            return Ok(false);
        }
        win.fill(end)?;
        Ok(true)
    }

    fn next(&mut self, win: &mut Window<'_>) -> std::io::Result<Spec> {
        let Some((start, level)) = self.next else {
            return Ok(Spec::End);
        };
        let (end, kind) = loop {
            if let Some(c) = win.next(self.scanned.max(start + 1)) {
                break c;
            }
            if win.eof {
                self.next = None;
                let end = win.end() * 8;
                return Ok(Spec::Piece(Piece { start, end, level }));
            }
            // Every candidate before the last 47 bits would have shown.
            self.scanned = (win.end() * 8).saturating_sub(47).max(start + 1);
            let want = (win.end() + READ_BYTES).min(win.keep + win.cap);
            if self.scanned > start + max_block_bits(level) || want <= win.end() {
                return Ok(Spec::Wait);
            }
            win.fill(want)?;
        };
        if !Self::reach(win, end.div_ceil(8) + SLACK)? {
            return Ok(Spec::Wait);
        }
        let next = match kind {
            Magic::Block => Some((end, level)),
            Magic::Eos => {
                // Skip the trailer, any empty streams, and the next stream's header.
                let mut eos = end;
                loop {
                    let byte = (eos + 80).div_ceil(8);
                    if !Self::reach(win, byte + 10)? {
                        return Ok(Spec::Wait);
                    }
                    match win.get(byte, byte + 4) {
                        Some([b'B', b'Z', b'h', l @ b'1'..=b'9']) => {
                            let l = *l;
                            let first = (byte + 4) * 8;
                            match magic_at(win.data(), first - win.origin()) {
                                Some(Magic::Block) => break Some((first, l)),
                                Some(Magic::Eos) => eos = first,
                                None => break None,
                            }
                        }
                        _ => break None,
                    }
                }
            }
        };
        self.next = next;
        self.scanned = 0;
        Ok(Spec::Piece(Piece { start, end, level }))
    }
}

/// Sequential bookkeeping in input order: where the next block really starts.
struct Walker<'a> {
    path: &'a Path,
    /// Bit offset of the next block's magic (when not `done`).
    pos: u64,
    /// Level of the current stream (`b'1'`..=`b'9'`).
    level: u8,
    /// Combined CRC of the current stream's accepted blocks.
    crc: u32,
    done: bool,
    stats: BlockStats,
}

/// Why a block that decoded is not accepted where it ends (shared by the walker's two checks).
fn no_magic_after(end: u64) -> String {
    format!(
        "the block ends at {}, where no block or end-of-stream magic follows",
        at(end)
    )
}

/// "byte offset B (bit b)" of a bit offset.
fn at(bit: u64) -> String {
    format!("byte offset {} (bit {})", bit / 8, bit % 8)
}

impl<'a> Walker<'a> {
    fn new(path: &'a Path, win: &mut Window<'_>) -> Result<Walker<'a>> {
        let mut w = Walker {
            path,
            pos: 0,
            level: b'9',
            crc: 0,
            done: false,
            stats: BlockStats::default(),
        };
        w.enter_stream(win, 0)?;
        Ok(w)
    }

    fn bad(&self, what: String) -> Error {
        Error::bad_input(
            self.path,
            format!("{what}; the bzip2 data is damaged, download the file again"),
        )
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::io(self.path, e)
    }

    /// Byte offset up to which the input is consumed.
    fn consumed(&self, win: &Window<'_>) -> usize {
        if self.done {
            win.read as usize
        } else {
            (self.pos / 8) as usize
        }
    }

    /// A stream (or the end of the data) starts at `byte`: check its header, skip empty streams, and stop at the
    /// first block.
    fn enter_stream(&mut self, win: &mut Window<'_>, mut byte: u64) -> Result<()> {
        loop {
            win.release(byte);
            win.fill(byte + 10).map_err(|e| self.io(e))?;
            if byte == win.end() {
                self.done = true;
                return Ok(());
            }
            let head = win.get(byte, win.end().min(byte + 4)).expect("buffered");
            let ok = head.len() == 4 && &head[..3] == b"BZh" && (b'1'..=b'9').contains(&head[3]);
            if !ok {
                if head.len() < 4 && b"BZh".starts_with(&head[..head.len().min(3)]) {
                    self.stats.truncated = true;
                    self.done = true;
                    return Ok(());
                }
                return Err(if byte == 0 {
                    self.bad("no bzip2 stream header (BZh1..BZh9) at byte offset 0".into())
                } else {
                    Error::bad_input(
                        self.path,
                        format!(
                            "bzip2 stream {} ends at byte offset {byte}, and what follows is not another bzip2 \
                             stream (no BZh1..BZh9 header); the file is damaged or has trailing data, download \
                             it again",
                            self.stats.streams
                        ),
                    )
                });
            }
            self.stats.streams += 1;
            self.level = head[3];
            self.crc = 0;
            let first = (byte + 4) * 8;
            match win.magic_at(first).map_err(|e| self.io(e))? {
                Some(Magic::Block) => {
                    self.pos = first;
                    return Ok(());
                }
                Some(Magic::Eos) => byte = self.end_stream(win, first)?,
                None if first + 48 > win.end() * 8 => {
                    self.stats.truncated = true;
                    self.done = true;
                    return Ok(());
                }
                None => {
                    return Err(self.bad(format!(
                        "bzip2 stream {} (header at byte offset {byte}): no block magic right after the header",
                        self.stats.streams
                    )))
                }
            }
            if self.done {
                return Ok(());
            }
        }
    }

    /// The end-of-stream magic at bit `eos`: check the combined CRC; returns the byte where the next stream starts.
    fn end_stream(&mut self, win: &mut Window<'_>, eos: u64) -> Result<u64> {
        win.fill((eos + 80).div_ceil(8)).map_err(|e| self.io(e))?;
        if eos + 80 > win.end() * 8 {
            self.stats.truncated = true;
            self.done = true;
            return Ok(win.end());
        }
        let stored = win.bits(eos + 48, 32) as u32;
        if stored != self.crc {
            return Err(self.bad(format!(
                "end of bzip2 stream {} at {}: the stored stream CRC {stored:08x} does not match the combined CRC \
                 {:08x} of its {} blocks",
                self.stats.streams,
                at(eos),
                self.crc,
                self.stats.blocks
            )));
        }
        Ok((eos + 80).div_ceil(8))
    }

    /// Accept the block in bits `[self.pos, end)` with its CRC; move to the next block (or the end).
    fn accept(&mut self, win: &mut Window<'_>, end: u64, crc: u32, len: u64) -> Result<()> {
        let start = self.pos;
        self.stats.blocks += 1;
        self.stats.decompressed_bytes += len;
        self.crc = self.crc.rotate_left(1) ^ crc;
        self.pos = end;
        win.release(end / 8);
        match win.magic_at(end).map_err(|e| self.io(e))? {
            Some(Magic::Block) => Ok(()),
            Some(Magic::Eos) => {
                let next = self.end_stream(win, end)?;
                if self.done {
                    return Ok(());
                }
                self.enter_stream(win, next)
            }
            // No magic after the block: the data is cut there (the input ends before the 48 bits of a magic,
            // and the bits that are there begin one), or what follows is damage — a mangled end-of-stream
            // marker, garbage — which must not pass for a cut file (found by the `bz2_blocks` fuzz target: a
            // block whose end-of-stream magic had one byte changed, ~900 bits before the end, was counted as
            // truncated).
            None => {
                let have = win.end() * 8;
                let rest = have.saturating_sub(end);
                let cut = rest == 0
                    || (rest < 48 && {
                        let n = rest as u32;
                        let b = win.bits(end, n);
                        b == BLOCK_MAGIC >> (48 - n) || b == EOS_MAGIC >> (48 - n)
                    });
                if cut {
                    self.stats.truncated = true;
                    self.done = true;
                    return Ok(());
                }
                Err(self.bad(format!(
                    "bzip2 block {} (stream {}, block magic at {}): {}",
                    self.stats.blocks,
                    self.stats.streams,
                    at(start),
                    no_magic_after(end)
                )))
            }
        }
    }

    /// The block at `self.pos` did not decode as the piece up to its first candidate end (`tried`: that end and
    /// why), or was never tried (`None`): decode it here. Sword's own decoder reads the block once, up to the
    /// largest size a block can have, and the block's own end says which candidate is the real boundary (the
    /// ones before it were false matches); a block that does not decode is damaged, and one with no candidate
    /// after it at all is where the data was cut (truncated). For a block the own decoder leaves to the crate,
    /// the piece is extended over one more candidate at a time up to the largest block size. Returns the
    /// accepted block's value.
    ///
    /// A stream is buffered up to the largest block (and the magic after it, and [`SLACK`]), so every
    /// candidate that can end the block shows; only whether any candidate follows at all, when none shows, needs
    /// the rest of the input ([`Window::candidate_after`]), and then the walker stops (the data is cut, or the
    /// block is damaged) whatever the answer.
    fn decode_here<T>(
        &mut self,
        win: &mut Window<'_>,
        tried: Option<(u64, String)>,
        work: &(impl Fn(u64, &[u8]) -> Result<T> + Sync),
        cancel: &AtomicBool,
    ) -> Result<Option<T>> {
        let start = self.pos;
        let (path, level) = (self.path, self.level);
        if cancel.load(Ordering::Relaxed) {
            return Err(Error::bad_input(path, "cancelled"));
        }
        let limit = start + max_block_bits(level);
        win.fill((limit + 48).div_ceil(8) + SLACK)
            .map_err(|e| self.io(e))?;
        // The first candidate after the block's start, and where the input ends (`u64::MAX`: not yet known, and
        // past every candidate that matters; a candidate past `limit` only ever ends a piece that is refused).
        let (first_after, total) = match win.next(start + 1) {
            Some((p, _)) => (Some(p), if win.eof { win.read * 8 } else { u64::MAX }),
            None if win.eof => (None, win.read * 8),
            None => match win.candidate_after(start + 1).map_err(|e| self.io(e))? {
                Some(p) => (Some(p), u64::MAX),
                None => (None, win.read * 8),
            },
        };
        let last = first_after.is_none();
        enum Own<T> {
            Block(T, u32, u64, u64),
            Bad(String),
            Crate,
        }
        let free = limit.min(total);
        let o = win.origin();
        let own = {
            let data = win.data();
            with_scratch(|s| -> Result<Own<T>> {
                Ok(
                    match block::decode(data, start - o, free - o, level - b'0', s) {
                        Ok(b) => {
                            let end = b.end + o;
                            if magic_at(data, b.end).is_some() || end == total || last {
                                let v = work(start, &s.out)?;
                                Own::Block(v, b.crc, s.out.len() as u64, end)
                            } else {
                                Own::Bad(no_magic_after(end))
                            }
                        }
                        Err(BlockError::Bad { bit, what }) => {
                            Own::Bad(format!("{what} (at {})", at(bit + o)))
                        }
                        Err(BlockError::Unsupported(_)) => Own::Crate,
                    },
                )
            })?
        };
        match own {
            Own::Block(v, crc, len, end) => {
                if tried.is_some() {
                    self.stats.false_candidates += 1;
                }
                self.accept(win, end, crc, len)?;
                return Ok(Some(v));
            }
            Own::Bad(_) if last => {
                self.stats.truncated = true;
                self.done = true;
                return Ok(None);
            }
            Own::Bad(why) => {
                return Err(self.bad(format!(
                    "bzip2 block {} (stream {}, block magic at {}): {why}",
                    self.stats.blocks + 1,
                    self.stats.streams,
                    at(start),
                )))
            }
            Own::Crate => {}
        }
        let attempt =
            |win: &Window<'_>, end: u64| -> Result<std::result::Result<(T, u32, u64), String>> {
                let piece = Piece { start, end, level };
                match run_piece(win.data(), win.origin(), piece, work, cancel) {
                    Outcome::Block { value, crc, len } => Ok(Ok((value, crc, len))),
                    Outcome::Bad(msg) => Ok(Err(msg)),
                    Outcome::Work(e) => Err(e),
                    Outcome::Cancelled => Err(Error::bad_input(path, "cancelled")),
                    Outcome::Panicked(p) => panic::resume_unwind(p),
                }
            };
        // The candidate after `from`: one that shows, else the one past the window (or the end).
        let after = |win: &Window<'_>, from: u64| {
            win.next(from)
                .map_or(first_after.filter(|&p| p >= from).unwrap_or(total), |m| m.0)
        };
        let (mut end, why) = match tried {
            Some(t) => t,
            None => {
                let end = after(win, start + 1);
                match attempt(win, end)? {
                    Ok((v, crc, len)) => {
                        self.accept(win, end, crc, len)?;
                        return Ok(Some(v));
                    }
                    Err(why) => (end, why),
                }
            }
        };
        if end >= total {
            self.stats.truncated = true;
            self.done = true;
            return Ok(None);
        }
        while end < total {
            let next = after(win, end + 1);
            if next > limit {
                break;
            }
            end = next;
            self.stats.false_candidates += 1;
            if let Ok((v, crc, len)) = attempt(win, end)? {
                self.accept(win, end, crc, len)?;
                return Ok(Some(v));
            }
        }
        Err(self.bad(format!(
            "bzip2 block {} (stream {}, block magic at {}): {why}",
            self.stats.blocks + 1,
            self.stats.streams,
            at(start),
        )))
    }
}

/// Wait for one task message, helping the pool meanwhile when this thread belongs to it.
fn wait_one<M>(rx: &mpsc::Receiver<M>) -> M {
    loop {
        if let Ok(m) = rx.try_recv() {
            return m;
        }
        match rayon::yield_now() {
            Some(rayon::Yield::Executed) => continue,
            Some(rayon::Yield::Idle) => {
                if let Ok(m) = rx.recv_timeout(std::time::Duration::from_micros(500)) {
                    return m;
                }
            }
            None => return rx.recv().expect("coordinator holds a sender"),
        }
    }
}

/// Decode every block of the bzip2 data `data` (one or more streams) in parallel (see the module docs).
///
/// `work(bit, bytes)` runs on a rayon worker with a decoded block's bytes (`bit`: the block's bit offset in
/// `data`, unique and increasing in file order); it may also run on pieces that turn out not to be blocks, whose
/// results are dropped, so it must have no side effects beyond its value. `sink(byte, value)` receives the
/// accepted blocks' values in file order on the calling thread (`byte`: the byte offset up to which the data is
/// consumed). At most `window` pieces are in flight or waiting.
///
/// Errors ([`Error::BadInput`], naming byte and bit offsets): data that does not start with a stream header, a
/// block that does not decode (damaged data or CRC mismatch) from its start up to any candidate end within the
/// largest block size, a stream CRC mismatch, data after a stream that is not another stream. Data that ends
/// inside a stream sets [`BlockStats::truncated`] (every whole block before the cut reaches `sink`).
pub fn par_blocks<T: Send>(
    path: &Path,
    data: &[u8],
    window: usize,
    work: impl Fn(u64, &[u8]) -> Result<T> + Sync,
    sink: impl FnMut(usize, T) -> Result<()>,
) -> Result<BlockStats> {
    let mut win = Window::mapped(data, &[]);
    par_blocks_in(path, &mut win, window, &work, |_| {}, sink)
}

/// [`par_blocks`] on a bzip2 stream read from `reader` (stdin), buffering at most about `cap` compressed bytes
/// beyond the walker (more only for the one block the walker decodes itself: the largest block plus
/// [`SLACK`]); each piece handed to a worker is copied out of the buffer. The same bytes, errors and
/// [`BlockStats`] as [`par_blocks`] on the whole data (`false_candidates` aside), whatever the cap and however
/// the reader splits its reads; a read that fails is an [`Error::Io`].
pub fn par_blocks_stream<T: Send>(
    path: &Path,
    reader: &mut dyn Read,
    window: usize,
    cap: u64,
    work: impl Fn(u64, &[u8]) -> Result<T> + Sync,
    sink: impl FnMut(usize, T) -> Result<()>,
) -> Result<BlockStats> {
    let mut win = Window::stream(reader, cap, &[]);
    par_blocks_in(path, &mut win, window, &work, |_| {}, sink)
}

/// The parallel decoder over a [`Window`]; `first(bit)` is told where the first block starts before any
/// `work` runs.
fn par_blocks_in<T: Send>(
    path: &Path,
    win: &mut Window<'_>,
    window: usize,
    work: &(impl Fn(u64, &[u8]) -> Result<T> + Sync),
    first: impl FnOnce(u64),
    mut sink: impl FnMut(usize, T) -> Result<()>,
) -> Result<BlockStats> {
    let mut walker = Walker::new(path, win)?;
    if walker.done {
        walker.stats.buffered_peak = win.peak;
        return Ok(walker.stats);
    }
    first(walker.pos);
    let window = window.max(1);
    let cancel = AtomicBool::new(false);
    let cancel_ref = &cancel;

    let result = rayon::in_place_scope_fifo(|scope| -> Result<()> {
        let (tx, rx) = mpsc::channel::<(u64, Outcome<T>)>();
        let mut pending: VecDeque<(Piece, Option<Outcome<T>>)> = VecDeque::new();
        let mut spawned: u64 = 0;
        let mut front_seq: u64 = 0;
        let mut spec = Speculator::at(walker.pos, walker.level);
        let r = (|| {
            while !walker.done {
                // Pieces behind the walker would be dropped (and their bytes are gone from a stream's window).
                if spec.next.is_some_and(|(s, _)| s < walker.pos) {
                    spec = Speculator::at(walker.pos, walker.level);
                }
                let mut wait = false;
                while pending.len() < window {
                    let piece = match spec.next(win).map_err(|e| walker.io(e))? {
                        Spec::Piece(p) => p,
                        Spec::Wait => {
                            wait = true;
                            break;
                        }
                        Spec::End => break,
                    };
                    let (bytes, origin) = win.piece_bytes(piece);
                    let tx = tx.clone();
                    let seq = spawned;
                    scope.spawn_fifo(move |_| {
                        let out = panic::catch_unwind(AssertUnwindSafe(|| {
                            run_piece(&bytes, origin, piece, work, cancel_ref)
                        }))
                        .unwrap_or_else(Outcome::Panicked);
                        let _ = tx.send((seq, out));
                    });
                    spawned += 1;
                    pending.push_back((piece, None));
                }
                let Some(front) = pending.front() else {
                    if wait {
                        // The next piece does not fit in the window yet: the walker decodes the block itself.
                        if let Some(v) = walker.decode_here(win, None, work, cancel_ref)? {
                            sink(walker.consumed(win), v)?;
                        }
                    } else {
                        // The speculation stopped short of the walker (after a false end-of-stream match, or
                        // at the end): speculate again from where the walker is.
                        spec = Speculator::at(walker.pos, walker.level);
                    }
                    continue;
                };
                if front.1.is_none() {
                    let (seq, out) = wait_one(&rx);
                    pending[(seq - front_seq) as usize].1 = Some(out);
                    continue;
                }
                let (piece, out) = pending.pop_front().expect("front exists");
                front_seq += 1;
                // The walker may be behind this piece (a stream header the speculation missed): catch up.
                while !walker.done && walker.pos < piece.start {
                    if let Some(v) = walker.decode_here(win, None, work, cancel_ref)? {
                        sink(walker.consumed(win), v)?;
                    }
                }
                if walker.done || piece.start != walker.pos || piece.level != walker.level {
                    walker.stats.false_candidates += 1;
                    continue;
                }
                let value = match out.expect("checked above") {
                    Outcome::Block { value, crc, len } => {
                        walker.accept(win, piece.end, crc, len)?;
                        Some(value)
                    }
                    Outcome::Bad(msg) => {
                        walker.decode_here(win, Some((piece.end, msg)), work, cancel_ref)?
                    }
                    Outcome::Work(e) => return Err(e),
                    Outcome::Cancelled => return Err(walker.bad("cancelled".into())),
                    Outcome::Panicked(p) => panic::resume_unwind(p),
                };
                if let Some(v) = value {
                    sink(walker.consumed(win), v)?;
                }
            }
            Ok(())
        })();
        if r.is_err() {
            cancel_ref.store(true, Ordering::Relaxed);
        }
        r
    });
    walker.stats.buffered_peak = win.peak;
    result.map(|()| walker.stats)
}

/// Pieces in flight for the dump reader: a few per thread.
fn pieces(opts: &super::ReadOpts) -> usize {
    rayon::current_num_threads().max(1) * opts.chunks_per_thread.max(1)
}

/// The dump reader's side of [`par_blocks_in`]: each block's bytes are framed by `work` on its worker (a block
/// may start and end inside a line: the caller's [`Joiner`](super::Joiner) glues them), the first block's start
/// is checked with [`super::start::check_start`], and `consumed(byte)` hears how far the input is consumed.
fn read_blocks<T: Send>(
    win: &mut Window<'_>,
    opts: &super::ReadOpts,
    work: &super::Work<'_, T>,
    sink: &mut dyn FnMut(super::ChunkOut<T>) -> Result<()>,
    path: &Path,
    mut consumed: impl FnMut(usize),
) -> Result<BlockStats> {
    let first = std::sync::OnceLock::new();
    par_blocks_in(
        path,
        win,
        pieces(opts),
        &|bit, bytes: &[u8]| {
            if first.get() == Some(&bit) {
                let head = &bytes[..bytes.len().min(super::START_BYTES)];
                super::start::check_start(path, super::Format::Bzip2, head)?;
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

/// Read a memory-mapped bzip2 dump with [`par_blocks`] (see [`read_blocks`]); consumed pages are released.
pub(crate) fn read_parallel<T: Send>(
    map: &memmap2::Mmap,
    opts: &super::ReadOpts,
    work: &super::Work<'_, T>,
    sink: &mut dyn FnMut(super::ChunkOut<T>) -> Result<()>,
    progress: &crate::core::progress::Progress,
    path: &Path,
) -> Result<BlockStats> {
    let data: &[u8] = map;
    let mut last = 0usize;
    let mut win = Window::mapped(data, &[]);
    let stats = read_blocks(&mut win, opts, work, sink, path, |byte| {
        progress.inc(byte.saturating_sub(last) as u64);
        super::release(map, last, byte.saturating_sub(last));
        last = last.max(byte);
    })?;
    progress.inc(data.len().saturating_sub(last) as u64);
    Ok(stats)
}

/// Read a bzip2 dump from a stream (stdin) with [`par_blocks_stream`] (see [`read_blocks`]): the reader counts
/// the progress as it is read. The window holds [`STREAM_CAP`], or 1 MiB per piece in flight when that is more
/// (a level-9 block is at most ≈ 900 kB compressed; a dump's blocks are a tenth of that).
pub(crate) fn read_parallel_stream<T: Send>(
    reader: &mut dyn Read,
    opts: &super::ReadOpts,
    work: &super::Work<'_, T>,
    sink: &mut dyn FnMut(super::ChunkOut<T>) -> Result<()>,
    path: &Path,
) -> Result<BlockStats> {
    let cap = STREAM_CAP.max(pieces(opts) as u64 * (1 << 20));
    let mut win = Window::stream(reader, cap, &[]);
    read_blocks(&mut win, opts, work, sink, path, |_| {})
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::{Read, Write};

    fn compress(data: &[u8], level: u32) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// The sequential decode (the oracle): the `bzip2` crate's multi-stream decoder.
    fn oracle(data: &[u8]) -> Vec<u8> {
        let mut v = Vec::new();
        bzip2::read::MultiBzDecoder::new(data)
            .read_to_end(&mut v)
            .unwrap();
        v
    }

    /// A sink that appends the decoded blocks to `out`, checking that the consumed offsets grow.
    fn in_order(out: &mut Vec<u8>) -> impl FnMut(usize, Vec<u8>) -> Result<()> + '_ {
        let mut last = 0;
        move |byte, v| {
            assert!(byte >= last, "consumed offsets grow");
            last = byte;
            out.extend_from_slice(&v);
            Ok(())
        }
    }

    fn decode_with(
        data: &[u8],
        window: usize,
        extra: &[(u64, Magic)],
    ) -> Result<(Vec<u8>, BlockStats)> {
        let mut out = Vec::new();
        let stats = par_blocks_in(
            Path::new("t.bz2"),
            &mut Window::mapped(data, extra),
            window,
            &|_, b: &[u8]| Ok(b.to_vec()),
            |_| {},
            in_order(&mut out),
        )?;
        Ok((out, stats))
    }

    fn decode(data: &[u8]) -> Result<(Vec<u8>, BlockStats)> {
        decode_with(data, 4, &[])
    }

    /// A reader that hands out 1..=`max` bytes per read (a pipe's short reads, at their worst).
    struct Trickle<'a> {
        data: &'a [u8],
        pos: usize,
        max: usize,
        s: u64,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
            self.s ^= self.s << 13;
            self.s ^= self.s >> 7;
            self.s ^= self.s << 17;
            let n = (1 + self.s as usize % self.max)
                .min(buf.len())
                .min(self.data.len() - self.pos);
            buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
            self.pos += n;
            Ok(n)
        }
    }

    /// The stream path: `data` read through a window of `cap` bytes in reads of at most `max` bytes.
    fn decode_stream(
        data: &[u8],
        window: usize,
        cap: u64,
        max: usize,
    ) -> Result<(Vec<u8>, BlockStats)> {
        let mut r = Trickle {
            data,
            pos: 0,
            max: max.max(1),
            s: 0x9e37_79b9,
        };
        let mut out = Vec::new();
        let stats = par_blocks_stream(
            Path::new("t.bz2"),
            &mut r,
            window,
            cap,
            |_, b: &[u8]| Ok(b.to_vec()),
            in_order(&mut out),
        )?;
        let bound = cap + max_block_bits(b'9') / 8 + SLACK + 64;
        assert!(
            stats.buffered_peak <= bound,
            "{} > {bound}",
            stats.buffered_peak
        );
        Ok((out, stats))
    }

    /// The stream path gives what the mapped path gives: the same bytes and stats, or the same error.
    fn same_as_mapped(data: &[u8], cap: u64, max: usize) {
        let key = |s: &BlockStats| (s.streams, s.blocks, s.decompressed_bytes, s.truncated);
        match (decode(data), decode_stream(data, 3, cap, max)) {
            (Ok((a, x)), Ok((b, y))) => {
                assert!(a == b, "cap {cap} max {max}");
                assert_eq!(key(&x), key(&y), "cap {cap} max {max}");
            }
            (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "cap {cap} max {max}"),
            (a, b) => panic!(
                "cap {cap} max {max}: mapped {:?}, stream {:?}",
                a.map(|r| r.1),
                b.map(|r| r.1)
            ),
        }
    }

    #[test]
    fn the_stream_path_gives_the_mapped_paths_bytes_and_errors() {
        let text = texty(400_000, 5);
        let c = compress(&text, 1);
        let blocks = block_bits(&c);
        let mut cases = vec![c.clone()];
        let mut bad = c.clone();
        bad[((blocks[2] + blocks[3]) / 16) as usize] ^= 0x10; // a damaged block
        cases.push(bad);
        let mut bad = c.clone();
        bad[((blocks[1] + 48) / 8 + 2) as usize] ^= 1; // a block CRC
        cases.push(bad);
        let eos = all_magics(&c).last().copied().unwrap();
        let mut bad = c.clone();
        bad[((eos.0 + 48) / 8 + 1) as usize] ^= 0x40; // the stream CRC
        cases.push(bad);
        let mut t = c.clone();
        t.extend_from_slice(b"garbage"); // trailing data
        cases.push(t);
        for cut in [5, 40, c.len() / 2, c.len() - 11, c.len() - 1] {
            cases.push(c[..cut].to_vec()); // truncated
        }
        cases.push(b"BZh9xxxxxxxxxxxxxxxxxxxxxxxx".to_vec());
        let mut junk = b"BZh1".to_vec(); // a block magic, then 1 MB with no other magic
        junk.extend_from_slice(&BLOCK_MAGIC.to_be_bytes()[2..]);
        junk.resize(1 << 20, 0);
        cases.push(junk);
        for data in &cases {
            for (cap, max) in [
                (1 << 10, 4096),
                (64 << 10, 1 << 20),
                (STREAM_CAP, 1 << 16),
                (200 << 10, 7),
            ] {
                same_as_mapped(data, cap, max);
            }
        }
    }

    #[test]
    fn the_stream_window_stays_bounded() {
        // Random bytes at level 9: blocks of ≈ 900 kB compressed, 6 MB in all, through a 1 MiB window.
        let mut s = 7u64;
        let text: Vec<u8> = (0..6_000_000)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                s as u8
            })
            .collect();
        let c = compress(&text, 9);
        let (out, stats) = decode_stream(&c, 4, 1 << 20, 1 << 16).unwrap();
        assert!(out == text);
        assert!(stats.buffered_peak < c.len() as u64 / 2, "{stats:?}");
    }

    /// Text that compresses like JSON does (repeats with variation), `n` bytes.
    fn texty(n: usize, seed: u64) -> Vec<u8> {
        let words: &[&[u8]] = &[
            b"{\"type\":\"item\",\"id\":\"Q",
            b"\",\"labels\":{\"en\":{\"language\":\"en\",\"value\":\"",
            b"\"}},\"claims\":{\"P31\":[{\"mainsnak\":{\"snaktype\":\"value\"",
            b"Douglas Adams",
            b"\n",
            b"},",
            b"wikibase-entityid",
        ];
        let mut s = seed | 1;
        let mut v = Vec::with_capacity(n + 64);
        while v.len() < n {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            v.extend_from_slice(words[(s % words.len() as u64) as usize]);
            v.extend_from_slice((s % 100_000).to_string().as_bytes());
        }
        v.truncate(n);
        v
    }

    #[test]
    fn prefilter_sees_every_shift() {
        // Each magic, placed at every bit offset in zero bytes, is found exactly there.
        for (magic, kind) in [(BLOCK_MAGIC, Magic::Block), (EOS_MAGIC, Magic::Eos)] {
            for shift in 0..64u64 {
                let mut data = vec![0u8; 24];
                for j in 0..48 {
                    if magic >> (47 - j) & 1 == 1 {
                        let b = shift + 8 + j;
                        data[(b / 8) as usize] |= 0x80 >> (b % 8);
                    }
                }
                assert_eq!(
                    next_magic(&data, 0),
                    Some((shift + 8, kind)),
                    "shift {shift}"
                );
                assert_eq!(next_magic(&data, shift + 9), None);
                assert_eq!(bits(&data, shift + 8, 48), magic);
            }
        }
    }

    /// Bit-by-bit scan: the independent oracle for `next_magic`.
    fn naive_magics(data: &[u8]) -> Vec<(u64, Magic)> {
        let total = data.len() as u64 * 8;
        let bit = |p: u64| (data[(p / 8) as usize] >> (7 - p % 8)) & 1;
        let mut found = Vec::new();
        for p in 0..total.saturating_sub(47) {
            let mut v = 0u64;
            for j in 0..48 {
                v = v << 1 | u64::from(bit(p + j));
            }
            if v == BLOCK_MAGIC {
                found.push((p, Magic::Block));
            } else if v == EOS_MAGIC {
                found.push((p, Magic::Eos));
            }
        }
        found
    }

    fn all_magics(data: &[u8]) -> Vec<(u64, Magic)> {
        let mut v = Vec::new();
        let mut from = 0;
        while let Some(m) = next_magic(data, from) {
            v.push(m);
            from = m.0 + 1;
        }
        v
    }

    /// Bit offsets of the block magics in `data`.
    fn block_bits(data: &[u8]) -> Vec<u64> {
        all_magics(data)
            .into_iter()
            .filter(|m| m.1 == Magic::Block)
            .map(|m| m.0)
            .collect()
    }

    #[test]
    fn scan_matches_a_bit_by_bit_scan_on_real_bzip2() {
        let text = texty(300_000, 7);
        for level in [1, 9] {
            let c = compress(&text, level);
            let found = all_magics(&c);
            assert_eq!(found, naive_magics(&c), "level {level}");
            let blocks = found.iter().filter(|m| m.1 == Magic::Block).count();
            assert!(blocks >= 1 && found.last().unwrap().1 == Magic::Eos);
        }
    }

    #[test]
    fn rewrap_keeps_the_bits() {
        // A piece copied from any bit offset reads back bit for bit after the 4-byte header.
        let data: Vec<u8> = (0..200u32)
            .map(|i| (i.wrapping_mul(167) ^ 0x5a) as u8)
            .collect();
        for start in 0..40u64 {
            for len in [80u64, 81, 95, 96, 97, 400, 1000] {
                let mut out = Vec::new();
                rewrap(&data, start, start + len, b'9', &mut out);
                assert_eq!(&out[..4], b"BZh9");
                let body = &out[4..];
                for i in 0..len {
                    assert_eq!(
                        bits(body, i, 1),
                        bits(&data, start + i, 1),
                        "start {start} len {len} bit {i}"
                    );
                }
                assert_eq!(bits(body, len, 48), EOS_MAGIC);
                assert_eq!(bits(body, len + 48, 32), bits(&data, start + 48, 32));
                assert_eq!(body.len() as u64, (len + 80).div_ceil(8));
            }
        }
    }

    #[test]
    fn round_trips_at_every_level_and_window() {
        let text = texty(1_200_000, 3);
        for level in [1, 2, 5, 9] {
            let c = compress(&text, level);
            for window in [1, 2, 7] {
                let (out, stats) = decode_with(&c, window, &[]).unwrap();
                assert!(out == text, "level {level} window {window}");
                assert_eq!(stats.streams, 1);
                assert!(stats.blocks >= (1_200_000 / (level as u64 * 100_000)).max(1) - 1);
                assert_eq!(stats.decompressed_bytes, text.len() as u64);
                assert!(!stats.truncated);
            }
        }
    }

    #[test]
    fn multi_stream_files_with_empty_streams() {
        // Streams of different levels back to back, an empty stream (header + end-of-stream only) among them.
        let parts = [
            texty(250_000, 1),
            Vec::new(),
            texty(10, 2),
            texty(130_000, 3),
        ];
        let mut c = Vec::new();
        let mut all = Vec::new();
        for (i, p) in parts.iter().enumerate() {
            c.extend(compress(p, [1, 9, 3, 1][i]));
            all.extend_from_slice(p);
        }
        assert_eq!(oracle(&c), all);
        let (out, stats) = decode(&c).unwrap();
        assert!(out == all);
        assert_eq!(stats.streams, 4);
        // An empty file's stream alone.
        let (out, stats) = decode(&compress(b"", 9)).unwrap();
        assert!(out.is_empty() && stats.streams == 1 && stats.blocks == 0);
    }

    #[test]
    fn false_candidates_do_not_change_the_bytes() {
        let text = texty(700_000, 11);
        let c = compress(&text, 1);
        let total = c.len() as u64 * 8;
        let mut s = 12345u64;
        for round in 0..6 {
            let mut extra = Vec::new();
            for _ in 0..(5 + round * 7) {
                s = s
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let kind = if s >> 63 == 1 {
                    Magic::Block
                } else {
                    Magic::Eos
                };
                extra.push(((s >> 20) % total, kind));
            }
            extra.sort_by_key(|e| e.0);
            extra.dedup_by_key(|e| e.0);
            let (out, stats) = decode_with(&c, 3, &extra).unwrap();
            assert!(out == text, "round {round}");
            assert!(stats.false_candidates > 0);
        }
    }

    #[test]
    fn a_damaged_block_is_an_error_naming_its_offset() {
        let text = texty(400_000, 5);
        let c = compress(&text, 1);
        let blocks = block_bits(&c);
        assert!(blocks.len() >= 4);
        // A byte in the middle of the third block.
        let mid = ((blocks[2] + blocks[3]) / 16) as usize;
        let mut bad = c.clone();
        bad[mid] ^= 0x10;
        let e = decode(&bad).unwrap_err().to_string();
        assert!(
            e.contains(&format!(
                "bzip2 block 3 (stream 1, block magic at {})",
                at(blocks[2])
            )),
            "{e}"
        );
        assert!(e.contains("damaged"), "{e}");
        // The stored CRC of the second block.
        let mut bad = c.clone();
        let crc_byte = ((blocks[1] + 48) / 8 + 2) as usize;
        bad[crc_byte] ^= 1;
        let e = decode(&bad).unwrap_err().to_string();
        assert!(e.contains("bzip2 block 2 "), "{e}");
    }

    #[test]
    fn a_stream_crc_mismatch_is_an_error() {
        let c = compress(&texty(50_000, 9), 9);
        let eos = all_magics(&c).last().copied().unwrap();
        assert_eq!(eos.1, Magic::Eos);
        let mut bad = c.clone();
        bad[((eos.0 + 48) / 8 + 1) as usize] ^= 0x40;
        let e = decode(&bad).unwrap_err().to_string();
        assert!(e.contains("stored stream CRC"), "{e}");
        assert!(e.contains(&at(eos.0)), "{e}");
    }

    /// What follows the last block decides between a cut file and a damaged one: the end-of-stream magic cut
    /// anywhere (fewer than its 48 bits left, and those bits begin it) is a cut, every whole block passed on;
    /// the magic with a byte changed, followed by more data, is damage, on the mapped and the stream path.
    #[test]
    fn a_mangled_end_of_stream_magic_is_damage_and_a_cut_one_is_truncation() {
        let text = texty(30_000, 3);
        let c = compress(&text, 9);
        let eos = all_magics(&c).last().copied().unwrap();
        assert_eq!(eos.1, Magic::Eos);
        let first = (eos.0 / 8) as usize;
        // Cut inside the magic: the block is whole, the stream trailer is missing.
        for cut in first + 1..=((eos.0 + 47) / 8) as usize {
            let (out, stats) = decode(&c[..cut]).unwrap();
            assert!(stats.truncated, "cut {cut}");
            assert_eq!(out, text, "cut {cut}");
            same_as_mapped(&c[..cut], 1 << 12, 97);
        }
        // One byte of the magic changed (the block's CRC still matches): not a cut, though no magic follows.
        for k in 1..5 {
            let mut bad = c.clone();
            bad[first + k] ^= 0x06;
            let e = decode(&bad).unwrap_err().to_string();
            assert!(
                e.contains("where no block or end-of-stream magic follows"),
                "{e}"
            );
            assert!(e.contains(&at(eos.0)), "{e}");
            assert!(e.contains("damaged"), "{e}");
            same_as_mapped(&bad, 1 << 12, 97);
        }
    }

    /// The `bz2_blocks` fuzz target's first finding (2026-12-04): a level-1 stream whose one block is whole but
    /// whose end-of-stream magic has one byte changed (0x38 → 0x3e), followed by ~900 bits of copied block data
    /// and no valid magic. It was passed on as a cut file (87 bytes, `truncated`); bzip2, lbzip2 and Python's
    /// decoder all refuse it.
    #[test]
    fn the_fuzzers_mangled_trailer_is_refused() {
        const HEX: &str = "425a6831314159265359a8a0c1210000135b8000101004201020083ea74f6a2000486a7a5188190f50f14c354fd2988c\
            0980984a733eb8b49723b686110a028ff8b4ae4017f5cc159b33d5a282aa88468dfb2e21370d2d915207584cd4617c17\
            72453e5090a8a0c12188190f50f14c354fd2988c098098010000db8000101004201020023ea74f6a2000486a7a518819\
            0f50f14c354fd2988c0980984a733eb8b49723b686110a028ff8b4ae4017f5cc159b33d5a282aa88468dfb2e21370d2d\
            915207584cd4617c177245385017f5cc3516";
        let data: Vec<u8> = (0..HEX.len() / 2)
            .map(|i| u8::from_str_radix(&HEX[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        assert_eq!(data.len(), 210);
        let e = decode(&data).unwrap_err().to_string();
        assert!(
            e.contains("where no block or end-of-stream magic follows"),
            "{e}"
        );
        assert!(
            e.contains("bzip2 block 1 (stream 1, block magic at "),
            "{e}"
        );
        same_as_mapped(&data, 64, 7);
    }

    #[test]
    fn trailing_data_and_bad_headers_are_errors() {
        let c = compress(&texty(1000, 1), 9);
        let mut t = c.clone();
        t.extend_from_slice(b"garbage");
        let e = decode(&t).unwrap_err().to_string();
        assert!(
            e.contains(&format!("ends at byte offset {}", c.len())),
            "{e}"
        );
        let e = decode(b"BZh0xxxxxxxxxxxxxxxxxxxxxxxx")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no bzip2 stream header"), "{e}");
        let e = decode(b"BZh9xxxxxxxxxxxxxxxxxxxxxxxx")
            .unwrap_err()
            .to_string();
        assert!(e.contains("no block magic right after the header"), "{e}");
    }

    #[test]
    fn a_piece_longer_than_any_block_is_refused_uncopied() {
        // A level-1 header and block magic, then 1 MB with no further magic: the piece runs to the end of the
        // data, four times the largest level-1 block.
        let mut data = b"BZh1".to_vec();
        data.extend_from_slice(&BLOCK_MAGIC.to_be_bytes()[2..]);
        data.resize(1 << 20, 0);
        let total = data.len() as u64 * 8;
        assert!(total - 32 > max_block_bits(b'1'));
        let e = decode_block(&data, 32, total, b'1', &mut block::Scratch::default()).unwrap_err();
        assert!(e.contains("largest size a block can have"), "{e}");
        // The whole reader: the data ends inside the stream (no block decodes), never a copy of it all.
        let (out, stats) = decode(&data).unwrap();
        assert!(out.is_empty() && stats.truncated, "{stats:?}");
    }

    #[test]
    fn a_cut_file_keeps_every_whole_block_before_the_cut() {
        let text = texty(450_000, 4);
        let c = compress(&text, 1);
        for cut in [5, 40, c.len() / 3, c.len() / 2, c.len() - 11, c.len() - 1] {
            let (out, stats) = decode(&c[..cut]).unwrap();
            assert!(stats.truncated, "cut {cut}");
            assert!(text.starts_with(&out), "cut {cut}");
            // Cut inside the trailer, every block is whole; before it, the last block is lost with the cut.
            assert!(out.len() < text.len() || cut > c.len() - 10, "cut {cut}");
        }
    }

    #[test]
    fn work_errors_reach_the_caller() {
        let c = compress(&texty(300_000, 8), 1);
        let e = par_blocks(
            Path::new("t.bz2"),
            &c,
            2,
            |bit, _| {
                if bit > 0 {
                    Err(Error::bad_input("t.bz2", format!("work at {bit}")))
                } else {
                    Ok(())
                }
            },
            |_, ()| Ok(()),
        )
        .unwrap_err();
        assert!(e.to_string().contains("work at"), "{e}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]

        /// The stream path with tiny windows and short reads: the sequential decoder's bytes, across streams of
        /// any levels, empty ones among them.
        #[test]
        fn the_stream_path_gives_the_sequential_decoders_bytes(
            seed in any::<u64>(),
            lens in proptest::collection::vec(0usize..120_000, 1..4),
            levels in proptest::collection::vec(1u32..=9, 4),
            cap in 1u64..300_000,
            max in 1usize..70_000,
            window in 1usize..5,
        ) {
            let mut c = Vec::new();
            for (i, len) in lens.iter().enumerate() {
                c.extend(compress(&texty(*len, seed + i as u64), levels[i]));
            }
            let (out, stats) = decode_stream(&c, window, cap, max).unwrap();
            prop_assert!(out == oracle(&c));
            prop_assert!(!stats.truncated);
            prop_assert_eq!(stats.streams, lens.len() as u64);
        }

        /// Any bytes, any levels, split into any streams: the same bytes as the sequential decoder.
        #[test]
        fn same_bytes_as_the_sequential_decoder(
            seed in any::<u64>(),
            len in 0usize..260_000,
            random in any::<bool>(),
            cuts in proptest::collection::vec(0usize..260_000, 0..3),
            level in 1u32..=9,
            window in 1usize..6,
        ) {
            let text = if random {
                let mut s = seed | 1;
                (0..len).map(|_| { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s as u8 }).collect()
            } else {
                texty(len, seed)
            };
            let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(len)).collect();
            cuts.sort_unstable();
            let mut c = Vec::new();
            let mut prev = 0;
            for cut in cuts.into_iter().chain([len]) {
                c.extend(compress(&text[prev..cut], level));
                prev = cut;
            }
            let (out, stats) = decode_with(&c, window, &[]).unwrap();
            prop_assert!(out == oracle(&c));
            prop_assert!(out == text);
            prop_assert!(!stats.truncated);
        }

        /// A damaged byte anywhere is an error, or (in padding and other bits the decoder does not depend on)
        /// the same bytes; never other bytes, never a panic.
        #[test]
        fn a_damaged_byte_is_an_error_or_harmless(
            seed in any::<u64>(),
            pos in any::<prop::sample::Index>(),
            flip in 1u8..=255,
        ) {
            let text = texty(220_000, seed);
            let mut c = compress(&text, 1);
            let i = pos.index(c.len());
            c[i] ^= flip;
            match decode(&c) {
                Ok((out, stats)) => prop_assert!(out == text || (stats.truncated && text.starts_with(&out))),
                Err(e) => {
                    let bad_input = matches!(e, Error::BadInput { .. });
                    prop_assert!(bad_input, "{}", e);
                }
            }
        }
    }
}
