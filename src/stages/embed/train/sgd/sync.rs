//! What the worker threads of [`super`] share, and how they hand work to each other: the two matrices
//! under the phase discipline, the claims of blocks and apply partitions, the barrier between phases, and
//! the marks that tell a walk's own rows from shared ones.

use super::MAX_CHUNK;
use std::marker::PhantomData;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

/// A row-major `rows × dim` matrix shared by the workers under the phase discipline of the module docs:
/// during *compute* a shared row is only read, and an own row is read and written by the one thread that
/// trains its walk; during *apply* each shared row is written by the one thread that claimed its partition
/// and read by no other.
pub(super) struct Matrix<'a> {
    ptr: *mut f32,
    pub(super) rows: usize,
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
    pub(super) fn new(m: &'a mut [f32], dim: usize) -> Matrix<'a> {
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
    /// No thread writes row `i` while the slice lives.
    #[inline(always)]
    pub(super) unsafe fn row(&self, i: u32) -> &[f32] {
        assert!((i as usize) < self.rows, "row {i} out of bounds");
        // SAFETY: in bounds; no concurrent writer (the caller's contract).
        unsafe { std::slice::from_raw_parts(self.ptr.add(i as usize * self.dim), self.dim) }
    }

    /// The start of row `i` (in bounds: checked).
    #[inline(always)]
    pub(super) fn row_ptr(&self, i: u32) -> *mut f32 {
        assert!((i as usize) < self.rows, "row {i} out of bounds");
        self.ptr.wrapping_add(i as usize * self.dim)
    }

    #[inline(always)]
    pub(super) fn prefetch(&self, i: u32) {
        if (i as usize) < self.rows {
            prefetch(self.ptr.wrapping_add(i as usize * self.dim), self.dim);
        }
    }
}

/// Ask for the `n` floats at `p` to be brought into the cache (a hint: it never faults).
#[inline(always)]
pub(super) fn prefetch(p: *const f32, n: usize) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
        let base = p as *const i8;
        let mut off = 0;
        while off < n * 4 {
            // SAFETY: a prefetch never faults, whatever the address.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(base.wrapping_add(off)) };
            off += 64;
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = (p, n);
}

/// The apply partition of row `id` among `parts`: a multiplicative hash, so hubs and id ranges spread.
/// Which partition a row falls in, and which thread applies a partition, never changes the result: a row
/// is in one partition, and its deltas are added in block order whoever adds them.
#[inline(always)]
pub(super) fn part(id: u32, parts: usize) -> usize {
    ((id.wrapping_mul(0x9E37_79B9) as u64 * parts as u64) >> 32) as usize
}

/// Claim the next items of `total` from `counter` (none left: `None`): one at a time below `single`, else a
/// share of what is left — `1/(2·threads)` of it, between 1 and [`MAX_CHUNK`] — so the first claims are
/// long (the walks of a claim are prefetched ahead) and the last ones short (the threads finish together).
#[inline]
pub(super) fn claim(
    counter: &AtomicUsize,
    total: usize,
    threads: usize,
    single: usize,
) -> Option<Range<usize>> {
    let mut at = counter.load(Ordering::Relaxed);
    loop {
        if at >= total {
            return None;
        }
        let n = if at < single {
            1
        } else {
            ((total - at) / (2 * threads)).clamp(1, MAX_CHUNK)
        };
        match counter.compare_exchange_weak(at, at + n, Ordering::Relaxed, Ordering::Relaxed) {
            Ok(_) => return Some(at..at + n),
            Err(now) => at = now,
        }
    }
}

// ---------------------------------------------------------------------------------------------------------
// Barrier

/// A spinning barrier that also sums one number over the threads, and that a failing thread can poison
/// (the others then stop instead of waiting forever).
pub(super) struct Barrier {
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
    pub(super) fn new(n: usize) -> Barrier {
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

    /// Wait for all threads; returns the sum of their `x`, or `None` when poisoned. The last thread to
    /// arrive sets `reset` to 0 before it releases the others (a claim counter of the phase that ended).
    pub(super) fn wait_sum(&self, x: usize, reset: &AtomicUsize) -> Option<usize> {
        let g = self.generation.load(Ordering::Acquire);
        let sum = &self.sums[g & 1];
        sum.fetch_add(x, Ordering::AcqRel);
        if self.count.fetch_add(1, Ordering::AcqRel) + 1 == self.n {
            reset.store(0, Ordering::Relaxed);
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

    pub(super) fn poison(&self) {
        self.poisoned.store(true, Ordering::Relaxed);
    }
}

/// Poisons the barrier if its thread unwinds, so the other threads stop.
pub(super) struct PoisonOnUnwind<'a>(pub(super) &'a Barrier);

impl Drop for PoisonOnUnwind<'_> {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.poison();
        }
    }
}

