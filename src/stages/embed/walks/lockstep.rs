//! Many walks in flight: one task advances `LOCKSTEP` walks in passes, each pass prefetching what the next
//! reads, and consumes each walk's random stream exactly as a single walk would.

use super::format::PAD;
use super::order::Starts;
use super::step::{below, sorted_contains, unit, walk_rng, Bias, LINEAR_SEARCH_MAX};
use crate::stages::embed::graph::Csr;
use rand::rngs::ChaCha8Rng;

/// Walks in flight at once in one task: their memory accesses are independent, so the cache misses of
/// many walks (the CSR of a large graph does not fit in cache) overlap. 32 measured faster than 8 and 16
/// on the 1m bench graph (BENCHMARKS.md, "Graph and walks").
pub const LOCKSTEP: usize = 32;

/// Walks per task of the generator: a biased task keeps `LOCKSTEP` of them in flight and starts the next
/// one as soon as a walk ends, so the tail of slow walks is short.
pub const TASK_WALKS: usize = 8 * LOCKSTEP;

#[inline(always)]
pub(super) fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: prefetch is a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// Generate the walks with global indices `w0 .. w0 + out.len() / len` into `out` (any number of walks),
/// many at a time. Each walk draws from its own stream in the same order as `walk_into`, so the result is
/// exactly that of `walk_into` per walk. Returns (steps, candidates).
pub fn walk_group(
    csr: &Csr,
    bias: &Bias,
    seed: u64,
    starts: &Starts,
    w0: u64,
    len: usize,
    out: &mut [u32],
) -> (u64, u64) {
    if len == 0 {
        return (0, 0);
    }
    let count = out.len() / len;
    debug_assert!(count * len == out.len());
    if !bias.uniform && len > 2 {
        return biased_pool(csr, bias, seed, starts, w0, len, &mut out[..count * len]);
    }
    let (mut steps, mut tries) = (0, 0);
    for (k, chunk) in out[..count * len].chunks_mut(len * LOCKSTEP).enumerate() {
        let r = uniform_group(csr, seed, starts, w0 + (k * LOCKSTEP) as u64, len, chunk);
        steps += r.0;
        tries += r.1;
    }
    (steps, tries)
}

/// Uniform walks (p = q = 1, or walks of at most one step), at most `LOCKSTEP` of them, step by step
/// across the group in two passes per step: pick the slot (and prefetch it), then read it.
pub(super) fn uniform_group(
    csr: &Csr,
    seed: u64,
    starts: &Starts,
    w0: u64,
    len: usize,
    out: &mut [u32],
) -> (u64, u64) {
    let g = out.len() / len;
    let offsets = csr.offsets();
    let targets = csr.targets();
    let mut rngs: [Option<ChaCha8Rng>; LOCKSTEP] = std::array::from_fn(|_| None);
    let mut cur = [0u32; LOCKSTEP];
    let mut alive = [false; LOCKSTEP];
    for j in 0..g {
        let w = w0 + j as u64;
        let (round, start) = starts.start(w);
        out[j * len] = start;
        cur[j] = start;
        alive[j] = len > 1;
        rngs[j] = Some(walk_rng(seed, start, round));
        prefetch(&offsets[start as usize]);
    }
    let (mut steps, mut tries) = (0u64, 0u64);
    let mut pos = [0usize; LOCKSTEP];
    for i in 1..len {
        for j in 0..g {
            if !alive[j] {
                continue;
            }
            let (a, b) = (
                offsets[cur[j] as usize] as usize,
                offsets[cur[j] as usize + 1] as usize,
            );
            if a == b {
                out[j * len + i..(j + 1) * len].fill(PAD);
                alive[j] = false;
                continue;
            }
            let rng = rngs[j].as_mut().expect("set above");
            pos[j] = a + below(rng, (b - a) as u32) as usize;
            prefetch(&targets[pos[j]]);
        }
        for j in 0..g {
            if !alive[j] {
                continue;
            }
            let x = targets[pos[j]];
            out[j * len + i] = x;
            cur[j] = x;
            steps += 1;
            tries += 1;
            prefetch(&offsets[x as usize]);
        }
    }
    (steps, tries)
}

/// What the walk in a slot of a biased pool does in the current round.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(super) enum Stage {
    /// Empty slot (no walk left to start).
    Done,
    /// Draw a candidate this round.
    Draw,
    /// The candidate at `pos` is taken whatever it is (first step: uniform).
    Take,
    /// The candidate at `pos` is read and judged at height `y`.
    Judge,
    /// The candidate `x` needs the adjacency test `x ∈ N(prev)` in the long-list passes.
    Edge,
}

