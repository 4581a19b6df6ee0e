//! The lockstep block engine: minibatched skip-gram whose result does not depend on the thread count.
//!
//! **Blocks.** The walks are cut into `blocks` contiguous ranges (a property of the run like the seed, by
//! default one per 512 nodes up to 64, never derived from `-j`). Block `b` of epoch `e` draws every random
//! number — subsampling, window, noise — from its own ChaCha8 stream `(seed, 1 + e, b)`, in the order of its
//! own walks, and its learning rate follows its own progress (`alpha → min_alpha` linearly over its words ×
//! epochs, held for each stretch of `alpha_step` words of the run as gensim holds it per job). A block goes
//! on into its next epoch as soon as its walks of this one are done.
//!
//! **Minibatches with shared noise** (pWord2Vec, Ji et al. 2016). One position `i` of a walk is one
//! minibatch: its `B ≤ 2·window` context nodes (input rows, `syn0`) against `T = 1 + negative` output rows
//! (`syn1`): the centre itself (label 1) and `negative` noise nodes (label 0; a noise node equal to the
//! centre is dropped, as word2vec does). The `B × T` logits are one small matrix product, and so are both
//! gradients: `ΔC = G·O` and `ΔO = Gᵀ·C` with `G = (label − σ(C·Oᵀ))·lr`. Which pairs share noise nodes is
//! [`Noise`]: by default each side of a centre draws its own, shared by the contexts on that side (a position
//! is then two batches, before and after the centre); `window` draws them once per centre for its whole
//! window (pWord2Vec); `pair` draws them for every (context, centre) pair and trains each pair as its own
//! `1 × T` batch (word2vec); `walk` draws them once per walk for all its positions. A walk of 10 nodes touches
//! up to 110 distinct rows by default (10 input rows, 10 centres, up to 90 noise nodes), about 70 with `window`,
//! 25 with `walk`; rows are what costs (two matrices far larger than the caches): `window` runs at 1.5× the
//! words/s of `side` and `walk` at about twice `window`'s — but the fewer the draws, the more contexts meet the
//! same noise nodes: on power-law graphs `window` cost 0.005 centred AUC against `side`, and `walk` 0.024
//! centred and 0.013 against degree-matched negatives against `window` (BENCHMARKS.md "Training";
//! docs/embedding.md).
//!
//! **A walk per block per super-step.** Training runs in lockstep: super-step `s` trains the `s`-th walk of
//! every block that still has one, against the matrices as step `s − 1` left them (the *snapshot*):
//! 1. *compute*: each block trains its walk position by position — position `i + 1` sees what position `i`
//!    changed, exactly as one sequential trainer would. A row that no other walk of the step touches
//!    (*own*: about three quarters of them, 73–78 % measured on the benchmarks' walks) is trained in place
//!    in its matrix; a *shared* row is copied once (whatever the number of positions that use it), trained on
//!    the copy, and the walk leaves the difference between its copy and the snapshot. (Copying every row in
//!    and the own ones back out cost a fifth of the trainer's time; the kernels take rows by pointer, so one
//!    minibatch mixes rows of both matrices and of the copies, with the same bits.)
//! 2. *apply and draw*: every shared row gets its deltas added, in block order. Shared rows are divided
//!    among the threads by a hash of the row id, so each is written by exactly one thread and its additions
//!    happen in the same order whichever thread does them. In the same phase the blocks draw their walks of
//!    step `s + 1` and mark the rows they will touch ([`Marks`]), which is how *compute* knows own rows from
//!    shared ones.
//!
//! Each phase ends at a barrier (two per `blocks` walks: 640 words at 64 blocks and walks of 10). The result
//! is that of one thread training the blocks' walks one after the other, each against the same snapshot,
//! then setting each own row to its walk's copy and adding the deltas of each shared row in block order — a
//! definition that does not mention threads. `-j N` only decides which thread draws and computes which block
//! and applies which rows; every floating-point operation, its operands and its order are the same for
//! every N (and for every SIMD build, see [`super::kernels`]). It is also free of data races, unlike Hogwild:
//! no row is written while another thread may read it (an own row is read and written by its walk's thread
//! alone; a shared row is only read until *apply*).
//!
//! Training own rows in place, instead of through *apply*, keeps most rows on the core that trained them: *apply* moves only the shared rows' deltas between cores (on 2 cores it took twice the
//! CPU time it took on one when every row went through it). Claims of blocks shrink as a phase runs out
//! (guided scheduling), so the threads reach the barrier together.
//!
//! The staleness this adds is that of Hogwild with `blocks` workers, each seeing the others' updates one
//! walk late. A graph of a few dozen nodes cannot absorb 64 walks summed onto the same rows (it diverges), and
//! one of 8 k nodes loses 0.004 AUC to it, so the automatic block count is one per 512 nodes, at most 64
//! (`TrainConfig::blocks_for`).

use super::alias::AliasTable;
use super::kernels::{self, Kernel, Rows};
use super::source::WalkSource;
pub use super::Noise;
use crate::core::error::{Error, Result};
use crate::core::progress::Progress;
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use std::cell::UnsafeCell;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use sync::{claim, gen, part, prefetch, Barrier, Marks, Matrix, PoisonOnUnwind};

mod sync;

/// Padding id in walks.
pub const PAD: u32 = crate::stages::embed::walks::PAD;
/// Walks a block reads from its source at a time.
pub const WALK_BUF: usize = 256;
/// Most blocks in one claim.
const MAX_CHUNK: usize = 16;
/// Apply partitions per thread (claimed one at a time, so a slow or preempted thread delays the phase by
/// one partition's work at most).
const APPLY_PARTS_PER_THREAD: usize = 4;
/// Additions the apply phase prefetches ahead.
const APPLY_AHEAD: usize = 4;
/// Words a thread counts before it reports them to the progress bar.
const PROGRESS_EVERY: u64 = 100_000;
/// The loss is evaluated on every `LOSS_EVERY`-th batch of a block.
const LOSS_EVERY: u64 = 16;

