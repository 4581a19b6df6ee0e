//! Integration tests for `extract`: hand-written dumps with hand-written expectations, real Wikidata fixtures in
//! every compression, stdin, thread counts, chunk sizes, truncation and the bad-line limit.

use crate::util::{count, data, real_fixture, Workdir, EXTRACT_ARTIFACTS};
use std::io::{Read, Write};
use std::path::Path;
use sword::core::ids::{EntityId, Pid, Qid};
use sword::core::records::Triple;
use sword::store::tables;

fn manifest(dir: &Path) -> serde_json::Value {
    crate::util::manifest(dir, "extract")
}

fn reject(m: &serde_json::Value, k: &str) -> u64 {
    m["rejects"][k].as_u64().unwrap_or(0)
}

/// Read a hand-written TSV of expected triples (`#` lines are comments).
fn expected(name: &str) -> Vec<String> {
    std::fs::read_to_string(data(name))
        .unwrap()
        .lines()
        .filter(|l| !l.starts_with('#') && !l.is_empty())
        .map(str::to_string)
        .collect()
}

fn as_tsv(triples: &[Triple]) -> Vec<String> {
    triples
        .iter()
        .map(|t| {
            format!(
                "{}\t{}\t{}\t{}\t{}",
                t.subject,
                t.property,
                t.object,
                t.rank.as_str(),
                t.statement_id
            )
        })
        .collect()
}

fn artifacts(dir: &Path) -> Vec<Vec<u8>> {
    EXTRACT_ARTIFACTS
        .iter()
        .map(|a| std::fs::read(dir.join(a)).unwrap())
        .collect()
}

fn assert_same_artifacts(a: &Path, b: &Path, what: &str) {
    for (name, (x, y)) in EXTRACT_ARTIFACTS
        .iter()
        .zip(artifacts(a).iter().zip(artifacts(b).iter()))
    {
        assert!(x == y, "{what}: {name} differs");
    }
}

/// The tiny dump has one malformed line of 11 on purpose (9%, more than the 1% a real dump may have): allowed
/// explicitly.
const TINY_ARGS: [&str; 6] = [
    "--languages",
    "en,fr",
    "--mul-fallback",
    "en",
    "--max-bad-share",
    "0.1",
];

fn run_tiny(wd: &Workdir, dump: &Path, out: &str, extra: &[&str]) -> std::path::PathBuf {
    let dump = dump.to_string_lossy().into_owned();
    let mut args = vec!["extract", "--dump", dump.as_str(), "--out", out];
    args.extend_from_slice(&TINY_ARGS);
    args.extend_from_slice(extra);
    wd.run_ok(&args);
    wd.join(out)
}

