//! The input window: the bytes of a memory-mapped file, or a bounded window over a stream (stdin) that the
//! speculation reads ahead into and the walker releases behind it.

use std::io::Read;

use super::magic::{bits, magic_at, next_magic, Magic};

/// Bytes read past a piece's end (copied with a piece from a stream, and buffered past the largest block for the
/// walker): the block decoder's bit reader loads 8 bytes at a time and may look past where a damaged block
/// fails, so a piece decodes from a copy exactly as from the whole input.
pub(super) const SLACK: u64 = 8 << 10;
/// Bytes asked of a stream per read.
pub(super) const READ_BYTES: u64 = 128 << 10;
/// Compressed bytes the speculation may hold buffered beyond the walker when the input is a stream (stdin), at
/// least: [`read_parallel_stream`] allows 1 MiB per piece in flight when that is more.
pub const STREAM_CAP: u64 = 16 << 20;

/// The compressed input as the walker and the speculation read it, in absolute bit and byte offsets: all of a
/// memory-mapped file (pieces borrow it), or a window onto a stream, read on demand into a buffer that drops
/// the bytes the walker has passed (pieces are copied out of it). Candidate boundaries are the magics in the
/// data, plus (in tests) false ones injected at chosen bit offsets.
pub(super) struct Window<'a> {
    /// The whole input, when it is memory-mapped.
    pub(super) mapped: Option<&'a [u8]>,
    /// A stream's buffered bytes, the first at absolute byte offset `base`.
    pub(super) buf: Vec<u8>,
    pub(super) base: u64,
    pub(super) reader: Option<&'a mut dyn Read>,
    /// The input ends where the buffered bytes end (for a stream: its reader said so).
    pub(super) eof: bool,
    /// The walker has passed the bytes before this offset: a stream's buffer drops them before it grows.
    pub(super) keep: u64,
    /// Bytes the speculation may buffer beyond `keep` (the walker may go past it for one block).
    pub(super) cap: u64,
    /// Bytes read from the input in all (with `eof`: its length).
    pub(super) read: u64,
    /// Most bytes a stream's buffer held.
    pub(super) peak: u64,
    pub(super) extra: &'a [(u64, Magic)],
}

impl<'a> Window<'a> {
    pub(super) fn mapped(data: &'a [u8], extra: &'a [(u64, Magic)]) -> Window<'a> {
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

    pub(super) fn stream(
        reader: &'a mut dyn Read,
        cap: u64,
        extra: &'a [(u64, Magic)],
    ) -> Window<'a> {
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

    pub(super) fn data(&self) -> &[u8] {
        self.mapped.unwrap_or(&self.buf)
    }

    /// Bit offset of the first buffered byte.
    pub(super) fn origin(&self) -> u64 {
        self.base * 8
    }

    /// Absolute byte offset where the buffered bytes end.
    pub(super) fn end(&self) -> u64 {
        self.base + self.data().len() as u64
    }

    /// Buffered bytes `[a, b)` (absolute; `None` when not all buffered).
    pub(super) fn get(&self, a: u64, b: u64) -> Option<&[u8]> {
        self.data()
            .get((a - self.base) as usize..(b - self.base) as usize)
    }

    /// Bits `[bit, bit + n)` of the buffered bytes (past them: zero).
    pub(super) fn bits(&self, bit: u64, n: u32) -> u64 {
        bits(self.data(), bit - self.origin(), n)
    }

    /// The walker has passed the bytes before `byte`.
    pub(super) fn release(&mut self, byte: u64) {
        self.keep = self.keep.max(byte);
    }

    /// Buffer the bytes up to absolute byte `end`, or up to the end of the input when it ends before. A stream
    /// first drops the bytes the walker has passed, then reads at least [`READ_BYTES`] where its cap allows.
    pub(super) fn fill(&mut self, end: u64) -> std::io::Result<()> {
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
    pub(super) fn magic_at(&mut self, bit: u64) -> std::io::Result<Option<Magic>> {
        self.fill((bit + 48).div_ceil(8))?;
        Ok(magic_at(self.data(), bit - self.origin()))
    }

    /// The first candidate at a bit offset ≥ `from` among those the buffered bytes show: every candidate that
    /// ends within them (a later one starts after all of these). `None` at the end of the input: none at all.
    pub(super) fn next(&self, from: u64) -> Option<(u64, Magic)> {
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
    pub(super) fn candidate_after(&mut self, from: u64) -> std::io::Result<Option<u64>> {
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
    pub(super) fn piece_bytes(&self, p: Piece) -> (Bytes<'a>, u64) {
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
pub(super) enum Bytes<'a> {
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

/// One guessed block: bits `[start, end)`, in a stream of `level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Piece {
    pub(super) start: u64,
    pub(super) end: u64,
    pub(super) level: u8,
}
