//! Tests of the parallel bzip2 decoder against the `bzip2` crate and the bzip2 tools.
use super::magic::*;
use super::piece::*;
use super::window::*;
use super::*;
use crate::core::error::Error;
use proptest::prelude::*;
use std::io::{Read, Write};

fn compress(data: &[u8], level: u32) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
    e.write_all(data).unwrap();
    e.finish().unwrap()
}

/// The sequential decode (the oracle): the `bzip2` crate's multi-stream decoder.
fn oracle(data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    bzip2::read::MultiBzDecoder::new(data)
        .read_to_end(&mut v)
        .unwrap();
    v
}

/// A sink that appends the decoded blocks to `out`, checking that the consumed offsets grow.
fn in_order(out: &mut Vec<u8>) -> impl FnMut(usize, Vec<u8>) -> Result<()> + '_ {
    let mut last = 0;
    move |byte, v| {
        assert!(byte >= last, "consumed offsets grow");
        last = byte;
        out.extend_from_slice(&v);
        Ok(())
    }
}

fn decode_with(
    data: &[u8],
    window: usize,
    extra: &[(u64, Magic)],
) -> Result<(Vec<u8>, BlockStats)> {
    let mut out = Vec::new();
    let stats = par_blocks_in(
        Path::new("t.bz2"),
        &mut Window::mapped(data, extra),
        window,
        &|_, b: &[u8]| Ok(b.to_vec()),
        |_| {},
        in_order(&mut out),
    )?;
    Ok((out, stats))
}

fn decode(data: &[u8]) -> Result<(Vec<u8>, BlockStats)> {
    decode_with(data, 4, &[])
}

/// A reader that hands out 1..=`max` bytes per read (a pipe's short reads, at their worst).
struct Trickle<'a> {
    data: &'a [u8],
    pos: usize,
    max: usize,
    s: u64,
}

impl Read for Trickle<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.s ^= self.s << 13;
        self.s ^= self.s >> 7;
        self.s ^= self.s << 17;
        let n = (1 + self.s as usize % self.max)
            .min(buf.len())
            .min(self.data.len() - self.pos);
        buf[..n].copy_from_slice(&self.data[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}

/// The stream path: `data` read through a window of `cap` bytes in reads of at most `max` bytes.
fn decode_stream(
    data: &[u8],
    window: usize,
    cap: u64,
    max: usize,
) -> Result<(Vec<u8>, BlockStats)> {
    let mut r = Trickle {
        data,
        pos: 0,
        max: max.max(1),
        s: 0x9e37_79b9,
    };
    let mut out = Vec::new();
    let stats = par_blocks_stream(
        Path::new("t.bz2"),
        &mut r,
        window,
        cap,
        |_, b: &[u8]| Ok(b.to_vec()),
        in_order(&mut out),
    )?;
    let bound = cap + max_block_bits(b'9') / 8 + SLACK + 64;
    assert!(
        stats.buffered_peak <= bound,
        "{} > {bound}",
        stats.buffered_peak
    );
    Ok((out, stats))
}

/// The stream path gives what the mapped path gives: the same bytes and stats, or the same error.
fn same_as_mapped(data: &[u8], cap: u64, max: usize) {
    let key = |s: &BlockStats| (s.streams, s.blocks, s.decompressed_bytes, s.truncated);
    match (decode(data), decode_stream(data, 3, cap, max)) {
        (Ok((a, x)), Ok((b, y))) => {
            assert!(a == b, "cap {cap} max {max}");
            assert_eq!(key(&x), key(&y), "cap {cap} max {max}");
        }
        (Err(a), Err(b)) => assert_eq!(a.to_string(), b.to_string(), "cap {cap} max {max}"),
        (a, b) => panic!(
            "cap {cap} max {max}: mapped {:?}, stream {:?}",
            a.map(|r| r.1),
            b.map(|r| r.1)
        ),
    }
}

#[test]
fn the_stream_path_gives_the_mapped_paths_bytes_and_errors() {
    let text = texty(400_000, 5);
    let c = compress(&text, 1);
    let blocks = block_bits(&c);
    let mut cases = vec![c.clone()];
    let mut bad = c.clone();
    bad[((blocks[2] + blocks[3]) / 16) as usize] ^= 0x10; // a damaged block
    cases.push(bad);
    let mut bad = c.clone();
    bad[((blocks[1] + 48) / 8 + 2) as usize] ^= 1; // a block CRC
    cases.push(bad);
    let eos = all_magics(&c).last().copied().unwrap();
    let mut bad = c.clone();
    bad[((eos.0 + 48) / 8 + 1) as usize] ^= 0x40; // the stream CRC
    cases.push(bad);
    let mut t = c.clone();
    t.extend_from_slice(b"garbage"); // trailing data
    cases.push(t);
    for cut in [5, 40, c.len() / 2, c.len() - 11, c.len() - 1] {
        cases.push(c[..cut].to_vec()); // truncated
    }
    cases.push(b"BZh9xxxxxxxxxxxxxxxxxxxxxxxx".to_vec());
    let mut junk = b"BZh1".to_vec(); // a block magic, then 1 MB with no other magic
    junk.extend_from_slice(&BLOCK_MAGIC.to_be_bytes()[2..]);
    junk.resize(1 << 20, 0);
    cases.push(junk);
    for data in &cases {
        for (cap, max) in [
            (1 << 10, 4096),
            (64 << 10, 1 << 20),
            (STREAM_CAP, 1 << 16),
            (200 << 10, 7),
        ] {
            same_as_mapped(data, cap, max);
        }
    }
}

#[test]
fn the_stream_window_stays_bounded() {
    // Random bytes at level 9: blocks of ≈ 900 kB compressed, 6 MB in all, through a 1 MiB window.
    let mut s = 7u64;
    let text: Vec<u8> = (0..6_000_000)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            s as u8
        })
        .collect();
    let c = compress(&text, 9);
    let (out, stats) = decode_stream(&c, 4, 1 << 20, 1 << 16).unwrap();
    assert!(out == text);
    assert!(stats.buffered_peak < c.len() as u64 / 2, "{stats:?}");
}

