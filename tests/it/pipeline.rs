//! Integration tests for the nightly batch: `sword run`, crash safety, the Makefile, fetch-dump.sh.

use crate::util::{
    pipeline_nightly, small_configs, small_dump, small_run_args, Workdir, EXTRACT_ARTIFACTS,
    FINAL_ARTIFACTS,
};
use std::path::Path;
use std::process::Command;

fn script(name: &str) -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts")
        .join(name)
}

/// SHA-1 of a byte string, computed with the system `sha1sum` (an independent implementation).
fn sha1_hex(wd: &Workdir, name: &str) -> String {
    let out = Command::new("sha1sum").arg(wd.join(name)).output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .next()
        .unwrap()
        .to_string()
}

#[test]
fn fetch_dump_verify_accepts_good_and_rejects_bad_checksums() {
    let wd = Workdir::new();
    wd.write("wikidata-20240911-all.json.gz", b"not really a dump\n");
    let good = sha1_hex(&wd, "wikidata-20240911-all.json.gz");
    wd.write(
        "sums.txt",
        format!("0000000000000000000000000000000000000000  other.json.gz\n{good}  wikidata-20240911-all.json.gz\n"),
    );
    let ok = Command::new("bash")
        .arg(script("fetch-dump.sh"))
        .args(["--verify"])
        .arg(wd.join("wikidata-20240911-all.json.gz"))
        .arg(wd.join("sums.txt"))
        .output()
        .unwrap();
    assert!(
        ok.status.success(),
        "{}",
        String::from_utf8_lossy(&ok.stderr)
    );

    // One flipped byte in the file: mismatch, exit 3.
    wd.write("wikidata-20240911-all.json.gz", b"not really a dumq\n");
    let bad = Command::new("bash")
        .arg(script("fetch-dump.sh"))
        .args(["--verify"])
        .arg(wd.join("wikidata-20240911-all.json.gz"))
        .arg(wd.join("sums.txt"))
        .output()
        .unwrap();
    assert_eq!(bad.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("MISMATCH"));

    // Not listed at all: exit 3 too.
    wd.write("sums.txt", format!("{good}  something-else.json.gz\n"));
    let missing = Command::new("bash")
        .arg(script("fetch-dump.sh"))
        .args(["--verify"])
        .arg(wd.join("wikidata-20240911-all.json.gz"))
        .arg(wd.join("sums.txt"))
        .output()
        .unwrap();
    assert_eq!(missing.status.code(), Some(3));
}

#[test]
fn fetch_dump_resumes_and_only_renames_verified_files() {
    if Command::new("curl").arg("--version").output().is_err() {
        eprintln!("curl missing: skipping");
        return;
    }
    let wd = Workdir::new();
    // A local "mirror" served through file:// so no network is involved.
    let payload: Vec<u8> = (0..200_000u32)
        .flat_map(|i| (i.wrapping_mul(2654435761)).to_le_bytes())
        .collect();
    wd.write("srv/20240911/wikidata-20240911-all.json.gz", &payload);
    let sha = sha1_hex(&wd, "srv/20240911/wikidata-20240911-all.json.gz");
    wd.write(
        "srv/20240911/wikidata-20240911-sha1sums.txt",
        format!("{sha}  wikidata-20240911-all.json.gz\n"),
    );
    // A partial earlier download to resume from.
    wd.write(
        "dest/wikidata-20240911-all.json.gz.part",
        &payload[..300_000],
    );
    let base = format!("file://{}", wd.join("srv").display());
    let run = |dest: &str| {
        Command::new("bash")
            .arg(script("fetch-dump.sh"))
            .args(["--base", &base, "--date", "20240911", "--dest"])
            .arg(wd.join(dest))
            .output()
            .unwrap()
    };
    let out = run("dest");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(wd.read("dest/wikidata-20240911-all.json.gz"), payload);
    assert!(!wd.join("dest/wikidata-20240911-all.json.gz.part").exists());

    // A corrupt partial download (wrong first bytes) resumes into a file that fails verification: it stays
    // `.part`, the final name never appears, exit 3.
    let mut wrong = payload[..300_000].to_vec();
    wrong[10] ^= 0xff;
    wd.write("dest2/wikidata-20240911-all.json.gz.part", &wrong);
    let out = run("dest2");
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!wd.join("dest2/wikidata-20240911-all.json.gz").exists());
}

