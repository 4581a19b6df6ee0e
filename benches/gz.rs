//! Parallel inflation of a Wikimedia-layout multi-member gzip file (`sword::dump::gz::par_members`) against one
//! sequential `MultiGzDecoder` stream. Throughput is in bytes of decompressed JSON.
//!
//! `cargo bench --bench gz` (set `SWORD_BENCH_GZ_MB` to change the size of the JSON, default 64).

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use flate2::bufread::MultiGzDecoder;
use flate2::Compression;
use std::io::BufRead;
use sword::dump::gz::{par_members, write_wikimedia_layout, Limits};

/// Synthetic entity lines (`sword::synth`), laid out as Wikimedia does (batches of lines per member).
fn input() -> (Vec<u8>, u64) {
    let mb: usize = std::env::var("SWORD_BENCH_GZ_MB")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(64);
    let lines = sword::synth::bench_lines(mb << 20, 7);
    let refs: Vec<&[u8]> = lines.iter().map(|l| l.as_slice()).collect();
    // `[\n` + lines joined by `,\n` + `\n]\n`
    let plain: u64 =
        2 + refs.iter().map(|l| l.len() as u64).sum::<u64>() + 2 * (refs.len() as u64 - 1) + 3;
    let mut gz = Vec::new();
    // ≈ 32 members: the real dump's members hold hundreds of MB; here they are a few MB.
    let batch = (lines.len() / 32).max(1);
    write_wikimedia_layout(&mut gz, &refs, batch, Compression::default()).unwrap();
    (gz, plain)
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
                            &Limits::new(threads, 2, 4 << 20),
                            |p| Ok(p.bytes.len() as u64),
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