#[test]
fn tiny_dump_gives_the_hand_written_triples() {
    let wd = Workdir::new();
    let out = run_tiny(&wd, &data("extract/tiny.json"), "out", &[]);
    let read = |n: &str| tables::read_triples_file(&out.join(n)).unwrap();
    assert_eq!(
        as_tsv(&read("triples.parquet")),
        expected("extract/tiny.expected-triples.tsv")
    );
    assert_eq!(
        as_tsv(&read("statements.parquet")),
        expected("extract/tiny.expected-statements.tsv")
    );
    assert_eq!(
        as_tsv(&read("transitive.parquet")),
        expected("extract/tiny.expected-transitive.tsv")
    );

    let (langs, ents) = tables::read_entities(&out.join("entities.parquet")).unwrap();
    assert_eq!(langs, ["en", "fr"]);
    let ids: Vec<String> = ents.iter().map(|e| e.id.to_string()).collect();
    assert_eq!(ids, ["Q1", "Q2", "Q4", "P10"]);
    let q2 = &ents[1];
    assert_eq!(q2.labels[0].text, "Two");
    assert!(q2.labels[0].from_mul);
    assert_eq!(q2.labels[1].text, "deux");
    assert!(!q2.labels[1].from_mul);
    let q1 = &ents[0];
    assert_eq!(q1.sitelinks, 2);
    assert_eq!(q1.lastrevid, Some(101));
    assert_eq!(q1.modified.as_deref(), Some("2024-03-01T10:00:00Z"));
    assert_eq!(q1.descriptions, [Some("the number".to_string()), None]);
    let q4 = &ents[2];
    assert_eq!(q4.labels[1].text, "quatre é😀");
    assert_eq!(q4.descriptions[1].as_deref(), Some("le \"nombre\""));
    assert_eq!(ents[3].labels[1].text, "lié à");

    let props = tables::read_properties(&out.join("properties.parquet")).unwrap();
    let ids: Vec<Pid> = props.iter().map(|p| p.id).collect();
    assert_eq!(ids, [Pid(10), Pid(11), Pid(12)]);
    assert!(props[0].transitive && props[0].symmetric);
    assert_eq!(props[0].inverse, [Pid(11)]);
    assert_eq!(props[0].datatype, "wikibase-item");
    assert!(props[1].labels[0].is_some() && props[1].labels[1].is_none());
    assert!(!props[1].transitive && !props[2].symmetric);

    let m = manifest(&out);
    for (k, v) in [
        ("labelled_entities", 4),
        ("labelled_items", 3),
        ("labelled_properties", 1),
        ("labelled_only_thanks_to_mul", 1),
        ("entities_item", 4),
        ("entities_property", 3),
        ("entities_other_lexeme", 1),
        ("terms_as_array", 2),
        ("claims_as_array", 1),
        ("claims_missing", 1),
        ("snaks_somevalue", 1),
        ("values_numeric_id_only", 3),
        ("candidate_statements", 6),
        ("statements", 5),
        ("triples", 2),
        ("transitive", 4),
        ("transitive_statements_missed", 1),
        ("lines", 11),
    ] {
        assert_eq!(count(&m, k), v, "count {k}");
    }
    assert_eq!(reject(&m, "bad_line_json"), 1);
    assert_eq!(m["extra"]["bad_lines"][0]["line"], 10);
    assert_eq!(m["extra"]["format"], "plain");
    // No date in the file name: the latest `modified`.
    assert_eq!(m["extra"]["dump_date"], "2024-03-01");
    assert_eq!(
        m["outputs"].as_array().unwrap().len(),
        EXTRACT_ARTIFACTS.len()
    );
    // items.parquet: every item line, labelled or not (Q3 has an empty French label, Q2 no `type`), and not
    // the malformed Q9, the lexeme or the properties.
    let wanted: std::collections::HashSet<sword::core::ids::Qid> =
        (0..20).map(sword::core::ids::Qid).collect();
    let mut items: Vec<u64> =
        sword::store::tables::items::items_among(&out.join("items.parquet"), &wanted)
            .unwrap()
            .into_iter()
            .map(|q| q.0)
            .collect();
    items.sort_unstable();
    assert_eq!(items, [1, 2, 3, 4]);
    // P10 is transitive and not in the seed: named, in either mode (with the skip, its missed statement is
    // not counted).
    assert_eq!(
        m["extra"]["transitive_outside_seed"],
        serde_json::json!(["P10"])
    );
    let skip = run_tiny(
        &wd,
        &data("extract/tiny.json"),
        "skip",
        &["--skip-unlabelled-statements"],
    );
    assert_same_artifacts(&out, &skip, "tiny dump, skipping");
    let ms = manifest(&skip);
    assert_eq!(
        ms["extra"]["transitive_outside_seed"],
        serde_json::json!(["P10"])
    );
    assert!(ms["counts"].get("transitive_statements_missed").is_none());
    assert_eq!(reject(&ms, "bad_line_json"), 1);
}