/// Text that compresses like JSON does (repeats with variation), `n` bytes.
fn texty(n: usize, seed: u64) -> Vec<u8> {
    let words: &[&[u8]] = &[
        b"{\"type\":\"item\",\"id\":\"Q",
        b"\",\"labels\":{\"en\":{\"language\":\"en\",\"value\":\"",
        b"\"}},\"claims\":{\"P31\":[{\"mainsnak\":{\"snaktype\":\"value\"",
        b"Douglas Adams",
        b"\n",
        b"},",
        b"wikibase-entityid",
    ];
    let mut s = seed | 1;
    let mut v = Vec::with_capacity(n + 64);
    while v.len() < n {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        v.extend_from_slice(words[(s % words.len() as u64) as usize]);
        v.extend_from_slice((s % 100_000).to_string().as_bytes());
    }
    v.truncate(n);
    v
}

#[test]
fn prefilter_sees_every_shift() {
    // Each magic, placed at every bit offset in zero bytes, is found exactly there.
    for (magic, kind) in [(BLOCK_MAGIC, Magic::Block), (EOS_MAGIC, Magic::Eos)] {
        for shift in 0..64u64 {
            let mut data = vec![0u8; 24];
            for j in 0..48 {
                if magic >> (47 - j) & 1 == 1 {
                    let b = shift + 8 + j;
                    data[(b / 8) as usize] |= 0x80 >> (b % 8);
                }
            }
            assert_eq!(
                next_magic(&data, 0),
                Some((shift + 8, kind)),
                "shift {shift}"
            );
            assert_eq!(next_magic(&data, shift + 9), None);
            assert_eq!(bits(&data, shift + 8, 48), magic);
        }
    }
}

/// Bit-by-bit scan: the independent oracle for `next_magic`.
fn naive_magics(data: &[u8]) -> Vec<(u64, Magic)> {
    let total = data.len() as u64 * 8;
    let bit = |p: u64| (data[(p / 8) as usize] >> (7 - p % 8)) & 1;
    let mut found = Vec::new();
    for p in 0..total.saturating_sub(47) {
        let mut v = 0u64;
        for j in 0..48 {
            v = v << 1 | u64::from(bit(p + j));
        }
        if v == BLOCK_MAGIC {
            found.push((p, Magic::Block));
        } else if v == EOS_MAGIC {
            found.push((p, Magic::Eos));
        }
    }
    found
}

fn all_magics(data: &[u8]) -> Vec<(u64, Magic)> {
    let mut v = Vec::new();
    let mut from = 0;
    while let Some(m) = next_magic(data, from) {
        v.push(m);
        from = m.0 + 1;
    }
    v
}

/// Bit offsets of the block magics in `data`.
fn block_bits(data: &[u8]) -> Vec<u64> {
    all_magics(data)
        .into_iter()
        .filter(|m| m.1 == Magic::Block)
        .map(|m| m.0)
        .collect()
}

