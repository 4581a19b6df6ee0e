//! The lockstep block engine: minibatched skip-gram whose result does not depend on the thread count.
//!
//! **Blocks.** The walks are cut into `blocks` contiguous ranges (a property of the run like the seed, by
//! default one per 32 nodes up to 64, never derived from `-j`). Block `b` of epoch `e` draws every random
//! number — subsampling, window, noise — from its own ChaCha8 stream `(seed, 1 + e, b)`, in the order of its
//! own walks, and its learning rate follows its own progress (`alpha → min_alpha` linearly over its words ×
//! epochs).
//!
//! **Minibatches with shared noise** (pWord2Vec, Ji et al. 2016). One position `i` of a walk is one
//! minibatch: its `B ≤ 2·window` context nodes (input rows, `syn0`) against `T = 1 + negative` output rows
//! (`syn1`): the centre itself (label 1) and `negative` noise nodes (label 0; a noise node equal to the
//! centre is dropped, as word2vec does). The `B × T` logits are one small matrix product, and so are both
//! gradients: `ΔC = G·O` and `ΔO = Gᵀ·C` with `G = (label − σ(C·Oᵀ))·lr`. The noise nodes are drawn once per
//! *walk* and shared by all its positions (pWord2Vec shares them within a window; word2vec draws fresh ones
//! for every pair): a walk of 10 nodes then touches about 10 input rows and 15 output rows instead of 10 +
//! 60, and rows are what costs (two matrices far larger than the caches). Measured on the 100k graph: the
//! same or better link prediction than gensim (BENCHMARKS.md "Training").
//!
//! **A walk per block per super-step.** Training runs in lockstep: in each super-step every block that still
//! has work draws its next walk, and
//! 1. *compute*: each block copies the distinct rows its walk touches (each once, whatever the number of
//!    positions that use it) and trains the walk position by position on that working copy — position
//!    `i + 1` sees what position `i` changed, exactly as one sequential trainer would — then leaves in its
//!    slot the difference between its copy and the matrices. The matrices are read-only in this phase;
//! 2. *apply*: every delta is added to its row, for each row in block order. Rows are divided among the
//!    threads by a hash of the row id, so each row is written by exactly one thread and its additions happen
//!    in the same order whichever thread does them.
//!
//! Each phase ends at a barrier (two per `blocks` walks: 640 words at 64 blocks and walks of 10). The result
//! is that of one thread training the blocks' walks one after the other, each against the same snapshot,
//! and then adding the deltas in block order — a definition that does not mention threads. `-j N` only
//! decides which thread computes which block and applies which rows; every floating-point operation, its
//! operands and its order are the same for every N (and for every SIMD build, see [`super::kernels`]). It is
//! also free of data races, unlike Hogwild: no row is written while another thread may read it.
//!
//! The staleness this adds is that of Hogwild with `blocks` workers, each seeing the others' updates one
//! walk late. A graph of a few dozen nodes cannot absorb 64 walks summed onto the same rows (it diverges), so
//! the automatic block count is one per 32 nodes, at most 64 (`TrainConfig::blocks_for`).

use super::alias::AliasTable;
use super::kernels::{self, Kernel, Rows};
use super::source::WalkSource;
use crate::core::error::{Error, Result};
use crate::core::progress::Progress;
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use std::cell::UnsafeCell;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;

/// Padding id in walks.
pub const PAD: u32 = crate::stages::embed::walks::PAD;
/// Walks a block reads from its source at a time.
pub const WALK_BUF: usize = 256;
/// Words a thread counts before it reports them to the progress bar.
const PROGRESS_EVERY: u64 = 100_000;
/// The loss is evaluated on every `LOSS_EVERY`-th batch of a block.
const LOSS_EVERY: u64 = 16;

/// The random stream `(seed, stream, index)`: stream 0 = initialisation blocks, `1 + e` = epoch `e`.
pub fn stream_rng(seed: u64, stream: u64, index: u64) -> ChaCha8Rng {
    let mut s = [0u8; 32];
    s[..8].copy_from_slice(&seed.to_le_bytes());
    s[8..16].copy_from_slice(&stream.to_le_bytes());
    s[16..24].copy_from_slice(&index.to_le_bytes());
    s[24..].copy_from_slice(b"swordsgn");
    ChaCha8Rng::from_seed(s)
}

/// Walks of block `b` of `blocks` over `n_walks` walks (contiguous, sizes differing by at most one).
pub fn block_walks(b: usize, blocks: usize, n_walks: usize) -> Range<usize> {
    let at = |i: usize| (i as u128 * n_walks as u128 / blocks as u128) as usize;
    at(b)..at(b + 1)
}

