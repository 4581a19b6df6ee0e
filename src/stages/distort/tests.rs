//! The distort stage's tests: sampling, drawing, guards, the probe and the Parquet round trip.

use super::sample::{item_rng, sample_indices};
use super::*;
use crate::core::ids::{Pid, Qid};
use crate::core::records::{PropertyRecord, Rank, Triple};
use std::collections::{BTreeMap, HashSet};
use std::path::Path;

fn t(s: u64, p: u64, o: u64) -> Triple {
    Triple {
        subject: Qid(s),
        property: Pid(p),
        object: Qid(o),
        rank: Rank::Normal,
        statement_id: String::new(),
    }
}

fn prop(id: u64, symmetric: bool, transitive: bool, inverse: Vec<u64>) -> PropertyRecord {
    PropertyRecord {
        id: Pid(id),
        datatype: "wikibase-item".into(),
        labels: vec![],
        transitive,
        symmetric,
        inverse: inverse.into_iter().map(Pid).collect(),
    }
}

#[test]
fn checks_catch_each_rule() {
    // P1 symmetric, P2 ↔ P3 inverse, P4 transitive.
    let statements = vec![
        t(1, 1, 2),
        t(10, 2, 11),
        t(20, 4, 21),
        t(21, 4, 22),
        t(30, 5, 31),
    ];
    let kb = KnowledgeBase {
        final_triples: statements.clone(),
        statements: statements.clone(),
        transitive: vec![t(20, 4, 21), t(21, 4, 22)],
        properties: vec![
            prop(1, true, false, vec![]),
            prop(2, false, false, vec![3]),
            prop(4, false, true, vec![]),
        ],
    };
    let ix = Index::build(&kb);
    let c = |st, s, p, o| ix.check(st, Qid(s), Pid(p), Qid(o), 1000);
    assert_eq!(c(Strategy::SS, 1, 1, 2), Err(Reason::Exists));
    assert_eq!(c(Strategy::SS, 2, 1, 1), Err(Reason::Symmetric));
    assert_eq!(c(Strategy::SS, 11, 3, 10), Err(Reason::Inverse));
    assert_eq!(c(Strategy::SS, 20, 4, 22), Err(Reason::Transitive));
    assert_eq!(c(Strategy::SS, 22, 4, 20), Ok(()));
    assert_eq!(c(Strategy::SS, 5, 5, 5), Err(Reason::SelfLoop));
    assert_eq!(c(Strategy::OS, 30, 5, 31), Err(Reason::SubjectHasValue));
    assert_eq!(c(Strategy::SS, 30, 5, 32), Ok(()));
    // A budget of one node cannot decide a two-hop chain: rejected conservatively.
    assert_eq!(
        ix.check(Strategy::SS, Qid(20), Pid(4), Qid(23), 1),
        Err(Reason::TransitiveBound)
    );
}

/// The knowledge base of the probe tests: P2 ↔ P3 inverse; final triples (10,2,11), (12,2,13), (14,2,15),
/// (16,2,11); stated only: (11,3,12) and (13,3,10).
fn probe_kb() -> KnowledgeBase {
    let finals = vec![t(10, 2, 11), t(12, 2, 13), t(14, 2, 15), t(16, 2, 11)];
    let mut statements = finals.clone();
    statements.extend([t(11, 3, 12), t(13, 3, 10)]);
    KnowledgeBase {
        final_triples: finals,
        statements,
        transitive: vec![],
        properties: vec![
            prop(2, false, false, vec![3]),
            prop(3, false, false, vec![]),
        ],
    }
}

#[test]
fn the_probe_checks_whole_small_pools_exactly() {
    // Original (10, P2, 11). Worked out by hand from the statements above:
    // SS over {11..16}: 11 self loop, 12 inverse (11 P3 12), 16 exists, 13 14 15 false.
    // OS over {10, 12..16}: 10 self loop, 13 inverse (13 P3 10), the rest false.
    // PSS over {12, 14, 16}: 12 inverse, 16 exists, 14 false. POS over {13, 15}: 13 inverse, 15 false.
    let kb = probe_kb();
    let ix = Index::build(&kb);
    let cfg = DistortConfig::default();
    let p = probe_one(&ix, 0, &kb.final_triples[0], &cfg);
    let want = |pairs: &[(Reason, u64)]| pairs.iter().copied().collect::<BTreeMap<_, _>>();
    let expect = [
        (
            6,
            want(&[
                (Reason::SelfLoop, 1),
                (Reason::Inverse, 1),
                (Reason::Exists, 1),
            ]),
        ),
        (6, want(&[(Reason::SelfLoop, 1), (Reason::Inverse, 1)])),
        (3, want(&[(Reason::Inverse, 1), (Reason::Exists, 1)])),
        (2, want(&[(Reason::Inverse, 1)])),
    ];
    for (slot, (n, rejected)) in expect.into_iter().enumerate() {
        let got = &p[slot];
        assert_eq!(
            (got.variants, got.exact_pools, got.candidates),
            (1, 1, n),
            "slot {slot}"
        );
        assert_eq!(got.rejected, rejected, "slot {slot}");
        for (r, c) in &got.rejected {
            assert!((got.share_sum[r] - *c as f64 / n as f64).abs() < 1e-12);
        }
    }
    // Off: nothing probed.
    let off = DistortConfig {
        probe_candidates: 0,
        ..DistortConfig::default()
    };
    assert_eq!(
        probe_one(&ix, 0, &kb.final_triples[0], &off),
        <[ProbeTally; 4]>::default()
    );
}

