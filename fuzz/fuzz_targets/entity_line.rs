//! One dump line through the entity parser, with and without the skim: never a panic, and the same verdict
//! and entity in both modes (`dump::line::parse_line`), with and without the jump over unlabelled items'
//! statements.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sword::dump::entity::Langs;
use sword::dump::line::{parse_line, Jump};
use sword::core::ids::Pid;

fuzz_target!(|data: &[u8]| {
    let langs = Langs {
        langs: ["en", "fr", "de", "es", "it", "pt", "ko", "ja"]
            .iter()
            .map(|s| s.to_string())
            .collect(),
    };
    let mut buffers = simd_json_buffers();
    let mut scratch = Vec::new();
    let on = format!("{:?}", parse_line(data, &langs, true, None, &mut scratch, &mut buffers));
    let off = format!("{:?}", parse_line(data, &langs, false, None, &mut scratch, &mut buffers));
    assert_eq!(on, off, "the skim changes the verdict");
    // The same with the jump of `extract.unlabelled_statements = "skip"` (the default seed and mul rule).
    let jump = Jump {
        mul_ok: vec![true, true, true, true, true, true, false, false],
        keep: [131, 150, 171, 276, 279, 361, 527, 706].map(Pid).to_vec(),
    };
    let on = format!("{:?}", parse_line(data, &langs, true, Some(&jump), &mut scratch, &mut buffers));
    let off = format!("{:?}", parse_line(data, &langs, false, Some(&jump), &mut scratch, &mut buffers));
    assert_eq!(on, off, "the skim changes the verdict with a jump");
    let mut out = Vec::new();
    let _ = sword::dump::line::skim::skim(data, &langs, &mut out);
});

fn simd_json_buffers() -> sword::dump::entity::Buffers {
    sword::dump::entity::Buffers::new(1024)
}
