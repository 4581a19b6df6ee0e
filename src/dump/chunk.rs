//! Chunks of the decompressed stream and the lines across them: a worker frames the complete lines inside its
//! chunk ([`frame`]) and returns the fragments at its edges; the sequential [`Joiner`] glues the tail of one
//! chunk to the head of the next and turns chunk-relative positions into absolute ones.

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

/// Bytes a worker's result holds in memory while it waits for its turn to reach the sink: the parallel gzip
/// reader lets the members behind the one being handed on run ahead while their results stay under a budget of
/// such bytes (`gz::Limits::ahead`), so results that keep little of their chunk (a decode-only run keeps nothing,
/// extract a few percent) let more members run ahead than whole chunks would.
pub trait Held {
    fn held(&self) -> usize;
}

impl Held for () {
    fn held(&self) -> usize {
        0
    }
}

impl<T: Held> Held for ChunkOut<T> {
    fn held(&self) -> usize {
        self.head
            .as_ref()
            .map_or(0, Vec::capacity)
            .saturating_add(self.tail.capacity())
            .saturating_add(self.data.held())
    }
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
}
