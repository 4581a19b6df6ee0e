//! `sword graph`: the undirected entity graph as compressed sparse rows (CSR).
//!
//! Input: the kept triples (`DIR/triples.parquet`, subject and object columns) or any plain edge list
//! (`--edges FILE`: two ids per line, tab or space separated, `#` starts a comment). Properties and
//! directions are dropped: node2vec (as used by the SWORD paper, section 3.1) walks an undirected,
//! unweighted graph, so `Q1 -P31-> Q2` and `Q2 -P279-> Q1` are the same edge. Each distinct unordered pair is
//! one edge (duplicates merged and counted); self-loops are dropped and counted (a walk that stays put
//! carries no context, and node2vec's return parameter p is defined for the step back to the previous
//! node, not for staying). An entity that occurs only in self-loops is still a node, of degree 0; its walks
//! are padded (see `walks`).
//!
//! Node ids: dense `u32` in the *natural* sorted order of the keys (`node_key_cmp`): a key is split into a
//! non-digit prefix and a decimal number, so `Q5 < Q42 < Q100 < P31`-style prefixes sort by prefix, then
//! numerically (`"Q"` < `"Qx"`), and plain numbers sort numerically (`2 < 10`). For Wikidata input this is
//! simply ascending Q-number. Sorted ids make the output independent of input order and thread count, and
//! put `nodes.txt` in an order a human can scan.
//!
//! Outputs in the run directory:
//! - `graph.csr`: versioned little-endian binary, memory-mappable (see [`Csr::write`] for the layout);
//! - `nodes.txt`: one key per line; line `i` is dense node id `i`;
//! - `graph.manifest.json`: counts (nodes, edges, self-loops dropped, duplicates merged, isolated nodes),
//!   degree distribution summary and connected-component summary (largest component share).
//!
//! The stage (`impl Stage for GraphStage`, its settings and flags) is in [`stage`]; this module is the graph.

pub mod stage;

pub use self::stage::{GraphArgs, GraphConfig, GraphStage};

use crate::core::error::{Error, IoContext, Result};
use crate::core::ids::{NodeId, Qid};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;

/// Magic bytes at the start of `graph.csr`.
pub const CSR_MAGIC: &[u8; 8] = b"SWORDCSR";
/// Format version of `graph.csr`; bump on any layout change.
pub const CSR_VERSION: u32 = 1;
/// Size of the `graph.csr` header in bytes (keeps the offsets array 8-byte aligned in a memory map).
pub const CSR_HEADER_LEN: usize = 32;

// ---------------------------------------------------------------------------------------------------------
// CSR
// ---------------------------------------------------------------------------------------------------------

/// Backing storage of a CSR array: owned, or a view into a memory-mapped file.
#[derive(Debug)]
enum Buf<T: 'static> {
    Owned(Vec<T>),
    Mapped {
        map: std::sync::Arc<memmap2::Mmap>,
        start: usize,
        len: usize,
    },
}

impl<T: Copy + 'static> Buf<T> {
    fn as_slice(&self) -> &[T] {
        match self {
            Buf::Owned(v) => v,
            Buf::Mapped { map, start, len } => {
                let bytes = &map[*start..*start + *len * std::mem::size_of::<T>()];
                // SAFETY: `Csr::read` only builds a `Mapped` buffer after checking (with `align_to`) that
                // this byte range is aligned for `T`, of exactly `len` elements, and on a little-endian
                // target (the file's byte order). u32/u64 have no invalid bit patterns.
                let (pre, mid, post) = unsafe { bytes.align_to::<T>() };
                debug_assert!(pre.is_empty() && post.is_empty());
                mid
            }
        }
    }
}

/// An undirected graph in compressed sparse rows: `neighbours(v)` is the sorted, duplicate-free list of
/// nodes adjacent to `v` (each undirected edge is stored in both directions; no self-loops).
#[derive(Debug)]
pub struct Csr {
    offsets: Buf<u64>,
    nbrs: Buf<u32>,
}

