//! `sword walks`: node2vec second-order random walks over the CSR graph.
//!
//! Walk order follows node2vec and pecanpy: for round `r` in `0..walks_per_node`, for node `v` in `0..n`,
//! one walk of `length` nodes starting at `v`. Walk `(v, r)` draws from its own `ChaCha8Rng` seeded from
//! `(seed, v, r)`, so the walks do not depend on the thread count or on batch boundaries.
//!
//! ## The biased step (why rejection sampling, and no alias tables)
//! After stepping `t → v`, node2vec picks the next node `x ∈ N(v)` with weight `1/p` if `x = t` (return),
//! `1` if `x ∈ N(t)` (stay close), `1/q` otherwise (move out). The textbook implementation precomputes an
//! alias table per directed edge `(t, v)`: `Σ_v deg(v)²` entries, which is hopeless with Wikidata hubs
//! ("human" has millions of neighbours). We sample by rejection instead, with an envelope of height
//! `M = max(1, 1/q)` over every candidate plus, when `1/p > M`, an extra block of area `1/p − M` that
//! belongs to the return candidate `t` alone ("outlier folding"): a uniform point in the envelope is drawn
//! with one random number; it lands in column `i` (candidate `x = N(v)[i]`) at height `y`, and `x` is kept
//! iff `y < w(x)`. The point below `min(1/p, 1, 1/q)` is accepted without looking anything up; otherwise
//! `x ∈ N(t)` is decided by searching the shorter of the two sorted neighbour lists (a linear scan up to 32
//! entries, else binary search). Cost per step: O(1) expected tries (≤ `M / min(1, 1/q)`, e.g. ≤ 2 for
//! q = 0.5, and 1/p never inflates it) × O(log min(deg t, deg x)) per lookup, no memory beyond the CSR.
//! For `p = q = 1` every weight is 1 and the step is a single uniform draw (the "uniform path").
//!
//! ## Many walks in flight
//! On a graph whose CSR does not fit in cache every step is a chain of dependent cache misses (offsets of
//! the current node → the candidate → its offsets → the list searched). One task therefore keeps
//! `LOCKSTEP` walks in flight and advances them in passes, each pass issuing the prefetches the next one
//! reads (`walk_group`; on the biased path a finished walk's slot starts the next walk at once). Each walk
//! consumes its own random stream in exactly the order `walk_into` does, so the ids are those of
//! `walk_into` walk by walk (tests `lockstep_groups_equal_single_walks*`).
//!
//! ## Artifact `walks.bin`
//! ```text
//! offset  size            field
//! 0       8               magic b"SWORDWLK"
//! 8       4               format version (u32 LE) = 1
//! 12      4               walk_length (u32 LE)
//! 16      8               num_walks (u64 LE)
//! 24      4 L num_walks   node ids (u32 LE), walk after walk; u32::MAX pads a walk that cannot continue
//! ```
//! A walk can only stop early at a node without neighbours, i.e. when it starts at an isolated node: it is
//! then `[v, MAX, MAX, ...]`. `--text` also writes `walks.txt`: one walk per line, node keys (from
//! `nodes.txt`) separated by single spaces, padding omitted — the input format of gensim's `LineSentence`.
//!
//! The file is written streaming, batch after batch, while the next batch is computed (bounded memory:
//! two batches of ~16 MB, whatever the graph size).

use crate::core::error::{Error, IoContext, Result};
use crate::core::ids::NodeId;
use crate::core::progress::{Progress, Unit};
use crate::stages::contract::{Context, Input, NoSettings};
use crate::stages::embed::graph::{self, Csr};
use crate::store::layout::{self, Artifact, GRAPH_CSR, NODES, WALKS_BIN, WALKS_TEXT};
use crate::store::Manifest;
use rand::rngs::ChaCha8Rng;
use rand::{Rng, SeedableRng};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::io::{Read, Write};
use std::path::Path;
use std::time::Instant;

/// Magic bytes of `walks.bin`.
pub const WALKS_MAGIC: &[u8; 8] = b"SWORDWLK";
/// Format version of `walks.bin`.
pub const WALKS_VERSION: u32 = 1;
/// Header length of `walks.bin` in bytes.
pub const WALKS_HEADER_LEN: usize = 24;
/// Padding id for the rest of a walk that cannot continue.
pub const PAD: u32 = u32::MAX;

