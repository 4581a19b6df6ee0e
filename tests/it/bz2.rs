//! bzip2 decoded in parallel (`dump::bz2`): files made by the `bzip2`, `lbzip2` and `pbzip2` tools and
//! hand-made multi-stream layouts give the same artifacts as the plain file and as one decoding thread; a damaged
//! block is an error naming its offset.

use crate::util::{Workdir, EXTRACT_ARTIFACTS};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

fn manifest(dir: &Path) -> serde_json::Value {
    crate::util::manifest(dir, "extract")
}

fn assert_same(wd: &Workdir, a: &str, b: &str) {
    for name in EXTRACT_ARTIFACTS {
        let x = wd.read(&format!("{a}/{name}"));
        let y = wd.read(&format!("{b}/{name}"));
        assert!(x == y, "{name} differs between {a} and {b}");
    }
}

/// `tool args... < input > output`; false when the tool is not installed (CI installs all three).
fn compress_with(tool: &str, args: &[&str], input: &[u8]) -> Option<Vec<u8>> {
    let mut child = match Command::new(tool)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
    {
        Ok(c) => c,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && std::env::var_os("CI").is_none() => {
            eprintln!("{tool} is not installed: skipping its case (.ci/run installs it)");
            return None;
        }
        Err(e) => panic!("{tool}: {e}"),
    };
    let mut stdin = child.stdin.take().unwrap();
    let input = input.to_vec();
    let writer = std::thread::spawn(move || stdin.write_all(&input));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap().unwrap();
    assert!(out.status.success(), "{tool} {args:?} failed");
    Some(out.stdout)
}

/// Streams of `every` bytes of `plain` each (cut anywhere, also inside lines), at alternating levels.
fn streams(plain: &[u8], every: usize) -> Vec<u8> {
    let mut out = Vec::new();
    for (i, piece) in plain.chunks(every).enumerate() {
        let level = if i % 2 == 0 { 1 } else { 9 };
        let mut e = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(level));
        e.write_all(piece).unwrap();
        out.extend(e.finish().unwrap());
    }
    out
}

#[test]
fn bzip2_files_of_every_tool_and_layout_give_the_plain_files_artifacts() {
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
    let plain = wd.read("d.json");
    let extract = |dump: &str, out: &str, extra: &[&str]| {
        let mut args = vec!["-j", "2", "extract", "--dump", dump, "--out", out];
        args.extend_from_slice(extra);
        wd.run_ok(&args);
        manifest(&wd.join(out))
    };
    extract("d.json", "plain", &[]);
    let sequential = wd.write("seq.toml", "parallel_bzip2 = false\n");
    let sequential = sequential.to_string_lossy().into_owned();

    let mut cases: Vec<(String, Vec<u8>)> = Vec::new();
    for (tool, args) in [
        ("bzip2", &["-1", "-c"][..]),
        ("bzip2", &["-9", "-c"]),
        ("lbzip2", &["-1", "-n", "2", "-c"]),
        ("lbzip2", &["-9", "-n", "2", "-c"]),
        ("pbzip2", &["-1", "-b1", "-p2", "-c"]),
    ] {
        if let Some(bytes) = compress_with(tool, args, &plain) {
            cases.push((format!("{tool}{}", args[0]), bytes));
        }
    }
    cases.push(("streams-of-100003-bytes".into(), streams(&plain, 100_003)));
    for (name, bytes) in &cases {
        let file = format!("{name}.json.bz2");
        wd.write(&file, bytes);
        let m = extract(&file, name, &[]);
        assert_eq!(m["extra"]["format"], "bzip2");
        assert_eq!(m["extra"]["parallel_inflate"], true, "{name}");
        assert_same(&wd, "plain", name);
    }
    // One decoding thread (the bzip2 crate's multi-stream decoder) gives the same artifacts.
    let (name, _) = cases.last().unwrap();
    let m = extract(
        &format!("{name}.json.bz2"),
        "seq",
        &["--config", &sequential],
    );
    assert_eq!(m["extra"]["parallel_inflate"], false);
    assert_same(&wd, "plain", "seq");
}

