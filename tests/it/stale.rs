//! The hostile cases of stale outputs and late refusals, on `run`, `distort`, `revalidate` and `eval compare`: a rerun never publishes
//! a stale benchmark (a new dump into an old run folder, a copied folder, a moved one), every refusal comes
//! before the first write (nothing created, nothing changed), and a truncated or corrupt input is bad input
//! (exit code 2, naming the file, saying what is wrong) in every command. Each case states the exit code, the
//! message and the state of every folder it touches before and after (listing and hashes).
//!
//! The worlds are the generated ones of docs/versions.md at a small size: `v1.json`, its run `old`, and
//! `v2.json = synth --later-of old`.

use crate::util::{manifest, small_configs, Workdir};
use std::collections::BTreeMap;
use std::path::Path;

/// Every entry under `dir` (relative path → `dir` or the content's hash), or `None` when `dir` does not exist.
fn state(dir: &Path) -> Option<BTreeMap<String, String>> {
    if std::fs::symlink_metadata(dir).is_err() {
        return None;
    }
    let mut out = BTreeMap::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            let rel = p.strip_prefix(dir).unwrap().to_string_lossy().into_owned();
            if p.is_dir() {
                out.insert(rel, "dir".into());
                todo.push(p);
            } else {
                let h = xxhash_rust::xxh3::xxh3_128(&std::fs::read(&p).unwrap());
                out.insert(rel, format!("{h:032x}"));
            }
        }
    }
    Some(out)
}

/// [`state`] without what differs between two runs of the same artifacts: manifests and the run summary
/// (timings), the lock file.
fn artifacts(dir: &Path) -> BTreeMap<String, String> {
    state(dir)
        .unwrap_or_else(|| panic!("{} is missing", dir.display()))
        .into_iter()
        .filter(|(k, _)| {
            !k.ends_with(".manifest.json") && k != "run.summary.json" && k != ".sword.lock"
        })
        .collect()
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let p = e.unwrap().path();
        let dest = to.join(p.file_name().unwrap());
        if p.is_dir() {
            copy_dir(&p, &dest);
        } else {
            std::fs::copy(&p, &dest).unwrap();
        }
    }
}