/// Settings of the walks stage (`pipeline/walks.toml`; the same names as flags of `sword walks`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct WalkConfig {
    /// node2vec return parameter p: weight 1/p for stepping back to the previous node. 1.0 = unbiased (the
    /// default); typical 0.25–4 (low p keeps walks local).
    #[arg(long, required = false)]
    pub p: f64,
    /// node2vec in-out parameter q: weight 1/q for moving to a node not adjacent to the previous one.
    /// 1.0 = unbiased (the default); q > 1 favours breadth (BFS-like), q < 1 depth (DFS-like); typical 0.25–4.
    #[arg(long, required = false)]
    pub q: f64,
    /// Nodes per walk, start included. Default 10, as the SWORD paper.
    #[arg(long, required = false)]
    pub length: usize,
    /// Walks started from every node. Default 10, as the SWORD paper.
    #[arg(long, required = false)]
    pub walks_per_node: usize,
    /// Seed of every walk's random stream (with the start node and round). Default 1 (`sword run` passes its
    /// `--seed`).
    #[arg(long, required = false)]
    pub seed: u64,
    /// Also write `walks.txt` (node keys, one walk per line) for gensim and other tools.
    #[arg(long, action = clap::ArgAction::Set, num_args = 0, default_missing_value = "true", required = false)]
    pub text: bool,
}

impl Default for WalkConfig {
    fn default() -> Self {
        WalkConfig {
            p: 1.0,
            q: 1.0,
            length: 10,
            walks_per_node: 10,
            seed: 1,
            text: false,
        }
    }
}

impl WalkConfig {
    /// Check ranges: p, q finite and > 0, length and walks per node ≥ 1, length fits u32.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [("p", self.p), ("q", self.q)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::Config(format!(
                    "walks: {name} must be a positive number, got {v}"
                )));
            }
        }
        if self.length == 0 || self.length > u32::MAX as usize {
            return Err(Error::Config(format!(
                "walks: length must be in 1..2^32, got {}",
                self.length
            )));
        }
        if self.walks_per_node == 0 {
            return Err(Error::Config("walks: walks-per-node must be ≥ 1".into()));
        }
        Ok(())
    }
}

/// The walks stage: `graph.csr` → `walks.bin` (and `walks.txt`).
#[derive(Clone, Copy, Debug, Default)]
pub struct WalksStage;

// ---------------------------------------------------------------------------------------------------------
// Walks in memory and the binary format
// ---------------------------------------------------------------------------------------------------------

/// Walks in memory: `data` holds `num_walks × length` node ids, walk after walk.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Walks {
    /// Nodes per walk.
    pub length: usize,
    /// Node ids (`PAD` after a walk's end).
    pub data: Vec<u32>,
}

impl Walks {
    /// Number of walks.
    pub fn num_walks(&self) -> usize {
        self.data.len().checked_div(self.length).unwrap_or(0)
    }

    /// Iterate over the walks as slices of `length` ids (padding included).
    pub fn iter(&self) -> std::slice::ChunksExact<'_, u32> {
        self.data.chunks_exact(self.length.max(1))
    }

    /// Write the binary format (header + ids).
    pub fn write<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        write_header(&mut w, self.length, self.num_walks() as u64)?;
        write_ids(&mut w, &self.data)
    }

    /// Read `walks.bin` from disk; `Error::Corrupt` naming the file if the header or length is wrong.
    pub fn read(path: &Path) -> Result<Walks> {
        let f = std::fs::File::open(path).at(path)?;
        Self::from_reader(f, path)
    }

    /// Read the binary format from any reader (`path` is only used in errors).
    pub fn from_reader<R: Read>(mut r: R, path: &Path) -> Result<Walks> {
        let h = WalkHeader::read(&mut r, path)?;
        let mut bytes = Vec::new();
        r.read_to_end(&mut bytes).at(path)?;
        h.check_id_bytes(bytes.len() as u64, path)?;
        let data = bytes
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
            .collect();
        Ok(Walks {
            length: h.length as usize,
            data,
        })
    }
}

/// The header of `walks.bin`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WalkHeader {
    /// Nodes per walk.
    pub length: u32,
    /// Number of walks.
    pub num_walks: u64,
}

