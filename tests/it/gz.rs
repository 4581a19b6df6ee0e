//! Integration tests for the parallel multi-member gzip reader (`sword::dump::gz`) on the real fixtures.

use crate::util;
use flate2::bufread::MultiGzDecoder;
use std::io::Read;
use sword::dump::gz::{par_members, par_members_in, Limits, MemberStats};
use sword::Error;

fn limits(window: usize, chunk: usize) -> Limits {
    Limits {
        members: window,
        tasks: window,
        ahead: window,
        chunk,
        threads: rayon::current_num_threads(),
    }
}

fn inflate(data: &[u8], window: usize) -> (Vec<u8>, Option<MemberStats>) {
    let mut out = Vec::new();
    let stats = par_members(
        data,
        &limits(window, 1000),
        |p| Ok(p.bytes.to_vec()),
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
fn a_cut_real_fixture_passes_on_its_prefix_and_says_so() {
    let Some(layout) = util::real_fixture("generated/wikimedia-layout_1000-entities.json.gz")
    else {
        return;
    };
    let layout = std::fs::read(&layout).unwrap();
    let cut = &layout[..layout.len() / 2];
    let mut got = Vec::new();
    let stats = par_members_in(
        std::path::Path::new("cut.json.gz"),
        cut,
        &limits(4, 1 << 16),
        |p| Ok(p.bytes.to_vec()),
        &|v: &Vec<u8>| v.len(),
        |v| {
            got.extend_from_slice(&v);
            Ok(())
        },
        &mut |_| {},
        &|_, _| {},
        &|_, _| {},
    )
    .unwrap()
    .unwrap();
    assert!(stats.truncated);
    let mut prefix = Vec::new();
    assert!(MultiGzDecoder::new(cut).read_to_end(&mut prefix).is_err());
    assert_eq!(got, prefix);
    // A damaged member in the middle is an error naming the file and the member's offset.
    let mut bad = layout.clone();
    let mid = bad.len() / 2;
    bad[mid..mid + 64].fill(0x55);
    let e = par_members_in(
        std::path::Path::new("bad.json.gz"),
        &bad,
        &limits(4, 1 << 16),
        |p| Ok(p.bytes.len()),
        &|_| 0,
        |_| Ok(()),
        &mut |_| {},
        &|_, _| {},
        &|_, _| {},
    )
    .unwrap_err();
    let msg = e.to_string();
    assert!(matches!(e, Error::BadInput { .. }), "{msg}");
    assert!(
        msg.contains("bad.json.gz") && msg.contains("byte offset") && msg.contains("damaged"),
        "{msg}"
    );
}