/// How σ is evaluated.
#[derive(Clone, Copy)]
pub enum Sigma<'a> {
    /// [`kernels::sigmoid`].
    Exact,
    /// [`kernels::sigmoid_from_table`].
    Table(&'a [f32]),
}

/// Everything the engine needs besides the two matrices.
pub struct Plan<'a> {
    /// The walks.
    pub data: &'a dyn WalkSource,
    /// Ids per walk.
    pub walk_len: usize,
    /// Row width.
    pub dim: usize,
    /// Maximum window.
    pub window: usize,
    /// Noise nodes per batch.
    pub negative: usize,
    /// Passes.
    pub epochs: usize,
    /// Learning rate at the start and at the end.
    pub alpha: f32,
    /// See `alpha`.
    pub min_alpha: f32,
    /// Logical blocks.
    pub blocks: usize,
    /// Walks ahead whose rows are prefetched.
    pub prefetch: usize,
    /// Seed of the blocks' streams.
    pub seed: u64,
    /// σ.
    pub sigma: Sigma<'a>,
    /// Noise distribution.
    pub alias: &'a AliasTable,
    /// Keep threshold × 2³² per node (`None`: no subsampling).
    pub keep: Option<&'a [u64]>,
    /// Raw (non-padding) words of each block.
    pub block_words: &'a [u64],
    /// SIMD build.
    pub kernel: Kernel,
    /// Worker threads (capped at `blocks`).
    pub threads: usize,
    /// Progress (raw words).
    pub progress: &'a Progress,
}

/// Sums over the run, added in block order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Outcome {
    /// Tokens kept after subsampling.
    pub kept: u64,
    /// (context, centre) pairs.
    pub pairs: u64,
    /// Batches.
    pub batches: u64,
    /// Loss summed over the evaluated pairs, and their number.
    pub loss: f64,
    /// See `loss`.
    pub loss_n: u64,
    /// Super-steps over all epochs.
    pub steps: u64,
    /// Threads that ran.
    pub threads: usize,
}

// ---------------------------------------------------------------------------------------------------------
// The matrices

/// A row-major `rows × dim` matrix shared by the workers under the phase discipline of the module docs:
/// during *compute* rows are only read; during *apply* each row is written by the one thread that owns it
/// and read by no other.
pub struct Matrix<'a> {
    ptr: *mut f32,
    rows: usize,
    dim: usize,
    _borrow: PhantomData<&'a mut [f32]>,
}

// SAFETY: access follows the phase discipline above (reads and writes of a row never overlap in time, and
// the barriers between phases order them); the pointer stays valid for 'a.
unsafe impl Sync for Matrix<'_> {}
// SAFETY: as above.
unsafe impl Send for Matrix<'_> {}

impl<'a> Matrix<'a> {
    /// Borrow `m` (length `rows × dim`).
    pub fn new(m: &'a mut [f32], dim: usize) -> Matrix<'a> {
        let rows = m.len().checked_div(dim).unwrap_or(0);
        Matrix {
            ptr: m.as_mut_ptr(),
            rows,
            dim,
            _borrow: PhantomData,
        }
    }

    /// Row `i`.
    ///
    /// # Safety
    /// No thread writes row `i` while the slice lives (compute phase).
    #[inline(always)]
    unsafe fn row(&self, i: u32) -> &[f32] {
        assert!((i as usize) < self.rows, "row {i} out of bounds");
        // SAFETY: in bounds; no concurrent writer (the caller's contract).
        unsafe { std::slice::from_raw_parts(self.ptr.add(i as usize * self.dim), self.dim) }
    }

    /// Row `i`, mutable.
    ///
    /// # Safety
    /// The calling thread owns row `i` in the apply phase: no other reference to it exists while the slice
    /// lives.
    #[inline(always)]
    #[allow(clippy::mut_from_ref)]
    unsafe fn row_mut(&self, i: u32) -> &mut [f32] {
        assert!((i as usize) < self.rows, "row {i} out of bounds");
        // SAFETY: in bounds; exclusive by the caller's contract.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.add(i as usize * self.dim), self.dim) }
    }

    #[inline(always)]
    fn prefetch(&self, i: u32) {
        if i as usize >= self.rows {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            let base = self.ptr.wrapping_add(i as usize * self.dim) as *const i8;
            let mut off = 0;
            while off < self.dim * 4 {
                // SAFETY: a prefetch never faults; the address is inside the matrix.
                unsafe { _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(off)) };
                off += 64;
            }
        }
    }
}

/// The thread that applies the deltas of row `id`: a multiplicative hash, so hubs and id ranges spread.
#[inline(always)]
fn owner(id: u32, threads: usize) -> u8 {
    ((id.wrapping_mul(0x9E37_79B9) as u64 * threads as u64) >> 32) as u8
}