impl WalkHeader {
    /// Parse and check the 24-byte header.
    pub fn parse(head: &[u8], path: &Path) -> Result<WalkHeader> {
        let corrupt = |what: String| Error::Corrupt {
            path: path.to_path_buf(),
            what,
        };
        if head.len() < WALKS_HEADER_LEN {
            return Err(corrupt("shorter than the walks header".into()));
        }
        if &head[..8] != WALKS_MAGIC {
            return Err(corrupt("not a sword walks file (bad magic)".into()));
        }
        let version = u32::from_le_bytes(head[8..12].try_into().expect("4 bytes"));
        if version != WALKS_VERSION {
            return Err(corrupt(format!(
                "format version {version}, this build reads version {WALKS_VERSION}"
            )));
        }
        let length = u32::from_le_bytes(head[12..16].try_into().expect("4 bytes"));
        let num_walks = u64::from_le_bytes(head[16..24].try_into().expect("8 bytes"));
        if length == 0 && num_walks > 0 {
            return Err(corrupt("walk length 0".into()));
        }
        Ok(WalkHeader { length, num_walks })
    }

    /// Read and check the header at the start of `r` (`path` names the file in errors).
    pub fn read<R: Read>(r: &mut R, path: &Path) -> Result<WalkHeader> {
        let mut head = [0u8; WALKS_HEADER_LEN];
        r.read_exact(&mut head).map_err(|e| match e.kind() {
            std::io::ErrorKind::UnexpectedEof => Error::Corrupt {
                path: path.to_path_buf(),
                what: "shorter than the walks header".into(),
            },
            _ => Error::io(path, e),
        })?;
        WalkHeader::parse(&head, path)
    }

    /// Check that `id_bytes` bytes of ids follow the header, as it implies; returns the number of ids.
    pub fn check_id_bytes(&self, id_bytes: u64, path: &Path) -> Result<u64> {
        let total = self.total_ids(path)?;
        if id_bytes != total * 4 {
            return Err(Error::Corrupt {
                path: path.to_path_buf(),
                what: format!(
                    "{id_bytes} bytes of ids, but the header ({} walks × {}) implies {}",
                    self.num_walks,
                    self.length,
                    total * 4
                ),
            });
        }
        Ok(total)
    }

    fn total_ids(&self, path: &Path) -> Result<u64> {
        self.num_walks
            .checked_mul(u64::from(self.length))
            .filter(|t| t.checked_mul(4).is_some())
            .ok_or_else(|| Error::Corrupt {
                path: path.to_path_buf(),
                what: "header size overflows".into(),
            })
    }
}

/// Write the `walks.bin` header.
pub fn write_header<W: Write>(mut w: W, length: usize, num_walks: u64) -> std::io::Result<()> {
    w.write_all(WALKS_MAGIC)?;
    w.write_all(&WALKS_VERSION.to_le_bytes())?;
    w.write_all(&(length as u32).to_le_bytes())?;
    w.write_all(&num_walks.to_le_bytes())
}