#[test]
fn too_many_bad_lines_fail_with_exit_code_2() {
    let wd = Workdir::new();
    let dump = data("extract/tiny.json").to_string_lossy().into_owned();
    let mut args = vec![
        "extract",
        "--dump",
        dump.as_str(),
        "--out",
        "out",
        "--max-bad-lines",
        "0",
    ];
    args.extend_from_slice(&TINY_ARGS);
    let (code, err) = wd.run_err(&args);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("line 10"), "{err}");
    assert!(!wd.join("out/triples.parquet").exists());
}

#[test]
fn truncated_dump_with_allow_truncated_keeps_complete_lines_and_counts_the_cut() {
    let wd = Workdir::new();
    let full = std::fs::read(data("extract/tiny.json")).unwrap();
    // Cut inside P10's line (line 6): Q1..Q4 stay complete.
    let text = String::from_utf8(full.clone()).unwrap();
    let cut = text.find("\"id\":\"P10\"").unwrap() + 5;
    let dump = wd.write("cut.json", &full[..cut]);
    let out = run_tiny(&wd, &dump, "out", &["--allow-truncated"]);
    let m = manifest(&out);
    assert_eq!(reject(&m, "truncated_last_line"), 1);
    assert_eq!(reject(&m, "missing_close_bracket"), 1);
    assert_eq!(reject(&m, "bad_line_json"), 0);
    assert_eq!(m["complete"], false);
    // Without P10 nothing has a labelled property: no statements; Q1 Q2 Q4 are still labelled.
    assert_eq!(count(&m, "labelled_entities"), 3);
    assert_eq!(count(&m, "statements"), 0);

    // The same cut inside a gzip stream: the decoder hits the end early; complete lines are kept.
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&full).unwrap();
    let gz = gz.finish().unwrap();
    let dump = wd.write("cut.json.gz", &gz[..gz.len() - 30]);
    let out = run_tiny(&wd, &dump, "outgz", &["--allow-truncated"]);
    let m = manifest(&out);
    assert_eq!(reject(&m, "truncated_stream"), 1);
    assert_eq!(m["complete"], false);
    assert!(count(&m, "entities_item") >= 1);
}

#[test]
fn chunk_size_and_threads_do_not_change_bytes_on_the_tiny_dump() {
    let wd = Workdir::new();
    let a = run_tiny(&wd, &data("extract/tiny.json"), "a", &[]);
    let cfg = wd.write(
        "c.toml",
        "[extract]\nchunk_kib = 1\nlanguages = [\"en\", \"fr\"]\nmul_fallback = [\"en\"]\nmax_bad_share = 0.1\n",
    );
    let dump = data("extract/tiny.json").to_string_lossy().into_owned();
    let c = cfg.to_string_lossy().into_owned();
    wd.run_ok(&[
        "-j", "1", "extract", "--dump", &dump, "--out", "b", "--config", &c,
    ]);
    assert_same_artifacts(&a, &wd.join("b"), "1 KiB chunks, 1 thread");
    wd.run_ok(&[
        "-j", "2", "extract", "--dump", &dump, "--out", "c", "--config", &c,
    ]);
    assert_same_artifacts(&a, &wd.join("c"), "1 KiB chunks, 2 threads");
}

/// Concatenate one gzip member per `every` bytes of `plain` (cuts fall anywhere, also inside lines).
fn gzip_members(plain: &[u8], every: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for piece in plain.chunks(every) {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        e.write_all(piece).unwrap();
        out.extend(e.finish().unwrap());
    }
    out
}

#[test]
fn tiny_dump_as_many_gzip_members_cut_mid_line() {
    let wd = Workdir::new();
    let a = run_tiny(&wd, &data("extract/tiny.json"), "a", &[]);
    let plain = std::fs::read(data("extract/tiny.json")).unwrap();
    for every in [1, 7, 97, 1000] {
        let gz = wd.write(&format!("t{every}.json.gz"), gzip_members(&plain, every));
        let out = run_tiny(&wd, &gz, &format!("o{every}"), &[]);
        assert_same_artifacts(&a, &out, &format!("members of {every} bytes"));
        let m = manifest(&out);
        assert_eq!(
            m["extra"]["gzip_members"],
            plain.len().div_ceil(every) as u64
        );
        assert_eq!(m["extra"]["bad_lines"][0]["line"], 10);
    }
}

