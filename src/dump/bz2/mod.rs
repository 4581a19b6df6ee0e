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

use self::piece::{run_piece, Outcome};
use self::speculate::{Spec, Speculator};
use self::walker::Walker;
use self::window::Piece;
use self::window::Window;
use super::inorder::wait_one;
use crate::core::error::Result;
use std::collections::VecDeque;
use std::io::Read;
use std::panic::{self, AssertUnwindSafe};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;

pub mod block;
mod magic;
mod piece;
mod speculate;
#[cfg(test)]
mod tests;
mod walker;
mod window;

pub use self::magic::Magic;
pub use self::magic::{next_magic, BLOCK_MAGIC, EOS_MAGIC};
pub use self::piece::{decode_block, decode_block_crate, BlockStats};
pub use self::window::STREAM_CAP;

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
    par_blocks_from(path, Input::Mapped(data), window, &work, |_| {}, sink)
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
    par_blocks_from(
        path,
        Input::Stream { reader, cap },
        window,
        &work,
        |_| {},
        sink,
    )
}

/// Where the compressed bytes of [`par_blocks_from`] come from.
pub enum Input<'a> {
    /// The whole file in memory (a memory map): [`par_blocks`].
    Mapped(&'a [u8]),
    /// A stream, at most about `cap` bytes buffered beyond the walker: [`par_blocks_stream`].
    Stream { reader: &'a mut dyn Read, cap: u64 },
}

/// The parallel decoder ([`par_blocks`], [`par_blocks_stream`]); `first(bit)` is told where the first block
/// starts before any `work` runs (the dump reader checks that block's bytes look like a dump).
pub fn par_blocks_from<T: Send>(
    path: &Path,
    input: Input<'_>,
    window: usize,
    work: &(impl Fn(u64, &[u8]) -> Result<T> + Sync),
    first: impl FnOnce(u64),
    sink: impl FnMut(usize, T) -> Result<()>,
) -> Result<BlockStats> {
    let mut win = match input {
        Input::Mapped(data) => Window::mapped(data, &[]),
        Input::Stream { reader, cap } => Window::stream(reader, cap, &[]),
    };
    par_blocks_in(path, &mut win, window, work, first, sink)
}

/// [`par_blocks_from`] over a [`Window`] (tests give one with extra, false magics).
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
