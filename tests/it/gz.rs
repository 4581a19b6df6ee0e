//! Integration tests for the parallel multi-member gzip reader (`sword::dump::gz`) on the real fixtures.

use crate::util;
use flate2::bufread::MultiGzDecoder;
use std::io::Read;
use sword::dump::gz::{par_members, par_members_in, MemberStats};
use sword::Error;

fn inflate(data: &[u8], window: usize) -> (Vec<u8>, Option<MemberStats>) {
    let mut out = Vec::new();
    let stats = par_members(
        data,
        window,
        |_, r| {
            let mut v = Vec::new();
            r.read_to_end(&mut v).map_err(|e| Error::io("member", e))?;
            Ok(v)
        },
        |v| {
            out.extend_from_slice(&v);
            Ok(())
        },
    )
    .unwrap();
    (out, stats)
}

fn multi_gz(data: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    MultiGzDecoder::new(data).read_to_end(&mut v).unwrap();
    v
}

#[test]
fn wikimedia_layout_fixture_matches_the_single_member_dump() {
    let (Some(layout), Some(single)) = (
        util::real_fixture("generated/wikimedia-layout_1000-entities.json.gz"),
        util::real_fixture("dumps/jsondumpdata_20151109_1000-entities.json.gz"),
    ) else {
        return;
    };
    let layout = std::fs::read(layout).unwrap();
    let single = std::fs::read(single).unwrap();
    let expected = multi_gz(&single);
    assert!(expected.starts_with(b"[\n"));
    for threads in [1, 2] {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        for window in [1, 4] {
            let (out, stats) = pool.install(|| inflate(&layout, window));
            let stats = stats.expect("12 members, not one");
            assert_eq!(stats.members, 12);
            assert_eq!(stats.false_candidates, 0);
            assert_eq!(stats.compressed_bytes, layout.len() as u64);
            assert_eq!(stats.decompressed_bytes, expected.len() as u64);
            assert!(
                out == expected,
                "threads {threads} window {window}: bytes differ"
            );
        }
    }
    // The single-member original is not split: the caller reads it sequentially.
    let (_, stats) = inflate(&single, 4);
    assert_eq!(stats, None);
}

#[test]
fn truncated_real_fixture_names_the_offset() {
    let Some(layout) = util::real_fixture("generated/wikimedia-layout_1000-entities.json.gz")
    else {
        return;
    };
    let layout = std::fs::read(&layout).unwrap();
    let cut = &layout[..layout.len() / 2];
    let e = par_members_in(
        std::path::Path::new("cut.json.gz"),
        cut,
        4,
        |_, r| {
            std::io::copy(r, &mut std::io::sink()).map_err(|e| Error::io("m", e))?;
            Ok(())
        },
        |_| Ok(()),
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::BadInput { .. }), "{msg}");
    assert!(
        msg.contains("cut.json.gz") && msg.contains("byte offset") && msg.contains("truncated"),
        "{msg}"
    );
}