// ---------------------------------------------------------------------------------------------------------
// Barrier

/// A spinning barrier that also sums one number over the threads, and that a failing thread can poison
/// (the others then stop instead of waiting forever).
struct Barrier {
    n: usize,
    /// Spins before a waiting thread yields its core: a few microseconds when every thread has a core of its
    /// own, none when there are more threads than cores (the thread being waited for needs the core).
    spin: u32,
    count: AtomicUsize,
    generation: AtomicUsize,
    sums: [AtomicUsize; 2],
    poisoned: AtomicBool,
}

impl Barrier {
    fn new(n: usize) -> Barrier {
        let cores = std::thread::available_parallelism().map_or(1, |c| c.get());
        Barrier {
            n,
            spin: if n <= cores { 200 } else { 0 },
            count: AtomicUsize::new(0),
            generation: AtomicUsize::new(0),
            sums: [AtomicUsize::new(0), AtomicUsize::new(0)],
            poisoned: AtomicBool::new(false),
        }
    }

    /// Wait for all threads; returns the sum of their `x`, or `None` when poisoned.
    fn wait_sum(&self, x: usize) -> Option<usize> {
        let g = self.generation.load(Ordering::Acquire);
        let sum = &self.sums[g & 1];
        sum.fetch_add(x, Ordering::AcqRel);
        if self.count.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            // Every thread has read the sum of generation g − 1 (it did before arriving here): reuse its slot.
            self.sums[(g + 1) & 1].store(0, Ordering::Relaxed);
            self.count.store(0, Ordering::Relaxed);
            self.generation.store(g + 1, Ordering::Release);
        } else {
            let mut spins = 0u32;
            while self.generation.load(Ordering::Acquire) == g {
                if self.poisoned.load(Ordering::Relaxed) {
                    return None;
                }
                if spins < self.spin {
                    std::hint::spin_loop();
                    spins += 1;
                } else {
                    std::thread::yield_now();
                }
            }
        }
        if self.poisoned.load(Ordering::Relaxed) {
            return None;
        }
        Some(sum.load(Ordering::Acquire))
    }

    fn poison(&self) {
        self.poisoned.store(true, Ordering::Relaxed);
    }
}

/// Poisons the barrier if its thread unwinds, so the other threads stop.
struct PoisonOnUnwind<'a>(&'a Barrier);

impl Drop for PoisonOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poison();
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Blocks and their work

/// The walk a block drew for the current super-step, and after *compute* its deltas.
#[derive(Default)]
struct Work {
    /// The distinct rows the walk touches, each once in order of first use: `n0` rows of `syn0` (its nodes
    /// as contexts), then rows of `syn1` (its centres and noise nodes).
    ids: Vec<u32>,
    n0: usize,
    /// For each kept position of the walk, the local row (index into `ids`) of its node as a context.
    sent: Vec<u32>,
    /// For each position, its reduced window.
    win: Vec<u32>,
    /// The targets of every position (local `syn1` rows counted from `n0`, the centre first), and where
    /// each position's targets end.
    tgt: Vec<u32>,
    tgt_end: Vec<u32>,
    lr: f32,
    /// One row per id: during *compute* the walk's working copy, then its delta against the snapshot.
    delta: Vec<f32>,
    /// The thread that applies each delta.
    owner: Vec<u8>,
}

impl Work {
    fn clear(&mut self) {
        self.ids.clear();
        self.n0 = 0;
        self.sent.clear();
        self.win.clear();
        self.tgt.clear();
        self.tgt_end.clear();
        self.owner.clear();
    }
}

/// A block's work, shared under the phase discipline: during *compute* only the block's thread touches
/// it; during *apply* every thread reads it and none writes.
struct Slot(UnsafeCell<Work>);

// SAFETY: see the type's documentation; the barriers order the phases.
unsafe impl Sync for Slot {}

/// One block's position in its walks and its random stream.
struct Block {
    walks: Range<usize>,
    next: usize,
    buf: Vec<u32>,
    buf_first: usize,
    buf_walks: usize,
    rng: ChaCha8Rng,
    sentence: Vec<u32>,
    words: u64,
    done: u64,
    epoch: usize,
    lr: f32,
    kept: u64,
    pairs: u64,
    batches: u64,
    loss: f64,
    loss_n: u64,
}

/// The local row of each id of a walk: open addressing over `(matrix, id)` keys, emptied in O(1) per walk
/// by a generation stamp.
struct RowIndex {
    keys: Vec<u64>,
    vals: Vec<u32>,
    stamp: Vec<u32>,
    gen: u32,
    shift: u32,
}