/// Which rows the walks of a super-step touch, and whether more than one walk does: per row of each matrix
/// (the two tags of a node side by side, one cache line), `gen << 1 | shared` of the last super-step whose
/// walks touched it (`gen`: the step's number + 1, modulo
/// 2³¹, see [`gen`]). Marked when the walks are drawn (the phase before the step's *compute*), read when a
/// walk's rows are copied. A row no other walk of its step touches is written back by the thread that
/// trained it, at the end of its walk; the others go through the ordered *apply*.
///
/// The tag of a row last touched exactly 2³¹·k steps earlier looks like the current step's, so its first
/// walk finds it "already touched" and the row goes through *apply*: still a function of the walks (not
/// of the threads), and *apply* is right for any row. The converse — a row two walks touch taken as one
/// walk's — cannot happen: the second walk always finds the first one's tag.
pub(super) struct Marks {
    tags: Vec<AtomicU32>,
}

impl Marks {
    pub(super) fn new(rows: usize) -> Marks {
        Marks {
            tags: (0..2 * rows).map(|_| AtomicU32::new(0)).collect(),
        }
    }

    #[inline(always)]
    fn tag(&self, m: usize, id: u32) -> &AtomicU32 {
        &self.tags[2 * id as usize + m]
    }

    /// Record that one walk of the step `gen` touches row `id` of matrix `m` (0: `syn0`, 1: `syn1`); a walk
    /// marks each of its rows once.
    #[inline(always)]
    pub(super) fn mark(&self, m: usize, id: u32, gen: u32) {
        let t = self.tag(m, id);
        // The first walk to arrive replaces an older step's tag. Every later one finds this step's and sets
        // the shared bit after its own swap (which may have cleared it): the bit ends set iff two walks came.
        if t.swap(gen << 1, Ordering::Relaxed) >> 1 == gen {
            t.fetch_or(1, Ordering::Relaxed);
        }
    }

    /// Whether another walk of the step `gen` touches row `id` of matrix `m` (every mark of the step is
    /// done: the barrier before *compute* orders them).
    #[inline(always)]
    pub(super) fn shared(&self, m: usize, id: u32, gen: u32) -> bool {
        self.tag(m, id).load(Ordering::Relaxed) != gen << 1
    }

    /// Ask for the tags of node `id` (both matrices).
    #[inline(always)]
    pub(super) fn prefetch(&self, id: u32) {
        if let Some(t) = self.tags.get(2 * id as usize) {
            prefetch(t.as_ptr() as *const f32, 1);
        }
    }
}

/// The mark generation of super-step `step` (see [`Marks`]).
#[inline]
pub(super) fn gen(step: u64) -> u32 {
    ((step + 1) & 0x7FFF_FFFF) as u32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn barrier_sums_resets_and_poisons() {
        let b = Barrier::new(3);
        let counter = AtomicUsize::new(0);
        let sums: Vec<Option<usize>> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..3)
                .map(|i| {
                    let (b, counter) = (&b, &counter);
                    s.spawn(move || {
                        // Every thread claims before the barrier; the barrier empties the counter.
                        counter.fetch_add(5, Ordering::Relaxed);
                        let a = b.wait_sum(i + 1, counter).unwrap();
                        assert_eq!(counter.load(Ordering::Relaxed), 0);
                        let c = b.wait_sum(10 * (i + 1), counter).unwrap();
                        let d = b.wait_sum(0, counter).unwrap();
                        Some(a + c + d)
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(sums, vec![Some(66); 3]);
        let p = Barrier::new(2);
        p.poison();
        assert_eq!(p.wait_sum(1, &counter), None);
    }

    #[test]
    fn claims_cover_every_item_once() {
        // 64 items, 2 threads: a quarter of what is left (64/4, 48/4, 36/4, 27/4, …, 9/4), at most 16, at
        // least 1.
        let counter = AtomicUsize::new(0);
        let got: Vec<usize> = std::iter::from_fn(|| claim(&counter, 64, 2, 0))
            .map(|r| r.len())
            .collect();
        assert_eq!(got, vec![16, 12, 9, 6, 5, 4, 3, 2, 1, 1, 1, 1, 1, 1, 1]);
        assert_eq!(claim(&counter, 64, 2, 0), None);
        // The first `single` one at a time; ranges follow each other.
        let counter = AtomicUsize::new(0);
        let got: Vec<Range<usize>> = std::iter::from_fn(|| claim(&counter, 12, 1, 3)).collect();
        assert_eq!(
            got,
            vec![0..1, 1..2, 2..3, 3..7, 7..9, 9..10, 10..11, 11..12]
        );
        // From several threads at once: every item exactly once.
        let counter = AtomicUsize::new(0);
        let mut all: Vec<usize> = std::thread::scope(|s| {
            let hs: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        std::iter::from_fn(|| claim(&counter, 1000, 4, 10))
                            .flatten()
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            hs.into_iter().flat_map(|h| h.join().unwrap()).collect()
        });
        all.sort_unstable();
        assert_eq!(all, (0..1000).collect::<Vec<_>>());
    }
}
