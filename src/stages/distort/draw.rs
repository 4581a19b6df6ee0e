//! Drawing the distortions: for each sampled original and strategy, candidates from the strategy's pool until
//! one passes every guard of the existence index (or `max_attempts` is spent), in parallel, results in input
//! order.

use super::config::DistortConfig;
use super::falsity::Rule;
use super::probe::{probe_one, ProbeTally};
use super::sample::{below, item_rng, sample_originals, SamplingFrame};
use super::similarity::Similarity;
use crate::core::falsity::Tier;
use crate::core::records::Triple;
use crate::core::records::{statement_id, Distortion, Strategy};
use crate::kb::index::{pool_of, replaced, variant_of, Index, KnowledgeBase, Reason, Searches};
use rayon::prelude::*;
use std::collections::BTreeMap;

/// Outcome of one variant draw.
#[derive(Clone, Debug, PartialEq)]
pub enum VariantOutcome {
    Emitted(Distortion),
    Dropped {
        strategy: Strategy,
        reason: Reason,
        attempts: u32,
    },
}

/// Result of one original: its ORG row, its variants and the rejections met on the way.
#[derive(Clone, Debug)]
pub struct OriginalResult {
    pub org: Distortion,
    pub variants: Vec<VariantOutcome>,
    /// Rejected candidates by reason (every failed attempt counts once).
    pub rejections: BTreeMap<Reason, u64>,
    /// Candidates the guards let through but below `--min-falsity`, per variant strategy (in
    /// `Strategy::VARIANTS` order).
    pub falsity_rejected: [u64; 4],
    /// The guard probe of this original, per variant strategy (in `Strategy::VARIANTS` order).
    pub probe: [ProbeTally; 4],
}

/// Draw the four variants of one original. With a falsity rule, each accepted candidate gets its tier, and
/// one below `cfg.min_falsity` is drawn again (`Reason::FalsityOpen`, `Reason::FalsityLikely`); with the
/// default `open` nothing is rejected, so the draws are those without a rule.
pub fn distort_one(
    index: &Index,
    rule: Option<&Rule>,
    original_id: u32,
    t: &Triple,
    cfg: &DistortConfig,
    sim: &dyn Similarity,
) -> OriginalResult {
    let mut rng = item_rng(cfg.seed, 3, u64::from(original_id));
    let org = Distortion::original(original_id, t);
    let mut rejections = BTreeMap::new();
    let mut variants = Vec::with_capacity(4);
    let mut falsity_rejected = [0u64; 4];
    for (k, strategy) in Strategy::VARIANTS.into_iter().enumerate() {
        let (v, local) = draw_variant(index, rule, original_id, t, strategy, &mut rng, cfg, sim);
        falsity_rejected[k] = [Reason::FalsityOpen, Reason::FalsityLikely]
            .iter()
            .filter_map(|r| local.get(r))
            .sum();
        for (r, c) in &local {
            *rejections.entry(*r).or_default() += c;
        }
        variants.push(v);
    }
    OriginalResult {
        org,
        variants,
        rejections,
        falsity_rejected,
        probe: probe_one(index, original_id, t, cfg),
    }
}