impl RowIndex {
    /// Room for `n` keys at a load of at most one half.
    fn new(n: usize) -> RowIndex {
        let cap = (2 * n).next_power_of_two().max(16);
        RowIndex {
            keys: vec![0; cap],
            vals: vec![0; cap],
            stamp: vec![0; cap],
            gen: 1,
            shift: 64 - cap.trailing_zeros(),
        }
    }

    fn reset(&mut self) {
        self.gen = self.gen.wrapping_add(1);
        if self.gen == 0 {
            self.stamp.fill(0);
            self.gen = 1;
        }
    }

    /// The value of `key`, inserting `next` if it is new (returns `(value, inserted)`).
    #[inline(always)]
    fn get_or_insert(&mut self, key: u64, next: u32) -> (u32, bool) {
        let mask = self.keys.len() - 1;
        let mut h = (key.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> self.shift) as usize;
        loop {
            if self.stamp[h] != self.gen {
                self.stamp[h] = self.gen;
                self.keys[h] = key;
                self.vals[h] = next;
                return (next, true);
            }
            if self.keys[h] == key {
                return (self.vals[h], false);
            }
            h = (h + 1) & mask;
        }
    }
}

/// Per-thread scratch: the row indices, logits and gradients of one position, and the row index.
struct Scratch {
    ci: Vec<u32>,
    ti: Vec<u32>,
    logits: Vec<f32>,
    sg: Vec<f32>,
    g: Vec<f32>,
    ids1: Vec<u32>,
    noise: Vec<u32>,
    index: RowIndex,
}

impl Scratch {
    fn new(plan: &Plan) -> Scratch {
        Scratch {
            ci: Vec::new(),
            ti: Vec::new(),
            logits: Vec::new(),
            sg: Vec::new(),
            g: Vec::new(),
            ids1: Vec::new(),
            noise: Vec::new(),
            index: RowIndex::new(plan.walk_len * (plan.negative + 2)),
        }
    }
}

struct Ctx<'a> {
    plan: &'a Plan<'a>,
    syn0: Matrix<'a>,
    syn1: Matrix<'a>,
    slots: Vec<Slot>,
    barrier: Barrier,
    threads: usize,
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
}

impl Block {
    fn new(walks: Range<usize>, words: u64, walk_len: usize) -> Block {
        Block {
            next: walks.start,
            walks,
            buf: Vec::with_capacity(WALK_BUF * walk_len),
            buf_first: 0,
            buf_walks: 0,
            rng: stream_rng(0, 0, 0),
            sentence: Vec::with_capacity(walk_len),
            words,
            done: 0,
            epoch: 0,
            lr: 0.0,
            kept: 0,
            pairs: 0,
            batches: 0,
            loss: 0.0,
            loss_n: 0,
        }
    }

    fn start_epoch(&mut self, plan: &Plan, index: usize, epoch: usize) {
        self.rng = stream_rng(plan.seed, 1 + epoch as u64, index as u64);
        self.next = self.walks.start;
        self.buf_walks = 0;
        self.buf_first = self.walks.start;
        self.sentence.clear();
        self.done = 0;
        self.epoch = epoch;
    }

    /// Learning rate at the current position: linear in this block's progress over all epochs.
    fn learning_rate(&self, plan: &Plan) -> f32 {
        let total = (self.words * plan.epochs as u64).max(1) as f64;
        let frac = ((self.epoch as u64 * self.words + self.done) as f64 / total).min(1.0);
        let a = plan.alpha as f64 - (plan.alpha - plan.min_alpha) as f64 * frac;
        (a as f32).max(plan.min_alpha)
    }

    /// Load the next walk with at least two kept nodes into `sentence`; false at the end of the block or on a
    /// read error (stored in `ctx`). Returns the raw words consumed through `words`.
    fn load_walk(&mut self, ctx: &Ctx, words: &mut u64) -> bool {
        let plan = ctx.plan;
        let len = plan.walk_len;
        loop {
            if self.next >= self.walks.end {
                return false;
            }
            if self.next >= self.buf_first + self.buf_walks {
                let n = WALK_BUF.min(self.walks.end - self.next);
                self.buf.resize(n * len, 0);
                if let Err(e) = plan.data.read_ids(self.next * len, &mut self.buf) {
                    ctx.error
                        .lock()
                        .unwrap_or_else(|p| p.into_inner())
                        .get_or_insert(e);
                    ctx.failed.store(true, Ordering::Relaxed);
                    self.next = self.walks.end;
                    return false;
                }
                self.buf_first = self.next;
                self.buf_walks = n;
            }
            let at = (self.next - self.buf_first) * len;
            self.next += 1;
            self.lr = self.learning_rate(plan);
            self.sentence.clear();
            let mut raw = 0u64;
            for &id in &self.buf[at..at + len] {
                if id == PAD {
                    continue;
                }
                raw += 1;
                if let Some(keep) = plan.keep {
                    if self.rng.next_u32() as u64 >= keep[id as usize] {
                        continue;
                    }
                }
                self.sentence.push(id);
            }
            self.done += raw;
            *words += raw;
            self.kept += self.sentence.len() as u64;
            if self.sentence.len() >= 2 {
                return true;
            }
        }
    }

