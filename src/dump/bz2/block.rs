//! One bzip2 block decoded straight from its bits: sword's own block decoder.
//!
//! # Why
//! The `bzip2` crate (libbzip2's algorithm, ported) needs ≈ 1.7× the instructions of `lbzip2`'s decoder per
//! byte (BENCHMARKS.md, callgrind on the same file), so parallel decoding with it cannot reach `lbzip2 -d`'s
//! wall on the same cores. This decoder does the same work in the cheap way: a 10-bit Huffman lookup table
//! (longer codes by a canonical-code fallback), a 64-bit bit buffer refilled 8 bytes at a time, move-to-front on a
//! 256-byte array moved by copy, one `u32` array for the inverse Burrows–Wheeler transform, and the final
//! run-length stage and the CRC merged into the pointer-chasing loop. It decodes at the block's bit offset in
//! the file, so a piece is never copied or re-wrapped.
//!
//! # Format (what [`decode`] reads, in order)
//! - 48-bit block magic `0x314159265359`, 32-bit CRC of the block's output (CRC-32, MSB first, polynomial
//!   `0x04c11db7`), 1 bit "randomised" (only bzip2 0.9.0 wrote 1), 24-bit `origPtr` (the row of the original
//!   text in the sorted rotations);
//! - the symbol map: 16 bits saying which of 16 groups of 16 byte values occur, then 16 bits for each such
//!   group; the `n` bytes in use, in order, are the MTF alphabet, and the Huffman alphabet is `n + 2` symbols
//!   (RUNA, RUNB, MTF positions 1..n-1, end of block);
//! - 3 bits: the number of Huffman tables (2–6); 15 bits: the number of selectors (≥ 1; the table of each
//!   group of 50 symbols), each a unary number (`1`s ended by a `0`, less than the number of tables) that is
//!   move-to-front coded over the table numbers; libbzip2 reads at most 18 002 of them and ignores the rest;
//! - for each table, 5 bits of starting code length, then for each symbol a delta code (`0` = this length, `10`
//!   = one longer, `11` = one shorter; every length within 1–20): canonical Huffman codes;
//! - the symbols, 50 per selector: RUNA/RUNB spell a run length of the byte at the front of the MTF list in
//!   bijective base 2 (RUNA = 1·2^k, RUNB = 2·2^k; at most 21 of them in a row), another symbol `s` moves the
//!   byte at MTF position `s − 1` to the front and emits it, end of block stops; at most `100 000 × level` bytes;
//! - then the inverse BWT of those bytes from `origPtr`, and the initial run-length coding undone: after four
//!   equal bytes the next byte is a count (0–255) of further copies. The CRC of the result must match.
//!
//! Where libbzip2 accepts a construct, this decoder gives the same bytes; where it refuses, this decoder refuses
//! too (tested against the crate: the same bytes or both an error, on encoder output and on damaged and random
//! pieces, and by the `bz2_block` fuzz target). Two valid but odd constructs no current encoder writes are left
//! to the crate ([`BlockError::Unsupported`]): randomised blocks, and Huffman code lengths that over-subscribe
//! the code space (libbzip2 decodes those in its own peculiar way).
//!
//! # Memory
//! A [`Scratch`] holds `100 000 × level` entries of `u32` and of `u8` (4.5 MB at level 9, never more whatever the
//! input), the selectors (18 kB) and the output. The output is what the block expands to: at most about
//! 1.05 × 900 kB for text at level 9, and ≈ 46 MB for a crafted block of maximal runs (the format's bound:
//! 5 bytes of run coding give 259 bytes); a buffer that grew past 8 MB is released after its block.

/// Longest Huffman code bzip2 allows, in bits.
const MAX_CODE_LEN: usize = 20;
/// Bits resolved by one table lookup; longer codes take the canonical fallback.
const FAST_BITS: u32 = 10;
/// libbzip2's bound on stored selectors (more may be present; they are read and ignored).
const MAX_SELECTORS: usize = 18_002;
/// Symbols per selector.
const GROUP: usize = 50;
/// A buffer that grew past this is released after its block (a run-length bomb should not stay resident).
const KEEP_OUT_BYTES: usize = 8 << 20;

/// Block magic (BCD π), the first 48 bits of every block.
const BLOCK_MAGIC: u64 = 0x3141_5926_5359;

/// Why a block did not decode.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlockError {
    /// The block is damaged (or is not a block): what is wrong, found at bit offset `bit` of the data.
    Bad { bit: u64, what: String },
    /// A valid construct this decoder leaves to libbzip2's algorithm (the `bzip2` crate).
    Unsupported(&'static str),
}

impl BlockError {
    fn bad(bit: u64, what: impl Into<String>) -> BlockError {
        BlockError::Bad {
            bit,
            what: what.into(),
        }
    }
}

/// A decoded block: its bytes are in [`Scratch::out`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Block {
    /// The CRC stored in the block header (checked against the output).
    pub crc: u32,
    /// Bit offset just after the block's last symbol (where the next magic starts).
    pub end: u64,
}

/// Reusable buffers of one decoding thread.
#[derive(Default)]
pub struct Scratch {
    /// Inverse BWT vector: entry `j` = `i << 8 | byte`, where row `j` of the sorted rotations starts with `byte`
    /// and its successor row is `i`.
    tt: Vec<u32>,
    /// The bytes after the MTF / run stage (the BWT's last column).
    ll: Vec<u8>,
    /// Selectors, move-to-front decoded.
    sel: Vec<u8>,
    /// The decoded block.
    pub out: Vec<u8>,
}

impl Scratch {
    fn ensure(&mut self, max: usize) {
        if self.tt.len() < max {
            self.tt.resize(max, 0);
            self.ll.resize(max, 0);
        }
        if self.sel.len() < MAX_SELECTORS {
            self.sel.resize(MAX_SELECTORS, 0);
        }
    }

