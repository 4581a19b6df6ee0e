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

/// Where the data of an NPY file starts and what it holds: a 2-D little-endian f32 matrix in C order.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NpyLayout {
    /// Rows (`shape[0]`).
    pub rows: usize,
    /// Columns (`shape[1]`).
    pub cols: usize,
    /// Byte offset of the first value (magic, version, header length and header included).
    pub data_offset: usize,
}

impl NpyLayout {
    /// Bytes of data the shape calls for (`rows × cols × 4`), `None` if that overflows.
    pub fn data_len(&self) -> Option<u64> {
        (self.rows as u64)
            .checked_mul(self.cols as u64)?
            .checked_mul(4)
    }
}

/// The bytes an NPY preamble needs before its header: magic, version and header length (v1: 10, v2/3: 12).
const NPY_PREAMBLE_MAX: usize = 12;

/// Longest NPY header read (numpy itself refuses headers over 10 000 bytes unless told otherwise).
pub const NPY_HEADER_MAX: usize = 1 << 20;

/// Parse the preamble and header of an NPY file whose first bytes are `head` (at least the whole header; more
/// is ignored) and check them strictly: magic `\x93NUMPY`, version 1.0, 2.0 or 3.0, a header that lies within
/// `head`, and a Python dict literal with exactly the keys `descr` = `'<f4'`, `fortran_order` = `False` and a
/// 2-D `shape` of non-negative integers, followed by spaces and a newline. Nothing is allocated from the
/// numbers the header states; the caller compares [`NpyLayout::data_len`] with the file's size.
pub fn parse_npy_header(head: &[u8]) -> std::result::Result<NpyLayout, String> {
    if head.len() < 8 || &head[..6] != b"\x93NUMPY" {
        return Err("not an NPY file: it does not begin with the \\x93NUMPY magic".into());
    }
    let (major, minor) = (head[6], head[7]);
    let (hlen, start): (usize, usize) = match (major, minor) {
        (1, 0) => match head.get(8..10) {
            Some(b) => (u16::from_le_bytes([b[0], b[1]]) as usize, 10),
            None => return Err("the file ends inside the header length".into()),
        },
        (2 | 3, 0) => match head.get(8..12) {
            Some(b) => (u32::from_le_bytes([b[0], b[1], b[2], b[3]]) as usize, 12),
            None => return Err("the file ends inside the header length".into()),
        },
        _ => {
            return Err(format!(
                "unsupported NPY version {major}.{minor} (1.0, 2.0 and 3.0 are read)"
            ))
        }
    };
    if hlen > NPY_HEADER_MAX {
        return Err(format!(
            "the header claims {hlen} bytes, more than the {NPY_HEADER_MAX} an NPY header may have"
        ));
    }
    let end = start
        .checked_add(hlen)
        .filter(|&e| e <= head.len())
        .ok_or_else(|| {
            format!(
                "the header claims {hlen} bytes but the file holds only {} after the preamble",
                head.len().saturating_sub(start)
            )
        })?;
    let text = std::str::from_utf8(&head[start..end])
        .map_err(|_| "the header is not text (a Python dict literal)".to_string())?;
    let dict = parse_py_dict(text).map_err(|e| format!("header {:?}: {e}", text.trim_end()))?;
    let mut descr = None;
    let mut fortran = None;
    let mut shape = None;
    for (k, v) in dict {
        let slot_taken = match k {
            "descr" => descr.replace(v).is_some(),
            "fortran_order" => fortran.replace(v).is_some(),
            "shape" => shape.replace(v).is_some(),
            other => return Err(format!("unexpected key {other:?} in the header")),
        };
        if slot_taken {
            return Err(format!("key {k:?} appears twice in the header"));
        }
    }
    match descr {
        Some(PyValue::Str("<f4")) => {}
        Some(PyValue::Str(d)) => {
            return Err(format!(
                "dtype {d:?} is not little-endian float32 ('<f4'); save with .astype('<f4')"
            ))
        }
        _ => return Err("the header has no string 'descr'".into()),
    }
    match fortran {
        Some(PyValue::Bool(false)) => {}
        Some(PyValue::Bool(true)) => {
            return Err(
                "Fortran (column-major) order is not supported; save numpy.ascontiguousarray(m)"
                    .into(),
            )
        }
        _ => return Err("the header has no boolean 'fortran_order'".into()),
    }
    let (rows, cols) = match shape {
        Some(PyValue::Tuple(dims)) if dims.len() == 2 => (dims[0], dims[1]),
        Some(PyValue::Tuple(dims)) => {
            return Err(format!(
                "shape has {} dimensions; a matrix (rows, dim) is expected",
                dims.len()
            ))
        }
        _ => return Err("the header has no tuple 'shape'".into()),
    };
    let layout = NpyLayout {
        rows,
        cols,
        data_offset: end,
    };
    if layout.data_len().is_none() {
        return Err(format!("shape ({rows}, {cols}) overflows"));
    }
    Ok(layout)
}