impl Csr {
    /// Build from undirected edges over nodes `0..n`. Self-loops are dropped, duplicate pairs (in either
    /// direction) merged. Parallel (sort-based) and deterministic: the result depends only on the edge set.
    ///
    /// Panics if an endpoint is `>= n` (callers map keys to ids themselves, so that is a bug, not bad input).
    pub fn from_edges(n: usize, edges: &[(NodeId, NodeId)]) -> Csr {
        Self::build(n, edges).0
    }

    /// Like `from_edges`, also returning (self-loops dropped, duplicate undirected pairs merged).
    pub fn build(n: usize, edges: &[(NodeId, NodeId)]) -> (Csr, BuildStats) {
        assert!(
            n <= u32::MAX as usize,
            "at most 2^32 - 1 nodes (u32::MAX pads walks)"
        );
        let self_loops = edges.par_iter().filter(|(u, v)| u == v).count() as u64;
        // Both directions as packed (row << 32 | column) keys; sorting groups rows and sorts columns.
        let mut keys: Vec<u64> = edges
            .par_iter()
            .filter(|(u, v)| u != v)
            .flat_map_iter(|&(u, v)| {
                assert!(
                    (u as usize) < n && (v as usize) < n,
                    "edge ({u}, {v}) out of range for {n} nodes"
                );
                [
                    (u64::from(u) << 32) | u64::from(v),
                    (u64::from(v) << 32) | u64::from(u),
                ]
            })
            .collect();
        keys.par_sort_unstable();
        keys.dedup();
        let non_loop = edges.len() as u64 - self_loops;
        let distinct = keys.len() as u64 / 2;
        let mut offsets = vec![0u64; n + 1];
        for &k in &keys {
            offsets[(k >> 32) as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let nbrs: Vec<u32> = keys.par_iter().map(|&k| k as u32).collect();
        (
            Csr {
                offsets: Buf::Owned(offsets),
                nbrs: Buf::Owned(nbrs),
            },
            BuildStats {
                self_loops_dropped: self_loops,
                duplicates_merged: non_loop - distinct,
            },
        )
    }

    /// Number of nodes.
    pub fn n_nodes(&self) -> usize {
        self.offsets.as_slice().len() - 1
    }

    /// Number of undirected edges (distinct pairs).
    pub fn n_edges(&self) -> usize {
        self.nbrs.as_slice().len() / 2
    }

    /// Sorted neighbours of `v`. Panics if `v >= n_nodes()`.
    #[inline]
    pub fn neighbours(&self, v: NodeId) -> &[u32] {
        let o = self.offsets.as_slice();
        let (a, b) = (o[v as usize] as usize, o[v as usize + 1] as usize);
        &self.nbrs.as_slice()[a..b]
    }

    /// Degree of `v`.
    #[inline]
    pub fn degree(&self, v: NodeId) -> usize {
        let o = self.offsets.as_slice();
        (o[v as usize + 1] - o[v as usize]) as usize
    }

    /// Whether `{u, v}` is an edge: binary search in the shorter of the two sorted lists.
    #[inline]
    pub fn has_edge(&self, u: NodeId, v: NodeId) -> bool {
        let n = self.n_nodes();
        if u as usize >= n || v as usize >= n {
            return false;
        }
        let (a, b) = (self.neighbours(u), self.neighbours(v));
        if a.len() <= b.len() {
            a.binary_search(&v).is_ok()
        } else {
            b.binary_search(&u).is_ok()
        }
    }

    /// The raw offsets array (`n + 1` entries; neighbours of `v` are `targets()[offsets[v]..offsets[v+1]]`).
    pub fn offsets(&self) -> &[u64] {
        self.offsets.as_slice()
    }

    /// The raw concatenated neighbour lists (`2 * n_edges` entries).
    pub fn targets(&self) -> &[u32] {
        self.nbrs.as_slice()
    }

    /// Undirected edges as `(u, v)` with `u < v`, in sorted order.
    pub fn edges(&self) -> impl Iterator<Item = (NodeId, NodeId)> + '_ {
        (0..self.n_nodes() as u32).flat_map(move |u| {
            self.neighbours(u)
                .iter()
                .filter(move |&&v| v > u)
                .map(move |&v| (u, v))
        })
    }

    /// Write the binary format:
    ///
    /// ```text
    /// offset  size          field
    /// 0       8             magic b"SWORDCSR"
    /// 8       4             format version (u32 LE) = 1
    /// 12      4             reserved, 0
    /// 16      8             n_nodes (u64 LE)
    /// 24      8             n_edges (u64 LE), undirected distinct pairs
    /// 32      8 (n + 1)     offsets (u64 LE), offsets[0] = 0, offsets[n] = 2 n_edges
    /// ...     4 (2 m)       neighbours (u32 LE), each row strictly increasing, no self-loops, symmetric
    /// ```
    ///
    /// The header is 32 bytes so a page-aligned memory map has the offsets 8-byte aligned and the
    /// neighbours 4-byte aligned.
    pub fn write<W: Write>(&self, mut w: W) -> std::io::Result<()> {
        w.write_all(CSR_MAGIC)?;
        w.write_all(&CSR_VERSION.to_le_bytes())?;
        w.write_all(&0u32.to_le_bytes())?;
        w.write_all(&(self.n_nodes() as u64).to_le_bytes())?;
        w.write_all(&(self.n_edges() as u64).to_le_bytes())?;
        let mut buf = Vec::with_capacity(1 << 16);
        for chunk in self.offsets().chunks(8192) {
            buf.clear();
            for x in chunk {
                buf.extend_from_slice(&x.to_le_bytes());
            }
            w.write_all(&buf)?;
        }
        for chunk in self.targets().chunks(16384) {
            buf.clear();
            for x in chunk {
                buf.extend_from_slice(&x.to_le_bytes());
            }
            w.write_all(&buf)?;
        }
        Ok(())
    }

    /// Read `graph.csr` (memory-mapped on little-endian targets) and validate it: magic, version, lengths,
    /// monotone offsets, neighbour ids in range, rows strictly increasing, no self-loops, symmetry. Any
    /// violation is `Error::Corrupt` naming the file.
    pub fn read(path: &Path) -> Result<Csr> {
        let file = std::fs::File::open(path).at(path)?;
        // SAFETY: the map is read-only; artifacts are replaced by atomic rename, never modified in place, so
        // the mapped file does not change under us in normal operation.
        let map = unsafe { memmap2::Mmap::map(&file) }.at(path)?;
        let csr = Self::from_mapped(std::sync::Arc::new(map), path)?;
        csr.validate(path)?;
        Ok(csr)
    }

    /// Parse the format from bytes in memory (copies; validates like `read`).
    pub fn from_bytes(bytes: &[u8], path: &Path) -> Result<Csr> {
        let (n, m) = parse_header(bytes, path)?;
        let csr = Self::from_bytes_unvalidated(bytes, n, m);
        csr.validate(path)?;
        Ok(csr)
    }

    fn from_mapped(map: std::sync::Arc<memmap2::Mmap>, path: &Path) -> Result<Csr> {
        let (n, m) = parse_header(&map, path)?;
        let off_start = CSR_HEADER_LEN;
        let nb_start = off_start + (n + 1) * 8;
        let aligned = cfg!(target_endian = "little") && {
            // SAFETY: only used to inspect alignment of the two ranges.
            let (p1, _, _) = unsafe { map[off_start..nb_start].align_to::<u64>() };
            let (p2, _, _) = unsafe { map[nb_start..].align_to::<u32>() };
            p1.is_empty() && p2.is_empty()
        };
        if !aligned {
            return Ok(Self::from_bytes_unvalidated(&map, n, m));
        }
        Ok(Csr {
            offsets: Buf::Mapped {
                map: map.clone(),
                start: off_start,
                len: n + 1,
            },
            nbrs: Buf::Mapped {
                map,
                start: nb_start,
                len: 2 * m,
            },
        })
    }

    fn from_bytes_unvalidated(bytes: &[u8], n: usize, m: usize) -> Csr {
        let off_start = CSR_HEADER_LEN;
        let nb_start = off_start + (n + 1) * 8;
        Csr {
            offsets: Buf::Owned(
                bytes[off_start..nb_start]
                    .chunks_exact(8)
                    .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
                    .collect(),
            ),
            nbrs: Buf::Owned(
                bytes[nb_start..nb_start + 2 * m * 4]
                    .chunks_exact(4)
                    .map(|c| u32::from_le_bytes(c.try_into().expect("4 bytes")))
                    .collect(),
            ),
        }
    }

    /// Check every structural invariant; `Error::Corrupt` naming `path` on the first violation.
    pub fn validate(&self, path: &Path) -> Result<()> {
        let corrupt = |what: String| Error::Corrupt {
            path: path.to_path_buf(),
            what,
        };
        let off = self.offsets();
        let nb = self.targets();
        let n = off.len() - 1;
        if off[0] != 0 || off[n] != nb.len() as u64 {
            return Err(corrupt(format!(
                "offsets run from {} to {}, expected 0 to {}",
                off[0],
                off[n],
                nb.len()
            )));
        }
        if let Some(v) = (0..n).find(|&v| off[v] > off[v + 1]) {
            return Err(corrupt(format!("offsets decrease at node {v}")));
        }
        let bad_row = (0..n as u32).into_par_iter().find_first(|&v| {
            let row = self.neighbours(v);
            row.iter().any(|&x| x as usize >= n || x == v) || row.windows(2).any(|w| w[0] >= w[1])
        });
        if let Some(v) = bad_row {
            return Err(corrupt(format!(
                "neighbour list of node {v} is out of range, unsorted, repeated or has a self-loop"
            )));
        }
        // Symmetry in one streaming pass: with rows strictly increasing and no self-loops, the graph is
        // symmetric iff the entries (v, x) with v < x and the entries (x, v) with x < v, both read as the pair
        // (min, max), are the same set; compare the sums of a 64-bit hash of the pairs on both sides. Only on a
        // mismatch (a corrupt file) the exact search by binary search finds the node to name.
        let mix = |a: u32, b: u32| {
            let mut z = (u64::from(a) << 32 | u64::from(b)).wrapping_add(0x9E37_79B9_7F4A_7C15);
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let (up, down) = (0..n as u32)
            .into_par_iter()
            .map(|v| {
                self.neighbours(v).iter().fold((0u64, 0u64), |(u, d), &x| {
                    if v < x {
                        (u.wrapping_add(mix(v, x)), d)
                    } else {
                        (u, d.wrapping_add(mix(x, v)))
                    }
                })
            })
            .reduce(
                || (0, 0),
                |a, b| (a.0.wrapping_add(b.0), a.1.wrapping_add(b.1)),
            );
        let asym = (up != down)
            .then(|| {
                (0..n as u32).into_par_iter().find_first(|&v| {
                    self.neighbours(v)
                        .iter()
                        .any(|&x| self.neighbours(x).binary_search(&v).is_err())
                })
            })
            .flatten();
        if let Some(v) = asym {
            return Err(corrupt(format!(
                "not symmetric: node {v} has a neighbour that does not list it"
            )));
        }
        Ok(())
    }
}

/// Counts from `Csr::build`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BuildStats {
    /// Input edges `(v, v)` dropped.
    pub self_loops_dropped: u64,
    /// Input edges (not self-loops) that repeated an unordered pair already seen.
    pub duplicates_merged: u64,
}

fn parse_header(bytes: &[u8], path: &Path) -> Result<(usize, usize)> {
    let corrupt = |what: String| Error::Corrupt {
        path: path.to_path_buf(),
        what,
    };
    if bytes.len() < CSR_HEADER_LEN {
        return Err(corrupt(format!(
            "{} bytes, shorter than the {CSR_HEADER_LEN}-byte header",
            bytes.len()
        )));
    }
    if &bytes[0..8] != CSR_MAGIC {
        return Err(corrupt("not a sword CSR graph (bad magic)".into()));
    }
    let u32_at = |i: usize| u32::from_le_bytes(bytes[i..i + 4].try_into().expect("4 bytes"));
    let u64_at = |i: usize| u64::from_le_bytes(bytes[i..i + 8].try_into().expect("8 bytes"));
    let version = u32_at(8);
    if version != CSR_VERSION {
        return Err(corrupt(format!(
            "format version {version}, this build reads version {CSR_VERSION}"
        )));
    }
    let (n, m) = (u64_at(16), u64_at(24));
    if n >= u64::from(u32::MAX) {
        return Err(corrupt(format!("{n} nodes exceeds the u32 id space")));
    }
    let expected = (n + 1)
        .checked_mul(8)
        .and_then(|o| m.checked_mul(8).and_then(|b| o.checked_add(b)))
        .and_then(|x| x.checked_add(CSR_HEADER_LEN as u64));
    if expected != Some(bytes.len() as u64) {
        return Err(corrupt(format!(
            "{} bytes, but the header ({n} nodes, {m} edges) implies {}",
            bytes.len(),
            expected.map_or("overflow".to_string(), |e| e.to_string())
        )));
    }
    Ok((n as usize, m as usize))
}

// ---------------------------------------------------------------------------------------------------------
// Node keys
// ---------------------------------------------------------------------------------------------------------

/// Split a key into (non-digit prefix, canonical decimal number) when it has that shape.
fn split_numbered(key: &str) -> Option<(&str, u64)> {
    let i = key.find(|c: char| c.is_ascii_digit())?;
    let (prefix, digits) = key.split_at(i);
    if prefix.bytes().any(|b| b.is_ascii_digit())
        || !digits.bytes().all(|b| b.is_ascii_digit())
        || (digits.len() > 1 && digits.starts_with('0'))
    {
        return None;
    }
    digits.parse::<u64>().ok().map(|n| (prefix, n))
}

/// The natural order of node keys: by non-digit prefix, then by number (keys of the form
/// `<prefix><decimal number without leading zeros>`), a prefix-only key before its numbered ones, and
/// finally by the whole string (so the order is total). `Q5 < Q42 < Q100`, `2 < 10`, `P31 < Q1`.
pub fn node_key_cmp(a: &str, b: &str) -> Ordering {
    let ka = split_numbered(a).map_or((a, None), |(p, n)| (p, Some(n)));
    let kb = split_numbered(b).map_or((b, None), |(p, n)| (p, Some(n)));
    ka.cmp(&kb).then_with(|| a.cmp(b))
}

/// Read `nodes.txt`: line `i` is the key of dense node `i`.
pub fn read_nodes(path: &Path) -> Result<Vec<String>> {
    let f = std::fs::File::open(path).at(path)?;
    let mut out = Vec::new();
    for line in BufReader::with_capacity(1 << 20, f).lines() {
        out.push(line.at(path)?);
    }
    Ok(out)
}

/// Write node keys, one per line.
pub fn write_nodes<W: Write>(keys: &[String], w: W) -> std::io::Result<()> {
    let mut w = std::io::BufWriter::with_capacity(1 << 20, w);
    for k in keys {
        w.write_all(k.as_bytes())?;
        w.write_all(b"\n")?;
    }
    w.flush()
}

/// An edge list over dense ids with its keys (`keys[i]` is node `i`, in natural order).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KeyedEdges {
    /// Node keys, sorted by `node_key_cmp`.
    pub keys: Vec<String>,
    /// Edges as read (self-loops and duplicates still present).
    pub edges: Vec<(NodeId, NodeId)>,
}