    /// Release an output buffer a crafted block made large.
    pub fn trim(&mut self) {
        if self.out.capacity() > KEEP_OUT_BYTES {
            self.out = Vec::new();
        }
    }
}

/// bzip2's CRC-32 (MSB first, polynomial 0x04c11db7), one byte at a time.
static CRC_TABLE: [u32; 256] = crc_table();

const fn crc_table() -> [u32; 256] {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = (i as u32) << 24;
        let mut k = 0;
        while k < 8 {
            c = if c & 0x8000_0000 != 0 {
                (c << 1) ^ 0x04c1_1db7
            } else {
                c << 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
}

#[inline(always)]
fn crc_byte(crc: u32, b: u8) -> u32 {
    (crc << 8) ^ CRC_TABLE[usize::from((crc >> 24) as u8 ^ b)]
}

/// Slice-by-8 tables: `CRC8[k][b]` is the CRC register after byte `b` followed by `k` zero bytes.
static CRC8: [[u32; 256]; 8] = crc8_tables();

const fn crc8_tables() -> [[u32; 256]; 8] {
    let mut t = [[0u32; 256]; 8];
    t[0] = crc_table();
    let mut k = 1;
    while k < 8 {
        let mut i = 0;
        while i < 256 {
            let prev = t[k - 1][i];
            t[k][i] = (prev << 8) ^ t[0][(prev >> 24) as usize];
            i += 1;
        }
        k += 1;
    }
    t
}

/// The CRC register after `bytes`, eight at a time.
fn crc_update(mut crc: u32, bytes: &[u8]) -> u32 {
    let mut chunks = bytes.chunks_exact(8);
    for c in &mut chunks {
        let a = crc ^ u32::from_be_bytes([c[0], c[1], c[2], c[3]]);
        let b = u32::from_be_bytes([c[4], c[5], c[6], c[7]]);
        let t = &CRC8;
        crc = t[7][(a >> 24) as usize]
            ^ t[6][(a >> 16) as u8 as usize]
            ^ t[5][(a >> 8) as u8 as usize]
            ^ t[4][a as u8 as usize]
            ^ t[3][(b >> 24) as usize]
            ^ t[2][(b >> 16) as u8 as usize]
            ^ t[1][(b >> 8) as u8 as usize]
            ^ t[0][b as u8 as usize];
    }
    chunks.remainder().iter().fold(crc, |c, &b| crc_byte(c, b))
}

/// bzip2's CRC of `bytes` (the value a block header stores).
pub fn crc(bytes: &[u8]) -> u32 {
    !crc_update(!0, bytes)
}

/// The first `j ≥ from` where `src[j..j + 4]` are four equal bytes. Five start positions per 8-byte load: byte
/// `i` of `w ^ w >> 8 | w ^ w >> 16 | w ^ w >> 24` (little-endian) is zero exactly when bytes `i..i + 4` are
/// equal.
fn four_equal(src: &[u8], from: usize) -> Option<usize> {
    let mut j = from;
    while j + 8 <= src.len() {
        let w = u64::from_le_bytes(src[j..j + 8].try_into().expect("8 bytes"));
        let d = (w ^ w >> 8) | (w ^ w >> 16) | (w ^ w >> 24);
        // Bytes 0..=4 of d are meaningful; a zero byte among them marks a run (exact test, no false hits).
        let m = d & 0x00ff_ffff_ffff;
        let zero = m.wrapping_sub(0x01_0101_0101) & !m & 0x80_8080_8080;
        if zero != 0 {
            for i in 0..5 {
                if (d >> (8 * i)) & 0xff == 0 {
                    return Some(j + i);
                }
            }
        }
        j += 5;
    }
    while j + 4 <= src.len() {
        if src[j] == src[j + 1] && src[j] == src[j + 2] && src[j] == src[j + 3] {
            return Some(j);
        }
        j += 1;
    }
    None
}

/// Bits of the data, most significant first, through a 64-bit buffer. Bits past the end of the data read as
/// zero (the caller bounds how far a block may read).
struct Bits<'a> {
    data: &'a [u8],
    /// The next bits, left-aligned; the first `cnt` are valid.
    buf: u64,
    cnt: u32,
    /// Next byte to load.
    pos: usize,
}

impl<'a> Bits<'a> {
    fn new(data: &'a [u8], bit: u64) -> Bits<'a> {
        let mut b = Bits {
            data,
            buf: 0,
            cnt: 0,
            pos: (bit / 8) as usize,
        };
        b.refill();
        b.consume((bit % 8) as u32);
        b
    }

    /// Load whole bytes until at least 56 bits are valid. The bits loaded past `cnt` are the true next bits,
    /// so loading them again later (ORed in at the same place) changes nothing.
    #[inline(always)]
    fn refill(&mut self) {
        let w = match self.data.get(self.pos..self.pos + 8) {
            Some(s) => u64::from_be_bytes(s.try_into().expect("8 bytes")),
            None => self.tail_word(),
        };
        self.buf |= w >> self.cnt;
        let k = (63 - self.cnt) >> 3;
        self.pos += k as usize;
        self.cnt += k * 8;
    }

    #[cold]
    fn tail_word(&self) -> u64 {
        let mut w = [0u8; 8];
        if let Some(tail) = self.data.get(self.pos..) {
            w[..tail.len()].copy_from_slice(tail);
        }
        u64::from_be_bytes(w)
    }

    /// Bit offset of the next unread bit.
    #[inline(always)]
    fn bit(&self) -> u64 {
        self.pos as u64 * 8 - u64::from(self.cnt)
    }

    #[inline(always)]
    fn consume(&mut self, n: u32) {
        debug_assert!(n <= self.cnt);
        debug_assert!(n < 64);
        self.buf <<= n;
        self.cnt -= n;
    }

    /// The next `n` bits (1 ≤ `n` ≤ 32).
    #[inline(always)]
    fn get(&mut self, n: u32) -> u32 {
        debug_assert!((1..=32).contains(&n));
        if self.cnt < n {
            self.refill();
        }
        let v = (self.buf >> (64 - n)) as u32;
        self.consume(n);
        v
    }
}

/// One Huffman table: a lookup on the next [`FAST_BITS`] bits, and the canonical code for longer ones.
#[derive(Clone)]
struct Table {
    /// `symbol | length << 9` for codes of ≤ `FAST_BITS` bits; 0: a longer code (or none).
    fast: [u16; 1 << FAST_BITS],
    /// For lengths > `FAST_BITS`: codes of length `l` are `first[l] ..` `lim[l]` (exclusive) …
    lim: [u32; MAX_CODE_LEN + 1],
    /// … and code `c` of length `l` is symbol `perm[c + base[l]]` (wrapping).
    base: [u32; MAX_CODE_LEN + 1],
    /// Symbols sorted by code length, then by symbol.
    perm: [u16; 258],
    max_len: usize,
}

impl Default for Table {
    fn default() -> Table {
        Table {
            fast: [0; 1 << FAST_BITS],
            lim: [0; MAX_CODE_LEN + 1],
            base: [0; MAX_CODE_LEN + 1],
            perm: [0; 258],
            max_len: 0,
        }
    }
}

impl Table {
    /// The canonical code of `lens` (each 1..=20). An over-subscribed code (Kraft sum above 1) is not a prefix
    /// code; libbzip2 decodes it anyway, in its own way, so it is left to the crate.
    fn build(&mut self, lens: &[u8]) -> Result<(), BlockError> {
        let mut count = [0u32; MAX_CODE_LEN + 2];
        for &l in lens {
            count[usize::from(l)] += 1;
        }
        let kraft: u32 = (1..=MAX_CODE_LEN)
            .map(|l| count[l] << (MAX_CODE_LEN - l))
            .sum();
        if kraft > 1 << MAX_CODE_LEN {
            return Err(BlockError::Unsupported(
                "Huffman code lengths that over-subscribe the code space",
            ));
        }
        let mut first = [0u32; MAX_CODE_LEN + 1];
        let mut offs = [0u32; MAX_CODE_LEN + 2];
        let (mut code, mut off) = (0u32, 0u32);
        for l in 1..=MAX_CODE_LEN {
            first[l] = code;
            offs[l] = off;
            code = (code + count[l]) << 1;
            off += count[l];
        }
        let mut next = offs;
        for (sym, &l) in lens.iter().enumerate() {
            let l = usize::from(l);
            self.perm[next[l] as usize] = sym as u16;
            next[l] += 1;
        }
        self.fast.fill(0);
        for l in 1..=FAST_BITS as usize {
            let shift = FAST_BITS as usize - l;
            for k in 0..count[l] {
                let sym = self.perm[(offs[l] + k) as usize];
                let c = (first[l] + k) as usize;
                self.fast[c << shift..(c + 1) << shift].fill(sym | (l as u16) << 9);
            }
        }
        self.max_len = (1..=MAX_CODE_LEN)
            .rev()
            .find(|&l| count[l] > 0)
            .unwrap_or(0);
        for l in FAST_BITS as usize + 1..=MAX_CODE_LEN {
            self.lim[l] = first[l] + count[l];
            self.base[l] = offs[l].wrapping_sub(first[l]);
        }
        Ok(())
    }

    /// A code longer than the lookup: (symbol, length), or `None` when the bits are no code of this table.
    /// Codes are canonical and the lookup missed, so the top `l` bits are ≥ `first[l]` at every `l` tried.
    #[inline(never)]
    fn slow(&self, buf: u64) -> Option<(u32, u32)> {
        for l in FAST_BITS as usize + 1..=self.max_len {
            let c = (buf >> (64 - l)) as u32;
            if c < self.lim[l] {
                let sym = *self.perm.get(c.wrapping_add(self.base[l]) as usize)?;
                return Some((u32::from(sym), l as u32));
            }
        }
        None
    }
}

/// Decode the block whose magic starts at bit `start` of `data`, in a stream of `level` (1–9: blocks of at most
/// `100 000 × level` bytes before the final run-length stage), reading no further than bit `limit` (the block's
/// symbols must end at or before it). The bytes go to `s.out`; the CRC is checked.
pub fn decode(
    data: &[u8],
    start: u64,
    limit: u64,
    level: u8,
    s: &mut Scratch,
) -> Result<Block, BlockError> {
    let max = 100_000 * usize::from(level.clamp(1, 9));
    s.ensure(max);
    s.out.clear();
    let mut b = Bits::new(data, start);
    let past = |b: &Bits<'_>| b.bit() > limit;

    let magic = u64::from(b.get(24)) << 24 | u64::from(b.get(24));
    if magic != BLOCK_MAGIC {
        return Err(BlockError::bad(start, "no block magic"));
    }
    let stored = b.get(32);
    if b.get(1) == 1 {
        return Err(BlockError::Unsupported("a randomised block"));
    }
    let orig_at = b.bit();
    let orig = b.get(24) as usize;
    if orig > max + 10 {
        return Err(BlockError::bad(
            orig_at,
            format!(
                "origPtr {orig} is out of range (blocks of level {level} hold at most {max} bytes)"
            ),
        ));
    }

    // The symbol map.
    let used16 = b.get(16);
    let mut map = [0u8; 256];
    let mut n_used = 0usize;
    for i in 0..16 {
        if used16 & (0x8000 >> i) != 0 {
            let w = b.get(16);
            for j in 0..16 {
                if w & (0x8000 >> j) != 0 {
                    map[n_used] = (i * 16 + j) as u8;
                    n_used += 1;
                }
            }
        }
    }
    if n_used == 0 {
        return Err(BlockError::bad(
            b.bit(),
            "the symbol map names no byte value",
        ));
    }
    let alpha = n_used + 2;

    // Tables and selectors.
    let groups_at = b.bit();
    let n_groups = b.get(3) as usize;
    if !(2..=6).contains(&n_groups) {
        return Err(BlockError::bad(
            groups_at,
            format!("{n_groups} Huffman tables (a block has 2 to 6)"),
        ));
    }
    let sel_at = b.bit();
    let n_sel = b.get(15) as usize;
    if n_sel == 0 {
        return Err(BlockError::bad(sel_at, "no selectors"));
    }
    let mut order = [0u8, 1, 2, 3, 4, 5];
    for i in 0..n_sel {
        if b.cnt < 8 {
            b.refill();
        }
        // Unary: the number of 1 bits before the 0 (at most 6 are looked at).
        let ones = (!b.buf).leading_zeros() as usize;
        if ones >= n_groups {
            return Err(BlockError::bad(
                b.bit(),
                format!("selector {i} is out of range ({n_groups} Huffman tables)"),
            ));
        }
        b.consume(ones as u32 + 1);
        if i < MAX_SELECTORS {
            let t = order[ones];
            order.copy_within(0..ones, 1);
            order[0] = t;
            s.sel[i] = t;
        }
        if i % 4096 == 4095 && past(&b) {
            return Err(BlockError::bad(
                b.bit(),
                "the selectors run past the block's end",
            ));
        }
    }
    let n_sel = n_sel.min(MAX_SELECTORS);

    let mut tables: [Table; 6] = Default::default();
    let mut lens = [0u8; 258];
    for (t, table) in tables.iter_mut().enumerate().take(n_groups) {
        let mut curr = b.get(5) as i32;
        for (i, len) in lens.iter_mut().enumerate().take(alpha) {
            loop {
                if !(1..=MAX_CODE_LEN as i32).contains(&curr) {
                    return Err(BlockError::bad(
                        b.bit(),
                        format!("code length {curr} of symbol {i} in Huffman table {t} (lengths are 1 to 20)"),
                    ));
                }
                if b.cnt < 2 {
                    b.refill();
                    if past(&b) {
                        return Err(BlockError::bad(
                            b.bit(),
                            "the code lengths run past the block's end",
                        ));
                    }
                }
                let two = (b.buf >> 62) as u32;
                if two < 2 {
                    b.consume(1);
                    break;
                }
                b.consume(2);
                curr += if two == 2 { 1 } else { -1 };
            }
            *len = curr as u8;
        }
        table.build(&lens[..alpha])?;
    }
    if past(&b) {
        return Err(BlockError::bad(
            b.bit(),
            "the Huffman tables run past the block's end",
        ));
    }

    // The symbols: MTF positions and runs, into `ll`, counting each byte value.
    let eob = (alpha - 1) as u32;
    let ll = &mut s.ll[..max];
    let sel = &s.sel[..n_sel];
    let mut counts = [0u32; 256];
    let mut mtf = [0u8; 256];
    mtf[..n_used].copy_from_slice(&map[..n_used]);
    let mut n = 0usize;
    let (mut run, mut log_n) = (0u32, 0u32);
    let mut group = 0usize;
    'symbols: loop {
        let Some(&t) = sel.get(group) else {
            return Err(BlockError::bad(
                b.bit(),
                format!("the block needs more than its {n_sel} selectors (no end-of-block symbol)"),
            ));
        };
        let table = &tables[usize::from(t)];
        group += 1;
        for _ in 0..GROUP {
            if b.cnt < MAX_CODE_LEN as u32 {
                b.refill();
            }
            let e = table.fast[(b.buf >> (64 - FAST_BITS)) as usize];
            let (sym, len) = if e != 0 {
                (u32::from(e & 0x1ff), u32::from(e >> 9))
            } else {
                match table.slow(b.buf) {
                    Some(x) => x,
                    None => {
                        return Err(BlockError::bad(
                            b.bit(),
                            format!("bits that are no code of Huffman table {t}"),
                        ))
                    }
                }
            };
            b.consume(len);
            if sym <= 1 {
                // RUNA / RUNB: one more digit of the run length.
                if log_n >= 21 {
                    return Err(BlockError::bad(
                        b.bit(),
                        "a run of more than 21 RUNA/RUNB symbols",
                    ));
                }
                run += (sym + 1) << log_n;
                log_n += 1;
                continue;
            }
            if log_n > 0 {
                let r = run as usize;
                if r > max - n {
                    return Err(BlockError::bad(
                        b.bit(),
                        format!("a run of {r} bytes overflows the block ({n} of at most {max} bytes so far)"),
                    ));
                }
                let byte = mtf[0];
                ll[n..n + r].fill(byte);
                counts[usize::from(byte)] += run;
                n += r;
                run = 0;
                log_n = 0;
            }
            if sym == eob {
                break 'symbols;
            }
            if n >= max {
                return Err(BlockError::bad(
                    b.bit(),
                    format!("more than {max} bytes in a block of level {level}"),
                ));
            }
            let i = (sym - 1) as usize;
            let v = mtf[i];
            if i < 16 {
                let mut k = i;
                while k > 0 {
                    mtf[k] = mtf[k - 1];
                    k -= 1;
                }
            } else {
                mtf.copy_within(0..i, 1);
            }
            mtf[0] = v;
            ll[n] = v;
            counts[usize::from(v)] += 1;
            n += 1;
        }
        if past(&b) {
            return Err(BlockError::bad(
                b.bit(),
                "the symbols run past the block's end",
            ));
        }
    }
    let end = b.bit();
    if end > limit {
        return Err(BlockError::bad(end, "the symbols run past the block's end"));
    }
    if orig >= n {
        return Err(BlockError::bad(
            orig_at,
            format!("origPtr {orig} is out of range (the block has {n} bytes)"),
        ));
    }

    // Inverse BWT: row j of the sorted rotations starts with byte F[j]; its successor is the row i whose last
    // byte ll[i] is that same occurrence of F[j] (stable order).
    let mut next = [0u32; 256];
    let mut sum = 0u32;
    for (c, &k) in next.iter_mut().zip(&counts) {
        *c = sum;
        sum += k;
    }
    let tt = &mut s.tt[..n];
    for (i, &byte) in ll[..n].iter().enumerate() {
        let c = &mut next[usize::from(byte)];
        tt[*c as usize] = (i as u32) << 8 | u32::from(byte);
        *c += 1;
    }

    // Walk the rows from origPtr (the walk waits on memory: nothing else in this loop), into `ll`, whose bytes
    // were consumed above.
    let mut p = orig;
    for slot in ll[..n].iter_mut() {
        let x = tt[p];
        p = (x >> 8) as usize;
        *slot = x as u8;
    }
    // Undo the initial run-length coding: the byte after four equal ones counts further copies.
    let src = &ll[..n];
    let out = &mut s.out;
    out.clear();
    out.reserve(n + n / 8);
    let (mut seg, mut from) = (0usize, 0usize);
    while let Some(j) = four_equal(src, from) {
        let Some(&count) = src.get(j + 4) else {
            return Err(BlockError::bad(
                end,
                "the block ends after four equal bytes, without their run length",
            ));
        };
        out.extend_from_slice(&src[seg..j + 4]);
        out.resize(out.len() + usize::from(count), src[j]);
        seg = j + 5;
        from = seg;
    }
    out.extend_from_slice(&src[seg..]);
    let crc = !crc_update(!0, out);
    if crc != stored {
        return Err(BlockError::bad(
            start + 48,
            format!("the block's CRC {stored:08x} does not match its bytes' CRC {crc:08x}"),
        ));
    }
    Ok(Block { crc, end })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::io::Write;

    #[test]
    fn crc_of_known_strings() {
        // CRC-32/BZIP2 check value (the CRC catalogue's "123456789"), and the empty string.
        assert_eq!(crc(b"123456789"), 0xfc89_1918);
        assert_eq!(crc(b""), 0);
        // Eight at a time = one at a time, at every length and alignment.
        let data = xorshift(300, 3, 256);
        for a in 0..9 {
            for b in a..data.len() {
                let one = !data[a..b].iter().fold(!0u32, |c, &x| crc_byte(c, x));
                assert_eq!(crc(&data[a..b]), one, "{a}..{b}");
            }
        }
    }

    #[test]
    fn four_equal_finds_the_first_run_of_four() {
        let naive = |s: &[u8], from: usize| {
            (from..s.len().saturating_sub(3)).find(|&j| s[j..j + 4].iter().all(|&x| x == s[j]))
        };
        for seed in 0..300u64 {
            let s = xorshift(40 + (seed as usize % 50), seed, 2 + seed % 3);
            for from in 0..s.len() {
                assert_eq!(
                    four_equal(&s, from),
                    naive(&s, from),
                    "seed {seed} from {from}"
                );
            }
        }
    }

    fn compress(data: &[u8], level: u32) -> Vec<u8> {
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
        e.write_all(data).unwrap();
        e.finish().unwrap()
    }

    /// Every block of a one-stream file: (start, end) bit offsets, from the magics (the file is the crate's own
    /// output, so every magic is a boundary unless the data happens to hold one, which these tests would notice).
    fn blocks(c: &[u8]) -> Vec<(u64, u64)> {
        let mut v = Vec::new();
        let mut from = 32;
        let mut prev: Option<u64> = None;
        while let Some((p, kind)) = crate::dump::bz2::next_magic(c, from) {
            if let Some(s) = prev {
                v.push((s, p));
            }
            prev = (kind == crate::dump::bz2::Magic::Block).then_some(p);
            from = p + 1;
        }
        v
    }

    fn own(c: &[u8], start: u64, end: u64, level: u8) -> Result<Vec<u8>, BlockError> {
        let mut s = Scratch::default();
        let b = decode(c, start, end, level, &mut s)?;
        assert_eq!(b.end, end, "the block ends at its next magic");
        assert_eq!(b.crc, crc(&s.out));
        Ok(s.out)
    }

    fn krate(c: &[u8], start: u64, end: u64, level: u8) -> Result<Vec<u8>, String> {
        let mut out = Vec::new();
        crate::dump::bz2::decode_block_crate(c, start, end, level + b'0', &mut out).map(|_| out)
    }

    /// Decode every block of `c` (made at `level`) with both decoders: the same bytes, which put together are
    /// `plain`.
    fn same_as_the_crate(plain: &[u8], level: u32) {
        let c = compress(plain, level);
        let mut all = Vec::new();
        for (s, e) in blocks(&c) {
            let mine = own(&c, s, e, level as u8).unwrap_or_else(|e| panic!("{e:?}"));
            let theirs = krate(&c, s, e, level as u8).unwrap();
            assert!(mine == theirs, "block at bit {s}, level {level}");
            all.extend_from_slice(&mine);
        }
        assert!(all == plain, "level {level}, {} bytes", plain.len());
    }

    fn xorshift(n: usize, seed: u64, modulo: u64) -> Vec<u8> {
        let mut s = seed | 1;
        (0..n)
            .map(|_| {
                s ^= s << 13;
                s ^= s >> 7;
                s ^= s << 17;
                (s % modulo) as u8
            })
            .collect()
    }

    /// Runs of every length 1..=600 of alternating bytes: every count byte 0..=255, runs split at 259.
    fn runs() -> Vec<u8> {
        let mut v = Vec::new();
        for len in 1..=600usize {
            v.extend(std::iter::repeat_n(b"ab\x00\xff"[len % 4], len));
        }
        v
    }

    #[test]
    fn shapes_of_input_at_every_level() {
        let distinct: Vec<u8> = (0..=255u8).cycle().take(300_000).collect();
        let json = br#"{"type":"item","id":"Q42","labels":{"en":{"language":"en","value":"Douglas Adams"}}}"#
            .repeat(12_000);
        let cases: Vec<(&str, Vec<u8>)> = vec![
            ("one byte", b"x".to_vec()),
            ("four equal", b"zzzz".to_vec()),
            ("five equal", b"zzzzz".to_vec()),
            ("runs", runs()),
            ("all the same", vec![b'a'; 2_000_000]),
            ("256 distinct", distinct),
            ("random", xorshift(1_000_000, 9, 256)),
            ("few symbols", xorshift(400_000, 5, 3)),
            ("json", json),
        ];
        for (name, plain) in &cases {
            for level in 1..=9 {
                if plain.len() > 500_000 && ![1, 5, 9].contains(&level) {
                    continue;
                }
                eprintln!("{name} level {level}");
                same_as_the_crate(plain, level);
            }
        }
    }

    #[test]
    fn full_900k_blocks() {
        // Text that fills level-9 blocks to their limit (long codes, many selectors).
        let mut plain = xorshift(1_900_000, 77, 64);
        for (i, b) in plain.iter_mut().enumerate() {
            if i % 7 == 0 {
                *b = b' ';
            }
        }
        let c = compress(&plain, 9);
        assert!(blocks(&c).len() >= 3);
        same_as_the_crate(&plain, 9);
    }

    /// A hand-made block: the bytes after the initial run-length stage (`pre`), and fields to damage.
    #[derive(Clone)]
    struct Spec {
        pre: Vec<u8>,
        crc: Option<u32>,
        orig: Option<u32>,
        groups: u32,
        /// Selectors as stored (MTF-coded unary values); default: all 0, as many as needed.
        sel: Option<Vec<u32>>,
        /// Code lengths per table (default: all of one fixed length).
        lens: Option<Vec<Vec<u32>>>,
        /// Symbols instead of the encoded ones: `Ok(symbol)` coded with table 0, `Err((bits, n))` raw.
        syms: Option<Vec<std::result::Result<u16, (u32, u32)>>>,
    }

    impl Spec {
        fn new(pre: &[u8]) -> Spec {
            Spec {
                pre: pre.to_vec(),
                crc: None,
                orig: None,
                groups: 2,
                sel: None,
                lens: None,
                syms: None,
            }
        }
    }

    struct W {
        out: Vec<u8>,
        acc: u64,
        n: u32,
    }

    impl W {
        fn put(&mut self, v: u32, k: u32) {
            for i in (0..k).rev() {
                self.acc = self.acc << 1 | u64::from(v >> i & 1);
                self.n += 1;
                if self.n == 8 {
                    self.out.push(self.acc as u8);
                    self.acc = 0;
                    self.n = 0;
                }
            }
        }
    }

    /// Undo the initial run-length stage the way the format says (an independent reading of it).
    fn unrle1(pre: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < pre.len() {
            let c = pre[i];
            let mut k = 1;
            while k < 4 && i + k < pre.len() && pre[i + k] == c {
                k += 1;
            }
            out.extend(std::iter::repeat_n(c, k));
            i += k;
            if k == 4 && i < pre.len() {
                out.extend(std::iter::repeat_n(c, usize::from(pre[i])));
                i += 1;
            }
        }
        out
    }

    /// A one-block level-1 stream of `spec` (block at bit 32, end-of-stream after it): the naive BWT (sorted
    /// rotations), MTF, RUNA/RUNB runs, a canonical code; returns the stream and the block's end bit.
    fn make(spec: &Spec) -> (Vec<u8>, u64) {
        let pre = &spec.pre;
        // Symbols given: no BWT needed (nor wanted: the naive sort is quadratic on long runs).
        let n = if spec.syms.is_some() { 0 } else { pre.len() };
        let mut rot: Vec<usize> = (0..n).collect();
        rot.sort_by(|&a, &b| {
            (0..n)
                .map(|k| pre[(a + k) % n])
                .cmp((0..n).map(|k| pre[(b + k) % n]))
        });
        let orig = rot.iter().position(|&r| r == 0).unwrap_or(0) as u32;
        let last: Vec<u8> = rot.iter().map(|&r| pre[(r + n - 1) % n]).collect();
        let mut used: Vec<u8> = pre.clone();
        used.sort_unstable();
        used.dedup();
        if used.is_empty() {
            used.push(0);
        }
        let alpha = used.len() + 2;
        // MTF over the used bytes, runs of position 0 as RUNA/RUNB digits.
        let mut mtf = used.clone();
        let mut syms: Vec<u16> = Vec::new();
        let mut zeros = 0usize;
        let flush = |zeros: &mut usize, syms: &mut Vec<u16>| {
            let mut z = *zeros;
            while z > 0 {
                z -= 1;
                syms.push((z & 1) as u16);
                z >>= 1;
            }
            *zeros = 0;
        };
        for &c in &last {
            let i = mtf.iter().position(|&m| m == c).unwrap();
            if i == 0 {
                zeros += 1;
                continue;
            }
            flush(&mut zeros, &mut syms);
            mtf.remove(i);
            mtf.insert(0, c);
            syms.push(i as u16 + 1);
        }
        flush(&mut zeros, &mut syms);
        syms.push(alpha as u16 - 1);
        let bits = (usize::BITS - (alpha - 1).leading_zeros()).max(1);
        let lens = spec
            .lens
            .clone()
            .unwrap_or_else(|| vec![vec![bits; alpha]; spec.groups as usize]);
        let code = |t: &[u32], sym: u16| -> (u32, u32) {
            // Canonical: by length, then symbol.
            let mut c = 0u32;
            for l in 1..=20 {
                for (s, &len) in t.iter().enumerate() {
                    if len == l {
                        if s == usize::from(sym) {
                            return (c, l);
                        }
                        c += 1;
                    }
                }
                c <<= 1;
            }
            // A length outside 1..=20 (a damaged table): the block is refused before its symbols.
            (0, 1)
        };
        let syms: Vec<std::result::Result<u16, (u32, u32)>> = spec
            .syms
            .clone()
            .unwrap_or_else(|| syms.into_iter().map(Ok).collect());
        let sel = spec
            .sel
            .clone()
            .unwrap_or_else(|| vec![0; syms.len().div_ceil(GROUP)]);
        let mut w = W {
            out: b"BZh1".to_vec(),
            acc: 0,
            n: 0,
        };
        let out_bytes = unrle1(pre);
        let crc = spec.crc.unwrap_or_else(|| crc(&out_bytes));
        w.put(0x314159, 24);
        w.put(0x265359, 24);
        w.put(crc, 32);
        w.put(0, 1);
        w.put(spec.orig.unwrap_or(orig), 24);
        let mut groups16 = 0u32;
        for &u in &used {
            groups16 |= 0x8000 >> (u / 16);
        }
        w.put(groups16, 16);
        for g in 0..16u8 {
            if groups16 & (0x8000 >> g) != 0 {
                let mut m = 0;
                for &u in used.iter().filter(|&&u| u / 16 == g) {
                    m |= 0x8000 >> (u % 16);
                }
                w.put(m, 16);
            }
        }
        w.put(spec.groups, 3);
        w.put(sel.len() as u32, 15);
        for &s in &sel {
            for _ in 0..s {
                w.put(1, 1);
            }
            w.put(0, 1);
        }
        for t in &lens {
            let mut curr = t[0];
            w.put(curr, 5);
            for &l in t {
                while curr < l {
                    w.put(0b10, 2);
                    curr += 1;
                }
                while curr > l {
                    w.put(0b11, 2);
                    curr -= 1;
                }
                w.put(0, 1);
            }
        }
        for s in &syms {
            match *s {
                Ok(sym) => {
                    let (c, l) = code(&lens[0], sym);
                    w.put(c, l);
                }
                Err((bits, n)) => w.put(bits, n),
            }
        }
        let end = w.out.len() as u64 * 8 + u64::from(w.n);
        w.put(0x177245, 24);
        w.put(0x385090, 24);
        w.put(crc, 32);
        if w.n > 0 {
            w.put(0, 8 - w.n);
        }
        (w.out, end)
    }

    fn both(spec: &Spec) -> (Result<Vec<u8>, BlockError>, Result<Vec<u8>, String>) {
        let (c, end) = make(spec);
        let mut s = Scratch::default();
        let mine = decode(&c, 32, end, 1, &mut s).map(|b| {
            assert_eq!(b.end, end);
            s.out
        });
        (mine, krate(&c, 32, end, 1))
    }

    #[test]
    fn hand_made_blocks_decode_as_the_format_says() {
        for pre in [
            &b"banana"[..],
            b"a",
            b"abracadabra",
            b"aaaa\x00b",
            b"aaaa\x05bbbb\xffb",
            b"aaaa\x00aaaa\x03",
            b"mississippi river, mississippi",
        ] {
            let spec = Spec::new(pre);
            let (mine, theirs) = both(&spec);
            let expected = unrle1(pre);
            assert_eq!(mine.as_ref(), Ok(&expected), "{pre:?}");
            assert_eq!(theirs.as_ref(), Ok(&expected), "{pre:?}");
        }
    }

    /// The block decodes with neither decoder, and sword's error names `what`.
    fn refused(spec: &Spec, what: &str) {
        let (mine, theirs) = both(spec);
        assert!(theirs.is_err(), "the crate accepts it: {what}");
        match mine {
            Err(BlockError::Bad { what: w, bit }) => {
                assert!(w.contains(what), "{w} (wanted {what})");
                assert!(bit >= 32, "{bit}");
            }
            other => panic!("{other:?} (wanted {what})"),
        }
    }

    #[test]
    fn damaged_fields_are_errors() {
        let base = Spec::new(b"abracadabra, abracadabra");
        refused(
            &Spec {
                crc: Some(1234),
                ..base.clone()
            },
            "does not match its bytes' CRC",
        );
        refused(
            &Spec {
                orig: Some(24),
                ..base.clone()
            },
            "origPtr 24 is out of range",
        );
        refused(
            &Spec {
                orig: Some(200_000),
                ..base.clone()
            },
            "origPtr 200000 is out of range",
        );
        refused(
            &Spec {
                groups: 1,
                lens: Some(vec![vec![4; 9]]),
                ..base.clone()
            },
            "1 Huffman tables",
        );
        refused(
            &Spec {
                groups: 7,
                lens: Some(vec![vec![4; 9]; 7]),
                ..base.clone()
            },
            "7 Huffman tables",
        );
        refused(
            &Spec {
                sel: Some(vec![0, 2]),
                ..base.clone()
            },
            "selector 1 is out of range",
        );
        refused(
            &Spec {
                sel: Some(vec![]),
                ..base.clone()
            },
            "no selectors",
        );
        refused(
            &Spec {
                lens: Some(vec![vec![0; 9]; 2]),
                ..base.clone()
            },
            "code length 0 of symbol 0",
        );
        refused(
            &Spec {
                lens: Some(vec![vec![21; 9]; 2]),
                ..base.clone()
            },
            "code length 21",
        );
        // Nine symbols of 4 bits leave codes unused: 1111 is none of them.
        refused(
            &Spec {
                syms: Some(vec![Ok(2), Err((0b1111, 4))]),
                ..base.clone()
            },
            "no code of Huffman table 0",
        );
        // No end of block within the selectors' 50 symbols.
        refused(
            &Spec {
                syms: Some(vec![Ok(2); 51]),
                sel: Some(vec![0]),
                ..base.clone()
            },
            "more than its 1 selectors",
        );
        // Symbols that go on past the block's end (two selectors, no end of block).
        refused(
            &Spec {
                syms: Some(vec![Ok(2); 51]),
                ..base.clone()
            },
            "run past the block's end",
        );
        // Only the end-of-block symbol: an empty block (origPtr 0 is out of its range).
        refused(
            &Spec {
                syms: Some(vec![Ok(8)]),
                orig: Some(0),
                ..base.clone()
            },
            "origPtr 0 is out of range",
        );
        // 22 RUNB digits in a row; 21 RUNB digits (a run of 4 194 302) past a level-1 block.
        let runb = |k| {
            let mut v = vec![Ok(1); k];
            v.push(Ok(8));
            Some(v)
        };
        refused(
            &Spec {
                syms: runb(22),
                sel: Some(vec![0]),
                ..base.clone()
            },
            "more than 21 RUNA/RUNB",
        );
        refused(
            &Spec {
                syms: runb(21),
                sel: Some(vec![0]),
                ..base.clone()
            },
            "overflows the block",
        );
        // 100 001 single bytes in a level-1 block (MTF position 1 over and over).
        let mut many = vec![Ok(2); 100_001];
        many.push(Ok(8));
        let sel = Some(vec![0; many.len().div_ceil(GROUP)]);
        refused(
            &Spec {
                syms: Some(many),
                sel,
                ..base.clone()
            },
            "more than 100000 bytes",
        );
        // Four equal bytes at the end of the block, no count after them.
        refused(&Spec::new(b"baaaa"), "without their run length");
    }

    #[test]
    fn odd_but_valid_constructs_match_the_crate() {
        let base = Spec::new(b"abracadabra, abracadabra");
        // A run of exactly the block's size is allowed (level 1: 100 000 bytes of 'a', one count each 5 bytes
        // would be another block; here the run is of the pre-RLE1 bytes).
        // A run of exactly the block's size is allowed, one byte more is not (RUNA = 1·2^k, RUNB = 2·2^k).
        let digits = |v: usize| {
            let mut d = Vec::new();
            let mut z = v;
            while z > 0 {
                z -= 1;
                d.push(Ok((z & 1) as u16));
                z >>= 1;
            }
            d.push(Ok(2));
            d
        };
        // One byte value in use: symbols RUNA, RUNB, end of block (2).
        let pre = vec![b'a'; 100_000];
        let run = Spec {
            syms: Some(digits(100_000)),
            sel: Some(vec![0]),
            orig: Some(99_999),
            ..Spec::new(&pre)
        };
        let (mine, theirs) = both(&run);
        assert!(mine.is_ok(), "{mine:?}");
        assert_eq!(mine.ok(), theirs.ok());
        let run = Spec {
            syms: Some(digits(100_001)),
            sel: Some(vec![0]),
            ..Spec::new(b"a")
        };
        refused(&run, "overflows the block");
        // More selectors than needed, and more than libbzip2 keeps (18 002; the rest is read and ignored).
        for k in [3, 18_002, 18_003, 32_767] {
            let (mine, theirs) = both(&Spec {
                sel: Some(vec![1; k]),
                ..base.clone()
            });
            assert_eq!(mine.ok(), theirs.ok(), "{k} selectors");
        }
        // Over-subscribed code lengths are left to the crate.
        let (c, end) = make(&Spec {
            lens: Some(vec![vec![1; 9]; 2]),
            ..base.clone()
        });
        let mut s = Scratch::default();
        assert!(matches!(
            decode(&c, 32, end, 1, &mut s),
            Err(BlockError::Unsupported(_))
        ));
        // Six tables, MTF-coded selectors that move them around, long codes.
        let lens: Vec<Vec<u32>> = (0..6)
            .map(|t| {
                (0..9)
                    .map(|i| if i == t { 1 } else { 4 + (i as u32 % 3) })
                    .collect()
            })
            .collect();
        let (mine, theirs) = both(&Spec {
            groups: 6,
            lens: Some(lens),
            sel: Some(vec![0]),
            ..base.clone()
        });
        assert_eq!(mine.ok(), theirs.ok());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(40))]

        /// Any bytes, at any level: block by block the crate's bytes, and the input back.
        #[test]
        fn same_bytes_as_the_crate(
            seed in any::<u64>(),
            len in 0usize..300_000,
            modulo in prop::sample::select(vec![1u64, 2, 3, 16, 60, 256]),
            runs_of in 0usize..12,
            level in 1u32..=9,
        ) {
            let mut plain = xorshift(len, seed, modulo);
            if runs_of > 0 {
                // Stretch every byte into a run of 1..=runs_of*40 copies (long runs, counts of every size).
                let mut v = Vec::new();
                for (i, &b) in plain.iter().enumerate() {
                    v.extend(std::iter::repeat_n(b, 1 + (i * 7919 + seed as usize) % (runs_of * 40)));
                    if v.len() > 600_000 { break; }
                }
                plain = v;
            }
            same_as_the_crate(&plain, level);
        }

        /// A damaged piece of a real block: both decoders accept the same bytes, or both refuse.
        #[test]
        fn damage_is_refused_like_the_crate_does(
            seed in any::<u64>(),
            flips in proptest::collection::vec((any::<prop::sample::Index>(), 0u8..8), 1..4),
            level in 1u32..=3,
        ) {
            let plain = xorshift(150_000, seed, 40);
            let mut c = compress(&plain, level);
            let bl = blocks(&c);
            for (i, bit) in &flips {
                let k = i.index(c.len() - 4) + 4;
                c[k] ^= 0x80 >> bit;
            }
            for (s, e) in bl {
                let mut scratch = Scratch::default();
                let mine = decode(&c, s, e, level as u8, &mut scratch)
                    .and_then(|b| if b.end == e { Ok(scratch.out.clone()) } else { Err(BlockError::bad(b.end, "short")) });
                let theirs = krate(&c, s, e, level as u8);
                match (&mine, &theirs) {
                    (Ok(a), Ok(b)) => prop_assert!(a == b),
                    (Err(BlockError::Bad { .. }), Err(_)) => {}
                    // Left to the crate (a flipped randomised bit, an over-subscribed code): the crate decides.
                    (Err(BlockError::Unsupported(_)), _) => {}
                    _ => prop_assert!(false, "own {:?} vs crate {:?}", mine.as_ref().map(|v| v.len()), theirs.as_ref().map(|v| v.len())),
                }
            }
        }
    }
}