/// A value of an NPY header dict.
#[derive(Debug, PartialEq)]
enum PyValue<'a> {
    Str(&'a str),
    Bool(bool),
    Tuple(Vec<usize>),
}

/// Parse the Python dict literal of an NPY header (`{'k': v, ...}` then spaces and a newline), with string,
/// boolean and integer-tuple values, as `numpy.lib.format` writes it.
fn parse_py_dict(text: &str) -> std::result::Result<Vec<(&str, PyValue<'_>)>, String> {
    let mut rest = text.trim_start();
    let eat = |rest: &mut &str, c: char| -> bool {
        *rest = rest.trim_start();
        match rest.strip_prefix(c) {
            Some(r) => {
                *rest = r;
                true
            }
            None => false,
        }
    };
    fn string<'a>(rest: &mut &'a str) -> std::result::Result<&'a str, String> {
        let q = rest
            .chars()
            .next()
            .filter(|c| *c == '\'' || *c == '"')
            .ok_or("expected a quoted string")?;
        let body = &rest[1..];
        let close = body.find(q).ok_or("unterminated string")?;
        let s = &body[..close];
        if s.contains('\\') {
            return Err("escapes in strings are not supported".into());
        }
        *rest = &body[close + 1..];
        Ok(s)
    }
    if !eat(&mut rest, '{') {
        return Err("not a dict (no opening brace)".into());
    }
    let mut out = Vec::new();
    loop {
        if eat(&mut rest, '}') {
            break;
        }
        rest = rest.trim_start();
        let key = string(&mut rest)?;
        if !eat(&mut rest, ':') {
            return Err(format!("no ':' after key {key:?}"));
        }
        rest = rest.trim_start();
        let value = if rest.starts_with(['\'', '"']) {
            PyValue::Str(string(&mut rest)?)
        } else if let Some(r) = rest.strip_prefix("True") {
            rest = r;
            PyValue::Bool(true)
        } else if let Some(r) = rest.strip_prefix("False") {
            rest = r;
            PyValue::Bool(false)
        } else if eat(&mut rest, '(') {
            let mut dims = Vec::new();
            loop {
                if eat(&mut rest, ')') {
                    break;
                }
                rest = rest.trim_start();
                let n = rest.bytes().take_while(u8::is_ascii_digit).count();
                if n == 0 {
                    return Err(format!("shape of key {key:?} holds a non-integer"));
                }
                let d: usize = rest[..n]
                    .parse()
                    .map_err(|_| format!("dimension {} is too large", &rest[..n]))?;
                dims.push(d);
                rest = &rest[n..];
                if !eat(&mut rest, ',') {
                    if eat(&mut rest, ')') {
                        break;
                    }
                    return Err(format!("no ',' or ')' in the tuple of key {key:?}"));
                }
            }
            PyValue::Tuple(dims)
        } else {
            return Err(format!(
                "value of key {key:?} is not a string, boolean or tuple"
            ));
        };
        out.push((key, value));
        if !eat(&mut rest, ',') {
            if eat(&mut rest, '}') {
                break;
            }
            return Err(format!("no ',' or '}}' after the value of key {key:?}"));
        }
    }
    if !rest.trim_matches([' ', '\n', '\t', '\r', '\0']).is_empty() {
        return Err("text after the closing brace".into());
    }
    Ok(out)
}

