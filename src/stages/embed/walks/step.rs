//! One node2vec step: the biased choice of the next node by rejection sampling (see the module documentation
//! of [`super`]), and one walk, with its own random stream.

use super::format::PAD;
use crate::core::ids::NodeId;
use crate::stages::embed::graph::Csr;
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};

/// Precomputed constants of the biased step.
#[derive(Clone, Copy, Debug)]
pub struct Bias {
    pub(super) inv_p: f64,
    pub(super) inv_q: f64,
    /// Envelope height per candidate: max(1, 1/q).
    pub(super) m: f64,
    /// Extra envelope area owned by the return candidate: max(0, 1/p − m).
    pub(super) extra: f64,
    /// Below this height every candidate is accepted: min(1/p, 1, 1/q).
    pub(super) floor: f64,
    /// p = q = 1: plain uniform steps.
    pub(super) uniform: bool,
}

impl Bias {
    /// Constants for return parameter `p` and in-out parameter `q` (both > 0).
    pub fn new(p: f64, q: f64) -> Bias {
        let (inv_p, inv_q) = (1.0 / p, 1.0 / q);
        let m = inv_q.max(1.0);
        Bias {
            inv_p,
            inv_q,
            m,
            extra: (inv_p - m).max(0.0),
            floor: inv_p.min(1.0).min(inv_q),
            uniform: p == 1.0 && q == 1.0,
        }
    }

    /// Whether steps are uniform (p = q = 1).
    pub fn is_uniform(&self) -> bool {
        self.uniform
    }
}

/// Uniform integer in `0..n` (n ≥ 1), unbiased (Lemire's multiply-shift with rejection).
#[inline]
pub(super) fn below<R: Rng>(rng: &mut R, n: u32) -> u32 {
    let mut m = u64::from(rng.next_u32()) * u64::from(n);
    if (m as u32) < n {
        let threshold = n.wrapping_neg() % n;
        while (m as u32) < threshold {
            m = u64::from(rng.next_u32()) * u64::from(n);
        }
    }
    (m >> 32) as u32
}

/// Uniform f64 in [0, 1) with 53 random bits.
#[inline]
pub(super) fn unit<R: Rng>(rng: &mut R) -> f64 {
    (rng.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
}

/// One node2vec step from `cur` having come from `prev`; returns the next node and the number of
/// candidates drawn (1 on the uniform path). `cur` must have at least one neighbour, and `prev` must be
/// one of them (true on an undirected graph).
#[inline]
pub fn biased_step<R: Rng>(
    csr: &Csr,
    bias: &Bias,
    prev: NodeId,
    cur: NodeId,
    rng: &mut R,
) -> (NodeId, u32) {
    let nb = csr.neighbours(cur);
    let d = nb.len();
    if bias.uniform {
        return (nb[below(rng, d as u32) as usize], 1);
    }
    let cols = d as f64 * bias.m;
    let total = cols + bias.extra;
    let mut tries = 0u32;
    loop {
        tries += 1;
        let r = unit(rng) * total;
        if r >= cols {
            return (prev, tries);
        }
        let i = ((r / bias.m) as usize).min(d - 1);
        let y = r - i as f64 * bias.m;
        let x = nb[i];
        let accept = if x == prev {
            y < bias.inv_p
        } else if y < bias.floor {
            true
        } else if adjacent(csr, prev, x) {
            y < 1.0
        } else {
            y < bias.inv_q
        };
        if accept {
            return (x, tries);
        }
    }
}

/// `u ∈ N(v)` on an undirected CSR, by searching the shorter of the two lists (as `Csr::has_edge`, with a
/// linear scan for short lists).
#[inline]
pub(super) fn adjacent(csr: &Csr, u: NodeId, v: NodeId) -> bool {
    let (a, b) = (csr.neighbours(u), csr.neighbours(v));
    if a.len() <= b.len() {
        sorted_contains(a, v)
    } else {
        sorted_contains(b, u)
    }
}

/// The random stream of walk `(start, round)`.
pub fn walk_rng(seed: u64, start: NodeId, round: u64) -> ChaCha8Rng {
    let mut key = [0u8; 32];
    key[..8].copy_from_slice(&seed.to_le_bytes());
    key[8..16].copy_from_slice(&u64::from(start).to_le_bytes());
    key[16..24].copy_from_slice(&round.to_le_bytes());
    key[24..32].copy_from_slice(b"n2v-walk");
    ChaCha8Rng::from_seed(key)
}

/// Fill `out` with one walk from `start` (out[0] = start); returns (steps taken, candidates drawn).
pub fn walk_into(
    csr: &Csr,
    bias: &Bias,
    start: NodeId,
    rng: &mut ChaCha8Rng,
    out: &mut [u32],
) -> (u64, u64) {
    if out.is_empty() {
        return (0, 0);
    }
    out[0] = start;
    let mut tries = 0u64;
    let mut steps = 0u64;
    let mut prev = start;
    let mut cur = start;
    for i in 1..out.len() {
        let nb = csr.neighbours(cur);
        if nb.is_empty() {
            out[i..].fill(PAD);
            break;
        }
        let next = if i == 1 {
            tries += 1;
            nb[below(rng, nb.len() as u32) as usize]
        } else {
            let (x, t) = biased_step(csr, bias, prev, cur, rng);
            tries += u64::from(t);
            x
        };
        out[i] = next;
        steps += 1;
        prev = cur;
        cur = next;
    }
    (steps, tries)
}

/// Lists up to this length are searched by a linear scan (two cache lines of ids), longer ones by binary
/// search.
pub(super) const LINEAR_SEARCH_MAX: usize = 32;

/// Whether the sorted list `nb` contains `key`.
#[inline]
pub(super) fn sorted_contains(nb: &[u32], key: u32) -> bool {
    if nb.len() <= LINEAR_SEARCH_MAX {
        nb.iter().fold(false, |acc, &v| acc | (v == key))
    } else {
        nb.binary_search(&key).is_ok()
    }
}
