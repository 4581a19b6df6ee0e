//! `sword-bench-inflate FILE.json.gz ROUNDS`: inflate every gzip member of FILE with each decoder, one thread.
//!
//! First checks that every decoder gives zlib-rs's bytes for every member, then times ROUNDS rounds, the decoders
//! alternating within each round (so drift of a shared host hits them alike), and prints MB/s of JSON per round
//! and the median. Decoders: `zlib-rs` streaming into a 1 MiB buffer (how sword's reader inflates a member),
//! `libdeflate` whole member into a buffer of its size (it has no streaming interface), `isal` whole member
//! (`isal_inflate_stateless`) and `isal-stream` (`isal_inflate` into a 1 MiB buffer).
use std::io::Read;
use std::time::Instant;

const DECODERS: [&str; 4] = ["zlib-rs", "libdeflate", "isal", "isal-stream"];

/// (start, end, decompressed length) of each member, found with flate2's bufread decoder (it stops at the end
/// of a member).
fn members(data: &[u8]) -> Vec<(usize, usize, usize)> {
    let mut out = Vec::new();
    let mut pos = 0;
    let mut sink = Vec::new();
    while pos < data.len() {
        let mut rest = &data[pos..];
        sink.clear();
        flate2::bufread::GzDecoder::new(&mut rest)
            .read_to_end(&mut sink)
            .unwrap_or_else(|e| panic!("member at byte {pos}: {e}"));
        let end = data.len() - rest.len();
        out.push((pos, end, sink.len()));
        pos = end;
    }
    out
}

/// Inflate one member with `which`; streaming decoders hand each 1 MiB piece to `each`, whole-member ones fill
/// `out[..n]` and hand it over once. Returns the decompressed length.
fn inflate(
    which: &str,
    m: &[u8],
    n: usize,
    out: &mut [u8],
    buf: &mut [u8],
    ld: &mut libdeflater::Decompressor,
    each: &mut dyn FnMut(&[u8]),
) -> usize {
    let stream = |r: &mut dyn Read, buf: &mut [u8], each: &mut dyn FnMut(&[u8])| {
        let mut k = 0;
        loop {
            let got = r.read(buf).expect("inflate");
            if got == 0 {
                return k;
            }
            each(&buf[..got]);
            k += got;
        }
    };
    match which {
        "zlib-rs" => stream(&mut flate2::bufread::GzDecoder::new(m), buf, each),
        "isal-stream" => stream(
            &mut isal::read::Decoder::new(m, isal::Codec::Gzip),
            buf,
            each,
        ),
        "libdeflate" => {
            let k = ld.gzip_decompress(m, &mut out[..n]).expect("libdeflate");
            each(&out[..k]);
            k
        }
        "isal" => {
            let k = isal::decompress_into(m, &mut out[..n], isal::Codec::Gzip).expect("isal");
            each(&out[..k]);
            k
        }
        _ => unreachable!(),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .expect("usage: sword-bench-inflate FILE.json.gz [ROUNDS]");
    let rounds: usize = args.get(2).map_or(3, |r| r.parse().expect("ROUNDS"));
    assert!(rounds > 0, "ROUNDS must be at least 1");
    let data = std::fs::read(path).expect("read");
    let ms = members(&data);
    let total: usize = ms.iter().map(|m| m.2).sum();
    let max = ms.iter().map(|m| m.2).max().unwrap_or(0);
    let mut out = vec![0u8; max];
    let mut buf = vec![0u8; 1 << 20];
    let mut ld = libdeflater::Decompressor::new();
    // Check: every decoder's bytes equal zlib-rs's, member by member.
    for (i, &(s, e, n)) in ms.iter().enumerate() {
        let mut want = Vec::with_capacity(n);
        inflate(
            "zlib-rs",
            &data[s..e],
            n,
            &mut out,
            &mut buf,
            &mut ld,
            &mut |b| want.extend_from_slice(b),
        );
        for which in &DECODERS[1..] {
            let mut got = Vec::with_capacity(n);
            inflate(
                which,
                &data[s..e],
                n,
                &mut out,
                &mut buf,
                &mut ld,
                &mut |b| got.extend_from_slice(b),
            );
            assert!(
                got == want,
                "{which} differs from zlib-rs in member {i} (byte {s})"
            );
        }
    }
    println!(
        "{path}: {} members, {total} bytes of JSON; all decoders give the same bytes",
        ms.len()
    );
    let mut speeds = vec![Vec::new(); DECODERS.len()];
    for round in 0..rounds {
        for (d, which) in DECODERS.iter().enumerate() {
            let mut last = 0u8;
            let t = Instant::now();
            for &(s, e, n) in &ms {
                let k = inflate(
                    which,
                    &data[s..e],
                    n,
                    &mut out,
                    &mut buf,
                    &mut ld,
                    &mut |b| last ^= b[b.len() - 1],
                );
                assert_eq!(k, n);
            }
            let secs = t.elapsed().as_secs_f64();
            std::hint::black_box(last);
            let mbs = total as f64 / secs / 1e6;
            speeds[d].push(mbs);
            println!("round {round} {which:<12} {secs:7.3} s {mbs:7.0} MB/s");
        }
    }
    let median = |v: &[f64]| {
        let mut v = v.to_vec();
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let base = median(&speeds[0]);
    println!("median MB/s of JSON, one thread:");
    for (d, which) in DECODERS.iter().enumerate() {
        let med = median(&speeds[d]);
        println!("  {which:<12} {med:7.0}  ({:.2}x zlib-rs)", med / base);
    }
}
