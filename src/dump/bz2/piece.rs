//! A piece: the bits from one candidate block start to the next, decoded on a worker by sword's block decoder
//! ([`super::block`]), or, for the constructs it leaves to libbzip2's algorithm, re-wrapped as a one-block
//! stream and decoded by the `bzip2` crate (the fallback).

use super::block::{self, BlockError};
use super::magic::{at, bits, EOS_MAGIC};
use super::window::Piece;
use crate::core::error::{Error, Result};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

/// Appends bits, most significant first, to a byte vector.
pub(super) struct BitWriter<'a> {
    pub(super) out: &'a mut Vec<u8>,
    pub(super) acc: u64,
    pub(super) n: u32,
}

impl BitWriter<'_> {
    #[inline]
    pub(super) fn put(&mut self, v: u64, k: u32) {
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
    pub(super) fn flush(&mut self) {
        if self.n > 0 {
            let pad = 8 - self.n;
            self.put(0, pad);
        }
    }
}

/// Wrap the block in bits `[start, end)` of `data` (starting with its magic) as a one-block stream of `level`.
pub(super) fn rewrap(data: &[u8], start: u64, end: u64, level: u8, out: &mut Vec<u8>) {
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
pub(super) fn max_block_bits(level: u8) -> u64 {
    u64::from(level - b'0') * 100_000 * 21 + 200_000
}

/// Why bits `[start, end)` cannot be a block of `level` before any decoding (too short, past the data, or longer
/// than any block can be: such a piece is neither copied nor decoded).
pub(super) fn piece_shape(
    data: &[u8],
    start: u64,
    end: u64,
    level: u8,
) -> std::result::Result<(), String> {
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
pub(super) fn decode_piece(
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
pub(super) fn with_scratch<R>(f: impl FnOnce(&mut block::Scratch) -> R) -> R {
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

pub(super) enum Outcome<T> {
    Block { value: T, crc: u32, len: u64 },
    Bad(String),
    Work(Error),
    Cancelled,
    Panicked(Box<dyn std::any::Any + Send + 'static>),
}

/// Decode piece `p` from `data`, whose first byte is bit `origin` of the input, and run `work` on its bytes.
pub(super) fn run_piece<T>(
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
