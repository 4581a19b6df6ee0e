//! A full disk, tested on a real one: a small tmpfs is mounted (as root; skipped with a message
//! otherwise), `sword extract` and then the whole `sword run` write into it until it is full. Each must exit 4
//! with a message naming the path, leave no partial artifact (no temporary file, no output its manifest does
//! not vouch for), and, once the tmpfs is remounted bigger, a rerun must complete byte-identically to a run that
//! never failed.

use crate::util::{
    small_configs, small_dump, small_run_args, Workdir, EXTRACT_ARTIFACTS, FINAL_ARTIFACTS,
};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A tmpfs mounted for the life of the value.
struct Tmpfs {
    dir: PathBuf,
}

impl Tmpfs {
    /// Mount a tmpfs of `mib` MiB at `dir`, or say why not (not root, no permission to mount).
    fn mount(dir: &Path, mib: u64) -> Result<Tmpfs, String> {
        let uid = Command::new("id")
            .arg("-u")
            .output()
            .map_err(|e| e.to_string())?;
        if String::from_utf8_lossy(&uid.stdout).trim() != "0" {
            return Err("not root".into());
        }
        std::fs::create_dir_all(dir).unwrap();
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={mib}m"), "tmpfs"])
            .arg(dir)
            .output()
            .map_err(|e| e.to_string())?;
        if !out.status.success() {
            return Err(format!(
                "mount failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ));
        }
        Ok(Tmpfs {
            dir: dir.to_path_buf(),
        })
    }

    /// Give it `mib` MiB (what an operator does after freeing space).
    fn resize(&self, mib: u64) {
        let st = Command::new("mount")
            .args(["-o", &format!("remount,size={mib}m")])
            .arg(&self.dir)
            .status()
            .unwrap();
        assert!(st.success(), "remount failed");
    }

    /// Fill it with a ballast file so that about `free` bytes stay free.
    fn leave_free(&self, free: u64) {
        let _ = std::fs::remove_file(self.dir.join("ballast"));
        let st = Command::new("df")
            .args(["-B1", "--output=avail"])
            .arg(&self.dir)
            .output()
            .unwrap();
        let avail: u64 = String::from_utf8_lossy(&st.stdout)
            .lines()
            .nth(1)
            .unwrap()
            .trim()
            .parse()
            .unwrap();
        let size = avail.saturating_sub(free) / 4096 * 4096;
        std::fs::write(self.dir.join("ballast"), vec![0u8; size as usize]).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.dir).status();
    }
}

fn size_of(dir: &Path, names: &[&str]) -> u64 {
    names
        .iter()
        .map(|n| std::fs::metadata(dir.join(n)).unwrap().len().div_ceil(4096) * 4096)
        .sum()
}

/// Every file left in `dir` is either a lock, the run summary, or an output that a manifest in `dir` lists with
/// its exact size and hash; no temporary file is left.
fn assert_only_vouched_files(dir: &Path) {
    let mut vouched = BTreeSet::new();
    // A run that failed in a folder it created leaves no folder at all (the lock removes it, empty).
    let Ok(entries) = std::fs::read_dir(dir) else {
        assert!(!dir.exists(), "{} unreadable", dir.display());
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(stage) = name.strip_suffix(".manifest.json") {
            vouched.insert(name.clone());
            let m = sword::store::Manifest::read(&e.path()).unwrap();
            for o in &m.outputs {
                let now = sword::store::FileRef::of(&dir.join(&o.path)).unwrap_or_else(|e| {
                    panic!("{stage} lists {} but it is unreadable: {e}", o.path)
                });
                assert_eq!((now.size, &now.xxh3), (o.size, &o.xxh3), "{}", o.path);
                vouched.insert(o.path.clone());
            }
        }
    }
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let rel = e
                .path()
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .into_owned();
            if e.file_type().unwrap().is_dir() {
                todo.push(e.path());
                continue;
            }
            assert!(!rel.contains(".tmp."), "temporary file left: {rel}");
            if rel == ".sword.lock" || rel == "run.summary.json" {
                continue;
            }
            assert!(
                vouched.contains(&rel),
                "{rel} is left without a manifest vouching for it"
            );
        }
    }
}