/// `sword run --dump DUMP --out OUT --seed 3 --config-dir CONF` and `extra`.
fn run_args<'a>(dump: &'a str, out: &'a str, conf: &'a str, extra: &[&'a str]) -> Vec<&'a str> {
    let mut v = vec![
        "run",
        "--dump",
        dump,
        "--out",
        out,
        "--seed",
        "3",
        "--config-dir",
        conf,
    ];
    v.extend_from_slice(extra);
    v
}

/// The status (`ran`, `fresh`) of each stage in `dir/run.summary.json`.
fn statuses(dir: &Path) -> Vec<(String, String)> {
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("run.summary.json")).unwrap()).unwrap();
    s["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r["stage"].as_str().unwrap().to_string(),
                r["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// The generated world in a new work directory: small configs in `conf/`, `v1.json`, the run `old` of it, and
/// `v2.json`, its later version (`synth --later-of old`). Every path is relative to the work directory,
/// where every command runs.
fn world() -> Workdir {
    let wd = Workdir::new();
    small_configs(&wd, 30);
    let synth = ["synth", "--entities", "3000", "--seed", "5", "--out"];
    wd.run_ok(&[&synth[..], &["v1.json"]].concat());
    wd.run_ok(&run_args("v1.json", "old", "conf", &[]));
    wd.run_ok(&[&synth[..], &["v2.json", "--later-of", "old"]].concat());
    wd
}

/// The first half of `file`'s bytes, written to `dest`.
fn truncated(file: &Path, dest: &Path) {
    let bytes = std::fs::read(file).unwrap();
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::write(dest, &bytes[..bytes.len() / 2]).unwrap();
}

/// `file` with its data pages overwritten (every byte from 4 to 60 % of the file flipped; the footer and the
/// magic intact), written to `dest`.
fn damaged(file: &Path, dest: &Path) {
    let mut bytes = std::fs::read(file).unwrap();
    let end = bytes.len() * 6 / 10;
    for b in &mut bytes[4..end] {
        *b = !*b;
    }
    std::fs::create_dir_all(dest.parent().unwrap()).unwrap();
    std::fs::write(dest, bytes).unwrap();
}

#[test]
fn a_new_dump_a_copied_folder_or_a_moved_one_never_yields_a_stale_benchmark() {
    let wd = world();
    let old = wd.join("old");
    let old_state = state(&old);
    // A new dump into the old run's folder: the same bytes as into an empty folder, not v1's benchmark.
    copy_dir(&old, &wd.join("reused"));
    wd.run_ok(&run_args("v2.json", "reused", "conf", &[]));
    wd.run_ok(&run_args("v2.json", "empty", "conf", &[]));
    assert_eq!(artifacts(&wd.join("reused")), artifacts(&wd.join("empty")));
    assert_ne!(
        wd.read("reused/sword.parquet"),
        wd.read("old/sword.parquet"),
        "v2's benchmark differs from v1's"
    );
    assert_eq!(
        statuses(&wd.join("reused"))[0],
        ("extract".into(), "ran".into())
    );
    let ex = manifest(&wd.join("reused"), "extract");
    assert_eq!(ex["inputs"][0]["path"], "v2.json", "{ex}");
    assert!(ex["inputs"][0].get("in_run").is_none(), "{ex}");

    // A copy of the old folder, carried from the original: judged on its own files, the same bytes as into an
    // empty folder; the original untouched.
    copy_dir(&old, &wd.join("copy"));
    let carry = ["--carry-from", "old"];
    wd.run_ok(&run_args("v2.json", "copy", "conf", &carry));
    wd.run_ok(&run_args("v2.json", "carried", "conf", &carry));
    let carried = artifacts(&wd.join("carried"));
    assert!(carried.contains_key("lineage.parquet"));
    assert_eq!(artifacts(&wd.join("copy")), carried);
    assert_eq!(state(&old), old_state, "the original changed");
    assert!(statuses(&wd.join("copy")).iter().all(|(_, s)| s == "ran"));
    // Its manifests name its own files, relative to it.
    let graph = manifest(&wd.join("copy"), "graph");
    for i in graph["inputs"].as_array().unwrap() {
        assert_eq!(i["in_run"], true, "{graph}");
        assert!(!i["path"].as_str().unwrap().contains("old"), "{graph}");
    }

    // Moved, the same run reruns nothing and changes nothing but its summary.
    std::fs::rename(wd.join("copy"), wd.join("moved")).unwrap();
    let before = state(&wd.join("moved")).unwrap();
    wd.run_ok(&run_args("v2.json", "moved", "conf", &carry));
    let after = state(&wd.join("moved")).unwrap();
    let changed: Vec<&String> = after
        .keys()
        .chain(before.keys())
        .filter(|k| after.get(*k) != before.get(*k))
        .collect();
    assert_eq!(changed, ["run.summary.json", "run.summary.json"]);
    assert!(
        statuses(&wd.join("moved"))
            .iter()
            .all(|(_, s)| s == "fresh"),
        "{:?}",
        statuses(&wd.join("moved"))
    );
    // The same dump under another name, or changed in place, reruns extract (and only the stages whose inputs
    // then change).
    std::fs::copy(wd.join("v2.json"), wd.join("v2-again.json")).unwrap();
    wd.run_ok(&run_args("v2-again.json", "moved", "conf", &carry));
    let st = statuses(&wd.join("moved"));
    assert_eq!(st[0], ("extract".into(), "ran".into()));
    assert!(st[1..].iter().all(|(_, s)| s == "fresh"), "{st:?}");
    assert_eq!(artifacts(&wd.join("moved")), carried);
}

/// A refusal of `sword run`: exit code `code`, stderr holding each of `words`, and neither a folder that did
/// not exist (`absent`) created nor one that did (`held`, a copy of a finished run) changed.
fn refused(wd: &Workdir, what: &str, args: &[&str], code: i32, words: &[&str]) {
    let held = wd.join("held");
    let before = state(&held);
    let (got, err) = wd.run_err(args);
    assert_eq!(got, code, "{what}: {err}");
    for w in words {
        assert!(err.contains(w), "{what}: no `{w}` in: {err}");
    }
    assert_eq!(state(&held), before, "{what}: the folder changed");
}

#[test]
fn run_refuses_a_bad_plan_before_its_first_write() {
    let wd = world();
    copy_dir(&wd.join("old"), &wd.join("held"));
    truncated(
        &wd.join("old/sword.parquet"),
        &wd.join("trunc/sword.parquet"),
    );
    std::fs::copy(
        wd.join("old/extract.manifest.json"),
        wd.join("trunc/extract.manifest.json"),
    )
    .unwrap();
    copy_dir(&wd.join("conf"), &wd.join("conf-langs"));
    wd.write("conf-langs/extract.toml", "languages = [\"en\", \"ko\"]\n");
    copy_dir(&wd.join("conf"), &wd.join("conf-bad"));
    wd.write("conf-bad/distort.toml", "sampels = 30\n");
    copy_dir(&wd.join("conf"), &wd.join("conf-zero"));
    wd.write("conf-zero/distort.toml", "max_attempts = 0\n");
    let cases: Vec<(&str, Vec<&str>, i32, Vec<&str>)> = vec![
        (
            "--carry-from a missing folder",
            vec!["--carry-from", "nosuch"],
            2,
            vec!["--carry-from", "nosuch/sword.parquet"],
        ),
        (
            "--carry-from a truncated benchmark",
            vec!["--carry-from", "trunc"],
            2,
            vec!["trunc/sword.parquet", "truncated", "--carry-from"],
        ),
        (
            "--carry-from a run of other extract settings",
            vec!["--carry-from", "old", "--config-dir", "conf-langs"],
            2,
            vec!["--carry-from", "languages", "conf-langs/extract.toml"],
        ),
        (
            "an unknown key in distort.toml",
            vec!["--config-dir", "conf-bad"],
            2,
            vec!["conf-bad/distort.toml", "sampels"],
        ),
        (
            "a value distort refuses",
            vec!["--config-dir", "conf-zero"],
            2,
            vec!["conf-zero/distort.toml", "max-attempts"],
        ),
        (
            "no such --config-dir",
            vec!["--config-dir", "nosuch-conf"],
            2,
            vec!["--config-dir", "nosuch-conf"],
        ),
    ];
    for (what, extra, code, words) in &cases {
        // `--config-dir` given once: the case's, else conf.
        let conf = extra
            .iter()
            .position(|a| *a == "--config-dir")
            .map(|i| extra[i + 1])
            .unwrap_or("conf");
        let rest: Vec<&str> = match extra.iter().position(|a| *a == "--config-dir") {
            Some(i) => [&extra[..i], &extra[i + 2..]].concat(),
            None => extra.clone(),
        };
        for out in ["absent", "held"] {
            refused(
                &wd,
                what,
                &run_args("v2.json", out, conf, &rest),
                *code,
                words,
            );
            assert!(!wd.join("absent").exists(), "{what}: created --out");
        }
    }
    for out in ["absent", "held"] {
        refused(
            &wd,
            "no such --dump",
            &run_args("nosuch.json", out, "conf", &[]),
            4,
            &["--dump", "nosuch.json"],
        );
        assert!(!wd.join("absent").exists());
    }
    // distort alone refuses a bad --carry-from before it locks the folder.
    refused(
        &wd,
        "distort --carry-from a truncated benchmark",
        &["distort", "--out", "held", "--carry-from", "trunc"],
        2,
        &["trunc/sword.parquet", "--carry-from", "truncated"],
    );
}

#[test]
fn a_corrupt_input_is_bad_input_in_every_command_and_a_refusal_creates_no_folder() {
    let wd = world();
    let old = wd.join("old");
    copy_dir(&old, &wd.join("held"));
    truncated(&old.join("sword.parquet"), &wd.join("trunc/sword.parquet"));
    damaged(
        &old.join("sword.parquet"),
        &wd.join("damaged/sword.parquet"),
    );
    for d in ["trunc", "damaged"] {
        std::fs::copy(
            old.join("extract.manifest.json"),
            wd.join(&format!("{d}/extract.manifest.json")),
        )
        .unwrap();
    }
    // A newer run whose extract manifest is cut short.
    copy_dir(&old, &wd.join("cut"));
    truncated(
        &old.join("extract.manifest.json"),
        &wd.join("cut/extract.manifest.json"),
    );
    // A run folder whose triples (or embeddings) are damaged, read with --force.
    copy_dir(&old, &wd.join("bad-triples"));
    truncated(
        &old.join("triples.parquet"),
        &wd.join("bad-triples/triples.parquet"),
    );
    copy_dir(&old, &wd.join("bad-npy"));
    truncated(
        &old.join("embeddings.npy"),
        &wd.join("bad-npy/embeddings.npy"),
    );
    wd.write("samples.jsonl", samples(&[("m", "s1")]));
    let words_trunc = ["truncated or damaged"];
    let cases: Vec<(&str, Vec<&str>, Vec<&str>)> = vec![
        (
            "revalidate: a truncated benchmark",
            vec!["revalidate", "--benchmark", "trunc", "--against", "old"],
            vec!["trunc/sword.parquet"],
        ),
        (
            "revalidate: a damaged data page",
            vec!["revalidate", "--benchmark", "damaged", "--against", "old"],
            vec!["damaged/sword.parquet"],
        ),
        (
            "revalidate: a truncated manifest of the newer run",
            vec!["revalidate", "--benchmark", "old", "--against", "cut"],
            vec!["cut/extract.manifest.json", "not valid JSON"],
        ),
        (
            "eval compare: a truncated benchmark",
            vec![
                "eval",
                "compare",
                "--results",
                "samples.jsonl",
                "--benchmark",
                "trunc",
            ],
            vec!["trunc/sword.parquet"],
        ),
        (
            "eval compare: a damaged benchmark",
            vec![
                "eval",
                "compare",
                "--results",
                "samples.jsonl",
                "--benchmark",
                "damaged",
            ],
            vec!["damaged/sword.parquet"],
        ),
    ];
    for (what, args, words) in &cases {
        // Into a new folder (not created) and into an existing one (unchanged).
        for out in ["absent", "held"] {
            let before = state(&wd.join(out));
            let args = [&args[..], &["--out", out]].concat();
            let (code, err) = wd.run_err(&args);
            assert_eq!(code, 2, "{what}: {err}");
            for w in words {
                assert!(err.contains(w), "{what}: no `{w}` in: {err}");
            }
            if words[0].ends_with("sword.parquet") {
                for w in words_trunc {
                    assert!(err.contains(w), "{what}: no `{w}` in: {err}");
                }
            }
            assert_eq!(state(&wd.join(out)), before, "{what}: {out} changed");
        }
    }
    // distort --force reads what no manifest vouches for: a truncated table or NPY file is bad input too, and
    // the folder is left as it was.
    for (dir, file) in [
        ("bad-triples", "triples.parquet"),
        ("bad-npy", "embeddings.npy"),
    ] {
        let before = state(&wd.join(dir));
        let (code, err) = wd.run_err(&["distort", "--out", dir, "--force"]);
        assert_eq!(code, 2, "{dir}: {err}");
        assert!(err.contains(&format!("{dir}/{file}")), "{err}");
        assert_eq!(state(&wd.join(dir)), before, "{dir} changed");
        // Without --force the changed file is stale (exit code 3), not corrupt.
        let (code, err) = wd.run_err(&["distort", "--out", dir]);
        assert_eq!(code, 3, "{dir}: {err}");
        assert_eq!(state(&wd.join(dir)), before, "{dir} changed");
    }
}

/// Samples lines of SWORD answers: (model, statement id) each answered True in English.
fn samples(rows: &[(&str, &str)]) -> String {
    let mut text = String::new();
    for (m, s) in rows {
        text.push_str(
            &serde_json::json!({
                "suite": "sword", "model": m, "answer": "True",
                "meta": {"statement_id": s, "language": "en", "strategy": "ORG", "label": true},
            })
            .to_string(),
        );
        text.push('\n');
    }
    text
}

#[test]
fn eval_compare_refuses_bad_samples_and_a_file_as_out_and_skips_a_bom() {
    let wd = Workdir::new();
    let good = samples(&[("a", "s1"), ("a", "s2"), ("b", "s1"), ("b", "s2")]);
    let compare = |results: &str, out: &str| {
        wd.run_err(&["eval", "compare", "--results", results, "--out", out])
    };
    // A line without `model`, with an empty statement_id: exit 2 naming file and line, nothing created.
    let no_model = good.replacen("\"model\":\"b\",", "", 1);
    assert_ne!(no_model, good);
    wd.write("no-model.jsonl", &no_model);
    let (code, err) = compare("no-model.jsonl", "c1");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("no-model.jsonl: line 3") && err.contains("model"),
        "{err}"
    );
    assert!(!wd.join("c1").exists());
    wd.write(
        "empty-id.jsonl",
        good.replacen("\"statement_id\":\"s2\"", "\"statement_id\":\"\"", 1),
    );
    let (code, err) = compare("empty-id.jsonl", "c1");
    assert_eq!(code, 2, "{err}");
    assert!(
        err.contains("empty-id.jsonl")
            && err.contains("line 2")
            && err.contains("empty statement_id"),
        "{err}"
    );
    assert!(!wd.join("c1").exists());
    // `--out` a file: refused before anything is read (the results do not even exist), the file untouched.
    wd.write("taken", "mine");
    let (code, err) = compare("nowhere.jsonl", "taken");
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("taken") && err.contains("--out"), "{err}");
    assert_eq!(wd.read("taken"), b"mine");
    // A byte-order mark is skipped: the same report as without it.
    wd.write("plain/samples.jsonl", &good);
    wd.write("bom/samples.jsonl", format!("\u{feff}{good}"));
    wd.run_ok(&[
        "eval",
        "compare",
        "--results",
        "plain",
        "--out",
        "r1",
        "--bootstrap",
        "0",
    ]);
    wd.run_ok(&[
        "eval",
        "compare",
        "--results",
        "bom",
        "--out",
        "r2",
        "--bootstrap",
        "0",
    ]);
    assert_eq!(wd.read("r1/figures.csv"), wd.read("r2/figures.csv"));
}