fn assert_same_artifacts(wd: &Workdir, a: &str, b: &str) {
    for name in FINAL_ARTIFACTS {
        let x = wd.read(&format!("{a}/{name}"));
        let y = wd.read(&format!("{b}/{name}"));
        assert!(x == y, "{name} differs between {a} and {b}");
    }
}

#[test]
fn run_survives_crashes_at_several_points_with_identical_artifacts() {
    let wd = Workdir::new();
    let dump = small_dump(&wd);
    small_configs(&wd, 60);
    wd.run_ok(&small_run_args("1", &dump, "ref"));
    for name in FINAL_ARTIFACTS {
        assert!(wd.join(&format!("ref/{name}")).exists(), "{name} missing");
    }
    let points = [
        "before-rename:triples.parquet",
        "after-stage:extract",
        "before-rename:walks.bin",
        "before-rename:embeddings.npy",
        "after-stage:train",
        "before-rename:distortions.parquet",
        "before-rename:sword.parquet",
    ];
    // The crashed run and its rerun use other thread counts than the reference: the bytes may not depend on
    // them either.
    let jobs = ["2", "4", "8"];
    for (i, point) in points.iter().enumerate() {
        let out = format!("crash{i}");
        let status = wd
            .command(&small_run_args(jobs[i % 3], &dump, &out))
            .env("SWORD_CRASH_AT", point)
            .status()
            .unwrap();
        assert!(!status.success(), "crash point {point} was never reached");
        // The crashed run left no final artifact that its manifest does not vouch for: a rerun completes...
        wd.run_ok(&small_run_args(jobs[(i + 1) % 3], &dump, &out));
        // ...and gives exactly the uninterrupted bytes, with no temporary file left behind.
        assert_same_artifacts(&wd, "ref", &out);
        let leftovers: Vec<_> = std::fs::read_dir(wd.join(&out))
            .unwrap()
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains(".tmp."))
            .collect();
        assert!(
            leftovers.is_empty(),
            "{point}: temporary files left: {leftovers:?}"
        );
    }
}

#[test]
fn run_survives_sigkill_at_random_moments() {
    let wd = Workdir::new();
    let dump = small_dump(&wd);
    small_configs(&wd, 60);
    wd.run_ok(&small_run_args("1", &dump, "ref"));
    // Kill -9 after a few delays spread over the run; whatever stage it hits, a rerun must converge — at
    // other thread counts than the reference's, as the bytes do not depend on them.
    for (i, ms) in [150u64, 400, 900, 1600].iter().enumerate() {
        let out = format!("kill{i}");
        let (killed, rerun) = [("2", "4"), ("4", "8"), ("8", "2"), ("2", "1")][i];
        let mut child = wd
            .command(&small_run_args(killed, &dump, &out))
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_millis(*ms));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        wd.run_ok(&small_run_args(rerun, &dump, &out));
        assert_same_artifacts(&wd, "ref", &out);
    }
}

#[test]
fn second_run_on_a_locked_directory_fails_with_exit_code_6() {
    let wd = Workdir::new();
    let _held = sword::store::RunDir::open(&wd.join("out")).unwrap();
    wd.write("nothing.json", "");
    let (code, err) = wd.run_err(&["run", "--dump", "nothing.json", "--out", "out"]);
    assert_eq!(code, 6, "{err}");
    assert!(err.contains("locked"), "{err}");
}

#[test]
fn unwritable_output_is_an_io_error_and_leaves_nothing() {
    let wd = Workdir::new();
    let dump = small_dump(&wd);
    small_configs(&wd, 60);
    wd.write("blocker", b"a file where a directory should be");
    let (code, err) = wd.run_err(&["run", "--dump", &dump, "--out", "blocker/run"]);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("blocker"), "{err}");
}