/// Per-slot state of a biased pool (`LOCKSTEP` walks in flight).
pub(super) struct Pool {
    pub(super) rng: [Option<ChaCha8Rng>; LOCKSTEP],
    /// Index of the slot's walk in the task's output.
    pub(super) walk: [usize; LOCKSTEP],
    pub(super) stage: [Stage; LOCKSTEP],
    /// Next index of the walk to fill (1..len).
    pub(super) step: [usize; LOCKSTEP],
    pub(super) cur: [u32; LOCKSTEP],
    pub(super) prev: [u32; LOCKSTEP],
    /// `cur` changed: its offsets are still to be read.
    pub(super) fresh: [bool; LOCKSTEP],
    /// Start and degree of N(cur) and N(prev) in `targets`.
    pub(super) a: [usize; LOCKSTEP],
    pub(super) d: [usize; LOCKSTEP],
    pub(super) pa: [usize; LOCKSTEP],
    pub(super) pd: [usize; LOCKSTEP],
    /// The candidate's slot in `targets`, its height, the candidate.
    pub(super) pos: [usize; LOCKSTEP],
    pub(super) y: [f64; LOCKSTEP],
    pub(super) x: [u32; LOCKSTEP],
    /// Adjacency test in a long list: the list (start, length) and the key searched.
    pub(super) ls: [usize; LOCKSTEP],
    pub(super) ll: [usize; LOCKSTEP],
    pub(super) key: [u32; LOCKSTEP],
}

