//! Tests of the walks: the biased step against exact probabilities, lockstep groups against single walks,
//! the format's round trip and the stage.
use super::lockstep::*;
use super::step::*;
use super::*;
use crate::core::error::Error;
use crate::stages::embed::graph::Csr;
use std::path::Path;

fn cycle(n: u32) -> Csr {
    let e: Vec<_> = (0..n).map(|i| (i, (i + 1) % n)).collect();
    Csr::from_edges(n as usize, &e)
}

#[test]
fn walks_round_trip_and_header_errors() {
    let w = Walks {
        length: 3,
        data: vec![0, 1, 2, 5, PAD, PAD],
    };
    let mut bytes = Vec::new();
    w.write(&mut bytes).unwrap();
    assert_eq!(bytes.len(), WALKS_HEADER_LEN + 24);
    let back = Walks::from_reader(&bytes[..], Path::new("m")).unwrap();
    assert_eq!(back, w);
    assert_eq!(
        back.iter().collect::<Vec<_>>(),
        vec![&[0, 1, 2][..], &[5, PAD, PAD][..]]
    );
    assert!(Walks::from_reader(&bytes[..bytes.len() - 4], Path::new("m")).is_err());
    let mut b = bytes.clone();
    b[8] = 2;
    assert!(matches!(
        Walks::from_reader(&b[..], Path::new("m")),
        Err(Error::Corrupt { .. })
    ));
    assert!(Walks::from_reader(&b"SWORDWLK"[..], Path::new("m")).is_err());
}

#[test]
fn text_omits_padding() {
    let keys: Vec<String> = ["Q1", "Q2", "Q3"].iter().map(|s| s.to_string()).collect();
    let mut out = Vec::new();
    write_text(&mut out, &[0, 1, 2, 2, PAD, PAD], 3, &keys).unwrap();
    assert_eq!(String::from_utf8(out).unwrap(), "Q1 Q2 Q3\nQ3\n");
}

#[test]
fn below_is_in_range_and_covers() {
    let mut rng = walk_rng(7, 0, 0);
    let mut seen = [0u32; 3];
    for _ in 0..3000 {
        seen[below(&mut rng, 3) as usize] += 1;
    }
    assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
}

/// The start nodes of `w`'s walks round by round (`n` walks a round), after checking that every round starts
/// once at every node.
fn round_starts(w: &Walks, n: usize) -> Vec<Vec<u32>> {
    let rounds: Vec<Vec<u32>> = w
        .data
        .chunks(n * w.length)
        .map(|r| r.chunks(w.length).map(|walk| walk[0]).collect())
        .collect();
    for r in &rounds {
        let mut sorted = r.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..n as u32).collect::<Vec<_>>());
    }
    rounds
}

#[test]
fn isolated_node_walks_are_padded_and_order_is_round_major() {
    // 0-1 edge, 2 isolated.
    let csr = Csr::from_edges(3, &[(0, 1), (2, 2)]);
    let cfg = WalkConfig {
        length: 4,
        walks_per_node: 2,
        order: Order::Sorted,
        ..WalkConfig::default()
    };
    let w = generate(&csr, &cfg);
    assert_eq!(w.num_walks(), 6);
    let starts: Vec<u32> = w.iter().map(|x| x[0]).collect();
    assert_eq!(starts, vec![0, 1, 2, 0, 1, 2]);
    assert_eq!(w.iter().next().unwrap(), &[0, 1, 0, 1]);
    assert_eq!(w.iter().nth(2).unwrap(), &[2, PAD, PAD, PAD]);
    // Shuffled (the default): each round still starts once at every node, and the isolated one is padded
    // wherever it falls.
    let w = generate(
        &csr,
        &WalkConfig {
            order: Order::Shuffled,
            ..cfg
        },
    );
    assert_eq!(round_starts(&w, 3).len(), 2);
    for walk in w.iter() {
        if walk[0] == 2 {
            assert_eq!(walk, &[2, PAD, PAD, PAD]);
        }
    }
}

#[test]
fn low_p_on_a_cycle_returns_often() {
    // On a cycle, with p tiny the walk should almost always return.
    let csr = cycle(10);
    let cfg = WalkConfig {
        p: 0.01,
        q: 1.0,
        length: 3,
        walks_per_node: 100,
        ..WalkConfig::default()
    };
    let w = generate(&csr, &cfg);
    let back = w.iter().filter(|x| x[2] == x[0]).count();
    // P(return) = 100 / (100 + 1) per step.
    assert!(back as f64 / w.num_walks() as f64 > 0.97, "{back}");
}

/// `walk_group` over walks `w0 .. w0 + g` equals `walk_into` walk by walk: the same ids and the same
/// (steps, candidates) totals.
fn assert_group_equals_single_walks(
    csr: &Csr,
    bias: &Bias,
    seed: u64,
    w0: u64,
    len: usize,
    g: usize,
) {
    let n = csr.n_nodes() as u64;
    let starts = Starts::new(n, seed, Order::Shuffled);
    let mut group = vec![0u32; g * len];
    let got = walk_group(csr, bias, seed, &starts, w0, len, &mut group);
    let mut single = vec![0u32; g * len];
    let mut want = (0, 0);
    for (j, out) in single.chunks_exact_mut(len).enumerate() {
        let (round, start) = starts.start(w0 + j as u64);
        let mut rng = walk_rng(seed, start, round);
        let r = walk_into(csr, bias, start, &mut rng, out);
        want = (want.0 + r.0, want.1 + r.1);
    }
    let (p, q) = (1.0 / bias.inv_p, 1.0 / bias.inv_q);
    assert_eq!(group, single, "p={p} q={q} len={len} g={g} w0={w0}");
    assert_eq!(got, want, "p={p} q={q} len={len} g={g} w0={w0}");
}

