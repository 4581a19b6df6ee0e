//! Cosine similarity between an original and its replacement: from `embeddings.npy` read through a memory map
//! ([`NpySimilarity`], what the stage uses), from word2vec text ([`EmbeddingSimilarity`]), none, or a function
//! (tests).

use crate::core::error::{Error, IoContext, Result};
use crate::core::ids::Qid;
use std::path::Path;

/// Cosine similarity between two entities, raw and centred. Tests pass hand-made ones.
pub trait Similarity: Sync {
    /// Raw cosine (as the paper), `None` when an embedding is missing.
    fn cosine(&self, a: Qid, b: Qid) -> Option<f32>;
    /// Cosine after subtracting the mean vector.
    fn cosine_centred(&self, a: Qid, b: Qid) -> Option<f32>;
}

/// No embeddings: every cosine is `None`.
pub struct NoSimilarity;

impl Similarity for NoSimilarity {
    fn cosine(&self, _: Qid, _: Qid) -> Option<f32> {
        None
    }
    fn cosine_centred(&self, _: Qid, _: Qid) -> Option<f32> {
        None
    }
}

/// A similarity from a function returning (raw, centred).
pub struct FnSimilarity<F>(pub F);

impl<F: Fn(Qid, Qid) -> (Option<f32>, Option<f32>) + Sync> Similarity for FnSimilarity<F> {
    fn cosine(&self, a: Qid, b: Qid) -> Option<f32> {
        (self.0)(a, b).0
    }
    fn cosine_centred(&self, a: Qid, b: Qid) -> Option<f32> {
        (self.0)(a, b).1
    }
}

/// Cosines from the train stage's embeddings (keys "Q42"): raw, and centred (mean vector subtracted).
pub struct EmbeddingSimilarity {
    raw: crate::store::embeddings::Embeddings,
    centred: crate::store::embeddings::Embeddings,
}

impl EmbeddingSimilarity {
    /// Wrap embeddings (computes the centred copy once).
    pub fn new(raw: crate::store::embeddings::Embeddings) -> EmbeddingSimilarity {
        let centred = raw.centred();
        EmbeddingSimilarity { raw, centred }
    }
}

impl Similarity for EmbeddingSimilarity {
    fn cosine(&self, a: Qid, b: Qid) -> Option<f32> {
        self.raw.cosine(&a.to_string(), &b.to_string())
    }
    fn cosine_centred(&self, a: Qid, b: Qid) -> Option<f32> {
        self.centred.cosine(&a.to_string(), &b.to_string())
    }
}

/// Cosines read from the train stage's `embeddings.npy` through a memory map (rows keyed by `nodes.txt`):
/// the same numbers as [`EmbeddingSimilarity`] on the word2vec text, without parsing or holding the matrix.
/// Memory: the keys (16 bytes per node), the mean row, and the pages of the rows looked up.
pub struct NpySimilarity {
    npy: crate::store::npy::NpyMap,
    /// (entity, row), sorted by entity.
    rows: Vec<(Qid, u32)>,
    mean: Vec<f32>,
}

impl NpySimilarity {
    /// Open `npy` and pair its rows with the keys of `nodes` (one per line, row `i` = line `i + 1`); keys that
    /// are not Q-ids (an edge list's own ids) are never looked up.
    pub fn open(npy: &Path, nodes: &Path) -> Result<NpySimilarity> {
        use std::io::BufRead;
        let map = crate::store::npy::NpyMap::open(npy)?;
        let f = std::fs::File::open(nodes).at(nodes)?;
        let mut rows = Vec::new();
        let mut n = 0usize;
        let mut line = String::new();
        let mut r = std::io::BufReader::with_capacity(1 << 20, f);
        loop {
            line.clear();
            if r.read_line(&mut line).at(nodes)? == 0 {
                break;
            }
            let key = line.strip_suffix('\n').unwrap_or(&line);
            // The word2vec keys were looked up as `Q<n>` text: only the canonical spelling matches.
            if let Some(q) = Qid::parse(key).filter(|q| q.to_string() == key) {
                let row = u32::try_from(n).map_err(|_| {
                    Error::bad_input(nodes, "more than 4 294 967 295 nodes".to_string())
                })?;
                rows.push((q, row));
            }
            n += 1;
        }
        if n != map.rows() {
            return Err(Error::bad_input(
                npy,
                format!(
                    "npy: {} rows, but {} lists {n} nodes (one row per node)",
                    map.rows(),
                    nodes.display()
                ),
            ));
        }
        rows.sort_unstable();
        if let Some(w) = rows.windows(2).find(|w| w[0].0 == w[1].0) {
            return Err(Error::bad_input(
                nodes,
                format!(
                    "key {} occurs twice (lines {} and {})",
                    w[0].0,
                    w[0].1 + 1,
                    w[1].1 + 1
                ),
            ));
        }
        let mean = map.mean_row();
        Ok(NpySimilarity {
            npy: map,
            rows,
            mean,
        })
    }

    fn row(&self, q: Qid, out: &mut Vec<f32>) -> Option<()> {
        let k = self.rows.binary_search_by_key(&q, |r| r.0).ok()?;
        self.npy.row_into(self.rows[k].1 as usize, out);
        Some(())
    }

    fn pair(&self, a: Qid, b: Qid, centred: bool) -> Option<f32> {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        self.row(a, &mut x)?;
        self.row(b, &mut y)?;
        if centred {
            for v in [&mut x, &mut y] {
                for (e, m) in v.iter_mut().zip(&self.mean) {
                    *e -= m;
                }
            }
        }
        Some(crate::store::embeddings::cosine_rows(&x, &y))
    }
}

impl Similarity for NpySimilarity {
    fn cosine(&self, a: Qid, b: Qid) -> Option<f32> {
        self.pair(a, b, false)
    }
    fn cosine_centred(&self, a: Qid, b: Qid) -> Option<f32> {
        self.pair(a, b, true)
    }
}
