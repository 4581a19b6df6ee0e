//! The block and end-of-stream magics, looked for at every bit offset: a 256-entry table on the byte each of
//! the 16 shifted patterns determines, then a 48-bit compare.

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
pub(super) fn bits(data: &[u8], bit: u64, n: u32) -> u64 {
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
pub(super) fn magic_at(data: &[u8], bit: u64) -> Option<Magic> {
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
pub(super) static PREFILTER: [u16; 256] = prefilter();

pub(super) const fn prefilter() -> [u16; 256] {
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

/// Why a block that decoded is not accepted where it ends (shared by the walker's two checks).
pub(super) fn no_magic_after(end: u64) -> String {
    format!(
        "the block ends at {}, where no block or end-of-stream magic follows",
        at(end)
    )
}

/// "byte offset B (bit b)" of a bit offset.
pub(super) fn at(bit: u64) -> String {
    format!("byte offset {} (bit {})", bit / 8, bit % 8)
}
