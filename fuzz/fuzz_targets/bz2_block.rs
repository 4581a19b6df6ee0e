//! One bzip2 block through sword's own decoder (`dump::bz2::decode_block`, `dump::bz2::block`) and through the
//! `bzip2` crate (`decode_block_crate`, libbzip2's algorithm): the same bytes and the same CRC, or both refuse;
//! never a panic. Two shapes of input, chosen by the first byte:
//! - even: raw, the rest is the block's bits after its magic (in a stream of level 1–9);
//! - odd: structured, the rest (repeated up to 256 times) is compressed with the crate at level 1–9 and up to
//!   seven bits are flipped, so that both decoders meet real tables, selectors and symbols, damaged.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Write;
use sword::dump::bz2::{block::Scratch, decode_block, decode_block_crate, next_magic, Magic, BLOCK_MAGIC};

fn compare(c: &[u8], start: u64, end: u64, level: u8) {
    let mut s = Scratch::default();
    let mine = decode_block(c, start, end, level, &mut s).map(|crc| (crc, std::mem::take(&mut s.out)));
    let mut out = Vec::new();
    let theirs = decode_block_crate(c, start, end, level, &mut out).map(|crc| (crc, out));
    match (mine, theirs) {
        (Ok(a), Ok(b)) => assert!(a == b, "own and crate decode the block differently"),
        (Err(_), Err(_)) => {}
        (Ok(_), Err(e)) => panic!("own decoder accepts a block the crate refuses ({e})"),
        (Err(e), Ok(_)) => {
            // The crate, given a piece with a magic inside, may decode two blocks as one; sword's decoder
            // takes exactly one block. Anything else is a disagreement.
            let inner = next_magic(c, start + 1).is_some_and(|(p, _)| p + 48 <= end);
            assert!(inner, "own decoder refuses a block the crate accepts ({e})");
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else { return };
    let level = b'1' + (mode >> 1) % 9;
    if mode & 1 == 0 {
        let mut c = b"BZh".to_vec();
        c.push(level);
        c.extend_from_slice(&BLOCK_MAGIC.to_be_bytes()[2..]);
        c.extend_from_slice(rest);
        compare(&c, 32, c.len() as u64 * 8, level);
        return;
    }
    if rest.is_empty() {
        return;
    }
    let times = [1, 4, 32, 256][usize::from(mode >> 5) & 3];
    let plain = rest.repeat(times);
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(u32::from(level - b'0')));
    e.write_all(&plain).unwrap();
    let mut c = e.finish().unwrap();
    // Block boundaries of the undamaged stream.
    let mut pieces = Vec::new();
    let mut from = 32;
    let mut prev = None;
    while let Some((p, kind)) = next_magic(&c, from) {
        if let Some(s) = prev {
            pieces.push((s, p));
        }
        prev = (kind == Magic::Block).then_some(p);
        from = p + 1;
    }
    // Flips: from a hash of the input, in the blocks' bits.
    let mut h = rest.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3));
    let flips = (mode >> 4) & 7;
    let total = c.len() as u64 * 8;
    for _ in 0..flips {
        h ^= h << 13;
        h ^= h >> 7;
        h ^= h << 17;
        let bit = 32 + h % (total - 32);
        c[(bit / 8) as usize] ^= 0x80 >> (bit % 8);
    }
    for (s, e) in pieces {
        compare(&c, s, e, level);
    }
});
