//! Writing `embeddings.w2v`: word2vec text, one line of `dim` shortest round-trip floats per node.
//!
//! `cargo bench --profile quick --bench w2v` (`SWORD_BENCH_W2V_NODES` sets the number of rows, default 20 000,
//! dim 128). Measures [`Embeddings::write_w2v`] into a sink on one thread (throughput: floats), and beside it
//! the same text written with `write!(s, " {x}")` (the writer before `ryu`, which gives the same bytes), so
//! one run shows what the formatting costs either way.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use ndarray::Array2;
use sword::store::embeddings::Embeddings;

fn embeddings() -> Embeddings {
    let n: usize = std::env::var("SWORD_BENCH_W2V_NODES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_000);
    let dim = 128;
    // Values shaped like trained vectors: mostly |x| < 1, a few tiny ones, from a fixed xorshift stream.
    let mut z = 0x2545_F491_4F6C_DD1Du64;
    let data: Vec<f32> = (0..n * dim)
        .map(|_| {
            z ^= z << 13;
            z ^= z >> 7;
            z ^= z << 17;
            let u = (z >> 40) as f32 / (1u64 << 24) as f32;
            (u - 0.5) * if z & 0xff == 0 { 1e-4 } else { 0.8 }
        })
        .collect();
    let keys = (0..n).map(|i| format!("Q{}", i + 1)).collect();
    Embeddings::new(keys, Array2::from_shape_vec((n, dim), data).unwrap()).unwrap()
}

fn display_text(e: &Embeddings, out: &mut Vec<u8>) {
    use std::io::Write;
    writeln!(out, "{} {}", e.len(), e.dim).unwrap();
    for (i, key) in e.keys.iter().enumerate() {
        out.extend_from_slice(key.as_bytes());
        for x in e.vectors.row(i) {
            write!(out, " {x}").unwrap();
        }
        out.push(b'\n');
    }
}

fn bench(c: &mut Criterion) {
    let e = embeddings();
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut ours = Vec::new();
    pool.install(|| e.write_w2v(&mut ours)).unwrap();
    let mut theirs = Vec::new();
    display_text(&e, &mut theirs);
    assert!(
        ours == theirs,
        "write_w2v and Display must give the same bytes"
    );
    let mut g = c.benchmark_group("w2v");
    g.sample_size(10);
    g.throughput(Throughput::Elements((e.len() * e.dim) as u64));
    g.bench_function("write_w2v (ryu), 1 thread", |b| {
        b.iter(|| pool.install(|| e.write_w2v(std::io::sink())).unwrap())
    });
    g.bench_function("write! {x} (Display)", |b| {
        b.iter(|| {
            let mut out = Vec::with_capacity(theirs.len());
            display_text(&e, &mut out);
            out
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
