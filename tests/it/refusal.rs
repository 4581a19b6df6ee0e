//! Inputs that are not a whole Wikidata dump: each is refused with exit code 2, a message that names
//! the file and says what to do, and no artifact — or, for a dump that ends early and `--allow-truncated`, kept
//! and marked incomplete in every manifest, in `sword.parquet` and in the report. docs/bad-input.md lists the
//! same cases with what the user sees.

use crate::util::{manifest, real_fixture, Workdir};
use std::io::Write;
use std::path::Path;

/// Files a refused run must not leave in its output directory: artifacts, manifests, temporary files.
fn assert_no_artifacts(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let left: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".sword.lock" && n != "input")
        .collect();
    assert!(left.is_empty(), "{} holds {left:?}", dir.display());
}

/// `sword extract --dump <dump> --out out <extra>`: exit code 2, every needle in the message, nothing written.
fn refused(wd: &Workdir, dump: &str, extra: &[&str], needles: &[&str]) -> String {
    let mut args = vec!["extract", "--dump", dump, "--out", "out"];
    args.extend_from_slice(extra);
    let (code, err) = wd.run_err(&args);
    assert_eq!(code, 2, "{dump}: {err}");
    for n in needles {
        assert!(err.contains(n), "{dump}: `{n}` not in: {err}");
    }
    assert_no_artifacts(&wd.join("out"));
    err
}

fn synth(wd: &Workdir, entities: u64, name: &str) -> Vec<u8> {
    wd.run_ok(&[
        "synth",
        "--entities",
        &entities.to_string(),
        "--seed",
        "9",
        "--out",
        name,
    ]);
    wd.read(name)
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

fn bzip2(bytes: &[u8]) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::fast());
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

/// bzip2 at level 9 of `[\n` and then `unit` `copies` times (streamed through the encoder, never held whole).
fn bzip2_best(unit: &[u8], copies: usize) -> Vec<u8> {
    let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::best());
    e.write_all(b"[\n").unwrap();
    for _ in 0..copies {
        e.write_all(unit).unwrap();
    }
    e.finish().unwrap()
}

