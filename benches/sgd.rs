//! SGD update of skip-gram with negative sampling (`sword::train`).
//!
//! - `sgns_update/*`: one pair update (1 positive + 5 noise rows, dim 128) on rows drawn at random from a
//!   matrix that fits in cache (1 k rows) or does not (200 k rows × 2 matrices × 512 B = 205 MB): the second is
//!   bound by memory latency, which is what prefetching attacks.
//! - `train/*`: the whole one-thread training loop on synthetic walks over 200 k nodes (Zipf-like node
//!   frequencies), reported in words/s, for σ exact vs table and prefetch on vs off.
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use sword::progress::Progress;
use sword::train::{axpy, dot, sgns_update, train, Sigmoid, TrainConfig};

const DIM: usize = 128;

fn kernels(c: &mut Criterion) {
    let a: Vec<f32> = (0..DIM).map(|i| i as f32 * 1e-3).collect();
    let mut b: Vec<f32> = (0..DIM).map(|i| 1.0 - i as f32 * 1e-3).collect();
    let mut g = c.benchmark_group("kernels");
    g.throughput(Throughput::Elements(DIM as u64));
    g.bench_function("dot128", |bch| {
        bch.iter(|| dot(black_box(&a), black_box(&b)))
    });
    g.bench_function("axpy128", |bch| {
        bch.iter(|| axpy(black_box(1e-3), black_box(&a), black_box(&mut b)))
    });
    g.finish();
}

fn update(c: &mut Criterion) {
    let mut g = c.benchmark_group("sgns_update");
    g.throughput(Throughput::Elements(1));
    for rows in [1_000usize, 200_000] {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        let mut syn0: Vec<f32> = (0..rows * DIM)
            .map(|_| (rng.next_u32() as f32 / u32::MAX as f32 - 0.5) / DIM as f32)
            .collect();
        let mut syn1 = vec![0.01f32; rows * DIM];
        let mut neu1e = vec![0f32; DIM];
        let ids: Vec<u32> = (0..1 << 16)
            .map(|_| ((rng.next_u32() as u64 * rows as u64) >> 32) as u32)
            .collect();
        let mut k = 0usize;
        g.bench_with_input(BenchmarkId::from_parameter(rows), &rows, |bch, _| {
            bch.iter(|| {
                let i = k & 0xffff;
                k = k.wrapping_add(7);
                let negs = [
                    ids[(i + 2) & 0xffff],
                    ids[(i + 3) & 0xffff],
                    ids[(i + 4) & 0xffff],
                    ids[(i + 5) & 0xffff],
                    ids[(i + 6) & 0xffff],
                ];
                sgns_update(
                    &mut syn0,
                    &mut syn1,
                    DIM,
                    ids[i],
                    ids[(i + 1) & 0xffff],
                    &negs,
                    0.01,
                    &mut neu1e,
                    false,
                )
            })
        });
    }
    g.finish();
}

/// Walks of length 10 over `n` nodes with Zipf(1)-like start frequencies and local steps.
fn synthetic_walks(n: usize, walks: usize) -> Vec<u32> {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut data = Vec::with_capacity(walks * 10);
    for _ in 0..walks {
        let u = rng.next_u32() as f64 / u32::MAX as f64;
        let mut v = ((n as f64).powf(u) as usize).min(n - 1);
        for _ in 0..10 {
            data.push(v as u32);
            let u = rng.next_u32() as f64 / u32::MAX as f64;
            v = ((n as f64).powf(u) as usize).min(n - 1);
        }
    }
    data
}

fn whole(c: &mut Criterion) {
    let n = 200_000;
    let data = synthetic_walks(n, 100_000);
    let pool = rayon::ThreadPoolBuilder::new()
        .num_threads(1)
        .build()
        .unwrap();
    let mut g = c.benchmark_group("train");
    g.sample_size(10);
    g.throughput(Throughput::Elements(data.len() as u64));
    for (name, sigmoid, prefetch) in [
        ("exact_prefetch3", Sigmoid::Exact, 3),
        ("exact_noprefetch", Sigmoid::Exact, 0),
        ("table_prefetch3", Sigmoid::Table, 3),
    ] {
        let cfg = TrainConfig {
            sigmoid,
            prefetch,
            ..TrainConfig::default()
        };
        g.bench_function(name, |bch| {
            bch.iter(|| {
                pool.install(|| train(&data, 10, n, &cfg, &Progress::hidden()).unwrap())
                    .stats
                    .pairs
            })
        });
    }
    g.finish();
}

criterion_group!(benches, kernels, update, whole);
criterion_main!(benches);