#[test]
fn the_lock_message_names_the_holders_pid_and_command_and_a_refusal_leaves_no_lock_file() {
    let wd = Workdir::new();
    std::fs::create_dir(wd.join("out")).unwrap();
    // A holder that wrote nothing into the lock file (another tool, or a sword between its lock and its
    // write): named from /proc/locks.
    let f = std::fs::File::create(wd.join("out/.sword.lock")).unwrap();
    f.lock().unwrap();
    wd.run_ok(&[
        "synth",
        "--entities",
        "200",
        "--seed",
        "1",
        "--out",
        "d.json",
    ]);
    let (code, err) = wd.run_err(&["extract", "--dump", "d.json", "--out", "out"]);
    assert_eq!(code, 6, "{err}");
    if Path::new("/proc/locks").exists() {
        assert!(
            err.contains(&format!("held by pid {} (", std::process::id())),
            "{err}"
        );
    }
    drop(f);
    // Released: the same command runs; a refused one into a new folder leaves neither folder nor lock file.
    wd.run_ok(&["extract", "--dump", "d.json", "--out", "out"]);
    wd.write(
        "broken.json",
        "{\"id\": \"Q1\", \"type\": \"item\", \"labels\": ",
    );
    let (code, err) = wd.run_err(&["extract", "--dump", "broken.json", "--out", "never"]);
    assert_eq!(code, 2, "{err}");
    assert!(!wd.join("never").exists(), "{err}");
}