/// A 600-entity dump as one bzip2 stream of many level-1 blocks, and the same with a byte flipped in the
/// middle (inside a block).
fn one_stream_and_a_damaged_copy(wd: &Workdir) -> (Vec<u8>, Vec<u8>) {
    wd.run_ok(&[
        "synth",
        "--entities",
        "600",
        "--seed",
        "5",
        "--out",
        "d.json",
    ]);
    let plain = wd.read("d.json");
    let good = streams(&plain, plain.len()); // one stream, level 1: many blocks
    let mut bad = good.clone();
    let mid = bad.len() / 2;
    bad[mid] ^= 0x24;
    (good, bad)
}

#[test]
fn a_damaged_bzip2_block_names_its_offset() {
    let wd = Workdir::new();
    let (_, bytes) = one_stream_and_a_damaged_copy(&wd);
    wd.write("bad.json.bz2", &bytes);
    let (code, err) = wd.run_err(&["extract", "--dump", "bad.json.bz2", "--out", "o"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad input bad.json.bz2"), "{err}");
    assert!(err.contains("bzip2 block "), "{err}");
    assert!(err.contains("block magic at byte offset "), "{err}");
    assert!(err.contains("download the file again"), "{err}");
    assert!(!wd.join("o/entities.parquet").exists());
}

/// `sword extract --dump -` with a `.bz2` on stdin (single-stream lbzip2-style and one stream per block
/// pbzip2-style, through a pipe) gives byte-identical Parquet to `--dump file.bz2` (the stdin path).
#[test]
fn bzip2_on_stdin_gives_the_files_artifacts() {
    let wd = Workdir::new();
    wd.run_ok(&[
        "synth",
        "--entities",
        "1200",
        "--seed",
        "9",
        "--out",
        "d.json",
    ]);
    let plain = wd.read("d.json");
    let mut one = bzip2::write::BzEncoder::new(Vec::new(), bzip2::Compression::new(1));
    one.write_all(&plain).unwrap();
    let cases = [
        ("single", one.finish().unwrap()),
        ("streams", streams(&plain, 70_001)),
    ];
    for (name, bytes) in cases {
        let file = format!("{name}.json.bz2");
        wd.write(&file, &bytes);
        let from_file = format!("{name}-file");
        wd.run_ok(&["-j", "2", "extract", "--dump", &file, "--out", &from_file]);
        let from_stdin = format!("{name}-stdin");
        let mut child = wd
            .command(&["-j", "2", "extract", "--dump", "-", "--out", &from_stdin])
            .stdin(Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || stdin.write_all(&bytes));
        let status = child.wait().unwrap();
        writer.join().unwrap().unwrap();
        assert!(status.success(), "stdin {name}");
        assert_eq!(manifest(&wd.join(&from_stdin))["extra"]["format"], "bzip2");
        assert_same(&wd, &from_file, &from_stdin);
    }
}

/// Feed `bytes` to `sword extract --dump - --out o` through a pipe; (exit code, stderr).
fn extract_stdin(wd: &Workdir, bytes: Vec<u8>) -> (i32, String) {
    let mut child = wd
        .command(&["-j", "2", "extract", "--dump", "-", "--out", "o"])
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    // The reader may stop early on the damage: a broken pipe on our side is then expected.
    let writer = std::thread::spawn(move || drop(stdin.write_all(&bytes)));
    let out = child.wait_with_output().unwrap();
    writer.join().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The stdin path refuses damage as the file path does: a flipped byte inside a block of a single-stream file
/// (decoded over the bounded window of the stream) and a stream cut short are errors naming stdin and what is
/// wrong, with exit code 2 and no artifact written.
#[test]
fn damaged_and_truncated_bzip2_on_stdin_are_refused() {
    let wd = Workdir::new();
    let (good, flipped) = one_stream_and_a_damaged_copy(&wd);
    let (code, err) = extract_stdin(&wd, flipped);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad input -"), "{err}");
    assert!(err.contains("bzip2 block "), "{err}");
    assert!(err.contains("block magic at byte offset "), "{err}");
    assert!(!wd.join("o/entities.parquet").exists(), "{err}");

    let cut = good[..good.len() * 2 / 3].to_vec();
    let (code, err) = extract_stdin(&wd, cut);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("bad input -"), "{err}");
    assert!(err.contains("bzip2"), "{err}");
    assert!(!wd.join("o/entities.parquet").exists(), "{err}");
    assert!(!wd.join("o/extract.manifest.json").exists(), "{err}");
}
