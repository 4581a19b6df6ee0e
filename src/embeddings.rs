//! Entity embeddings as a value: the `Embeddings` type (word2vec text and NPY readers/writers, cosine queries).
//! Below `train` (which writes them) and `embed`/`distort` (which read them); reached from outside the crate
//! as `sword::embed::{Embeddings, cosine_rows, npy_header, read_npy, write_npy}`.
//!
//! Formats:
//! - word2vec text (`embeddings.w2v`): first line `n dim`, then one line per vector, `key v1 v2 … vdim`,
//!   separated by single spaces. Values are printed with Rust's shortest round-trip formatting of `f32`, so a
//!   file written here and read back gives bit-identical vectors. gensim's
//!   `KeyedVectors.load_word2vec_format(path, binary=False)` reads it.
//! - NPY v1.0 (`embeddings.npy`): `\x93NUMPY`, version 1.0, a little-endian u16 header length, a Python dict
//!   header `{'descr': '<f4', 'fortran_order': False, 'shape': (n, dim), }` padded with spaces and ending in
//!   `\n` so that the data starts at a multiple of 64 bytes, then `n × dim` little-endian f32 in row-major
//!   order. Row `i` is dense node `i` (keys are in `nodes.txt`).

use crate::error::{Error, IoContext, Result};
use ndarray::Array2;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::Path;

/// Keyed embedding vectors: row `i` of `vectors` belongs to `keys[i]`.
#[derive(Clone, Debug)]
pub struct Embeddings {
    /// Key of each row (a Q-id such as `Q42`, or the id used in the input edge list).
    pub keys: Vec<String>,
    /// Vector dimension (columns of `vectors`).
    pub dim: usize,
    /// `keys.len() × dim` matrix, one vector per row.
    pub vectors: Array2<f32>,
    /// Key → row, built once at construction.
    index: HashMap<String, usize>,
}

impl PartialEq for Embeddings {
    fn eq(&self, other: &Self) -> bool {
        self.keys == other.keys && self.dim == other.dim && self.vectors == other.vectors
    }
}

impl Embeddings {
    /// Keyed vectors from rows; errors when the number of keys differs from the number of rows or a key repeats
    /// or is not a single whitespace-free token (it could not be written to word2vec text).
    pub fn new(keys: Vec<String>, vectors: Array2<f32>) -> Result<Embeddings> {
        let vectors = if vectors.is_standard_layout() {
            vectors
        } else {
            vectors.as_standard_layout().into_owned()
        };
        if keys.len() != vectors.nrows() {
            return Err(Error::Config(format!(
                "embeddings: {} keys for {} vectors",
                keys.len(),
                vectors.nrows()
            )));
        }
        let mut index = HashMap::with_capacity(keys.len());
        for (i, k) in keys.iter().enumerate() {
            if k.is_empty() || k.chars().any(char::is_whitespace) {
                return Err(Error::Config(format!(
                    "embeddings: key {k:?} (row {i}) is empty or contains whitespace"
                )));
            }
            if index.insert(k.clone(), i).is_some() {
                return Err(Error::Config(format!("embeddings: key {k:?} occurs twice")));
            }
        }
        Ok(Embeddings {
            dim: vectors.ncols(),
            keys,
            vectors,
            index,
        })
    }

    /// Number of vectors.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// True when there are no vectors.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Row of `key`.
    pub fn index_of(&self, key: &str) -> Option<usize> {
        self.index.get(key).copied()
    }