/// Parse a plain edge list: two ids per line separated by spaces or tabs (further columns, e.g. a weight,
/// are an error: this graph is unweighted), `#` starts a comment, blank lines are skipped. A line with
/// fewer or more than two ids is `Error::BadInput` naming `path` and the line number.
pub fn parse_edge_list<R: Read>(r: R, path: &Path) -> Result<KeyedEdges> {
    let mut reader = BufReader::with_capacity(1 << 20, r);
    let mut line = String::new();
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut raw: Vec<(u32, u32)> = Vec::new();
    let mut lineno = 0u64;
    let intern = |s: &str, ids: &mut HashMap<String, u32>| -> Result<u32> {
        if let Some(&i) = ids.get(s) {
            return Ok(i);
        }
        let i = u32::try_from(ids.len())
            .ok()
            .filter(|&i| i < u32::MAX)
            .ok_or_else(|| Error::bad_input(path, "more than 2^32 - 1 distinct node ids"))?;
        ids.insert(s.to_string(), i);
        Ok(i)
    };
    loop {
        line.clear();
        let n = reader.read_line(&mut line).map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData {
                Error::bad_input(path, format!("line {}: not UTF-8", lineno + 1))
            } else {
                Error::io(path, e)
            }
        })?;
        if n == 0 {
            break;
        }
        lineno += 1;
        let content = line.split('#').next().unwrap_or("");
        let mut toks = content
            .split([' ', '\t', '\r', '\n'])
            .filter(|t| !t.is_empty());
        let (a, b, extra) = (toks.next(), toks.next(), toks.next());
        match (a, b, extra) {
            (None, _, _) => continue,
            (Some(a), Some(b), None) => {
                let ia = intern(a, &mut ids)?;
                let ib = intern(b, &mut ids)?;
                raw.push((ia, ib));
            }
            (Some(_), None, _) => {
                return Err(Error::bad_input(
                    path,
                    format!("line {lineno}: expected two node ids, found one: `{}`", content.trim()),
                ))
            }
            (Some(_), Some(_), Some(_)) => {
                return Err(Error::bad_input(
                    path,
                    format!(
                        "line {lineno}: expected two node ids, found more (weights are not supported): `{}`",
                        content.trim()
                    ),
                ))
            }
        }
    }
    // Renumber in natural key order.
    let mut keys: Vec<(String, u32)> = ids.into_iter().collect();
    keys.par_sort_unstable_by(|a, b| node_key_cmp(&a.0, &b.0));
    let mut remap = vec![0u32; keys.len()];
    for (new, (_, old)) in keys.iter().enumerate() {
        remap[*old as usize] = new as u32;
    }
    let edges = raw
        .par_iter()
        .map(|&(a, b)| (remap[a as usize], remap[b as usize]))
        .collect();
    Ok(KeyedEdges {
        keys: keys.into_iter().map(|(k, _)| k).collect(),
        edges,
    })
}

