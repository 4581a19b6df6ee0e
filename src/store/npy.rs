//! NPY v1.0 matrices (`embeddings.npy`): `\x93NUMPY`, version 1.0, a little-endian u16 header length, a Python
//! dict header `{'descr': '<f4', 'fortran_order': False, 'shape': (n, dim), }` padded with spaces and ending in
//! `\n` so that the data starts at a multiple of 64 bytes, then `n × dim` little-endian f32 in row-major order.
//! Read whole ([`read_npy`]) or through a memory map, row by row ([`NpyMap`]); headers that numpy writes (v1 to
//! v3, either byte order's f4) are read, crafted ones refused ([`parse_npy_header`]).

use crate::core::error::{Error, IoContext, Result};
use ndarray::Array2;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::Path;

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
pub(crate) mod tests {
    use super::*;

    /// An NPY file: preamble of version `v`, the header text padded to 64 bytes, then `data`.
    pub(crate) fn npy_bytes(v: u8, header: &str, data: &[u8]) -> Vec<u8> {
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
}