    /// Row `i` as a slice (borrowed when the matrix is in standard layout, as every constructor leaves it).
    pub fn row(&self, i: usize) -> Cow<'_, [f32]> {
        let r = self.vectors.row(i);
        match r.to_slice() {
            Some(s) => Cow::Borrowed(s),
            None => Cow::Owned(r.to_vec()),
        }
    }

    /// The vector of `key`.
    pub fn vector(&self, key: &str) -> Option<Cow<'_, [f32]>> {
        Some(self.row(self.index_of(key)?))
    }

    /// Cosine similarity of the vectors of `a` and `b` (`None` if either key is unknown; 0 if either vector is
    /// all zeros).
    pub fn cosine(&self, a: &str, b: &str) -> Option<f32> {
        let (i, j) = (self.index_of(a)?, self.index_of(b)?);
        Some(self.cosine_idx(i, j))
    }

    /// Cosine similarity of rows `i` and `j`.
    pub fn cosine_idx(&self, i: usize, j: usize) -> f32 {
        cosine_rows(&self.row(i), &self.row(j))
    }

    /// A copy with the mean vector subtracted from every row. One-epoch skip-gram vectors share a common
    /// direction that makes raw cosines of unrelated rare nodes look similar; centring removes it.
    pub fn centred(&self) -> Embeddings {
        let mut v = self.vectors.clone();
        if !self.is_empty() {
            let mut mean = vec![0f64; self.dim];
            for row in v.rows() {
                for (m, x) in mean.iter_mut().zip(row.iter()) {
                    *m += f64::from(*x);
                }
            }
            let n = self.len() as f64;
            let mean: Vec<f32> = mean.iter().map(|m| (m / n) as f32).collect();
            for mut row in v.rows_mut() {
                for (x, m) in row.iter_mut().zip(&mean) {
                    *x -= m;
                }
            }
        }
        Embeddings {
            keys: self.keys.clone(),
            dim: self.dim,
            vectors: v,
            index: self.index.clone(),
        }
    }

    /// The `top` keys most similar to `key` by cosine, best first, excluding `key` itself (ties broken by row
    /// order). Empty when `key` is unknown.
    pub fn most_similar(&self, key: &str, top: usize) -> Vec<(String, f32)> {
        let Some(q) = self.index_of(key) else {
            return Vec::new();
        };
        let qv = self.row(q);
        let qn = norm(&qv);
        let mut scored: Vec<(usize, f32)> = (0..self.len())
            .filter(|i| *i != q)
            .map(|i| {
                let r = self.row(i);
                let d = norm(&r) * qn;
                let c = if d > 0.0 { dot(&qv, &r) / d } else { 0.0 };
                (i, c)
            })
            .collect();
        scored.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.cmp(&b.0)));
        scored.truncate(top);
        scored
            .into_iter()
            .map(|(i, c)| (self.keys[i].clone(), c))
            .collect()
    }

    /// Read word2vec text from a file.
    pub fn read_w2v(path: &Path) -> Result<Embeddings> {
        let f = File::open(path).at(path)?;
        Embeddings::read_w2v_from(BufReader::with_capacity(1 << 20, f), path)
    }

    /// Read word2vec text from a reader; `path` names the source in errors (which give the line number).
    pub fn read_w2v_from<R: BufRead>(mut r: R, path: &Path) -> Result<Embeddings> {
        let bad = |line: u64, what: String| Error::bad_input(path, format!("line {line}: {what}"));
        let mut line = String::new();
        let n_read = r.read_line(&mut line).at(path)?;
        if n_read == 0 {
            return Err(bad(1, "empty file; expected a header `count dim`".into()));
        }
        let mut head = line.split_ascii_whitespace();
        let (n, dim) = match (head.next(), head.next(), head.next()) {
            (Some(a), Some(b), None) => match (a.parse::<usize>(), b.parse::<usize>()) {
                (Ok(n), Ok(d)) if d > 0 => (n, d),
                _ => {
                    return Err(bad(
                        1,
                        format!("header {:?} is not `count dim`", line.trim_end()),
                    ))
                }
            },
            _ => {
                return Err(bad(
                    1,
                    format!("header {:?} is not `count dim`", line.trim_end()),
                ))
            }
        };
        let mut keys = Vec::with_capacity(n.min(1 << 24));
        let mut data: Vec<f32> = Vec::with_capacity(n.min(1 << 24) * dim);
        for i in 0..n {
            let lineno = i as u64 + 2;
            line.clear();
            if r.read_line(&mut line).at(path)? == 0 {
                return Err(bad(
                    lineno,
                    format!("file ends after {i} vectors; header promised {n}"),
                ));
            }
            let mut fields = line.split_ascii_whitespace();
            let key = fields
                .next()
                .ok_or_else(|| bad(lineno, "empty line; expected `key v1 … vdim`".into()))?;
            let mut got = 0usize;
            for f in fields {
                if got == dim {
                    return Err(bad(
                        lineno,
                        format!("more than {dim} values for key {key:?}"),
                    ));
                }
                let x = f.parse::<f32>().map_err(|_| {
                    bad(
                        lineno,
                        format!("value {} of key {key:?} is not a number: {f:?}", got + 1),
                    )
                })?;
                data.push(x);
                got += 1;
            }
            if got != dim {
                return Err(bad(
                    lineno,
                    format!("key {key:?} has {got} values, header says {dim}"),
                ));
            }
            keys.push(key.to_string());
        }
        line.clear();
        while r.read_line(&mut line).at(path)? > 0 {
            if !line.trim().is_empty() {
                return Err(bad(
                    n as u64 + 2,
                    format!("more lines than the {n} vectors the header promised"),
                ));
            }
            line.clear();
        }
        let vectors = Array2::from_shape_vec((n, dim), data)
            .map_err(|e| Error::bad_input(path, e.to_string()))?;
        Embeddings::new(keys, vectors).map_err(|e| Error::bad_input(path, e.to_string()))
    }

    /// Write word2vec text (`n dim` header, then `key v1 … vdim` per row, shortest round-trip f32 formatting).
    pub fn write_w2v<W: Write>(&self, w: W) -> std::io::Result<()> {
        use rayon::prelude::*;
        // Float formatting dominates (≈128 M values for 1 M nodes): format blocks of rows in parallel, write
        // them in order.
        const BLOCK: usize = 1024;
        const BATCH: usize = 64;
        let mut w = BufWriter::with_capacity(1 << 20, w);
        writeln!(w, "{} {}", self.len(), self.dim)?;
        let blocks: Vec<usize> = (0..self.len().div_ceil(BLOCK)).collect();
        for batch in blocks.chunks(BATCH) {
            let texts: Vec<Vec<u8>> = batch
                .par_iter()
                .map(|&b| {
                    use std::fmt::Write as _;
                    let mut s = String::new();
                    for i in b * BLOCK..((b + 1) * BLOCK).min(self.len()) {
                        s.push_str(&self.keys[i]);
                        for x in self.vectors.row(i) {
                            let _ = write!(s, " {x}");
                        }
                        s.push('\n');
                    }
                    s.into_bytes()
                })
                .collect();
            for t in texts {
                w.write_all(&t)?;
            }
        }
        w.flush()
    }

    /// Write the vectors as NPY v1.0 (`<f4`, C order, shape `(n, dim)`); keys are not stored.
    pub fn write_npy<W: Write>(&self, w: W) -> std::io::Result<()> {
        write_npy(&self.vectors, w)
    }

    /// Read an NPY matrix and pair it with keys (e.g. from `nodes.txt`).
    pub fn read_npy(npy: &Path, keys: Vec<String>) -> Result<Embeddings> {
        let f = File::open(npy).at(npy)?;
        let m = read_npy(BufReader::new(f), npy)?;
        Embeddings::new(keys, m).map_err(|e| Error::bad_input(npy, e.to_string()))
    }
}

