//! Skim: copy out of one entity line only the bytes the entity parser reads, before simd-json sees them.
//!
//! Why: simd-json builds a tape node for every value of the line and the serde visitor then walks (and skips)
//! every one of them. On real dump lines most bytes are never read by `sword extract`: sitelinks (only their
//! number is kept), qualifiers, references, aliases, and labels and descriptions in the 300-odd languages
//! that are not configured. On the 2015 real fixture these are ≈75% of the bytes. Building their tape costs
//! more CPU than inflating them (issue #2's target: parsing may cost no more CPU per MB than inflate), so a
//! cheap structural scan drops them first: strings are jumped over with `memchr2` (`"` or `\`), nesting is
//! tracked by depth, and nothing is unescaped or validated there.
//!
//! The output is a small JSON object with, in input order:
//! - `type`, `id`, `datatype`, `lastrevid`, `modified` copied as they are;
//! - `labels` and `descriptions` with only the configured languages and `mul` (non-objects such as the
//!   `[]` of old dumps copied as they are);
//! - `sitelinks` replaced by `"sitelinks#":N`, its number of entries (an array copied as it is);
//! - `claims` with, per statement, only `mainsnak`, `rank` and `id`;
//! - every other key dropped.
//!
//! Equivalence: for a line that is valid JSON, parsing the skimmed bytes gives the same [`Entity`] as
//! parsing the line (a property test checks it). When the scan meets anything it does not expect — a
//! structural error, a truncated line, a key with an escape, trailing bytes — it returns an error and the
//! caller parses the whole line the usual way, so malformed lines are reported exactly as without the skim.
//! The one difference is leniency: bytes inside dropped values are checked for structure (balanced nesting,
//! terminated strings) but not for full JSON validity (e.g. a malformed number inside a reference, or invalid
//! UTF-8 in an alias, no longer makes the line a bad line); nothing the stage reads is affected.
//!
//! [`Entity`]: super::entity::Entity

use super::entity::Langs;
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
const STOP: [bool; 256] = {
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
    fn nested_scalar(&mut self) -> Res<()> {
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
        if self.peek() != Some(b'{') {
            return self.err("expected an object");
        }
        self.i += 1;
        if self.peek() == Some(b'}') {
            self.i += 1;
            return Ok(());
        }
        loop {
            if self.peek() != Some(b'"') {
                return self.err("expected a key");
            }
            let (a, b, escaped) = self.string()?;
            if escaped {
                return self.err("key with an escape");
            }
            if self.peek() != Some(b':') {
                return self.err("expected `:`");
            }
            self.i += 1;
            let s: &'a [u8] = self.s;
            f(self, &s[a..b])?;
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b'}') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return self.err("expected `,` or `}`"),
            }
        }
    }

    /// At an array: call `f(cursor)` for every element with the cursor at it (which `f` must consume).
    pub(super) fn elements(&mut self, mut f: impl FnMut(&mut Cur<'a>) -> Res<()>) -> Res<()> {
        if self.peek() != Some(b'[') {
            return self.err("expected an array");
        }
        self.i += 1;
        if self.peek() == Some(b']') {
            self.i += 1;
            return Ok(());
        }
        loop {
            f(self)?;
            match self.peek() {
                Some(b',') => self.i += 1,
                Some(b']') => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return self.err("expected `,` or `]`"),
            }
        }
    }
}

/// Scan state carried between blocks: nesting depth, inside a string, and whether the next byte is escaped.
#[derive(Clone, Copy, Default)]
struct ScanState {
    depth: usize,
    in_string: bool,
    escaped: bool,
}

