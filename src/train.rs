//! `sword train`: skip-gram with negative sampling (word2vec SGNS) over node2vec walks.
//!
//! The core, [`train`], is word2vec's skip-gram with negative sampling on sentences of dense `u32` node ids:
//!
//! - **Pairs.** For each kept position `i` of a walk, a reduced window `w` is drawn uniformly from
//!   `1..=window` (word2vec's `b = rand % window`); every other position `j` with `|i − j| ≤ w` gives a pair in
//!   which the *input* vector of the context node `walk[j]` is trained to predict the *output* vector of the
//!   centre node `walk[i]` against `negative` noise nodes.
//! - **Noise.** Drawn from unigram^0.75 of the node counts in the walks, with a Walker/Vose alias table:
//!   O(1) per draw and 8 bytes per node (word2vec's 10⁸-entry table would be 400 MB). A noise node equal to
//!   the centre is skipped, as in word2vec.
//! - **Subsampling.** A node with count `c` in a corpus of `T` tokens is kept with probability
//!   `(sqrt(c / (s·T)) + 1) · s·T / c` (word2vec's and gensim's formula), before windowing. The default
//!   `sample = 1e-3` is word2vec's and gensim's default, so runs compare like with like; `0` turns it off.
//! - **Learning rate.** Linear from `alpha` to `min_alpha` over all epochs, driven by the number of raw tokens
//!   processed so far (a shared counter, refreshed every `LR_REFRESH` tokens), as word2vec and gensim do.
//! - **Initialisation.** Input vectors uniform in (−0.5/dim, 0.5/dim), output vectors zero.
//! - **Gradient.** `g = (label − σ(x·y)) · lr`, with σ computed exactly (`1/(1+e^−x)`) by default; a
//!   precomputed 1000-entry table over (−6, 6) as in word2vec is available (`sigmoid = "table"`). Both were
//!   measured (see BENCHMARKS.md, "Training"); exact costs nothing measurable because each pair is bound by
//!   memory latency, not arithmetic, so exact is the default.
//!
//! **Parallelism (Hogwild).** Walks are cut into fixed chunks of `CHUNK_WALKS` walks; chunk `c` of epoch `e`
//! draws all its random numbers from a ChaCha8 stream seeded by `(seed, e, c)`. Workers take chunks from a
//! shared counter in order and update the two shared matrices without locks. With one thread the chunks run
//! in order on the calling thread and the output is byte-identical for a seed; with more threads the result
//! depends on the interleaving of updates (the usual Hogwild trade-off) and is only equal within tolerance.
//!
//! **Speed.** No allocation per pair or per walk (buffers reused per worker), dot products and `axpy` over
//! chunks of 8 `f32` that the compiler turns into SIMD, and the rows of the next pairs (context input row,
//! centre and noise output rows) are prefetched `PREFETCH_AHEAD` pairs in advance so several cache misses are
//! in flight at once — that is where the time goes.

use crate::artifact::{self, Manifest};
use crate::embeddings::Embeddings;
use crate::error::{Error, Result};
use crate::progress::{Progress, Unit};
use ndarray::Array2;
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use std::cell::UnsafeCell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

/// Walks per work chunk (one RNG stream each). Fixed, so the random draws do not depend on the thread count.
pub const CHUNK_WALKS: usize = 1024;
/// Tokens a worker processes between refreshes of the learning rate and the progress counter.
pub const LR_REFRESH: u64 = 10_000;
/// How many pairs ahead the rows are prefetched.
pub const PREFETCH_AHEAD: usize = 3;
/// Padding id in walks (walks shorter than the walk length, e.g. from isolated nodes).
pub const PAD: u32 = crate::walks::PAD;

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

/// Training configuration (`--config FILE` TOML keys have the same names).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TrainConfig {
    /// Embedding dimension; typical 64–300, SWORD uses 128.
    pub dim: usize,
    /// Maximum context window (positions on each side); the window actually used at a position is drawn from
    /// 1..=window. Typical 5 (node2vec paper: 10).
    pub window: usize,
    /// Noise (negative) samples per pair; typical 5–15 (word2vec: 5).
    pub negative: usize,
    /// Passes over the walks; typical 1 for node2vec (many walks per node), 5 for text.
    pub epochs: usize,
    /// Initial learning rate; typical 0.025 (word2vec skip-gram).
    pub alpha: f32,
    /// Final learning rate at the end of the last epoch; typical 0.0001.
    pub min_alpha: f32,
    /// Frequent-node subsampling threshold `s` (fraction of tokens); 0 = off, typical 1e-3 (word2vec and
    /// gensim default), 1e-5 for very large corpora.
    pub sample: f64,
    /// Seed of every random draw (initialisation, windows, noise, subsampling).
    pub seed: u64,
    /// σ evaluation: `exact` (default) or `table`.
    pub sigmoid: Sigmoid,
    /// Input vectors start uniform in (−init/dim, init/dim): 0.5 is word2vec's C tool, 1.0 is gensim ≥ 4's.
    /// Typical 0.5–1.0 (default 1.0: measured better link prediction, see BENCHMARKS.md "Training").
    pub init: f32,
    /// Prefetch distance in pairs: the rows of pair `k + prefetch` are requested while pair `k` is trained;
    /// 0 = off. Typical 2–4 (default 3). Does not change results.
    pub prefetch: usize,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            dim: 128,
            window: 5,
            negative: 5,
            epochs: 1,
            alpha: 0.025,
            min_alpha: 0.0001,
            sample: 1e-3,
            seed: 42,
            sigmoid: Sigmoid::Exact,
            prefetch: PREFETCH_AHEAD,
            init: 1.0,
        }
    }
}

impl TrainConfig {
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
        if !(self.sample >= 0.0 && self.sample.is_finite()) {
            return bad("sample must be ≥ 0");
        }
        Ok(())
    }
}