/// Subject–object pairs of Q-ids as a keyed edge list (ids ascending by Q-number).
pub fn keyed_from_qid_pairs(pairs: &[(Qid, Qid)]) -> KeyedEdges {
    let mut qs: Vec<u64> = pairs.iter().flat_map(|(a, b)| [a.0, b.0]).collect();
    qs.par_sort_unstable();
    qs.dedup();
    let id = |q: Qid| qs.binary_search(&q.0).expect("collected above") as u32;
    let edges = pairs.par_iter().map(|&(a, b)| (id(a), id(b))).collect();
    KeyedEdges {
        keys: qs.iter().map(|&q| Qid(q).to_string()).collect(),
        edges,
    }
}

// ---------------------------------------------------------------------------------------------------------
// Statistics
// ---------------------------------------------------------------------------------------------------------

/// Degree distribution summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct DegreeSummary {
    pub min: u64,
    pub max: u64,
    pub mean: f64,
    pub median: u64,
    pub p90: u64,
    pub p99: u64,
    pub p999: u64,
    /// Nodes of degree 0.
    pub isolated: u64,
    /// `log2_histogram[0]` counts degree 0, `[k]` (k ≥ 1) counts degrees in `[2^(k-1), 2^k)`.
    pub log2_histogram: Vec<u64>,
}

