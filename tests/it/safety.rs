//! Artifacts safe on disk (locks, marked temporary files, no link followed): every stage that writes a run directory takes its lock,
//! temporary files are unguessable, made with `O_EXCL | O_NOFOLLOW` and marked, cleanup removes only the
//! marked files of dead writers and only once the input is accepted, an unwritable `--out` fails before the
//! input is read, and a panic leaves no run directory that a later stage accepts.
//!
//! A stage is held in the middle of its work by feeding its dump through a pipe (`--dump -`) that the test
//! keeps open: the stage has taken the lock and waits for bytes.

use crate::util::{small_configs, small_dump, small_run_args, Workdir, EXTRACT_ARTIFACTS};
use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// `sword ARGS` reading its dump from a pipe the test holds open.
fn spawn_on_pipe(wd: &Workdir, args: &[&str]) -> Child {
    wd.command(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn sword")
}

/// Wait until the process `pid` holds the lock of `dir` (its pid is in the lock file, written once the
/// `flock` is taken).
fn wait_for_lock(dir: &Path, pid: u32) {
    let t = Instant::now();
    let want = format!("pid {pid} ");
    loop {
        let now = std::fs::read_to_string(dir.join(".sword.lock")).unwrap_or_default();
        if now.starts_with(&want) {
            return;
        }
        assert!(
            t.elapsed() < Duration::from_secs(60),
            "pid {pid} never took the lock of {} (lock file: {now:?})",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Feed `bytes` to the child's stdin, close it, and wait for it; returns (exit code, stderr).
fn finish(mut child: Child, bytes: &[u8]) -> (i32, String) {
    {
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(bytes).unwrap();
    }
    let out = child.wait_with_output().unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Name → content of every file in `dir` but the lock file (symlinks as their target).
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    for e in std::fs::read_dir(dir).unwrap().flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        let meta = std::fs::symlink_metadata(e.path()).unwrap();
        if name == ".sword.lock" || meta.is_dir() {
            continue;
        }
        let v = if meta.file_type().is_symlink() {
            std::fs::read_link(e.path())
                .unwrap()
                .to_string_lossy()
                .into_owned()
                .into_bytes()
        } else {
            std::fs::read(e.path()).unwrap()
        };
        out.insert(name, v);
    }
    out
}

fn assert_locked(wd: &Workdir, args: &[&str]) {
    let (code, err) = wd.run_err(args);
    assert_eq!(code, 6, "sword {args:?}: {err}");
    assert!(
        err.contains("is locked by another sword run") && err.contains("held by pid"),
        "sword {args:?}: {err}"
    );
}

#[test]
fn two_extracts_into_one_directory_cannot_both_write() {
    let wd = Workdir::new();
    let dump = small_dump(&wd);
    let bytes = std::fs::read(&dump).unwrap();
    // A good extract first, so that the refused ones have something to spoil.
    wd.run_ok(&["extract", "--dump", &dump, "--out", "out"]);
    let before = contents(&wd.join("out"));
    let first = spawn_on_pipe(&wd, &["extract", "--dump", "-", "--out", "out"]);
    wait_for_lock(&wd.join("out"), first.id());
    // While the first reads: a second extract, and every later stage, is refused at once and writes nothing.
    assert_locked(&wd, &["extract", "--dump", &dump, "--out", "out"]);
    assert_locked(&wd, &["graph", "--out", "out"]);
    assert_locked(&wd, &["export", "--out", "out"]);
    assert_locked(&wd, &["run", "--dump", &dump, "--out", "out"]);
    assert_eq!(contents(&wd.join("out")), before, "a refused stage wrote");
    let (code, err) = finish(first, &bytes);
    assert_eq!(code, 0, "{err}");
    // The same bytes as the extract of the file (the manifest differs: its input is `-`).
    for name in EXTRACT_ARTIFACTS {
        assert_eq!(before[*name], wd.read(&format!("out/{name}")), "{name}");
    }
    // Once it is done, the next one writes.
    wd.run_ok(&["extract", "--dump", &dump, "--out", "out"]);
}

#[test]
fn stages_beside_a_running_sword_run_are_refused() {
    let wd = Workdir::new();
    let dump = small_dump(&wd);
    small_configs(&wd, 30);
    let bytes = std::fs::read(&dump).unwrap();
    let mut args = small_run_args("1", "-", "out");
    args.retain(|a| *a != "-j" && *a != "1");
    let run = spawn_on_pipe(&wd, &args);
    wait_for_lock(&wd.join("out"), run.id());
    assert_locked(&wd, &["extract", "--dump", &dump, "--out", "out"]);
    assert_locked(&wd, &["distort", "--out", "out"]);
    let (code, err) = finish(run, &bytes);
    assert_eq!(code, 0, "{err}");
    assert!(wd.join("out/sword.parquet").exists());
    assert!(wd.join("out/export.manifest.json").exists());
}

#[test]
fn planted_symlinks_and_foreign_temporary_files_are_never_written_or_removed() {
    let wd = Workdir::new();
    let dump = small_dump(&wd);
    let bytes = std::fs::read(&dump).unwrap();
    let outside = wd.join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    std::fs::create_dir_all(wd.join("out")).unwrap();
    let victim = |i: usize| outside.join(format!("victim{i}"));
    let mut victims = Vec::new();
    let plant = |name: &str, victims: &mut Vec<PathBuf>| {
        let v = victim(victims.len());
        std::fs::write(&v, b"precious").unwrap();
        std::os::unix::fs::symlink(&v, wd.join("out").join(name)).unwrap();
        victims.push(v);
    };
    // Where a file of the run will be renamed to: the rename replaces the link, never writes through it.
    plant("triples.parquet", &mut victims);
    // Looks like a temporary file of ours of a dead writer, but is a symlink: not ours to remove or follow.
    plant(
        ".entities.parquet.Xk3q9ZbT0a.sword.tmp.999999999",
        &mut victims,
    );
    // Foreign temporary files (another tool's, or the pid-named temporaries of older versions): kept.
    let foreign = [
        ".entities.parquet.tmp.999999999",
        ".notes.txt.tmp.1",
        ".x.sword.tmp.999999999",
    ];
    for f in foreign {
        wd.write(&format!("out/{f}"), b"not sword's");
    }
    // A stale temporary file of ours (a killed writer): removed, but only once the input is accepted.
    let stale = ".statements.parquet.AbCdEfGhIj.sword.tmp.999999999";
    wd.write(&format!("out/{stale}"), b"left by a killed run");
    let (code, err) = wd.run_err(&["extract", "--dump", "data/nothing.json", "--out", "out"]);
    assert_eq!(code, 4, "{err}");
    wd.write(
        "page.json",
        "<html><body>503 Service Unavailable</body></html>\n",
    );
    let (code, err) = wd.run_err(&["extract", "--dump", "page.json", "--out", "out"]);
    assert_eq!(code, 2, "{err}");
    assert!(
        wd.join(&format!("out/{stale}")).exists(),
        "cleaned before the input was accepted"
    );

    // The writer of old named its temporary `.NAME.tmp.PID`: symlinks at those names for this very process
    // would have been followed. Plant them once its pid is known, before it writes.
    let child = spawn_on_pipe(&wd, &["extract", "--dump", "-", "--out", "out"]);
    wait_for_lock(&wd.join("out"), child.id());
    for name in EXTRACT_ARTIFACTS {
        plant(&format!(".{name}.tmp.{}", child.id()), &mut victims);
    }
    let (code, err) = finish(child, &bytes);
    assert_eq!(code, 0, "{err}");
    for v in &victims {
        assert_eq!(
            std::fs::read(v).unwrap(),
            b"precious",
            "{} written",
            v.display()
        );
    }
    let meta = std::fs::symlink_metadata(wd.join("out/triples.parquet")).unwrap();
    assert!(meta.is_file(), "triples.parquet is the run's own file now");
    for f in foreign {
        assert_eq!(wd.read(&format!("out/{f}")), b"not sword's", "{f}");
    }
    assert!(std::fs::symlink_metadata(
        wd.join("out/.entities.parquet.Xk3q9ZbT0a.sword.tmp.999999999")
    )
    .is_ok());
    assert!(
        !wd.join(&format!("out/{stale}")).exists(),
        "stale temp kept"
    );
    wd.run_ok(&["graph", "--out", "out"]);

    // A lock file planted as a symlink is refused, its target untouched.
    // (A finished stage removed the lock file it created.)
    let _ = std::fs::remove_file(wd.join("out/.sword.lock"));
    plant(".sword.lock", &mut victims);
    let (code, err) = wd.run_err(&["graph", "--out", "out"]);
    assert_eq!(code, 2, "{err}");
    assert!(err.contains("symbolic link"), "{err}");
    assert_eq!(std::fs::read(victims.last().unwrap()).unwrap(), b"precious");
}

/// Make `dir` a directory nobody can write into: a read-only tmpfs as root, mode 0555 otherwise. `None`
/// (the test skips, saying why) when neither works.
fn read_only_dir(dir: &Path) -> Option<ReadOnly> {
    std::fs::create_dir_all(dir).unwrap();
    let root = Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0");
    if root {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "ro,size=1m", "tmpfs"])
            .arg(dir)
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            eprintln!("cannot mount a read-only tmpfs: skipping the unwritable --out check");
            return None;
        }
        return Some(ReadOnly::Mount(dir.to_path_buf()));
    }
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    Some(ReadOnly::Mode(dir.to_path_buf()))
}