/// `alpha_step` words as a fraction of a run of `words` words per epoch over `epochs` epochs (the
/// learning rate's step, [`Plan::lr_step`]); 0 (a new rate at every walk) for `alpha_step` 0 or 1.
pub fn lr_step(alpha_step: u64, words: u64, epochs: usize) -> f64 {
    if alpha_step <= 1 {
        return 0.0;
    }
    alpha_step as f64 / (words * epochs as u64).max(1) as f64
}

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
    /// Which pairs share noise nodes (see [`Noise`]).
    pub noise: Noise,
    /// Train each (context, centre) pair as its own batch, its logit computed after the earlier pairs of
    /// the position moved the rows (word2vec's order); else one batch per position.
    pub pairwise: bool,
    /// Passes.
    pub epochs: usize,
    /// Learning rate at the start and at the end.
    pub alpha: f32,
    /// See `alpha`.
    pub min_alpha: f32,
    /// The learning rate's step as a fraction of the run (`alpha_step` words over all blocks' words × epochs);
    /// 0 = a new rate at every walk. See [`lr_step`].
    pub lr_step: f64,
    /// Pairs with |logit| ≥ this are skipped (gradient 0, as gensim), but a wrong-way noise pair is scaled
    /// (see [`saturate`]); 0 = none.
    pub saturation: f32,
    /// A wrong-way saturated noise pair trains with a scaled step (else it is skipped); see [`saturate`].
    pub scale_noise: bool,
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

impl Plan<'_> {
    /// The most distinct rows one walk can touch: its nodes as contexts and centres, and its noise nodes.
    fn max_rows(&self) -> usize {
        let draws = match self.noise {
            Noise::Walk => 1,
            Noise::Window => self.walk_len,
            Noise::Side => self.walk_len * 2,
            Noise::Pair => self.walk_len * 2 * self.window,
        };
        self.walk_len * 2 + draws * self.negative
    }
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
    /// Where the threads' time went, summed over them.
    pub phases: Phases,
}

/// Seconds the worker threads spent in each phase of the super-steps, summed over the threads (so with `-j N`
/// and no waiting they add up to N × the loop's wall time). They say where scaling goes: *compute* is what the
/// threads share best, *apply* moves the shared rows' deltas between the cores that made them and the one
/// that adds them, *draw* marks rows in tags the other cores marked the step before, and *wait* is the time
/// spent at the barriers (a phase's last claim, a preempted thread).
#[derive(Clone, Copy, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Phases {
    /// Training the walks (the compute phase).
    pub compute: f64,
    /// Adding the shared rows' deltas.
    pub apply: f64,
    /// Drawing the next walks and marking their rows (the first step's draw included).
    pub draw: f64,
    /// At the barriers.
    pub wait: f64,
}

impl std::ops::AddAssign for Phases {
    fn add_assign(&mut self, o: Phases) {
        self.compute += o.compute;
        self.apply += o.apply;
        self.draw += o.draw;
        self.wait += o.wait;
    }
}

// ---------------------------------------------------------------------------------------------------------
// Blocks and their work

/// A walk a block drew for one super-step, and after *compute* the deltas of its shared rows.
#[derive(Default)]
struct Work {
    /// The distinct rows the walk touches, each once in order of first use: `n0` rows of `syn0` (its nodes
    /// as contexts), then rows of `syn1` (its centres and noise nodes).
    ids: Vec<u32>,
    n0: usize,
    /// For each kept position of the walk, the local row (index into `ids`) of its node as a context.
    sent: Vec<u32>,
    /// The batches in training order: `(i, lo, hi)` = the contexts at positions `lo..=hi` except `i`,
    /// against the centre at position `i` and the batch's noise.
    batch: Vec<[u32; 3]>,
    /// The targets of every batch (local `syn1` rows counted from `n0`, the centre first), and where each
    /// batch's targets end.
    tgt: Vec<u32>,
    tgt_end: Vec<u32>,
    /// For each target, the times it counts: 1 for the centre, the number of draws for a noise node.
    tgt_w: Vec<f32>,
    lr: f32,
    /// One row per shared id, in order: during *compute* the walk's working copy of it, then its delta against
    /// the snapshot. (An own row is trained in place in its matrix.)
    delta: Vec<f32>,
    /// Per id: whether another walk of the super-step touches the row too (see [`Marks`]).
    shared: Vec<bool>,
    /// Per id: its row in `delta` when shared.
    slot: Vec<u32>,
    /// The shared local rows ordered by apply partition, and where each partition's rows end in `order`.
    order: Vec<u32>,
    part_end: Vec<u32>,
}

impl Work {
    /// Room for a walk of `rows` distinct rows of `dim` floats.
    fn with_capacity(rows: usize, dim: usize) -> Work {
        Work {
            ids: Vec::with_capacity(rows),
            delta: Vec::with_capacity(rows * dim),
            shared: Vec::with_capacity(rows),
            order: Vec::with_capacity(rows),
            ..Work::default()
        }
    }

    fn clear(&mut self) {
        self.ids.clear();
        self.n0 = 0;
        self.sent.clear();
        self.batch.clear();
        self.tgt.clear();
        self.tgt_end.clear();
        self.tgt_w.clear();
        self.shared.clear();
        self.slot.clear();
        self.order.clear();
        self.part_end.clear();
    }

    /// The local rows of apply partition `p` (none before the walk is computed).
    fn part_rows(&self, p: usize) -> &[u32] {
        match self.part_end.get(p) {
            Some(&end) => {
                let start = if p == 0 { 0 } else { self.part_end[p - 1] };
                &self.order[start as usize..end as usize]
            }
            None => &[],
        }
    }
}

/// A block and the walks it drew for two consecutive super-steps (`work[s % 2]` holds step `s`'s), each in
/// a cell of its own, shared under the phase discipline: in the *compute* phase of step `s` only the thread
/// that claimed the block touches its block and `work[s % 2]`; in the *apply and draw* phase every thread
/// may read `work[s % 2]`, none writes it, and the one thread that claimed the block's draw writes the
/// block and `work[(s + 1) % 2]`.
struct Slot {
    block: UnsafeCell<Block>,
    work: [UnsafeCell<Work>; 2],
}

// SAFETY: see the type's documentation; the claim counter gives each block one thread per phase, and the
// barriers order the phases.
unsafe impl Sync for Slot {}

/// One block's position in its walks and its random stream.
struct Block {
    /// The block's number (its random stream's index).
    index: usize,
    walks: Range<usize>,
    next: usize,
    buf: Vec<u32>,
    buf_first: usize,
    buf_walks: usize,
    rng: ChaCha8Rng,
    sentence: Vec<u32>,
    words: u64,
    done: u64,
    /// The epoch the block is in (`None` before its first walk).
    epoch: Option<usize>,
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
    /// Where each row of the walk being trained is: its matrix row (own) or its working copy (shared).
    rowp: Vec<*mut f32>,
    /// The context and target rows of the batch being trained.
    cp: Vec<*mut f32>,
    tp: Vec<*mut f32>,
    logits: Vec<f32>,
    sg: Vec<f32>,
    g: Vec<f32>,
    ids1: Vec<u32>,
    noise: Vec<(u32, f32)>,
    /// The apply partition of each row of a walk.
    part: Vec<u32>,
    /// `lr` times each target's weight, for the position being trained.
    lrw: Vec<f32>,
    index: RowIndex,
    /// Of the walk being drawn: each position's window (its first and last position), its batches' ranges of
    /// positions (see `Block::next_walk`) and where each position's batches end, and the random numbers of its
    /// noise draws.
    wins: Vec<(usize, usize)>,
    each: Vec<(usize, usize)>,
    each_end: Vec<u32>,
    draws: Vec<u64>,
}

