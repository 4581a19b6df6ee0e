//! One dump line through the entity parser, with and without the skim: never a panic, and the same verdict
//! and entity in both modes (`dump::direct::parse_line`).
#![no_main]

use libfuzzer_sys::fuzz_target;
use sword::dump::entity::Langs;
use sword::dump::direct::parse_line;

fuzz_target!(|data: &[u8]| {
    let langs = Langs {
        langs: ["en", "fr", "de", "es", "it", "pt", "ko", "ja"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let mut buffers = simd_json_buffers();
    let mut scratch = Vec::new();
    let on = format!("{:?}", parse_line(data, &langs, true, &mut scratch, &mut buffers));
    let off = format!("{:?}", parse_line(data, &langs, false, &mut scratch, &mut buffers));
    assert_eq!(on, off, "the skim changes the verdict");
    let mut out = Vec::new();
    let _ = sword::dump::skim::skim(data, &langs, &mut out);
});

fn simd_json_buffers() -> sword::dump::entity::Buffers {
    sword::dump::entity::Buffers::new(1024)
}
