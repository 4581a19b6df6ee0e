//! The in-order walker: takes the decoded pieces in file order, knowing where the next block really starts;
//! accepts, drops (a false match) or decodes again (a false end), checks each stream's combined CRC, and names
//! a damaged block by its byte and bit offset.

use super::block::{self, BlockError};
use super::magic::{at, magic_at, no_magic_after, Magic, BLOCK_MAGIC, EOS_MAGIC};
use super::piece::{max_block_bits, run_piece, with_scratch, BlockStats, Outcome};
use super::window::{Piece, Window, SLACK};
use crate::core::error::{Error, Result};
use std::panic::{self};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

/// Sequential bookkeeping in input order: where the next block really starts.
pub(super) struct Walker<'a> {
    pub(super) path: &'a Path,
    /// Bit offset of the next block's magic (when not `done`).
    pub(super) pos: u64,
    /// Level of the current stream (`b'1'`..=`b'9'`).
    pub(super) level: u8,
    /// Combined CRC of the current stream's accepted blocks.
    pub(super) crc: u32,
    pub(super) done: bool,
    pub(super) stats: BlockStats,
}

impl<'a> Walker<'a> {
    pub(super) fn new(path: &'a Path, win: &mut Window<'_>) -> Result<Walker<'a>> {
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

    pub(super) fn bad(&self, what: String) -> Error {
        Error::bad_input(
            self.path,
            format!("{what}; the bzip2 data is damaged, download the file again"),
        )
    }

    pub(super) fn io(&self, e: std::io::Error) -> Error {
        Error::io(self.path, e)
    }

    /// Byte offset up to which the input is consumed.
    pub(super) fn consumed(&self, win: &Window<'_>) -> usize {
        if self.done {
            win.read as usize
        } else {
            (self.pos / 8) as usize
        }
    }

    /// A stream (or the end of the data) starts at `byte`: check its header, skip empty streams, and stop at the
    /// first block.
    pub(super) fn enter_stream(&mut self, win: &mut Window<'_>, mut byte: u64) -> Result<()> {
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
    pub(super) fn end_stream(&mut self, win: &mut Window<'_>, eos: u64) -> Result<u64> {
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
    pub(super) fn accept(
        &mut self,
        win: &mut Window<'_>,
        end: u64,
        crc: u32,
        len: u64,
    ) -> Result<()> {
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
    pub(super) fn decode_here<T>(
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