fn decompress_gz(path: &Path) -> Vec<u8> {
    let mut v = Vec::new();
    flate2::read::MultiGzDecoder::new(std::fs::File::open(path).unwrap())
        .read_to_end(&mut v)
        .unwrap();
    v
}

#[test]
fn real_1000_entities_in_every_format_give_identical_artifacts() {
    let Some(gz) = real_fixture("dumps/jsondumpdata_20151109_1000-entities.json.gz") else {
        return;
    };
    let bz2 = real_fixture("dumps/jsondumpdata_20151109_1000-entities.json.bz2").unwrap();
    let wm = real_fixture("generated/wikimedia-layout_1000-entities.json.gz").unwrap();
    let wd = Workdir::new();
    let plain_bytes = decompress_gz(&gz);
    let plain = wd.write("jsondumpdata_20151109_1000-entities.json", &plain_bytes);
    let zst = wd.write("d.json.zst", zstd::encode_all(&plain_bytes[..], 3).unwrap());
    let run = |dump: &Path, out: &str, j: &str| {
        let d = dump.to_string_lossy().into_owned();
        wd.run_ok(&["-j", j, "extract", "--dump", &d, "--out", out]);
        wd.join(out)
    };
    let base = run(&gz, "gz", "2");
    let m = manifest(&base);
    // Under the default rule (8 languages, mul fallback for the 6 Latin-script ones): 543 labelled entities
    // (items and properties) and 70 final triples.
    assert_eq!(count(&m, "labelled_entities"), 543);
    assert_eq!(count(&m, "triples"), 70);
    assert_eq!(
        count(&m, "entities_item") + count(&m, "entities_property"),
        1000
    );
    assert_eq!(count(&m, "lines"), 1002);
    assert_eq!(m["extra"]["dump_date"], "2015-11-09");
    assert_eq!(m["extra"]["gzip_members"], 1);
    let (_, ents) = tables::read_entities(&base.join("entities.parquet")).unwrap();
    assert_eq!(ents.len(), 543);
    assert!(ents.iter().any(|e| e.id == EntityId::Item(Qid(1))));
    assert_eq!(
        tables::read_triples_file(&base.join("triples.parquet"))
            .unwrap()
            .len(),
        70
    );

    assert_same_artifacts(&base, &run(&bz2, "bz2", "2"), "bzip2");
    let wm_out = run(&wm, "wm", "2");
    assert_same_artifacts(&base, &wm_out, "Wikimedia-layout gzip");
    assert_eq!(manifest(&wm_out)["extra"]["gzip_members"], 12);
    assert_eq!(manifest(&wm_out)["extra"]["parallel_inflate"], true);
    // Members cut at arbitrary bytes (not at line starts): still the same artifacts.
    let odd = wd.write("odd.json.gz", gzip_members(&plain_bytes, 100_003));
    let odd_out = run(&odd, "odd", "2");
    assert_same_artifacts(&base, &odd_out, "gzip members cut mid-line");
    assert_eq!(manifest(&odd_out)["extra"]["parallel_inflate"], true);
    assert_same_artifacts(&base, &run(&zst, "zst", "2"), "zstd");
    let plain_out = run(&plain, "plain", "2");
    assert_same_artifacts(&base, &plain_out, "plain (memory-mapped)");
    assert_eq!(manifest(&plain_out)["extra"]["format"], "plain");
    assert_same_artifacts(&base, &run(&plain, "plain1", "1"), "plain, 1 thread");
    assert_same_artifacts(&base, &run(&wm, "wm1", "1"), "Wikimedia gzip, 1 thread");

    // stdin, compressed and plain.
    for (src, out) in [(&gz, "stdin_gz"), (&plain, "stdin_plain")] {
        let mut child = wd
            .command(&["extract", "--dump", "-", "--out", out])
            .stdin(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let bytes = std::fs::read(src).unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || stdin.write_all(&bytes));
        let status = child.wait().unwrap();
        writer.join().unwrap().unwrap();
        assert!(status.success(), "stdin {out}");
        assert_same_artifacts(&base, &wd.join(out), out);
    }
    // Tiny chunks force lines to straddle chunks (joined by the merger): same bytes.
    let cfg = wd.write("small.toml", "chunk_kib = 16\n");
    let c = cfg.to_string_lossy().into_owned();
    for (src, out) in [(&plain, "plain16"), (&gz, "gz16")] {
        let d = src.to_string_lossy().into_owned();
        wd.run_ok(&["extract", "--dump", &d, "--out", out, "--config", &c]);
        assert_same_artifacts(&base, &wd.join(out), out);
    }
}