/// Degree distribution of a graph.
pub fn degree_summary(csr: &Csr) -> DegreeSummary {
    let n = csr.n_nodes();
    if n == 0 {
        return DegreeSummary::default();
    }
    let mut deg: Vec<u64> = (0..n as u32).map(|v| csr.degree(v) as u64).collect();
    let mut hist = vec![0u64; 1];
    for &d in &deg {
        let b = if d == 0 {
            0
        } else {
            64 - d.leading_zeros() as usize
        };
        if hist.len() <= b {
            hist.resize(b + 1, 0);
        }
        hist[b] += 1;
    }
    deg.par_sort_unstable();
    let q = |f: f64| deg[((f * (n - 1) as f64).round() as usize).min(n - 1)];
    DegreeSummary {
        min: deg[0],
        max: deg[n - 1],
        mean: deg.iter().sum::<u64>() as f64 / n as f64,
        median: q(0.5),
        p90: q(0.9),
        p99: q(0.99),
        p999: q(0.999),
        isolated: hist[0],
        log2_histogram: hist,
    }
}

/// Connected components: the component label of every node (the smallest node id in it).
/// Union-find with path halving and union by size; cross-checked against petgraph in the tests.
pub fn component_labels(csr: &Csr) -> Vec<u32> {
    let n = csr.n_nodes();
    let mut parent: Vec<u32> = (0..n as u32).collect();
    let mut size: Vec<u32> = vec![1; n];
    fn find(parent: &mut [u32], mut x: u32) -> u32 {
        while parent[x as usize] != x {
            let p = parent[x as usize];
            parent[x as usize] = parent[p as usize];
            x = parent[x as usize];
        }
        x
    }
    for (u, v) in csr.edges() {
        let (a, b) = (find(&mut parent, u), find(&mut parent, v));
        if a != b {
            let (big, small) = if size[a as usize] >= size[b as usize] {
                (a, b)
            } else {
                (b, a)
            };
            parent[small as usize] = big;
            size[big as usize] += size[small as usize];
        }
    }
    let roots: Vec<u32> = (0..n as u32).map(|v| find(&mut parent, v)).collect();
    // Relabel by smallest member for a canonical labelling.
    let mut smallest = vec![u32::MAX; n];
    for (v, &r) in roots.iter().enumerate() {
        smallest[r as usize] = smallest[r as usize].min(v as u32);
    }
    roots.iter().map(|&r| smallest[r as usize]).collect()
}

