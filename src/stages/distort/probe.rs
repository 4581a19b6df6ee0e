//! The guard probe: further candidates per variant, from a random stream of their own, on which every guard is
//! run and its verdict counted (`extra.guard_probe` of the manifest). It never changes a row: it measures how
//! often a uniform draw would be true, per strategy and guard.

use super::config::DistortConfig;
use super::sample::{below, item_rng};
use crate::core::records::Strategy;
use crate::core::records::Triple;
use crate::kb::index::{pool_of, variant_of, Index, Reason, Searches};
use std::collections::BTreeMap;

/// What the guard probe saw for one strategy (see [`DistortConfig::probe_candidates`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ProbeTally {
    /// Variants probed (those with a candidate other than the original).
    pub variants: u64,
    /// Candidates checked.
    pub candidates: u64,
    /// Variants whose whole pool was checked (pool no larger than `probe_candidates`).
    pub exact_pools: u64,
    /// Candidates rejected, by reason (the first guard that says the candidate may be true).
    pub rejected: BTreeMap<Reason, u64>,
    /// Sum over variants of the share of their candidates each reason rejected; divided by `variants` it is
    /// the estimated chance that one uniform draw is rejected for that reason.
    pub share_sum: BTreeMap<Reason, f64>,
}

impl ProbeTally {
    pub(super) fn add(&mut self, other: &ProbeTally) {
        self.variants += other.variants;
        self.candidates += other.candidates;
        self.exact_pools += other.exact_pools;
        for (r, c) in &other.rejected {
            *self.rejected.entry(*r).or_default() += c;
        }
        for (r, x) in &other.share_sum {
            *self.share_sum.entry(*r).or_default() += x;
        }
    }
}

/// The guard probe of one original: every guard's verdict on up to `probe_candidates` candidates per variant
/// (the whole pool when it is no larger), drawn from the stream (seed, 4, original).
pub fn probe_one(
    index: &Index,
    original_id: u32,
    t: &Triple,
    cfg: &DistortConfig,
) -> [ProbeTally; 4] {
    let mut out: [ProbeTally; 4] = Default::default();
    let k = cfg.probe_candidates;
    if k == 0 {
        return out;
    }
    let mut rng = item_rng(cfg.seed, 4, u64::from(original_id));
    let empty = Vec::new();
    for (slot, strategy) in Strategy::VARIANTS.into_iter().enumerate() {
        let pool = pool_of(index, t, strategy, &empty);
        let n = pool.len();
        if n == 0 {
            continue;
        }
        let tally = &mut out[slot];
        tally.variants = 1;
        let exact = n <= k;
        tally.exact_pools = u64::from(exact);
        let draws = if exact { n } else { k };
        let mut local: BTreeMap<Reason, u64> = BTreeMap::new();
        let mut searches = Searches::new(index, cfg.transitive_max_visits);
        for i in 0..draws {
            let j = if exact {
                i
            } else {
                below(&mut rng, n as u64) as usize
            };
            let (s, o) = variant_of(t, strategy, pool.get(j));
            if let Err(r) = index.check_with(strategy, s, t.property, o, &mut searches) {
                *local.entry(r).or_default() += 1;
            }
        }
        tally.candidates = draws as u64;
        for (r, c) in local {
            tally.share_sum.insert(r, c as f64 / draws as f64);
            tally.rejected.insert(r, c);
        }
    }
    out
}

/// The guard probe as the manifest states it (`extra.guard_probe`).
pub fn probe_json(probe: &[ProbeTally; 4], candidates_per_variant: usize) -> serde_json::Value {
    let mut total: BTreeMap<&str, u64> = BTreeMap::new();
    let mut by = serde_json::Map::new();
    for (strategy, t) in Strategy::VARIANTS.iter().zip(probe) {
        for (r, c) in &t.rejected {
            *total.entry(r.as_str()).or_default() += c;
        }
        let share: BTreeMap<&str, f64> = t
            .share_sum
            .iter()
            .map(|(r, x)| {
                (
                    r.as_str(),
                    if t.variants == 0 {
                        0.0
                    } else {
                        x / t.variants as f64
                    },
                )
            })
            .collect();
        let rejected: BTreeMap<&str, u64> =
            t.rejected.iter().map(|(r, c)| (r.as_str(), *c)).collect();
        by.insert(
            strategy.as_str().to_string(),
            serde_json::json!({
                "variants": t.variants,
                "candidates": t.candidates,
                "exact_pools": t.exact_pools,
                "rejected": rejected,
                "share": share,
            }),
        );
    }
    serde_json::json!({
        "candidates_per_variant": candidates_per_variant,
        "what": "every guard's verdict on up to candidates_per_variant further candidates per variant (the whole \
                 pool when it is smaller), drawn from a random stream of their own; they never enter the output. \
                 rejected counts candidates by the first guard that says they may be true; share is the mean over \
                 variants of the share of their candidates each reason rejects: the chance that one uniform draw \
                 would be true by that guard",
        "rejected": total,
        "by_strategy": by,
    })
}