#[test]
fn real_mocks_and_empty_dumps_behave() {
    let Some(bugs) = real_fixture("dumps/wdtk_mock-dump-with-bugs.json") else {
        return;
    };
    let wd = Workdir::new();
    let run_with = |p: &Path, out: &str, langs: &str, extra: &[&str]| {
        let d = p.to_string_lossy().into_owned();
        let mut args = vec!["extract", "--dump", &d, "--out", out, "--languages", langs];
        args.extend_from_slice(extra);
        wd.run_ok(&args);
        manifest(&wd.join(out))
    };
    let run = |p: &Path, out: &str, langs: &str| run_with(p, out, langs, &[]);
    // Bug mock: `"labels":[]` and `"claims":[]` written as arrays are read as empty maps.
    let m = run(&bugs, "bugs", "en");
    assert_eq!(
        count(&m, "entities_item") + count(&m, "entities_property"),
        101
    );
    assert_eq!(count(&m, "terms_as_array"), 1);
    assert_eq!(count(&m, "claims_as_array"), 1);
    assert_eq!(m["rejects"].as_object().unwrap().len(), 0);

    // Lexeme mock (Q1, Q8, P16 with German labels, and a lexeme line).
    let lex = real_fixture("dumps/wdtk_mock-dump-for-testing.json").unwrap();
    let m = run(&lex, "lex", "de");
    assert_eq!(count(&m, "entities_other_lexeme"), 1);
    assert_eq!(count(&m, "labelled_entities"), 3);
    assert_eq!(m["rejects"].as_object().unwrap().len(), 0);

    // Empty dumps in three formats: refused by default (exit 2, see tests/it/refusal.rs); with --allow-empty,
    // empty artifacts and no rejects.
    for f in [
        "jsondumpdata_empty.json",
        "jsondumpdata_empty.json.gz",
        "jsondumpdata_empty.json.bz2",
    ] {
        let p = real_fixture(&format!("dumps/{f}")).unwrap();
        let d = p.to_string_lossy().into_owned();
        let (code, err) = wd.run_err(&["extract", "--dump", &d, "--out", "refused"]);
        assert_eq!(code, 2, "{f}: {err}");
        assert!(err.contains("holds no entity"), "{f}: {err}");
        let m = run_with(&p, f, "en", &["--allow-empty"]);
        assert_eq!(count(&m, "labelled_entities"), 0, "{f}");
        assert_eq!(count(&m, "open_bracket_lines"), 1, "{f}");
        assert_eq!(count(&m, "close_bracket_lines"), 1, "{f}");
        assert_eq!(m["rejects"].as_object().unwrap().len(), 0, "{f}");
        let (_, ents) = tables::read_entities(&wd.join(f).join("entities.parquet")).unwrap();
        assert!(ents.is_empty());
    }

    // A truncated copy of the real 1000-entity dump: refused by default, kept with --allow-truncated.
    let gz = real_fixture("dumps/jsondumpdata_20151109_1000-entities.json.gz").unwrap();
    let plain = decompress_gz(&gz);
    let cut = wd.write("cut.json", &plain[..plain.len() / 2]);
    let (code, err) = wd.run_err(&["extract", "--dump", "cut.json", "--out", "refused"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ends early") && err.contains("byte offset"),
        "{err}"
    );
    let m = run_with(&cut, "cut", "en", &["--allow-truncated"]);
    assert_eq!(m["complete"], false);
    assert_eq!(reject(&m, "truncated_last_line"), 1);
    assert_eq!(reject(&m, "missing_close_bracket"), 1);
    assert!(count(&m, "entities_item") > 100);
}

#[test]
fn library_run_matches_the_binary() {
    let wd = Workdir::new();
    let a = run_tiny(&wd, &data("extract/tiny.json"), "bin", &[]);
    let cfg = sword::stages::extract::Config {
        languages: vec!["en".into(), "fr".into()],
        mul_fallback: vec!["en".into()],
        max_bad_share: 0.1,
        ..Default::default()
    };
    let args = sword::stages::extract::ExtractArgs {
        dump: data("extract/tiny.json"),
        ..Default::default()
    };
    let m = sword::stages::contract::run::<sword::stages::extract::ExtractStage>(
        &wd.join("lib"),
        &cfg,
        &args,
    )
    .unwrap();
    assert_eq!(m.counts["triples"], 2);
    assert_same_artifacts(&a, &wd.join("lib"), "library vs binary");
}

/// `--skip-unlabelled-statements` (`unlabelled_statements = "skip"`): the five artifacts are byte for byte those
/// of a default run — plain and Wikimedia-layout gzip, 1 and 2 threads, with and without the skim, flag or
/// config file, and the real 1000-entity dump —; the manifest has every count of the default run except those
/// made from the statements it did not read, and says so.
#[test]
fn skipping_unlabelled_statements_gives_the_same_artifacts() {
    // Written by hand, not taken from the code: a count that starts to depend on unlabelled items' statements
    // without being listed here makes this test fail.
    const NOT_MADE: [&str; 12] = [
        "item_statements",
        "statements_without_id",
        "statements_bad_property",
        "statements_bad_rank",
        "snaks_value",
        "snaks_somevalue",
        "snaks_novalue",
        "snaks_unknown_datatype",
        "values_numeric_id_only",
        "values_other_entity_type",
        "values_bad_entity",
        "transitive_statements_missed",
    ];
    let wd = Workdir::new();
    wd.run_ok(&[
        "synth",
        "--entities",
        "3000",
        "--seed",
        "9",
        "--out",
        "d.json.gz",
    ]);
    let plain = wd.write("d.json", decompress_gz(&wd.join("d.json.gz")));
    let plain = plain.to_string_lossy().into_owned();
    let skip_toml = wd.write("skip.toml", "unlabelled_statements = \"skip\"\n");
    let skip_toml = skip_toml.to_string_lossy().into_owned();
    let run = |dump: &str, out: &str, extra: &[&str]| {
        let mut args = vec!["extract", "--dump", dump, "--out", out];
        args.extend_from_slice(extra);
        wd.run_ok(&args);
        wd.join(out)
    };
    let check = |base: &Path, out: &Path, what: &str| {
        // Every artifact but distinct.parquet, which the statements of unlabelled subjects add to.
        for name in EXTRACT_ARTIFACTS
            .iter()
            .filter(|a| **a != sword::store::layout::DISTINCT.file)
        {
            assert!(
                std::fs::read(base.join(name)).unwrap() == std::fs::read(out.join(name)).unwrap(),
                "{what}: {name} differs"
            );
        }
        let (mb, m) = (manifest(base), manifest(out));
        assert_eq!(m["extra"]["unlabelled_statements"], "skipped", "{what}");
        assert_eq!(m["config"]["unlabelled_statements"], "skip", "{what}");
        let mut want = mb["counts"].as_object().unwrap().clone();
        for k in NOT_MADE {
            want.remove(k);
        }
        // "Another item has o" sees labelled subjects only (docs/extract.md): the rows may be fewer.
        let mut got = m["counts"].as_object().unwrap().clone();
        for c in [&mut want, &mut got] {
            c.remove("falsity_distinct_rows");
        }
        assert_eq!(got, want, "{what}");
    };
    let base = run("d.json.gz", "count", &[]);
    let mb = manifest(&base);
    // The default reads every statement, and its manifest's config has no new key.
    assert!(count(&mb, "item_statements") > count(&mb, "candidate_statements"));
    assert!(count(&mb, "snaks_value") > 0);
    assert!(mb["config"].get("unlabelled_statements").is_none());
    assert_eq!(mb["extra"]["unlabelled_statements"], "read");
    let flag = "--skip-unlabelled-statements";
    for (dump, out, extra) in [
        ("d.json.gz", "gz2", vec!["-j", "2", flag]),
        ("d.json.gz", "gz1", vec!["-j", "1", flag]),
        ("d.json.gz", "noskim", vec!["-j", "2", flag, "--no-skim"]),
        (plain.as_str(), "plain", vec!["-j", "2", flag]),
        ("d.json.gz", "toml", vec!["--config", skip_toml.as_str()]),
    ] {
        check(&base, &run(dump, out, &extra), out);
    }
    let bad = wd.write("bad.toml", "unlabelled_statements = \"drop\"\n");
    let (code, err) = wd.run_err(&[
        "extract",
        "--dump",
        "d.json.gz",
        "--out",
        "bad",
        "--config",
        &bad.to_string_lossy(),
    ]);
    assert_ne!(code, 0);
    assert!(
        err.contains("unlabelled_statements") || err.contains("drop"),
        "{err}"
    );

    // What is jumped over is not read: an unlabelled item whose non-seed statements are no JSON inside balanced
    // brackets is a malformed line by default, and not with the flag (its P131 statement is still read).
    let odd = concat!(
        r#"{"type":"item","id":"Q2","labels":{"en":{"language":"en","value":"two"}},"claims":{"#,
        r#""P31":[{"mainsnak":nul,"x":[01]}],"P131":[{"mainsnak":{"snaktype":"value","property":"P131","#,
        r#""datavalue":{"value":{"entity-type":"item","numeric-id":3,"id":"Q3"},"type":"wikibase-entityid"},"#,
        r#""datatype":"wikibase-item"},"type":"statement","id":"Q2$x","rank":"normal"}]}}"#,
    );
    let q3 = r#"{"type":"item","id":"Q3","labels":{}}"#;
    let odd_dump = wd.write("odd.json", format!("[\n{odd},\n{q3}\n]\n"));
    let odd_dump = odd_dump.to_string_lossy().into_owned();
    let allow = ["--max-bad-share", "1"];
    let read = run(&odd_dump, "odd_read", &allow);
    assert_eq!(reject(&manifest(&read), "bad_line_json"), 1);
    let mut args = allow.to_vec();
    args.push(flag);
    let skipped = manifest(&run(&odd_dump, "odd_skip", &args));
    assert_eq!(reject(&skipped, "bad_line_json"), 0);
    assert_eq!(count(&skipped, "entities_item"), 2);
    assert_eq!(count(&skipped, "seed_transitive_unlabelled_statements"), 1);

    // Shards: the parts made with the flag join to the same artifacts and counts; parts made without it are
    // refused by a join with it (the config differs).
    for k in ["0/2", "1/2"] {
        run(&plain, "shards", &[flag, "--shard", k]);
        run(&plain, "shards_read", &["--shard", k]);
    }
    check(
        &base,
        &run(&plain, "shards", &[flag, "--join-shards", "2"]),
        "2 shards",
    );
    let sharded = manifest(&wd.join("shards"));
    assert_eq!(sharded["counts"], manifest(&wd.join("plain"))["counts"]);
    let (code, err) = wd.run_err(&[
        "extract",
        "--dump",
        &plain,
        "--out",
        "shards_read",
        flag,
        "--join-shards",
        "2",
    ]);
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("different extract config"), "{err}");

    // The real 1000-entity dump of 2015 (`SWORD_REAL_FIXTURES`).
    if let Some(gz) = real_fixture("dumps/jsondumpdata_20151109_1000-entities.json.gz") {
        let gz = gz.to_string_lossy().into_owned();
        let base = run(&gz, "real", &[]);
        check(&base, &run(&gz, "real_skip", &[flag]), "real dump");
    }
}

