//! Integration tests for `synth`: the CLI, output formats by extension, and the synth → extract property test
//! (the generator's own oracle against what `extract` recovers).

use crate::util::Workdir;
use flate2::bufread::MultiGzDecoder;
use proptest::prelude::*;
use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::Path;
use sword::core::ids::{EntityId, Pid, Qid};
use sword::core::records::Rank;
use sword::dump::gz::{par_members, Limits};
use sword::synth::{self, Config};

fn decode(name: &str, bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    if name.ends_with(".gz") {
        MultiGzDecoder::new(bytes).read_to_end(&mut out).unwrap();
    } else if name.ends_with(".bz2") {
        bzip2::read::BzDecoder::new(bytes)
            .read_to_end(&mut out)
            .unwrap();
    } else if name.ends_with(".zst") {
        out = zstd::decode_all(bytes).unwrap();
    } else {
        out = bytes.to_vec();
    }
    out
}

/// The same seed gives the same bytes at `-j 1` and `-j 3` (8 blocks of 50 lines: rounds of 2 and of 6
/// blocks), plain and multi-member gzip; another seed other bytes.
#[test]
fn cli_is_deterministic_and_seeded() {
    let wd = Workdir::new();
    let args = |jobs: &'static str, out: &'static str, seed: &'static str| {
        [
            "-j",
            jobs,
            "synth",
            "--entities",
            "400",
            "--member-lines",
            "50",
            "--seed",
            seed,
            "--out",
            out,
        ]
    };
    wd.run_ok(&args("1", "a.json", "3"));
    wd.run_ok(&args("3", "b.json", "3"));
    wd.run_ok(&args("1", "c.json", "4"));
    wd.run_ok(&args("1", "a.json.gz", "3"));
    wd.run_ok(&args("3", "b.json.gz", "3"));
    assert!(
        wd.read("a.json.gz") == wd.read("b.json.gz"),
        "gzip: the bytes differ at -j 1 and -j 3"
    );
    let (a, b, c) = (wd.read("a.json"), wd.read("b.json"), wd.read("c.json"));
    assert!(a == b, "same seed, same bytes at -j 1 and -j 3");
    assert!(a != c, "different seed, different bytes");
    // No temporary file is left behind.
    let names: Vec<String> = std::fs::read_dir(wd.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(names.iter().all(|n| !n.contains(".tmp.")), "{names:?}");
}

#[test]
fn every_line_is_json_in_dump_layout() {
    let wd = Workdir::new();
    wd.run_ok(&[
        "synth",
        "--entities",
        "900",
        "--seed",
        "8",
        "--out",
        "d.json",
    ]);
    let bytes = wd.read("d.json");
    let text = std::str::from_utf8(&bytes).expect("UTF-8");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.first(), Some(&"["));
    assert_eq!(lines.last(), Some(&"]"));
    let entities = &lines[1..lines.len() - 1];
    assert_eq!(entities.len(), 900);
    let mut kinds = BTreeMap::new();
    let mut ids = BTreeSet::new();
    for (i, l) in entities.iter().enumerate() {
        let l = if i + 1 < entities.len() {
            l.strip_suffix(',').expect("trailing comma")
        } else {
            assert!(!l.ends_with(','), "no comma after the last line");
            l
        };
        let v: serde_json::Value =
            serde_json::from_str(l).unwrap_or_else(|e| panic!("line {}: {e}", i + 2));
        *kinds
            .entry(v["type"].as_str().unwrap().to_string())
            .or_insert(0) += 1;
        assert!(
            ids.insert(v["id"].as_str().unwrap().to_string()),
            "unique ids"
        );
    }
    assert!(kinds["item"] > 700, "{kinds:?}");
    assert!(kinds["property"] > 10, "{kinds:?}");
}

#[test]
fn formats_by_extension_round_trip() {
    let wd = Workdir::new();
    let names = ["d.json", "d.json.gz", "d.json.bz2", "d.json.zst"];
    for n in names {
        wd.run_ok(&[
            "synth",
            "--entities",
            "700",
            "--seed",
            "5",
            "--member-lines",
            "100",
            "--out",
            n,
        ]);
    }
    let plain = wd.read("d.json");
    let magic: [&[u8]; 4] = [b"[\n", &[0x1f, 0x8b], b"BZh", &[0x28, 0xb5, 0x2f, 0xfd]];
    for (n, m) in names.iter().zip(magic) {
        let bytes = wd.read(n);
        assert!(bytes.starts_with(m), "{n} starts with its magic");
        assert!(decode(n, &bytes) == plain, "{n} decodes to the plain dump");
    }
    // The gzip file has the Wikimedia layout: `[`, one member per 100 lines, `]`.
    let gz = wd.read("d.json.gz");
    let mut out = Vec::new();
    // Chunks of 1 MiB: each of these small members is one chunk.
    let stats = par_members(
        &gz,
        &Limits::new(2, 2, 1 << 20),
        |p| Ok(p.bytes.to_vec()),
        |v| {
            out.push(v);
            Ok(())
        },
    )
    .unwrap()
    .unwrap();
    assert_eq!(stats.members, 2 + 7);
    assert_eq!(out[0], b"[\n");
    assert_eq!(out.last().unwrap(), b"\n]\n");
    assert!(out[1..8].iter().all(|m| m.starts_with(b"{\"type\":")));
    assert!(out.concat() == plain);
}