/// Counts and figures of one training run.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct TrainStats {
    /// Raw tokens (non-padding ids) over all epochs.
    pub words: u64,
    /// Tokens kept after subsampling, over all epochs.
    pub kept_words: u64,
    /// (context, centre) pairs trained.
    pub pairs: u64,
    /// Mean negative-sampling loss per pair, on every 16th pair, over the run.
    pub mean_loss: f64,
    /// Nodes that occur in the walks.
    pub vocab: u64,
    /// Seconds spent in the SGD loop.
    pub seconds: f64,
    /// Raw tokens per second of the SGD loop.
    pub words_per_sec: f64,
    /// Worker threads used.
    pub threads: u64,
}

// ---------------------------------------------------------------------------------------------------------
// Alias sampler

/// Walker/Vose alias table: O(1) draws from a discrete distribution with one 64-bit random number.
#[derive(Clone, Debug)]
pub struct AliasTable {
    /// Per slot: acceptance threshold (probability × 2³², saturated) and alias.
    slots: Vec<(u32, u32)>,
}

impl AliasTable {
    /// Table for weights proportional to `weights` (non-negative, not all zero).
    pub fn new(weights: &[f64]) -> Option<AliasTable> {
        let n = weights.len();
        let total: f64 = weights.iter().sum();
        if n == 0 || n > u32::MAX as usize || total.is_nan() || total <= 0.0 || total.is_infinite()
        {
            return None;
        }
        let mut prob: Vec<f64> = weights.iter().map(|w| w * n as f64 / total).collect();
        let mut alias: Vec<u32> = (0..n as u32).collect();
        let (mut small, mut large): (Vec<u32>, Vec<u32>) = (Vec::new(), Vec::new());
        for (i, p) in prob.iter().enumerate() {
            if *p < 1.0 {
                small.push(i as u32);
            } else {
                large.push(i as u32);
            }
        }
        while let (Some(&s), Some(&l)) = (small.last(), large.last()) {
            small.pop();
            alias[s as usize] = l;
            prob[l as usize] -= 1.0 - prob[s as usize];
            if prob[l as usize] < 1.0 {
                large.pop();
                small.push(l);
            }
        }
        // Whatever is left has probability 1 up to rounding.
        for i in small.into_iter().chain(large) {
            prob[i as usize] = 1.0;
            alias[i as usize] = i;
        }
        let slots = prob
            .iter()
            .zip(&alias)
            .map(|(p, a)| {
                let t = (p * 4294967296.0).min(u32::MAX as f64) as u32;
                // Probability 1: point the alias at the slot itself so a draw above the threshold is exact.
                (
                    t,
                    if *p >= 1.0 {
                        alias[*a as usize].min(*a)
                    } else {
                        *a
                    },
                )
            })
            .collect();
        Some(AliasTable { slots })
    }