    /// Draw this block's next walk into `w`: its windows and noise, position by position, and the distinct
    /// rows they touch; false when the block has no more work this epoch.
    fn next_walk(&mut self, ctx: &Ctx, w: &mut Work, s: &mut Scratch, words: &mut u64) -> bool {
        let plan = ctx.plan;
        w.clear();
        if !self.load_walk(ctx, words) {
            return false;
        }
        let index = &mut s.index;
        index.reset();
        for &c in &self.sentence {
            let (r, new) = index.get_or_insert(c as u64, w.ids.len() as u32);
            if new {
                w.ids.push(c);
            }
            w.sent.push(r);
        }
        w.n0 = w.ids.len();
        let ids1 = &mut s.ids1;
        ids1.clear();
        let len = self.sentence.len();
        for i in 0..len {
            let reduce = ((self.rng.next_u32() as u64 * plan.window as u64) >> 32) as usize;
            let win = plan.window - reduce;
            let (lo, hi) = (i.saturating_sub(win), (i + win).min(len - 1));
            self.pairs += (hi - lo) as u64;
            w.win.push(win as u32);
            let centre = self.sentence[i];
            let mut target = |id: u32| {
                let (r, new) = index.get_or_insert(1 << 32 | id as u64, ids1.len() as u32);
                if new {
                    ids1.push(id);
                }
                w.tgt.push(r);
            };
            target(centre);
            if i == 0 {
                s.noise.clear();
                for _ in 0..plan.negative {
                    s.noise.push(plan.alias.sample(self.rng.next_u64()));
                }
            }
            for &n in &s.noise {
                if n != centre {
                    target(n);
                }
            }
            w.tgt_end.push(w.tgt.len() as u32);
        }
        w.ids.extend_from_slice(ids1);
        w.lr = self.lr;
        true
    }
}