#[test]
fn bad_extension_and_bad_config_fail_clearly() {
    let wd = Workdir::new();
    let (code, err) = wd.run_err(&["synth", "--entities", "10", "--out", "d.txt"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains(".json.gz"), "{err}");
    wd.write("c.toml", "labelled_share = 3.0\n");
    let (code, err) = wd.run_err(&["synth", "--config", "c.toml", "--out", "d.json"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("labelled_share"), "{err}");
    wd.write("t.toml", "entitites = 3\n");
    let (code, _) = wd.run_err(&["synth", "--config", "t.toml", "--out", "d.json"]);
    assert_eq!(code, 2);
}

#[test]
fn truth_file_lists_the_triples() {
    let wd = Workdir::new();
    wd.run_ok(&[
        "synth",
        "--entities",
        "1500",
        "--out",
        "d.json",
        "--truth",
        "truth.json",
    ]);
    let t: serde_json::Value = serde_json::from_slice(&wd.read("truth.json")).unwrap();
    let triples = t["triples"].as_array().unwrap();
    assert!(!triples.is_empty());
    let text = String::from_utf8(wd.read("d.json")).unwrap();
    for tr in triples.iter().take(50) {
        let s = tr[0].as_str().unwrap();
        assert!(
            text.contains(&format!("\"id\":\"{s}\"")),
            "subject {s} is in the dump"
        );
    }
}

#[test]
fn default_config_is_sized_for_a_quick_pipeline() {
    let cfg = synth::default_config();
    let mut bytes = Vec::new();
    let t = synth::generate(&cfg, 2, &mut bytes).unwrap();
    eprintln!(
        "default synth dump: {} bytes, {} entities, {} labelled, {} final triples, {} statements",
        bytes.len(),
        t.entities,
        t.labelled.len(),
        t.triples.len(),
        t.statements.len()
    );
    assert!(
        t.triples.len() >= 2_000 && t.triples.len() <= 40_000,
        "{}",
        t.triples.len()
    );
    assert!(bytes.len() < 200 << 20);
    // Heavy-tailed object popularity: the most common object is far above the median.
    let mut pop: BTreeMap<Qid, usize> = BTreeMap::new();
    for (_, _, o) in t.triples.keys() {
        *pop.entry(*o).or_default() += 1;
    }
    let mut counts: Vec<usize> = pop.values().copied().collect();
    counts.sort_unstable();
    assert!(counts[counts.len() - 1] >= 20 * counts[counts.len() / 2]);
    // Connected-ish: the largest connected component of the triple graph holds most of its nodes.
    let mut parent: BTreeMap<Qid, Qid> = BTreeMap::new();
    fn find(p: &mut BTreeMap<Qid, Qid>, x: Qid) -> Qid {
        let mut r = x;
        while let Some(&n) = p.get(&r).filter(|n| **n != r) {
            r = n;
        }
        p.insert(x, r);
        r
    }
    for (s, _, o) in t.triples.keys() {
        let (a, b) = (find(&mut parent, *s), find(&mut parent, *o));
        parent.insert(a, b);
    }
    let nodes: Vec<Qid> = parent.keys().copied().collect();
    let mut comp: BTreeMap<Qid, usize> = BTreeMap::new();
    for n in &nodes {
        *comp.entry(find(&mut parent, *n)).or_default() += 1;
    }
    let largest = comp.values().max().copied().unwrap_or(0);
    eprintln!(
        "triple graph: {} nodes, {} components, largest {largest}",
        nodes.len(),
        comp.len()
    );
    assert!(
        largest * 2 > nodes.len(),
        "largest component {largest} of {}",
        nodes.len()
    );
}

/// What `extract` wrote, read back from its Parquet artifacts.
pub(crate) struct Extracted {
    triples: BTreeMap<(Qid, Pid, Qid), Rank>,
    statements: BTreeSet<(Qid, Pid, Qid)>,
    labelled: BTreeSet<EntityId>,
}

pub(crate) fn read_extracted(dir: &Path) -> Extracted {
    let triples = sword::store::tables::read_triples_file(&dir.join("triples.parquet")).unwrap();
    let statements =
        sword::store::tables::read_triples_file(&dir.join("statements.parquet")).unwrap();
    let epath = dir.join("entities.parquet");
    let f = std::fs::File::open(&epath).unwrap();
    let mut labelled = BTreeSet::new();
    for b in sword::store::tables::read_batches(f, &epath).unwrap() {
        let ids = sword::store::tables::string_column(&b, "id", &epath).unwrap();
        for i in 0..b.num_rows() {
            labelled.insert(EntityId::parse(ids.value(i)).unwrap());
        }
    }
    let mut t = BTreeMap::new();
    for tr in &triples {
        assert!(
            t.insert(tr.key(), tr.rank).is_none(),
            "one row per (S, P, O)"
        );
    }
    Extracted {
        triples: t,
        statements: statements.iter().map(|t| t.key()).collect(),
        labelled,
    }
}

fn synth_then_extract(cfg: &Config, ext: &str) -> (synth::Truth, Extracted) {
    let wd = Workdir::new();
    let dump = wd.join(&format!("dump{ext}"));
    let truth = synth::write_file(cfg, 2, &dump).unwrap();
    let out = wd.join("run");
    crate::util::extract(&dump, &out, &sword::stages::extract::Config::default()).unwrap();
    (truth, read_extracted(&out))
}

pub(crate) fn assert_recovered(truth: &synth::Truth, got: &Extracted) {
    assert_eq!(got.labelled, truth.labelled, "labelled entities");
    let missing: Vec<_> = truth
        .triples
        .iter()
        .filter(|(k, r)| got.triples.get(k) != Some(r))
        .take(5)
        .collect();
    let extra: Vec<_> = got
        .triples
        .iter()
        .filter(|(k, _)| !truth.triples.contains_key(k))
        .take(5)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "triples differ: {} expected, {} extracted; missing or wrong rank {missing:?}; extra {extra:?}",
        truth.triples.len(),
        got.triples.len()
    );
    assert_eq!(got.statements, truth.statements, "existence index");
}

#[test]
fn synth_to_extract_recovers_the_default_dump_in_every_format() {
    let cfg = Config {
        entities: 3_000,
        seed: 21,
        member_lines: 400,
        ..Config::default()
    };
    let mut first: Option<Vec<u8>> = None;
    for ext in [".json", ".json.gz", ".json.zst", ".json.bz2"] {
        let wd = Workdir::new();
        let dump = wd.join(&format!("dump{ext}"));
        let truth = synth::write_file(&cfg, 2, &dump).unwrap();
        let out = wd.join("run");
        crate::util::extract(&dump, &out, &sword::stages::extract::Config::default()).unwrap();
        let got = read_extracted(&out);
        assert_recovered(&truth, &got);
        assert!(truth.triples.len() > 200);
        // Same decompressed content, same artifact bytes whatever the compression.
        let t = std::fs::read(out.join("triples.parquet")).unwrap();
        match &first {
            None => first = Some(t),
            Some(f) => assert!(
                f == &t,
                "{ext}: triples.parquet differs from the plain dump's"
            ),
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 6, ..ProptestConfig::default() })]
    /// The generator's promise: `synth` → `extract` recovers exactly the triples the generator says it wrote.
    #[test]
    fn synth_to_extract_recovers_exactly_the_truth(
        seed in any::<u64>(),
        entities in 50u64..1_500,
        labelled_share in 0.05f64..0.9,
        mul_share in 0.0f64..0.6,
        legacy_share in 0.0f64..1.0,
        mean_claims in 1.0f64..15.0,
        gz in any::<bool>(),
    ) {
        let cfg = Config {
            entities,
            seed,
            labelled_share,
            mul_share,
            legacy_share,
            mean_claims,
            member_lines: 200,
            ..Config::default()
        };
        let (truth, got) = synth_then_extract(&cfg, if gz { ".json.gz" } else { ".json" });
        assert_recovered(&truth, &got);
    }
}

