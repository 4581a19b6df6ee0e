//! Artifacts: atomic writes, content hashes and manifests.
//!
//! Every file a stage produces is written to a temporary file in the same directory, flushed, fsynced and
//! renamed over its final name, so a reader never sees half a file and a crash (even `kill -9`) leaves at most
//! a stray `.*.tmp.*` file that the next run removes. After its outputs, a stage writes
//! `<stage>.manifest.json` (also atomically): what it read (path, size, xxh3-128 hash), what it wrote (same),
//! its config, seed, counts, rejects and timings. The next stage checks its inputs against that manifest, so a
//! stale or corrupt input is refused with a message naming it.
//!
//! A manifest also says whether its outputs come from a whole dump (`"complete": true`). The extract stage
//! sets `false` when it kept what it could of a dump that ends early (`--allow-truncated`); every later stage
//! inherits `false` from the manifest of any input it read ([`Manifest::write`]), so a partial build can never
//! pass as a whole one.

use crate::error::{Error, IoContext, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

/// Version of the crate that wrote an artifact.
pub const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Git commit the binary was built from (`unknown` outside a checkout).
pub const GIT_COMMIT: &str = match option_env!("SWORD_GIT_COMMIT") {
    Some(c) => c,
    None => "unknown",
};

/// A file being written atomically: bytes go to `.<name>.tmp.<pid>` beside the destination; `commit`
/// renames it into place. Dropping without `commit` removes the temporary file.
pub struct AtomicFile {
    dest: PathBuf,
    tmp: PathBuf,
    writer: Option<BufWriter<File>>,
}

impl AtomicFile {
    /// Start writing `dest`. The parent directory must exist.
    pub fn create(dest: impl AsRef<Path>) -> Result<AtomicFile> {
        let dest = dest.as_ref().to_path_buf();
        let name = dest
            .file_name()
            .ok_or_else(|| Error::bad_input(&dest, "output path has no file name"))?
            .to_string_lossy()
            .into_owned();
        let dir = dest.parent().map(Path::to_path_buf).unwrap_or_default();
        let tmp = dir.join(format!(".{name}.tmp.{}", std::process::id()));
        let file = File::create(&tmp).at(&tmp)?;
        Ok(AtomicFile {
            dest,
            tmp,
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
        })
    }

    /// The final path.
    pub fn path(&self) -> &Path {
        &self.dest
    }

    /// Flush the buffered bytes and fsync the temporary file, without renaming it: a full disk or a failing
    /// device shows here, while the destination is untouched. The error names the destination.
    pub fn sync(&mut self) -> Result<()> {
        let w = self.writer.as_mut().expect("writer present until commit");
        w.flush().at(&self.dest)?;
        w.get_ref().sync_all().at(&self.dest)
    }

    /// Flush, fsync, rename into place and fsync the directory. On failure (a full disk while flushing) the
    /// temporary file is removed: nothing of it stays behind.
    pub fn commit(mut self) -> Result<()> {
        let w = self.writer.take().expect("writer present until commit");
        let renamed = (|| {
            let file = w
                .into_inner()
                .map_err(|e| Error::io(&self.dest, e.into_error()))?;
            file.sync_all().at(&self.dest)?;
            drop(file);
            crash_point(&format!(
                "before-rename:{}",
                self.dest.file_name().unwrap_or_default().to_string_lossy()
            ));
            fs::rename(&self.tmp, &self.dest).at(&self.dest)
        })();
        if let Err(e) = renamed {
            let _ = fs::remove_file(&self.tmp);
            return Err(e);
        }
        if let Some(dir) = self.dest.parent() {
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            // Directory fsync makes the rename durable; not every filesystem supports it, so it is best effort.
            if let Ok(d) = File::open(dir) {
                let _ = d.sync_all();
            }
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.writer.as_mut().expect("not committed").write(buf)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.as_mut().expect("not committed").flush()
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.writer.is_some() {
            self.writer = None;
            let _ = fs::remove_file(&self.tmp);
        }
    }
}

/// Rename several finished files into place (call [`AtomicFile::sync`] on each first, so that a full disk fails
/// before any rename). If one rename fails, the files already renamed are removed again: all or nothing.
/// Returns the destinations.
pub fn commit_all(files: Vec<AtomicFile>) -> Result<Vec<PathBuf>> {
    let mut done: Vec<PathBuf> = Vec::with_capacity(files.len());
    let mut files = files.into_iter();
    while let Some(f) = files.next() {
        let dest = f.path().to_path_buf();
        if let Err(e) = f.commit() {
            remove_all(&done);
            drop(files);
            return Err(e);
        }
        done.push(dest);
    }
    Ok(done)
}

/// Remove files (best effort: used to undo the outputs of a stage that failed after writing them).
pub fn remove_all(paths: &[PathBuf]) {
    for p in paths {
        let _ = fs::remove_file(p);
    }
}

/// Write `dest` atomically with the bytes `f` produces.
pub fn write_atomic(
    dest: impl AsRef<Path>,
    f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
) -> Result<()> {
    let mut file = AtomicFile::create(dest.as_ref())?;
    f(&mut file).at(dest.as_ref())?;
    file.commit()
}

/// Crash-safety testing hook: when the environment variable `SWORD_CRASH_AT` equals `name`, the process
/// aborts on the spot (no destructors, no cleanup — as `kill -9` would leave it). Points are named
/// `before-rename:<file>` (inside every atomic write) and `after-stage:<stage>` (in `sword run`).
pub fn crash_point(name: &str) {
    if let Some(at) = std::env::var_os("SWORD_CRASH_AT") {
        if at == name {
            eprintln!("sword: SWORD_CRASH_AT={name}: aborting as if killed");
            std::process::abort();
        }
    }
}

/// True when `pid` (decimal text) names a running process. Where that cannot be known (no `/proc`), a
/// temporary file is treated as stale only if its pid is not a number.
fn pid_alive(pid: &str) -> bool {
    match pid.parse::<u32>() {
        Ok(p) if p == std::process::id() => false,
        Ok(p) => Path::new("/proc").join(p.to_string()).exists(),
        Err(_) => false,
    }
}

/// Remove temporary files (`.*.tmp.<pid>`) left in `dir` by a run that was killed (whose process is gone).
pub fn clean_stale_temps(dir: &Path) -> Result<usize> {
    let mut n = 0;
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.at(dir)?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(pid) = name
            .strip_prefix('.')
            .and_then(|rest| rest.rsplit_once(".tmp."))
            .map(|(_, pid)| pid)
        else {
            continue;
        };
        // A temporary file of a process that is still alive (another stage writing into the same directory)
        // is not stale; only those of dead processes (killed runs) are removed.
        if pid_alive(pid) {
            continue;
        }
        fs::remove_file(entry.path()).at(entry.path())?;
        n += 1;
    }
    Ok(n)
}

/// Size and content hash of a file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileRef {
    /// Path as given (inputs) or file name relative to the manifest's directory (outputs).
    pub path: String,
    /// Size in bytes.
    pub size: u64,
    /// xxh3-128 of the content, lower-case hex; `None` for streams that cannot be hashed (stdin).
    pub xxh3: Option<String>,
}