/// The walks of one task on the biased path (`len > 2`, not uniform), `LOCKSTEP` in flight. Every round,
/// every walk in flight makes one try (one random number) in passes over the slots, so that the cache
/// misses of all walks overlap: (1) draw the candidate and prefetch its slot; (2) read it and decide when
/// no lookup is needed (the return area, `x = prev`, height below the floor, or a short N(prev), scanned
/// at once), otherwise prefetch x's offsets; (3) pick the shorter of N(prev) and N(x) and prefetch it;
/// (4) search it and decide. An accepted step is taken at once (and the next node's offsets prefetched);
/// a finished walk's slot starts the next walk of the task at once. Each walk consumes its own stream exactly as
/// `walk_into` does (one `below` for the first step, then one `unit` per try of `biased_step`), and
/// `x ∈ N(prev)` is a symmetric question on an undirected CSR, so the ids are those of `walk_into`.
pub(super) fn biased_pool(
    csr: &Csr,
    bias: &Bias,
    seed: u64,
    starts: &Starts,
    w0: u64,
    len: usize,
    out: &mut [u32],
) -> (u64, u64) {
    let offsets = csr.offsets();
    let targets = csr.targets();
    let count = out.len() / len;
    let mut s = Pool {
        rng: std::array::from_fn(|_| None),
        walk: [0; LOCKSTEP],
        stage: [Stage::Done; LOCKSTEP],
        step: [1; LOCKSTEP],
        cur: [0; LOCKSTEP],
        prev: [0; LOCKSTEP],
        fresh: [true; LOCKSTEP],
        a: [0; LOCKSTEP],
        d: [0; LOCKSTEP],
        pa: [0; LOCKSTEP],
        pd: [0; LOCKSTEP],
        pos: [0; LOCKSTEP],
        y: [0.0; LOCKSTEP],
        x: [0; LOCKSTEP],
        ls: [0; LOCKSTEP],
        ll: [0; LOCKSTEP],
        key: [0; LOCKSTEP],
    };
    let mut next = 0usize;
    // Start walk `next` of the task in slot j, or leave the slot empty.
    let load = |s: &mut Pool, j: usize, next: &mut usize, out: &mut [u32]| -> bool {
        if *next >= count {
            s.stage[j] = Stage::Done;
            return false;
        }
        let k = *next;
        *next += 1;
        let w = w0 + k as u64;
        let (round, start) = starts.start(w);
        out[k * len] = start;
        s.walk[j] = k;
        s.cur[j] = start;
        s.prev[j] = start;
        s.step[j] = 1;
        s.fresh[j] = true;
        s.rng[j] = Some(walk_rng(seed, start, round));
        s.stage[j] = Stage::Draw;
        prefetch(&offsets[start as usize]);
        true
    };
    // Step the walk in slot j to x: write it, then either move on (prefetching what the next try reads) or,
    // at the walk's end, start the next walk in the slot. Returns whether the slot is still in use.
    let take = |s: &mut Pool, j: usize, x: u32, next: &mut usize, out: &mut [u32]| -> bool {
        let (k, i) = (s.walk[j], s.step[j]);
        out[k * len + i] = x;
        if i + 1 == len {
            return load(s, j, next, out);
        }
        s.prev[j] = s.cur[j];
        (s.pa[j], s.pd[j]) = (s.a[j], s.d[j]);
        s.cur[j] = x;
        s.step[j] = i + 1;
        s.fresh[j] = true;
        s.stage[j] = Stage::Draw;
        prefetch(&offsets[x as usize]);
        // The next step may scan N(prev) = this list: fetch its ends.
        if s.pd[j] <= LINEAR_SEARCH_MAX {
            prefetch(&targets[s.pa[j]]);
            prefetch(&targets[s.pa[j] + s.pd[j] - 1]);
        }
        true
    };
    let mut live = 0usize;
    for j in 0..LOCKSTEP {
        live += usize::from(load(&mut s, j, &mut next, out));
    }
    let (mut steps, mut tries) = (0u64, 0u64);
    while live > 0 {
        // Pass 1: draw a candidate, prefetch its slot.
        for j in 0..LOCKSTEP {
            if s.stage[j] != Stage::Draw {
                continue;
            }
            if s.fresh[j] {
                s.fresh[j] = false;
                let c = s.cur[j] as usize;
                s.a[j] = offsets[c] as usize;
                s.d[j] = offsets[c + 1] as usize - s.a[j];
                if s.d[j] == 0 {
                    // Only a start node can have no neighbours.
                    let k = s.walk[j];
                    out[k * len + s.step[j]..(k + 1) * len].fill(PAD);
                    if !load(&mut s, j, &mut next, out) {
                        live -= 1;
                    }
                    continue;
                }
            }
            let rng = s.rng[j].as_mut().expect("set by load");
            tries += 1;
            if s.step[j] == 1 {
                s.pos[j] = s.a[j] + below(rng, s.d[j] as u32) as usize;
                prefetch(&targets[s.pos[j]]);
                s.stage[j] = Stage::Take;
                continue;
            }
            let cols = s.d[j] as f64 * bias.m;
            let r = unit(rng) * (cols + bias.extra);
            if r >= cols {
                // The return area: back to prev.
                steps += 1;
                let back = s.prev[j];
                if !take(&mut s, j, back, &mut next, out) {
                    live -= 1;
                }
                continue;
            }
            let i = ((r / bias.m) as usize).min(s.d[j] - 1);
            s.y[j] = r - i as f64 * bias.m;
            s.pos[j] = s.a[j] + i;
            prefetch(&targets[s.pos[j]]);
            s.stage[j] = Stage::Judge;
        }
        // Pass 2: read the candidate; decide without lookup when possible, else prefetch its offsets.
        let mut edges = false;
        for j in 0..LOCKSTEP {
            match s.stage[j] {
                Stage::Take => {
                    steps += 1;
                    let x = targets[s.pos[j]];
                    if !take(&mut s, j, x, &mut next, out) {
                        live -= 1;
                    }
                }
                Stage::Judge => {
                    let c = targets[s.pos[j]];
                    let y = s.y[j];
                    s.x[j] = c;
                    let accept = if c == s.prev[j] {
                        Some(y < bias.inv_p)
                    } else if y < bias.floor {
                        Some(true)
                    } else if s.pd[j] <= LINEAR_SEARCH_MAX {
                        // N(prev) is short (and was read last step): scan it now, whatever deg(x) is.
                        let near = sorted_contains(&targets[s.pa[j]..s.pa[j] + s.pd[j]], c);
                        Some(y < if near { 1.0 } else { bias.inv_q })
                    } else {
                        prefetch(&offsets[c as usize]);
                        None
                    };
                    match accept {
                        Some(true) => {
                            steps += 1;
                            if !take(&mut s, j, c, &mut next, out) {
                                live -= 1;
                            }
                        }
                        Some(false) => s.stage[j] = Stage::Draw,
                        None => {
                            edges = true;
                            s.stage[j] = Stage::Edge;
                        }
                    }
                }
                _ => {}
            }
        }
        if edges {
            // Pass 3: search the shorter list, N(prev) for x or N(x) for prev; prefetch where the search
            // starts.
            for j in 0..LOCKSTEP {
                if s.stage[j] != Stage::Edge {
                    continue;
                }
                let c = s.x[j] as usize;
                let xa = offsets[c] as usize;
                let xd = offsets[c + 1] as usize - xa;
                (s.ls[j], s.ll[j], s.key[j]) = if s.pd[j] <= xd {
                    (s.pa[j], s.pd[j], s.x[j])
                } else {
                    (xa, xd, s.prev[j])
                };
                let probe = if s.ll[j] <= LINEAR_SEARCH_MAX {
                    s.ls[j]
                } else {
                    s.ls[j] + s.ll[j] / 2
                };
                prefetch(targets.as_ptr().wrapping_add(probe));
            }
            // Pass 4: decide.
            for j in 0..LOCKSTEP {
                if s.stage[j] != Stage::Edge {
                    continue;
                }
                let near = sorted_contains(&targets[s.ls[j]..s.ls[j] + s.ll[j]], s.key[j]);
                let w = if near { 1.0 } else { bias.inv_q };
                if s.y[j] < w {
                    steps += 1;
                    let x = s.x[j];
                    if !take(&mut s, j, x, &mut next, out) {
                        live -= 1;
                    }
                } else {
                    s.stage[j] = Stage::Draw;
                }
            }
        }
    }
    (steps, tries)
}