impl Scratch {
    fn new(plan: &Plan) -> Scratch {
        Scratch {
            rowp: Vec::new(),
            cp: Vec::new(),
            tp: Vec::new(),
            logits: Vec::new(),
            sg: Vec::new(),
            g: Vec::new(),
            ids1: Vec::new(),
            noise: Vec::new(),
            part: Vec::new(),
            lrw: Vec::new(),
            wins: Vec::new(),
            each: Vec::new(),
            each_end: Vec::new(),
            draws: Vec::new(),
            index: RowIndex::new(plan.max_rows()),
        }
    }
}

struct Ctx<'a> {
    plan: &'a Plan<'a>,
    syn0: Matrix<'a>,
    syn1: Matrix<'a>,
    slots: Vec<Slot>,
    marks: Marks,
    barrier: Barrier,
    /// Worker threads.
    threads: usize,
    /// Apply partitions: one for one thread, else a few per thread (any number gives the same result).
    parts: usize,
    /// The next item to claim: a block in *compute*; an apply partition, then a block to draw, in *apply and
    /// draw*. Emptied by each barrier.
    next: AtomicUsize,
    failed: AtomicBool,
    error: Mutex<Option<Error>>,
}

impl Block {
    fn new(index: usize, walks: Range<usize>, words: u64, walk_len: usize) -> Block {
        Block {
            index,
            next: walks.start,
            walks,
            buf: Vec::with_capacity(WALK_BUF * walk_len),
            buf_first: 0,
            buf_walks: 0,
            rng: stream_rng(0, 0, 0),
            sentence: Vec::with_capacity(walk_len),
            words,
            done: 0,
            epoch: None,
            lr: 0.0,
            kept: 0,
            pairs: 0,
            batches: 0,
            loss: 0.0,
            loss_n: 0,
        }
    }

    fn start_epoch(&mut self, plan: &Plan, epoch: usize) {
        self.rng = stream_rng(plan.seed, 1 + epoch as u64, self.index as u64);
        self.next = self.walks.start;
        self.buf_walks = 0;
        self.buf_first = self.walks.start;
        self.sentence.clear();
        self.done = 0;
        self.epoch = Some(epoch);
    }

    /// The raw ids of the walk [`Block::load_walk`] reads next, when it is in the buffer (else none).
    fn upcoming(&self, len: usize) -> &[u32] {
        let buffered = self.buf_first..self.buf_first + self.buf_walks;
        if self.epoch.is_some() && buffered.contains(&self.next) {
            let at = (self.next - self.buf_first) * len;
            &self.buf[at..at + len]
        } else {
            &[]
        }
    }

    /// Learning rate at the current position: linear in this block's progress over all epochs.
    fn learning_rate(&self, plan: &Plan) -> f32 {
        let total = (self.words * plan.epochs as u64).max(1) as f64;
        let epoch = self.epoch.unwrap_or(0) as u64;
        let mut frac = ((epoch * self.words + self.done) as f64 / total).min(1.0);
        if plan.lr_step > 0.0 {
            // Held for each stretch of `alpha_step` words of the run (gensim's jobs): the blocks advance in
            // lockstep, so a block's fraction is the run's.
            frac = ((frac / plan.lr_step).floor() * plan.lr_step).min(1.0);
        }
        let a = plan.alpha as f64 - (plan.alpha - plan.min_alpha) as f64 * frac;
        (a as f32).max(plan.min_alpha)
    }

