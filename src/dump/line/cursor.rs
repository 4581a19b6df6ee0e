//! The cursor over one line that the skim and the direct reader share: bytes and a position, strings jumped
//! over with `memchr2` (`"` or `\\`), nested values skipped by a 64-byte block scan of their brackets and quotes
//! (escapes and strings tracked with carry-less bit tricks), nothing unescaped or validated.

use std::fmt;

/// Why a line was not skimmed (the caller then parses the whole line).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkimError {
    /// Byte offset in the line.
    pub offset: usize,
    pub what: &'static str,
}

impl fmt::Display for SkimError {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "{} at byte {}", self.what, self.offset)
    }
}

pub(super) type Res<T> = Result<T, SkimError>;

/// Bytes that end the scan of a nested value's contents: quotes and brackets (byte-by-byte reference scan).
#[cfg(test)]
pub(super) const STOP: [bool; 256] = {
    let mut t = [false; 256];
    t[b'"' as usize] = true;
    t[b'{' as usize] = true;
    t[b'}' as usize] = true;
    t[b'[' as usize] = true;
    t[b']' as usize] = true;
    t[b'\\' as usize] = true;
    t
};

/// A cursor over one line (shared with `dump::direct`).
pub(super) struct Cur<'a> {
    pub(super) s: &'a [u8],
    pub(super) i: usize,
}

impl<'a> Cur<'a> {
    pub(super) fn err<T>(&self, what: &'static str) -> Res<T> {
        Err(SkimError {
            offset: self.i,
            what,
        })
    }

    #[inline]
    pub(super) fn ws(&mut self) {
        // One compare for the usual case (no whitespace between tokens): JSON whitespace is all ≤ 0x20.
        while let Some(&b) = self.s.get(self.i) {
            if b > b' ' || !matches!(b, b' ' | b'\t' | b'\n' | b'\r') {
                return;
            }
            self.i += 1;
        }
    }

    #[inline]
    pub(super) fn peek(&mut self) -> Option<u8> {
        self.ws();
        self.s.get(self.i).copied()
    }

    /// At a `"`: the string's content range (no quotes) and whether it contains an escape; the cursor moves
    /// past the closing quote.
    #[inline]
    pub(super) fn string(&mut self) -> Res<(usize, usize, bool)> {
        let start = self.i + 1;
        let mut j = start;
        let mut escaped = false;
        loop {
            match find_quote_or_backslash(self.s, j) {
                None => {
                    self.i = self.s.len();
                    return self.err("unterminated string");
                }
                Some(p) => {
                    if self.s[p] == b'"' {
                        self.i = p + 1;
                        return Ok((start, p, escaped));
                    }
                    escaped = true;
                    j = p + 2;
                }
            }
        }
    }

    /// At an `{` or `[`: move past the matching close bracket.
    pub(super) fn nested(&mut self) -> Res<()> {
        match skip_nested(self.s, self.i) {
            Some(end) => {
                self.i = end;
                Ok(())
            }
            None => {
                self.i = self.s.len();
                self.err("unterminated object or array")
            }
        }
    }

    /// The same as `nested`, byte by byte (the reference for the block scanner's tests).
    #[cfg(test)]
    pub(super) fn nested_scalar(&mut self) -> Res<()> {
        let s = self.s;
        let mut depth = 0usize;
        while self.i < s.len() {
            let b = s[self.i];
            if !STOP[b as usize] {
                self.i += 1;
                continue;
            }
            match b {
                b'"' => {
                    self.string()?;
                    continue;
                }
                // Outside strings (invalid JSON) a backslash still escapes the next byte, as in the block scan.
                b'\\' => self.i += 1,
                b'{' | b'[' => depth += 1,
                _ => {
                    depth -= 1;
                    if depth == 0 {
                        self.i += 1;
                        return Ok(());
                    }
                }
            }
            self.i += 1;
        }
        self.err("unterminated object or array")
    }

    /// Skip one value; returns its byte range.
    pub(super) fn value(&mut self) -> Res<(usize, usize)> {
        let start = match self.peek() {
            Some(b'"') => {
                let a = self.i;
                self.string()?;
                a
            }
            Some(b'{' | b'[') => {
                let a = self.i;
                self.nested()?;
                a
            }
            Some(_) => {
                let a = self.i;
                while self.i < self.s.len()
                    && !matches!(
                        self.s[self.i],
                        b',' | b'}' | b']' | b':' | b' ' | b'\t' | b'\n' | b'\r'
                    )
                {
                    self.i += 1;
                }
                if self.i == a {
                    return self.err("expected a value");
                }
                a
            }
            None => return self.err("expected a value"),
        };
        Ok((start, self.i))
    }

