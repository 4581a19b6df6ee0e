//! `sword train`: skip-gram with negative sampling (word2vec SGNS) over node2vec walks, with the same output
//! bytes at any thread count and on any CPU.
//!
//! The model is word2vec's skip-gram with negative sampling on sentences of dense `u32` node ids:
//!
//! - **Pairs.** For each kept position `i` of a walk, a reduced window `w` is drawn uniformly from
//!   `1..=window` (word2vec's `b = rand % window`); every other position `j` with `|i − j| ≤ w` is a context:
//!   its *input* vector (`syn0`) is trained to predict the *output* vector (`syn1`) of the centre `walk[i]`.
//! - **Noise.** `negative` nodes per centre, drawn from unigram^0.75 of the node counts with a Walker/Vose
//!   alias table ([`AliasTable`]: O(1) per draw, 8 bytes per node) and shared by the contexts of that
//!   centre's window (pWord2Vec; [`Noise`]: `pair` draws them per pair as word2vec does, `walk` once per
//!   walk, faster and measurably worse). A noise node equal to the centre is dropped for that centre.
//! - **Subsampling.** A node with count `c` in a corpus of `T` tokens is kept with probability
//!   `(sqrt(c / (s·T)) + 1) · s·T / c` (word2vec's and gensim's formula), before windowing; default
//!   `sample = 1e-3` as both; `0` turns it off.
//! - **Learning rate.** Linear from `alpha` to `min_alpha` over all epochs, driven by each block's own
//!   progress through its words (see [`sgd`]), in steps of `alpha_step` words of the whole run (gensim's
//!   jobs of 10,000 words: on small corpora the step is a measurable part of the training).
//! - **Initialisation.** Input vectors uniform in (−init/dim, init/dim), output vectors zero.
//! - **Gradient.** `g = (label − σ(x·y)) · lr`, σ exact (`1/(1+e^−x)` through a library-free `exp`) by
//!   default, or word2vec's 1000-entry table (`sigmoid = "table"`).
//!
//! **Same bytes at any `-j`.** The walks are cut into a fixed number of logical blocks (`blocks`: one per 32
//! nodes up to 64, independent of the thread count), each with its own random stream; training advances all
//! blocks in lockstep, one walk each per super-step, training every walk on a copy of its rows taken from the
//! matrices of the previous super-step and adding the deltas in block order ([`sgd`] explains why that makes
//! the result independent of the threads). The arithmetic is the same on every SIMD build ([`kernels`]: fused multiply-add everywhere,
//! a fixed 16-lane reduction order, σ without the C library), so the same seed and walks give the same
//! `embeddings.npy` at `-j 1`, `2`, `4`, `8`, run after run, on AVX-512, AVX2 or plain x86-64 and other CPUs.
//!
//! **Speed.** A walk of `L` nodes touches about `2·L + L·negative` random rows (each once; `2·L + negative`
//! with `noise = walk`) instead of word2vec's `B·(2 + negative)` per position, with two barriers per `blocks` walks; its positions' three
//! small matrix products run in SIMD (AVX-512 or AVX2 + FMA, chosen at run time; `SWORD_TRAIN_KERNEL=
//! scalar|avx2|avx512` forces one, for tests and comparisons), and the rows of the next walks are prefetched
//! while the current one is trained.

mod alias;
pub mod kernels;
pub mod sgd;
mod source;
pub mod stage;

pub use alias::AliasTable;
pub use kernels::Kernel;
pub use source::{WalkFile, WalkSource};
pub use stage::TrainStage;

use crate::core::error::{Error, Result};
use crate::core::progress::Progress;
use ndarray::Array2;
use rand::Rng;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Padding id in walks (walks shorter than the walk length, e.g. from isolated nodes).
pub const PAD: u32 = crate::stages::embed::walks::PAD;
/// Most logical blocks the default (`blocks = 0`, automatic) chooses (see [`TrainConfig::blocks`]).
pub const BLOCKS: usize = 64;
/// Nodes per block at least, when the number of blocks is automatic.
pub const NODES_PER_BLOCK: usize = 512;
/// Default logit beyond which a pair is skipped (gensim's `MAX_EXP`; see [`TrainConfig::saturation`]).
pub const SATURATION: f32 = 6.0;
/// Default words per learning-rate step (gensim's and word2vec's job size; see [`TrainConfig::alpha_step`]).
pub const ALPHA_STEP: u64 = 10_000;
/// Default prefetch distance in batches.
pub const PREFETCH_AHEAD: usize = 3;
/// Rows per initialisation block (each block of input rows has its own random stream).
const INIT_BLOCK_ROWS: usize = 4096;
/// Ids read at a time by the counting pass.
const COUNT_PIECE: usize = 1 << 20;

