//! Entity embeddings as a value: the `Embeddings` type (word2vec text and NPY readers/writers, cosine queries).
//! Below `train` (which writes them) and `embed`/`distort` (which read them).
//!
//! Formats:
//! - word2vec text (`embeddings.w2v`): first line `n dim`, then one line per vector, `key v1 v2 … vdim`,
//!   separated by single spaces. Values are printed with Rust's shortest round-trip formatting of `f32`, so a
//!   file written here and read back gives bit-identical vectors. gensim's
//!   `KeyedVectors.load_word2vec_format(path, binary=False)` reads it.
//! - NPY v1.0 (`embeddings.npy`, [`super::npy`]). Row `i` is dense node `i` (keys are in `nodes.txt`).

use crate::core::error::{Error, IoContext, Result};
use ndarray::Array2;
use std::borrow::Cow;
use std::collections::HashMap;
use std::fs::File;
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::Path;

use super::npy::{read_npy, write_npy};

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
                    let mut s = Vec::new();
                    let mut digits = ryu::Buffer::new();
                    for i in b * BLOCK..((b + 1) * BLOCK).min(self.len()) {
                        s.extend_from_slice(self.keys[i].as_bytes());
                        for &x in self.vectors.row(i) {
                            s.push(b' ');
                            push_f32(&mut s, x, &mut digits);
                        }
                        s.push(b'\n');
                    }
                    s
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

/// Append `x` exactly as `format!("{x}")` writes it (the shortest digits that read back as `x`, laid out without
/// an exponent: `0.00001`, `123`, `-0`), from `ryu`'s shortest digits: the same digits, since both give the
/// shortest decimal that rounds back to `x` and, among several, the one nearest to it (checked against
/// `Display` on every `f32` by the ignored test `push_f32_matches_display_on_every_f32`). Twice as fast as
/// `write!` (`benches/w2v.rs`), whose formatting was most of `embeddings.w2v`'s cost. Non-finite values (never
/// written: training refuses them) go through `Display`.
fn push_f32(out: &mut Vec<u8>, x: f32, buf: &mut ryu::Buffer) {
    if !x.is_finite() {
        out.extend_from_slice(x.to_string().as_bytes());
        return;
    }
    let text = buf.format_finite(x).as_bytes();
    let tie = exact_decimal(x);
    if tie.is_none() && !text.contains(&b'e') {
        // Nearly every value of a trained vector: `ryu` wrote Display's layout, whole numbers with a `.0`.
        out.extend_from_slice(text.strip_suffix(b".0").unwrap_or(text));
        return;
    }
    let (neg, text) = match text.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, text),
    };
    // `ryu` writes `d.ddd`, `ddd.0`, `0.000ddd`, `de±x` or `d.ddde±x`: split off the exponent.
    let (mant, exp) = match text.iter().position(|&b| b == b'e') {
        Some(i) => {
            let (mant, e) = text.split_at(i);
            let e = e.get(1..).unwrap_or_default();
            let (minus, e) = match e.split_first() {
                Some((b'-', rest)) => (true, rest),
                _ => (false, e),
            };
            let v = e
                .iter()
                .fold(0i32, |v, &d| v * 10 + i32::from(d.wrapping_sub(b'0')));
            (mant, if minus { -v } else { v })
        }
        None => (text, 0),
    };
    // The digits without the point, and where the point falls among them.
    let mut digits = [0u8; 24];
    let mut n = 0usize;
    let mut point = mant.len() as i32 + exp;
    for (i, &b) in mant.iter().enumerate() {
        if b == b'.' {
            point = i as i32 + exp;
        } else if n < digits.len() {
            digits[n] = b;
            n += 1;
        }
    }
    let mut lead = 0;
    while lead < n && digits[lead] == b'0' {
        lead += 1;
        point -= 1;
    }
    while n > lead && digits[n - 1] == b'0' {
        n -= 1;
    }
    let mut digits = &digits[lead..n];
    // Where two shortest candidates are equally near (`x` ends exactly in a 5 one place past them), `ryu`
    // takes the even one and `Display` the one farther from zero: take `Display`'s, from `x`'s exact digits.
    let mut up = [0u8; 24];
    if let Some((exact, last)) = tie {
        if point - digits.len() as i32 == last + 1 && exact % 10 == 5 {
            let mut v = exact / 10 + 1;
            let mut len = 0usize;
            while v > 0 && len < up.len() {
                up[len] = b'0' + (v % 10) as u8;
                v /= 10;
                len += 1;
            }
            up[..len].reverse();
            point = len as i32 + last + 1;
            while len > 0 && up[len - 1] == b'0' {
                len -= 1;
            }
            digits = &up[..len];
        }
    }
    if neg {
        out.push(b'-');
    }
    if digits.is_empty() {
        out.push(b'0');
    } else if point <= 0 {
        out.extend_from_slice(b"0.");
        out.resize(out.len() + (-point) as usize, b'0');
        out.extend_from_slice(digits);
    } else if (point as usize) < digits.len() {
        let (int, frac) = digits.split_at(point as usize);
        out.extend_from_slice(int);
        out.push(b'.');
        out.extend_from_slice(frac);
    } else {
        out.extend_from_slice(digits);
        out.resize(out.len() + (point as usize - digits.len()), b'0');
    }
}