#[test]
fn rerun_skips_fresh_stages_and_reruns_after_input_change() {
    let wd = Workdir::new();
    let dump = small_dump(&wd);
    small_configs(&wd, 60);
    wd.run_ok(&small_run_args("1", &dump, "r"));
    let m1 = wd.read("r/walks.manifest.json");
    wd.run_ok(&small_run_args("2", &dump, "r"));
    assert_eq!(
        m1,
        wd.read("r/walks.manifest.json"),
        "fresh walks stage reran"
    );
    // A corrupted artifact makes its stage and everything after it run again, restoring the bytes.
    let good = wd.read("r/walks.bin");
    let mut bad = good.clone();
    let n = bad.len();
    bad[n - 1] ^= 1;
    wd.write("r/walks.bin", &bad);
    wd.run_ok(&small_run_args("2", &dump, "r"));
    assert_eq!(wd.read("r/walks.bin"), good);
}

#[test]
fn makefile_smoke_is_incremental_locked_and_returns_stage_exit_codes() {
    let wd = Workdir::new();
    let out = pipeline_nightly(&wd, &["smoke", "SMOKE_ENTITIES=1500"]);
    let log = |o: &std::process::Output| {
        format!(
            "{}\n{}",
            String::from_utf8_lossy(&o.stdout),
            String::from_utf8_lossy(&o.stderr)
        )
    };
    assert!(out.status.success(), "{}", log(&out));
    assert!(wd.join("out/smoke/sword.parquet").exists());
    assert!(wd.join("out/smoke/logs/summary.txt").exists());
    assert_eq!(
        std::fs::read_link(wd.join("out/latest")).unwrap(),
        Path::new("smoke")
    );

    // Nothing changed: no stage runs again.
    let again = pipeline_nightly(&wd, &["smoke", "SMOKE_ENTITIES=1500"]);
    assert!(again.status.success(), "{}", log(&again));
    assert!(!log(&again).contains(" start"), "{}", log(&again));

    // Another seed: the stages that take it (walks, train, distort) and export after them run again; extract
    // and graph, whose flags and inputs did not change, do not.
    let seeded = pipeline_nightly(&wd, &["smoke", "SMOKE_ENTITIES=1500", "SEED=7"]);
    assert!(seeded.status.success(), "{}", log(&seeded));
    for stage in ["walks", "train", "distort", "export"] {
        assert!(
            log(&seeded).contains(&format!("] {stage} start")),
            "{stage}: {}",
            log(&seeded)
        );
    }
    for stage in ["extract", "graph"] {
        assert!(
            !log(&seeded).contains(&format!("] {stage} start")),
            "{stage}: {}",
            log(&seeded)
        );
    }
    assert!(wd
        .read("out/smoke/logs/args/walks")
        .ends_with(b"--seed 7\n"));

    // Another run holds the lock: exit 6 at once, with a message.
    {
        let lock = std::fs::File::open(wd.join("out/.nightly.lock")).unwrap();
        lock.try_lock().unwrap();
        let locked = pipeline_nightly(&wd, &["smoke", "SMOKE_ENTITIES=1500"]);
        assert_eq!(locked.status.code(), Some(6), "{}", log(&locked));
        assert!(
            log(&locked).contains("another run holds"),
            "{}",
            log(&locked)
        );
    }

    // A dump with more malformed lines than extract.toml allows: the nightly returns extract's code 2.
    let mut bad = String::from("[\n");
    for i in 0..1001 {
        bad.push_str(&format!(
            "{{\"type\":\"item\",\"id\":\"Q{}\",\"labels\":{{,\n",
            i + 1
        ));
    }
    bad.push_str("]\n");
    let dump = wd.write("dumps/wikidata-20240102-all.json", bad);
    let failed = pipeline_nightly(&wd, &["nightly", &format!("DUMP={}", dump.display())]);
    assert_eq!(failed.status.code(), Some(2), "{}", log(&failed));
    assert!(wd.join("out/20240102/logs/extract.log").exists());
    assert!(!wd.join("out/20240102/triples.parquet").exists());
}

// ---- `sword extract --shard i/n` and `--join-shards n` (helper "shard") -----------------------------------

