//! Parallel inflation of a Wikimedia-layout multi-member gzip file (`sword::dump::gz::par_members`) against one
//! sequential `MultiGzDecoder` stream. Throughput is in bytes of decompressed JSON.
//!
//! `cargo bench --bench gz` (set `SWORD_BENCH_GZ_MB` to change the size of the JSON, default 64).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use flate2::bufread::MultiGzDecoder;
use flate2::Compression;
use std::io::BufRead;
use sword::dump::gz::{par_members, write_wikimedia_layout};

/// Entity lines, laid out as Wikimedia does (batches of lines per member).
fn input() -> (Vec<u8>, u64) {
    let mb: usize = std::env::var("SWORD_BENCH_GZ_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64);
    let lines = lines(mb << 20);
    let refs: Vec<&[u8]> = lines.iter().map(|l| l.as_slice()).collect();
    let plain: u64 = 4 + refs.iter().map(|l| l.len() as u64 + 2).sum::<u64>() - 2 + 1;
    let mut gz = Vec::new();
    // ≈ 32 members: the real dump's members hold hundreds of MB; here they are a few MB.
    let batch = (lines.len() / 32).max(1);
    write_wikimedia_layout(&mut gz, &refs, batch, Compression::default()).unwrap();
    (gz, plain)
}

/// Entity-like JSON lines of varied length (a stand-in until the synthetic generator is used here).
fn lines(bytes: usize) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut total = 0;
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    while total < bytes {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let claims = (x % 40) as usize;
        let mut l = format!(
            "{{\"type\":\"item\",\"id\":\"Q{}\",\"labels\":{{\"en\":{{\"language\":\"en\",\"value\":\"entity {}\"}}}},\"claims\":{{",
            x % 100_000_000,
            x % 1_000_003
        );
        for c in 0..claims {
            l.push_str(&format!(
                "\"P{}\":[{{\"mainsnak\":{{\"snaktype\":\"value\",\"property\":\"P{}\",\"datavalue\":{{\"value\":{{\"entity-type\":\"item\",\"numeric-id\":{},\"id\":\"Q{}\"}},\"type\":\"wikibase-entityid\"}},\"datatype\":\"wikibase-item\"}},\"type\":\"statement\",\"rank\":\"normal\"}}],",
                c * 7 + 17, c * 7 + 17, (x >> c) % 5_000_000, (x >> c) % 5_000_000
            ));
        }
        l.push_str("\"P1\":[]}}");
        total += l.len() + 2;
        out.push(l.into_bytes());
    }
    out
}

fn count(r: &mut dyn BufRead) -> u64 {
    let mut n = 0u64;
    loop {
        let len = match r.fill_buf() {
            Ok([]) => return n,
            Ok(b) => b.len(),
            Err(e) => panic!("{e}"),
        };
        n += len as u64;
        r.consume(len);
    }
}

fn bench(c: &mut Criterion) {
    let (gz, plain) = input();
    let mut g = c.benchmark_group("gz_members");
    g.throughput(Throughput::Bytes(plain));
    g.sample_size(10);
    g.bench_function("multigz_sequential", |b| {
        b.iter(|| {
            let mut d = std::io::BufReader::with_capacity(256 << 10, MultiGzDecoder::new(&gz[..]));
            let n = count(&mut d);
            assert_eq!(n, plain);
        })
    });
    for threads in [1usize, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        g.bench_with_input(
            BenchmarkId::new("par_members_threads", threads),
            &threads,
            |b, &threads| {
                b.iter(|| {
                    let mut total = 0u64;
                    pool.install(|| {
                        par_members(
                            &gz,
                            2 * threads + 2,
                            |_, r| Ok(count(r)),
                            |n| {
                                total += n;
                                Ok(())
                            },
                        )
                    })
                    .unwrap()
                    .unwrap();
                    assert_eq!(total, plain);
                })
            },
        );
    }
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