/// Scalar scan of `block` (starting at `base` in the line); returns the offset after the bracket that brings
/// the depth back to zero.
fn scan_scalar(block: &[u8], base: usize, st: &mut ScanState) -> Option<usize> {
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
fn block_masks(block: &[u8; 64]) -> (u64, u64, u64, u64) {
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
fn block_masks(block: &[u8; 64]) -> (u64, u64, u64, u64) {
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
fn escaped_mask(bs: u64, carry: &mut u64) -> u64 {
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
fn prefix_xor(mut x: u64) -> u64 {
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
/// byte with the same rules. AVX2 where the CPU has it (detected at run time), else SSE2.
fn skip_nested(s: &[u8], start: usize) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
        // SAFETY: the CPU has AVX2 and POPCNT (checked just above).
        return unsafe { skip_nested_avx2(s, start) };
    }
    skip_nested_with(s, start, block_masks)
}

/// [`skip_nested`] compiled for AVX2 (two 32-byte compares per mask, hardware popcount).
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn skip_nested_avx2(s: &[u8], start: usize) -> Option<usize> {
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
fn skip_nested_with(
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
fn find_quote_or_backslash(s: &[u8], from: usize) -> Option<usize> {
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

/// Comma bookkeeping for one output object or array.
struct Sep(bool);

impl Sep {
    #[inline]
    fn put(&mut self, out: &mut Vec<u8>) {
        if self.0 {
            out.push(b',');
        }
        self.0 = true;
    }
}

fn put_key(out: &mut Vec<u8>, key: &[u8]) {
    out.push(b'"');
    out.extend_from_slice(key);
    out.extend_from_slice(b"\":");
}

/// Copy the current value as it is.
fn copy_value(c: &mut Cur<'_>, out: &mut Vec<u8>) -> Res<()> {
    let (a, b) = c.value()?;
    out.extend_from_slice(&c.s[a..b]);
    Ok(())
}

/// Keys in `keys`.
fn any_of<'k>(keys: &'k [&'k [u8]]) -> impl Fn(&[u8]) -> bool + 'k {
    move |k| keys.contains(&k)
}

/// Copy the members of an object whose key `keep` accepts (a non-object is copied as it is); `inner` may handle
/// a kept member's value itself (returning `Some`), else the value is copied as it is.
fn object_with(
    c: &mut Cur<'_>,
    out: &mut Vec<u8>,
    keep: impl Fn(&[u8]) -> bool,
    mut inner: impl FnMut(&[u8], &mut Cur<'_>, &mut Vec<u8>) -> Option<Res<()>>,
) -> Res<()> {
    if c.peek() != Some(b'{') {
        return copy_value(c, out);
    }
    out.push(b'{');
    let mut sep = Sep(false);
    c.members(|c, k| {
        if keep(k) {
            sep.put(out);
            put_key(out, k);
            if let Some(r) = inner(k, c, out) {
                return r;
            }
            copy_value(c, out)
        } else {
            c.value().map(drop)
        }
    })?;
    out.push(b'}');
    Ok(())
}

/// A main snak: `snaktype`, `datatype`, and of `datavalue` its `type` and, of its `value`, only the entity
/// keys (`entity-type`, `numeric-id`, `id`): the parser reads nothing else, and strings, times, quantities and
/// coordinates (most main snaks of a real dump) shrink to `{}` or `0`, which it reads the same way.
fn mainsnak(c: &mut Cur<'_>, out: &mut Vec<u8>) -> Res<()> {
    object_with(
        c,
        out,
        any_of(&[b"snaktype", b"datatype", b"datavalue"]),
        |k, c, out| {
            (k == b"datavalue").then(|| {
                object_with(c, out, any_of(&[b"type", b"value"]), |k, c, out| {
                    (k == b"value").then(|| match c.peek() {
                        Some(b'{') => object_with(
                            c,
                            out,
                            any_of(&[b"entity-type", b"numeric-id", b"id"]),
                            |_, _, _| None,
                        ),
                        Some(b'"' | b'[') | Some(b'0'..=b'9' | b'-' | b't' | b'f') => {
                            c.value()?;
                            out.push(b'0');
                            Ok(())
                        }
                        _ => copy_value(c, out),
                    })
                })
            })
        },
    )
}

/// Write the skimmed form of `line` (one trimmed entity line, starting with `{`) into `out` (cleared first).
pub fn skim(line: &[u8], langs: &Langs, out: &mut Vec<u8>) -> Result<(), SkimError> {
    out.clear();
    let mut c = Cur { s: line, i: 0 };
    let keep_lang = |k: &[u8]| k == b"mul" || langs.langs.iter().any(|l| l.as_bytes() == k);
    out.push(b'{');
    let mut top = Sep(false);
    c.members(|c, key| {
        match key {
            b"type" | b"id" | b"datatype" | b"lastrevid" | b"modified" => {
                top.put(out);
                put_key(out, key);
                copy_value(c, out)?;
            }
            b"labels" | b"descriptions" => {
                top.put(out);
                put_key(out, key);
                object_with(c, out, keep_lang, |_, _, _| None)?;
            }
            b"sitelinks" => {
                top.put(out);
                if c.peek() != Some(b'{') {
                    put_key(out, key);
                    return copy_value(c, out);
                }
                let mut n = 0u64;
                c.members(|c, _| {
                    n += 1;
                    c.value().map(drop)
                })?;
                put_key(out, b"sitelinks#");
                out.extend_from_slice(n.to_string().as_bytes());
            }
            b"claims" => {
                top.put(out);
                put_key(out, key);
                if c.peek() != Some(b'{') {
                    return copy_value(c, out);
                }
                out.push(b'{');
                let mut props = Sep(false);
                c.members(|c, prop| {
                    props.put(out);
                    put_key(out, prop);
                    if c.peek() != Some(b'[') {
                        return copy_value(c, out);
                    }
                    out.push(b'[');
                    let mut sts = Sep(false);
                    c.elements(|c| {
                        sts.put(out);
                        object_with(
                            c,
                            out,
                            any_of(&[b"mainsnak", b"rank", b"id"]),
                            |k, c, out| (k == b"mainsnak").then(|| mainsnak(c, out)),
                        )
                    })?;
                    out.push(b']');
                    Ok(())
                })?;
                out.push(b'}');
            }
            _ => {
                c.value()?;
            }
        }
        Ok(())
    })?;
    if c.peek().is_some() {
        return c.err("bytes after the entity object");
    }
    out.push(b'}');
    Ok(())
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::dump::entity::{parse_entity, trim_line};

    pub(in crate::dump) fn langs() -> Langs {
        Langs {
            langs: vec!["en".into(), "ko".into()],
        }
    }

    fn sk(s: &str) -> Result<String, SkimError> {
        let mut out = Vec::new();
        skim(s.as_bytes(), &langs(), &mut out).map(|()| String::from_utf8(out).unwrap())
    }

    #[test]
    fn keeps_what_the_parser_reads_in_input_order() {
        let line = r#"{ "type" : "item", "id":"Q1","labels":{"fr":{"language":"fr","value":"un"},"en":{"language":"en","value":"one \"1\" \\"},"mul":{"language":"mul","value":"One"}},"aliases":{"en":[{"language":"en","value":"uno"}]},"claims":{"P31":[{"mainsnak":{"snaktype":"value","property":"P31","datavalue":{"value":{"entity-type":"item","id":"Q5"},"type":"wikibase-entityid"}},"type":"statement","qualifiers":{"P580":[{"x":"]}"}]},"id":"Q1$a","rank":"normal","references":[{"hash":"h","snaks":{}}]}],"P18":[],"P569":[{"mainsnak":{"snaktype":"value","property":"P569","datavalue":{"value":{"time":"+1952-03-11T00:00:00Z","precision":11},"type":"time"},"datatype":"time"},"rank":"normal"}],"P373":[{"mainsnak":{"datatype":"string","datavalue":{"type":"string","value":"Douglas"}}}]},"sitelinks":{"enwiki":{"site":"enwiki","title":"A {","badges":[]},"frwiki":{"site":"frwiki","title":"B","badges":["Q1"]}},"lastrevid":42,"modified":"2024-01-01T00:00:00Z","descriptions":[]}"#;
        assert_eq!(
            sk(line).unwrap(),
            r#"{"type":"item","id":"Q1","labels":{"en":{"language":"en","value":"one \"1\" \\"},"mul":{"language":"mul","value":"One"}},"claims":{"P31":[{"mainsnak":{"snaktype":"value","datavalue":{"value":{"entity-type":"item","id":"Q5"},"type":"wikibase-entityid"}},"id":"Q1$a","rank":"normal"}],"P18":[],"P569":[{"mainsnak":{"snaktype":"value","datavalue":{"value":{},"type":"time"},"datatype":"time"},"rank":"normal"}],"P373":[{"mainsnak":{"datatype":"string","datavalue":{"type":"string","value":0}}}]},"sitelinks#":2,"lastrevid":42,"modified":"2024-01-01T00:00:00Z","descriptions":[]}"#
        );
    }

    #[test]
    fn arrays_and_empty_objects_are_copied_as_they_are() {
        assert_eq!(
            sk(r#"{"labels":[],"claims":[],"sitelinks":[]}"#).unwrap(),
            r#"{"labels":[],"claims":[],"sitelinks":[]}"#
        );
        assert_eq!(
            sk(r#"{"sitelinks":{},"claims":{}}"#).unwrap(),
            r#"{"sitelinks#":0,"claims":{}}"#
        );
        assert_eq!(sk("{}").unwrap(), "{}");
    }

    #[test]
    fn refuses_what_it_does_not_expect() {
        for (line, what) in [
            (
                r#"{"type":"item","claims":{"P1":[{"a":"b"}"#,
                "expected `,` or `]`",
            ),
            (
                r#"{"type":"item","aliases":{"en":[1,2"#,
                "unterminated object or array",
            ),
            (r#"{"type":"it"#, "unterminated string"),
            (r#"{"ty\u0070e":"item"}"#, "key with an escape"),
            (r#"{"type":"item"} x"#, "bytes after the entity object"),
            (r#"{"type":"item",}"#, "expected a key"),
            (r#"{"type" "item"}"#, "expected `:`"),
            (r#"{"type":}"#, "expected a value"),
            ("[", "expected an object"),
            ("", "expected an object"),
        ] {
            assert_eq!(sk(line).unwrap_err().what, what, "{line}");
        }
    }

    /// Parse `line` the way `extract::handle_line` does: skimmed when the skim accepts it, else whole.
    /// Returns (whole-line parse, skim-path parse) as Debug strings of the owned results.
    fn both(line: &[u8], langs: &Langs) -> (String, String, bool) {
        let mut buffers = simd_json::Buffers::new(1024);
        let mut whole = line.to_vec();
        let a = format!("{:?}", parse_entity(&mut whole, langs, &mut buffers));
        let mut out = Vec::new();
        let skimmed = skim(line, langs, &mut out).is_ok();
        if !skimmed {
            out = line.to_vec();
        }
        let b = format!("{:?}", parse_entity(&mut out, langs, &mut buffers));
        (a, b, skimmed)
    }

    pub(in crate::dump) fn eight() -> Langs {
        Langs {
            langs: ["en", "fr", "de", "es", "it", "pt", "ko", "ja"]
                .iter()
                .map(|s| s.to_string())
                .collect(),
        }
    }

    pub(in crate::dump) fn lines(bytes: &[u8]) -> Vec<&[u8]> {
        bytes
            .split(|&b| b == b'\n')
            .map(|l| {
                let (a, b) = trim_line(l);
                &l[a..b]
            })
            .filter(|l| l.first() == Some(&b'{'))
            .collect()
    }

    /// The skimmed line parses to the same entity as the whole line, on generated lines of every shape the
    /// generator writes (legacy 2015 serialisation, `mul`, lexemes, properties, long lines).
    #[test]
    fn skimmed_lines_parse_like_whole_lines_on_generated_dumps() {
        for seed in [1, 2, 3] {
            let cfg = crate::synth::Config {
                entities: 1500,
                seed,
                legacy_share: 0.3,
                ..crate::synth::Config::default()
            };
            let mut bytes = Vec::new();
            crate::synth::generate(&cfg, &mut bytes).unwrap();
            let ls = lines(&bytes);
            assert!(ls.len() > 1000);
            let (mut kept, mut total) = (0usize, 0usize);
            for l in ls {
                let (a, b, skimmed) = both(l, &eight());
                assert!(skimmed, "{}", String::from_utf8_lossy(l));
                assert_eq!(a, b, "{}", String::from_utf8_lossy(l));
                let mut out = Vec::new();
                skim(l, &eight(), &mut out).unwrap();
                kept += out.len();
                total += l.len();
            }
            // The point of the skim: most bytes never reach simd-json.
            assert!(kept * 2 < total, "kept {kept} of {total} bytes");
        }
    }

    /// Every entity line of the real fixtures under `root` (`SWORD_REAL_FIXTURES`), per file: dump lines as
    /// they are, API files (`{"entities":{"Q42":{...}}}`, pretty-printed) as one compact line per entity.
    pub(in crate::dump) fn real_fixture_lines(
        root: &std::path::Path,
    ) -> Vec<(std::path::PathBuf, Vec<Vec<u8>>)> {
        let mut files = vec![];
        for dir in ["dumps", "entities", "generated"] {
            for e in std::fs::read_dir(root.join(dir)).unwrap() {
                let path = e.unwrap().path();
                if path.is_file() && path.extension().is_some_and(|x| x != "md") {
                    files.push(path);
                }
            }
        }
        files.sort();
        let mut all = vec![];
        for f in files {
            let raw = std::fs::read(&f).unwrap();
            let bytes = match raw.get(..2) {
                Some([0x1f, 0x8b]) => {
                    let mut v = Vec::new();
                    std::io::Read::read_to_end(
                        &mut flate2::read::MultiGzDecoder::new(&raw[..]),
                        &mut v,
                    )
                    .unwrap();
                    v
                }
                Some([b'B', b'Z']) => {
                    let mut v = Vec::new();
                    std::io::Read::read_to_end(
                        &mut bzip2::read::MultiBzDecoder::new(&raw[..]),
                        &mut v,
                    )
                    .unwrap();
                    v
                }
                _ => raw,
            };
            // API files (`{"entities":{"Q42":{...}}}`, pretty-printed) become one compact line per entity.
            let mut api_lines = Vec::new();
            if f.parent().is_some_and(|d| d.ends_with("entities")) {
                let v: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
                let entities = v.get("entities").and_then(|e| e.as_object()).cloned();
                match entities {
                    Some(map) => {
                        api_lines.extend(map.values().map(|e| serde_json::to_vec(e).unwrap()))
                    }
                    None => api_lines.push(serde_json::to_vec(&v).unwrap()),
                }
            }
            let ls: Vec<Vec<u8>> = if api_lines.is_empty() {
                lines(&bytes).into_iter().map(<[u8]>::to_vec).collect()
            } else {
                api_lines
            };
            all.push((f, ls));
        }
        all
    }

    /// The same on every real fixture line (`SWORD_REAL_FIXTURES`), and with other language sets.
    #[test]
    fn skimmed_lines_parse_like_whole_lines_on_real_fixtures() {
        let Ok(root) = std::env::var("SWORD_REAL_FIXTURES") else {
            return;
        };
        let (mut n, mut accepted) = (0, 0);
        for (f, ls) in real_fixture_lines(std::path::Path::new(&root)) {
            for l in &ls {
                for langs in [eight(), langs()] {
                    let (a, b, skimmed) = both(l, &langs);
                    accepted += usize::from(skimmed);
                    assert_eq!(
                        a,
                        b,
                        "{}: {}",
                        f.display(),
                        String::from_utf8_lossy(&l[..l.len().min(200)])
                    );
                }
                n += 1;
            }
        }
        assert!(n > 1000, "{n} lines");
        // Only the malformed mock lines take the whole-line path.
        assert!(accepted + 20 >= 2 * n, "skimmed {accepted} of {}", 2 * n);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]
        /// Cut, flipped or inserted bytes: never a panic; whenever the whole line still parses, the skim path
        /// gives the same entity (or falls back to the whole line).
        #[test]
        fn mutated_lines_never_panic_and_valid_ones_agree(
            seed in 0u64..50, pick in 0usize..1000, cut in 0.0f64..1.0, at in 0.0f64..1.0,
            byte in proptest::prelude::any::<u8>(), op in 0u8..3,
        ) {
            let cfg = crate::synth::Config { entities: 40, seed, legacy_share: 0.3, ..crate::synth::Config::default() };
            let mut bytes = Vec::new();
            crate::synth::generate(&cfg, &mut bytes).unwrap();
            let ls = lines(&bytes);
            let mut l = ls[pick % ls.len()].to_vec();
            let i = ((l.len() as f64) * at) as usize;
            match op {
                0 => l.truncate(((l.len() as f64) * cut) as usize),
                1 => if i < l.len() { l[i] = byte },
                _ => l.insert(i.min(l.len()), byte),
            }
            let (a, b, _) = both(&l, &eight());
            if a.starts_with("Ok(") {
                proptest::prop_assert_eq!(a, b);
            }
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// The block scanner finds the same end as the byte-by-byte scan, on strings over the bytes that
        /// matter (quotes, backslashes, brackets) of lengths that cross several 64-byte blocks.
        #[test]
        fn block_scan_equals_byte_scan(
            body in proptest::collection::vec(proptest::sample::select(b"{}[]\"\\\\ax".to_vec()), 0..400),
            open in proptest::sample::select(b"{[".to_vec()),
        ) {
            let mut line = vec![open];
            line.extend_from_slice(&body);
            let mut a = Cur { s: &line, i: 0 };
            let fast = a.nested().ok().map(|()| a.i);
            let mut b = Cur { s: &line, i: 0 };
            let slow = b.nested_scalar().ok().map(|()| b.i);
            proptest::prop_assert_eq!(fast, slow);
            // The SSE2 masks too, whatever the CPU the tests run on.
            proptest::prop_assert_eq!(skip_nested_with(&line, 0, block_masks), slow);
        }
    }

    #[test]
    fn escaped_quotes_and_backslashes_inside_dropped_values() {
        let line = r#"{"aliases":{"en":[{"value":"a \" ] } \\"},{"value":"\\\"{"}]},"id":"Q2"}"#;
        assert_eq!(sk(line).unwrap(), r#"{"id":"Q2"}"#);
        // A backslash right before the end of the line cannot run past it.
        assert!(sk(r#"{"id":"Q2\"#).is_err());
    }
}