/// Draw one variant of `t` with `strategy` from `rng`: candidates from the strategy's pool until one passes
/// every guard (and the falsity rule), or `max_attempts` is spent. Returns the outcome (its statement id the
/// positional `statement_id(original_id, strategy)`) and the rejected candidates by reason.
#[allow(clippy::too_many_arguments)]
pub fn draw_variant(
    index: &Index,
    rule: Option<&Rule>,
    original_id: u32,
    t: &Triple,
    strategy: Strategy,
    rng: &mut rand::rngs::ChaCha8Rng,
    cfg: &DistortConfig,
    sim: &dyn Similarity,
) -> (VariantOutcome, BTreeMap<Reason, u64>) {
    let role = strategy.role().expect("variants have a role");
    let original = replaced(t, strategy);
    // Draw from the pool without the original.
    let empty = Vec::new();
    let pool = pool_of(index, t, strategy, &empty);
    let n = pool.len();
    let mut local: BTreeMap<Reason, u64> = BTreeMap::new();
    if n == 0 {
        let v = VariantOutcome::Dropped {
            strategy,
            reason: Reason::EmptyPool,
            attempts: 0,
        };
        return (v, local);
    }
    let mut accepted = None;
    let mut attempts = 0;
    // The candidates of an OS or POS variant share its subject: one reachability search serves them all.
    let mut searches = Searches::new(index, cfg.transitive_max_visits);
    while attempts < cfg.max_attempts {
        attempts += 1;
        let cand = pool.get(below(rng, n as u64) as usize);
        let (s, o) = variant_of(t, strategy, cand);
        let checked = index
            .check_with(strategy, s, t.property, o, &mut searches)
            .and_then(|()| falsity_of(rule, s, t.property, o, cfg.min_falsity));
        match checked {
            Ok(tier) => {
                accepted = Some((cand, s, o, tier));
                break;
            }
            Err(r) => *local.entry(r).or_default() += 1,
        }
    }
    let v = match accepted {
        Some((cand, s, o, falsity)) => VariantOutcome::Emitted(Distortion {
            statement_id: statement_id(original_id, strategy),
            original_id,
            strategy,
            subject: s,
            property: t.property,
            object: o,
            replaced_role: Some(role),
            original_entity: Some(original),
            replacement_entity: Some(cand),
            cosine: sim.cosine(original, cand),
            cosine_centred: sim.cosine_centred(original, cand),
            attempts,
            original_rank: t.rank,
            original_statement_id: t.statement_id.clone(),
            falsity,
        }),
        None => {
            // The most frequent rejection reason names the drop (ties: the first check in order).
            let reason = local
                .iter()
                .max_by(|a, b| a.1.cmp(b.1).then(b.0.cmp(a.0)))
                .map(|(r, _)| *r)
                .unwrap_or(Reason::Exists);
            VariantOutcome::Dropped {
                strategy,
                reason,
                attempts,
            }
        }
    };
    (v, local)
}

/// The tier of a candidate the guards let through (`None` without a rule), or why it is below `min`.
pub(super) fn falsity_of(
    rule: Option<&Rule>,
    s: crate::core::ids::Qid,
    p: crate::core::ids::Pid,
    o: crate::core::ids::Qid,
    min: Tier,
) -> Result<Option<Tier>, Reason> {
    let Some(rule) = rule else {
        return Ok(None);
    };
    match rule.tier(s, p, o).0 {
        t if t >= min => Ok(Some(t)),
        Tier::Open => Err(Reason::FalsityOpen),
        _ => Err(Reason::FalsityLikely),
    }
}

/// Everything the core produces.
#[derive(Clone, Debug)]
pub struct DistortOutput {
    /// ORG and emitted variants, grouped by original in sample order, strategies in `Strategy::ALL` order.
    pub rows: Vec<Distortion>,
    pub sampling: SamplingFrame,
    pub counts: BTreeMap<String, u64>,
    pub rejects: BTreeMap<String, u64>,
    /// Histogram of attempts of emitted variants: attempts → variants.
    pub attempts_histogram: BTreeMap<u32, u64>,
    /// The guard probe summed over originals, per variant strategy (`Strategy::VARIANTS` order).
    pub probe: [ProbeTally; 4],
}

/// The pure core: sample originals and draw their variants. Deterministic for a config.
pub fn distort(kb: &KnowledgeBase, cfg: &DistortConfig, sim: &dyn Similarity) -> DistortOutput {
    let index = Index::build(kb);
    distort_with_index(kb, &index, cfg, sim)
}

/// `distort` with indexes already built from the same knowledge base.
pub fn distort_with_index(
    kb: &KnowledgeBase,
    index: &Index,
    cfg: &DistortConfig,
    sim: &dyn Similarity,
) -> DistortOutput {
    let (chosen, sampling) = sample_originals(&kb.final_triples, cfg);
    let originals: Vec<Triple> = chosen
        .iter()
        .map(|&i| kb.final_triples[i].clone())
        .collect();
    let sizes = InputSizes {
        final_triples: kb.final_triples.len() as u64,
        statements: kb.statements.len() as u64,
        transitive: kb.transitive.len() as u64,
    };
    let tag = super::ids::build_tag(&[], cfg, &[]);
    draw_all(index, None, &originals, sampling, sizes, cfg, sim, &tag)
}