impl Ctx<'_> {
    /// # Safety
    /// Compute phase, and `i` is a block of the calling thread.
    #[allow(clippy::mut_from_ref)]
    unsafe fn slot_mut(&self, i: usize) -> &mut Work {
        // SAFETY: the caller's contract: no other reference to slot i exists.
        unsafe { &mut *self.slots[i].0.get() }
    }

    /// # Safety
    /// Apply phase (no slot is written), or `i` is a block of the calling thread.
    unsafe fn slot(&self, i: usize) -> &Work {
        // SAFETY: the caller's contract: no writer.
        unsafe { &*self.slots[i].0.get() }
    }

    fn prefetch(&self, w: &Work) {
        let (a, b) = w.ids.split_at(w.n0);
        for &id in a {
            self.syn0.prefetch(id);
        }
        for &id in b {
            self.syn1.prefetch(id);
        }
    }

    /// Train the walk `w` on a working copy of its rows, position by position (each position sees the
    /// updates of the walk's earlier positions), and leave in `w.delta` what it changed in each row.
    fn compute(&self, w: &mut Work, blk: &mut Block, s: &mut Scratch) {
        let n = w.ids.len();
        if n == 0 {
            return;
        }
        let plan = self.plan;
        let d = plan.dim;
        let n0 = w.n0;
        w.delta.resize(n * d, 0.0);
        for (r, &id) in w.ids.iter().enumerate() {
            let m = if r < n0 { &self.syn0 } else { &self.syn1 };
            // SAFETY: compute phase: nobody writes the matrices.
            w.delta[r * d..(r + 1) * d].copy_from_slice(unsafe { m.row(id) });
        }
        let len = w.sent.len();
        let mut t0 = 0;
        for i in 0..len {
            let win = w.win[i] as usize;
            let (lo, hi) = (i.saturating_sub(win), (i + win).min(len - 1));
            let t1 = w.tgt_end[i] as usize;
            let (nc, nt) = (hi - lo, t1 - t0);
            // The position's rows, read in place in the working copy.
            s.ci.clear();
            s.ci.extend((lo..=hi).filter(|&p| p != i).map(|p| w.sent[p]));
            s.ti.clear();
            s.ti.extend(w.tgt[t0..t1].iter().map(|&t| n0 as u32 + t));
            let c = Rows::picked(d, &w.delta, &s.ci);
            let o = Rows::picked(d, &w.delta, &s.ti);
            s.logits.resize(nc * nt, 0.0);
            plan.kernel.gram_rows(c, o, &mut s.logits);
            s.g.resize(nc * nt, 0.0);
            s.sg.resize(nc * nt, 0.0);
            match plan.sigma {
                Sigma::Exact => plan.kernel.sigmoid(&s.logits, &mut s.sg),
                Sigma::Table(t) => {
                    for (o, &f) in s.sg.iter_mut().zip(&s.logits) {
                        *o = kernels::sigmoid_from_table(f, t);
                    }
                }
            }
            // g = (label − σ)·lr, label 1 in the centre's column (k = 0) and 0 in the noise columns.
            let lr = w.lr;
            for (g, &sg) in s.g.iter_mut().zip(&s.sg) {
                *g = (0.0 - sg) * lr;
            }
            for j in 0..nc {
                s.g[j * nt] = (1.0 - s.sg[j * nt]) * lr;
            }
            if blk.batches.is_multiple_of(LOSS_EVERY) {
                let mut loss = 0f64;
                for row in s.sg.chunks_exact(nt) {
                    for (k, &sg) in row.iter().enumerate() {
                        let p = if k == 0 { sg } else { 1.0 - sg };
                        loss -= (p.max(1e-7) as f64).ln();
                    }
                }
                blk.loss += loss;
                blk.loss_n += nc as u64;
            }
            blk.batches += 1;
            plan.kernel.update(d, &s.g, &mut w.delta, &s.ci, &s.ti);
            t0 = t1;
        }
        for (r, &id) in w.ids.iter().enumerate() {
            let m = if r < n0 { &self.syn0 } else { &self.syn1 };
            // SAFETY: compute phase: nobody writes the matrices.
            let snap = unsafe { m.row(id) };
            plan.kernel
                .sub_assign(&mut w.delta[r * d..(r + 1) * d], snap);
        }
        w.owner.clear();
        w.owner
            .extend(w.ids.iter().map(|&id| owner(id, self.threads)));
    }

    /// Add every delta this thread owns, slot by slot in block order.
    fn apply(&self, t: u8) {
        let d = self.plan.dim;
        for i in 0..self.slots.len() {
            // SAFETY: apply phase: no slot is written.
            let w = unsafe { self.slot(i) };
            for (r, (&id, &o)) in w.ids.iter().zip(&w.owner).enumerate() {
                if o != t {
                    continue;
                }
                let m = if r < w.n0 { &self.syn0 } else { &self.syn1 };
                // SAFETY: apply phase; this thread is the only owner of row `id` (`owner` is a function of the
                // id), and no slice of the matrix outlives this statement.
                let row = unsafe { m.row_mut(id) };
                self.plan
                    .kernel
                    .add_assign(row, &w.delta[r * d..(r + 1) * d]);
            }
        }
    }

    /// The loop of thread `t`, which owns `blocks` (starting at block index `first`); returns the number
    /// of super-steps.
    fn worker(&self, t: usize, first: usize, blocks: &mut [Block]) -> u64 {
        let _guard = PoisonOnUnwind(&self.barrier);
        let plan = self.plan;
        let mut scratch = Scratch::new(plan);
        let mut words = 0u64;
        let mut steps = 0u64;
        'epochs: for epoch in 0..plan.epochs {
            for (k, blk) in blocks.iter_mut().enumerate() {
                blk.start_epoch(plan, first + k, epoch);
            }
            loop {
                // Draw: every block of this thread draws its next walk (ids only).
                let mut active = 0;
                let failed = self.failed.load(Ordering::Relaxed);
                for (k, blk) in blocks.iter_mut().enumerate() {
                    // SAFETY: compute phase; slot first + k belongs to this thread.
                    let w = unsafe { self.slot_mut(first + k) };
                    if !failed && blk.next_walk(self, w, &mut scratch, &mut words) {
                        active += 1;
                    } else {
                        w.clear();
                    }
                }
                // Compute, prefetching the rows of the walks `prefetch` ahead.
                for k in 0..plan.prefetch.min(blocks.len()) {
                    // SAFETY: compute phase, own slot, read only.
                    self.prefetch(unsafe { self.slot(first + k) });
                }
                let mine = blocks.len();
                for (k, blk) in blocks.iter_mut().enumerate() {
                    if plan.prefetch > 0 && k + plan.prefetch < mine {
                        // SAFETY: as above.
                        self.prefetch(unsafe { self.slot(first + k + plan.prefetch) });
                    }
                    // SAFETY: compute phase, own slot.
                    self.compute(unsafe { self.slot_mut(first + k) }, blk, &mut scratch);
                }
                if words >= PROGRESS_EVERY {
                    plan.progress.inc(std::mem::take(&mut words));
                }
                let Some(total) = self.barrier.wait_sum(active) else {
                    break 'epochs;
                };
                if total == 0 {
                    break;
                }
                steps += 1;
                self.apply(t as u8);
                if self.barrier.wait_sum(0).is_none() {
                    break 'epochs;
                }
            }
        }
        plan.progress.inc(words);
        steps
    }
}
/// Train `syn0` (input vectors, the embeddings) and `syn1` (output vectors), both `rows × dim`, in place.
pub fn run(plan: &Plan, syn0: &mut [f32], syn1: &mut [f32]) -> Result<Outcome> {
    let n_walks = plan.data.len_ids() / plan.walk_len.max(1);
    let blocks_n = plan.blocks.max(1);
    assert_eq!(plan.block_words.len(), blocks_n, "one word count per block");
    let threads = plan.threads.clamp(1, blocks_n.min(255));
    let cap = plan.walk_len * (plan.negative + 2);
    let ctx = Ctx {
        plan,
        syn0: Matrix::new(syn0, plan.dim),
        syn1: Matrix::new(syn1, plan.dim),
        slots: (0..blocks_n)
            .map(|_| {
                Slot(UnsafeCell::new(Work {
                    ids: Vec::with_capacity(cap),
                    delta: Vec::with_capacity(cap * plan.dim),
                    owner: Vec::with_capacity(cap),
                    ..Work::default()
                }))
            })
            .collect(),
        barrier: Barrier::new(threads),
        threads,
        failed: AtomicBool::new(false),
        error: Mutex::new(None),
    };
    let mut blocks: Vec<Block> = (0..blocks_n)
        .map(|b| {
            Block::new(
                block_walks(b, blocks_n, n_walks),
                plan.block_words[b],
                plan.walk_len,
            )
        })
        .collect();
    let (steps, spawn_error) = std::thread::scope(|scope| {
        let mut rest = &mut blocks[..];
        let mut own = None;
        let mut spawn_error = None;
        for t in 0..threads {
            let (lo, hi) = (t * blocks_n / threads, (t + 1) * blocks_n / threads);
            let (mine, r) = std::mem::take(&mut rest).split_at_mut(hi - lo);
            rest = r;
            if t == 0 {
                own = Some(mine);
                continue;
            }
            let ctx = &ctx;
            let spawned = std::thread::Builder::new()
                .name(format!("sword-train-{t}"))
                .spawn_scoped(scope, move || ctx.worker(t, lo, mine));
            if let Err(e) = spawned {
                // The threads already started stop at their first barrier.
                ctx.barrier.poison();
                spawn_error = Some(e);
                break;
            }
        }
        let steps = match spawn_error {
            None => ctx.worker(0, 0, own.unwrap_or_default()),
            Some(_) => 0,
        };
        (steps, spawn_error)
    });
    if let Some(e) = spawn_error {
        return Err(Error::Config(format!(
            "train: cannot start {threads} threads: {e}"
        )));
    }
    if let Some(e) = ctx.error.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let mut out = Outcome {
        threads,
        steps,
        ..Outcome::default()
    };
    for b in &blocks {
        out.kept += b.kept;
        out.pairs += b.pairs;
        out.batches += b.batches;
        out.loss += b.loss;
        out.loss_n += b.loss_n;
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Fixture {
        data: Vec<u32>,
        alias: AliasTable,
        words: Vec<u64>,
        progress: Progress,
    }

    impl Fixture {
        fn new(data: Vec<u32>, walk_len: usize, nodes: usize, blocks: usize) -> Fixture {
            let n_walks = data.len() / walk_len;
            let words = (0..blocks)
                .map(|b| {
                    let r = block_walks(b, blocks, n_walks);
                    data[r.start * walk_len..r.end * walk_len]
                        .iter()
                        .filter(|&&x| x != PAD)
                        .count() as u64
                })
                .collect();
            Fixture {
                data,
                alias: AliasTable::new(&vec![1.0; nodes]).unwrap(),
                words,
                progress: Progress::hidden(),
            }
        }

        fn plan<'a>(&'a self, src: &'a &'a [u32], walk_len: usize, blocks: usize) -> Plan<'a> {
            Plan {
                data: src,
                walk_len,
                dim: 2,
                window: 1,
                negative: 0,
                epochs: 1,
                alpha: 0.5,
                min_alpha: 0.5,
                blocks,
                prefetch: 1,
                seed: 1,
                sigma: Sigma::Exact,
                alias: &self.alias,
                keep: None,
                block_words: &self.words,
                kernel: Kernel::Scalar,
                threads: 1,
                progress: &self.progress,
            }
        }
    }

    fn sigma(x: f64) -> f64 {
        1.0 / (1.0 + (-x).exp())
    }

    /// One walk `0 1`, window 1, no noise: batch 1 is context 1 → centre 0, batch 2 context 0 → centre 1,
    /// each against the matrices as the previous super-step left them. Values by hand (f64).
    #[test]
    fn two_batches_by_hand() {
        let f = Fixture::new(vec![0, 1], 2, 2, 1);
        let src: &[u32] = &f.data;
        let plan = f.plan(&src, 2, 1);
        let (c0, c1) = ([0.5f32, -1.0], [2.0f32, 0.25]);
        let (o0, o1) = ([0.1f32, 0.2], [-0.3f32, 0.4]);
        let mut syn0 = [c0, c1].concat();
        let mut syn1 = [o0, o1].concat();
        let out = run(&plan, &mut syn0, &mut syn1).unwrap();
        assert_eq!((out.batches, out.pairs, out.steps), (2, 2, 1));
        let dot = |a: [f32; 2], b: [f32; 2]| a[0] as f64 * b[0] as f64 + a[1] as f64 * b[1] as f64;
        // Batch 1: g = (1 − σ(c1·o0))·lr; c1 += g·o0, o0 += g·c1 (old c1).
        let g1 = (1.0 - sigma(dot(c1, o0))) * 0.5;
        let c1n = [
            c1[0] as f64 + g1 * o0[0] as f64,
            c1[1] as f64 + g1 * o0[1] as f64,
        ];
        let o0n = [
            o0[0] as f64 + g1 * c1[0] as f64,
            o0[1] as f64 + g1 * c1[1] as f64,
        ];
        // Batch 2 (next super-step): context 0 against centre 1 (o1 untouched so far).
        let g2 = (1.0 - sigma(dot(c0, o1))) * 0.5;
        let c0n = [
            c0[0] as f64 + g2 * o1[0] as f64,
            c0[1] as f64 + g2 * o1[1] as f64,
        ];
        let o1n = [
            o1[0] as f64 + g2 * c0[0] as f64,
            o1[1] as f64 + g2 * c0[1] as f64,
        ];
        let want0 = [c0n[0], c0n[1], c1n[0], c1n[1]];
        let want1 = [o0n[0], o0n[1], o1n[0], o1n[1]];
        for (got, want) in syn0.iter().zip(want0).chain(syn1.iter().zip(want1)) {
            assert!((*got as f64 - want).abs() < 1e-6, "{syn0:?} {syn1:?}");
        }
    }

    /// Two blocks holding the same walk compute their first batches against the same snapshot: the centre's
    /// output row gets twice the one-block delta — not the sequential result, where the second batch would
    /// see the first one's update.
    #[test]
    fn blocks_of_a_super_step_share_one_snapshot() {
        let f = Fixture::new(vec![1, 0, 1, 0], 2, 2, 2);
        let src: &[u32] = &f.data;
        let plan = f.plan(&src, 2, 2);
        let mut syn0 = vec![0.0f32, 0.0, 1.0, 2.0];
        let mut syn1 = vec![0.0f32; 4];
        let out = run(&plan, &mut syn0, &mut syn1).unwrap();
        assert_eq!((out.batches, out.steps), (4, 1));
        // Step 1: both batches: context 0 (zero row) → centre 1: g = 0.5·lr = 0.25, Δo1 = 0.25·c0 = 0, Δc0 =
        // 0.25·o1 = 0. Step 2: context 1 → centre 0: logits c1·o0 = 0, g = 0.25 each, Δo0 = 0.25·(1, 2) from
        // each block: o0 = (0.5, 1.0); Δc1 = 0.25·o0(old) = 0.
        assert_eq!(syn1, vec![0.5, 1.0, 0.0, 0.0]);
        assert_eq!(syn0, vec![0.0, 0.0, 1.0, 2.0]);
    }

    #[test]
    fn barrier_sums_and_poisons() {
        let b = Barrier::new(3);
        let sums: Vec<Option<usize>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|i| {
                    let b = &b;
                    s.spawn(move || {
                        let a = b.wait_sum(i + 1).unwrap();
                        let c = b.wait_sum(10 * (i + 1)).unwrap();
                        let d = b.wait_sum(0).unwrap();
                        Some(a + c + d)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(sums, vec![Some(66); 3]);
        let p = Barrier::new(2);
        p.poison();
        assert_eq!(p.wait_sum(1), None);
    }

    #[test]
    fn blocks_cover_the_walks_in_order() {
        for (blocks, n) in [(64usize, 0usize), (64, 10), (64, 1000), (3, 7), (1, 5)] {
            let mut at = 0;
            for b in 0..blocks {
                let r = block_walks(b, blocks, n);
                assert_eq!(r.start, at);
                assert!(r.len() <= n / blocks + 1);
                at = r.end;
            }
            assert_eq!(at, n);
        }
    }
}