/// Run `n` shards as separate processes into `OUT-sharded`, join them, and assert that the five artifacts are
/// byte-identical to one unsharded run into `OUT-full` (and that the manifests agree on counts and bad lines).
fn assert_shards_match_unsharded(wd: &Workdir, dump: &Path, label: &str, n: u32) {
    let d = dump.to_str().unwrap();
    let full = format!("{label}-full");
    let sharded = format!("{label}-sharded-{n}");
    if !wd.join(&full).join("extract.manifest.json").exists() {
        wd.run_ok(&["extract", "--dump", d, "--out", &full]);
    }
    // The shards run as concurrent local processes writing into the same parts directory.
    let children: Vec<_> = (0..n)
        .map(|k| {
            let spec = format!("{k}/{n}");
            wd.command(&["extract", "--dump", d, "--out", &sharded, "--shard", &spec])
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for (k, c) in children.into_iter().enumerate() {
        let o = c.wait_with_output().unwrap();
        assert!(
            o.status.success(),
            "shard {k}/{n}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
        assert!(wd
            .join(&sharded)
            .join(format!("parts/extract-part-{k}-of-{n}.manifest.json"))
            .exists());
    }
    assert!(!wd.join(&sharded).join("triples.parquet").exists());
    wd.run_ok(&[
        "extract",
        "--dump",
        d,
        "--out",
        &sharded,
        "--join-shards",
        &n.to_string(),
    ]);
    for a in EXTRACT_ARTIFACTS {
        let x = wd.read(&format!("{full}/{a}"));
        let y = wd.read(&format!("{sharded}/{a}"));
        assert!(
            x == y,
            "{label}, {n} shards: {a} differs from the unsharded run"
        );
    }
    let m = |dir: &str| -> serde_json::Value {
        serde_json::from_slice(&wd.read(&format!("{dir}/extract.manifest.json"))).unwrap()
    };
    let (a, b) = (m(&full), m(&sharded));
    assert_eq!(a["counts"], b["counts"], "{label}, {n} shards: counts");
    assert_eq!(a["rejects"], b["rejects"], "{label}, {n} shards: rejects");
    assert_eq!(
        a["extra"]["bad_lines"], b["extra"]["bad_lines"],
        "{label}, {n} shards: bad lines (absolute line numbers and offsets)"
    );
    assert!(a["counts"]["triples"].as_u64().unwrap() > 0 || label.contains("tiny"));
    // The parts are listed as inputs of the joined manifest.
    assert_eq!(b["inputs"].as_array().unwrap().len(), 1 + 2 * n as usize);
    // Both record the dump's own hash: the unsharded run's thread hashing behind its reader, the join the hash it
    // checked the parts with.
    let want = sword::store::FileRef::of(dump).unwrap().xxh3.unwrap();
    assert_eq!(a["inputs"][0]["xxh3"], want.as_str(), "{label}: unsharded");
    assert_eq!(
        b["inputs"][0]["xxh3"],
        want.as_str(),
        "{label}, {n} shards: joined"
    );
}

#[test]
fn shards_plain_json_match_unsharded_run_byte_for_byte() {
    let wd = Workdir::new();
    wd.run_ok(&["synth", "--entities", "3000", "--out", "d.json"]);
    // A few malformed lines (so bad-line positions must become absolute in the join) and a long line.
    let text = String::from_utf8(wd.read("d.json")).unwrap();
    let mut out = String::new();
    for (i, line) in text.split_inclusive('\n').enumerate() {
        out.push_str(line);
        if i % 701 == 350 {
            out.push_str("{\"type\":\"item\",\"id\":\"Q1\",\"labels\":{,\n");
        }
    }
    let dump = wd.write("d.json", out);
    for n in [1, 4, 7] {
        assert_shards_match_unsharded(&wd, &dump, "plain", n);
    }
    let m: serde_json::Value =
        serde_json::from_slice(&wd.read("plain-sharded-7/extract.manifest.json")).unwrap();
    let bad = m["extra"]["bad_lines"].as_array().unwrap();
    assert_eq!(bad.len(), 4, "{bad:?}");
    // Independent oracle: each reported offset / line number points at an inserted line.
    let bytes = wd.read("d.json");
    for b in bad {
        let off = b["offset"].as_u64().unwrap() as usize;
        assert!(bytes[off..].starts_with(b"{\"type\":\"item\",\"id\":\"Q1\",\"labels\":{,\n"));
        let line = b["line"].as_u64().unwrap() as usize;
        assert_eq!(
            bytes[..off].iter().filter(|&&c| c == b'\n').count() + 1,
            line
        );
    }
}

#[test]
fn shards_multi_member_gzip_match_unsharded_run_byte_for_byte() {
    let wd = Workdir::new();
    wd.run_ok(&[
        "synth",
        "--entities",
        "3000",
        "--member-lines",
        "100",
        "--out",
        "d.json.gz",
    ]);
    let dump = wd.join("d.json.gz");
    assert_shards_match_unsharded(&wd, &dump, "gz", 4);
    // More shards than members: some shards are empty.
    assert_shards_match_unsharded(&wd, &dump, "gz", 45);
    let p: serde_json::Value =
        serde_json::from_slice(&wd.read("gz-sharded-45/parts/extract-part-1-of-45.manifest.json"))
            .unwrap();
    assert!(p["members"].as_u64().is_some());
}

#[test]
fn shards_real_fixture_gzip_and_plain_match_unsharded_run() {
    let Some(gz) = crate::util::real_fixture("generated/wikimedia-layout_1000-entities.json.gz")
    else {
        return;
    };
    let wd = Workdir::new();
    // 12 members: 4 shards, and 20 shards (empty ones included).
    assert_shards_match_unsharded(&wd, &gz, "real-gz", 4);
    assert_shards_match_unsharded(&wd, &gz, "real-gz", 20);
    // The same dump decompressed (plain JSON).
    let mut plain = Vec::new();
    std::io::Read::read_to_end(
        &mut flate2::read::MultiGzDecoder::new(std::fs::File::open(&gz).unwrap()),
        &mut plain,
    )
    .unwrap();
    let dump = wd.write("jsondumpdata_20151109_1000-entities.json", plain);
    assert_shards_match_unsharded(&wd, &dump, "real-plain", 4);
    assert_shards_match_unsharded(&wd, &dump, "real-plain", 13);
}

#[test]
fn shards_refuse_unsplittable_dumps_and_join_names_missing_or_bad_parts() {
    let wd = Workdir::new();
    let shard = |dump: &'static str, spec: &'static str| {
        ["extract", "--dump", dump, "--out", "o", "--shard", spec]
    };
    let join = |dump: &'static str| {
        [
            "extract",
            "--dump",
            dump,
            "--out",
            "o",
            "--join-shards",
            "2",
        ]
    };
    wd.run_ok(&["synth", "--entities", "300", "--out", "d.json.bz2"]);
    let (code, err) = wd.run_err(&shard("d.json.bz2", "0/2"));
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("cannot be split") && err.contains("without --shard"),
        "{err}"
    );

    // Single-member gzip: cannot be split either.
    wd.run_ok(&["synth", "--entities", "300", "--out", "d.json"]);
    let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut e, &wd.read("d.json")).unwrap();
    wd.write("single.json.gz", e.finish().unwrap());
    let (code, err) = wd.run_err(&shard("single.json.gz", "1/2"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("single-member gzip"), "{err}");

    // Bad specs.
    let (code, _) = wd.run_err(&shard("d.json", "2/2"));
    assert_eq!(code, 2);

    // A missing part: a clear error naming it, no artifacts written.
    wd.run_ok(&shard("d.json", "0/2"));
    let (code, err) = wd.run_err(&join("d.json"));
    assert_eq!(code, 3, "{err}");
    assert!(
        err.contains("extract-part-1-of-2") && err.contains("missing"),
        "{err}"
    );
    assert!(!wd.join("o/triples.parquet").exists());

    // A part made with another config is refused.
    wd.run_ok(&[
        "extract",
        "--dump",
        "d.json",
        "--out",
        "o",
        "--shard",
        "1/2",
        "--languages",
        "en",
    ]);
    let (code, err) = wd.run_err(&join("d.json"));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("different extract config"), "{err}");

    // A corrupt part (one byte changed) is refused.
    wd.run_ok(&shard("d.json", "1/2"));
    let p = "o/parts/extract-part-1-of-2.json.zst";
    let mut bytes = wd.read(p);
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    wd.write(p, bytes);
    let (code, err) = wd.run_err(&join("d.json"));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("extract-part-1-of-2.json.zst"), "{err}");

    // Parts of another dump are refused.
    wd.run_ok(&shard("d.json", "1/2"));
    wd.run_ok(&["synth", "--entities", "301", "--out", "other.json"]);
    let (code, err) = wd.run_err(&join("other.json"));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("different dump"), "{err}");
    // A dump of the same size with one byte changed is refused too, naming the part whose range holds it (each
    // shard hashed its own range; the join hashes the dump once and checks every range).
    let mut bytes = wd.read("d.json");
    let at = bytes.len() - 10;
    bytes[at] ^= 1;
    wd.write("same-size.json", bytes);
    let (code, err) = wd.run_err(&join("same-size.json"));
    assert_eq!(code, 3, "{err}");
    assert!(err.contains("different dump"), "{err}");
    assert!(err.contains("extract-part-1-of-2.manifest.json"), "{err}");
    // And the right dump joins.
    wd.run_ok(&join("d.json"));
    assert!(wd.join("o/triples.parquet").exists());
}