/// Rows of the three triple files distort reads (counted in its manifest).
#[derive(Clone, Copy, Debug, Default)]
pub struct InputSizes {
    pub final_triples: u64,
    pub statements: u64,
    pub transitive: u64,
}

/// Draw the variants of the sampled `originals` (in sample order) and gather the output. The n-th original's
/// statements get the stable ids `<tag>-<n>-<STRATEGY>` ([`super::ids`]).
#[allow(clippy::too_many_arguments)]
pub fn draw_all(
    index: &Index,
    rule: Option<&Rule>,
    originals: &[Triple],
    sampling: SamplingFrame,
    sizes: InputSizes,
    cfg: &DistortConfig,
    sim: &dyn Similarity,
    tag: &str,
) -> DistortOutput {
    let results: Vec<OriginalResult> = originals
        .par_iter()
        .enumerate()
        .map(|(i, t)| distort_one(index, rule, i as u32, t, cfg, sim))
        .collect();
    let mut rows = Vec::new();
    let mut counts: BTreeMap<String, u64> = BTreeMap::new();
    let mut rejects: BTreeMap<String, u64> = BTreeMap::new();
    let mut attempts_histogram: BTreeMap<u32, u64> = BTreeMap::new();
    counts.insert("final_triples".into(), sizes.final_triples);
    counts.insert("statements".into(), sizes.statements);
    counts.insert("transitive_statements".into(), sizes.transitive);
    counts.insert("graph_entities".into(), index.all_entities.len() as u64);
    counts.insert("originals".into(), results.len() as u64);
    for s in Strategy::ALL {
        counts.insert(format!("emitted_{}", s.as_str()), 0);
    }
    let mut probe: [ProbeTally; 4] = Default::default();
    for (n, mut r) in results.into_iter().enumerate() {
        let key = super::ids::original_key(tag, n);
        r.org.statement_id = super::ids::drawn_id(&key, Strategy::ORG);
        for v in &mut r.variants {
            if let VariantOutcome::Emitted(d) = v {
                d.statement_id = super::ids::drawn_id(&key, d.strategy);
            }
        }
        for (acc, p) in probe.iter_mut().zip(&r.probe) {
            acc.add(p);
        }
        rows.push(r.org);
        if rule.is_some() {
            for (s, n) in Strategy::VARIANTS.iter().zip(r.falsity_rejected) {
                *counts
                    .entry(format!("falsity_rejected_{}", s.as_str()))
                    .or_default() += n;
            }
        }
        *counts.entry("emitted_ORG".into()).or_default() += 1;
        for (reason, c) in r.rejections {
            *rejects
                .entry(format!("attempt_rejected:{}", reason.as_str()))
                .or_default() += c;
        }
        for v in r.variants {
            match v {
                VariantOutcome::Emitted(d) => {
                    *counts
                        .entry(format!("emitted_{}", d.strategy.as_str()))
                        .or_default() += 1;
                    if let Some(t) = d.falsity {
                        *counts
                            .entry(format!("falsity_{}_{}", t.as_str(), d.strategy.as_str()))
                            .or_default() += 1;
                    }
                    *attempts_histogram.entry(d.attempts).or_default() += 1;
                    rows.push(d);
                }
                VariantOutcome::Dropped {
                    strategy, reason, ..
                } => {
                    *rejects
                        .entry(format!(
                            "variant_dropped:{}:{}",
                            strategy.as_str(),
                            reason.as_str()
                        ))
                        .or_default() += 1;
                    *counts
                        .entry(format!("dropped_{}", strategy.as_str()))
                        .or_default() += 1;
                }
            }
        }
    }
    DistortOutput {
        rows,
        sampling,
        counts,
        rejects,
        attempts_histogram,
        probe,
    }
}
