//! The first bytes of a file through format sniffing and the "is this a dump" check (`dump::start`): never a
//! panic, whatever the bytes (HTML, archives, truncated UTF-8, ...).
#![no_main]

use libfuzzer_sys::fuzz_target;
use std::path::Path;
use sword::dump::{start, Format};

fuzz_target!(|data: &[u8]| {
    let f = Format::sniff(data);
    let _ = start::check_start(Path::new("fuzz.json"), f, data);
    if !data.is_empty() {
        let _ = start::looks_like(data);
    }
});