/// How σ(x) is computed in the gradient.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Sigmoid {
    /// `1 / (1 + exp(−x))`.
    #[default]
    Exact,
    /// word2vec's 1000-entry table over (−6, 6), saturating outside.
    Table,
}

/// Which (context, centre) pairs share their noise nodes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Noise {
    /// `negative` noise nodes per pair, as word2vec and gensim draw them.
    Pair,
    /// `negative` noise nodes per centre, shared by the contexts of its window (pWord2Vec).
    Window,
    /// `negative` noise nodes per side of a centre: the contexts before it share one draw, those after it
    /// another (two batches per position).
    #[default]
    Side,
    /// `negative` noise nodes per walk, shared by all its centres and contexts.
    Walk,
}

/// What happens to a noise pair saturated the wrong way (logit ≥ `saturation`), see [`TrainConfig::saturated`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Saturated {
    /// It trains with its gradient × saturation / logit.
    #[default]
    Scale,
    /// It is skipped like every other saturated pair (gensim's rule; the bytes of 6fd6862's default).
    Skip,
}

/// Settings of the train stage (`pipeline/train.toml`; the same names as flags of `sword train` and `sword embed`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Embedding dimension; typical 64–300, SWORD uses 128.
    #[arg(long, required = false)]
    pub dim: usize,
    /// Maximum context window (positions on each side); the window actually used at a position is drawn from
    /// 1..=window. Typical 5 (node2vec paper: 10).
    #[arg(long, required = false)]
    pub window: usize,
    /// Noise (negative) nodes per pair, centre or walk (see `noise`); typical 5–15 (word2vec: 5 per pair).
    #[arg(long, required = false)]
    pub negative: usize,
    /// Which pairs share noise nodes: `side` (default) draws `negative` per side of a centre, shared by the
    /// contexts before it and, drawn again, by those after it: gensim's quality on every graph family measured
    /// (BENCHMARKS.md "Training"). `window` draws them once per centre for its whole window (pWord2Vec):
    /// 1.5× the words/s of `side`, but 0.004–0.005 lower centred AUC on power-law graphs. `pair` draws them per
    /// (context, centre) pair as word2vec does (about 4× the CPU time of `window`, no better than `side`).
    /// `walk` draws them once per walk for all its centres: about half the CPU time of `window`, but it
    /// costs link prediction on power-law graphs with communities (−0.024 centred AUC, −0.013 against
    /// degree-matched negatives).
    #[arg(long, required = false, value_enum)]
    pub noise: Noise,
    /// Passes over the walks; typical 1 for node2vec (many walks per node), 5 for text.
    #[arg(long, required = false)]
    pub epochs: usize,
    /// Initial learning rate; typical 0.025 (word2vec skip-gram).
    #[arg(long, required = false)]
    pub alpha: f32,
    /// Final learning rate at the end of the last epoch; typical 0.0001.
    #[arg(long, required = false)]
    pub min_alpha: f32,
    /// The learning rate steps down once per this many words of progress (over all blocks) instead of at
    /// every walk: gensim and word2vec set it once per job of 10,000 words. 0 or 1 = at every walk. On a
    /// small corpus the step matters: 10,000 of the embedded default's 226 k words is 4.4 % of the run, and
    /// decaying at every walk instead cost 0.011 AUC against degree-matched negatives there (BENCHMARKS.md
    /// "Training"). Typical 10000 (default); on corpora of millions of words any value gives the same
    /// quality.
    #[arg(long, required = false)]
    pub alpha_step: u64,
    /// Pairs whose logit is this far from 0 or farther (|c·o| ≥ `saturation`) are skipped, as gensim skips
    /// them (its σ table ends at ±6), except a noise pair saturated the wrong way (c·o ≥ `saturation`: a noise
    /// node, often a hub, that the context already predicts with σ ≈ 1): it trains with its step scaled by
    /// saturation / (c·o), so the step shrinks as the vectors grow. Full steps there, summed over the contexts
    /// of a window, made the vectors of the 112 M-line generated dump diverge; skipping them cost the real
    /// fixtures' graph 0.008 AUC against degree-matched negatives (BENCHMARKS.md "Training"). 0 = train
    /// every pair with a full step (the bytes of releases before this option). Typical 6 (default).
    #[arg(long, required = false)]
    pub saturation: f32,
    /// A noise pair saturated the wrong way (logit ≥ `saturation`): `scale` (default) trains it with its
    /// gradient × saturation / logit; `skip` skips it as gensim does (the bytes of the releases that
    /// introduced `saturation`). On the real fixtures' graph `skip` costs 0.005 AUC against degree-matched
    /// negatives; on a 100k-node block model with power-law degrees it gains 0.003 there (10 seeds each,
    /// BENCHMARKS.md "Training"). No effect with `saturation` 0.
    #[arg(long, required = false, value_enum)]
    pub saturated: Saturated,
    /// Frequent-node subsampling threshold `s` (fraction of tokens); 0 = off, typical 1e-3 (word2vec and
    /// gensim default), 1e-5 for very large corpora.
    #[arg(long, required = false)]
    pub sample: f64,
    /// Seed of every random draw (initialisation, windows, noise, subsampling).
    #[arg(long, required = false)]
    pub seed: u64,
    /// σ evaluation: `exact` (default) or `table`.
    #[arg(long, required = false, value_enum)]
    pub sigmoid: Sigmoid,
    /// Input vectors start uniform in (−init/dim, init/dim): 0.5 is word2vec's C tool, 1.0 is gensim ≥ 4's.
    /// Typical 0.5–1.0 (default 1.0: measured better link prediction, see BENCHMARKS.md "Training").
    #[arg(long, required = false)]
    pub init: f32,
    /// Prefetch distance in walks: the rows of a thread's walk `k + prefetch` are requested while walk `k`
    /// is trained; 0 = off. Typical 1–3 (default 3). Does not change results.
    #[arg(skip = PREFETCH_AHEAD)]
    pub prefetch: usize,
    /// Logical blocks the walks are cut into, each with its own random stream; all advance in lockstep, one
    /// walk per super-step (see `train::sgd`). Part of the result like the seed — the thread count is not:
    /// `-j` only spreads the blocks over threads (at most `blocks` threads work). 0 (the default) = automatic:
    /// one block per 512 nodes of the graph, at most 64 (a function of the input, never of `-j`). More blocks
    /// mean more parallel work per barrier and staler updates: a super-step trains `blocks` walks against
    /// the same snapshot. On a graph of a few dozen nodes that diverges; at 64 blocks on 8 k nodes it cost
    /// 0.004 AUC, at 64 on 100 k nothing measurable (docs/embedding.md, "Walk order and the blocks").
    /// Typical 16–64.
    #[arg(long, required = false)]
    pub blocks: usize,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            dim: 128,
            window: 5,
            negative: 5,
            noise: Noise::Side,
            epochs: 1,
            alpha: 0.025,
            min_alpha: 0.0001,
            alpha_step: ALPHA_STEP,
            saturation: SATURATION,
            saturated: Saturated::Scale,
            sample: 1e-3,
            seed: 42,
            sigmoid: Sigmoid::Exact,
            prefetch: PREFETCH_AHEAD,
            init: 1.0,
            blocks: 0,
        }
    }
}

