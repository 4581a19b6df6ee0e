//! The speculation: candidate block starts found ahead of the walker and cut into pieces for the workers.

use super::magic::{magic_at, Magic};
use super::piece::max_block_bits;
use super::window::Piece;
use super::window::{Window, READ_BYTES, SLACK};

/// What the speculation has next.
pub(super) enum Spec {
    Piece(Piece),
    /// The next piece is not in the window yet, and the window may not grow before the walker moves on (or the
    /// piece would be longer than any block): the walker decodes at its position itself when nothing else is
    /// pending.
    Wait,
    /// Nothing to speculate: the end of the input, or a header the speculation does not see.
    End,
}

/// Speculates the pieces ahead of the walker, assuming every candidate is a real boundary.
pub(super) struct Speculator {
    /// Start of the next piece (a block candidate), with its stream's level.
    pub(super) next: Option<(u64, u8)>,
    /// No candidate starts in bits `[next start + 1, scanned)`: where to scan on after a wait.
    pub(super) scanned: u64,
}

impl Speculator {
    pub(super) fn at(start: u64, level: u8) -> Speculator {
        Speculator {
            next: Some((start, level)),
            scanned: 0,
        }
    }

    /// Buffer the bytes up to `end` if the window may hold them; false: wait for the walker.
    pub(super) fn reach(win: &mut Window<'_>, end: u64) -> std::io::Result<bool> {
        if win.end() >= end || win.eof {
            return Ok(true);
        }
        if end > win.keep + win.cap {
            return Ok(false);
        }
        win.fill(end)?;
        Ok(true)
    }

    pub(super) fn next(&mut self, win: &mut Window<'_>) -> std::io::Result<Spec> {
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
