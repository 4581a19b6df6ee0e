//! node2vec walk step: uniform (p = q = 1) and biased (rejection sampling) steps per second on a generated
//! heavy-tailed graph (preferential attachment, 100,000 nodes, ~200,000 edges, seeded), one thread, plus the
//! parallel generator (`walks::generate`) on all threads, on that graph and on the same graph with 20
//! Wikidata-like hubs taking ~30% of the edge ends (`with_hubs`).
//!
//! `cargo bench --bench node2vec`
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use sword::stages::embed::graph::Csr;
use sword::stages::embed::walks::{self, Bias, WalkConfig};

/// Preferential attachment: every new node links to two endpoints of uniformly chosen existing edge ends,
/// so targets are chosen proportionally to degree (a power-law degree distribution, hubs of thousands).
fn heavy_tailed(n: u32, seed: u64) -> Csr {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut ends: Vec<u32> = vec![0, 1];
    let mut edges: Vec<(u32, u32)> = vec![(0, 1)];
    for v in 2..n {
        for _ in 0..2 {
            let t = ends[(rng.next_u64() % ends.len() as u64) as usize];
            edges.push((v, t));
            ends.push(v);
            ends.push(t);
        }
    }
    Csr::from_edges(n as usize, &edges)
}

/// `heavy_tailed` plus 20 Wikidata-like hubs ("human", "male", countries …) with Zipf(0.8) sizes: 1.5 hub
/// edges per base edge, so ~30% of all edge ends are at a hub (as `scripts/bench-node2vec.sh` 1m-hubs; the
/// top hub is linked to ~60% of the nodes).
fn with_hubs(n: u32, seed: u64) -> Csr {
    let base = heavy_tailed(n, seed);
    let mut edges: Vec<(u32, u32)> = base.edges().collect();
    let norm: f64 = (1..=20).map(|k| 1.0 / f64::from(k).powf(0.8)).sum();
    let hub_ends = 1.5 * edges.len() as f64;
    let mut rng = ChaCha8Rng::seed_from_u64(seed + 1);
    for k in 1..=20u32 {
        let share = hub_ends / norm / f64::from(k).powf(0.8) / f64::from(n);
        let hub = n - k;
        for v in 0..n - 20 {
            if (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 <= share {
                edges.push((v, hub));
            }
        }
    }
    Csr::from_edges(n as usize, &edges)
}

fn walk_step(c: &mut Criterion) {
    let csr = heavy_tailed(100_000, 7);
    let starts = 10_000u32;
    let length = 11; // 10 steps
    let mut g = c.benchmark_group("walk_step");
    g.throughput(Throughput::Elements(
        u64::from(starts) * (length as u64 - 1),
    ));
    for (name, p, q) in [
        ("uniform p=1 q=1", 1.0, 1.0),
        ("biased p=0.5 q=2", 0.5, 2.0),
        ("biased p=2 q=0.5", 2.0, 0.5),
    ] {
        let bias = Bias::new(p, q);
        let mut out = vec![0u32; length];
        g.bench_function(BenchmarkId::new("one thread, steps", name), |b| {
            b.iter(|| {
                let mut tries = 0;
                for s in 0..starts {
                    let v = (s * 10) % csr.n_nodes() as u32;
                    let mut rng = walks::walk_rng(1, v, 0);
                    tries += walks::walk_into(&csr, &bias, v, &mut rng, &mut out).1;
                }
                std::hint::black_box(tries)
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("generate");
    g.sample_size(10);
    let cfg = WalkConfig {
        length,
        walks_per_node: 1,
        ..WalkConfig::default()
    };
    g.throughput(Throughput::Elements(
        csr.n_nodes() as u64 * (length as u64 - 1),
    ));
    let hubs = with_hubs(100_000, 7);
    for (name, p, q) in [("uniform", 1.0, 1.0), ("biased p=0.5 q=2", 0.5, 2.0)] {
        let cfg = WalkConfig {
            p,
            q,
            ..cfg.clone()
        };
        g.bench_function(BenchmarkId::new("all threads, steps", name), |b| {
            b.iter(|| std::hint::black_box(walks::generate(&csr, &cfg).data.len()))
        });
        g.bench_function(BenchmarkId::new("all threads, steps, 20 hubs", name), |b| {
            b.iter(|| std::hint::black_box(walks::generate(&hubs, &cfg).data.len()))
        });
    }
    g.finish();
}

criterion_group!(benches, walk_step);
criterion_main!(benches);