#[test]
fn the_probe_samples_large_pools_and_never_changes_the_output() {
    let kb = probe_kb();
    let ix = Index::build(&kb);
    let small = DistortConfig {
        probe_candidates: 2,
        ..DistortConfig::default()
    };
    let p = probe_one(&ix, 0, &kb.final_triples[0], &small);
    // SS, OS and PSS pools (6, 6, 3 candidates) are sampled twice; POS (2) is enumerated.
    assert_eq!(
        p.iter()
            .map(|x| (x.candidates, x.exact_pools))
            .collect::<Vec<_>>(),
        vec![(2, 0), (2, 0), (2, 0), (2, 1)]
    );
    assert_eq!(
        p,
        probe_one(&ix, 0, &kb.final_triples[0], &small),
        "deterministic"
    );
    let with = distort(&kb, &DistortConfig::default(), &NoSimilarity);
    let without = distort(
        &kb,
        &DistortConfig {
            probe_candidates: 0,
            ..DistortConfig::default()
        },
        &NoSimilarity,
    );
    assert_eq!(with.rows, without.rows);
    assert_eq!(with.rejects, without.rejects);
    assert!(with.probe[0].candidates > 0 && without.probe[0].candidates == 0);
    let j = probe_json(&with.probe, 100);
    let inverse = j["rejected"]["inverse"].as_u64().unwrap();
    let summed: u64 = with
        .probe
        .iter()
        .map(|t| t.rejected.get(&Reason::Inverse).copied().unwrap_or(0))
        .sum();
    assert_eq!(inverse, summed);
}

#[test]
fn variants_without_a_false_candidate_are_dropped_and_counted() {
    // P9: every subject has the same object, so every PSS candidate exists; POS has one object only.
    let triples: Vec<Triple> = (1..=4).map(|i| t(i, 9, 50)).collect();
    let kb = KnowledgeBase {
        final_triples: triples.clone(),
        statements: triples,
        ..Default::default()
    };
    let cfg = DistortConfig {
        samples: 4,
        max_attempts: 7,
        ..Default::default()
    };
    let out = distort(&kb, &cfg, &NoSimilarity);
    assert!(out
        .rows
        .iter()
        .all(|d| d.strategy != Strategy::PSS && d.strategy != Strategy::POS));
    assert_eq!(out.rejects["variant_dropped:PSS:exists"], 4);
    assert_eq!(out.rejects["variant_dropped:POS:empty_pool"], 4);
    // 7 rejected draws per PSS variant, plus whatever SS drew among the other subjects.
    assert!(out.rejects["attempt_rejected:exists"] >= 28);
    assert_eq!(out.counts["dropped_PSS"], 4);
    let idx = Index::build(&kb);
    for d in &out.rows {
        assert!(d.strategy == Strategy::ORG || !idx.exists(d.subject, d.property, d.object));
    }
}

#[test]
fn sample_indices_are_distinct_and_in_range() {
    let mut rng = item_rng(7, 0, 0);
    let v = sample_indices(&mut rng, 50, 50);
    let mut s = v.clone();
    s.sort_unstable();
    assert_eq!(s, (0..50).collect::<Vec<_>>());
    let v = sample_indices(&mut rng, 1000, 10);
    assert_eq!(v.len(), 10);
    assert!(v.iter().all(|&x| x < 1000));
    assert_eq!(v.iter().collect::<HashSet<_>>().len(), 10);
}

#[test]
fn stratified_sampling_respects_the_cap() {
    let mut triples: Vec<Triple> = (0..100).map(|i| t(i + 1, 31, 5)).collect();
    triples.extend((0..3).map(|i| t(i + 200, 17, 6)));
    let cfg = DistortConfig {
        samples: 100,
        stratify_by_property: true,
        per_property_cap: 4,
        ..Default::default()
    };
    let (chosen, frame) = sample_originals(&triples, &cfg);
    assert_eq!(chosen.len(), 7);
    let p31 = frame
        .per_property
        .iter()
        .find(|w| w.property == "P31")
        .unwrap();
    assert_eq!((p31.frame_count, p31.sampled), (100, 4));
    assert!((p31.weight - 0.04).abs() < 1e-12);
}

