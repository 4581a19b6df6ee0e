//! All the walks of a graph, in batches whose ids are handed to a writer while the next batch is computed.

use super::config::WalkConfig;
use super::format::Walks;
use super::lockstep::{walk_group, TASK_WALKS};
use super::order::Starts;
use super::step::Bias;
use crate::core::error::{Error, Result};
use crate::core::progress::Progress;
use crate::stages::embed::graph::Csr;
use rayon::prelude::*;
use serde::Serialize;

/// Totals of a walk run.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct WalkStats {
    /// Walks generated.
    pub walks: u64,
    /// Steps taken (ids after the start that are not padding).
    pub steps: u64,
    /// Candidates drawn (equals `steps` on the uniform path; more when the biased step rejects).
    pub candidates: u64,
    /// Padding ids written.
    pub padded: u64,
}

/// Walks per batch: ~4 M ids (16 MB) per batch, at least one walk.
pub(super) fn batch_walks(length: usize) -> usize {
    ((1usize << 22) / length.max(1)).max(1)
}

/// Generate all walks batch by batch, in walk order, handing each batch (a slice of whole walks) to `sink`
/// while the next batch is computed. Parallel over walks; the output does not depend on the thread count.
pub fn generate_with<F>(
    csr: &Csr,
    cfg: &WalkConfig,
    progress: &Progress,
    sink: F,
) -> Result<WalkStats>
where
    F: FnMut(&[u32]) -> Result<()> + Send,
{
    generate_batched(csr, cfg, batch_walks(cfg.length), progress, sink)
}

/// `generate_with` with an explicit batch size (walks per batch, ≥ 1). The walks do not depend on it.
pub fn generate_batched<F>(
    csr: &Csr,
    cfg: &WalkConfig,
    per_batch: usize,
    progress: &Progress,
    mut sink: F,
) -> Result<WalkStats>
where
    F: FnMut(&[u32]) -> Result<()> + Send,
{
    cfg.validate()?;
    let n = csr.n_nodes() as u64;
    let total = n
        .checked_mul(cfg.walks_per_node as u64)
        .ok_or_else(|| Error::Config("walks: number of walks overflows".into()))?;
    let bias = Bias::new(cfg.p, cfg.q);
    let len = cfg.length;
    let starts = Starts::new(n, cfg.seed, cfg.order);
    let per_batch = per_batch.max(1) as u64;
    let compute = |first: u64, buf: &mut Vec<u32>| -> WalkStats {
        let count = per_batch.min(total - first) as usize;
        buf.clear();
        buf.resize(count * len, 0);
        let s = buf
            .par_chunks_mut(len * TASK_WALKS)
            .enumerate()
            .map(|(j, out)| {
                let w0 = first + (j * TASK_WALKS) as u64;
                walk_group(csr, &bias, cfg.seed, &starts, w0, len, out)
            })
            .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1));
        progress.inc(count as u64);
        WalkStats {
            walks: count as u64,
            steps: s.0,
            candidates: s.1,
            padded: count as u64 * (len as u64 - 1) - s.0,
        }
    };
    let add = |a: &mut WalkStats, b: WalkStats| {
        a.walks += b.walks;
        a.steps += b.steps;
        a.candidates += b.candidates;
        a.padded += b.padded;
    };
    let mut stats = WalkStats::default();
    if total == 0 {
        return Ok(stats);
    }
    let mut cur = Vec::new();
    let mut next = Vec::new();
    add(&mut stats, compute(0, &mut cur));
    let mut first = per_batch;
    while first < total {
        let (r, s) = rayon::join(|| sink(&cur), || compute(first, &mut next));
        r?;
        add(&mut stats, s);
        std::mem::swap(&mut cur, &mut next);
        first += per_batch;
    }
    sink(&cur)?;
    Ok(stats)
}

/// Generate all walks in memory (tests, small graphs, library users). Panics on an invalid config; use
/// `generate_with` to get an error instead.
pub fn generate(csr: &Csr, cfg: &WalkConfig) -> Walks {
    let mut data = Vec::new();
    generate_with(csr, cfg, &Progress::hidden(), |b| {
        data.extend_from_slice(b);
        Ok(())
    })
    .expect("valid walk config");
    Walks {
        length: cfg.length,
        data,
    }
}