impl FileRef {
    /// Hash a file on disk (streams it; xxh3 runs at several GB/s, far faster than any stage).
    pub fn of(path: &Path) -> Result<FileRef> {
        let mut f = File::open(path).at(path)?;
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut size = 0u64;
        loop {
            let n = f.read(&mut buf).at(path)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            size += n as u64;
        }
        Ok(FileRef {
            path: path.to_string_lossy().into_owned(),
            size,
            xxh3: Some(format!("{:032x}", h.digest128())),
        })
    }
}

/// Provenance written next to a stage's outputs as `<stage>.manifest.json`.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Manifest {
    /// Stage name (`extract`, `graph`, ...).
    pub stage: String,
    /// Crate version that wrote it.
    pub crate_version: String,
    /// Git commit of the binary.
    pub git_commit: String,
    /// The stage's configuration, as JSON.
    pub config: serde_json::Value,
    /// Seed, for stages that draw random numbers.
    pub seed: Option<u64>,
    /// Input files with size and hash.
    pub inputs: Vec<FileRef>,
    /// Output files (names relative to the manifest's directory) with size and hash.
    pub outputs: Vec<FileRef>,
    /// Counts (records read, kept, ...).
    pub counts: BTreeMap<String, u64>,
    /// Rejected or skipped records by reason.
    pub rejects: BTreeMap<String, u64>,
    /// Wall-clock timings in seconds by phase.
    pub timings: BTreeMap<String, f64>,
    /// Anything stage-specific (examples of bad lines, throughput, ...).
    pub extra: serde_json::Value,
    /// Whether the outputs come from a whole dump. `false` when the extract stage kept what it could of a dump
    /// that ends early (`--allow-truncated`), and in every manifest downstream of such a run (inherited from the
    /// inputs' manifests when written). Manifests written before this field existed read as `true`.
    #[serde(default = "yes")]
    pub complete: bool,
}

fn yes() -> bool {
    true
}

impl Manifest {
    /// A manifest for `stage` with version and commit filled in.
    pub fn new(stage: &str) -> Manifest {
        Manifest {
            stage: stage.to_string(),
            crate_version: CRATE_VERSION.to_string(),
            git_commit: GIT_COMMIT.to_string(),
            extra: serde_json::Value::Null,
            complete: true,
            ..Manifest::default()
        }
    }