fn dot(a: &[f32], b: &[f32]) -> f32 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f32]) -> f32 {
    dot(a, a).sqrt()
}

/// Cosine of two vectors; 0 when either is all zeros.
pub fn cosine_rows(a: &[f32], b: &[f32]) -> f32 {
    let d = norm(a) * norm(b);
    if d > 0.0 {
        dot(a, b) / d
    } else {
        0.0
    }
}

/// The NPY v1.0 header for a little-endian f32 C-order matrix of `rows × cols`, magic to final `\n`, padded so
/// its length is a multiple of 64.
pub fn npy_header(rows: usize, cols: usize) -> Vec<u8> {
    let dict = format!("{{'descr': '<f4', 'fortran_order': False, 'shape': ({rows}, {cols}), }}");
    let unpadded = 10 + dict.len() + 1;
    let total = unpadded.div_ceil(64) * 64;
    let hlen = total - 10;
    let mut h = Vec::with_capacity(total);
    h.extend_from_slice(b"\x93NUMPY\x01\x00");
    h.extend_from_slice(&(hlen as u16).to_le_bytes());
    h.extend_from_slice(dict.as_bytes());
    h.resize(total - 1, b' ');
    h.push(b'\n');
    h
}

/// Write a matrix as NPY v1.0, `<f4`, C order.
pub fn write_npy<W: Write>(m: &Array2<f32>, w: W) -> std::io::Result<()> {
    let mut w = BufWriter::with_capacity(1 << 20, w);
    w.write_all(&npy_header(m.nrows(), m.ncols()))?;
    let mut buf = Vec::with_capacity(m.ncols() * 4);
    for row in m.rows() {
        buf.clear();
        for x in row {
            buf.extend_from_slice(&x.to_le_bytes());
        }
        w.write_all(&buf)?;
    }
    w.flush()
}