#[test]
fn out_and_truth_create_missing_parent_folders() {
    let wd = Workdir::new();
    wd.run_ok(&[
        "synth",
        "--entities",
        "50",
        "--out",
        "a/b/d.json.gz",
        "--truth",
        "c/d/truth.json",
    ]);
    // The same bytes as into an existing folder.
    wd.run_ok(&["synth", "--entities", "50", "--out", "d.json.gz"]);
    assert_eq!(wd.read("a/b/d.json.gz"), wd.read("d.json.gz"));
    let truth: serde_json::Value = serde_json::from_slice(&wd.read("c/d/truth.json")).unwrap();
    assert_eq!(truth["entities"], 50);
    // A name refused by its extension creates nothing.
    let (code, _) = wd.run_err(&["synth", "--entities", "5", "--out", "x/y/d.txt"]);
    assert_eq!(code, 2);
    assert!(!wd.join("x").exists());
}

#[test]
fn out_dash_writes_the_plain_json_dump_to_stdout() {
    let wd = Workdir::new();
    let piped = wd.run_ok(&["synth", "--entities", "300", "--seed", "3", "--out", "-"]);
    wd.run_ok(&[
        "synth",
        "--entities",
        "300",
        "--seed",
        "3",
        "--out",
        "d.json",
    ]);
    assert!(
        piped.stdout == wd.read("d.json"),
        "stdout differs from the .json file"
    );
}
