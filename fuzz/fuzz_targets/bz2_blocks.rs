//! Bytes as a (multi-stream) bzip2 file through the parallel block decoder (`dump::bz2::par_blocks`), with a
//! small window: never a panic or a hang; when it accepts the data whole, it hands on exactly what the `bzip2`
//! crate's sequential multi-stream decoder reads, and a cut file hands on a prefix of it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Read;
use std::path::Path;
use sword::dump::bz2::par_blocks;

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::new();
    let r = par_blocks(
        Path::new("fuzz.bz2"),
        data,
        3,
        |_, bytes| Ok(bytes.to_vec()),
        |_, v: Vec<u8>| {
            out.extend_from_slice(&v);
            Ok(())
        },
    );
    if let Ok(stats) = r {
        // No bytes, no stream: the parallel decoder hands on nothing, the crate's decoder calls it an error.
        // Both lose nothing, and `sword extract` refuses an empty dump before either runs (found by this
        // target's first recorded run, 2026-12-02).
        if data.is_empty() {
            assert!(out.is_empty(), "bytes out of an empty file");
            return;
        }
        let mut seq = Vec::new();
        let whole = bzip2::read::MultiBzDecoder::new(data).read_to_end(&mut seq);
        if stats.truncated {
            assert!(seq.starts_with(&out), "a cut file hands on more than the sequential decoder reads");
        } else {
            assert!(whole.is_ok(), "accepted what a sequential decoder refuses");
            assert_eq!(out, seq, "parallel and sequential decode differ");
        }
    }
});