impl TrainConfig {
    /// The number of blocks a graph of `n_nodes` nodes is trained with: `blocks`, or when it is 0 one per
    /// [`NODES_PER_BLOCK`] nodes, between 1 and [`BLOCKS`].
    pub fn blocks_for(&self, n_nodes: usize) -> usize {
        if self.blocks > 0 {
            self.blocks
        } else {
            (n_nodes / NODES_PER_BLOCK).clamp(1, BLOCKS)
        }
    }

    /// Check ranges.
    pub fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::Config(format!("train: {m}")));
        if self.dim == 0 || self.dim > 1 << 16 {
            return bad("dim must be in 1..=65536");
        }
        if self.window == 0 {
            return bad("window must be at least 1");
        }
        if !(self.init >= 0.0 && self.init.is_finite()) {
            return bad("init must be ≥ 0");
        }
        if self.epochs == 0 {
            return bad("epochs must be at least 1");
        }
        if !(self.alpha > 0.0 && self.alpha.is_finite()) {
            return bad("alpha must be positive");
        }
        if !(self.min_alpha >= 0.0 && self.min_alpha <= self.alpha) {
            return bad("min_alpha must be in [0, alpha]");
        }
        if self.blocks > 1 << 16 {
            return bad("blocks must be in 0..=65536 (0: automatic)");
        }
        if self.prefetch > 64 {
            return bad("prefetch must be in 0..=64");
        }
        if !(self.saturation >= 0.0 && self.saturation.is_finite()) {
            return bad("saturation must be ≥ 0 (0: train every pair)");
        }
        if !(self.sample >= 0.0 && self.sample.is_finite()) {
            return bad("sample must be ≥ 0");
        }
        Ok(())
    }
}

// ---------------------------------------------------------------------------------------------------------
// Training