    /// At an object: call `f(cursor, key)` for every member with the cursor at its value (which `f` must
    /// consume). Keys with escapes are refused.
    pub(super) fn members(
        &mut self,
        mut f: impl FnMut(&mut Cur<'a>, &'a [u8]) -> Res<()>,
    ) -> Res<()> {
        self.items(
            (b'{', "expected an object"),
            (b'}', "expected `,` or `}`"),
            |c| {
                if c.peek() != Some(b'"') {
                    return c.err("expected a key");
                }
                let (a, b, escaped) = c.string()?;
                if escaped {
                    return c.err("key with an escape");
                }
                if c.peek() != Some(b':') {
                    return c.err("expected `:`");
                }
                c.i += 1;
                let s: &'a [u8] = c.s;
                f(c, &s[a..b])
            },
        )
    }

    /// At an array: call `f(cursor)` for every element with the cursor at it (which `f` must consume).
    pub(super) fn elements(&mut self, f: impl FnMut(&mut Cur<'a>) -> Res<()>) -> Res<()> {
        self.items(
            (b'[', "expected an array"),
            (b']', "expected `,` or `]`"),
            f,
        )
    }

    /// At the `open` bracket: call `item(cursor)` for every comma-separated item up to the `close` bracket
    /// (each with the message refusing what stands where it should be). Shared by objects and arrays;
    /// inlined, so that each keeps its own loop with the brackets as constants.
    #[inline(always)]
    fn items(
        &mut self,
        (open, not_open): (u8, &'static str),
        (close, not_close): (u8, &'static str),
        mut item: impl FnMut(&mut Cur<'a>) -> Res<()>,
    ) -> Res<()> {
        if self.peek() != Some(open) {
            return self.err(not_open);
        }
        self.i += 1;
        if self.peek() == Some(close) {
            self.i += 1;
            return Ok(());
        }
        loop {
            item(self)?;
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(c) if c == close => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return self.err(not_close),
            }
        }
    }
}

/// Scan state carried between blocks: nesting depth, inside a string, and whether the next byte is escaped.
#[derive(Clone, Copy, Default)]
pub(super) struct ScanState {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

/// Scalar scan of `block` (starting at `base` in the line); returns the offset after the bracket that brings
/// the depth back to zero.
pub(super) fn scan_scalar(block: &[u8], base: usize, st: &mut ScanState) -> Option<usize> {
    for (k, &b) in block.iter().enumerate() {
        if st.escaped {
            st.escaped = false;
            continue;
        }
        if b == b'\\' {
            st.escaped = true;
            continue;
        }
        if st.in_string {
            if b == b'"' {
                st.in_string = false;
            }
            continue;
        }
        match b {
            b'"' => st.in_string = true,
            b'{' | b'[' => st.depth += 1,
            b'}' | b']' => {
                st.depth = st.depth.saturating_sub(1);
                if st.depth == 0 {
                    return Some(base + k + 1);
                }
            }
            _ => {}
        }
    }
    None
}

/// Bit masks of one 64-byte block: quotes, backslashes, opening and closing brackets (bit k = byte k).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
pub(super) fn block_masks(block: &[u8; 64]) -> (u64, u64, u64, u64) {
    use std::arch::x86_64::*;
    let (mut q, mut bs, mut op, mut cl) = (0u64, 0u64, 0u64, 0u64);
    // SAFETY: SSE2 is part of the x86_64 baseline; the loads read 4 × 16 bytes inside `block`.
    unsafe {
        let quote = _mm_set1_epi8(b'"' as i8);
        let backslash = _mm_set1_epi8(b'\\' as i8);
        // `{` = 0x7B and `[` = 0x5B (`}` = 0x7D and `]` = 0x5D) differ only in bit 5: OR 0x20 folds them.
        let fold = _mm_set1_epi8(0x20);
        let open = _mm_set1_epi8(0x7B);
        let close = _mm_set1_epi8(0x7D);
        for k in 0..4 {
            let v = _mm_loadu_si128(block.as_ptr().add(16 * k).cast::<__m128i>());
            let f = _mm_or_si128(v, fold);
            let m = |x: __m128i| u64::from(_mm_movemask_epi8(x) as u16) << (16 * k);
            q |= m(_mm_cmpeq_epi8(v, quote));
            bs |= m(_mm_cmpeq_epi8(v, backslash));
            op |= m(_mm_cmpeq_epi8(f, open));
            cl |= m(_mm_cmpeq_epi8(f, close));
        }
    }
    (q, bs, op, cl)
}

#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
pub(super) fn block_masks(block: &[u8; 64]) -> (u64, u64, u64, u64) {
    let (mut q, mut bs, mut op, mut cl) = (0u64, 0u64, 0u64, 0u64);
    for (k, &b) in block.iter().enumerate() {
        let bit = 1u64 << k;
        match b {
            b'"' => q |= bit,
            b'\\' => bs |= bit,
            b'{' | b'[' => op |= bit,
            b'}' | b']' => cl |= bit,
            _ => {}
        }
    }
    (q, bs, op, cl)
}

/// The bytes of a block that follow an odd-length run of backslashes (escaped bytes), with the run parity
/// carried across blocks in `carry` (1 when the block's first byte is escaped). Runs are found with carries:
/// adding a run's start bit to the backslash mask ripples through the run and lands on the byte after it;
/// runs starting on even and odd positions are added separately so that the landing bit's parity tells the
/// run's length parity (the method of Langdale and Lemire's simdjson).
#[inline(always)]
pub(super) fn escaped_mask(bs: u64, carry: &mut u64) -> u64 {
    const EVEN: u64 = 0x5555_5555_5555_5555;
    const ODD: u64 = !EVEN;
    let starts = bs & !(bs << 1);
    let even_start_mask = EVEN ^ *carry;
    let even_starts = starts & even_start_mask;
    let odd_starts = starts & !even_start_mask;
    let even_carries = bs.wrapping_add(even_starts);
    let (mut odd_carries, overflow) = bs.overflowing_add(odd_starts);
    odd_carries |= *carry;
    *carry = u64::from(overflow);
    ((even_carries & !bs) & ODD) | ((odd_carries & !bs) & EVEN)
}

/// Inclusive prefix XOR: bit k = XOR of bits 0..=k (marks the bytes from an opening quote up to, not
/// including, its closing quote).
#[inline(always)]
pub(super) fn prefix_xor(mut x: u64) -> u64 {
    x ^= x << 1;
    x ^= x << 2;
    x ^= x << 4;
    x ^= x << 8;
    x ^= x << 16;
    x ^= x << 32;
    x
}

/// From `s[start]` (an `{` or `[`), the offset just past the matching close bracket, or `None` when the line
/// ends first. 64 bytes at a time: quote, backslash and bracket masks, escaped bytes removed
/// ([`escaped_mask`]), strings by prefix XOR, then the brackets outside strings are counted (when the depth
/// cannot come back to zero in the block) or visited one by one. The last partial block is scanned byte by
/// byte with the same rules. AVX-512BW or AVX2 where the CPU has it (detected at run time: std caches the
/// answer), else SSE2.
pub(super) fn skip_nested(s: &[u8], start: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("popcnt") {
        if std::is_x86_feature_detected!("avx512bw") {
            // SAFETY: the CPU has AVX-512BW and POPCNT (checked just above).
            return unsafe { skip_nested_avx512(s, start) };
        }
        if std::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 and POPCNT (checked just above).
            return unsafe { skip_nested_avx2(s, start) };
        }
    }
    skip_nested_with(s, start, block_masks)
}

/// [`skip_nested`] compiled for AVX-512BW: each mask is one 64-byte compare straight into a mask register
/// (against two compares and two `movemask`s with AVX2).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw,popcnt")]
pub(super) unsafe fn skip_nested_avx512(s: &[u8], start: usize) -> Option<usize> {
    skip_nested_with(s, start, |b| {
        // SAFETY: this function only runs on CPUs with AVX-512BW.
        unsafe { block_masks_avx512(b) }
    })
}

/// [`block_masks`] with 64-byte compares.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx512bw")]
#[inline]
unsafe fn block_masks_avx512(block: &[u8; 64]) -> (u64, u64, u64, u64) {
    use std::arch::x86_64::*;
    // SAFETY: the load reads the 64 bytes of `block`.
    let v = unsafe { _mm512_loadu_si512(block.as_ptr().cast::<__m512i>()) };
    let f = _mm512_or_si512(v, _mm512_set1_epi8(0x20));
    (
        _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'"' as i8)),
        _mm512_cmpeq_epi8_mask(v, _mm512_set1_epi8(b'\\' as i8)),
        _mm512_cmpeq_epi8_mask(f, _mm512_set1_epi8(0x7B)),
        _mm512_cmpeq_epi8_mask(f, _mm512_set1_epi8(0x7D)),
    )
}

/// [`skip_nested`] compiled for AVX2 (two 32-byte compares per mask, hardware popcount).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
pub(super) unsafe fn skip_nested_avx2(s: &[u8], start: usize) -> Option<usize> {
    skip_nested_with(s, start, |b| {
        // SAFETY: this function only runs on CPUs with AVX2.
        unsafe { block_masks_avx2(b) }
    })
}

/// [`block_masks`] with 32-byte compares.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
#[inline]
unsafe fn block_masks_avx2(block: &[u8; 64]) -> (u64, u64, u64, u64) {
    use std::arch::x86_64::*;
    let (mut q, mut bs, mut op, mut cl) = (0u64, 0u64, 0u64, 0u64);
    let quote = _mm256_set1_epi8(b'"' as i8);
    let backslash = _mm256_set1_epi8(b'\\' as i8);
    let fold = _mm256_set1_epi8(0x20);
    let open = _mm256_set1_epi8(0x7B);
    let close = _mm256_set1_epi8(0x7D);
    for k in 0..2 {
        // SAFETY: the load reads 32 bytes inside `block`.
        let v = unsafe { _mm256_loadu_si256(block.as_ptr().add(32 * k).cast::<__m256i>()) };
        let f = _mm256_or_si256(v, fold);
        let m = |x: __m256i| u64::from(_mm256_movemask_epi8(x) as u32) << (32 * k);
        q |= m(_mm256_cmpeq_epi8(v, quote));
        bs |= m(_mm256_cmpeq_epi8(v, backslash));
        op |= m(_mm256_cmpeq_epi8(f, open));
        cl |= m(_mm256_cmpeq_epi8(f, close));
    }
    (q, bs, op, cl)
}

#[inline(always)]
pub(super) fn skip_nested_with(
    s: &[u8],
    start: usize,
    masks: impl Fn(&[u8; 64]) -> (u64, u64, u64, u64),
) -> Option<usize> {
    let mut st = ScanState::default();
    let mut pos = start;
    while let Some(block) = s.get(pos..pos + 64) {
        let block: &[u8; 64] = block.try_into().ok()?;
        let (mut q, bs, mut op, mut cl) = masks(block);
        if bs != 0 || st.escaped {
            let mut carry = u64::from(st.escaped);
            let escaped = escaped_mask(bs, &mut carry);
            st.escaped = carry == 1;
            q &= !escaped;
            op &= !escaped;
            cl &= !escaped;
        }
        // No bracket outside an escape (a run of string bytes): only whether the block ends inside a string
        // matters, the parity of its quotes.
        if op | cl == 0 {
            st.in_string ^= q.count_ones() & 1 == 1;
            pos += 64;
            continue;
        }
        let inside = prefix_xor(q) ^ if st.in_string { u64::MAX } else { 0 };
        st.in_string = inside >> 63 == 1;
        let (op, cl) = (op & !inside, cl & !inside);
        // The depth cannot come back to zero inside this block when it exceeds the block's closing brackets:
        // count instead of visiting them (most blocks of a reference or qualifier).
        let closes = cl.count_ones() as usize;
        if st.depth > closes {
            st.depth = st.depth + op.count_ones() as usize - closes;
            pos += 64;
            continue;
        }
        let mut m = op | cl;
        while m != 0 {
            let k = m.trailing_zeros();
            if op >> k & 1 == 1 {
                st.depth += 1;
            } else {
                st.depth = st.depth.saturating_sub(1);
                if st.depth == 0 {
                    return Some(pos + k as usize + 1);
                }
            }
            m &= m - 1;
        }
        pos += 64;
    }
    scan_scalar(&s[pos..], pos, &mut st)
}

/// The first `"` or `\\` at or after `from`. Most strings of a dump line are short (keys, ids, snak types):
/// 16-byte compares find their end without the call overhead of a general search.
#[inline(always)]
pub(super) fn find_quote_or_backslash(s: &[u8], from: usize) -> Option<usize> {
    let mut j = from;
    #[cfg(target_arch = "x86_64")]
    while let Some(chunk) = s.get(j..j + 16) {
        use std::arch::x86_64::*;
        // SAFETY: SSE2 is part of the x86_64 baseline; the load reads the 16 bytes of `chunk`.
        let m = unsafe {
            let v = _mm_loadu_si128(chunk.as_ptr().cast::<__m128i>());
            _mm_movemask_epi8(_mm_or_si128(
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'"' as i8)),
                _mm_cmpeq_epi8(v, _mm_set1_epi8(b'\\' as i8)),
            ))
        };
        if m != 0 {
            return Some(j + m.trailing_zeros() as usize);
        }
        j += 16;
    }
    memchr::memchr2(b'"', b'\\', s.get(j..)?).map(|k| j + k)
}