/// Write node ids as u32 LE.
pub fn write_ids<W: Write>(mut w: W, ids: &[u32]) -> std::io::Result<()> {
    if cfg!(target_endian = "little") {
        // SAFETY: u32 has no padding; on a little-endian target its bytes are the LE encoding.
        let bytes = unsafe {
            std::slice::from_raw_parts(ids.as_ptr().cast::<u8>(), std::mem::size_of_val(ids))
        };
        return w.write_all(bytes);
    }
    let mut buf = Vec::with_capacity(1 << 16);
    for chunk in ids.chunks(16384) {
        buf.clear();
        for x in chunk {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        w.write_all(&buf)?;
    }
    Ok(())
}

/// Write walks as text: one walk per line, keys separated by one space, padding omitted.
pub fn write_text<W: Write>(
    mut w: W,
    ids: &[u32],
    length: usize,
    keys: &[String],
) -> std::io::Result<()> {
    let mut line = Vec::with_capacity(256);
    for walk in ids.chunks_exact(length) {
        line.clear();
        for (i, &v) in walk.iter().take_while(|&&v| v != PAD).enumerate() {
            if i > 0 {
                line.push(b' ');
            }
            let key = keys.get(v as usize).ok_or_else(|| {
                std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("node id {v} has no key ({} keys)", keys.len()),
                )
            })?;
            line.extend_from_slice(key.as_bytes());
        }
        line.push(b'\n');
        w.write_all(&line)?;
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------------------
// Sampling
// ---------------------------------------------------------------------------------------------------------

/// Precomputed constants of the biased step.
#[derive(Clone, Copy, Debug)]
pub struct Bias {
    inv_p: f64,
    inv_q: f64,
    /// Envelope height per candidate: max(1, 1/q).
    m: f64,
    /// Extra envelope area owned by the return candidate: max(0, 1/p − m).
    extra: f64,
    /// Below this height every candidate is accepted: min(1/p, 1, 1/q).
    floor: f64,
    /// p = q = 1: plain uniform steps.
    uniform: bool,
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
fn below<R: Rng>(rng: &mut R, n: u32) -> u32 {
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
fn unit<R: Rng>(rng: &mut R) -> f64 {
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
fn adjacent(csr: &Csr, u: NodeId, v: NodeId) -> bool {
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

/// Walks in flight at once in one task: their memory accesses are independent, so the cache misses of
/// many walks (the CSR of a large graph does not fit in cache) overlap. 32 measured faster than 8 and 16
/// on the 1m bench graph (BENCHMARKS.md, "Graph and walks").
pub const LOCKSTEP: usize = 32;

/// Walks per task of the generator: a biased task keeps `LOCKSTEP` of them in flight and starts the next
/// one as soon as a walk ends, so the tail of slow walks is short.
pub const TASK_WALKS: usize = 8 * LOCKSTEP;

#[inline(always)]
fn prefetch<T>(p: *const T) {
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
    n: u64,
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
        return biased_pool(csr, bias, seed, n, w0, len, &mut out[..count * len]);
    }
    let (mut steps, mut tries) = (0, 0);
    for (k, chunk) in out[..count * len].chunks_mut(len * LOCKSTEP).enumerate() {
        let r = uniform_group(csr, seed, n, w0 + (k * LOCKSTEP) as u64, len, chunk);
        steps += r.0;
        tries += r.1;
    }
    (steps, tries)
}

/// Uniform walks (p = q = 1, or walks of at most one step), at most `LOCKSTEP` of them, step by step
/// across the group in two passes per step: pick the slot (and prefetch it), then read it.
fn uniform_group(csr: &Csr, seed: u64, n: u64, w0: u64, len: usize, out: &mut [u32]) -> (u64, u64) {
    let g = out.len() / len;
    let offsets = csr.offsets();
    let targets = csr.targets();
    let mut rngs: [Option<ChaCha8Rng>; LOCKSTEP] = std::array::from_fn(|_| None);
    let mut cur = [0u32; LOCKSTEP];
    let mut alive = [false; LOCKSTEP];
    for j in 0..g {
        let w = w0 + j as u64;
        let (round, start) = (w / n, (w % n) as NodeId);
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

/// Lists up to this length are searched by a linear scan (two cache lines of ids), longer ones by binary
/// search.
const LINEAR_SEARCH_MAX: usize = 32;

/// Whether the sorted list `nb` contains `key`.
#[inline]
fn sorted_contains(nb: &[u32], key: u32) -> bool {
    if nb.len() <= LINEAR_SEARCH_MAX {
        nb.iter().fold(false, |acc, &v| acc | (v == key))
    } else {
        nb.binary_search(&key).is_ok()
    }
}

/// What the walk in a slot of a biased pool does in the current round.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Stage {
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
struct Pool {
    rng: [Option<ChaCha8Rng>; LOCKSTEP],
    /// Index of the slot's walk in the task's output.
    walk: [usize; LOCKSTEP],
    stage: [Stage; LOCKSTEP],
    /// Next index of the walk to fill (1..len).
    step: [usize; LOCKSTEP],
    cur: [u32; LOCKSTEP],
    prev: [u32; LOCKSTEP],
    /// `cur` changed: its offsets are still to be read.
    fresh: [bool; LOCKSTEP],
    /// Start and degree of N(cur) and N(prev) in `targets`.
    a: [usize; LOCKSTEP],
    d: [usize; LOCKSTEP],
    pa: [usize; LOCKSTEP],
    pd: [usize; LOCKSTEP],
    /// The candidate's slot in `targets`, its height, the candidate.
    pos: [usize; LOCKSTEP],
    y: [f64; LOCKSTEP],
    x: [u32; LOCKSTEP],
    /// Adjacency test in a long list: the list (start, length) and the key searched.
    ls: [usize; LOCKSTEP],
    ll: [usize; LOCKSTEP],
    key: [u32; LOCKSTEP],
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
fn biased_pool(
    csr: &Csr,
    bias: &Bias,
    seed: u64,
    n: u64,
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
        let (round, start) = (w / n, (w % n) as NodeId);
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
fn batch_walks(length: usize) -> usize {
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
                walk_group(csr, &bias, cfg.seed, n, w0, len, out)
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

impl crate::stages::contract::Stage for WalksStage {
    const NAME: &'static str = layout::WALKS;
    type Settings = WalkConfig;
    type Args = NoSettings;
    type Outcome = ();

    fn inputs(&self, cfg: &WalkConfig, _: &NoSettings) -> Vec<Input> {
        let mut v = vec![Input::Vouched(GRAPH_CSR)];
        if cfg.text {
            v.push(Input::Vouched(NODES));
        }
        v
    }

    fn outputs(&self, cfg: &WalkConfig, _: &NoSettings) -> Vec<Artifact> {
        let mut v = vec![WALKS_BIN];
        if cfg.text {
            v.push(WALKS_TEXT);
        }
        v
    }

    fn validate(&self, cfg: &WalkConfig, _: &NoSettings) -> Result<()> {
        cfg.validate()
    }

    fn seed(&self, cfg: &WalkConfig) -> Option<u64> {
        Some(cfg.seed)
    }

    /// Walk the graph, streaming `walks.bin` (and `walks.txt`) batch after batch.
    fn run(&self, cx: &mut Context, cfg: &WalkConfig, _: &NoSettings) -> Result<()> {
        let csr = Csr::read(&cx.path(&GRAPH_CSR))?;
        let keys = if cfg.text {
            let path = cx.path(&NODES);
            let keys = graph::read_nodes(&path)?;
            if keys.len() != csr.n_nodes() {
                return Err(Error::Corrupt {
                    path,
                    what: format!("{} keys for a graph of {} nodes", keys.len(), csr.n_nodes()),
                });
            }
            Some(keys)
        } else {
            None
        };
        cx.lap("read");
        let total = csr.n_nodes() as u64 * cfg.walks_per_node as u64;
        let (bin_path, txt_path) = (cx.path(&WALKS_BIN), cx.path(&WALKS_TEXT));
        let mut bin = cx.create(&WALKS_BIN)?;
        write_header(&mut bin, cfg.length, total).at(&bin_path)?;
        let mut txt = match keys {
            Some(_) => Some(cx.create(&WALKS_TEXT)?),
            None => None,
        };
        let t1 = Instant::now();
        let progress = Progress::new("walks", Some(total), Unit::Items("walks"));
        let stats = generate_with(&csr, cfg, &progress, |batch| {
            write_ids(&mut bin, batch).at(&bin_path)?;
            if let (Some(t), Some(k)) = (txt.as_mut(), keys.as_ref()) {
                write_text(t, batch, cfg.length, k).at(&txt_path)?;
            }
            Ok(())
        })?;
        progress.finish();
        let secs = t1.elapsed().as_secs_f64();
        bin.commit()?;
        if let Some(t) = txt {
            t.commit()?;
        }
        cx.timing("walk", secs);
        cx.count("nodes", csr.n_nodes() as u64);
        cx.count("walks", stats.walks);
        cx.count("walk_length", cfg.length as u64);
        cx.count("steps", stats.steps);
        cx.count("candidates", stats.candidates);
        cx.count("padded_ids", stats.padded);
        let secs = secs.max(1e-9);
        cx.manifest().extra = serde_json::json!({
            "sampler": if Bias::new(cfg.p, cfg.q).is_uniform() { "uniform" } else { "rejection" },
            "acceptance": if stats.candidates > 0 { stats.steps as f64 / stats.candidates as f64 } else { 1.0 },
            "walks_per_s": stats.walks as f64 / secs,
            "steps_per_s": stats.steps as f64 / secs,
            "format_version": WALKS_VERSION,
        });
        Ok(())
    }

    fn summary(&self, out: &Path, m: &Manifest) -> String {
        format!(
            "walks: {} walks of {} nodes -> {}",
            m.counts.get("walks").copied().unwrap_or(0),
            m.counts.get("walk_length").copied().unwrap_or(0),
            out.join(WALKS_BIN.file).display()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cycle(n: u32) -> Csr {
        let e: Vec<_> = (0..n).map(|i| (i, (i + 1) % n)).collect();
        Csr::from_edges(n as usize, &e)
    }

    #[test]
    fn walks_round_trip_and_header_errors() {
        let w = Walks {
            length: 3,
            data: vec![0, 1, 2, 5, PAD, PAD],
        };
        let mut bytes = Vec::new();
        w.write(&mut bytes).unwrap();
        assert_eq!(bytes.len(), WALKS_HEADER_LEN + 24);
        let back = Walks::from_reader(&bytes[..], Path::new("m")).unwrap();
        assert_eq!(back, w);
        assert_eq!(
            back.iter().collect::<Vec<_>>(),
            vec![&[0, 1, 2][..], &[5, PAD, PAD][..]]
        );
        assert!(Walks::from_reader(&bytes[..bytes.len() - 4], Path::new("m")).is_err());
        let mut b = bytes.clone();
        b[8] = 2;
        assert!(matches!(
            Walks::from_reader(&b[..], Path::new("m")),
            Err(Error::Corrupt { .. })
        ));
        assert!(Walks::from_reader(&b"SWORDWLK"[..], Path::new("m")).is_err());
    }

    #[test]
    fn text_omits_padding() {
        let keys: Vec<String> = ["Q1", "Q2", "Q3"].iter().map(|s| s.to_string()).collect();
        let mut out = Vec::new();
        write_text(&mut out, &[0, 1, 2, 2, PAD, PAD], 3, &keys).unwrap();
        assert_eq!(String::from_utf8(out).unwrap(), "Q1 Q2 Q3\nQ3\n");
    }

    #[test]
    fn below_is_in_range_and_covers() {
        let mut rng = walk_rng(7, 0, 0);
        let mut seen = [0u32; 3];
        for _ in 0..3000 {
            seen[below(&mut rng, 3) as usize] += 1;
        }
        assert!(seen.iter().all(|&c| c > 800), "{seen:?}");
    }

    #[test]
    fn isolated_node_walks_are_padded_and_order_is_round_major() {
        // 0-1 edge, 2 isolated.
        let csr = Csr::from_edges(3, &[(0, 1), (2, 2)]);
        let cfg = WalkConfig {
            length: 4,
            walks_per_node: 2,
            ..WalkConfig::default()
        };
        let w = generate(&csr, &cfg);
        assert_eq!(w.num_walks(), 6);
        let starts: Vec<u32> = w.iter().map(|x| x[0]).collect();
        assert_eq!(starts, vec![0, 1, 2, 0, 1, 2]);
        assert_eq!(w.iter().next().unwrap(), &[0, 1, 0, 1]);
        assert_eq!(w.iter().nth(2).unwrap(), &[2, PAD, PAD, PAD]);
    }

    #[test]
    fn low_p_on_a_cycle_returns_often() {
        // On a cycle, with p tiny the walk should almost always return.
        let csr = cycle(10);
        let cfg = WalkConfig {
            p: 0.01,
            q: 1.0,
            length: 3,
            walks_per_node: 100,
            ..WalkConfig::default()
        };
        let w = generate(&csr, &cfg);
        let back = w.iter().filter(|x| x[2] == x[0]).count();
        // P(return) = 100 / (100 + 1) per step.
        assert!(back as f64 / w.num_walks() as f64 > 0.97, "{back}");
    }

    /// `walk_group` over walks `w0 .. w0 + g` equals `walk_into` walk by walk: the same ids and the same
    /// (steps, candidates) totals.
    fn assert_group_equals_single_walks(
        csr: &Csr,
        bias: &Bias,
        seed: u64,
        w0: u64,
        len: usize,
        g: usize,
    ) {
        let n = csr.n_nodes() as u64;
        let mut group = vec![0u32; g * len];
        let got = walk_group(csr, bias, seed, n, w0, len, &mut group);
        let mut single = vec![0u32; g * len];
        let mut want = (0, 0);
        for (j, out) in single.chunks_exact_mut(len).enumerate() {
            let w = w0 + j as u64;
            let start = (w % n) as u32;
            let mut rng = walk_rng(seed, start, w / n);
            let r = walk_into(csr, bias, start, &mut rng, out);
            want = (want.0 + r.0, want.1 + r.1);
        }
        let (p, q) = (1.0 / bias.inv_p, 1.0 / bias.inv_q);
        assert_eq!(group, single, "p={p} q={q} len={len} g={g} w0={w0}");
        assert_eq!(got, want, "p={p} q={q} len={len} g={g} w0={w0}");
    }

    #[test]
    fn lockstep_groups_equal_single_walks() {
        // Star plus path plus an isolated node: first steps, biased steps, padding.
        let csr = Csr::from_edges(
            9,
            &[
                (0, 1),
                (0, 2),
                (0, 3),
                (3, 4),
                (4, 5),
                (5, 6),
                (2, 6),
                (7, 7),
            ],
        );
        for (p, q) in [(1.0, 1.0), (0.5, 2.0), (3.0, 0.3), (2.0, 0.5), (0.25, 4.0)] {
            let bias = Bias::new(p, q);
            for len in [1usize, 2, 7] {
                for g in 1..=LOCKSTEP {
                    for w0 in [0u64, 5, 13] {
                        assert_group_equals_single_walks(&csr, &bias, 4, w0, len, g);
                    }
                }
            }
        }
    }

    /// A graph with hubs (degrees far above `LINEAR_SEARCH_MAX`, hub-hub edges), low-degree nodes, a path
    /// and an isolated node, from a fixed LCG.
    fn hubby() -> Csr {
        let n = 400u32;
        let mut e = Vec::new();
        let mut s = 12345u64;
        let mut next = |m: u32| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 33) % u64::from(m)) as u32
        };
        for v in 3..n - 1 {
            e.push((v, 0)); // hub 0: everyone
            if v % 2 == 0 {
                e.push((v, 1)); // hub 1: half
            }
            if v % 7 == 0 {
                e.push((v, 2)); // hub 2: a seventh
            }
            e.push((v, 3 + next(n - 4)));
        }
        e.extend([(0, 1), (1, 2), (n - 1, n - 1)]);
        Csr::from_edges(n as usize, &e)
    }

    #[test]
    fn sorted_contains_agrees_with_binary_search() {
        for len in [0usize, 1, 5, 31, 32, 33, 100] {
            let list: Vec<u32> = (0..len as u32).map(|i| i * 3 + 1).collect();
            for key in 0..(len as u32 * 3 + 3) {
                assert_eq!(
                    sorted_contains(&list, key),
                    list.binary_search(&key).is_ok(),
                    "len {len} key {key}"
                );
            }
        }
        let csr = hubby();
        for u in 0..csr.n_nodes() as u32 {
            for v in [0, 1, 2, 3, 57, 398, 399] {
                assert_eq!(adjacent(&csr, u, v), csr.has_edge(u, v), "{u} {v}");
            }
        }
    }

    #[test]
    fn lockstep_groups_equal_single_walks_on_a_graph_with_hubs() {
        let csr = hubby();
        let n = csr.n_nodes() as u64;
        assert!(csr.degree(0) > 300 && csr.degree(1) > 150 && csr.degree(399) == 0);
        for (p, q) in [
            (1.0, 1.0),
            (0.5, 2.0),
            (2.0, 0.5),
            (3.0, 0.3),
            (0.25, 4.0),
            (1.0, 0.5),
            (0.5, 1.0),
            (4.0, 4.0),
            (1.0, 3.0),
        ] {
            let bias = Bias::new(p, q);
            for len in [2usize, 3, 11] {
                for g in [1, 3, LOCKSTEP, LOCKSTEP + 5, 3 * LOCKSTEP + 1] {
                    for w0 in [0u64, 1, 395, 1203] {
                        assert_group_equals_single_walks(&csr, &bias, 9, w0, len, g);
                    }
                }
            }
        }
        // The whole generator too (all groups, batches), against walk_into walk by walk.
        let cfg = WalkConfig {
            p: 0.5,
            q: 2.0,
            length: 11,
            walks_per_node: 2,
            seed: 3,
            ..WalkConfig::default()
        };
        let all = generate(&csr, &cfg);
        let bias = Bias::new(cfg.p, cfg.q);
        for (w, walk) in all.iter().enumerate() {
            let w = w as u64;
            let start = (w % n) as u32;
            let mut out = vec![0u32; cfg.length];
            walk_into(&csr, &bias, start, &mut walk_rng(3, start, w / n), &mut out);
            assert_eq!(walk, &out[..], "walk {w}");
        }
    }

    #[test]
    fn config_validation() {
        for bad in [
            WalkConfig {
                p: 0.0,
                ..Default::default()
            },
            WalkConfig {
                q: f64::NAN,
                ..Default::default()
            },
            WalkConfig {
                length: 0,
                ..Default::default()
            },
            WalkConfig {
                walks_per_node: 0,
                ..Default::default()
            },
        ] {
            assert!(bad.validate().is_err(), "{bad:?}");
        }
    }
}
