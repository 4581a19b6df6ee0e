//! Distortion stage on a generated knowledge base shaped like the real one: Zipf-distributed properties (a few
//! dominate, as P31 does), a deep transitive "located in" tree, a symmetric and an inverse pair.
//!
//! `cargo bench --profile quick --bench distort` (`SWORD_BENCH_DISTORT_TRIPLES` sets the number of final
//! triples, default 1 000 000; the existence index holds twice as many statements).
//! Measures building the indexes (throughput: statements) and drawing 500 originals × 4 variants with every
//! existence check (throughput: originals).

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use sword::core::ids::{Pid, Qid};
use sword::core::records::{PropertyRecord, Rank, Triple};
use sword::stages::distort::{self, DistortConfig, Index, KnowledgeBase, NoSimilarity};

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn t(s: u64, p: u64, o: u64) -> Triple {
    Triple {
        subject: Qid(s),
        property: Pid(p),
        object: Qid(o),
        rank: Rank::Normal,
        statement_id: String::new(),
    }
}

fn kb() -> KnowledgeBase {
    let n: u64 = std::env::var("SWORD_BENCH_DISTORT_TRIPLES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let entities = (n / 5).max(100);
    let props = 200u64;
    // Zipf(1) over properties 1..=props via the inverse of the harmonic CDF (approximate).
    let h: f64 = (1..=props).map(|k| 1.0 / k as f64).sum();
    let mut final_triples = Vec::with_capacity(n as usize);
    let mut statements = Vec::with_capacity(2 * n as usize);
    for i in 0..n {
        let r = splitmix(i);
        let u = (r >> 11) as f64 / (1u64 << 53) as f64 * h;
        let mut acc = 0.0;
        let mut p = props;
        for k in 1..=props {
            acc += 1.0 / k as f64;
            if acc >= u {
                p = k;
                break;
            }
        }
        let s = 1 + splitmix(r) % entities;
        // Property 2 is a tree: each entity is located in one with a smaller id (depth ≈ log n).
        let o = if p == 2 {
            1 + splitmix(r ^ 7) % s.max(2)
        } else {
            1 + splitmix(r ^ 13) % entities
        };
        let tr = t(s, p + 100, o);
        final_triples.push(tr.clone());
        statements.push(tr);
        statements.push(t(
            1 + splitmix(r ^ 17) % (entities * 4),
            p + 100,
            1 + splitmix(r ^ 19) % (entities * 4),
        ));
    }
    let transitive: Vec<Triple> = statements
        .iter()
        .filter(|t| t.property == Pid(102))
        .cloned()
        .collect();
    let prop = |id: u64, symmetric: bool, transitive: bool, inverse: Vec<u64>| PropertyRecord {
        id: Pid(id),
        datatype: "wikibase-item".into(),
        labels: vec![],
        transitive,
        symmetric,
        inverse: inverse.into_iter().map(Pid).collect(),
    };
    KnowledgeBase {
        final_triples,
        statements,
        transitive,
        properties: vec![
            prop(102, false, true, vec![]),
            prop(103, true, false, vec![]),
            prop(104, false, false, vec![105]),
        ],
    }
}

fn bench(c: &mut Criterion) {
    let kb = kb();
    let mut g = c.benchmark_group("distort");
    g.sample_size(10);
    g.throughput(Throughput::Elements(kb.statements.len() as u64));
    g.bench_function("index_build", |b| b.iter(|| Index::build(&kb)));
    let cfg = DistortConfig::default();
    g.throughput(Throughput::Elements(cfg.samples as u64));
    let index = Index::build(&kb);
    g.bench_function("sample_and_distort_500", |b| {
        b.iter(|| distort::distort_with_index(&kb, &index, &cfg, &NoSimilarity))
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