#[test]
fn scan_matches_a_bit_by_bit_scan_on_real_bzip2() {
    let text = texty(300_000, 7);
    for level in [1, 9] {
        let c = compress(&text, level);
        let found = all_magics(&c);
        assert_eq!(found, naive_magics(&c), "level {level}");
        let blocks = found.iter().filter(|m| m.1 == Magic::Block).count();
        assert!(blocks >= 1 && found.last().unwrap().1 == Magic::Eos);
    }
}

#[test]
fn rewrap_keeps_the_bits() {
    // A piece copied from any bit offset reads back bit for bit after the 4-byte header.
    let data: Vec<u8> = (0..200u32)
        .map(|i| (i.wrapping_mul(167) ^ 0x5a) as u8)
        .collect();
    for start in 0..40u64 {
        for len in [80u64, 81, 95, 96, 97, 400, 1000] {
            let mut out = Vec::new();
            rewrap(&data, start, start + len, b'9', &mut out);
            assert_eq!(&out[..4], b"BZh9");
            let body = &out[4..];
            for i in 0..len {
                assert_eq!(
                    bits(body, i, 1),
                    bits(&data, start + i, 1),
                    "start {start} len {len} bit {i}"
                );
            }
            assert_eq!(bits(body, len, 48), EOS_MAGIC);
            assert_eq!(bits(body, len + 48, 32), bits(&data, start + 48, 32));
            assert_eq!(body.len() as u64, (len + 80).div_ceil(8));
        }
    }
}

#[test]
fn round_trips_at_every_level_and_window() {
    let text = texty(1_200_000, 3);
    for level in [1, 2, 5, 9] {
        let c = compress(&text, level);
        for window in [1, 2, 7] {
            let (out, stats) = decode_with(&c, window, &[]).unwrap();
            assert!(out == text, "level {level} window {window}");
            assert_eq!(stats.streams, 1);
            assert!(stats.blocks >= (1_200_000 / (level as u64 * 100_000)).max(1) - 1);
            assert_eq!(stats.decompressed_bytes, text.len() as u64);
            assert!(!stats.truncated);
        }
    }
}

#[test]
fn multi_stream_files_with_empty_streams() {
    // Streams of different levels back to back, an empty stream (header + end-of-stream only) among them.
    let parts = [
        texty(250_000, 1),
        Vec::new(),
        texty(10, 2),
        texty(130_000, 3),
    ];
    let mut c = Vec::new();
    let mut all = Vec::new();
    for (i, p) in parts.iter().enumerate() {
        c.extend(compress(p, [1, 9, 3, 1][i]));
        all.extend_from_slice(p);
    }
    assert_eq!(oracle(&c), all);
    let (out, stats) = decode(&c).unwrap();
    assert!(out == all);
    assert_eq!(stats.streams, 4);
    // An empty file's stream alone.
    let (out, stats) = decode(&compress(b"", 9)).unwrap();
    assert!(out.is_empty() && stats.streams == 1 && stats.blocks == 0);
}

#[test]
fn false_candidates_do_not_change_the_bytes() {
    let text = texty(700_000, 11);
    let c = compress(&text, 1);
    let total = c.len() as u64 * 8;
    let mut s = 12345u64;
    for round in 0..6 {
        let mut extra = Vec::new();
        for _ in 0..(5 + round * 7) {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let kind = if s >> 63 == 1 {
                Magic::Block
            } else {
                Magic::Eos
            };
            extra.push(((s >> 20) % total, kind));
        }
        extra.sort_by_key(|e| e.0);
        extra.dedup_by_key(|e| e.0);
        let (out, stats) = decode_with(&c, 3, &extra).unwrap();
        assert!(out == text, "round {round}");
        assert!(stats.false_candidates > 0);
    }
}

#[test]
fn a_damaged_block_is_an_error_naming_its_offset() {
    let text = texty(400_000, 5);
    let c = compress(&text, 1);
    let blocks = block_bits(&c);
    assert!(blocks.len() >= 4);
    // A byte in the middle of the third block.
    let mid = ((blocks[2] + blocks[3]) / 16) as usize;
    let mut bad = c.clone();
    bad[mid] ^= 0x10;
    let e = decode(&bad).unwrap_err().to_string();
    assert!(
        e.contains(&format!(
            "bzip2 block 3 (stream 1, block magic at {})",
            at(blocks[2])
        )),
        "{e}"
    );
    assert!(e.contains("damaged"), "{e}");
    // The stored CRC of the second block.
    let mut bad = c.clone();
    let crc_byte = ((blocks[1] + 48) / 8 + 2) as usize;
    bad[crc_byte] ^= 1;
    let e = decode(&bad).unwrap_err().to_string();
    assert!(e.contains("bzip2 block 2 "), "{e}");
}

