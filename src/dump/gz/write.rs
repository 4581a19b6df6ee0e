//! Writing gzip members: one member per chunk, as GNU gzip writes them, and the Wikimedia layout (many
//! members in one file). `sword synth` and the tests make their gzip dumps with these.

use flate2::{Compression, GzBuilder};
use std::io::{self, Write};

/// One complete gzip member holding `chunk` (header as GNU gzip writes it on Unix: no name, mtime 0, OS 3).
pub fn compress_member(chunk: &[u8], level: Compression) -> Vec<u8> {
    let mut out = Vec::with_capacity(chunk.len() / 4 + 64);
    write_member(&mut out, chunk, level).expect("writing to a Vec cannot fail");
    out
}

/// Write `chunk` as one complete gzip member; returns the compressed size.
pub fn write_member<W: Write>(w: W, chunk: &[u8], level: Compression) -> io::Result<u64> {
    let mut counter = CountingWriter { inner: w, n: 0 };
    let mut enc = GzBuilder::new()
        .operating_system(3)
        .write(&mut counter, level);
    enc.write_all(chunk)?;
    enc.finish()?;
    Ok(counter.n)
}

/// Write each chunk as its own gzip member; returns the compressed size of the whole file.
pub fn write_members<'c, W: Write>(
    mut w: W,
    chunks: impl IntoIterator<Item = &'c [u8]>,
    level: Compression,
) -> io::Result<u64> {
    let mut total = 0;
    for c in chunks {
        total += write_member(&mut w, c, level)?;
    }
    Ok(total)
}

/// Write entity lines in Wikimedia's `latest-all.json.gz` layout: a member holding `[\n`, one member per batch
/// of `batch` lines (each line followed by `,\n`, except the very last line), and a member holding `\n]\n`.
/// The decompressed bytes are exactly the plain dump `[\n` + lines joined by `,\n` + `\n]\n`.
pub fn write_wikimedia_layout<W: Write>(
    mut w: W,
    lines: &[&[u8]],
    batch: usize,
    level: Compression,
) -> io::Result<u64> {
    let mut total = write_member(&mut w, b"[\n", level)?;
    let batch = batch.max(1);
    let mut buf = Vec::new();
    for (b, group) in lines.chunks(batch).enumerate() {
        buf.clear();
        for (i, l) in group.iter().enumerate() {
            buf.extend_from_slice(l);
            let last = b * batch + i + 1 == lines.len();
            if !last {
                buf.extend_from_slice(b",\n");
            }
        }
        total += write_member(&mut w, &buf, level)?;
    }
    total += write_member(&mut w, b"\n]\n", level)?;
    Ok(total)
}

struct CountingWriter<W> {
    inner: W,
    n: u64,
}

impl<W: Write> Write for CountingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}
