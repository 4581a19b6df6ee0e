//! Bytes as a multi-member gzip file through the parallel member reader (`dump::gz::par_members`), with small
//! chunks and window: never a panic or a hang; when it accepts the data, it hands on exactly what a sequential
//! multi-member decoder reads.
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::io::Read;
use sword::dump::gz::{par_members, Limits};

fuzz_target!(|data: &[u8]| {
    let limits = Limits {
        members: 3,
        tasks: 2,
        ahead: 2,
        chunk: 64,
    };
    let mut out = Vec::new();
    let r = par_members(data, &limits, |p| Ok(p.bytes.to_vec()), |v| {
        out.extend_from_slice(&v);
        Ok(())
    });
    if let Ok(Some(stats)) = r {
        let mut seq = Vec::new();
        let whole = flate2::bufread::MultiGzDecoder::new(data).read_to_end(&mut seq);
        if !stats.truncated {
            assert!(whole.is_ok(), "accepted what a sequential decoder refuses");
            assert_eq!(out, seq, "parallel and sequential inflate differ");
        }
    }
});