#[test]
fn a_stream_crc_mismatch_is_an_error() {
    let c = compress(&texty(50_000, 9), 9);
    let eos = all_magics(&c).last().copied().unwrap();
    assert_eq!(eos.1, Magic::Eos);
    let mut bad = c.clone();
    bad[((eos.0 + 48) / 8 + 1) as usize] ^= 0x40;
    let e = decode(&bad).unwrap_err().to_string();
    assert!(e.contains("stored stream CRC"), "{e}");
    assert!(e.contains(&at(eos.0)), "{e}");
}

/// What follows the last block decides between a cut file and a damaged one: the end-of-stream magic cut
/// anywhere (fewer than its 48 bits left, and those bits begin it) is a cut, every whole block passed on;
/// the magic with a byte changed, followed by more data, is damage, on the mapped and the stream path.
#[test]
fn a_mangled_end_of_stream_magic_is_damage_and_a_cut_one_is_truncation() {
    let text = texty(30_000, 3);
    let c = compress(&text, 9);
    let eos = all_magics(&c).last().copied().unwrap();
    assert_eq!(eos.1, Magic::Eos);
    let first = (eos.0 / 8) as usize;
    // Cut inside the magic: the block is whole, the stream trailer is missing.
    for cut in first + 1..=((eos.0 + 47) / 8) as usize {
        let (out, stats) = decode(&c[..cut]).unwrap();
        assert!(stats.truncated, "cut {cut}");
        assert_eq!(out, text, "cut {cut}");
        same_as_mapped(&c[..cut], 1 << 12, 97);
    }
    // One byte of the magic changed (the block's CRC still matches): not a cut, though no magic follows.
    for k in 1..5 {
        let mut bad = c.clone();
        bad[first + k] ^= 0x06;
        let e = decode(&bad).unwrap_err().to_string();
        assert!(
            e.contains("where no block or end-of-stream magic follows"),
            "{e}"
        );
        assert!(e.contains(&at(eos.0)), "{e}");
        assert!(e.contains("damaged"), "{e}");
        same_as_mapped(&bad, 1 << 12, 97);
    }
}

/// The `bz2_blocks` fuzz target's first finding (2026-12-04): a level-1 stream whose one block is whole but
/// whose end-of-stream magic has one byte changed (0x38 → 0x3e), followed by ~900 bits of copied block data
/// and no valid magic. It was passed on as a cut file (87 bytes, `truncated`); bzip2, lbzip2 and Python's
/// decoder all refuse it.
#[test]
fn the_fuzzers_mangled_trailer_is_refused() {
    const HEX: &str = "425a6831314159265359a8a0c1210000135b8000101004201020083ea74f6a2000486a7a5188190f50f14c354fd2988c\
            0980984a733eb8b49723b686110a028ff8b4ae4017f5cc159b33d5a282aa88468dfb2e21370d2d915207584cd4617c17\
            72453e5090a8a0c12188190f50f14c354fd2988c098098010000db8000101004201020023ea74f6a2000486a7a518819\
            0f50f14c354fd2988c0980984a733eb8b49723b686110a028ff8b4ae4017f5cc159b33d5a282aa88468dfb2e21370d2d\
            915207584cd4617c177245385017f5cc3516";
    let data: Vec<u8> = (0..HEX.len() / 2)
        .map(|i| u8::from_str_radix(&HEX[2 * i..2 * i + 2], 16).unwrap())
        .collect();
    assert_eq!(data.len(), 210);
    let e = decode(&data).unwrap_err().to_string();
    assert!(
        e.contains("where no block or end-of-stream magic follows"),
        "{e}"
    );
    assert!(
        e.contains("bzip2 block 1 (stream 1, block magic at "),
        "{e}"
    );
    same_as_mapped(&data, 64, 7);
}

#[test]
fn trailing_data_and_bad_headers_are_errors() {
    let c = compress(&texty(1000, 1), 9);
    let mut t = c.clone();
    t.extend_from_slice(b"garbage");
    let e = decode(&t).unwrap_err().to_string();
    assert!(
        e.contains(&format!("ends at byte offset {}", c.len())),
        "{e}"
    );
    let e = decode(b"BZh0xxxxxxxxxxxxxxxxxxxxxxxx")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no bzip2 stream header"), "{e}");
    let e = decode(b"BZh9xxxxxxxxxxxxxxxxxxxxxxxx")
        .unwrap_err()
        .to_string();
    assert!(e.contains("no block magic right after the header"), "{e}");
}