/// Read an NPY v1.x/2.x file holding a 2-D little-endian f32 C-order matrix.
pub fn read_npy<R: Read>(mut r: R, path: &Path) -> Result<Array2<f32>> {
    let bad = |what: String| Error::bad_input(path, format!("npy: {what}"));
    let mut pre = [0u8; 8];
    r.read_exact(&mut pre)
        .map_err(|_| bad("shorter than the 8-byte magic".into()))?;
    if &pre[..6] != b"\x93NUMPY" {
        return Err(bad("missing the \\x93NUMPY magic".into()));
    }
    let hlen = match pre[6] {
        1 => {
            let mut b = [0u8; 2];
            r.read_exact(&mut b).at(path)?;
            u16::from_le_bytes(b) as usize
        }
        2 | 3 => {
            let mut b = [0u8; 4];
            r.read_exact(&mut b).at(path)?;
            u32::from_le_bytes(b) as usize
        }
        v => return Err(bad(format!("unsupported version {v}"))),
    };
    let mut header = vec![0u8; hlen];
    r.read_exact(&mut header)
        .map_err(|_| bad("header truncated".into()))?;
    let header = String::from_utf8_lossy(&header).into_owned();
    let compact: String = header.chars().filter(|c| !c.is_whitespace()).collect();
    if !compact.contains("'descr':'<f4'") {
        return Err(bad(format!("dtype is not little-endian f32: {header}")));
    }
    if !compact.contains("'fortran_order':False") {
        return Err(bad("Fortran order is not supported".into()));
    }
    let shape = compact
        .split("'shape':(")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .ok_or_else(|| bad(format!("no shape in header {header}")))?;
    let dims: Vec<usize> = shape
        .split(',')
        .filter(|s| !s.is_empty())
        .map(|s| s.parse::<usize>())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| bad(format!("bad shape ({shape})")))?;
    let [rows, cols] = dims[..] else {
        return Err(bad(format!("shape ({shape}) is not 2-D")));
    };
    let n = rows
        .checked_mul(cols)
        .ok_or_else(|| bad("shape overflows".into()))?;
    let mut bytes = Vec::new();
    r.read_to_end(&mut bytes).at(path)?;
    if bytes.len() != n * 4 {
        return Err(bad(format!(
            "expected {} data bytes for shape ({rows}, {cols}), found {}",
            n * 4,
            bytes.len()
        )));
    }
    let data: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Array2::from_shape_vec((rows, cols), data).map_err(|e| bad(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use ndarray::array;

    fn sample() -> Embeddings {
        Embeddings::new(
            vec!["Q1".into(), "Q2".into(), "Q3".into()],
            array![[1.0, 0.0], [0.6, 0.8], [-1.0, 1e-7]],
        )
        .unwrap()
    }

    #[test]
    fn cosine_and_most_similar_by_hand() {
        let e = sample();
        assert_eq!(e.index_of("Q2"), Some(1));
        assert!((e.cosine("Q1", "Q2").unwrap() - 0.6).abs() < 1e-6);
        assert!(e.cosine("Q1", "Q9").is_none());
        let top = e.most_similar("Q1", 5);
        assert_eq!(top.len(), 2);
        assert_eq!(top[0].0, "Q2");
        assert_eq!(top[1].0, "Q3");
        assert!(e.most_similar("nope", 3).is_empty());
    }

    #[test]
    fn centred_has_zero_mean() {
        let c = sample().centred();
        for col in c.vectors.columns() {
            assert!(col.sum().abs() < 1e-6);
        }
    }

    #[test]
    fn w2v_round_trip_is_exact() {
        let e = Embeddings::new(
            vec!["a".into(), "b".into()],
            array![[0.1f32, -3.4028235e38], [f32::MIN_POSITIVE, 1.0 / 3.0]],
        )
        .unwrap();
        let mut buf = Vec::new();
        e.write_w2v(&mut buf).unwrap();
        let back = Embeddings::read_w2v_from(&buf[..], Path::new("mem")).unwrap();
        assert_eq!(back, e);
        for (x, y) in back.vectors.iter().zip(e.vectors.iter()) {
            assert_eq!(x.to_bits(), y.to_bits());
        }
    }

    #[test]
    fn npy_header_follows_the_spec() {
        let h = npy_header(3, 2);
        assert_eq!(h.len() % 64, 0);
        assert_eq!(&h[..8], b"\x93NUMPY\x01\x00");
        assert_eq!(u16::from_le_bytes([h[8], h[9]]) as usize, h.len() - 10);
        let text = std::str::from_utf8(&h[10..]).unwrap();
        assert!(text.starts_with("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }"));
        assert!(text.ends_with('\n'));
        let e = sample();
        let mut buf = Vec::new();
        e.write_npy(&mut buf).unwrap();
        assert_eq!(buf.len(), h.len() + 3 * 2 * 4);
        assert_eq!(&buf[h.len()..h.len() + 4], &1.0f32.to_le_bytes());
        let m = read_npy(&buf[..], Path::new("mem")).unwrap();
        assert_eq!(m, e.vectors);
    }

    #[test]
    fn malformed_w2v_names_the_line() {
        let cases: [(&str, &str); 5] = [
            ("", "line 1"),
            ("2 x\n", "line 1"),
            ("2 2\na 1 2\nb 1\n", "line 3"),
            ("1 2\na 1 zz\n", "line 2"),
            ("3 2\na 1 2\n", "line 3"),
        ];
        for (text, want) in cases {
            let err = Embeddings::read_w2v_from(text.as_bytes(), Path::new("f.w2v"))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{text:?}: {err}");
            assert!(err.contains("f.w2v"), "{err}");
        }
        let dup = Embeddings::read_w2v_from("2 1\na 1\na 2\n".as_bytes(), Path::new("f"));
        assert!(dup.is_err());
    }
}
