//! Sampling the originals: each original index its own ChaCha8 stream, uniform over the final triples or
//! stratified by property, so the sample does not depend on the thread count.

use super::config::DistortConfig;
use crate::core::ids::Pid;
use crate::core::records::{Rank, Triple};
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};

/// SplitMix64 finaliser: decorrelates (seed, index) into a per-item seed.
pub(super) fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// The RNG of item `index` under `seed` (domain `tag` separates sampling from distortion draws).
pub(super) fn item_rng(seed: u64, tag: u64, index: u64) -> ChaCha8Rng {
    ChaCha8Rng::seed_from_u64(splitmix(splitmix(seed ^ tag) ^ index))
}

/// Uniform integer in 0..n (n > 0), by rejection so that it is exact and stable across crate versions.
pub(super) fn below<R: Rng>(rng: &mut R, n: u64) -> u64 {
    debug_assert!(n > 0);
    let zone = u64::MAX - (u64::MAX % n);
    loop {
        let x = rng.next_u64();
        if x < zone {
            return x % n;
        }
    }
}

/// Choose `k` distinct indices of 0..n uniformly (partial Fisher–Yates on a sparse map), in draw order.
pub(super) fn sample_indices<R: Rng>(rng: &mut R, n: usize, k: usize) -> Vec<usize> {
    let k = k.min(n);
    let mut swapped: HashMap<usize, usize> = HashMap::new();
    let mut out = Vec::with_capacity(k);
    for i in 0..k {
        let j = i + below(rng, (n - i) as u64) as usize;
        let vj = *swapped.get(&j).unwrap_or(&j);
        let vi = *swapped.get(&i).unwrap_or(&i);
        swapped.insert(j, vi);
        out.push(vj);
    }
    out
}

/// How the originals were sampled (recorded in the manifest).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct SamplingFrame {
    /// `uniform` or `stratified`.
    pub mode: String,
    /// What the frame is.
    pub frame: String,
    /// Triples in the frame.
    pub frame_size: u64,
    /// Triples excluded from the frame (deprecated rank).
    pub excluded_deprecated: u64,
    /// Triples in the candidate pool of the final uniform draw (the frame, or the capped per-property picks).
    pub pool_size: u64,
    /// Probability that a pooled triple is drawn: originals / pool size.
    pub draw_probability: f64,
    /// Per property: triples in the frame, originals drawn, and the inclusion weight (probability that a
    /// given triple of that property enters the candidate pool before the final uniform draw). A triple's
    /// overall sampling probability is `weight × draw_probability`.
    pub per_property: Vec<PropertyWeight>,
}

/// Per-property sampling record.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct PropertyWeight {
    pub property: String,
    pub frame_count: u64,
    pub sampled: u64,
    pub weight: f64,
}

/// Draw the originals: indices into `triples`, in output order.
pub fn sample_originals(triples: &[Triple], cfg: &DistortConfig) -> (Vec<usize>, SamplingFrame) {
    sample_frame(
        triples.len(),
        |i| (triples[i].property, triples[i].rank),
        cfg,
    )
}

/// [`sample_originals`] over `n` final triples known by `(property, rank)` of each index.
pub fn sample_frame(
    n: usize,
    key: impl Fn(usize) -> (Pid, Rank),
    cfg: &DistortConfig,
) -> (Vec<usize>, SamplingFrame) {
    // Indices as u32 (half the memory of usize for a frame of millions of triples; the caller refuses more
    // than u32::MAX final triples).
    debug_assert!(n <= u32::MAX as usize);
    let frame: Vec<u32> = (0..n)
        .filter(|&i| key(i).1 != Rank::Deprecated)
        .map(|i| i as u32)
        .collect();
    let mut frame_count: BTreeMap<Pid, u64> = BTreeMap::new();
    for &i in &frame {
        *frame_count.entry(key(i as usize).0).or_default() += 1;
    }
    let mut rng = item_rng(cfg.seed, 1, 0);
    let (chosen, weights, pool_size): (Vec<usize>, BTreeMap<Pid, f64>, usize) =
        if cfg.stratify_by_property {
            let mut by_prop: BTreeMap<Pid, Vec<u32>> = BTreeMap::new();
            for &i in &frame {
                by_prop.entry(key(i as usize).0).or_default().push(i);
            }
            let cap = cfg.per_property_cap.max(1);
            let mut pool = Vec::new();
            let mut w = BTreeMap::new();
            for (p, idx) in &by_prop {
                let mut prng = item_rng(cfg.seed, 2, p.0);
                let take = sample_indices(&mut prng, idx.len(), cap);
                let mut picked: Vec<usize> = take.into_iter().map(|k| idx[k] as usize).collect();
                picked.sort_unstable();
                pool.extend(picked);
                w.insert(*p, (cap as f64 / idx.len() as f64).min(1.0));
            }
            let picks = sample_indices(&mut rng, pool.len(), cfg.samples);
            (picks.into_iter().map(|k| pool[k]).collect(), w, pool.len())
        } else {
            let picks = sample_indices(&mut rng, frame.len(), cfg.samples);
            let w = if frame.is_empty() { 0.0 } else { 1.0 };
            (
                picks.into_iter().map(|k| frame[k] as usize).collect(),
                frame_count.keys().map(|p| (*p, w)).collect(),
                frame.len(),
            )
        };
    let mut sampled: BTreeMap<Pid, u64> = BTreeMap::new();
    for &i in &chosen {
        *sampled.entry(key(i).0).or_default() += 1;
    }
    let per_property = frame_count
        .iter()
        .map(|(p, count)| PropertyWeight {
            property: p.to_string(),
            frame_count: *count,
            sampled: sampled.get(p).copied().unwrap_or(0),
            weight: weights.get(p).copied().unwrap_or(0.0),
        })
        .collect();
    let sf = SamplingFrame {
        mode: if cfg.stratify_by_property {
            format!("stratified (per-property cap {})", cfg.per_property_cap)
        } else {
            "uniform".into()
        },
        frame: "final triples (triples.parquet) with rank preferred or normal".into(),
        frame_size: frame.len() as u64,
        excluded_deprecated: (n - frame.len()) as u64,
        pool_size: pool_size as u64,
        draw_probability: if pool_size == 0 {
            0.0
        } else {
            chosen.len() as f64 / pool_size as f64
        },
        per_property,
    };
    (chosen, sf)
}
