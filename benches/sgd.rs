//! Skip-gram training (`sword::stages::embed::train`).
//!
//! - `kernels/*`: the three SIMD kernels of one minibatch at dim 128 (6 context rows × 6 target rows: the
//!   logits `gram`, a gradient `lincomb`, the update `add_assign`), for every build this CPU runs (`scalar`,
//!   `avx2`, `avx512`; all give the same bits).
//! - `train/*`: the whole training loop on synthetic walks over 200 k nodes (Zipf-like node frequencies; the
//!   two matrices are 205 MB, so rows come from memory), in words/s, on 1 and 2 threads, for the auto-detected
//!   build, the scalar build, and prefetch off.
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use std::hint::black_box;
use sword::core::progress::Progress;
use sword::stages::embed::train::{train_with, Kernel, TrainConfig};

const DIM: usize = 128;

fn kernels(c: &mut Criterion) {
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    let mut v = |n: usize| -> Vec<f32> {
        (0..n)
            .map(|_| rng.next_u32() as f32 / u32::MAX as f32 - 0.5)
            .collect()
    };
    let (a, b, w) = (v(6 * DIM), v(6 * DIM), v(36));
    let mut out = vec![0f32; 36];
    let mut y = vec![0f32; 6 * DIM];
    let mut g = c.benchmark_group("kernels");
    g.throughput(Throughput::Elements(36 * DIM as u64));
    for k in Kernel::available() {
        g.bench_with_input(BenchmarkId::new("gram6x6", k.name()), &k, |bch, k| {
            bch.iter(|| k.gram(DIM, black_box(&a), black_box(&b), &mut out))
        });
        g.bench_with_input(BenchmarkId::new("lincomb6x6", k.name()), &k, |bch, k| {
            bch.iter(|| k.lincomb(DIM, black_box(&w), black_box(&b), &mut y))
        });
        g.bench_with_input(BenchmarkId::new("add_assign6", k.name()), &k, |bch, k| {
            bch.iter(|| k.add_assign(black_box(&mut y), black_box(&a)))
        });
    }
    g.finish();
}

/// Walks of length 10 over `n` nodes with Zipf(1)-like frequencies.
fn synthetic_walks(n: usize, walks: usize) -> Vec<u32> {
    let mut rng = ChaCha8Rng::seed_from_u64(9);
    let mut data = Vec::with_capacity(walks * 10);
    for _ in 0..walks {
        for _ in 0..10 {
            let u = rng.next_u32() as f64 / u32::MAX as f64;
            data.push(((n as f64).powf(u) as usize).min(n - 1) as u32);
        }
    }
    data
}

fn whole(c: &mut Criterion) {
    let n = 200_000;
    let data = synthetic_walks(n, 100_000);
    let src: &[u32] = &data;
    let mut g = c.benchmark_group("train");
    g.sample_size(10);
    g.throughput(Throughput::Elements(data.len() as u64));
    let best = Kernel::detect();
    for (name, kernel, threads, prefetch) in [
        ("auto_1thread", best, 1, 3),
        ("auto_2threads", best, 2, 3),
        ("auto_2threads_noprefetch", best, 2, 0),
        ("scalar_2threads", Kernel::Scalar, 2, 3),
    ] {
        let cfg = TrainConfig {
            prefetch,
            ..TrainConfig::default()
        };
        g.bench_function(name, |bch| {
            bch.iter(|| {
                train_with(&src, 10, n, &cfg, kernel, threads, &Progress::hidden())
                    .unwrap()
                    .stats
                    .pairs
            })
        });
    }
    g.finish();
}

criterion_group!(benches, kernels, whole);
criterion_main!(benches);