#[test]
fn lockstep_groups_equal_single_walks() {
    // Star plus path plus an isolated node: first steps, biased steps, padding.
    let csr = Csr::from_edges(
        9,
        &[
            (0, 1),
            (0, 2),
            (0, 3),
            (3, 4),
            (4, 5),
            (5, 6),
            (2, 6),
            (7, 7),
        ],
    );
    for (p, q) in [(1.0, 1.0), (0.5, 2.0), (3.0, 0.3), (2.0, 0.5), (0.25, 4.0)] {
        let bias = Bias::new(p, q);
        for len in [1usize, 2, 7] {
            for g in 1..=LOCKSTEP {
                for w0 in [0u64, 5, 13] {
                    assert_group_equals_single_walks(&csr, &bias, 4, w0, len, g);
                }
            }
        }
    }
}

/// A graph with hubs (degrees far above `LINEAR_SEARCH_MAX`, hub-hub edges), low-degree nodes, a path
/// and an isolated node, from a fixed LCG.
fn hubby() -> Csr {
    let n = 400u32;
    let mut e = Vec::new();
    let mut s = 12345u64;
    let mut next = |m: u32| {
        s = s
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((s >> 33) % u64::from(m)) as u32
    };
    for v in 3..n - 1 {
        e.push((v, 0)); // hub 0: everyone
        if v % 2 == 0 {
            e.push((v, 1)); // hub 1: half
        }
        if v % 7 == 0 {
            e.push((v, 2)); // hub 2: a seventh
        }
        e.push((v, 3 + next(n - 4)));
    }
    e.extend([(0, 1), (1, 2), (n - 1, n - 1)]);
    Csr::from_edges(n as usize, &e)
}

#[test]
fn sorted_contains_agrees_with_binary_search() {
    for len in [0usize, 1, 5, 31, 32, 33, 100] {
        let list: Vec<u32> = (0..len as u32).map(|i| i * 3 + 1).collect();
        for key in 0..(len as u32 * 3 + 3) {
            assert_eq!(
                sorted_contains(&list, key),
                list.binary_search(&key).is_ok(),
                "len {len} key {key}"
            );
        }
    }
    let csr = hubby();
    for u in 0..csr.n_nodes() as u32 {
        for v in [0, 1, 2, 3, 57, 398, 399] {
            assert_eq!(adjacent(&csr, u, v), csr.has_edge(u, v), "{u} {v}");
        }
    }
}

#[test]
fn lockstep_groups_equal_single_walks_on_a_graph_with_hubs() {
    let csr = hubby();
    let n = csr.n_nodes() as u64;
    assert!(csr.degree(0) > 300 && csr.degree(1) > 150 && csr.degree(399) == 0);
    for (p, q) in [
        (1.0, 1.0),
        (0.5, 2.0),
        (2.0, 0.5),
        (3.0, 0.3),
        (0.25, 4.0),
        (1.0, 0.5),
        (0.5, 1.0),
        (4.0, 4.0),
        (1.0, 3.0),
    ] {
        let bias = Bias::new(p, q);
        for len in [2usize, 3, 11] {
            for g in [1, 3, LOCKSTEP, LOCKSTEP + 5, 3 * LOCKSTEP + 1] {
                for w0 in [0u64, 1, 395, 1203] {
                    assert_group_equals_single_walks(&csr, &bias, 9, w0, len, g);
                }
            }
        }
    }
    // The whole generator too (all groups, batches), against walk_into walk by walk.
    let cfg = WalkConfig {
        p: 0.5,
        q: 2.0,
        length: 11,
        walks_per_node: 2,
        seed: 3,
        ..WalkConfig::default()
    };
    let all = generate(&csr, &cfg);
    let bias = Bias::new(cfg.p, cfg.q);
    let starts = Starts::new(n, 3, Order::Shuffled);
    for (w, walk) in all.iter().enumerate() {
        let (round, start) = starts.start(w as u64);
        let mut out = vec![0u32; cfg.length];
        walk_into(&csr, &bias, start, &mut walk_rng(3, start, round), &mut out);
        assert_eq!(walk, &out[..], "walk {w}");
    }
    // Each round starts at every node once, in an order of its own; `sorted` holds the same walks, round by
    // round in node order.
    let firsts = round_starts(&all, n as usize);
    assert_eq!(firsts.len(), 2);
    assert_ne!(firsts[0], firsts[1]);
    let by_node = generate(
        &csr,
        &WalkConfig {
            order: Order::Sorted,
            ..cfg.clone()
        },
    );
    for (w, walk) in all.iter().enumerate() {
        let (round, start) = starts.start(w as u64);
        let at = round as usize * n as usize + start as usize;
        assert_eq!(walk, by_node.iter().nth(at).unwrap(), "walk {w}");
    }
}

#[test]
fn config_validation() {
    for bad in [
        WalkConfig {
            p: 0.0,
            ..Default::default()
        },
        WalkConfig {
            q: f64::NAN,
            ..Default::default()
        },
        WalkConfig {
            length: 0,
            ..Default::default()
        },
        WalkConfig {
            walks_per_node: 0,
            ..Default::default()
        },
    ] {
        assert!(bad.validate().is_err(), "{bad:?}");
    }
}