/// Read an NPY v1.0/2.0/3.0 file holding a 2-D little-endian f32 C-order matrix (header checked as
/// [`parse_npy_header`]; the data must be exactly as long as the shape says).
pub fn read_npy<R: Read>(mut r: R, path: &Path) -> Result<Array2<f32>> {
    let bad = |what: String| Error::bad_input(path, format!("npy: {what}"));
    let mut head = vec![0u8; NPY_PREAMBLE_MAX];
    let got = read_up_to(&mut r, &mut head).at(path)?;
    head.truncate(got);
    // The header length is in the preamble; read exactly as much header as it states (and no more than
    // the file holds: `take` stops at the end).
    let stated = match head.get(6) {
        Some(1) if head.len() >= 10 => 10 + u16::from_le_bytes([head[8], head[9]]) as usize,
        Some(2 | 3) if head.len() >= 12 => {
            12 + u32::from_le_bytes([head[8], head[9], head[10], head[11]]) as usize
        }
        _ => head.len(),
    };
    if stated > head.len() && stated <= NPY_PREAMBLE_MAX + NPY_HEADER_MAX {
        let want = (stated - head.len()) as u64;
        (&mut r).take(want).read_to_end(&mut head).at(path)?;
    }
    let layout = parse_npy_header(&head).map_err(bad)?;
    let want = layout.data_len().expect("checked by parse_npy_header");
    let mut bytes = head.split_off(layout.data_offset);
    // `take(want + 1)`: reads no more than one byte past what the shape says, whatever the file holds.
    (&mut r)
        .take(want.saturating_sub(bytes.len() as u64).saturating_add(1))
        .read_to_end(&mut bytes)
        .at(path)?;
    if bytes.len() as u64 != want {
        return Err(bad(format!(
            "expected {want} data bytes for shape ({}, {}), found {}{}",
            layout.rows,
            layout.cols,
            bytes.len(),
            if bytes.len() as u64 > want {
                " or more"
            } else {
                ""
            }
        )));
    }
    let data: Vec<f32> = bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    Array2::from_shape_vec((layout.rows, layout.cols), data).map_err(|e| bad(e.to_string()))
}

