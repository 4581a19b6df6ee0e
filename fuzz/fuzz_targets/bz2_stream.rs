//! Bytes as a bzip2 file on stdin: the stream decoder (`dump::bz2::par_blocks_stream`, a bounded window over
//! a reader that hands out short reads) must agree with the decoder of the mapped file (`par_blocks`) — the
//! same bytes handed on, the same verdict (accepted, cut, refused) — whatever the cap and the read sizes. The
//! first two bytes choose them; the rest is the file.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Read;
use std::path::Path;
use sword::dump::bz2::{par_blocks, par_blocks_stream};

/// Hands out at most `step` bytes per read (the pipe's short reads).
struct Short<'a> {
    data: &'a [u8],
    step: usize,
}

impl Read for Short<'_> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.step.min(buf.len()).min(self.data.len());
        buf[..n].copy_from_slice(&self.data[..n]);
        self.data = &self.data[n..];
        Ok(n)
    }
}

fuzz_target!(|input: &[u8]| {
    let [a, b, data @ ..] = input else { return };
    let step = 1 + usize::from(*a) * 37;
    let cap = 1 + u64::from(*b) * 4099;
    let run = |stream: bool| {
        let mut out = Vec::new();
        let work = |_: u64, bytes: &[u8]| Ok(bytes.to_vec());
        let sink = |_: usize, v: Vec<u8>| {
            out.extend_from_slice(&v);
            Ok(())
        };
        let r = if stream {
            let mut r = Short { data, step };
            par_blocks_stream(Path::new("fuzz.bz2"), &mut r, 3, cap, work, sink)
        } else {
            par_blocks(Path::new("fuzz.bz2"), data, 3, work, sink)
        };
        (r.map(|s| s.truncated).map_err(|_| ()), out)
    };
    let (mapped, mapped_out) = run(false);
    let (streamed, streamed_out) = run(true);
    assert_eq!(mapped, streamed, "verdicts differ (step {step}, cap {cap})");
    if mapped.is_ok() {
        assert_eq!(mapped_out, streamed_out, "bytes differ (step {step}, cap {cap})");
    }
});