    /// Load the next walk with at least two kept nodes into `sentence`, going on into the next epoch at the end
    /// of the block's walks; false after the last epoch or on a read error (stored in `ctx`). Returns the raw
    /// words consumed through `words`.
    fn load_walk(&mut self, ctx: &Ctx, words: &mut u64) -> bool {
        let plan = ctx.plan;
        let len = plan.walk_len;
        if self.epoch.is_none() {
            self.start_epoch(plan, 0);
        }
        loop {
            if self.next >= self.walks.end {
                let epoch = self.epoch.map_or(0, |e| e + 1);
                if epoch >= plan.epochs {
                    return false;
                }
                self.start_epoch(plan, epoch);
                continue;
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

    /// Draw this block's next walk into `w` for the super-step of mark generation `gen`: its windows and
    /// noise, position by position, and the distinct rows they touch, marked in `ctx.marks`; false when the
    /// block has no more work.
    fn next_walk(
        &mut self,
        ctx: &Ctx,
        w: &mut Work,
        s: &mut Scratch,
        words: &mut u64,
        gen: u32,
    ) -> bool {
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
        // The walk's windows, batches and noise draws' random numbers first, taken from the generator in the
        // order the training order would take them (a position's window size, its noise if drawn per position,
        // then its batches, each with its noise if drawn per batch), and the alias slots of every noise draw
        // asked for at once: the table reads below then find them in the cache instead of waiting on each in
        // turn. The same numbers as drawing them where they are used, so the same walks and vectors.
        s.wins.clear();
        s.each.clear();
        s.each_end.clear();
        s.draws.clear();
        let per_position =
            |i: usize| plan.noise == Noise::Window || (plan.noise == Noise::Walk && i == 0);
        let per_batch = plan.noise == Noise::Pair || plan.noise == Noise::Side;
        for i in 0..len {
            let reduce = ((self.rng.next_u32() as u64 * plan.window as u64) >> 32) as usize;
            let win = plan.window - reduce;
            let (lo, hi) = (i.saturating_sub(win), (i + win).min(len - 1));
            s.wins.push((lo, hi));
            let first = s.each.len();
            // One batch per position, one per side of the centre (contexts `lo..i`, then `i + 1..=hi`; the
            // batch's range holds `i`, which is never a context), or one per pair (p, i) in order of p.
            if plan.pairwise {
                s.each.extend((lo..=hi).filter(|&p| p != i).map(|p| (p, p)));
            } else if plan.noise == Noise::Side {
                s.each
                    .extend([(lo, i), (i, hi)].into_iter().filter(|&(a, b)| a < b));
            } else {
                s.each.push((lo, hi));
            }
            s.each_end.push(s.each.len() as u32);
            let draws =
                usize::from(per_position(i)) + if per_batch { s.each.len() - first } else { 0 };
            for _ in 0..draws * plan.negative {
                let r = self.rng.next_u64();
                prefetch(plan.alias.slot_ptr(r).cast(), 1);
                s.draws.push(r);
            }
        }
        let mut next = 0;
        let mut take = |noise: &mut Vec<(u32, f32)>| {
            draw_noise(plan, &s.draws[next..next + plan.negative], noise);
            next += plan.negative;
        };
        let mut first = 0;
        for i in 0..len {
            let (lo, hi) = s.wins[i];
            self.pairs += (hi - lo) as u64;
            let centre = self.sentence[i];
            if per_position(i) {
                take(&mut s.noise);
            }
            let last = s.each_end[i] as usize;
            for k in first..last {
                let (a, b) = s.each[k];
                if per_batch {
                    take(&mut s.noise);
                }
                let mut target = |id: u32| {
                    let (r, new) = index.get_or_insert(1 << 32 | id as u64, ids1.len() as u32);
                    if new {
                        ids1.push(id);
                    }
                    w.tgt.push(r);
                };
                target(centre);
                w.tgt_w.push(1.0);
                for &(n, times) in &s.noise {
                    if n != centre {
                        target(n);
                        w.tgt_w.push(times);
                    }
                }
                w.tgt_end.push(w.tgt.len() as u32);
                w.batch.push([i as u32, a as u32, b as u32]);
            }
            first = last;
        }
        w.ids.extend_from_slice(ids1);
        w.lr = self.lr;
        // The tags asked for before the swaps, which then do not wait on each in turn.
        for &id in &w.ids {
            ctx.marks.prefetch(id);
        }
        for (r, &id) in w.ids.iter().enumerate() {
            ctx.marks.mark((r >= w.n0) as usize, id, gen);
        }
        true
    }
}

/// The gradient factor `g` of a pair with logit `l` when pairs at |l| ≥ `saturation` (> 0) are saturated
/// (`scaled_noise`: the target is a noise node and [`super::Saturated::Scale`] is set). A pair saturated the right
/// way (a noise pair at l ≤ −saturation, a positive one at l ≥ saturation) has almost no gradient and is
/// skipped (0), as gensim skips it. A positive pair saturated the wrong way (l ≤ −saturation: a context whose
/// centre it predicts with σ ≈ 0) is skipped too: training it cost the real fixtures' graph 0.003 AUC
/// against degree-matched negatives. A noise pair saturated the wrong way (l ≥ saturation: a noise node,
/// often a hub, that the context predicts with σ ≈ 1) is what teaches a vector that it is not near every
/// hub: skipping it cost the real fixtures' graph 0.008–0.010 of that AUC. With `scaled_noise` it trains,
/// but with `g · saturation / l`: its step on the context is about `lr · saturation / (|c| cos θ)` at most,
/// shrinking as the vectors grow. A full step there (`saturation` 0, or no scaling) let the norms grow
/// without bound at full size (BENCHMARKS.md "Training").
#[inline]
fn saturate(g: f32, l: f32, scaled_noise: bool, saturation: f32) -> f32 {
    if l.abs() >= saturation {
        if scaled_noise && l > 0.0 {
            g * (saturation / l)
        } else {
            0.0
        }
    } else {
        g
    }
}

/// Draw `plan.negative` noise nodes into `noise`, each once with the number of times it was drawn.
fn draw_noise(plan: &Plan, draws: &[u64], noise: &mut Vec<(u32, f32)>) {
    noise.clear();
    for &r in draws {
        let n = plan.alias.sample(r);
        match noise.iter_mut().find(|(m, _)| *m == n) {
            Some((_, times)) => *times += 1.0,
            None => noise.push((n, 1.0)),
        }
    }
}

impl Ctx<'_> {
    /// # Safety
    /// The calling thread claimed block `i` in the current phase (its compute, or its draw).
    #[allow(clippy::mut_from_ref)]
    unsafe fn block_mut(&self, i: usize) -> &mut Block {
        // SAFETY: the caller's contract: no other reference to the block exists.
        unsafe { &mut *self.slots[i].block.get() }
    }

    /// # Safety
    /// The calling thread claimed block `i` in the compute phase of `step`, or its draw in the phase before.
    #[allow(clippy::mut_from_ref)]
    unsafe fn work_mut(&self, i: usize, step: u64) -> &mut Work {
        // SAFETY: the caller's contract: no other reference to this work exists.
        unsafe { &mut *self.slots[i].work[(step & 1) as usize].get() }
    }

    /// # Safety
    /// Nobody writes this work while the reference lives: the apply phase of `step`, or a block of the
    /// compute phase of `step` that the calling thread claimed and is not training.
    unsafe fn work(&self, i: usize, step: u64) -> &Work {
        // SAFETY: the caller's contract: no writer.
        unsafe { &*self.slots[i].work[(step & 1) as usize].get() }
    }

    fn matrix(&self, m: usize) -> &Matrix<'_> {
        if m == 0 {
            &self.syn0
        } else {
            &self.syn1
        }
    }

    fn prefetch(&self, w: &Work) {
        for (r, &id) in w.ids.iter().enumerate() {
            self.matrix((r >= w.n0) as usize).prefetch(id);
            self.marks.prefetch(id);
        }
    }

    /// Train the walk `w` of super-step `step` position by position (each position sees the updates of the
    /// walk's earlier positions): each row no other walk of the step touches in place in its matrix, each
    /// shared row on a copy; then leave in `w.delta` what the walk changed in each shared row.
    fn compute(&self, w: &mut Work, blk: &mut Block, s: &mut Scratch, step: u64) {
        let n = w.ids.len();
        if n == 0 {
            return;
        }
        let plan = self.plan;
        let d = plan.dim;
        let n0 = w.n0;
        let gen = gen(step);
        w.delta.clear();
        w.shared.clear();
        w.slot.clear();
        for (r, &id) in w.ids.iter().enumerate() {
            let m = (r >= n0) as usize;
            let shared = self.marks.shared(m, id, gen);
            w.shared.push(shared);
            if shared {
                w.slot.push((w.delta.len() / d) as u32);
                // SAFETY: compute phase: a shared row is only read until *apply*.
                w.delta.extend_from_slice(unsafe { self.matrix(m).row(id) });
            } else {
                w.slot.push(u32::MAX);
            }
        }
        // Each row where the walk trains it: an own row in place in its matrix (no other walk of the step
        // reads or writes it: the marks), a shared one on its copy. The same operations on the same values in
        // the same order as on a copy of every row, so the same bits.
        s.rowp.clear();
        let copies = w.delta.as_mut_ptr();
        for (r, &id) in w.ids.iter().enumerate() {
            s.rowp.push(if w.shared[r] {
                copies.wrapping_add(w.slot[r] as usize * d)
            } else {
                self.matrix((r >= n0) as usize).row_ptr(id)
            });
        }
        let mut t0 = 0;
        for (bi, &[i, lo, hi]) in w.batch.iter().enumerate() {
            let t1 = w.tgt_end[bi] as usize;
            s.cp.clear();
            s.cp.extend(
                (lo..=hi)
                    .filter(|&p| p != i)
                    .map(|p| s.rowp[w.sent[p as usize] as usize]),
            );
            s.tp.clear();
            s.tp.extend(w.tgt[t0..t1].iter().map(|&t| s.rowp[n0 + t as usize]));
            let (nc, nt) = (s.cp.len(), t1 - t0);
            // SAFETY: each pointer is a row of `dim` floats: a matrix row this walk alone touches in this
            // phase, or a row of `w.delta` (not reallocated from here on); nothing writes them until `update`.
            let (c, o) = unsafe { (Rows::from_ptrs(d, &s.cp), Rows::from_ptrs(d, &s.tp)) };
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
            // g = (label − σ)·lr·times, label 1 in the centre's column (k = 0) and 0 in the noise columns.
            let tw = &w.tgt_w[t0..t1];
            s.lrw.clear();
            s.lrw.extend(tw.iter().map(|&times| w.lr * times));
            for (gr, sr) in s.g.chunks_exact_mut(nt).zip(s.sg.chunks_exact(nt)) {
                gr[0] = (1.0 - sr[0]) * s.lrw[0];
                for k in 1..nt {
                    gr[k] = (0.0 - sr[k]) * s.lrw[k];
                }
            }
            // Saturated pairs (|logit| ≥ saturation): a noise pair saturated the wrong way (logit ≥
            // saturation) trains with its step scaled by saturation / logit unless `--saturated skip`; every
            // other one is skipped, as gensim skips them all (`MAX_EXP`). See `saturate`. The logits are the
            // same bits for every kernel and thread count, so is the choice.
            // (Most batches have no saturated pair: one comparison pass, then nothing.)
            let sat = plan.saturation;
            if sat > 0.0 && s.logits.iter().any(|l| l.abs() >= sat) {
                for (gr, lr) in s.g.chunks_exact_mut(nt).zip(s.logits.chunks_exact(nt)) {
                    for (k, (gv, &l)) in gr.iter_mut().zip(lr).enumerate() {
                        *gv = saturate(*gv, l, k > 0 && plan.scale_noise, plan.saturation);
                    }
                }
            }
            if blk.batches.is_multiple_of(LOSS_EVERY) {
                let mut loss = 0f64;
                for row in s.sg.chunks_exact(nt) {
                    for (k, &sg) in row.iter().enumerate() {
                        let p = if k == 0 { sg } else { 1.0 - sg };
                        loss -= tw[k] as f64 * (p.max(1e-7) as f64).ln();
                    }
                }
                blk.loss += loss;
                blk.loss_n += nc as u64;
            }
            blk.batches += 1;
            // SAFETY: as for `gram_rows` above; the targets are distinct `syn1` rows, the contexts `syn0` rows.
            unsafe { plan.kernel.update_ptrs(d, &s.g, &s.cp, &s.tp) };
            t0 = t1;
        }
        for (r, &id) in w.ids.iter().enumerate() {
            if w.shared[r] {
                let k = w.slot[r] as usize;
                let m = self.matrix((r >= n0) as usize);
                // SAFETY: compute phase: a shared row is only read until *apply*.
                plan.kernel
                    .sub_assign(&mut w.delta[k * d..(k + 1) * d], unsafe { m.row(id) });
            }
        }
        // The shared rows in order of apply partition (counting sort; in order of first use within one).
        w.order.clear();
        w.part_end.clear();
        w.part_end.resize(self.parts, 0);
        if self.parts == 1 {
            w.order
                .extend((0..n as u32).filter(|&r| w.shared[r as usize]));
            w.part_end[0] = w.order.len() as u32;
            return;
        }
        s.part.clear();
        s.part
            .extend(w.ids.iter().zip(&w.shared).map(|(&id, &shared)| {
                if shared {
                    part(id, self.parts) as u32
                } else {
                    u32::MAX
                }
            }));
        let mut total = 0;
        for &p in &s.part {
            if p != u32::MAX {
                w.part_end[p as usize] += 1;
                total += 1;
            }
        }
        let mut at = 0;
        for e in w.part_end.iter_mut() {
            at += *e;
            *e = at;
        }
        w.order.resize(total as usize, 0);
        for (r, &p) in s.part.iter().enumerate().rev() {
            if p != u32::MAX {
                let e = &mut w.part_end[p as usize];
                *e -= 1;
                w.order[*e as usize] = r as u32;
            }
        }
        // part_end now holds each partition's start; shift to ends.
        w.part_end.rotate_left(1);
        w.part_end[self.parts - 1] = total;
    }

    /// Add the deltas of super-step `step` to the shared rows of apply partition `p`, block by block in block
    /// order, prefetching the row and the delta [`APPLY_AHEAD`] additions ahead (both were last touched in
    /// the compute phase, often by another core).
    fn apply(&self, p: usize, step: u64, todo: &mut Vec<(*mut f32, *const f32)>) {
        let d = self.plan.dim;
        todo.clear();
        for i in 0..self.slots.len() {
            // SAFETY: apply phase of `step`: nobody writes this work.
            let w = unsafe { self.work(i, step) };
            for &r in w.part_rows(p) {
                let r = r as usize;
                let (m, id) = (self.matrix((r >= w.n0) as usize), w.ids[r]);
                let k = w.slot[r] as usize;
                todo.push((m.row_ptr(id), w.delta[k * d..(k + 1) * d].as_ptr()));
            }
        }
        for (k, &(row, delta)) in todo.iter().enumerate() {
            if let Some(&(r, dl)) = todo.get(k + APPLY_AHEAD) {
                prefetch(r, d);
                prefetch(dl, d);
            }
            // SAFETY: apply phase; partition `p` is this thread's alone (claimed) and holds the row (`part` is
            // a function of the id), so no other reference to it exists; the delta is a live row of a work
            // nobody writes in this phase. Both are `d` floats long.
            let (row, delta) = unsafe {
                (
                    std::slice::from_raw_parts_mut(row, d),
                    std::slice::from_raw_parts(delta, d),
                )
            };
            self.plan.kernel.add_assign(row, delta);
        }
    }

    /// Draw the walks of super-step `step` of the blocks in `claimed` (in the phase before that step's
    /// compute); returns how many had one. The subsampling thresholds and tags of each walk's nodes are
    /// requested first, for all the claim's blocks (random reads into arrays of a few bytes per node).
    fn draw_claimed(
        &self,
        claimed: Range<usize>,
        step: u64,
        s: &mut Scratch,
        words: &mut u64,
    ) -> usize {
        let plan = self.plan;
        for b in claimed.clone() {
            // SAFETY: this thread claimed block b's draw (read only here).
            for &id in unsafe { self.block_mut(b) }.upcoming(plan.walk_len) {
                if let Some(k) = plan.keep.and_then(|keep| keep.get(id as usize)) {
                    prefetch(k as *const u64 as *const f32, 1);
                }
                self.marks.prefetch(id);
            }
        }
        claimed.map(|b| self.draw(b, step, s, words) as usize).sum()
    }

    /// Draw block `b`'s walk for super-step `step`; returns whether it had one.
    fn draw(&self, b: usize, step: u64, s: &mut Scratch, words: &mut u64) -> bool {
        // SAFETY: this thread claimed block b's draw; nobody else touches the block or this work now (the
        // apply of the step before reads the other work).
        let (block, work) = unsafe { (self.block_mut(b), self.work_mut(b, step)) };
        if self.failed.load(Ordering::Relaxed) || !block.next_walk(self, work, s, words, gen(step))
        {
            work.clear();
            return false;
        }
        true
    }

    /// Train the walks of super-step `step` of the blocks in `claimed` (a compute-phase claim), prefetching
    /// the rows of the walk `prefetch` ahead.
    fn compute_claimed(&self, claimed: Range<usize>, step: u64, s: &mut Scratch) {
        let ahead = self.plan.prefetch;
        for b in claimed.start..(claimed.start + ahead).min(claimed.end) {
            // SAFETY: compute phase; this thread claimed block b and trains none yet.
            self.prefetch(unsafe { self.work(b, step) });
        }
        for b in claimed.clone() {
            if ahead > 0 && b + ahead < claimed.end {
                // SAFETY: as above: claimed, not being trained.
                self.prefetch(unsafe { self.work(b + ahead, step) });
            }
            // SAFETY: compute phase; this thread claimed block b.
            let (block, work) = unsafe { (self.block_mut(b), self.work_mut(b, step)) };
            self.compute(work, block, s, step);
        }
    }

    /// The loop of one worker thread; returns the number of super-steps and where its time went.
    fn worker(&self) -> (u64, Phases) {
        let _guard = PoisonOnUnwind(&self.barrier);
        let plan = self.plan;
        let blocks = self.slots.len();
        let mut scratch = Scratch::new(plan);
        let mut todo = Vec::new();
        let mut words = 0u64;
        let mut time = Phases::default();
        let mut clock = Instant::now();
        // The first super-step's walks.
        let mut active = 0;
        while let Some(claimed) = claim(&self.next, blocks, self.threads, 0) {
            active += self.draw_claimed(claimed, 0, &mut scratch, &mut words);
        }
        time.draw += lap(&mut clock);
        let Some(mut total) = self.barrier.wait_sum(active, &self.next) else {
            return (0, time);
        };
        time.wait += lap(&mut clock);
        let mut step = 0u64;
        while total > 0 {
            while let Some(claimed) = claim(&self.next, blocks, self.threads, 0) {
                self.compute_claimed(claimed, step, &mut scratch);
            }
            time.compute += lap(&mut clock);
            if self.barrier.wait_sum(0, &self.next).is_none() {
                break;
            }
            time.wait += lap(&mut clock);
            // The shared rows' deltas of this step (one partition per claim), then the next step's walks.
            let mut active = 0;
            let items = self.parts + blocks;
            while let Some(claimed) = claim(&self.next, items, self.threads, self.parts) {
                if claimed.start < self.parts {
                    // Claims below `parts` are single partitions.
                    self.apply(claimed.start, step, &mut todo);
                    time.apply += lap(&mut clock);
                } else {
                    let blocks = claimed.start - self.parts..claimed.end - self.parts;
                    active += self.draw_claimed(blocks, step + 1, &mut scratch, &mut words);
                    time.draw += lap(&mut clock);
                }
            }
            if words >= PROGRESS_EVERY {
                plan.progress.inc(std::mem::take(&mut words));
            }
            step += 1;
            let next = self.barrier.wait_sum(active, &self.next);
            time.wait += lap(&mut clock);
            match next {
                Some(t) => total = t,
                None => break,
            }
        }
        plan.progress.inc(words);
        (step, time)
    }
}

/// Seconds since `clock`, which is moved to now.
fn lap(clock: &mut Instant) -> f64 {
    let now = Instant::now();
    let s = (now - *clock).as_secs_f64();
    *clock = now;
    s
}

/// Train `syn0` (input vectors, the embeddings) and `syn1` (output vectors), both `rows × dim`, in place.
pub fn run(plan: &Plan, syn0: &mut [f32], syn1: &mut [f32]) -> Result<Outcome> {
    let n_walks = plan.data.len_ids() / plan.walk_len.max(1);
    let blocks_n = plan.blocks.max(1);
    assert_eq!(plan.block_words.len(), blocks_n, "one word count per block");
    let threads = plan.threads.clamp(1, blocks_n);
    let cap = plan.max_rows();
    let syn0 = Matrix::new(syn0, plan.dim);
    let syn1 = Matrix::new(syn1, plan.dim);
    assert_eq!(syn0.rows, syn1.rows, "both matrices have a row per node");
    let ctx = Ctx {
        plan,
        marks: Marks::new(syn0.rows),
        syn0,
        syn1,
        slots: (0..blocks_n)
            .map(|b| Slot {
                block: UnsafeCell::new(Block::new(
                    b,
                    block_walks(b, blocks_n, n_walks),
                    plan.block_words[b],
                    plan.walk_len,
                )),
                work: [0, 1].map(|_| UnsafeCell::new(Work::with_capacity(cap, plan.dim))),
            })
            .collect(),
        barrier: Barrier::new(threads),
        threads,
        parts: if threads == 1 {
            1
        } else {
            APPLY_PARTS_PER_THREAD * threads
        },
        next: AtomicUsize::new(0),
        failed: AtomicBool::new(false),
        error: Mutex::new(None),
    };
    let (steps, phases, spawn_error) = std::thread::scope(|scope| {
        let mut spawn_error = None;
        let mut others = Vec::new();
        for t in 1..threads {
            let ctx = &ctx;
            let spawned = std::thread::Builder::new()
                .name(format!("sword-train-{t}"))
                .spawn_scoped(scope, move || ctx.worker());
            match spawned {
                Ok(h) => others.push(h),
                Err(e) => {
                    // The threads already started stop at their first barrier.
                    ctx.barrier.poison();
                    spawn_error = Some(e);
                    break;
                }
            }
        }
        let (steps, mut phases) = match spawn_error {
            None => ctx.worker(),
            Some(_) => (0, Phases::default()),
        };
        for h in others {
            // A thread that panicked poisoned the barrier; its panic goes on here, as the scope would have.
            match h.join() {
                Ok((_, p)) => phases += p,
                Err(panic) => std::panic::resume_unwind(panic),
            }
        }
        (steps, phases, spawn_error)
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
        phases,
        ..Outcome::default()
    };
    for slot in ctx.slots {
        let b = slot.block.into_inner();
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
                noise: Noise::Window,
                pairwise: false,
                epochs: 1,
                alpha: 0.5,
                min_alpha: 0.5,
                lr_step: 0.0,
                saturation: 0.0,
                scale_noise: true,
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

    /// The learning rate by hand: 1.0 → 0.0 over a run of 1,000 words in two blocks of 500. Stepped every
    /// 100 words of the run, a block's rate is the linear one at the start of its stretch (a block's
    /// fraction is the run's); with `alpha_step` 0 it is linear at every walk; the second epoch continues.
    #[test]
    fn learning_rate_steps_per_stretch_of_the_run() {
        let f = Fixture::new((0..1000).map(|i| i % 7).collect(), 10, 7, 2);
        assert_eq!(f.words, vec![500, 500]);
        let src: &[u32] = &f.data;
        let rate = |alpha_step: u64, epochs: usize, epoch: usize, done: u64| {
            let plan = Plan {
                alpha: 1.0,
                min_alpha: 0.0,
                lr_step: lr_step(alpha_step, 1000, epochs),
                epochs,
                ..f.plan(&src, 10, 2)
            };
            let mut b = Block::new(1, 50..100, 500, 10);
            b.epoch = Some(epoch);
            b.done = done;
            b.learning_rate(&plan)
        };
        // Stretches of 100 run words = 50 block words: 0..50 → 1.0, 50..100 → 0.9, …
        for (done, want) in [
            (0, 1.0),
            (49, 1.0),
            (50, 0.9),
            (99, 0.9),
            (260, 0.5),
            (499, 0.1),
        ] {
            let got = rate(100, 1, 0, done);
            assert!((got - want).abs() < 1e-6, "done {done}: {got} ≠ {want}");
        }
        for (done, want) in [(0, 1.0), (60, 0.88), (499, 0.002)] {
            let got = rate(0, 1, 0, done);
            assert!(
                (got - want).abs() < 1e-6,
                "linear, done {done}: {got} ≠ {want}"
            );
        }
        // Two epochs: 2,000 run words, stretches of 100 = 50 of the block's 1,000; epoch 1, done 60 is
        // 560 of them → the stretch from 550 → 0.45.
        let got = rate(100, 2, 1, 60);
        assert!((got - 0.45).abs() < 1e-6, "epoch 1: {got}");
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
        // a + g·b, in f64.
        let step = |a: [f32; 2], g: f64, b: [f32; 2]| {
            [a[0] as f64 + g * b[0] as f64, a[1] as f64 + g * b[1] as f64]
        };
        let g1 = (1.0 - sigma(dot(c1, o0))) * 0.5;
        let (c1n, o0n) = (step(c1, g1, o0), step(o0, g1, c1));
        // Batch 2 (next super-step): context 0 against centre 1 (o1 untouched so far).
        let g2 = (1.0 - sigma(dot(c0, o1))) * 0.5;
        let (c0n, o1n) = (step(c0, g2, o1), step(o1, g2, c0));
        let want0 = [c0n[0], c0n[1], c1n[0], c1n[1]];
        let want1 = [o0n[0], o0n[1], o1n[0], o1n[1]];
        for (got, want) in syn0.iter().zip(want0).chain(syn1.iter().zip(want1)) {
            assert!((*got as f64 - want).abs() < 1e-6, "{syn0:?} {syn1:?}");
        }
    }

    /// `saturation`: the walk `0 1` of [`two_batches_by_hand`] with batch 1's logit at −6 (c1·o0: a positive
    /// pair saturated the wrong way, whose step would be (1 − σ(−6))·lr ≈ 0.499 of a full one) and batch 2's
    /// at −0.55. With `saturation` 6 batch 1 is skipped — c1 and o0 keep their bytes — and batch 2 trains as
    /// by hand; with 0 batch 1 moves both rows.
    #[test]
    fn saturated_pairs_are_skipped() {
        let f = Fixture::new(vec![0, 1], 2, 2, 1);
        let src: &[u32] = &f.data;
        let (c0, c1) = ([0.5f32, -1.0], [-4.0f32, -2.0]);
        let (o0, o1) = ([1.0f32, 1.0], [-0.3f32, 0.4]);
        let dot = |a: [f32; 2], b: [f32; 2]| a[0] as f64 * b[0] as f64 + a[1] as f64 * b[1] as f64;
        assert_eq!(dot(c1, o0), -6.0);
        for saturation in [6.0f32, 0.0] {
            let plan = Plan {
                saturation,
                ..f.plan(&src, 2, 1)
            };
            let mut syn0 = [c0, c1].concat();
            let mut syn1 = [o0, o1].concat();
            run(&plan, &mut syn0, &mut syn1).unwrap();
            let g2 = (1.0 - sigma(dot(c0, o1))) * 0.5;
            let want_c0 = [
                c0[0] as f64 + g2 * o1[0] as f64,
                c0[1] as f64 + g2 * o1[1] as f64,
            ];
            let want_o1 = [
                o1[0] as f64 + g2 * c0[0] as f64,
                o1[1] as f64 + g2 * c0[1] as f64,
            ];
            for (got, want) in [
                (syn0[0], want_c0[0]),
                (syn0[1], want_c0[1]),
                (syn1[2], want_o1[0]),
            ]
            .into_iter()
            .chain([(syn1[3], want_o1[1])])
            {
                assert!(
                    (got as f64 - want).abs() < 1e-6,
                    "{saturation}: {syn0:?} {syn1:?}"
                );
            }
            if saturation > 0.0 {
                assert_eq!(
                    (&syn0[2..], &syn1[..2]),
                    (&c1[..], &o0[..]),
                    "batch 1 trained"
                );
            } else {
                let g1 = (1.0 - sigma(-6.0)) * 0.5;
                let want = c1[0] as f64 + g1 * o0[0] as f64;
                assert!((syn0[2] as f64 - want).abs() < 1e-6, "{syn0:?}");
            }
        }
    }

    /// `saturate` by hand: below the threshold the factor passes; at or past it a right-way pair (either
    /// column) and a wrong-way positive are 0; a wrong-way noise pair is scaled by saturation / logit.
    #[test]
    fn saturate_by_hand() {
        let cases = [
            // (g, logit, noise, want)
            (0.3f32, 5.9f32, false, 0.3f32),
            (-0.2, 5.9, true, -0.2),
            (-0.2, -5.9, true, -0.2),
            (0.49, -6.0, false, 0.0),
            (0.49, -30.0, false, 0.0),
            (0.001, 7.0, false, 0.0),
            (-0.001, -7.0, true, 0.0),
            (-0.5, 6.0, true, -0.5),
            (-0.5, 8.0, true, -0.375),
            (-0.5, 600.0, true, -0.005),
        ];
        for (g, l, noise, want) in cases {
            let got = saturate(g, l, noise, 6.0);
            assert!(
                (got - want).abs() < 1e-7,
                "saturate({g}, {l}, {noise}) = {got}, not {want}"
            );
        }
        // A NaN logit is not saturated: its factor passes (the run then fails as diverged).
        assert_eq!(saturate(-0.5, f32::NAN, true, 6.0), -0.5);
    }

    /// A noise pair saturated the wrong way, in a whole run by hand: the walk `0 1`, window 1, one noise
    /// node per centre, always node 2 (the only one with weight). Batch 1: context 1 against centre 0
    /// (logit 0) and noise 2 (logit c1·o2 = 8, wrong way); batch 2: context 0 against centre 1 and noise 2
    /// as batch 1 left it. With `saturation` 6 the noise step of batch 1 is 6/8 of the full one (`scale_noise`)
    /// or none (skipped); with 0 it is the full one (f64 by hand, all three).
    #[test]
    fn wrong_way_noise_pairs_train_with_a_scaled_step() {
        let mut f = Fixture::new(vec![0, 1], 2, 3, 1);
        f.alias = AliasTable::new(&[0.0, 0.0, 1.0]).unwrap();
        let src: &[u32] = &f.data;
        let (c0, c1) = ([0.5f64, -1.0], [4.0f64, 2.0]);
        let (o0, o1, o2) = ([0.1f64, -0.2], [-0.3f64, 0.4], [1.5f64, 1.0]);
        let dot = |a: [f64; 2], b: [f64; 2]| a[0] * b[0] + a[1] * b[1];
        let axpy = |a: [f64; 2], g: f64, b: [f64; 2]| [a[0] + g * b[0], a[1] + g * b[1]];
        assert_eq!((dot(c1, o0), dot(c1, o2)), (0.0, 8.0));
        let lr = 0.5;
        for (saturation, scale_noise, scale) in
            [(6.0f32, true, 0.75), (6.0, false, 0.0), (0.0, true, 1.0)]
        {
            let plan = Plan {
                saturation,
                scale_noise,
                negative: 1,
                ..f.plan(&src, 2, 1)
            };
            let f32s = |v: &[[f64; 2]]| v.iter().flatten().map(|&x| x as f32).collect::<Vec<_>>();
            let mut syn0 = f32s(&[c0, c1, [0.0, 0.0]]);
            let mut syn1 = f32s(&[o0, o1, o2]);
            run(&plan, &mut syn0, &mut syn1).unwrap();
            // Batch 1: both targets read before either moves (one context).
            let g0 = (1.0 - sigma(dot(c1, o0))) * lr;
            let g2 = (0.0 - sigma(dot(c1, o2))) * lr * scale;
            let c1n = axpy(axpy(c1, g0, o0), g2, o2);
            let (o0n, o2n) = (axpy(o0, g0, c1), axpy(o2, g2, c1));
            // Batch 2: context 0 against centre 1 and the moved noise row.
            let (h1, h2) = (
                (1.0 - sigma(dot(c0, o1))) * lr,
                (0.0 - sigma(dot(c0, o2n))) * lr,
            );
            assert!(dot(c0, o2n).abs() < 6.0);
            let c0n = axpy(axpy(c0, h1, o1), h2, o2n);
            let (o1n, o2nn) = (axpy(o1, h1, c0), axpy(o2n, h2, c0));
            let want0 = [c0n, c1n, [0.0, 0.0]];
            let want1 = [o0n, o1n, o2nn];
            for (got, want) in syn0
                .iter()
                .zip(want0.iter().flatten())
                .chain(syn1.iter().zip(want1.iter().flatten()))
            {
                assert!(
                    (*got as f64 - want).abs() < 1e-5,
                    "{saturation}: {syn0:?} {syn1:?}"
                );
            }
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

    /// Which output rows a walk's training moves, by noise mode: one walk of the nodes 0..10 on a graph of
    /// 4 000 nodes with uniform noise. An output row starts at zero and moves once it is a target (its first
    /// gradient is −σ(0)·lr·c, c ≠ 0), so the moved rows beyond the walk's nodes are its noise nodes: per
    /// walk at most `negative`; per centre more than that, at most `negative` × 10 positions; per pair more
    /// than 10 × `negative`, at most `negative` × pairs.
    #[test]
    fn noise_is_drawn_per_walk_centre_or_pair() {
        let nodes = 4000;
        let f = Fixture::new((0..10).collect(), 10, nodes, 1);
        let src: &[u32] = &f.data;
        for noise in [Noise::Walk, Noise::Window, Noise::Side, Noise::Pair] {
            let plan = Plan {
                dim: 4,
                window: 5,
                negative: 5,
                noise,
                pairwise: noise == Noise::Pair,
                ..f.plan(&src, 10, 1)
            };
            let mut syn0: Vec<f32> = (0..nodes * 4)
                .map(|k| 0.1 + (k % 7) as f32 * 0.01)
                .collect();
            let mut syn1 = vec![0f32; nodes * 4];
            let out = run(&plan, &mut syn0, &mut syn1).unwrap();
            let moved = (10..nodes)
                .filter(|&r| syn1[r * 4..r * 4 + 4].iter().any(|&x| x != 0.0))
                .count() as u64;
            let (lo, hi) = match noise {
                Noise::Walk => (1, 5),
                Noise::Window => (6, 50),
                Noise::Side => (11, 90),
                Noise::Pair => (51, 5 * out.pairs),
            };
            assert!(
                (lo..=hi).contains(&moved),
                "{noise:?}: {moved} noise rows moved, {} pairs",
                out.pairs
            );
            // One batch per position, per side of a centre (the first and last position have one side:
            // 1 + 8 × 2 + 1), or per pair.
            let batches = match noise {
                Noise::Pair => out.pairs,
                Noise::Side => 18,
                _ => 10,
            };
            assert_eq!(out.batches, batches, "{noise:?}");
        }
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