    /// The inputs of this manifest that an incomplete run produced: each input is looked up in the manifests
    /// beside it (`*.manifest.json` in its directory) that list it as an output with the same size and hash.
    pub fn incomplete_inputs(&self) -> Vec<String> {
        let mut out = Vec::new();
        for input in &self.inputs {
            let path = Path::new(&input.path);
            let (Some(dir), Some(name)) = (path.parent(), path.file_name()) else {
                continue;
            };
            let dir = if dir.as_os_str().is_empty() {
                Path::new(".")
            } else {
                dir
            };
            let name = name.to_string_lossy();
            let Ok(entries) = fs::read_dir(dir) else {
                continue;
            };
            for e in entries.flatten() {
                let file = e.file_name().to_string_lossy().into_owned();
                if !file.ends_with(".manifest.json") {
                    continue;
                }
                let Ok(m) = Manifest::read(&e.path()) else {
                    continue;
                };
                let produced = m.outputs.iter().any(|o| {
                    o.path == name
                        && o.size == input.size
                        && (o.xxh3 == input.xxh3 || input.xxh3.is_none())
                });
                if produced && !m.complete {
                    out.push(input.path.clone());
                    break;
                }
            }
        }
        out
    }

    /// Path of the manifest of `stage` in `dir`.
    pub fn path_in(dir: &Path, stage: &str) -> PathBuf {
        dir.join(format!("{stage}.manifest.json"))
    }

    /// Record the outputs (files in `dir`, by name) with their hashes.
    pub fn add_outputs(&mut self, dir: &Path, names: &[&str]) -> Result<()> {
        for name in names {
            let mut r = FileRef::of(&dir.join(name))?;
            r.path = (*name).to_string();
            self.outputs.push(r);
        }
        Ok(())
    }

    /// Write `<dir>/<stage>.manifest.json` atomically. A manifest any of whose inputs comes from an incomplete
    /// run is written with `"complete": false` (see [`Manifest::incomplete_inputs`]), whatever the stage set.
    pub fn write(&self, dir: &Path) -> Result<PathBuf> {
        let path = Manifest::path_in(dir, &self.stage);
        let mut m = std::borrow::Cow::Borrowed(self);
        if self.complete && !self.incomplete_inputs().is_empty() {
            m.to_mut().complete = false;
        }
        let json = serde_json::to_vec_pretty(&*m).expect("manifest serialises");
        write_atomic(&path, |w| {
            w.write_all(&json)?;
            w.write_all(b"\n")
        })?;
        Ok(path)
    }

    /// Read a manifest.
    pub fn read(path: &Path) -> Result<Manifest> {
        let bytes = fs::read(path).at(path)?;
        serde_json::from_slice(&bytes).map_err(|e| Error::Corrupt {
            path: path.to_path_buf(),
            what: format!("manifest is not valid JSON: {e}"),
        })
    }
}

/// Check that `dir/name` is exactly the file that `dir/<stage>.manifest.json` says `stage` wrote.
///
/// Returns the file's `FileRef` (with its full path) for the consumer's own manifest. A missing manifest or a
/// file not listed is `Stale`; a size or hash mismatch is `Corrupt`. With `force`, mismatches are ignored and
/// the file is only hashed.
pub fn check_input(dir: &Path, stage: &str, name: &str, force: bool) -> Result<FileRef> {
    let path = dir.join(name);
    if !path.exists() {
        return Err(Error::Stale {
            path,
            what: format!("missing; run `sword {stage}` first"),
        });
    }
    let actual = FileRef::of(&path)?;
    if force {
        return Ok(actual);
    }
    let mpath = Manifest::path_in(dir, stage);
    if !mpath.exists() {
        return Err(Error::Stale {
            path: path.clone(),
            what: format!("no manifest {} vouches for it", mpath.display()),
        });
    }
    let manifest = Manifest::read(&mpath)?;
    let listed = manifest
        .outputs
        .iter()
        .find(|o| o.path == name)
        .ok_or_else(|| Error::Stale {
            path: path.clone(),
            what: format!("not listed in {}", mpath.display()),
        })?;
    if listed.size != actual.size || listed.xxh3 != actual.xxh3 {
        return Err(Error::Corrupt {
            path,
            what: format!(
                "size/hash {} / {:?} differ from {} ({} / {:?})",
                actual.size,
                actual.xxh3,
                mpath.display(),
                listed.size,
                listed.xxh3
            ),
        });
    }
    Ok(actual)
}