    /// Number of outcomes.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when empty (never, for a constructed table).
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// One draw from a 64-bit uniform random number: the low 32 bits pick the slot (multiply-shift), the high
    /// 32 bits decide between the slot and its alias.
    #[inline(always)]
    pub fn sample(&self, r: u64) -> u32 {
        let n = self.slots.len() as u64;
        let i = (((r & 0xffff_ffff) * n) >> 32) as usize;
        // `i < n` by construction of the multiply-shift.
        let (t, a) = self.slots[i];
        if ((r >> 32) as u32) < t {
            i as u32
        } else {
            a
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Shared Hogwild storage

/// A flat `f32` buffer that several worker threads read and write without synchronisation (Hogwild).
///
/// Safety argument. Each access goes through a raw pointer to one row, bounds-checked against `len`; rows
/// never move or get freed while workers run (the buffer outlives the scoped workers, and is only turned back
/// into a `Vec` after they have joined). Concurrent updates to the same row from two threads are a data race
/// in the Rust memory model: this is the deliberate Hogwild compromise that word2vec, gensim and
/// finalfrontier make. On the targets we build for, aligned `f32` loads and stores are single instructions
/// that cannot tear, so a racing update is at worst lost or applied to a slightly stale value — the SGD noise
/// Hogwild's analysis tolerates (updates are sparse: two random rows of a large matrix rarely collide). No
/// pointer to a row is kept across pairs, and within one thread the input row (matrix `syn0`) and the output
/// row (matrix `syn1`) always live in different buffers, so no `&mut` aliases another live reference on the
/// same thread. With one thread there is no concurrent access at all and results are exact.
struct Shared {
    cell: UnsafeCell<Vec<f32>>,
    ptr: *mut f32,
    len: usize,
}

// SAFETY: see the type's documentation; access is raw-pointer based and races are the Hogwild trade-off.
unsafe impl Sync for Shared {}
// SAFETY: the buffer is an owned Vec.
unsafe impl Send for Shared {}

impl Shared {
    fn new(mut v: Vec<f32>) -> Shared {
        let ptr = v.as_mut_ptr();
        let len = v.len();
        Shared {
            cell: UnsafeCell::new(v),
            ptr,
            len,
        }
    }

    /// Row `i` of width `dim` as a mutable slice, valid for the current pair only.
    ///
    /// # Safety
    /// The caller must not hold another reference to the same row on this thread, and must drop the slice
    /// before the buffer is consumed (see the type's safety argument for other threads).
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    unsafe fn row(&self, i: usize, dim: usize) -> &mut [f32] {
        let start = i * dim;
        assert!(start + dim <= self.len, "row {i} out of bounds");
        // SAFETY: in bounds (checked above); lifetime and aliasing rules are the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(start), dim) }
    }

    #[inline(always)]
    fn prefetch_row(&self, i: usize, dim: usize) {
        let start = i * dim;
        if start + dim > self.len {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        {
            let mut off = 0;
            while off < dim {
                // SAFETY: the address is inside the buffer (checked above); prefetch never faults anyway.
                #[allow(unused_unsafe)]
                unsafe {
                    use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                    _mm_prefetch::<_MM_HINT_T0>(self.ptr.add(start + off) as *const i8);
                }
                off += 16;
            }
        }
    }

    fn into_inner(self) -> Vec<f32> {
        self.cell.into_inner()
    }
}

// ---------------------------------------------------------------------------------------------------------
// Kernels

/// Dot product over chunks of 8 lanes (vectorised by the compiler), tail handled separately.
#[inline(always)]
pub fn dot(a: &[f32], b: &[f32]) -> f32 {
    let n = a.len().min(b.len());
    let (a, b) = (&a[..n], &b[..n]);
    let mut acc = [0f32; 8];
    let ca = a.chunks_exact(8);
    let cb = b.chunks_exact(8);
    let (ra, rb) = (ca.remainder(), cb.remainder());
    for (x, y) in ca.zip(cb) {
        for k in 0..8 {
            acc[k] += x[k] * y[k];
        }
    }
    let mut s = ((acc[0] + acc[4]) + (acc[1] + acc[5])) + ((acc[2] + acc[6]) + (acc[3] + acc[7]));
    for (x, y) in ra.iter().zip(rb) {
        s += x * y;
    }
    s
}

/// `y += a · x` over chunks of 8 lanes.
#[inline(always)]
pub fn axpy(a: f32, x: &[f32], y: &mut [f32]) {
    let n = x.len().min(y.len());
    let (x, y) = (&x[..n], &mut y[..n]);
    let mut cy = y.chunks_exact_mut(8);
    let cx = x.chunks_exact(8);
    let rx = cx.remainder();
    for (yy, xx) in (&mut cy).zip(cx) {
        for k in 0..8 {
            yy[k] += a * xx[k];
        }
    }
    for (yy, xx) in cy.into_remainder().iter_mut().zip(rx) {
        *yy += a * xx;
    }
}

const MAX_EXP: f32 = 6.0;
const EXP_TABLE_SIZE: usize = 1000;

/// word2vec's σ table over (−MAX_EXP, MAX_EXP).
fn sigmoid_table() -> Vec<f32> {
    (0..EXP_TABLE_SIZE)
        .map(|i| {
            let x = (i as f32 / EXP_TABLE_SIZE as f32 * 2.0 - 1.0) * MAX_EXP;
            let e = x.exp();
            e / (e + 1.0)
        })
        .collect()
}

#[inline(always)]
fn sigmoid(x: f32, kind: Sigmoid, table: &[f32]) -> f32 {
    match kind {
        Sigmoid::Exact => 1.0 / (1.0 + (-x).exp()),
        Sigmoid::Table => {
            if x >= MAX_EXP {
                1.0
            } else if x <= -MAX_EXP {
                0.0
            } else {
                let i = ((x + MAX_EXP) * (EXP_TABLE_SIZE as f32 / MAX_EXP / 2.0)) as usize;
                table[i.min(EXP_TABLE_SIZE - 1)]
            }
        }
    }
}

/// One skip-gram negative-sampling update: input row `ctx` (of `syn0`) predicts output row `centre` (of
/// `syn1`) against the noise rows `negs`; `neu1e` is the caller's reusable gradient buffer of length `dim`.
/// Returns the pair's loss `−ln σ(x·y₊) − Σ ln σ(−x·y₋)` when `want_loss`, else 0.
///
/// Public for the criterion bench; `syn0`/`syn1` are row-major `n × dim`.
#[allow(clippy::too_many_arguments)]
#[inline]
pub fn sgns_update(
    syn0: &mut [f32],
    syn1: &mut [f32],
    dim: usize,
    ctx: u32,
    centre: u32,
    negs: &[u32],
    lr: f32,
    neu1e: &mut [f32],
    want_loss: bool,
) -> f32 {
    let l1 = &mut syn0[ctx as usize * dim..(ctx as usize + 1) * dim];
    let mut loss = 0.0;
    neu1e.fill(0.0);
    for (d, &target) in std::iter::once(&centre).chain(negs).enumerate() {
        if d > 0 && target == centre {
            continue;
        }
        let label = if d == 0 { 1.0 } else { 0.0 };
        let l2 = &mut syn1[target as usize * dim..(target as usize + 1) * dim];
        let f = dot(l1, l2);
        let s = 1.0 / (1.0 + (-f).exp());
        if want_loss {
            loss -= if d == 0 { s } else { 1.0 - s }.max(1e-7).ln();
        }
        let g = (label - s) * lr;
        axpy(g, l2, neu1e);
        axpy(g, l1, l2);
    }
    axpy(1.0, neu1e, l1);
    loss
}

// ---------------------------------------------------------------------------------------------------------
// Training

/// Trained vectors: row `i` is node `i` (nodes that never occur in the walks keep their random init).
pub struct Trained {
    /// Input vectors, `n_nodes × dim` (the embeddings).
    pub vectors: Array2<f32>,
    /// Counts and timings.
    pub stats: TrainStats,
}

fn chunk_rng(seed: u64, stream: u64, index: u64) -> ChaCha8Rng {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8..16].copy_from_slice(&stream.to_le_bytes());
    s[16..24].copy_from_slice(&index.to_le_bytes());
    s[24..].copy_from_slice(b"swordsgn");
    ChaCha8Rng::from_seed(s)
}

/// Stream ids of `chunk_rng`: initialisation blocks, then epoch `e` as `EPOCH_STREAM + e`.
const INIT_STREAM: u64 = 0;
const EPOCH_STREAM: u64 = 1;
const INIT_BLOCK_ROWS: usize = 4096;

/// Per-worker reusable buffers.
/// Where training reads its walks from: memory (`[u32]`), or `walks.bin` one chunk at a time ([`WalkFile`]),
/// so that the walks (40 bytes per walk of 10 nodes: 400 MB for a million nodes × 10 walks) never sit in memory
/// beside the two embedding matrices.
pub trait WalkSource: Sync {
    /// Number of ids (walks × walk length).
    fn len_ids(&self) -> usize;
    /// Fill `out` with the ids starting at id `from`.
    fn read_ids(&self, from: usize, out: &mut [u32]) -> Result<()>;
}

impl WalkSource for &[u32] {
    fn len_ids(&self) -> usize {
        self.len()
    }
    fn read_ids(&self, from: usize, out: &mut [u32]) -> Result<()> {
        out.copy_from_slice(&self[from..from + out.len()]);
        Ok(())
    }
}

/// `walks.bin` read chunk by chunk (header and size checked when opened).
pub struct WalkFile {
    file: std::sync::Mutex<std::fs::File>,
    path: PathBuf,
    /// Nodes per walk.
    pub length: usize,
    n_ids: usize,
}

impl WalkFile {
    /// Open `path` and check its header and that its size matches it.
    pub fn open(path: &Path) -> Result<WalkFile> {
        let mut file = std::fs::File::open(path).map_err(|e| Error::io(path, e))?;
        let h = crate::walks::WalkHeader::read(&mut file, path)?;
        let size = file.metadata().map_err(|e| Error::io(path, e))?.len();
        let id_bytes = size.saturating_sub(crate::walks::WALKS_HEADER_LEN as u64);
        let n_ids = h.check_id_bytes(id_bytes, path)?;
        let n_ids = usize::try_from(n_ids).map_err(|_| Error::Corrupt {
            path: path.to_path_buf(),
            what: format!("{n_ids} ids do not fit in memory addresses"),
        })?;
        Ok(WalkFile {
            file: std::sync::Mutex::new(file),
            path: path.to_path_buf(),
            length: h.length as usize,
            n_ids,
        })
    }
}

impl WalkSource for WalkFile {
    fn len_ids(&self) -> usize {
        self.n_ids
    }
    fn read_ids(&self, from: usize, out: &mut [u32]) -> Result<()> {
        use std::io::{Read, Seek, SeekFrom};
        let mut bytes = vec![0u8; out.len() * 4];
        {
            let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
            let at = (crate::walks::WALKS_HEADER_LEN + from * 4) as u64;
            f.seek(SeekFrom::Start(at))
                .and_then(|_| f.read_exact(&mut bytes))
                .map_err(|e| Error::io(&self.path, e))?;
        }
        for (o, c) in out.iter_mut().zip(bytes.chunks_exact(4)) {
            *o = u32::from_le_bytes([c[0], c[1], c[2], c[3]]);
        }
        Ok(())
    }
}

struct Worker {
    /// The ids of the chunk being trained.
    chunk: Vec<u32>,
    sentence: Vec<u32>,
    pairs: Vec<(u32, u32)>,
    negs: Vec<u32>,
    neu1e: Vec<f32>,
    loss: f64,
    loss_n: u64,
    pairs_done: u64,
    kept: u64,
    pending_words: u64,
}

struct Ctx<'a> {
    data: &'a dyn WalkSource,
    /// The first error of a chunk read (training stops taking chunks and returns it).
    error: &'a std::sync::Mutex<Option<Error>>,
    walk_len: usize,
    dim: usize,
    cfg: &'a TrainConfig,
    alias: &'a AliasTable,
    keep: &'a [u64],
    table: &'a [f32],
    syn0: &'a Shared,
    syn1: &'a Shared,
    done: &'a AtomicU64,
    total_words: u64,
    progress: &'a Progress,
}

impl Ctx<'_> {
    fn lr(&self) -> f32 {
        let done = self.done.load(Ordering::Relaxed) as f64;
        let frac = (done / (self.total_words.max(1) as f64)).min(1.0);
        let a = self.cfg.alpha as f64 - (self.cfg.alpha - self.cfg.min_alpha) as f64 * frac;
        (a as f32).max(self.cfg.min_alpha)
    }

    fn flush(&self, w: &mut Worker, lr: f32) {
        if w.pending_words > 0 {
            self.done.fetch_add(w.pending_words, Ordering::Relaxed);
            self.progress.inc(w.pending_words);
            w.pending_words = 0;
        }
        if w.loss_n > 0 {
            self.progress
                .set_message(format!("lr {lr:.5} loss {:.4}", w.loss / w.loss_n as f64));
        }
    }

    /// Train on chunk `c` of epoch `epoch`: the AVX2 build of the loop when the CPU has it (same lanes and
    /// summation order as the baseline build, so the numbers are identical), else the baseline SSE2 build.
    fn chunk(&self, w: &mut Worker, epoch: usize, c: usize) {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2 (checked just above).
            unsafe { self.chunk_avx2(w, epoch, c) };
            return;
        }
        self.chunk_body(w, epoch, c)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn chunk_avx2(&self, w: &mut Worker, epoch: usize, c: usize) {
        self.chunk_body(w, epoch, c)
    }

    #[inline(always)]
    fn chunk_body(&self, w: &mut Worker, epoch: usize, c: usize) {
        let mut rng = chunk_rng(self.cfg.seed, EPOCH_STREAM + epoch as u64, c as u64);
        let n_walks = self.data.len_ids() / self.walk_len.max(1);
        let first = c * CHUNK_WALKS;
        let last = (first + CHUNK_WALKS).min(n_walks);
        let mut chunk = std::mem::take(&mut w.chunk);
        chunk.resize((last - first) * self.walk_len, 0);
        if let Err(e) = self.data.read_ids(first * self.walk_len, &mut chunk) {
            self.error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(e);
            w.chunk = chunk;
            return;
        }
        let dim = self.dim;
        let neg = self.cfg.negative;
        let window = self.cfg.window as u64;
        let subsample = self.cfg.sample > 0.0;
        let mut lr = self.lr();
        let mut since_refresh = 0u64;
        for walk in chunk.chunks_exact(self.walk_len.max(1)) {
            // 1. Sentence: drop padding, subsample.
            w.sentence.clear();
            let mut raw = 0u64;
            for &id in walk {
                if id == PAD {
                    continue;
                }
                raw += 1;
                if subsample {
                    let r = rng.next_u32() as u64;
                    if r >= self.keep[id as usize] {
                        continue;
                    }
                }
                w.sentence.push(id);
            }
            w.kept += w.sentence.len() as u64;
            // 2. Pairs with reduced windows, and their noise nodes, drawn in a fixed order.
            w.pairs.clear();
            w.negs.clear();
            let s = &w.sentence;
            for i in 0..s.len() {
                let b = (((rng.next_u32() as u64) * window) >> 32) as usize;
                let win = self.cfg.window - b;
                let lo = i.saturating_sub(win);
                let hi = (i + win).min(s.len() - 1);
                for j in lo..=hi {
                    if j != i {
                        w.pairs.push((s[j], s[i]));
                    }
                }
            }
            for _ in 0..w.pairs.len() * neg {
                w.negs.push(self.alias.sample(rng.next_u64()));
            }
            // 3. Updates, prefetching the rows of pair k + prefetch.
            let ahead = self.cfg.prefetch;
            for k in 0..w.pairs.len() {
                if let Some(&(pc, pt)) = w.pairs.get(k + ahead).filter(|_| ahead > 0) {
                    self.syn0.prefetch_row(pc as usize, dim);
                    self.syn1.prefetch_row(pt as usize, dim);
                    let base = (k + ahead) * neg;
                    for &n in &w.negs[base..base + neg] {
                        self.syn1.prefetch_row(n as usize, dim);
                    }
                }
                let (ctx, centre) = w.pairs[k];
                let want_loss = w.pairs_done & 15 == 0;
                let negs = &w.negs[k * neg..(k + 1) * neg];
                // SAFETY: `ctx` indexes syn0 and every target indexes syn1, two distinct buffers; each row
                // slice lives only for this pair; concurrent access by other workers is the documented Hogwild
                // race (see `Shared`).
                let l1 = unsafe { self.syn0.row(ctx as usize, dim) };
                w.neu1e.fill(0.0);
                let mut loss = 0f32;
                for d in 0..=neg {
                    let (target, label) = if d == 0 {
                        (centre, 1.0f32)
                    } else {
                        let t = negs[d - 1];
                        if t == centre {
                            continue;
                        }
                        (t, 0.0f32)
                    };
                    // SAFETY: as above.
                    let l2 = unsafe { self.syn1.row(target as usize, dim) };
                    let f = dot(l1, l2);
                    let sg = sigmoid(f, self.cfg.sigmoid, self.table);
                    if want_loss {
                        let p = if d == 0 { sg } else { 1.0 - sg };
                        loss -= p.max(1e-7).ln();
                    }
                    let g = (label - sg) * lr;
                    axpy(g, l2, &mut w.neu1e);
                    axpy(g, l1, l2);
                }
                axpy(1.0, &w.neu1e, l1);
                if want_loss {
                    w.loss += loss as f64;
                    w.loss_n += 1;
                }
                w.pairs_done += 1;
            }
            w.pending_words += raw;
            since_refresh += raw;
            if since_refresh >= LR_REFRESH {
                since_refresh = 0;
                self.flush(w, lr);
                lr = self.lr();
            }
        }
        self.flush(w, lr);
        w.chunk = chunk;
    }
}

/// Train skip-gram with negative sampling on walks (`data` = `num_walks × walk_len` ids, [`PAD`] = padding)
/// over `n_nodes` nodes. Runs on the current rayon pool: one thread gives byte-identical output for a seed.
pub fn train(
    data: &[u32],
    walk_len: usize,
    n_nodes: usize,
    cfg: &TrainConfig,
    progress: &Progress,
) -> Result<Trained> {
    train_from(&data, walk_len, n_nodes, cfg, progress)
}

/// [`train`] reading the walks from any [`WalkSource`] (`walks.bin` chunk by chunk in the train stage). The
/// same walks give the same vectors whatever the source.
pub fn train_from(
    data: &dyn WalkSource,
    walk_len: usize,
    n_nodes: usize,
    cfg: &TrainConfig,
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
    // Counts, reading the walks a block at a time.
    let mut counts = vec![0u64; n_nodes];
    let mut words = 0u64;
    let mut block = vec![0u32; (1 << 20).min(n_ids)];
    let mut from = 0;
    while from < n_ids {
        let n = block.len().min(n_ids - from);
        data.read_ids(from, &mut block[..n])?;
        for (k, &id) in block[..n].iter().enumerate() {
            if id == PAD {
                continue;
            }
            match counts.get_mut(id as usize) {
                Some(c) => *c += 1,
                None => {
                    return Err(Error::Config(format!(
                        "train: walk {} holds node id {id}, but there are only {n_nodes} nodes",
                        (from + k) / walk_len.max(1)
                    )))
                }
            }
            words += 1;
        }
        from += n;
    }
    drop(block);
    let vocab = counts.iter().filter(|c| **c > 0).count() as u64;
    // Initialisation: input uniform (−0.5/dim, 0.5/dim), output zero; blocks of rows seeded independently.
    let mut syn0 = vec![0f32; n_nodes * dim];
    {
        use rayon::prelude::*;
        syn0.par_chunks_mut(INIT_BLOCK_ROWS * dim.max(1))
            .enumerate()
            .for_each(|(b, block)| {
                let mut rng = chunk_rng(cfg.seed, INIT_STREAM, b as u64);
                for x in block.iter_mut() {
                    let u = (rng.next_u32() >> 8) as f32 / (1u32 << 24) as f32;
                    *x = (2.0 * u - 1.0) * cfg.init / dim as f32;
                }
            });
    }
    let syn1 = vec![0f32; n_nodes * dim];
    let mut stats = TrainStats {
        vocab,
        threads: rayon::current_num_threads() as u64,
        ..TrainStats::default()
    };
    if words == 0 {
        let vectors = Array2::from_shape_vec((n_nodes, dim), syn0)
            .map_err(|e| Error::Config(e.to_string()))?;
        return Ok(Trained { vectors, stats });
    }
    // Noise distribution and subsampling thresholds.
    let weights: Vec<f64> = counts.iter().map(|&c| (c as f64).powf(0.75)).collect();
    let alias = AliasTable::new(&weights)
        .ok_or_else(|| Error::Config("train: no node occurs in the walks".into()))?;
    let keep: Vec<u64> = counts
        .iter()
        .map(|&c| {
            if cfg.sample <= 0.0 || c == 0 {
                return 1u64 << 32;
            }
            let st = cfg.sample * words as f64;
            let p = ((c as f64 / st).sqrt() + 1.0) * st / c as f64;
            (p.min(1.0) * 4294967296.0) as u64
        })
        .collect();
    let table = sigmoid_table();
    let syn0 = Shared::new(syn0);
    let syn1 = Shared::new(syn1);
    let done = AtomicU64::new(0);
    let total_words = words * cfg.epochs as u64;
    let error = std::sync::Mutex::new(None);
    let ctx = Ctx {
        data,
        error: &error,
        walk_len,
        dim,
        cfg,
        alias: &alias,
        keep: &keep,
        table: &table,
        syn0: &syn0,
        syn1: &syn1,
        done: &done,
        total_words,
        progress,
    };
    let n_walks = n_ids / walk_len;
    let n_chunks = n_walks.div_ceil(CHUNK_WALKS);
    let new_worker = || Worker {
        chunk: Vec::with_capacity(CHUNK_WALKS * walk_len),
        sentence: Vec::with_capacity(walk_len),
        pairs: Vec::with_capacity(walk_len * 2 * cfg.window),
        negs: Vec::with_capacity(walk_len * 2 * cfg.window * cfg.negative),
        neu1e: vec![0f32; dim],
        loss: 0.0,
        loss_n: 0,
        pairs_done: 0,
        kept: 0,
        pending_words: 0,
    };
    let threads = rayon::current_num_threads().max(1);
    let start = Instant::now();
    let mut finished: Vec<Worker> = Vec::new();
    for epoch in 0..cfg.epochs {
        if threads == 1 {
            let mut w = new_worker();
            for c in 0..n_chunks {
                ctx.chunk(&mut w, epoch, c);
            }
            finished.push(w);
        } else {
            let next = AtomicUsize::new(0);
            let (tx, rx) = std::sync::mpsc::channel();
            rayon::scope(|s| {
                for _ in 0..threads {
                    let tx = tx.clone();
                    let (ctx, next) = (&ctx, &next);
                    let mut w = new_worker();
                    s.spawn(move |_| {
                        loop {
                            let c = next.fetch_add(1, Ordering::Relaxed);
                            if c >= n_chunks {
                                break;
                            }
                            ctx.chunk(&mut w, epoch, c);
                        }
                        let _ = tx.send(w);
                    });
                }
            });
            drop(tx);
            finished.extend(rx.iter());
        }
    }
    if let Some(e) = error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let seconds = start.elapsed().as_secs_f64();
    let (mut loss, mut loss_n) = (0f64, 0u64);
    for w in &finished {
        stats.pairs += w.pairs_done;
        stats.kept_words += w.kept;
        loss += w.loss;
        loss_n += w.loss_n;
    }
    stats.words = total_words;
    stats.mean_loss = if loss_n > 0 {
        loss / loss_n as f64
    } else {
        0.0
    };
    stats.seconds = seconds;
    stats.words_per_sec = total_words as f64 / seconds.max(1e-9);
    drop(syn1);
    let vectors = Array2::from_shape_vec((n_nodes, dim), syn0.into_inner())
        .map_err(|e| Error::Config(e.to_string()))?;
    Ok(Trained { vectors, stats })
}

// ---------------------------------------------------------------------------------------------------------
// Stage

/// Train on `DIR/walks.bin` and write `DIR/embeddings.npy`, `DIR/embeddings.w2v` (keyed by `DIR/nodes.txt`)
/// and `DIR/train.manifest.json`.
pub fn run(dir: &Path, cfg: &TrainConfig) -> Result<Manifest> {
    run_with(dir, cfg, false)
}

/// [`run`] with `force` (accept inputs whose manifests do not vouch for them).
pub fn run_with(dir: &Path, cfg: &TrainConfig, force: bool) -> Result<Manifest> {
    cfg.validate()?;
    let _lock = artifact::DirLock::stage(dir, "train")?;
    let t0 = Instant::now();
    let walks_ref = artifact::check_input(dir, "walks", "walks.bin", force)?;
    let nodes_ref = artifact::check_input(dir, "graph", "nodes.txt", force)?;
    // Streamed chunk by chunk: the walks never sit in memory beside the two matrices.
    let walks = WalkFile::open(&dir.join("walks.bin"))?;
    let walk_len = walks.length;
    let keys = crate::graph::read_nodes(&dir.join("nodes.txt"))?;
    let t_read = t0.elapsed().as_secs_f64();
    // Progress total: ids × epochs (padding, rare, is counted too: an upper bound).
    let n_words = walks.len_ids() as u64 * cfg.epochs as u64;
    let progress = Progress::new("train", Some(n_words), Unit::Items("words"));
    let trained = train_from(&walks, walk_len, keys.len(), cfg, &progress)?;
    progress.finish();
    drop(walks);
    let t1 = Instant::now();
    let emb = Embeddings::new(keys, trained.vectors)
        .map_err(|e| Error::bad_input(dir.join("nodes.txt"), e.to_string()))?;
    artifact::write_atomic(dir.join("embeddings.npy"), |w| emb.write_npy(w))?;
    artifact::write_atomic(dir.join("embeddings.w2v"), |w| emb.write_w2v(w))?;
    let t_write = t1.elapsed().as_secs_f64();
    let mut m = Manifest::new("train");
    m.config = serde_json::to_value(cfg).unwrap_or_default();
    m.seed = Some(cfg.seed);
    m.inputs = vec![walks_ref, nodes_ref];
    m.add_outputs(dir, &["embeddings.npy", "embeddings.w2v"])?;
    let s = &trained.stats;
    m.counts.insert("nodes".into(), emb.len() as u64);
    m.counts.insert("vocab".into(), s.vocab);
    m.counts.insert("words".into(), s.words);
    m.counts.insert("kept_words".into(), s.kept_words);
    m.counts.insert("pairs".into(), s.pairs);
    m.counts.insert("threads".into(), s.threads);
    m.timings.insert("read".into(), t_read);
    m.timings.insert("train".into(), s.seconds);
    m.timings.insert("write".into(), t_write);
    m.extra = serde_json::json!({
        "words_per_sec": s.words_per_sec,
        "mean_loss": s.mean_loss,
    });
    m.write(dir)?;
    Ok(m)
}

/// Command-line arguments.
#[derive(clap::Args, Debug, Default)]
pub struct Args {
    /// Run directory: reads walks.bin and nodes.txt, writes embeddings.npy, embeddings.w2v.
    #[arg(long)]
    pub out: PathBuf,
    /// TOML file with `TrainConfig` keys; flags override it.
    #[arg(long)]
    pub config: Option<PathBuf>,
    #[command(flatten)]
    pub opts: TrainOpts,
    /// Accept inputs whose manifests are missing or do not match.
    #[arg(long)]
    pub force: bool,
}

/// Training flags shared by `sword train` and `sword embed`.
#[derive(clap::Args, Debug, Default, Clone)]
pub struct TrainOpts {
    /// Embedding dimension [default 128].
    #[arg(long)]
    pub dim: Option<usize>,
    /// Maximum context window [default 5].
    #[arg(long)]
    pub window: Option<usize>,
    /// Negative samples per pair [default 5].
    #[arg(long)]
    pub negative: Option<usize>,
    /// Epochs [default 1].
    #[arg(long)]
    pub epochs: Option<usize>,
    /// Initial learning rate [default 0.025].
    #[arg(long)]
    pub alpha: Option<f32>,
    /// Final learning rate [default 0.0001].
    #[arg(long)]
    pub min_alpha: Option<f32>,
    /// Subsampling threshold, 0 = off [default 1e-3].
    #[arg(long)]
    pub sample: Option<f64>,
    /// Initial input-vector half-width × dim [default 1.0 as gensim; word2vec uses 0.5].
    #[arg(long)]
    pub init: Option<f32>,
    /// σ: exact or table [default exact].
    #[arg(long, value_enum)]
    pub sigmoid: Option<Sigmoid>,
    /// Seed [default 42].
    #[arg(long)]
    pub seed: Option<u64>,
}

impl TrainOpts {
    /// Apply the flags that were given onto `cfg`.
    pub fn apply(&self, cfg: &mut TrainConfig) {
        if let Some(v) = self.dim {
            cfg.dim = v;
        }
        if let Some(v) = self.window {
            cfg.window = v;
        }
        if let Some(v) = self.negative {
            cfg.negative = v;
        }
        if let Some(v) = self.epochs {
            cfg.epochs = v;
        }
        if let Some(v) = self.alpha {
            cfg.alpha = v;
        }
        if let Some(v) = self.min_alpha {
            cfg.min_alpha = v;
        }
        if let Some(v) = self.sample {
            cfg.sample = v;
        }
        if let Some(v) = self.init {
            cfg.init = v;
        }
        if let Some(v) = self.sigmoid {
            cfg.sigmoid = v;
        }
        if let Some(v) = self.seed {
            cfg.seed = v;
        }
    }
}

/// Entry point from the binary.
pub fn cli(args: Args) -> Result<()> {
    let mut cfg: TrainConfig = crate::config::load(args.config.as_deref())?;
    args.opts.apply(&mut cfg);
    let m = run_with(&args.out, &cfg, args.force)?;
    crate::progress::log(format!(
        "train: {} nodes, {} words, {:.0} words/s, mean loss {:.4}",
        m.counts.get("nodes").copied().unwrap_or(0),
        m.counts.get("words").copied().unwrap_or(0),
        m.extra["words_per_sec"].as_f64().unwrap_or(0.0),
        m.extra["mean_loss"].as_f64().unwrap_or(0.0),
    ));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernels_match_naive() {
        let a: Vec<f32> = (0..19).map(|i| i as f32 * 0.5 - 3.0).collect();
        let b: Vec<f32> = (0..19).map(|i| 1.0 - i as f32 * 0.25).collect();
        let naive: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
        assert!((dot(&a, &b) - naive).abs() < 1e-4);
        let mut y = b.clone();
        axpy(2.0, &a, &mut y);
        for i in 0..19 {
            assert_eq!(y[i], b[i] + 2.0 * a[i]);
        }
    }

    #[test]
    fn sigmoid_table_close_to_exact() {
        let t = sigmoid_table();
        for i in -70..70 {
            let x = i as f32 / 10.0;
            let d = sigmoid(x, Sigmoid::Table, &t) - sigmoid(x, Sigmoid::Exact, &t);
            assert!(d.abs() < 0.01, "{x}: {d}");
        }
    }

    #[test]
    fn alias_matches_unigram_075_chi_square() {
        let counts = [1u64, 2, 5, 10, 50, 100, 1000, 0, 3, 7000];
        let w: Vec<f64> = counts.iter().map(|&c| (c as f64).powf(0.75)).collect();
        let t = AliasTable::new(&w).unwrap();
        let total: f64 = w.iter().sum();
        let mut rng = chunk_rng(7, 99, 0);
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
        let mut rng = chunk_rng(1, 2, 3);
        for _ in 0..1000 {
            assert_eq!(t.sample(rng.next_u64()), 1);
        }
        assert!(AliasTable::new(&[]).is_none());
        assert!(AliasTable::new(&[0.0, 0.0]).is_none());
        assert_eq!(t.sample(u64::MAX), 1);
        assert_eq!(t.sample(0), 1);
    }

    #[test]
    fn sgns_update_by_hand() {
        // dim 2, one context row, centre row starts at zero: σ(0) = 0.5, g = 0.5·lr.
        let mut syn0 = vec![1.0f32, 2.0, 0.0, 0.0];
        let mut syn1 = vec![0.0f32; 4];
        let mut neu = vec![0f32; 2];
        let loss = sgns_update(&mut syn0, &mut syn1, 2, 0, 1, &[], 0.1, &mut neu, true);
        assert!((loss - std::f32::consts::LN_2).abs() < 1e-6);
        // syn1[1] += 0.05 · (1, 2); syn0[0] unchanged because syn1[1] was zero when neu1e was formed.
        assert_eq!(&syn1[2..], &[0.05, 0.1]);
        assert_eq!(&syn0[..2], &[1.0, 2.0]);
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
        let mut rng = chunk_rng(seed, 5, 5);
        let mut data = Vec::new();
        for _ in 0..50 {
            for s in 0..20u32 {
                let mut v = s;
                data.push(v);
                for _ in 1..10 {
                    let nb = &adj[v as usize];
                    v = nb[((rng.next_u32() as u64 * nb.len() as u64) >> 32) as usize];
                    data.push(v);
                }
            }
        }
        (data, 10)
    }

    fn pool(n: usize) -> rayon::ThreadPool {
        rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build()
            .unwrap()
    }

    #[test]
    fn one_thread_is_deterministic() {
        let (data, len) = two_cliques_walks(1);
        let cfg = TrainConfig {
            dim: 16,
            ..TrainConfig::default()
        };
        let a = pool(1).install(|| train(&data, len, 20, &cfg, &Progress::hidden()).unwrap());
        let b = pool(1).install(|| train(&data, len, 20, &cfg, &Progress::hidden()).unwrap());
        assert_eq!(a.vectors, b.vectors);
        let c = pool(1).install(|| {
            train(
                &data,
                len,
                20,
                &TrainConfig {
                    seed: 43,
                    ..cfg.clone()
                },
                &Progress::hidden(),
            )
            .unwrap()
        });
        assert_ne!(a.vectors, c.vectors);
    }

    /// Mean cosine of same-community and cross-community pairs (communities 0..10 and 10..20).
    pub(crate) fn community_cosines(v: &Array2<f32>) -> (f32, f32) {
        let (mut same, mut ns, mut cross, mut nc) = (0f32, 0, 0f32, 0);
        for a in 0..20 {
            for b in a + 1..20 {
                let c = crate::embeddings::cosine_rows(&v.row(a).to_vec(), &v.row(b).to_vec());
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
            let t =
                pool(threads).install(|| train(&data, len, 20, &cfg, &Progress::hidden()).unwrap());
            let (same, cross) = community_cosines(&t.vectors);
            assert!(
                same > cross + 0.4,
                "{threads} threads: same {same}, cross {cross}"
            );
        }
    }

    /// Hogwild on several chunks: 8 communities of 25 nodes, 10 000 walks (10 chunks of `CHUNK_WALKS`), so two
    /// threads really train concurrently. Two threads are not byte-identical to one, but within tolerance: the
    /// same node's vectors point the same way, and the community structure is as clear.
    #[test]
    fn two_threads_on_many_chunks_stay_within_tolerance_of_one() {
        let (k, size) = (8u32, 25u32);
        let n = k * size;
        let mut rng = chunk_rng(9, 5, 5);
        let mut below = |m: usize| ((rng.next_u32() as u64 * m as u64) >> 32) as usize;
        let mut data = Vec::new();
        for _ in 0..50 {
            for s in 0..n {
                let mut v = s;
                data.push(v);
                for _ in 1..10 {
                    // Mostly inside the community, one step in twenty to the next community.
                    v = if below(20) == 0 {
                        (v / size * size + size) % n + below(size as usize) as u32
                    } else {
                        v / size * size + below(size as usize) as u32
                    };
                    data.push(v);
                }
            }
        }
        assert!(data.len() / 10 >= 9 * CHUNK_WALKS);
        let cfg = TrainConfig {
            dim: 32,
            ..TrainConfig::default()
        };
        let one =
            pool(1).install(|| train(&data, 10, n as usize, &cfg, &Progress::hidden()).unwrap());
        let two =
            pool(2).install(|| train(&data, 10, n as usize, &cfg, &Progress::hidden()).unwrap());
        assert_eq!(two.stats.threads, 2);
        let cos = |v: &Array2<f32>, a: usize, b: &Array2<f32>, c: usize| {
            crate::embeddings::cosine_rows(&v.row(a).to_vec(), &b.row(c).to_vec())
        };
        let same_node: f32 = (0..n as usize)
            .map(|i| cos(&one.vectors, i, &two.vectors, i))
            .sum::<f32>()
            / n as f32;
        // The yardstick: the same data and thread count with another seed (another initialisation and other
        // draws) gives unrelated vectors.
        let other = pool(1).install(|| {
            let cfg = TrainConfig {
                seed: cfg.seed + 1,
                ..cfg.clone()
            };
            train(&data, 10, n as usize, &cfg, &Progress::hidden()).unwrap()
        });
        let other_seed: f32 = (0..n as usize)
            .map(|i| cos(&one.vectors, i, &other.vectors, i))
            .sum::<f32>()
            / n as f32;
        assert!(
            same_node > 0.85 && other_seed < 0.3,
            "mean cosine of a node's vectors: 1 vs 2 threads {same_node}, other seed {other_seed}"
        );
        let separation = |v: &Array2<f32>| {
            let (mut same, mut ns, mut cross, mut nc) = (0f32, 0, 0f32, 0);
            for a in 0..n as usize {
                for b in a + 1..n as usize {
                    if a / size as usize == b / size as usize {
                        same += cos(v, a, v, b);
                        ns += 1;
                    } else {
                        cross += cos(v, a, v, b);
                        nc += 1;
                    }
                }
            }
            same / ns as f32 - cross / nc as f32
        };
        let (s1, s2) = (separation(&one.vectors), separation(&two.vectors));
        assert!(s1 > 0.3, "one thread separates the communities: {s1}");
        assert!(
            (s1 - s2).abs() < 0.05,
            "separation {s1} (1 thread) vs {s2} (2 threads)"
        );
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
        crate::walks::write_header(&mut bytes, len, (data.len() / len) as u64).unwrap();
        crate::walks::write_ids(&mut bytes, &data).unwrap();
        std::fs::write(&path, &bytes).unwrap();
        let file = WalkFile::open(&path).unwrap();
        assert_eq!((file.length, file.len_ids()), (len, data.len()));
        let cfg = TrainConfig {
            dim: 16,
            ..TrainConfig::default()
        };
        let a = pool(1).install(|| train(&data, len, 20, &cfg, &Progress::hidden()).unwrap());
        let b = pool(1).install(|| train_from(&file, len, 20, &cfg, &Progress::hidden()).unwrap());
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
            &Progress::hidden(),
        );
        assert!(err.is_err());
        let err = train(
            &[0, 1, 2],
            2,
            3,
            &TrainConfig::default(),
            &Progress::hidden(),
        );
        assert!(err.is_err());
    }

    #[test]
    fn padding_and_isolated_nodes_are_fine() {
        let data = vec![0, 1, PAD, 1, 0, PAD, 3, PAD, PAD];
        let t = train(&data, 3, 4, &TrainConfig::default(), &Progress::hidden()).unwrap();
        assert_eq!(t.vectors.shape(), &[4, 128]);
        assert_eq!(t.stats.words, 5);
    }
}