/// `KEY := words` assignments of the Makefile, by key.
fn makefile_lists() -> std::collections::BTreeMap<String, Vec<String>> {
    let text =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("pipeline/Makefile"))
            .unwrap();
    text.lines()
        .filter_map(|l| l.split_once(":="))
        .map(|(k, v)| {
            let words = v.split_whitespace().map(str::to_string).collect();
            (k.trim().to_string(), words)
        })
        .collect()
}

/// The Makefile's stage rules follow the library's pipeline: the same stages in the same order, and each
/// stage's rule waits for the stages whose artifacts it declares as inputs (no more, no fewer).
#[test]
fn makefile_stages_and_their_dependencies_are_the_pipelines() {
    use sword::stages::pipeline::{stage_names, PIPELINE};
    let lists = makefile_lists();
    assert_eq!(lists["STAGES"], stage_names(), "pipeline/Makefile STAGES");
    for step in PIPELINE {
        let key = format!("NEEDS_{}", step.name());
        let needs = lists.get(&key).cloned().unwrap_or_default();
        assert_eq!(needs, step.needs(), "pipeline/Makefile {key}");
    }
    // By hand, for the stages with alternatives or optional inputs: distort reads extract's tables and, when
    // present, the embeddings (train) with their keys (graph).
    let distort = PIPELINE.iter().find(|s| s.name() == "distort").unwrap();
    assert_eq!(distort.needs(), ["extract", "train", "graph"]);
}