/// Fill `buf` as far as the reader goes; returns the bytes read.
fn read_up_to<R: Read>(r: &mut R, buf: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match r.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

/// An NPY matrix read through a memory map: the header is checked when it is opened ([`parse_npy_header`],
/// and the file must be exactly as long as its shape says), rows are decoded on demand. Nothing is parsed or
/// copied up front, so a stage that looks up a few thousand rows of a multi-gigabyte `embeddings.npy` touches
/// only their pages.
///
/// The file must not change while it is mapped: the stages read it under the run directory's lock, and train
/// replaces it by a rename (a new file), never in place.
pub struct NpyMap {
    map: memmap2::Mmap,
    layout: NpyLayout,
}

impl NpyMap {
    /// Map `path` and check its header and size.
    pub fn open(path: &Path) -> Result<NpyMap> {
        let bad = |what: String| Error::bad_input(path, format!("npy: {what}"));
        let f = File::open(path).at(path)?;
        let len = f.metadata().at(path)?.len();
        if len == 0 {
            return Err(bad("the file is empty".into()));
        }
        // SAFETY: the file is read-only here and not changed while mapped (see the type's doc).
        let map = unsafe { memmap2::Mmap::map(&f) }.at(path)?;
        let layout = parse_npy_header(&map).map_err(bad)?;
        let have = len - layout.data_offset as u64;
        let want = layout.data_len().expect("checked by parse_npy_header");
        if have != want {
            return Err(bad(format!(
                "shape ({}, {}) calls for {want} data bytes, the file holds {have} after its header ({})",
                layout.rows,
                layout.cols,
                if have < want { "truncated" } else { "trailing bytes" }
            )));
        }
        Ok(NpyMap { map, layout })
    }

    /// Rows of the matrix.
    pub fn rows(&self) -> usize {
        self.layout.rows
    }

    /// Columns (the vector dimension).
    pub fn cols(&self) -> usize {
        self.layout.cols
    }

    /// Row `i` (`i < rows()`) into `out` (cleared first).
    pub fn row_into(&self, i: usize, out: &mut Vec<f32>) {
        let w = self.layout.cols * 4;
        let at = self.layout.data_offset + i * w;
        out.clear();
        out.extend(
            self.map[at..at + w]
                .chunks_exact(4)
                .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]])),
        );
    }

    /// The mean row, summed in f64 in row order and rounded to f32 — the same numbers as
    /// [`Embeddings::centred`] subtracts. The rows are streamed once; the pages behind the scan are handed back
    /// to the kernel as it goes, so the scan adds at most a few MiB to the resident set, whatever the size of
    /// the file.
    pub fn mean_row(&self) -> Vec<f32> {
        let (rows, cols) = (self.layout.rows, self.layout.cols);
        let mut mean = vec![0f64; cols];
        if rows == 0 {
            return vec![0f32; cols];
        }
        let w = cols * 4;
        // Rows per block: about 8 MiB.
        let block = ((8usize << 20) / w.max(1)).max(1);
        let mut row = Vec::with_capacity(cols);
        let mut start = 0;
        while start < rows {
            let end = (start + block).min(rows);
            for i in start..end {
                self.row_into(i, &mut row);
                for (m, x) in mean.iter_mut().zip(&row) {
                    *m += f64::from(*x);
                }
            }
            let from = self.layout.data_offset + start * w;
            // SAFETY: a read-only mapping of a file that does not change: MADV_DONTNEED only drops the pages
            // from this process (they are read again from the file if touched), and no reference into the
            // range is held (rows are copied out).
            #[cfg(unix)]
            let _ = unsafe {
                self.map.unchecked_advise_range(
                    memmap2::UncheckedAdvice::DontNeed,
                    from,
                    (end - start) * w,
                )
            };
            start = end;
        }
        let n = rows as f64;
        mean.iter().map(|m| (m / n) as f32).collect()
    }
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

    /// An NPY file: preamble of version `v`, the header text padded to 64 bytes, then `data`.
    fn npy_bytes(v: u8, header: &str, data: &[u8]) -> Vec<u8> {
        let pre = if v == 1 { 10 } else { 12 };
        let mut h = header.to_string();
        while !(pre + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut out = b"\x93NUMPY".to_vec();
        out.extend([v, 0]);
        if v == 1 {
            out.extend((h.len() as u16).to_le_bytes());
        } else {
            out.extend((h.len() as u32).to_le_bytes());
        }
        out.extend(h.as_bytes());
        out.extend(data);
        out
    }

    #[test]
    fn npy_headers_numpy_writes_are_read_and_crafted_ones_refused() {
        let six: Vec<u8> = (1..=6).flat_map(|x| (x as f32).to_le_bytes()).collect();
        let ok = [
            "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), }",
            "{'shape': (3, 2), 'fortran_order': False, 'descr': '<f4'}",
            "{\"descr\":\"<f4\",\"fortran_order\":False,\"shape\":(3,2,)}",
        ];
        for h in ok {
            for v in [1, 2, 3] {
                let b = npy_bytes(v, h, &six);
                let l = parse_npy_header(&b).unwrap_or_else(|e| panic!("{h}: {e}"));
                assert_eq!((l.rows, l.cols, l.data_offset % 64), (3, 2, 0));
                let m = read_npy(&b[..], Path::new("m.npy")).unwrap();
                assert_eq!(m[[2, 1]], 6.0);
            }
        }
        let refused: [(&str, &str); 11] = [
            (
                "{'descr': '>f4', 'fortran_order': False, 'shape': (3, 2), }",
                "not little-endian float32",
            ),
            (
                "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 2), }",
                "not little-endian float32",
            ),
            (
                "{'descr': '<f4', 'fortran_order': True, 'shape': (3, 2), }",
                "Fortran",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2, 1), }",
                "3 dimensions",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
                "1 dimensions",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999, 2), }",
                "too large",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (4611686018427387904, 4), }",
                "overflows",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False}",
                "no tuple 'shape'",
            ),
            (
                "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (3, 2)}",
                "twice",
            ),
            (
                "{'descr': '<f4', 'fortran_order': False, 'shape': (3, 2), 'x': 1}",
                "not a string",
            ),
            ("[1, 2]", "not a dict"),
        ];
        for (h, want) in refused {
            let e = parse_npy_header(&npy_bytes(1, h, &six)).unwrap_err();
            assert!(e.contains(want), "{h}: {e}");
        }
        // A preamble that lies: a header longer than the file, or than any header may be, an unknown version.
        let mut b = npy_bytes(1, ok[0], &six);
        b[8..10].copy_from_slice(&60000u16.to_le_bytes());
        assert!(parse_npy_header(&b)
            .unwrap_err()
            .contains("claims 60000 bytes"));
        let mut b = npy_bytes(2, ok[0], &six);
        b[8..12].copy_from_slice(&u32::MAX.to_le_bytes());
        assert!(parse_npy_header(&b).unwrap_err().contains("more than"));
        let e = read_npy(&b[..], Path::new("m.npy"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("m.npy") && e.contains("more than"), "{e}");
        let mut b = npy_bytes(1, ok[0], &six);
        b[6] = 9;
        assert!(parse_npy_header(&b).unwrap_err().contains("version 9.0"));
        assert!(parse_npy_header(b"\x93NUM").unwrap_err().contains("magic"));
        assert!(parse_npy_header(b"PK\x03\x04 not npy")
            .unwrap_err()
            .contains("magic"));
    }

    #[test]
    fn mapped_npy_checks_its_size_and_gives_the_same_rows_and_mean() {
        let dir = tempfile::tempdir().unwrap();
        let e = Embeddings::new(
            (0..300).map(|i| format!("Q{i}")).collect(),
            Array2::from_shape_fn((300, 7), |(i, j)| ((i * 7 + j) as f32 * 0.37).sin()),
        )
        .unwrap();
        let p = dir.path().join("e.npy");
        let mut bytes = Vec::new();
        e.write_npy(&mut bytes).unwrap();
        std::fs::write(&p, &bytes).unwrap();
        let m = NpyMap::open(&p).unwrap();
        assert_eq!((m.rows(), m.cols()), (300, 7));
        let mut row = Vec::new();
        m.row_into(299, &mut row);
        assert_eq!(row, e.row(299).to_vec());
        // The mean is the one `centred` subtracts, bit for bit.
        let c = e.centred();
        let mean = m.mean_row();
        for i in [0, 150, 299] {
            m.row_into(i, &mut row);
            for (j, x) in row.iter().enumerate() {
                assert_eq!((x - mean[j]).to_bits(), c.vectors[[i, j]].to_bits());
            }
        }
        // Cut short, or with bytes after the data: refused, naming the file.
        for (name, b) in [
            ("short.npy", &bytes[..bytes.len() - 4]),
            ("long.npy", &[&bytes[..], b"xxxx"].concat()[..]),
            ("empty.npy", &[][..]),
        ] {
            let q = dir.path().join(name);
            std::fs::write(&q, b).unwrap();
            let err = NpyMap::open(&q).map(|_| ()).unwrap_err().to_string();
            assert!(err.contains(name), "{err}");
            let err = read_npy(std::fs::File::open(&q).unwrap(), &q)
                .unwrap_err()
                .to_string();
            assert!(err.contains(name), "{err}");
        }
        // A header promising 10¹² rows in a small file allocates nothing and is refused.
        let h = "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000, 128), }";
        let q = dir.path().join("liar.npy");
        std::fs::write(&q, npy_bytes(1, h, &[0; 64])).unwrap();
        let err = NpyMap::open(&q).map(|_| ()).unwrap_err().to_string();
        assert!(err.contains("truncated"), "{err}");
        let err = read_npy(std::fs::File::open(&q).unwrap(), &q)
            .unwrap_err()
            .to_string();
        assert!(err.contains("found 64"), "{err}");
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