#[test]
fn distortions_round_trip_through_parquet() {
    let kb = KnowledgeBase {
        final_triples: (1..30).map(|i| t(i, 7, i + 100)).collect(),
        ..Default::default()
    };
    let sim = FnSimilarity(|a: Qid, b: Qid| {
        let x = (a.0 as f32 - b.0 as f32).abs() / 200.0;
        (Some(1.0 - x), Some(0.5 - x))
    });
    let out = distort(
        &kb,
        &DistortConfig {
            samples: 10,
            ..Default::default()
        },
        &sim,
    );
    assert_eq!(out.rows.len(), 50);
    let bytes = write_distortions(Vec::new(), &out.rows, true, Path::new("mem")).unwrap();
    let back = read_distortions(bytes::Bytes::from(bytes), Path::new("mem")).unwrap();
    assert_eq!(back, out.rows);
}

/// With a falsity rule and the default `--min-falsity open`, the draws are those without a rule (the same
/// rows, each variant with its tier); with `likely` or `certain`, no variant below it, and the rejected
/// draws are counted per strategy.
#[test]
fn a_falsity_rule_adds_the_tier_and_min_falsity_draws_again() {
    use super::falsity::RuleBuilder;
    use crate::core::falsity::{Constraint, Kind, Tier};
    // 40 subjects, each with one P1 value (single-value constraint on P1) except the odd ones above 20,
    // which have none; subject 3 has a `novalue` for P1 besides.
    let mut finals = Vec::new();
    let mut b = RuleBuilder::default();
    for s in 1..=40u64 {
        if s <= 20 || s % 2 == 0 {
            finals.push(t(s, 1, 100 + s));
            b.values(Qid(s), Pid(1), 1, false, false);
        }
    }
    b.values(Qid(3), Pid(1), 1, false, true);
    b.constraint(Constraint {
        property: Pid(1),
        kind: Kind::SingleValue,
        statement_id: String::new(),
        separator: false,
        exceptions: vec![Qid(4)],
        classes: vec![],
        relation: None,
    });
    let rule = b.finish();
    let kb = KnowledgeBase {
        final_triples: finals.clone(),
        statements: finals,
        transitive: vec![],
        properties: vec![prop(1, false, false, vec![])],
    };
    let ix = Index::build(&kb);
    let cfg = DistortConfig {
        samples: 30,
        ..DistortConfig::default()
    };
    let run = |rule: Option<&super::falsity::Rule>, min: Tier| {
        let cfg = DistortConfig {
            min_falsity: min,
            ..cfg.clone()
        };
        let (chosen, sampling) = sample_originals(&kb.final_triples, &cfg);
        let originals: Vec<Triple> = chosen
            .iter()
            .map(|&i| kb.final_triples[i].clone())
            .collect();
        draw_all(
            &ix,
            rule,
            &originals,
            sampling,
            InputSizes::default(),
            &cfg,
            &NoSimilarity,
            "0000beef",
        )
    };
    let plain = run(None, Tier::Open);
    let with = run(Some(&rule), Tier::Open);
    assert_eq!(plain.rows.len(), with.rows.len());
    for (a, b) in plain.rows.iter().zip(&with.rows) {
        assert_eq!(a.falsity, None);
        let want =
            (b.strategy != Strategy::ORG).then(|| rule.tier(b.subject, b.property, b.object).0);
        assert_eq!(b.falsity, want, "{}", b.statement_id);
        assert_eq!(
            a,
            &Distortion {
                falsity: None,
                ..b.clone()
            }
        );
    }
    assert_eq!(plain.rejects, with.rejects);
    // Subjects with a value (other than the original's object) make SS/PSS variants certain, except
    // subject 4 (an exception), which is likely; those without one are open.
    let tiers: HashSet<Tier> = with.rows.iter().filter_map(|d| d.falsity).collect();
    assert!(
        tiers.contains(&Tier::Certain) && tiers.contains(&Tier::Open),
        "{tiers:?}"
    );
    for min in [Tier::Likely, Tier::Certain] {
        let out = run(Some(&rule), min);
        let variants: Vec<&Distortion> = out
            .rows
            .iter()
            .filter(|d| d.strategy != Strategy::ORG)
            .collect();
        assert!(!variants.is_empty());
        for d in &variants {
            assert!(d.falsity.is_some_and(|t| t >= min), "{min}: {d:?}");
        }
        let rejected: u64 = Strategy::VARIANTS
            .iter()
            .map(|s| out.counts[&format!("falsity_rejected_{}", s.as_str())])
            .sum();
        assert!(rejected > 0, "{min}");
    }
}