/// A dump named by a path that is no regular file (a named pipe, as the full-size nightly streams a generated
/// dump: `mkfifo D; sword synth --out - > D & make nightly DUMP=D`) is read once as a stream, never mapped nor
/// reopened to hash it: the artifacts are the file's, plain and gzip, and the manifest records the pipe's path
/// with no hash. A second extract into the same folder is not judged fresh on a pipe it cannot read again.
#[test]
fn a_named_pipe_is_read_once_as_a_stream_and_gives_the_files_artifacts() {
    let wd = Workdir::new();
    wd.run_ok(&[
        "synth",
        "--entities",
        "1500",
        "--seed",
        "5",
        "--out",
        "d.json",
    ]);
    wd.run_ok(&[
        "synth",
        "--entities",
        "1500",
        "--seed",
        "5",
        "--out",
        "d.json.gz",
    ]);
    for (file, pipe) in [("d.json", "p.json"), ("d.json.gz", "p.json.gz")] {
        let from_file = format!("file-{file}");
        // A gzip file is hashed by its reader, from the bytes it reads; a plain one beside the reading, behind it
        // (with two threads; after it with one): the whole file's hash all the same.
        let want = sword::store::FileRef::of(&wd.join(file)).unwrap();
        for j in ["1", "2"] {
            let out = format!("{from_file}-j{j}");
            wd.run_ok(&["-j", j, "extract", "--dump", file, "--out", &out]);
            let m: serde_json::Value =
                serde_json::from_slice(&wd.read(&format!("{out}/extract.manifest.json"))).unwrap();
            assert_eq!(
                m["inputs"][0]["xxh3"],
                want.xxh3.as_deref().unwrap(),
                "{file} -j {j}"
            );
            assert_eq!(m["inputs"][0]["size"], want.size, "{file} -j {j}");
        }
        wd.run_ok(&["-j", "2", "extract", "--dump", file, "--out", &from_file]);
        let from_pipe = format!("pipe-{file}");
        let fifo = wd.join(pipe);
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(made.success(), "mkfifo");
        let bytes = wd.read(file);
        // The writer opens the pipe (blocking until extract opens it to read), writes every byte once, closes.
        let writer = std::thread::spawn(move || {
            let mut w = std::fs::OpenOptions::new().write(true).open(&fifo).unwrap();
            w.write_all(&bytes).unwrap();
        });
        wd.run_ok(&["-j", "2", "extract", "--dump", pipe, "--out", &from_pipe]);
        writer.join().unwrap();
        assert_same_artifacts(&wd.join(&from_file), &wd.join(&from_pipe), pipe);
        let m: serde_json::Value =
            serde_json::from_slice(&wd.read(&format!("{from_pipe}/extract.manifest.json")))
                .unwrap();
        let input = &m["inputs"][0];
        assert_eq!(input["path"], pipe, "{m}");
        assert!(input["xxh3"].is_null(), "a pipe is not hashed: {m}");
        // Even asked with exactly the inputs the manifest lists, freshness does not open the pipe (which would
        // block here, with no writer) and says no.
        let reads = sword::store::manifest::Reads {
            required: vec![sword::store::manifest::InputName {
                in_run: input["in_run"].as_bool().unwrap_or(false),
                path: pipe.to_string(),
            }],
            optional: Vec::new(),
        };
        assert!(
            !sword::store::manifest::is_fresh(
                &wd.join(&from_pipe),
                "extract",
                &m["config"],
                &reads
            ),
            "a stage that read a pipe is never fresh"
        );
    }
}