/// Counts and figures of one training run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TrainStats {
    /// Raw tokens (non-padding ids) over all epochs.
    pub words: u64,
    /// Tokens kept after subsampling, over all epochs.
    pub kept_words: u64,
    /// (context, centre) pairs trained.
    pub pairs: u64,
    /// Minibatches (one per kept centre with at least one context).
    pub batches: u64,
    /// Super-steps (every block advances by one walk per step).
    pub steps: u64,
    /// Logical blocks (see [`TrainConfig::blocks`]).
    pub blocks: u64,
    /// Mean negative-sampling loss per pair, on every 16th batch of each block, over the run.
    pub mean_loss: f64,
    /// Nodes that occur in the walks.
    pub vocab: u64,
    /// Seconds spent in the SGD loop.
    pub seconds: f64,
    /// Raw tokens per second of the SGD loop.
    pub words_per_sec: f64,
    /// Worker threads used.
    pub threads: u64,
    /// The SIMD build that ran (`scalar`, `avx2`, `avx512`); it does not change the result.
    pub kernel: String,
    /// Seconds the threads spent in each phase of the SGD loop, summed over them ([`sgd::Phases`]).
    pub phases: sgd::Phases,
}

/// Trained vectors: row `i` is node `i` (nodes that never occur in the walks keep their random init).
pub struct Trained {
    /// Input vectors, `n_nodes × dim` (the embeddings).
    pub vectors: Array2<f32>,
    /// Counts and timings.
    pub stats: TrainStats,
}

/// The SIMD build to run: [`Kernel::detect`], or the one `SWORD_TRAIN_KERNEL` names (`scalar`, `avx2`,
/// `avx512`; empty or `auto` = detect). Naming a build this CPU cannot run is a configuration error.
pub fn kernel_from_env() -> Result<Kernel> {
    match std::env::var("SWORD_TRAIN_KERNEL") {
        Ok(name) if !name.is_empty() && name != "auto" => Kernel::by_name(&name).ok_or_else(|| {
            let have: Vec<&str> = Kernel::available().iter().map(|k| k.name()).collect();
            Error::Config(format!(
                "SWORD_TRAIN_KERNEL={name}: this CPU runs {} (or auto)",
                have.join(", ")
            ))
        }),
        _ => Ok(Kernel::detect()),
    }
}

/// A zeroed buffer of `len + 15` floats and the offset at which a 64-byte-aligned run of `len` starts, so
/// rows of 16·k floats never straddle a cache line.
///
/// On Linux the buffer is also offered transparent huge pages (`madvise(MADV_HUGEPAGE)`, before any page of
/// it is touched): training reads ~11 random rows per word from two matrices far larger than the TLB covers
/// with 4 KiB pages (1 GB at a million nodes), so without them most row reads and prefetches start with a
/// page walk. Only advice: where the kernel says no (THP `never`), nothing changes but the speed.
fn aligned_zeros(len: usize) -> (Vec<f32>, usize) {
    let mut v = vec![0f32; len + 15];
    advise_huge_pages(&mut v);
    let off = v.as_ptr().align_offset(64).min(15);
    (v, off)
}