/// True when `dir/<stage>.manifest.json` exists, was made with `config`, every input it lists still has the
/// recorded size and hash, and every output it lists is present with its recorded size and hash. A stage
/// that is fresh need not run again (`sword run` and the Makefile rely on this after a crash).
pub fn is_fresh(dir: &Path, stage: &str, config: &serde_json::Value) -> bool {
    let Ok(m) = Manifest::read(&Manifest::path_in(dir, stage)) else {
        return false;
    };
    if &m.config != config || m.outputs.is_empty() {
        return false;
    }
    let same = |r: &FileRef, path: &Path| match FileRef::of(path) {
        Ok(now) => now.size == r.size && (r.xxh3.is_none() || now.xxh3 == r.xxh3),
        Err(_) => false,
    };
    m.inputs.iter().all(|i| same(i, Path::new(&i.path)))
        && m.outputs.iter().all(|o| same(o, &dir.join(&o.path)))
}

/// An exclusive lock on an output directory, held for the life of the value (released by the OS even on
/// `kill -9`, since it is an advisory `flock` on an open file).
pub struct DirLock {
    _file: File,
    path: PathBuf,
}

impl DirLock {
    /// Take the lock on `dir` (created if needed) or fail at once with `Error::Locked`.
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        ensure_dir(dir)?;
        let path = dir.join(".sword.lock");
        let mut file = fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .read(true)
            .write(true)
            .open(&path)
            .at(&path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                let mut holder = String::new();
                let _ = file.read_to_string(&mut holder);
                return Err(Error::Locked {
                    path: dir.to_path_buf(),
                    what: format!("held by {}", holder.trim()),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
        file.set_len(0).at(&path)?;
        writeln!(file, "pid {}", std::process::id()).at(&path)?;
        Ok(DirLock { _file: file, path })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

/// Create a directory (and parents), naming it in the error.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).at(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_commits_or_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("a.bin");
        {
            let mut f = AtomicFile::create(&dest).unwrap();
            f.write_all(b"partial").unwrap();
            // dropped without commit
        }
        assert!(!dest.exists());
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
        write_atomic(&dest, |w| w.write_all(b"done")).unwrap();
        assert_eq!(fs::read(&dest).unwrap(), b"done");
    }

    #[test]
    fn dir_lock_is_exclusive_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let a = DirLock::acquire(dir.path()).unwrap();
        assert!(matches!(
            DirLock::acquire(dir.path()),
            Err(Error::Locked { .. })
        ));
        drop(a);
        DirLock::acquire(dir.path()).unwrap();
    }

    #[test]
    fn freshness_follows_inputs_outputs_and_config() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let input = d.join("in.txt");
        fs::write(&input, b"abc").unwrap();
        write_atomic(d.join("out.bin"), |w| w.write_all(b"xyz")).unwrap();
        let cfg = serde_json::json!({"k": 1});
        let mut m = Manifest::new("s");
        m.config = cfg.clone();
        m.inputs.push(FileRef::of(&input).unwrap());
        m.add_outputs(d, &["out.bin"]).unwrap();
        m.write(d).unwrap();
        assert!(is_fresh(d, "s", &cfg));
        assert!(!is_fresh(d, "s", &serde_json::json!({"k": 2})));
        fs::write(&input, b"abd").unwrap();
        assert!(!is_fresh(d, "s", &cfg));
        fs::write(&input, b"abc").unwrap();
        assert!(is_fresh(d, "s", &cfg));
        fs::remove_file(d.join("out.bin")).unwrap();
        assert!(!is_fresh(d, "s", &cfg));
    }

    #[test]
    fn stale_temps_of_dead_processes_go_and_live_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        // pid 1 is always alive; a pid above the kernel's maximum (4194304) never is.
        fs::write(d.join(".a.bin.tmp.1"), b"x").unwrap();
        fs::write(d.join(".b.bin.tmp.999999999"), b"x").unwrap();
        fs::write(d.join("c.bin"), b"x").unwrap();
        assert_eq!(clean_stale_temps(d).unwrap(), 1);
        assert!(d.join(".a.bin.tmp.1").exists());
        assert!(!d.join(".b.bin.tmp.999999999").exists());
        assert!(d.join("c.bin").exists());
    }

    #[test]
    fn check_input_detects_corruption_and_staleness() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        write_atomic(d.join("x.bin"), |w| w.write_all(b"hello")).unwrap();
        assert!(matches!(
            check_input(d, "s", "x.bin", false),
            Err(Error::Stale { .. })
        ));
        let mut m = Manifest::new("s");
        m.add_outputs(d, &["x.bin"]).unwrap();
        m.write(d).unwrap();
        assert_eq!(check_input(d, "s", "x.bin", false).unwrap().size, 5);
        fs::write(d.join("x.bin"), b"hellO").unwrap();
        assert!(matches!(
            check_input(d, "s", "x.bin", false),
            Err(Error::Corrupt { .. })
        ));
        assert!(check_input(d, "s", "x.bin", true).is_ok());
    }
}