/// `sword run` checks each stage's settings as `sword <stage>` does: a distort.toml with `max_attempts = 0`
/// fails before distort reads anything (exit 2), and a boolean set in a config file stays set when its flag is
/// not given.
#[test]
fn run_validates_every_stage_and_flags_override_files_only_when_given() {
    let wd = Workdir::new();
    let dump = small_dump(&wd);
    small_configs(&wd, 8);
    wd.write("conf/distort.toml", "samples = 8\nmax_attempts = 0\n");
    let (code, err) = wd.run_err(&small_run_args("2", &dump, "r"));
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("--max-attempts must be at least 1"), "{err}");
    assert!(err.contains("conf/distort.toml"), "names the file: {err}");
    // Refused before the first stage: nothing is written, the run folder is not even created.
    assert!(!wd.join("r").exists(), "the run folder was created");
    let mut until_graph = small_run_args("2", &dump, "r");
    until_graph.extend(["--until", "graph"]);
    wd.run_ok(&until_graph);
    // walks.toml says text = true and the command line says nothing: walks.txt is written.
    wd.write("conf/walks.toml", "text = true\n");
    wd.run_ok(&["walks", "--out", "r", "--config", "conf/walks.toml"]);
    assert!(wd.join("r/walks.txt").exists());
    let m: serde_json::Value = serde_json::from_slice(&wd.read("r/walks.manifest.json")).unwrap();
    assert_eq!(m["config"]["text"], true);
    assert_eq!(m["config"]["seed"], 1, "the file's default seed");
    // A flag given overrides the file.
    wd.write("conf/walks.toml", "text = true\nseed = 9\nlength = 4\n");
    wd.run_ok(&[
        "walks",
        "--out",
        "r",
        "--config",
        "conf/walks.toml",
        "--seed",
        "5",
    ]);
    let m: serde_json::Value = serde_json::from_slice(&wd.read("r/walks.manifest.json")).unwrap();
    assert_eq!(
        (m["config"]["seed"].as_u64(), m["config"]["length"].as_u64()),
        (Some(5), Some(4))
    );
}