#[test]
fn html_zip_pdf_binary_and_text_are_named_and_refused() {
    let wd = Workdir::new();
    wd.write(
        "wikidata-20240101-all.json.gz",
        "<html><body>503 Service Unavailable</body></html>\n",
    );
    refused(
        &wd,
        "wikidata-20240101-all.json.gz",
        &[],
        &[
            "wikidata-20240101-all.json.gz",
            "not a Wikidata JSON dump",
            "HTML page",
            "503 Service Unavailable",
            "download the dump again",
        ],
    );
    // The same page gzip-compressed (a server that compresses its error pages).
    wd.write(
        "page.json.gz",
        gzip(b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head></html>\n"),
    );
    refused(
        &wd,
        "page.json.gz",
        &[],
        &["gzip-compressed content looks like an HTML page (\"404 Not Found\")"],
    );
    // A zip archive renamed .json (local file header, stored entry, central directory).
    let mut zip = b"PK\x03\x04\x0a\x00\x00\x00\x00\x00".to_vec();
    zip.extend_from_slice(&[0u8; 16]);
    zip.extend_from_slice(b"\x09\x00\x00\x00dump.json[\n]\nPK\x01\x02");
    wd.write("dump.json", &zip);
    refused(
        &wd,
        "dump.json",
        &[],
        &["dump.json", "zip archive", "unzip it"],
    );
    wd.write("paper.json", b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n1 0 obj\n");
    refused(&wd, "paper.json", &[], &["PDF document"]);
    let elf: Vec<u8> = [&b"\x7fELF\x02\x01\x01\x00"[..], &[0u8; 200]].concat();
    wd.write("a.out.json", elf);
    refused(
        &wd,
        "a.out.json",
        &[],
        &["binary data (first bytes 7f 45 4c 46"],
    );
    wd.write("notes.json", "id,label\nQ1,universe\n");
    refused(
        &wd,
        "notes.json",
        &[],
        &["text that is not JSON (\"id,label\")"],
    );
    // Read from stdin: the message names `-`.
    let mut child = wd
        .command(&["extract", "--dump", "-", "--out", "out"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"<html><body>503 Service Unavailable</body></html>\n")
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad input -: not a Wikidata JSON dump"),
        "{err}"
    );
    assert_no_artifacts(&wd.join("out"));
}

#[test]
fn empty_files_directories_and_dumps_without_entities_are_refused() {
    let wd = Workdir::new();
    wd.write("zero.json.gz", b"");
    refused(
        &wd,
        "zero.json.gz",
        &[],
        &["zero.json.gz", "empty (0 bytes)"],
    );
    // The empty file that the bz2_blocks fuzz target met first: refused before any decoder runs.
    wd.write("zero.json.bz2", b"");
    refused(
        &wd,
        "zero.json.bz2",
        &[],
        &["zero.json.bz2", "empty (0 bytes)"],
    );
    wd.write("nothing.json.gz", gzip(b""));
    refused(
        &wd,
        "nothing.json.gz",
        &[],
        &["gzip data that decompresses to 0 bytes"],
    );
    std::fs::create_dir_all(wd.join("dumps")).unwrap();
    refused(&wd, "dumps", &[], &["dumps", "is a directory"]);
    // A missing file stays an I/O error (exit code 4), naming it.
    let (code, err) = wd.run_err(&["extract", "--dump", "missing.json", "--out", "out"]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("missing.json"), "{err}");

    // `[` and `]` only: an empty dump, refused unless --allow-empty.
    wd.write("empty.json", "[\n]\n");
    refused(
        &wd,
        "empty.json",
        &[],
        &["holds no entity", "--allow-empty"],
    );
    wd.run_ok(&[
        "extract",
        "--dump",
        "empty.json",
        "--out",
        "allowed",
        "--allow-empty",
    ]);
    assert_eq!(manifest(&wd.join("allowed"), "extract")["complete"], true);

    // JSON lines that are not Wikidata entities: none parses as one.
    wd.write("other.json", "[\n{\"name\":\"a\"},\n{\"name\":\"b\"}\n]\n");
    refused(
        &wd,
        "other.json",
        &[],
        &["none of its 4 lines is a Wikidata entity", "no_type"],
    );
    // --allow-empty does not let malformed lines through.
    refused(&wd, "other.json", &["--allow-empty"], &["none of its"]);
}

#[test]
fn more_than_one_percent_of_bad_lines_is_refused_whatever_max_bad_lines_says() {
    let wd = Workdir::new();
    let plain = String::from_utf8(synth(&wd, 400, "d.json")).unwrap();
    let lines: Vec<&str> = plain.split_inclusive('\n').collect();
    let bad = "{\"type\":\"item\",\"id\":\"Q7\",\"labels\":{,\n";
    let with_bad = |n: usize| {
        let mut out = String::new();
        for (i, l) in lines.iter().enumerate() {
            out.push_str(l);
            if i >= 1 && i <= n {
                out.push_str(bad);
            }
        }
        out
    };
    // 2 bad lines of ≈400: under 1%, accepted (and counted).
    wd.write("few.json", with_bad(2));
    wd.run_ok(&["extract", "--dump", "few.json", "--out", "few"]);
    assert_eq!(
        manifest(&wd.join("few"), "extract")["rejects"]["bad_line_json"],
        2
    );
    // 12 of ≈414: about 3%, refused although --max-bad-lines allows a million.
    wd.write("many.json", with_bad(12));
    refused(
        &wd,
        "many.json",
        &["--max-bad-lines", "1000000"],
        &[
            "many.json",
            "12 of its",
            "are malformed, more than the 1%",
            "max_bad_share",
            "line 3, byte offset",
        ],
    );
    // An explicit allowance accepts it.
    wd.run_ok(&[
        "extract",
        "--dump",
        "many.json",
        "--out",
        "many",
        "--max-bad-share",
        "0.05",
    ]);
    let (code, err) = wd.run_err(&[
        "extract",
        "--dump",
        "many.json",
        "--out",
        "x",
        "--max-bad-share",
        "7",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("max_bad_share"), "{err}");
}

/// Cut `bytes` at `at`; the refusal names the byte offset, and `--allow-truncated` keeps what was decoded with
/// `"complete": false`.
fn truncated_case(wd: &Workdir, name: &str, bytes: &[u8], needles: &[&str]) -> serde_json::Value {
    wd.write(name, bytes);
    refused(wd, name, &[], needles);
    refused(wd, name, &[], &["--allow-truncated", "download it again"]);
    let out = format!("{name}-allowed");
    wd.run_ok(&[
        "extract",
        "--dump",
        name,
        "--out",
        &out,
        "--allow-truncated",
    ]);
    let m = manifest(&wd.join(&out), "extract");
    assert_eq!(m["complete"], false, "{name}");
    assert!(
        m["extra"]["incomplete"]
            .as_str()
            .unwrap()
            .contains("ends early"),
        "{name}: {m}"
    );
    assert!(
        m["counts"]["labelled_entities"].as_u64().unwrap() > 0,
        "{name}"
    );
    m
}

#[test]
fn truncated_dumps_in_every_format_name_the_byte_offset() {
    let wd = Workdir::new();
    let plain = synth(&wd, 3000, "d.json");
    let whole = wd.join("whole");
    wd.run_ok(&["extract", "--dump", "d.json", "--out", "whole"]);
    assert_eq!(manifest(&whole, "extract")["complete"], true);

    // Plain JSON cut inside a line: the cut line's offset, and the missing `]`.
    let at = plain.len() / 2;
    let line_start = plain[..at].iter().rposition(|&c| c == b'\n').unwrap() + 1;
    let m = truncated_case(
        &wd,
        "cut.json",
        &plain[..at],
        &[
            "cut.json",
            "the dump ends early",
            &format!(
                "at byte offset {line_start} of the JSON) is cut after {} bytes",
                at - line_start
            ),
            &format!("the closing `]` is missing (the JSON stops at byte offset {at})"),
        ],
    );
    assert_eq!(m["rejects"]["truncated_last_line"], 1);
    // Cut exactly after a line: only the `]` is missing.
    truncated_case(
        &wd,
        "cut-at-line.json",
        &plain[..line_start],
        &[&format!(
            "the closing `]` is missing (the JSON stops at byte offset {line_start})"
        )],
    );

    // Single-member gzip, bzip2 and zstd cut in the middle: the file's size is the offset where it stops.
    for (name, format, bytes) in [
        ("cut.json.gz", "gzip", gzip(&plain)),
        ("cut.json.bz2", "bzip2", bzip2(&plain)),
        (
            "cut.json.zst",
            "zstd",
            zstd::encode_all(&plain[..], 3).unwrap(),
        ),
    ] {
        let n = bytes.len() / 2;
        truncated_case(
            &wd,
            name,
            &bytes[..n],
            &[&format!(
                "the {format} stream ends early: the file stops at byte {n}"
            )],
        );
    }
    // The Wikimedia layout (many members, inflated in parallel), cut inside a member.
    let wm = synth(&wd, 3000, "wm.json.gz");
    let n = wm.len() * 2 / 3;
    let m = truncated_case(
        &wd,
        "cut-wm.json.gz",
        &wm[..n],
        &[&format!(
            "the gzip stream ends early: the file stops at byte {n}"
        )],
    );
    assert_eq!(m["extra"]["parallel_inflate"], true);
    // ...and through stdin.
    let mut child = wd
        .command(&["extract", "--dump", "-", "--out", "stdin"])
        .stdin(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let cut = wm[..n].to_vec();
    let mut stdin = child.stdin.take().unwrap();
    let writer = std::thread::spawn(move || stdin.write_all(&cut));
    let out = child.wait_with_output().unwrap();
    let _ = writer.join();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad input -: the dump ends early: the gzip stream ends early"),
        "{err}"
    );
}

#[test]
fn damaged_gzip_members_and_long_or_invalid_lines() {
    let wd = Workdir::new();
    let plain = synth(&wd, 2000, "d.json");
    // Single-member gzip with a wrong CRC32 in its trailer (read sequentially).
    let mut gz = gzip(&plain);
    let k = gz.len() - 8;
    gz[k] ^= 0xff;
    wd.write("crc.json.gz", &gz);
    refused(
        &wd,
        "crc.json.gz",
        &[],
        &[
            "crc.json.gz",
            "the gzip data is damaged",
            "download the dump again",
        ],
    );
    // A Wikimedia-layout member with a flipped CRC byte (read in parallel): the member's offset is named.
    wd.run_ok(&[
        "synth",
        "--entities",
        "2000",
        "--member-lines",
        "100",
        "--out",
        "wm.json.gz",
    ]);
    let wm = wd.read("wm.json.gz");
    let starts: Vec<usize> = sword::dump::gz::Candidates::new(&wm).collect();
    assert!(starts.len() > 3);
    let (s, e) = (starts[2], starts[3]);
    let mut bad = wm.clone();
    bad[e - 8] ^= 0xff;
    wd.write("crc-wm.json.gz", &bad);
    refused(
        &wd,
        "crc-wm.json.gz",
        &[],
        &[
            &format!("gzip member 3 at byte offset {s}"),
            "CRC32",
            "damaged",
        ],
    );

    // A line of 50 MB (an entity with a 50 MB description) is parsed like any other; a 50 MB line of junk is
    // one malformed line, logged briefly with its position.
    let text = String::from_utf8(plain).unwrap();
    let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
    let big = format!(
        "{{\"type\":\"item\",\"id\":\"Q99999999\",\"labels\":{{\"en\":{{\"language\":\"en\",\"value\":\"big\"}}}},\
         \"descriptions\":{{\"en\":{{\"language\":\"en\",\"value\":\"{}\"}}}},\"claims\":{{}}}},",
        "x".repeat(50 << 20)
    );
    lines.insert(5, big);
    wd.write("big.json", lines.join("\n") + "\n");
    wd.run_ok(&[
        "extract",
        "--dump",
        "big.json",
        "--out",
        "big",
        "--languages",
        "en",
    ]);
    let m = manifest(&wd.join("big"), "extract");
    assert_eq!(m["rejects"].as_object().unwrap().len(), 0, "{m}");
    lines[5] = format!(
        "{{\"type\":\"item\",\"id\":\"Q1\",\"labels\":{}",
        "[".repeat(50 << 20)
    );
    wd.write("junk.json", lines.join("\n") + "\n");
    let out = wd.run_ok(&["extract", "--dump", "junk.json", "--out", "junk"]);
    let m = manifest(&wd.join("junk"), "extract");
    let bad = &m["extra"]["bad_lines"][0];
    assert_eq!(bad["line"], 6, "{m}");
    assert!(bad["message"].as_str().unwrap().len() < 1000);
    assert!(out.stderr.len() < 10_000);

    // Invalid UTF-8 inside a label: that line is malformed (and counted), with or without the skim.
    let mut bytes = text.into_bytes();
    let label = b"\"value\":\"";
    let at = memchr::memmem::find(&bytes, label).unwrap() + label.len();
    bytes.splice(at..at, [0xff, 0xfe]);
    wd.write("utf8.json", &bytes);
    for (out, extra) in [("utf8", None), ("utf8-noskim", Some("--no-skim"))] {
        let mut args = vec!["extract", "--dump", "utf8.json", "--out", out];
        args.extend(extra);
        wd.run_ok(&args);
        let m = manifest(&wd.join(out), "extract");
        assert_eq!(m["extra"]["bad_lines"][0]["line"], 2, "{out}: {m}");
        assert_eq!(
            m["extra"]["bad_lines"].as_array().unwrap().len(),
            1,
            "{out}"
        );
    }
}

#[test]
fn run_refuses_bad_input_and_carries_the_incomplete_flag_to_export() {
    let wd = Workdir::new();
    wd.write("conf/train.toml", "dim = 16\n");
    wd.write("conf/distort.toml", "samples = 40\n");
    wd.write(
        "page.json",
        "<html><body>503 Service Unavailable</body></html>\n",
    );
    let (code, err) = wd.run_err(&[
        "run",
        "--dump",
        "page.json",
        "--out",
        "r0",
        "--config-dir",
        "conf",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("page.json") && err.contains("HTML page"),
        "{err}"
    );
    assert_no_artifacts(&wd.join("r0"));

    // A dump cut short, accepted with allow_truncated: every stage and the export say so.
    let plain = synth(&wd, 3000, "d.json");
    wd.write("cut.json", &plain[..plain.len() * 3 / 4]);
    let (code, err) = wd.run_err(&[
        "run",
        "--dump",
        "cut.json",
        "--out",
        "r1",
        "--config-dir",
        "conf",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--allow-truncated"), "{err}");
    assert_no_artifacts(&wd.join("r1"));
    wd.write("conf/extract.toml", "allow_truncated = true\n");
    wd.run_ok(&[
        "-j",
        "1",
        "run",
        "--dump",
        "cut.json",
        "--out",
        "r1",
        "--config-dir",
        "conf",
    ]);
    let r1 = wd.join("r1");
    for stage in sword::stages::pipeline::stage_names() {
        assert_eq!(manifest(&r1, stage)["complete"], false, "{stage}");
    }
    // Every Parquet file of the run carries the mark, not only sword.parquet: a file copied out of the run
    // directory still says what it is.
    let marked = parquet_files(&r1);
    // extract's nine, distortions.parquet and sword.parquet.
    assert_eq!(
        marked.len(),
        crate::util::EXTRACT_ARTIFACTS.len() + 2,
        "{marked:?}"
    );
    for (name, kv) in &marked {
        assert_eq!(kv.as_deref(), Some("false"), "{name}");
    }
    let report = String::from_utf8(wd.read("r1/report/report.md")).unwrap();
    assert!(report.starts_with("> **Incomplete build.**"), "{report}");
    // The promotion check refuses it (exit code 7).
    let (code, err) = wd.run_err(&["run", "--out", "r1", "--promotion-check", "nowhere"]);
    assert_eq!(code, 7, "{err}");
    assert!(err.contains("incomplete"), "{err}");

    // The whole dump: complete everywhere, and no `sword.complete` key (the bytes of a whole build are unchanged).
    std::fs::remove_file(wd.join("conf/extract.toml")).unwrap();
    wd.run_ok(&[
        "-j",
        "1",
        "run",
        "--dump",
        "d.json",
        "--out",
        "r2",
        "--config-dir",
        "conf",
    ]);
    for stage in sword::stages::pipeline::stage_names() {
        assert_eq!(manifest(&wd.join("r2"), stage)["complete"], true, "{stage}");
    }
    let whole = parquet_files(&wd.join("r2"));
    assert_eq!(
        whole.len(),
        crate::util::EXTRACT_ARTIFACTS.len() + 2,
        "{whole:?}"
    );
    for (name, kv) in &whole {
        assert_eq!(kv, &None, "{name}");
    }
}

/// The Parquet files of a run directory with the value of their `sword.complete` key-value entry, if any.
fn parquet_files(dir: &Path) -> Vec<(String, Option<String>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let path = e.unwrap().path();
        if path.extension().is_some_and(|x| x == "parquet") {
            let file = std::fs::File::open(&path).unwrap();
            let reader = parquet::file::reader::SerializedFileReader::new(file).unwrap();
            let value = parquet::file::reader::FileReader::metadata(&reader)
                .file_metadata()
                .key_value_metadata()
                .into_iter()
                .flatten()
                .find(|k| k.key == "sword.complete")
                .and_then(|k| k.value.clone());
            out.push((
                path.file_name().unwrap().to_string_lossy().into_owned(),
                value,
            ));
        }
    }
    out.sort();
    out
}

#[test]
fn real_fixture_cut_to_300_kb_is_refused_unless_allowed() {
    let Some(gz) = real_fixture("dumps/jsondumpdata_20151109_1000-entities.json.gz") else {
        return;
    };
    let wd = Workdir::new();
    let bytes = std::fs::read(&gz).unwrap();
    wd.write(
        "jsondumpdata_20151109_1000-entities.json.gz",
        &bytes[..300_000],
    );
    refused(
        &wd,
        "jsondumpdata_20151109_1000-entities.json.gz",
        &[],
        &["the gzip stream ends early: the file stops at byte 300000"],
    );
    // The mock with known bugs stays accepted as it is (its quirks are counted, not refused).
    let bugs = real_fixture("dumps/wdtk_mock-dump-with-bugs.json").unwrap();
    let d = bugs.to_string_lossy().into_owned();
    wd.run_ok(&[
        "extract",
        "--dump",
        &d,
        "--out",
        "bugs",
        "--languages",
        "en",
    ]);
    assert_eq!(manifest(&wd.join("bugs"), "extract")["complete"], true);
}

#[test]
fn a_line_longer_than_max_line_mib_is_refused_with_its_offset_in_every_reader() {
    // A file without line structure (one long line) is held whole until its newline, so memory is bounded by
    // `max_line_mib`. Here 5 MiB (one chunk is 4 MiB) against 6 MiB lines; 3 MiB lines are fine.
    let wd = Workdir::new();
    let plain = String::from_utf8(synth(&wd, 300, "d.json")).unwrap();
    let mut lines: Vec<String> = plain.lines().map(str::to_string).collect();
    let entity = |n: usize| {
        format!(
            "{{\"type\":\"item\",\"id\":\"Q99999999\",\"labels\":{{\"en\":{{\"language\":\"en\",\"value\":\"big\"}}}},\
             \"descriptions\":{{\"en\":{{\"language\":\"en\",\"value\":\"{}\"}}}},\"claims\":{{}}}},",
            "x".repeat(n << 20)
        )
    };
    let offset_of_line =
        |lines: &[String], k: usize| -> usize { lines[..k].iter().map(|l| l.len() + 1).sum() };
    lines.insert(4, entity(3));
    wd.write("ok.json", lines.join("\n") + "\n");
    wd.run_ok(&[
        "extract",
        "--dump",
        "ok.json",
        "--out",
        "ok",
        "--max-line-mib",
        "5",
    ]);
    // A 6 MiB line that ends: refused naming line 6 and its byte offset, in the plain (mapped), single-member
    // gzip (one decoding thread) and sharded readers.
    lines.insert(5, entity(6));
    let at = offset_of_line(&lines, 5);
    let text = lines.join("\n") + "\n";
    wd.write("long.json", &text);
    wd.write("long.json.gz", gzip(text.as_bytes()));
    // Wikimedia layout (members inflated in parallel): the long line in a member of its own.
    let mut wm = gzip((lines[..5].join("\n") + "\n").as_bytes());
    wm.extend(gzip((lines[5].clone() + "\n").as_bytes()));
    wm.extend(gzip((lines[6..].join("\n") + "\n").as_bytes()));
    wd.write("long-wm.json.gz", wm);
    // No newline at all after the long line's start (a minified array, a stream of junk): refused as soon as
    // 5 MiB are held, not at the end of the file.
    let nonl = format!("{}\n{}", lines[..5].join("\n"), "x".repeat(40 << 20));
    wd.write("nonl.json", &nonl);
    wd.write("nonl.json.gz", gzip(nonl.as_bytes()));
    let ended: &[&str] = &["longer than 5 MiB"];
    let open: &[&str] = &["no newline yet", "already longer than 5 MiB"];
    for (dump, what) in [
        ("long.json", ended),
        ("long.json.gz", ended),
        ("long-wm.json.gz", ended),
        ("nonl.json", open),
        ("nonl.json.gz", open),
    ] {
        let at = format!("byte offset {at}");
        let mut needles = vec![dump, "line 6", at.as_str(), "--max-line-mib"];
        needles.extend_from_slice(what);
        refused(&wd, dump, &["--max-line-mib", "5"], &needles);
    }
    // The shard that holds the long line says so too.
    let (code, err) = wd.run_err(&[
        "extract",
        "--dump",
        "long.json",
        "--out",
        "sh",
        "--shard",
        "0/1",
        "--max-line-mib",
        "5",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("longer than 5 MiB") && err.contains("of this shard"),
        "{err}"
    );
    // The default (256 MiB) takes the 6 MiB line; a limit below the chunk size is a configuration error.
    wd.run_ok(&["extract", "--dump", "long.json", "--out", "default"]);
    let (code, err) = wd.run_err(&[
        "extract",
        "--dump",
        "long.json",
        "--out",
        "x",
        "--max-line-mib",
        "1",
    ]);
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("max_line_mib") && err.contains("chunk size"),
        "{err}"
    );
}

#[test]
fn a_truncated_dump_is_refused_by_the_shard_that_meets_the_cut_and_marked_when_allowed() {
    let wd = Workdir::new();
    let args = |dump: &str, out: &str, extra: &[&str]| -> Vec<String> {
        let mut a: Vec<String> = ["extract", "--dump", dump, "--out", out]
            .iter()
            .map(|s| s.to_string())
            .collect();
        a.extend(extra.iter().map(|s| s.to_string()));
        a
    };
    let run = |a: &[String]| -> (i32, String) {
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let out = wd.command(&a).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    wd.run_ok(&[
        "synth",
        "--entities",
        "3000",
        "--member-lines",
        "100",
        "--seed",
        "4",
        "--out",
        "wm.json.gz",
    ]);
    let full = wd.read("wm.json.gz");
    wd.write("cut.json.gz", &full[..full.len() * 6 / 10]);
    let plain = synth(&wd, 3000, "d.json");
    wd.write("cut.json", &plain[..plain.len() * 6 / 10]);

    // Wikimedia-layout gzip cut inside a member: the shard holding the cut names it; the others read.
    let mut refused_by = Vec::new();
    for i in 0..4 {
        let spec = format!("{i}/4");
        let (code, err) = run(&args("cut.json.gz", "g", &["--shard", &spec]));
        if code != 0 {
            assert_eq!(code, 2, "shard {spec}: {err}");
            assert!(
                err.contains("ends early") && err.contains(&format!("shard {spec}")),
                "{err}"
            );
            assert!(err.contains("--allow-truncated"), "{err}");
            refused_by.push(i);
        }
    }
    assert_eq!(refused_by.len(), 1, "{refused_by:?}");
    let (code, err) = run(&args("cut.json.gz", "g", &["--join-shards", "4"]));
    assert_ne!(
        code, 0,
        "the join must not pass over the missing part: {err}"
    );
    assert!(!wd.join("g/triples.parquet").exists());

    // Plain JSON cut inside a line: the shards read, the join sees the cut last line and refuses.
    for i in 0..4 {
        let (code, err) = run(&args("cut.json", "p", &["--shard", &format!("{i}/4")]));
        assert_eq!(code, 0, "{err}");
    }
    let (code, err) = run(&args("cut.json", "p", &["--join-shards", "4"]));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("ends early") && err.contains("--allow-truncated"),
        "{err}"
    );
    assert!(!wd.join("p/triples.parquet").exists());

    // With --allow-truncated, shards and join go through and the join is marked incomplete, manifest and files.
    for (dump, out) in [("cut.json.gz", "ga"), ("cut.json", "pa")] {
        for i in 0..4 {
            let (code, err) = run(&args(
                dump,
                out,
                &["--shard", &format!("{i}/4"), "--allow-truncated"],
            ));
            assert_eq!(code, 0, "{dump} {i}: {err}");
        }
        let (code, err) = run(&args(
            dump,
            out,
            &["--join-shards", "4", "--allow-truncated"],
        ));
        assert_eq!(code, 0, "{dump}: {err}");
        let dir = wd.join(out);
        assert_eq!(manifest(&dir, "extract")["complete"], false, "{dump}");
        let files = parquet_files(&dir);
        assert_eq!(
            files.len(),
            crate::util::EXTRACT_ARTIFACTS.len(),
            "{files:?}"
        );
        assert!(
            files.iter().all(|(_, kv)| kv.as_deref() == Some("false")),
            "{dump}: {files:?}"
        );
    }
}

/// A gzip member whose content is `unit` repeated `copies` times, made without compressing (or holding) the
/// whole: `unit` is deflated once as a sync-flushed block (its back-references stay inside the copy), the block
/// is repeated, an empty final block closes the stream, and the trailer's CRC32 is combined from the unit's.
fn repeated_member(unit: &[u8], copies: u64) -> Vec<u8> {
    use flate2::{Compress, Compression, Crc, FlushCompress};
    let deflate = |input: &[u8], flush: FlushCompress| {
        let mut c = Compress::new(Compression::fast(), false);
        let mut out = Vec::with_capacity(input.len() + 1024);
        c.compress_vec(input, &mut out, flush).unwrap();
        assert_eq!(c.total_in(), input.len() as u64, "one call deflates it all");
        out
    };
    let block = deflate(unit, FlushCompress::Sync);
    let last = deflate(&[], FlushCompress::Finish);
    let mut one = Crc::new();
    one.update(unit);
    let mut crc = Crc::new();
    for _ in 0..copies {
        crc.combine(&one);
    }
    let mut m = vec![0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3];
    for _ in 0..copies {
        m.extend_from_slice(&block);
    }
    m.extend_from_slice(&last);
    m.extend_from_slice(&crc.sum().to_le_bytes());
    m.extend_from_slice(&((unit.len() as u64 * copies) as u32).to_le_bytes());
    m
}

#[test]
fn repeated_member_is_what_it_says() {
    use std::io::Read;
    let m = repeated_member(b"ab\n", 5000);
    let mut out = Vec::new();
    flate2::read::GzDecoder::new(&m[..])
        .read_to_end(&mut out)
        .unwrap();
    assert_eq!(out, b"ab\n".repeat(5000));
}

/// Decompression bombs: small files whose content would cost gigabytes if a reader held it. Each is
/// refused with exit code 2 under an address-space limit of 1 GB (`ulimit -v`, which turns an allocation past it
/// into an abort), with `--max-line-mib 16` at `-j 2`. `scripts/gz-bombs.sh` runs larger ones and records peak
/// RSS.
#[test]
fn decompression_bombs_of_every_shape_exit_2_within_a_memory_limit() {
    let wd = Workdir::new();
    let mib = 1 << 20;
    let spaces = vec![b' '; mib];
    let junk = b"x\n".repeat(mib / 2);
    let open = gzip(b"[\n");
    let cat = |parts: &[&[u8]]| parts.concat();
    let long_member = repeated_member(&spaces, 3 << 10);
    let spaces_member = repeated_member(&spaces, 1);
    let junk_member = repeated_member(&junk, 1 << 10);
    let small_junk = repeated_member(&b"x\n".repeat(1 << 15), 1);
    let cases: Vec<(&str, Vec<u8>, &str)> = vec![
        // A line that never ends, in one member of 3 GiB of spaces (14 kB compressed here).
        (
            "long-line.json.gz",
            cat(&[&open, &long_member]),
            "already longer than 16 MiB",
        ),
        // The same line spread over 3000 members of 1 MiB each.
        (
            "long-line-members.json.gz",
            cat(&[&open, &spaces_member.repeat(3000)]),
            "already longer than 16 MiB",
        ),
        // One member of 1 GiB of `x\n`: 512 M malformed lines.
        (
            "junk-lines.json.gz",
            cat(&[&open, &junk_member]),
            "more than 1000 malformed lines",
        ),
        // 20 000 members of 64 KiB of `x\n` each.
        (
            "many-members.json.gz",
            cat(&[&open, &small_junk.repeat(20_000)]),
            "more than 1000 malformed lines",
        ),
        // A single-member file (read as one stream) with the never-ending line.
        (
            "single.json.gz",
            cat(&[&gzip(b"[\n{}\n"), &long_member]),
            "already longer than 16 MiB",
        ),
        // bzip2 at level 9, decoded in parallel: every block is a run-length bomb (≈ 46 MB of spaces from a few
        // dozen bytes), the most a bzip2 block can expand to.
        (
            "long-line.json.bz2",
            bzip2_best(&spaces, 256),
            "already longer than 16 MiB",
        ),
    ];
    for (name, bytes, needle) in cases {
        wd.write(name, &bytes);
        let out = std::process::Command::new("sh")
            .current_dir(wd.path())
            .env("SWORD_QUIET", "1")
            .arg("-c")
            .arg("ulimit -v 1000000 && exec \"$0\" \"$@\"")
            .arg(env!("CARGO_BIN_EXE_sword"))
            .args(["-j", "2", "extract", "--dump", name, "--out", "out"])
            .args(["--max-line-mib", "16"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{name}: {err}");
        assert!(err.contains(needle) && err.contains(name), "{name}: {err}");
        assert_no_artifacts(&wd.join("out"));
        std::fs::remove_file(wd.join(name)).unwrap();
    }
}

/// What the formats allow is accepted: a zstd file that starts with a skippable frame, as every file
/// `pzstd` writes does (and zstd frames with skippable frames between them), reads like the plain dump.
#[test]
fn zstd_with_skippable_frames_reads_like_the_plain_dump() {
    let wd = Workdir::new();
    let plain = synth(&wd, 300, "d.json");
    let half = plain.len() / 2;
    let skippable = |magic: u8, payload: &[u8]| {
        let mut f = vec![magic, 0x2a, 0x4d, 0x18];
        f.extend_from_slice(&(payload.len() as u32).to_le_bytes());
        f.extend_from_slice(payload);
        f
    };
    let file = [
        skippable(0x50, &[0, 0, 0x10, 0]),
        zstd::encode_all(&plain[..half], 3).unwrap(),
        skippable(0x5e, b"any bytes at all"),
        zstd::encode_all(&plain[half..], 3).unwrap(),
    ]
    .concat();
    wd.write("d.json.zst", &file);
    wd.run_ok(&["extract", "--dump", "d.json", "--out", "plain"]);
    wd.run_ok(&["extract", "--dump", "d.json.zst", "--out", "zst"]);
    for a in [
        "entities",
        "triples",
        "statements",
        "properties",
        "transitive",
    ] {
        let name = format!("{a}.parquet");
        assert!(
            wd.read(&format!("plain/{name}")) == wd.read(&format!("zst/{name}")),
            "{name} differs"
        );
    }
    let m = manifest(&wd.join("zst"), "extract");
    assert_eq!(m["extra"]["format"], "zstd", "{m}");
}