/// `|x|` as `exact × 10^last` with `exact` a whole number, when `x` is not whole and that number fits in
/// 10 digits (`None` otherwise: then no two shortest candidates of at most 9 digits can be equally near).
fn exact_decimal(x: f32) -> Option<(u64, i32)> {
    let bits = x.to_bits();
    let (frac, biased) = (bits & 0x7f_ffff, (bits >> 23) & 0xff);
    let (mut m, mut e) = if biased == 0 {
        (frac as u64, -149i32)
    } else {
        ((frac | 0x80_0000) as u64, biased as i32 - 150)
    };
    if m == 0 {
        return None;
    }
    let tz = m.trailing_zeros();
    m >>= tz;
    e += tz as i32;
    // m ≥ 1 is odd, so m · 5^−e has at most 10 digits only if −e ≤ 14 (5^15 > 10^10).
    if !(-14..0).contains(&e) {
        return None;
    }
    // m · 2^e = m · 5^−e · 10^e.
    let exact = 5u64.checked_pow(e.unsigned_abs())?.checked_mul(m)?;
    (exact < 10_000_000_000).then_some((exact, e))
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::npy::tests::npy_bytes;
    use crate::store::npy::{npy_header, NpyMap};
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

    fn via_push(x: f32) -> String {
        let mut out = Vec::new();
        push_f32(&mut out, x, &mut ryu::Buffer::new());
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn push_f32_writes_what_display_writes() {
        // Each layout: below 1e-5 and above 1e16 (`ryu` writes an exponent there, Display never does), whole
        // numbers (`ryu` writes `.0`), signed zeros, subnormals, the extremes, and values around powers of ten.
        let mut cases = vec![
            0.0f32,
            -0.0,
            1.0,
            -1.0,
            0.1,
            0.5,
            123.0,
            1e-5,
            1e-6,
            1.5e-7,
            -2.5e-38,
            1e7,
            1.25e9,
            1e16,
            1e17,
            3.4028235e38,
            -3.4028235e38,
            f32::MIN_POSITIVE,
            1e-45,
            -1e-45,
            1.1754942e-38,
            16777216.0,
            16777217.0,
            0.3,
            2.0 / 3.0,
            1e-7,
            9.999999e-6,
            0.00012345,
            100.0,
            1e10,
            123456.79,
        ];
        for e in -45..=38 {
            let p = 10f32.powi(e);
            cases.extend([
                p,
                -p,
                f32::from_bits(p.to_bits().saturating_add(1)),
                f32::from_bits(p.to_bits().saturating_sub(1)),
            ]);
        }
        for x in cases {
            assert_eq!(via_push(x), format!("{x}"), "bits {:#010x}", x.to_bits());
        }
        for x in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            assert_eq!(via_push(x), format!("{x}"));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(20_000))]
        #[test]
        fn push_f32_matches_display(bits in proptest::prelude::any::<u32>()) {
            let x = f32::from_bits(bits);
            proptest::prop_assert_eq!(via_push(x), format!("{x}"));
        }
    }

    /// Every one of the 2³² `f32` bit patterns (a few minutes on two cores): `cargo test --release --lib
    /// push_f32_matches_display_on_every_f32 -- --ignored`.
    #[test]
    #[ignore]
    fn push_f32_matches_display_on_every_f32() {
        use rayon::prelude::*;
        let bad = (0..1u32 << 16)
            .into_par_iter()
            .map(|hi| {
                let mut out = Vec::new();
                let mut buf = ryu::Buffer::new();
                let mut want = String::new();
                let mut bad = 0u64;
                for lo in 0..1u32 << 16 {
                    let x = f32::from_bits(hi << 16 | lo);
                    out.clear();
                    want.clear();
                    push_f32(&mut out, x, &mut buf);
                    std::fmt::Write::write_fmt(&mut want, format_args!("{x}")).unwrap();
                    if out != want.as_bytes() {
                        bad += 1;
                    }
                }
                bad
            })
            .sum::<u64>();
        assert_eq!(bad, 0);
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