#[test]
fn full_disk_exits_4_leaves_nothing_partial_and_a_rerun_with_space_completes_identically() {
    let wd = Workdir::new();
    let tmpfs = match Tmpfs::mount(&wd.join("mnt"), 8) {
        Ok(t) => t,
        Err(why) => {
            eprintln!(
                "skipping the full-disk test: {why} (it mounts a tmpfs: run the tests as root)"
            );
            return;
        }
    };
    let dump = small_dump(&wd);
    let dump = dump.as_str();
    small_configs(&wd, 60);
    wd.run_ok(&small_run_args("1", dump, "ref"));
    let ref_dir = wd.join("ref");
    let extract_bytes = size_of(&ref_dir, EXTRACT_ARTIFACTS);
    let all_bytes = size_of(&ref_dir, FINAL_ARTIFACTS);
    assert!(
        all_bytes < 6 << 20,
        "the run ({all_bytes} bytes) must fit the tmpfs once enlarged"
    );

    // extract alone, with half of its artifacts' room.
    tmpfs.leave_free(extract_bytes / 2);
    let (code, err) = wd.run_err(&["extract", "--dump", dump, "--out", "mnt/x"]);
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("mnt/x/") && err.contains("No space left on device"),
        "{err}"
    );
    assert_only_vouched_files(&wd.join("mnt/x"));
    assert!(!wd.join("mnt/x/extract.manifest.json").exists());
    tmpfs.resize(64);
    wd.run_ok(&["extract", "--dump", dump, "--out", "mnt/x"]);
    for a in EXTRACT_ARTIFACTS {
        assert!(
            wd.read(&format!("mnt/x/{a}")) == wd.read(&format!("ref/{a}")),
            "extract after the rerun: {a} differs"
        );
    }

    // The whole run, with room for extract and half of the rest.
    std::fs::remove_dir_all(wd.join("mnt/x")).unwrap();
    tmpfs.resize(8);
    tmpfs.leave_free(extract_bytes + (all_bytes - extract_bytes) / 2);
    let (code, err) = wd.run_err(&small_run_args("2", dump, "mnt/run"));
    assert_eq!(code, 4, "{err}");
    assert!(
        err.contains("mnt/run/") && err.contains("No space left on device"),
        "{err}"
    );
    assert!(wd.join("mnt/run/extract.manifest.json").exists(), "{err}");
    assert!(!wd.join("mnt/run/export.manifest.json").exists());
    assert_only_vouched_files(&wd.join("mnt/run"));
    tmpfs.resize(64);
    // At another thread count again: the bytes do not depend on it.
    wd.run_ok(&small_run_args("4", dump, "mnt/run"));
    for a in FINAL_ARTIFACTS {
        assert!(
            wd.read(&format!("mnt/run/{a}")) == wd.read(&format!("ref/{a}")),
            "run after the rerun: {a} differs from the run that never failed"
        );
    }
    assert_only_vouched_files(&wd.join("mnt/run"));
}

/// The disk fills while the join spills (`--memory-limit`): exit 4 naming the spill run, no spill folder, no
/// temporary file, no artifact; with space again the same command writes the bytes of an unlimited run.
#[test]
fn full_disk_while_spilling_exits_4_and_leaves_no_spill_folder() {
    let wd = Workdir::new();
    let tmpfs = match Tmpfs::mount(&wd.join("mnt"), 8) {
        Ok(t) => t,
        Err(why) => {
            eprintln!("skipping the spill full-disk test: {why} (it mounts a tmpfs: run the tests as root)");
            return;
        }
    };
    wd.run_ok(&[
        "synth",
        "--entities",
        "30000",
        "--seed",
        "9",
        "--out",
        "d.json.gz",
    ]);
    wd.run_ok(&[
        "extract",
        "--dump",
        "d.json.gz",
        "--out",
        "free",
        "--memory-limit",
        "none",
    ]);
    let out = wd.join("mnt/run");
    let out_s = out.to_string_lossy().into_owned();
    let args = [
        "extract",
        "--dump",
        "d.json.gz",
        "--out",
        out_s.as_str(),
        "--memory-limit",
        "4M",
    ];
    tmpfs.leave_free(256 << 10);
    let (code, err) = wd.run_err(&args);
    assert_eq!(code, 4, "{err}");
    assert!(err.contains("extract-spill"), "names the spill run: {err}");
    // The folder the run created goes again when nothing is left in it.
    let left: Vec<String> = std::fs::read_dir(&out)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n != ".sword.lock")
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    assert_only_vouched_files(&out);
    let _ = std::fs::remove_file(tmpfs.dir.join("ballast"));
    wd.run_ok(&args);
    for f in EXTRACT_ARTIFACTS {
        assert!(
            std::fs::read(out.join(f)).unwrap() == wd.read(&format!("free/{f}")),
            "{f} differs from the unlimited run"
        );
    }
    assert_only_vouched_files(&out);
}