#[test]
fn a_piece_longer_than_any_block_is_refused_uncopied() {
    // A level-1 header and block magic, then 1 MB with no further magic: the piece runs to the end of the
    // data, four times the largest level-1 block.
    let mut data = b"BZh1".to_vec();
    data.extend_from_slice(&BLOCK_MAGIC.to_be_bytes()[2..]);
    data.resize(1 << 20, 0);
    let total = data.len() as u64 * 8;
    assert!(total - 32 > max_block_bits(b'1'));
    let e = decode_block(&data, 32, total, b'1', &mut block::Scratch::default()).unwrap_err();
    assert!(e.contains("largest size a block can have"), "{e}");
    // The whole reader: the data ends inside the stream (no block decodes), never a copy of it all.
    let (out, stats) = decode(&data).unwrap();
    assert!(out.is_empty() && stats.truncated, "{stats:?}");
}

#[test]
fn a_cut_file_keeps_every_whole_block_before_the_cut() {
    let text = texty(450_000, 4);
    let c = compress(&text, 1);
    for cut in [5, 40, c.len() / 3, c.len() / 2, c.len() - 11, c.len() - 1] {
        let (out, stats) = decode(&c[..cut]).unwrap();
        assert!(stats.truncated, "cut {cut}");
        assert!(text.starts_with(&out), "cut {cut}");
        // Cut inside the trailer, every block is whole; before it, the last block is lost with the cut.
        assert!(out.len() < text.len() || cut > c.len() - 10, "cut {cut}");
    }
}

#[test]
fn work_errors_reach_the_caller() {
    let c = compress(&texty(300_000, 8), 1);
    let e = par_blocks(
        Path::new("t.bz2"),
        &c,
        2,
        |bit, _| {
            if bit > 0 {
                Err(Error::bad_input("t.bz2", format!("work at {bit}")))
            } else {
                Ok(())
            }
        },
        |_, ()| Ok(()),
    )
    .unwrap_err();
    assert!(e.to_string().contains("work at"), "{e}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// The stream path with tiny windows and short reads: the sequential decoder's bytes, across streams of
    /// any levels, empty ones among them.
    #[test]
    fn the_stream_path_gives_the_sequential_decoders_bytes(
        seed in any::<u64>(),
        lens in proptest::collection::vec(0usize..120_000, 1..4),
        levels in proptest::collection::vec(1u32..=9, 4),
        cap in 1u64..300_000,
        max in 1usize..70_000,
        window in 1usize..5,
    ) {
        let mut c = Vec::new();
        for (i, len) in lens.iter().enumerate() {
            c.extend(compress(&texty(*len, seed + i as u64), levels[i]));
        }
        let (out, stats) = decode_stream(&c, window, cap, max).unwrap();
        prop_assert!(out == oracle(&c));
        prop_assert!(!stats.truncated);
        prop_assert_eq!(stats.streams, lens.len() as u64);
    }

    /// Any bytes, any levels, split into any streams: the same bytes as the sequential decoder.
    #[test]
    fn same_bytes_as_the_sequential_decoder(
        seed in any::<u64>(),
        len in 0usize..260_000,
        random in any::<bool>(),
        cuts in proptest::collection::vec(0usize..260_000, 0..3),
        level in 1u32..=9,
        window in 1usize..6,
    ) {
        let text = if random {
            let mut s = seed | 1;
            (0..len).map(|_| { s ^= s << 13; s ^= s >> 7; s ^= s << 17; s as u8 }).collect()
        } else {
            texty(len, seed)
        };
        let mut cuts: Vec<usize> = cuts.into_iter().map(|c| c.min(len)).collect();
        cuts.sort_unstable();
        let mut c = Vec::new();
        let mut prev = 0;
        for cut in cuts.into_iter().chain([len]) {
            c.extend(compress(&text[prev..cut], level));
            prev = cut;
        }
        let (out, stats) = decode_with(&c, window, &[]).unwrap();
        prop_assert!(out == oracle(&c));
        prop_assert!(out == text);
        prop_assert!(!stats.truncated);
    }

    /// A damaged byte anywhere is an error, or (in padding and other bits the decoder does not depend on)
    /// the same bytes; never other bytes, never a panic.
    #[test]
    fn a_damaged_byte_is_an_error_or_harmless(
        seed in any::<u64>(),
        pos in any::<prop::sample::Index>(),
        flip in 1u8..=255,
    ) {
        let text = texty(220_000, seed);
        let mut c = compress(&text, 1);
        let i = pos.index(c.len());
        c[i] ^= flip;
        match decode(&c) {
            Ok((out, stats)) => prop_assert!(out == text || (stats.truncated && text.starts_with(&out))),
            Err(e) => {
                let bad_input = matches!(e, Error::BadInput { .. });
                prop_assert!(bad_input, "{}", e);
            }
        }
    }
}