/// Ask for transparent huge pages over the whole 2 MiB pages inside `v` (see [`aligned_zeros`]).
fn advise_huge_pages(v: &mut [f32]) {
    #[cfg(target_os = "linux")]
    {
        const HUGE: usize = 2 << 20;
        let start = v.as_mut_ptr() as usize;
        let end = start + std::mem::size_of_val(v);
        let (lo, hi) = (start.next_multiple_of(HUGE), end / HUGE * HUGE);
        if hi > lo {
            // SAFETY: [lo, hi) lies inside the live allocation of `v`; MADV_HUGEPAGE changes no contents and
            // no mapping, only how later faults are served. The result is advisory and ignored.
            unsafe {
                libc::madvise(lo as *mut libc::c_void, hi - lo, libc::MADV_HUGEPAGE);
            }
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = v;
}

/// The `len` floats at `off`, moved to the front (same allocation).
fn unaligned(mut v: Vec<f32>, off: usize, len: usize) -> Vec<f32> {
    v.copy_within(off..off + len, 0);
    v.truncate(len);
    v
}

/// Train skip-gram with negative sampling on walks (`data` = `num_walks × walk_len` ids, [`PAD`] = padding)
/// over `n_nodes` nodes, on `threads` threads (the caller's pool; a stage's context has it); the vectors do not
/// depend on that number.
pub fn train(
    data: &[u32],
    walk_len: usize,
    n_nodes: usize,
    cfg: &TrainConfig,
    threads: usize,
    progress: &Progress,
) -> Result<Trained> {
    train_from(&data, walk_len, n_nodes, cfg, threads, progress)
}

/// [`train`] reading the walks from any [`WalkSource`] (`walks.bin` piece by piece in the train stage). The
/// same walks give the same vectors whatever the source.
pub fn train_from(
    data: &dyn WalkSource,
    walk_len: usize,
    n_nodes: usize,
    cfg: &TrainConfig,
    threads: usize,
    progress: &Progress,
) -> Result<Trained> {
    let kernel = kernel_from_env()?;
    train_with(data, walk_len, n_nodes, cfg, kernel, threads, progress)
}

/// [`train_from`] with an explicit SIMD build and thread count (neither changes the result).
pub fn train_with(
    data: &dyn WalkSource,
    walk_len: usize,
    n_nodes: usize,
    cfg: &TrainConfig,
    kernel: Kernel,
    threads: usize,
    progress: &Progress,
) -> Result<Trained> {
    cfg.validate()?;
    let n_ids = data.len_ids();
    if walk_len == 0 && n_ids > 0 {
        return Err(Error::Config("train: walk length 0".into()));
    }
    if n_ids.checked_rem(walk_len).is_some_and(|r| r != 0) {
        return Err(Error::Config(format!(
            "train: {n_ids} ids is not a multiple of the walk length {walk_len}"
        )));
    }
    if n_nodes > u32::MAX as usize {
        return Err(Error::Config("train: more than 2^32-1 nodes".into()));
    }
    let dim = cfg.dim;
    let n_walks = n_ids.checked_div(walk_len).unwrap_or(0);
    // Counts, per node and per block, reading the walks a piece at a time.
    let mut counts = vec![0u64; n_nodes];
    let blocks = cfg.blocks_for(n_nodes);
    let mut block_words = vec![0u64; blocks];
    let mut piece = vec![0u32; COUNT_PIECE.min(n_ids)];
    for (b, bw) in block_words.iter_mut().enumerate() {
        let walks = sgd::block_walks(b, blocks, n_walks);
        let (mut from, end) = (walks.start * walk_len, walks.end * walk_len);
        while from < end {
            let n = piece.len().min(end - from);
            data.read_ids(from, &mut piece[..n])?;
            for (k, &id) in piece[..n].iter().enumerate() {
                if id == PAD {
                    continue;
                }
                match counts.get_mut(id as usize) {
                    Some(c) => *c += 1,
                    None => {
                        return Err(Error::Config(format!(
                            "train: walk {} holds node id {id}, but there are only {n_nodes} nodes",
                            (from + k) / walk_len
                        )))
                    }
                }
                *bw += 1;
            }
            from += n;
        }
    }
    drop(piece);
    let words: u64 = block_words.iter().sum();
    let vocab = counts.iter().filter(|c| **c > 0).count() as u64;
    // Initialisation: input uniform (−init/dim, init/dim), output zero; blocks of rows seeded independently.
    let len = n_nodes * dim;
    let (mut syn0, off0) = aligned_zeros(len);
    {
        use rayon::prelude::*;
        syn0[off0..off0 + len]
            .par_chunks_mut(INIT_BLOCK_ROWS * dim.max(1))
            .enumerate()
            .for_each(|(b, block)| {
                let mut rng = sgd::stream_rng(cfg.seed, 0, b as u64);
                for x in block.iter_mut() {
                    let u = (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32;
                    *x = (2.0 * u - 1.0) * cfg.init / dim as f32;
                }
            });
    }
    let mut stats = TrainStats {
        vocab,
        threads: threads as u64,
        kernel: kernel.name().to_string(),
        blocks: blocks as u64,
        ..TrainStats::default()
    };
    let start = Instant::now();
    if words > 0 {
        let (mut syn1, off1) = aligned_zeros(len);
        // Noise distribution and subsampling thresholds.
        let weights: Vec<f64> = counts.iter().map(|&c| (c as f64).powf(0.75)).collect();
        let alias = AliasTable::new(&weights)
            .ok_or_else(|| Error::Config("train: no node occurs in the walks".into()))?;
        drop(weights);
        let keep: Option<Vec<u64>> = (cfg.sample > 0.0).then(|| {
            let st = cfg.sample * words as f64;
            counts
                .iter()
                .map(|&c| {
                    if c == 0 {
                        return 1u64 << 32;
                    }
                    let p = ((c as f64 / st).sqrt() + 1.0) * st / c as f64;
                    (p.min(1.0) * 4294967296.0) as u64
                })
                .collect()
        });
        drop(counts);
        let table = kernels::sigmoid_table();
        let plan = sgd::Plan {
            data,
            walk_len,
            dim,
            window: cfg.window,
            negative: cfg.negative,
            noise: cfg.noise,
            pairwise: cfg.noise == Noise::Pair,
            epochs: cfg.epochs,
            alpha: cfg.alpha,
            min_alpha: cfg.min_alpha,
            lr_step: sgd::lr_step(cfg.alpha_step, words, cfg.epochs),
            saturation: cfg.saturation,
            scale_noise: cfg.saturated == Saturated::Scale,
            blocks,
            prefetch: cfg.prefetch,
            seed: cfg.seed,
            sigma: match cfg.sigmoid {
                Sigmoid::Exact => sgd::Sigma::Exact,
                Sigmoid::Table => sgd::Sigma::Table(&table),
            },
            alias: &alias,
            keep: keep.as_deref(),
            block_words: &block_words,
            kernel,
            threads,
            progress,
        };
        let out = sgd::run(
            &plan,
            &mut syn0[off0..off0 + len],
            &mut syn1[off1..off1 + len],
        )?;
        stats.kept_words = out.kept;
        stats.pairs = out.pairs;
        stats.batches = out.batches;
        stats.steps = out.steps;
        stats.threads = out.threads as u64;
        stats.phases = out.phases;
        stats.mean_loss = if out.loss_n > 0 {
            out.loss / out.loss_n as f64
        } else {
            0.0
        };
    }
    stats.seconds = start.elapsed().as_secs_f64();
    if let Some(i) = syn0[off0..off0 + len].iter().position(|x| !x.is_finite()) {
        return Err(Error::Config(format!(
            "train: the vectors diverged (node {} holds a non-finite value); lower alpha, set saturation (6, \
             gensim's) if it is 0, or lower blocks if set",
            i / dim
        )));
    }
    stats.words = words * cfg.epochs as u64;
    stats.words_per_sec = stats.words as f64 / stats.seconds.max(1e-9);
    let vectors = Array2::from_shape_vec((n_nodes, dim), unaligned(syn0, off0, len))
        .map_err(|e| Error::Config(e.to_string()))?;
    Ok(Trained { vectors, stats })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn alias_matches_unigram_075_chi_square() {
        let counts = [1u64, 2, 5, 10, 50, 100, 1000, 0, 3, 7000];
        let w: Vec<f64> = counts.iter().map(|&c| (c as f64).powf(0.75)).collect();
        let t = AliasTable::new(&w).unwrap();
        let total: f64 = w.iter().sum();
        let mut rng = sgd::stream_rng(7, 99, 0);
        let n = 400_000usize;
        let mut obs = vec![0u64; w.len()];
        for _ in 0..n {
            obs[t.sample(rng.next_u64()) as usize] += 1;
        }
        assert_eq!(obs[7], 0, "zero-count node drawn");
        let mut chi = 0.0;
        let mut df = 0;
        for (o, wi) in obs.iter().zip(&w) {
            let e = n as f64 * wi / total;
            if e > 0.0 {
                chi += (*o as f64 - e).powi(2) / e;
                df += 1;
            }
        }
        // df − 1 = 8 degrees of freedom; the 0.999 quantile of χ²(8) is 26.1.
        assert!(chi < 26.1, "chi-square {chi} with {} dof: {obs:?}", df - 1);
    }

    #[test]
    fn alias_degenerate_cases() {
        let t = AliasTable::new(&[0.0, 3.0, 0.0]).unwrap();
        let mut rng = sgd::stream_rng(1, 2, 3);
        for _ in 0..1000 {
            assert_eq!(t.sample(rng.next_u64()), 1);
        }
        assert!(AliasTable::new(&[]).is_none());
        assert!(AliasTable::new(&[0.0, 0.0]).is_none());
        assert_eq!(t.sample(u64::MAX), 1);
        assert_eq!(t.sample(0), 1);
    }

    fn two_cliques_walks(seed: u64) -> (Vec<u32>, usize) {
        // Nodes 0..10 and 10..20 are cliques, joined by the edge 9–10. Uniform random walks of length 10.
        let mut adj: Vec<Vec<u32>> = vec![Vec::new(); 20];
        for c in [0u32, 10] {
            for a in c..c + 10 {
                for b in c..c + 10 {
                    if a != b {
                        adj[a as usize].push(b);
                    }
                }
            }
        }
        adj[9].push(10);
        adj[10].push(9);
        let data = walks(seed, 50, 20, |v, below| {
            let nb = &adj[v as usize];
            nb[below(nb.len())]
        });
        (data, 10)
    }

    /// `rounds` walks of 10 nodes from every node of `0..n` in turn; `next(v, below)` is the step from `v`,
    /// `below(m)` a draw from `0..m` of the stream seeded by `seed`.
    fn walks(
        seed: u64,
        rounds: usize,
        n: u32,
        next: impl Fn(u32, &mut dyn FnMut(usize) -> usize) -> u32,
    ) -> Vec<u32> {
        let mut rng = sgd::stream_rng(seed, 5, 5);
        let mut below = |m: usize| ((rng.next_u32() as u64 * m as u64) >> 32) as usize;
        let mut data = Vec::new();
        for _ in 0..rounds {
            for s in 0..n {
                let mut v = s;
                data.push(v);
                for _ in 1..10 {
                    v = next(v, &mut below);
                    data.push(v);
                }
            }
        }
        data
    }

    fn pool(n: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    }

    #[test]
    fn runs_are_deterministic_and_the_seed_matters() {
        let (data, len) = two_cliques_walks(1);
        let cfg = TrainConfig {
            dim: 16,
            ..TrainConfig::default()
        };
        let run = |cfg: &TrainConfig| {
            pool(1).install(|| train(&data, len, 20, cfg, 1, &Progress::hidden()).unwrap())
        };
        let a = run(&cfg);
        let b = run(&cfg);
        assert_eq!(a.vectors, b.vectors);
        let c = run(&TrainConfig {
            seed: 43,
            ..cfg.clone()
        });
        assert_ne!(a.vectors, c.vectors);
        // The number of blocks is part of the result (unlike the thread count).
        let d = run(&TrainConfig {
            blocks: 7,
            ..cfg.clone()
        });
        assert_ne!(a.vectors, d.vectors);
    }

    /// Mean cosine of same-community and cross-community pairs (communities 0..10 and 10..20).
    pub(crate) fn community_cosines(v: &Array2<f32>) -> (f32, f32) {
        let (mut same, mut ns, mut cross, mut nc) = (0f32, 0, 0f32, 0);
        for a in 0..20 {
            for b in a + 1..20 {
                let c =
                    crate::store::embeddings::cosine_rows(&v.row(a).to_vec(), &v.row(b).to_vec());
                if (a < 10) == (b < 10) {
                    same += c;
                    ns += 1;
                } else {
                    cross += c;
                    nc += 1;
                }
            }
        }
        (same / ns as f32, cross / nc as f32)
    }

    #[test]
    fn two_communities_separate() {
        let (data, len) = two_cliques_walks(3);
        for threads in [1, 2] {
            let cfg = TrainConfig {
                dim: 16,
                sample: 0.0,
                epochs: 3,
                ..TrainConfig::default()
            };
            let t = pool(threads)
                .install(|| train(&data, len, 20, &cfg, threads, &Progress::hidden()).unwrap());
            let (same, cross) = community_cosines(&t.vectors);
            assert!(
                same > cross + 0.4,
                "{threads} threads: same {same}, cross {cross}"
            );
        }
    }

    #[test]
    fn automatic_blocks_follow_the_graph_not_the_threads() {
        let auto = TrainConfig::default();
        assert_eq!(auto.blocks, 0);
        for (nodes, want) in [
            (0, 1),
            (20, 1),
            (511, 1),
            (1023, 1),
            (1024, 2),
            (2266, 4),
            (8072, 15),
            (32767, 63),
            (32768, 64),
            (1 << 20, 64),
        ] {
            assert_eq!(auto.blocks_for(nodes), want, "{nodes} nodes");
        }
        let set = TrainConfig {
            blocks: 10,
            ..TrainConfig::default()
        };
        assert_eq!(set.blocks_for(20), 10);
        // The 20-node graph trains in one block at every thread count.
        let (data, len) = two_cliques_walks(2);
        let src: &[u32] = &data;
        let h = Progress::hidden();
        let a = train_with(&src, len, 20, &auto, Kernel::Scalar, 1, &h).unwrap();
        let b = train_with(&src, len, 20, &auto, Kernel::detect(), 4, &h).unwrap();
        assert_eq!((a.stats.blocks, b.stats.blocks, b.stats.threads), (1, 1, 1));
        assert_eq!(a.vectors, b.vectors);
    }

    /// Vectors that overflow are an error naming the cause, never a file of NaN.
    #[test]
    fn divergence_is_an_error() {
        let (data, len) = two_cliques_walks(2);
        let cfg = TrainConfig {
            alpha: 1e30,
            min_alpha: 1e30,
            // Skipping saturated pairs keeps even this rate finite (the first step saturates every pair).
            saturation: 0.0,
            ..TrainConfig::default()
        };
        let e = train(&data, len, 20, &cfg, 1, &Progress::hidden())
            .err()
            .unwrap();
        assert!(e.to_string().contains("diverged"), "{e}");
    }

    /// 8 communities of 25 nodes, 600 walks: every thread count (more threads than cores, and thread counts
    /// that do not divide the blocks) and every SIMD build gives the same bits, with and without subsampling,
    /// over several epochs and with the σ table, for every noise scheme (the first config's is the default).
    #[test]
    fn every_thread_count_and_kernel_gives_the_same_bits() {
        let (k, size) = (8u32, 25u32);
        let n = k * size;
        // Mostly inside the community, one step in twenty to the next community.
        let data = walks(9, 3, n, |v, below| {
            if below(20) == 0 {
                (v / size * size + size) % n + below(size as usize) as u32
            } else {
                v / size * size + below(size as usize) as u32
            }
        });
        let src: &[u32] = &data;
        let configs = [
            TrainConfig {
                dim: 32,
                epochs: 2,
                blocks: 16,
                ..TrainConfig::default()
            },
            TrainConfig {
                dim: 20,
                sample: 0.0,
                epochs: 2,
                sigmoid: Sigmoid::Table,
                blocks: 10,
                window: 3,
                negative: 7,
                noise: Noise::Walk,
                ..TrainConfig::default()
            },
            TrainConfig {
                dim: 24,
                epochs: 2,
                blocks: 12,
                noise: Noise::Pair,
                ..TrainConfig::default()
            },
            TrainConfig {
                dim: 16,
                blocks: 7,
                noise: Noise::Window,
                ..TrainConfig::default()
            },
        ];
        for cfg in &configs {
            let hidden = Progress::hidden();
            let one = train_with(&src, 10, n as usize, cfg, Kernel::Scalar, 1, &hidden).unwrap();
            // The fastest build at every thread count, every other build at two threads.
            let best = Kernel::detect();
            let runs = [1, 2, 3, 8].map(|t| (best, t)).into_iter().chain(
                Kernel::available()
                    .into_iter()
                    .filter(|k| *k != best && *k != Kernel::Scalar)
                    .map(|k| (k, 2)),
            );
            for (kernel, threads) in runs {
                let t = train_with(&src, 10, n as usize, cfg, kernel, threads, &hidden).unwrap();
                assert!(
                    t.vectors
                        .iter()
                        .map(|x| x.to_bits())
                        .eq(one.vectors.iter().map(|x| x.to_bits())),
                    "{} at {threads} threads differs from scalar at 1 ({cfg:?})",
                    kernel.name()
                );
                assert_eq!(t.stats.threads, threads.min(cfg.blocks) as u64);
                assert_eq!(t.stats.blocks, cfg.blocks as u64);
                assert_eq!(
                    (t.stats.pairs, t.stats.batches, t.stats.mean_loss.to_bits()),
                    (
                        one.stats.pairs,
                        one.stats.batches,
                        one.stats.mean_loss.to_bits()
                    )
                );
            }
        }
    }

    /// The stage streams `walks.bin` chunk by chunk; the vectors equal those trained from memory, and a file
    /// whose size does not match its header is refused.
    #[test]
    fn walks_read_from_the_file_train_like_walks_in_memory() {
        let (mut data, len) = two_cliques_walks(4);
        for k in 5..8 {
            data.extend(two_cliques_walks(k).0); // 4 000 walks: four chunks
        }
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("walks.bin");
        let mut bytes = Vec::new();
        crate::stages::embed::walks::write_header(&mut bytes, len, (data.len() / len) as u64)
            .unwrap();
        crate::stages::embed::walks::write_ids(&mut bytes, &data).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let file = WalkFile::open(&path).unwrap();
        assert_eq!((file.length, file.len_ids()), (len, data.len()));
        let cfg = TrainConfig {
            dim: 16,
            ..TrainConfig::default()
        };
        let a = pool(1).install(|| train(&data, len, 20, &cfg, 1, &Progress::hidden()).unwrap());
        let b =
            pool(1).install(|| train_from(&file, len, 20, &cfg, 1, &Progress::hidden()).unwrap());
        assert_eq!(a.vectors, b.vectors);
        assert_eq!(a.stats.words, b.stats.words);
        std::fs::write(&path, &bytes[..bytes.len() - 4]).unwrap();
        let err = WalkFile::open(&path).err().unwrap().to_string();
        assert!(
            err.contains("walks.bin") && err.contains("implies"),
            "{err}"
        );
    }

    #[test]
    fn rejects_out_of_range_ids() {
        let err = train(
            &[0, 5, 1, 2],
            2,
            3,
            &TrainConfig::default(),
            1,
            &Progress::hidden(),
        );
        assert!(err.is_err());
        let err = train(
            &[0, 1, 2],
            2,
            3,
            &TrainConfig::default(),
            1,
            &Progress::hidden(),
        );
        assert!(err.is_err());
    }

    #[test]
    fn padding_and_isolated_nodes_are_fine() {
        let data = vec![0, 1, PAD, 1, 0, PAD, 3, PAD, PAD];
        let t = train(&data, 3, 4, &TrainConfig::default(), 1, &Progress::hidden()).unwrap();
        assert_eq!(t.vectors.shape(), &[4, 128]);
        assert_eq!(t.stats.words, 5);
    }
}