enum ReadOnly {
    Mount(PathBuf),
    Mode(PathBuf),
}

impl Drop for ReadOnly {
    fn drop(&mut self) {
        match self {
            ReadOnly::Mount(d) => {
                let _ = Command::new("umount").arg(&*d).status();
            }
            ReadOnly::Mode(d) => {
                use std::os::unix::fs::PermissionsExt;
                let _ = std::fs::set_permissions(&*d, std::fs::Permissions::from_mode(0o755));
            }
        }
    }
}

#[test]
fn unwritable_out_fails_at_once_before_the_input_is_read() {
    let wd = Workdir::new();
    let Some(_ro) = read_only_dir(&wd.join("ro")) else {
        return;
    };
    // The dump is a pipe that never ends: only a check made before reading can finish.
    for args in [
        &["extract", "--dump", "-", "--out", "ro"][..],
        &["run", "--dump", "-", "--out", "ro"][..],
    ] {
        let mut child = spawn_on_pipe(&wd, args);
        let t = Instant::now();
        let status = loop {
            if let Some(s) = child.try_wait().unwrap() {
                break s;
            }
            if t.elapsed() > Duration::from_secs(30) {
                let _ = child.kill();
                panic!("sword {args:?} waited for its input with an unwritable --out");
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        let mut err = String::new();
        std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut err).unwrap();
        assert_eq!(status.code(), Some(4), "sword {args:?}: {err}");
        assert!(
            err.contains("ro: cannot write into this run directory"),
            "sword {args:?}: {err}"
        );
    }
}

/// A good extract of `dump_a` in `out`, then one of `dump_b` broken at `before-rename:triples.parquet` (two
/// of the five files are in place) by `var` (`SWORD_PANIC_AT` or `SWORD_CRASH_AT`); returns its stderr.
fn broken_extract(wd: &Workdir, dump_a: &str, dump_b: &str, var: &str) -> String {
    wd.run_ok(&["extract", "--dump", dump_a, "--out", "out"]);
    wd.run_ok(&["graph", "--out", "out"]);
    let out = wd
        .command(&["extract", "--dump", dump_b, "--out", "out"])
        .env(var, "before-rename:triples.parquet")
        .output()
        .unwrap();
    assert!(!out.status.success());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_stage_broken_while_replacing_its_outputs_is_never_accepted() {
    let wd = Workdir::new();
    let dump_a = small_dump(&wd);
    wd.run_ok(&[
        "synth",
        "--entities",
        "2000",
        "--seed",
        "6",
        "--out",
        "dump/b.json.gz",
    ]);
    let dump_b = wd.join("dump/b.json.gz").to_string_lossy().into_owned();
    let a_triples = {
        broken_extract(&wd, &dump_a, &dump_b, "SWORD_CRASH_AT");
        // Killed (no destructor ran): entities and properties are B's, the rest A's; the old manifest went
        // before the first rename, so nothing vouches for the mix.
        assert!(!wd.join("out/extract.manifest.json").exists());
        let (code, err) = wd.run_err(&["graph", "--out", "out"]);
        assert_eq!(code, 3, "{err}");
        assert!(err.contains("no manifest"), "{err}");
        let (code, err) = wd.run_err(&["export", "--out", "out"]);
        assert_eq!(code, 3, "{err}");
        wd.read("out/triples.parquet")
    };
    std::fs::remove_dir_all(wd.join("out")).unwrap();

    // A panic (a bug): exit 101; while it unwinds, the two new files go too.
    let err = broken_extract(&wd, &dump_a, &dump_b, "SWORD_PANIC_AT");
    assert!(err.contains("injected panic"), "{err}");
    assert!(err.contains("removing the 2 output(s)"), "{err}");
    assert!(!wd.join("out/extract.manifest.json").exists());
    assert!(!wd.join("out/entities.parquet").exists());
    assert!(!wd.join("out/properties.parquet").exists());
    assert_eq!(wd.read("out/triples.parquet"), a_triples, "not replaced");
    let (code, err) = wd.run_err(&["graph", "--out", "out"]);
    assert_eq!(code, 3, "{err}");
    // `sword run` does not take the stage as fresh: it redoes it, and the run is that of B.
    small_configs(&wd, 30);
    wd.run_ok(&small_run_args("2", &dump_b, "out"));
    wd.run_ok(&small_run_args("1", &dump_b, "ref"));
    for name in crate::util::FINAL_ARTIFACTS {
        assert_eq!(
            wd.read(&format!("out/{name}")),
            wd.read(&format!("ref/{name}")),
            "{name}"
        );
    }
}

#[test]
fn a_panic_inside_sword_run_leaves_a_directory_a_rerun_completes() {
    let wd = Workdir::new();
    let dump = small_dump(&wd);
    small_configs(&wd, 30);
    wd.run_ok(&small_run_args("1", &dump, "ref"));
    for point in [
        "before-rename:embeddings.w2v",
        "before-rename:report.md",
        "after-stage:walks",
    ] {
        let out = format!("p-{}", point.replace([':', '.'], "-"));
        let o = wd
            .command(&small_run_args("2", &dump, &out))
            .env("SWORD_PANIC_AT", point)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(101), "{point}: {err}");
        assert!(err.contains("injected panic"), "{point}: {err}");
        // The lock went with the process: a rerun takes it and gives the uninterrupted bytes.
        wd.run_ok(&small_run_args("4", &dump, &out));
        for name in crate::util::FINAL_ARTIFACTS {
            assert_eq!(
                wd.read(&format!("{out}/{name}")),
                wd.read(&format!("ref/{name}")),
                "{point}: {name}"
            );
        }
    }
}

#[test]
fn a_crafted_embeddings_npy_is_refused_naming_the_file() {
    let wd = Workdir::new();
    let dump = small_dump(&wd);
    small_configs(&wd, 30);
    let mut args = small_run_args("2", &dump, "out");
    args.extend(["--until", "train"]);
    wd.run_ok(&args);
    let good = wd.read("out/embeddings.npy");
    let header_len = 10 + u16::from_le_bytes([good[8], good[9]]) as usize;
    let crafted = |dict: &str, data: &[u8]| {
        let mut h = dict.to_string();
        while !(10 + h.len() + 1).is_multiple_of(64) {
            h.push(' ');
        }
        h.push('\n');
        let mut b = b"\x93NUMPY\x01\x00".to_vec();
        b.extend((h.len() as u16).to_le_bytes());
        b.extend(h.as_bytes());
        b.extend(data);
        b
    };
    let data = &good[header_len..];
    for (bytes, want) in [
        (
            crafted(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1000000000000, 128), }",
                &data[..64],
            ),
            "(truncated)",
        ),
        (
            crafted(
                "{'descr': '<f8', 'fortran_order': False, 'shape': (1, 1), }",
                &[0; 8],
            ),
            "not little-endian float32",
        ),
        (good[..good.len() - 4].to_vec(), "truncated"),
        (
            crafted(
                "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1), }",
                &[0; 4],
            ),
            "one row per node",
        ),
    ] {
        wd.write("out/embeddings.npy", &bytes);
        let (code, err) = wd.run_err(&["distort", "--out", "out", "--force"]);
        assert_eq!(code, 2, "{err}");
        assert!(
            err.contains("out/embeddings.npy") && err.contains(want),
            "{err}"
        );
    }
}