/// Connected-component summary.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ComponentSummary {
    /// Number of connected components (isolated nodes count as components).
    pub count: u64,
    /// Nodes in the largest component.
    pub largest: u64,
    /// `largest / nodes` (0 for an empty graph).
    pub largest_share: f64,
}

/// Summarise connected components.
pub fn component_summary(csr: &Csr) -> ComponentSummary {
    let labels = component_labels(csr);
    let n = labels.len();
    let mut sizes = vec![0u64; n];
    for &l in &labels {
        sizes[l as usize] += 1;
    }
    let count = sizes.iter().filter(|&&s| s > 0).count() as u64;
    let largest = sizes.iter().copied().max().unwrap_or(0);
    ComponentSummary {
        count,
        largest,
        largest_share: if n == 0 {
            0.0
        } else {
            largest as f64 / n as f64
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn path() -> &'static Path {
        Path::new("mem.edges")
    }

    #[test]
    fn natural_key_order() {
        let mut v = vec![
            "Q100", "Q5", "Q42", "P31", "10", "2", "Q", "Q05", "abc", "Qx1",
        ];
        v.sort_by(|a, b| node_key_cmp(a, b));
        assert_eq!(
            v,
            vec!["2", "10", "P31", "Q", "Q5", "Q42", "Q100", "Q05", "Qx1", "abc"]
        );
    }

    #[test]
    fn builds_undirected_dedup_no_loops() {
        let (csr, st) = Csr::build(4, &[(0, 1), (1, 0), (2, 2), (1, 3), (0, 1), (3, 0)]);
        assert_eq!(csr.n_nodes(), 4);
        assert_eq!(csr.n_edges(), 3);
        assert_eq!(csr.neighbours(0), &[1, 3]);
        assert_eq!(csr.neighbours(1), &[0, 3]);
        assert_eq!(csr.neighbours(2), &[] as &[u32]);
        assert_eq!(csr.neighbours(3), &[0, 1]);
        assert_eq!(
            st,
            BuildStats {
                self_loops_dropped: 1,
                duplicates_merged: 2
            }
        );
        assert!(csr.has_edge(3, 1) && !csr.has_edge(0, 2) && !csr.has_edge(0, 9));
        assert_eq!(
            csr.edges().collect::<Vec<_>>(),
            vec![(0, 1), (0, 3), (1, 3)]
        );
    }

    #[test]
    fn edge_list_parses_comments_tabs_and_renumbers_naturally() {
        let text = "# header\nQ42\tQ5\n\nQ5 Q100  # trailing\n  Q100\t Q42\r\n";
        let k = parse_edge_list(text.as_bytes(), path()).unwrap();
        assert_eq!(k.keys, vec!["Q5", "Q42", "Q100"]);
        assert_eq!(k.edges, vec![(1, 0), (0, 2), (2, 1)]);
    }

    #[test]
    fn edge_list_errors_name_the_line() {
        let e = parse_edge_list("a b\nc\n".as_bytes(), path()).unwrap_err();
        let msg = e.to_string();
        assert!(msg.contains("mem.edges") && msg.contains("line 2"), "{msg}");
        let e = parse_edge_list("a b\n\n#x\na b 1.0\n".as_bytes(), path()).unwrap_err();
        assert!(e.to_string().contains("line 4"), "{e}");
        assert_eq!(e.exit_code(), 2);
        let e = parse_edge_list(&b"a b\n\xff c\n"[..], path()).unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }

    #[test]
    fn round_trip_bytes_and_corruption() {
        let csr = Csr::from_edges(5, &[(0, 1), (1, 2), (2, 3), (3, 4), (4, 0), (1, 3)]);
        let mut bytes = Vec::new();
        csr.write(&mut bytes).unwrap();
        let back = Csr::from_bytes(&bytes, path()).unwrap();
        assert_eq!(back.offsets(), csr.offsets());
        assert_eq!(back.targets(), csr.targets());
        // Truncated, bad magic, bad version, unsorted row, asymmetric.
        assert!(matches!(
            Csr::from_bytes(&bytes[..bytes.len() - 1], path()),
            Err(Error::Corrupt { .. })
        ));
        let mut b = bytes.clone();
        b[0] = b'X';
        assert!(Csr::from_bytes(&b, path()).is_err());
        let mut b = bytes.clone();
        b[8] = 9;
        assert!(Csr::from_bytes(&b, path())
            .unwrap_err()
            .to_string()
            .contains("version 9"));
        let nb = CSR_HEADER_LEN + 6 * 8;
        let mut b = bytes.clone();
        b.swap(nb, nb + 4); // node 0's two neighbours swapped (1, 4 -> 4, 1)
        assert!(Csr::from_bytes(&b, path()).is_err());
        let mut b = bytes.clone();
        b[nb] = 2; // node 0: [2, 4] but node 2 does not list 0
        assert!(Csr::from_bytes(&b, path())
            .unwrap_err()
            .to_string()
            .contains("symmetric"));
    }

    #[test]
    fn degree_and_components() {
        // Triangle 0-1-2, edge 3-4, isolated 5.
        let csr = Csr::from_edges(6, &[(0, 1), (1, 2), (2, 0), (3, 4), (5, 5)]);
        let d = degree_summary(&csr);
        assert_eq!((d.min, d.max, d.isolated), (0, 2, 1));
        assert_eq!(d.log2_histogram, vec![1, 2, 3]);
        assert!((d.mean - 8.0 / 6.0).abs() < 1e-12);
        assert_eq!(component_labels(&csr), vec![0, 0, 0, 3, 3, 5]);
        let c = component_summary(&csr);
        assert_eq!((c.count, c.largest), (3, 3));
        assert!((c.largest_share - 0.5).abs() < 1e-12);
    }
}
