//! Artifacts: atomic writes, content hashes and manifests.
//!
//! Every file a stage produces is written to a temporary file in the same directory (an unguessable, marked
//! name made with `O_EXCL | O_NOFOLLOW`), flushed, fsynced and renamed over its final name, so a reader never
//! sees half a file and a crash (even `kill -9`) leaves at most a stray marked temporary file that the next
//! stage writing there removes. Every stage that writes a run directory holds its lock ([`DirLock`]), taken
//! once per process. After its outputs, a stage writes
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
use std::collections::{BTreeMap, BTreeSet};
use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// Version of the crate that wrote an artifact.
pub const CRATE_VERSION: &str = env!("CARGO_PKG_VERSION");

/// Git commit the binary was built from (`unknown` outside a checkout).
pub const GIT_COMMIT: &str = match option_env!("SWORD_GIT_COMMIT") {
    Some(c) => c,
    None => "unknown",
};

/// What marks a temporary file as one this tool made: its name is `.<name>.<random>.sword.tmp.<pid>`
/// ([`parse_temp_name`]), e.g. `.triples.parquet.Xk3q9ZbT0a.sword.tmp.4711`.
pub const TEMP_MARK: &str = ".sword.tmp.";

/// Random alphanumerics in a temporary file's name (62¹⁰ ≈ 8·10¹⁷ names: not guessable in advance).
const TEMP_RAND: usize = 10;

/// The destination name and writer's pid of a temporary file this tool made (`.<name>.<10 alphanumerics>
/// .sword.tmp.<pid>`), or `None` for every other name — in particular the `.<name>.tmp.<pid>` files of other
/// tools (and of sword before 0.1.0's issue 24), which are never touched.
pub fn parse_temp_name(name: &str) -> Option<(&str, u32)> {
    let rest = name.strip_prefix('.')?;
    let (head, pid) = rest.rsplit_once(TEMP_MARK)?;
    if pid.is_empty() || !pid.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let pid = pid.parse().ok()?;
    let (target, rand) = head.rsplit_once('.')?;
    let marked = !target.is_empty()
        && rand.len() == TEMP_RAND
        && rand.bytes().all(|b| b.is_ascii_alphanumeric());
    marked.then_some((target, pid))
}

/// Create a new file at `path`: `O_CREAT | O_EXCL` (fails on any existing name, a symlink or a dangling one
/// included, so it never writes through a planted link), `O_NOFOLLOW`, `O_CLOEXEC`, mode `0666` less the
/// umask (as `File::create`).
fn open_new(path: &Path) -> std::io::Result<File> {
    let mut o = fs::OpenOptions::new();
    o.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
            .mode(0o666);
    }
    o.open(path)
}

/// Temporary files this process is writing (by file name): never stale, whatever their pid says.
static LIVE_TEMPS: Mutex<BTreeSet<OsString>> = Mutex::new(BTreeSet::new());

fn live_temps() -> MutexGuard<'static, BTreeSet<OsString>> {
    LIVE_TEMPS.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A new temporary file for `name` in `dir` (`.<name>.<random>.sword.tmp.<pid>`, created as [`open_new`];
/// another name is drawn if one exists). It is registered as live until [`forget_temp`].
fn create_temp(dir: &Path, name: &str) -> std::io::Result<(File, PathBuf)> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    let named = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(&format!("{TEMP_MARK}{}", std::process::id()))
        .rand_bytes(TEMP_RAND)
        .make_in(dir, open_new)?;
    let (file, path) = named.into_parts();
    let path = path.keep().map_err(|e| e.error)?;
    if let Some(n) = path.file_name() {
        live_temps().insert(n.to_os_string());
    }
    Ok((file, path))
}

fn forget_temp(path: &Path) {
    if let Some(n) = path.file_name() {
        live_temps().remove(n);
    }
}

/// A file being written atomically: bytes go to a temporary file beside the destination
/// (`.<name>.<random>.sword.tmp.<pid>`, created with `O_EXCL | O_NOFOLLOW`); `commit` renames it into place.
/// Dropping without `commit` removes the temporary file.
///
/// Inside a directory locked by a stage ([`DirLock::stage`]), the first temporary file of a directory clears
/// the stale temporary files there ([`clean_stale_temps`]) — by then the stage has accepted its input — and the
/// first rename removes the stage's old manifest, so a stage whose outputs are half replaced is never taken
/// as fresh ([`is_fresh`]) nor vouched for ([`check_input`]).
pub struct AtomicFile {
    dest: PathBuf,
    tmp: PathBuf,
    writer: Option<BufWriter<File>>,
    /// Renamed into place (else dropping removes the temporary file, a panic inside `commit` included).
    committed: bool,
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
        before_create(&dir)?;
        let (file, tmp) = create_temp(&dir, &name).at(&dest)?;
        Ok(AtomicFile {
            dest,
            tmp,
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
            committed: false,
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
            before_rename(&self.dest)?;
            crash_point(&format!(
                "before-rename:{}",
                self.dest.file_name().unwrap_or_default().to_string_lossy()
            ));
            fs::rename(&self.tmp, &self.dest).at(&self.dest)
        })();
        renamed?;
        self.committed = true;
        forget_temp(&self.tmp);
        after_rename(&self.dest);
        if let Some(dir) = self.dest.parent() {
            sync_dir(dir);
        }
        Ok(())
    }
}

/// fsync a directory (makes a rename or an unlink durable); not every filesystem supports it: best effort.
fn sync_dir(dir: &Path) {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
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
        if !self.committed {
            self.writer = None;
            let _ = fs::remove_file(&self.tmp);
            forget_temp(&self.tmp);
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

/// Crash-safety testing hook. When the environment variable `SWORD_CRASH_AT` equals `name`, the process
/// aborts on the spot (no destructors, no cleanup — as `kill -9` would leave it); when `SWORD_PANIC_AT` equals
/// `name`, it panics there (a bug's panic: destructors run while it unwinds). Points are named
/// `before-rename:<file>` (inside every atomic write) and `after-stage:<stage>` (in `sword run`).
pub fn crash_point(name: &str) {
    if std::env::var_os("SWORD_CRASH_AT").is_some_and(|at| at == name) {
        eprintln!("sword: SWORD_CRASH_AT={name}: aborting as if killed");
        std::process::abort();
    }
    if std::env::var_os("SWORD_PANIC_AT").is_some_and(|at| at == name) {
        panic!("SWORD_PANIC_AT={name}: injected panic");
    }
}

/// True when `pid` names a running process other than this one. Without `/proc` that cannot be known and
/// the writer is taken as gone: [`clean_stale_temps`] runs only under the directory's lock, which every
/// writer of a run directory holds, so no other writer can be active there.
fn pid_alive(pid: u32) -> bool {
    pid != std::process::id() && Path::new("/proc").join(pid.to_string()).exists()
}

/// Remove the temporary files in `dir` that this tool made ([`parse_temp_name`]: other `.*.tmp.*` files are
/// never touched) and whose writer is gone: not one this process is writing, and its pid not a running
/// process (a pid equal to ours but not ours to write is a killed run's in a container that reused the pid).
/// Only regular files go (never a symlink or a directory of that name). Call it with the lock of `dir`'s run
/// directory held, after the stage has accepted its input (an [`AtomicFile`] does both). Returns how many
/// went.
pub fn clean_stale_temps(dir: &Path) -> Result<usize> {
    let mut n = 0;
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
        Err(e) => return Err(Error::io(dir, e)),
    };
    for entry in entries {
        let entry = entry.at(dir)?;
        let os_name = entry.file_name();
        let Some((_, pid)) = os_name.to_str().and_then(parse_temp_name) else {
            continue;
        };
        if live_temps().contains(&os_name) || pid_alive(pid) {
            continue;
        }
        let is_file = fs::symlink_metadata(entry.path()).is_ok_and(|m| m.file_type().is_file());
        if !is_file {
            continue;
        }
        match fs::remove_file(entry.path()) {
            Ok(()) => n += 1,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(entry.path(), e)),
        }
    }
    if n > 0 {
        crate::progress::log(format!(
            "removed {n} temporary file(s) left in {} by an interrupted run",
            dir.display()
        ));
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
        let never = std::sync::atomic::AtomicBool::new(false);
        Ok(FileRef::of_unless(path, &never)?.expect("never stopped"))
    }

    /// [`FileRef::of`], giving up (`Ok(None)`) between two 1 MiB reads once `stop` is set: a stage that hashes
    /// its input beside its work (extract) sets it when the work fails, so that a library caller is not left
    /// with a thread reading the rest of a 140 GB dump for minutes.
    pub fn of_unless(path: &Path, stop: &std::sync::atomic::AtomicBool) -> Result<Option<FileRef>> {
        let mut f = File::open(path).at(path)?;
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        let mut buf = vec![0u8; 1 << 20];
        let mut size = 0u64;
        loop {
            if stop.load(std::sync::atomic::Ordering::Relaxed) {
                return Ok(None);
            }
            let n = f.read(&mut buf).at(path)?;
            if n == 0 {
                break;
            }
            h.update(&buf[..n]);
            size += n as u64;
        }
        Ok(Some(FileRef {
            path: path.to_string_lossy().into_owned(),
            size,
            xxh3: Some(format!("{:032x}", h.digest128())),
        }))
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

/// Name of the lock file in a run directory.
pub const LOCK_FILE: &str = ".sword.lock";

/// A run directory's lock as this process holds it: one `flock` on one open file, shared by every
/// [`DirLock`] of this process on that directory (a second `flock` through another open file description of
/// the same file would block against the first), owned by the thread that took it.
struct Held {
    /// The run directory, canonical.
    dir: PathBuf,
    owner: std::thread::ThreadId,
    /// Live [`DirLock`] values on it; the lock goes with the last.
    refs: usize,
    _file: File,
    /// The stages running in it, innermost last (`sword run` → extract; `sword embed` → graph, walks, train).
    frames: Vec<Frame>,
    /// Directories (canonical) whose stale temporary files were cleared under this lock.
    cleaned: BTreeSet<PathBuf>,
}

/// One stage writing into a locked run directory.
struct Frame {
    stage: String,
    /// `<stage>.manifest.json` was removed before the first output was replaced.
    manifest_removed: bool,
    /// The stage's new manifest is in place: its outputs are vouched for.
    finished: bool,
    /// Outputs renamed into place so far (removed again if the stage panics before its manifest).
    committed: Vec<PathBuf>,
}

static HELD: Mutex<Vec<Held>> = Mutex::new(Vec::new());

fn held() -> MutexGuard<'static, Vec<Held>> {
    HELD.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The canonical form of `dir` (`""` is the current directory), if it exists.
fn canonical(dir: &Path) -> Option<PathBuf> {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    fs::canonicalize(dir).ok()
}

/// The held lock whose run directory is `dir` or contains it (the innermost, if locks nest).
fn holder_of<'a>(held: &'a mut [Held], dir: &Path) -> Option<&'a mut Held> {
    held.iter_mut()
        .filter(|h| dir.starts_with(&h.dir))
        .max_by_key(|h| h.dir.as_os_str().len())
}

/// Before the first temporary file in `dir` under a held lock: clear its stale temporary files.
fn before_create(dir: &Path) -> Result<()> {
    let Some(canon) = canonical(dir) else {
        return Ok(());
    };
    let first = {
        let mut held = held();
        match holder_of(&mut held, &canon) {
            Some(h) => h.cleaned.insert(canon),
            None => false,
        }
    };
    if first {
        clean_stale_temps(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })?;
    }
    Ok(())
}

/// Is `dest` the manifest of the innermost stage `frame` of the run directory `root`?
fn is_manifest_of(frame: &Frame, root: &Path, parent: &Path, dest: &Path) -> bool {
    parent == root
        && dest
            .file_name()
            .is_some_and(|n| *n == *format!("{}.manifest.json", frame.stage))
}

/// Before a rename into a locked run directory by a stage: the first output of the stage to be replaced takes
/// the stage's old manifest with it (removed and the removal made durable first), so that from this moment
/// until the new manifest is written no manifest vouches for a half-replaced set of outputs.
fn before_rename(dest: &Path) -> Result<()> {
    let Some(parent) = dest.parent().and_then(canonical) else {
        return Ok(());
    };
    let mut held = held();
    let Some(h) = holder_of(&mut held, &parent) else {
        return Ok(());
    };
    let root = h.dir.clone();
    let Some(frame) = h.frames.last_mut() else {
        return Ok(());
    };
    if frame.manifest_removed || is_manifest_of(frame, &root, &parent, dest) {
        return Ok(());
    }
    let old = Manifest::path_in(&root, &frame.stage);
    match fs::remove_file(&old) {
        Ok(()) => sync_dir(&root),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&old, e)),
    }
    frame.manifest_removed = true;
    Ok(())
}

/// After a rename into a locked run directory by a stage: note the output (or that the stage is finished).
fn after_rename(dest: &Path) {
    let Some(parent) = dest.parent().and_then(canonical) else {
        return;
    };
    let mut held = held();
    let Some(h) = holder_of(&mut held, &parent) else {
        return;
    };
    let root = h.dir.clone();
    if let Some(frame) = h.frames.last_mut() {
        if is_manifest_of(frame, &root, &parent, dest) {
            frame.finished = true;
        } else {
            frame.committed.push(dest.to_path_buf());
        }
    }
}

/// Open the lock file: created if missing, never through a symlink (`O_NOFOLLOW`), and only a regular file
/// with one link (a hard link planted there would have the holder's pid written into its other name).
fn open_lock(path: &Path) -> Result<File> {
    let mut o = fs::OpenOptions::new();
    o.read(true).write(true).create(true).truncate(false);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        o.custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC | libc::O_NONBLOCK)
            .mode(0o666);
    }
    let refuse = |what: &str| {
        Error::bad_input(
            path,
            format!("{what}; the lock file of a run directory must be a regular file: remove it"),
        )
    };
    let file = match o.open(path) {
        Ok(f) => f,
        #[cfg(unix)]
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return Err(refuse("is a symbolic link"));
        }
        Err(e) => return Err(Error::io(path, e)),
    };
    let meta = file.metadata().at(path)?;
    if !meta.is_file() {
        return Err(refuse("is not a regular file"));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.nlink() > 1 {
            return Err(refuse("has other hard links"));
        }
    }
    Ok(file)
}

/// Fail at once with exit code 4 naming `dir` when no file can be created in it (a read-only mount, a
/// directory without write permission): the check a stage makes before it reads its input.
fn check_writable(dir: &Path) -> Result<()> {
    match create_temp(dir, "sword-write-check") {
        Ok((file, path)) => {
            drop(file);
            forget_temp(&path);
            let _ = fs::remove_file(&path);
            Ok(())
        }
        Err(e) => Err(Error::io(
            dir,
            std::io::Error::new(
                e.kind(),
                format!("cannot write into this run directory ({e})"),
            ),
        )),
    }
}

/// An exclusive lock on a run directory, held for the life of the value: an advisory `flock` on
/// `<dir>/.sword.lock`, released by the OS even on `kill -9`. Every stage that writes into a run directory
/// takes it ([`DirLock::stage`]); a second process (another `sword extract`, a `sword run`) is refused at once
/// with [`Error::Locked`] (exit code 6).
///
/// Within one process the lock is taken once and shared: `sword run` holds it, and the stages it runs take it
/// again from the same thread at no cost. Another thread of the process is refused like another process.
pub struct DirLock {
    /// The run directory, canonical (the key of its [`Held`]).
    dir: PathBuf,
    path: PathBuf,
    stage: bool,
}

impl DirLock {
    /// Take the lock on `dir` (created if needed) or fail at once: [`Error::Locked`] when another process or
    /// thread holds it, an I/O error (exit 4) naming `dir` when it cannot be written into.
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        DirLock::take(dir, None)
    }

    /// [`DirLock::acquire`] for the stage `stage`, which then writes into `dir`: its first temporary file in a
    /// directory clears the stale ones there, its first output renamed into place removes its old manifest,
    /// and if it panics before writing its new manifest, the outputs it renamed into place are removed again
    /// while the panic unwinds (a kill leaves them, unvouched: the next stage refuses them and `sword run`
    /// redoes the stage).
    pub fn stage(dir: &Path, stage: &str) -> Result<DirLock> {
        DirLock::take(dir, Some(stage))
    }

    fn take(dir: &Path, stage: Option<&str>) -> Result<DirLock> {
        ensure_dir(dir)?;
        let canon = fs::canonicalize(dir).at(dir)?;
        let path = dir.join(LOCK_FILE);
        check_writable(dir)?;
        let frame = || {
            stage.map(|s| Frame {
                stage: s.to_string(),
                manifest_removed: false,
                finished: false,
                committed: Vec::new(),
            })
        };
        let me = std::thread::current().id();
        let mut held = held();
        if let Some(h) = held.iter_mut().find(|h| h.dir == canon) {
            if h.owner != me {
                return Err(Error::Locked {
                    path: dir.to_path_buf(),
                    what: format!(
                        "held by another thread of this process, pid {}",
                        std::process::id()
                    ),
                });
            }
            h.refs += 1;
            h.frames.extend(frame());
            return Ok(DirLock {
                dir: canon,
                path,
                stage: stage.is_some(),
            });
        }
        let mut file = open_lock(&path)?;
        match file.try_lock() {
            Ok(()) => {}
            Err(fs::TryLockError::WouldBlock) => {
                let mut holder = Vec::new();
                let _ = (&mut file).take(256).read_to_end(&mut holder);
                return Err(Error::Locked {
                    path: dir.to_path_buf(),
                    what: format!("held by {}", String::from_utf8_lossy(&holder).trim()),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(Error::io(&path, e)),
        }
        let command: Vec<String> = std::env::args()
            .take(2)
            .map(|a| {
                Path::new(&a)
                    .file_name()
                    .map_or(a.clone(), |n| n.to_string_lossy().into_owned())
            })
            .collect();
        file.set_len(0).at(&path)?;
        writeln!(file, "pid {} ({})", std::process::id(), command.join(" ")).at(&path)?;
        held.push(Held {
            dir: canon.clone(),
            owner: me,
            refs: 1,
            _file: file,
            frames: frame().into_iter().collect(),
            cleaned: BTreeSet::new(),
        });
        Ok(DirLock {
            dir: canon,
            path,
            stage: stage.is_some(),
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        let mut held = held();
        let Some(i) = held.iter().position(|h| h.dir == self.dir) else {
            return;
        };
        let h = &mut held[i];
        if self.stage {
            if let Some(f) = h.frames.pop() {
                if std::thread::panicking() && !f.finished && !f.committed.is_empty() {
                    eprintln!(
                        "sword: {} panicked before its manifest was written: removing the {} output(s) it \
                         had put in place",
                        f.stage,
                        f.committed.len()
                    );
                    remove_all(&f.committed);
                }
            }
        }
        h.refs -= 1;
        if h.refs == 0 {
            held.remove(i);
        }
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
    fn hashing_gives_up_once_told_to_and_otherwise_hashes_the_whole_file() {
        use std::sync::atomic::AtomicBool;
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("f");
        let bytes: Vec<u8> = (0..(3u32 << 20)).map(|i| (i * 7 % 251) as u8).collect();
        std::fs::write(&p, &bytes).unwrap();
        assert_eq!(
            FileRef::of_unless(&p, &AtomicBool::new(true)).unwrap(),
            None
        );
        let f = FileRef::of_unless(&p, &AtomicBool::new(false))
            .unwrap()
            .unwrap();
        assert_eq!(f.size, bytes.len() as u64);
        let want = format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&bytes));
        assert_eq!(f.xxh3.as_deref(), Some(want.as_str()));
        assert_eq!(FileRef::of(&p).unwrap(), f);
    }

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
    fn dir_lock_is_exclusive_across_threads_and_shared_within_one() {
        let dir = tempfile::tempdir().unwrap();
        let a = DirLock::acquire(dir.path()).unwrap();
        // The same thread (a stage inside `sword run`) shares the lock it holds.
        let b = DirLock::stage(dir.path(), "s").unwrap();
        let d = dir.path().to_path_buf();
        let other = std::thread::spawn(move || DirLock::acquire(&d).map(|_| ()))
            .join()
            .unwrap();
        assert!(matches!(other, Err(Error::Locked { .. })), "{other:?}");
        drop(b);
        let d = dir.path().to_path_buf();
        let other = std::thread::spawn(move || DirLock::acquire(&d).map(|_| ()))
            .join()
            .unwrap();
        assert!(
            matches!(other, Err(Error::Locked { .. })),
            "still held by a"
        );
        drop(a);
        let d = dir.path().to_path_buf();
        std::thread::spawn(move || DirLock::acquire(&d).map(|_| ()))
            .join()
            .unwrap()
            .unwrap();
        let lock = fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert!(
            lock.starts_with(&format!("pid {} (", std::process::id())),
            "{lock}"
        );
    }

    #[test]
    fn lock_file_is_never_a_symlink_or_a_hard_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, b"precious").unwrap();
        let run = dir.path().join("run");
        fs::create_dir(&run).unwrap();
        std::os::unix::fs::symlink(&victim, run.join(LOCK_FILE)).unwrap();
        let e = DirLock::acquire(&run).map(|_| ()).unwrap_err();
        assert!(e.to_string().contains("symbolic link"), "{e}");
        fs::remove_file(run.join(LOCK_FILE)).unwrap();
        fs::hard_link(&victim, run.join(LOCK_FILE)).unwrap();
        let e = DirLock::acquire(&run).map(|_| ()).unwrap_err();
        assert!(e.to_string().contains("hard links"), "{e}");
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
    }

    #[test]
    fn temp_names_are_marked_unpredictable_and_parsed_strictly() {
        let dir = tempfile::tempdir().unwrap();
        let (_f1, p1) = create_temp(dir.path(), "a.bin").unwrap();
        let (_f2, p2) = create_temp(dir.path(), "a.bin").unwrap();
        let n1 = p1.file_name().unwrap().to_str().unwrap().to_string();
        let n2 = p2.file_name().unwrap().to_str().unwrap().to_string();
        assert_ne!(n1, n2);
        assert_eq!(parse_temp_name(&n1), Some(("a.bin", std::process::id())));
        forget_temp(&p1);
        forget_temp(&p2);
        for foreign in [
            ".a.bin.tmp.123",
            ".sword.tmp.5",
            "a.bin.Xk3q9ZbT0a.sword.tmp.5",
            "..Xk3q9ZbT0a.sword.tmp.5",
            ".a.bin.Xk3q9ZbT0.sword.tmp.5",
            ".a.bin.Xk3q9Zb-0a.sword.tmp.5",
            ".a.bin.Xk3q9ZbT0a.sword.tmp.",
            ".a.bin.Xk3q9ZbT0a.sword.tmp.5x",
        ] {
            assert_eq!(parse_temp_name(foreign), None, "{foreign}");
        }
        assert_eq!(
            parse_temp_name(".x.y.Xk3q9ZbT0a.sword.tmp.77"),
            Some(("x.y", 77))
        );
    }

    #[test]
    fn new_files_are_never_opened_through_a_symlink() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, b"precious").unwrap();
        let link = dir.path().join(".x.Xk3q9ZbT0a.sword.tmp.1");
        std::os::unix::fs::symlink(&victim, &link).unwrap();
        let e = open_new(&link).unwrap_err();
        assert_eq!(e.kind(), std::io::ErrorKind::AlreadyExists);
        let dangling = dir.path().join("dangling");
        std::os::unix::fs::symlink(dir.path().join("nowhere"), &dangling).unwrap();
        assert!(open_new(&dangling).is_err());
        assert!(!dir.path().join("nowhere").exists());
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        // Atomic files are created with the usual permissions (0666 less the umask), not tempfile's 0600.
        write_atomic(dir.path().join("p.bin"), |w| w.write_all(b"x")).unwrap();
        let probe = dir.path().join("probe");
        File::create(&probe).unwrap();
        use std::os::unix::fs::PermissionsExt;
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir.path().join("p.bin")), mode(&probe));
    }

    #[test]
    fn first_rename_of_a_stage_removes_its_old_manifest_and_a_panic_its_new_outputs() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let write_stage = |bytes: &[u8]| {
            let _lock = DirLock::stage(d, "s").unwrap();
            write_atomic(d.join("one.bin"), |w| w.write_all(bytes)).unwrap();
            write_atomic(d.join("two.bin"), |w| w.write_all(bytes)).unwrap();
            let mut m = Manifest::new("s");
            m.add_outputs(d, &["one.bin", "two.bin"]).unwrap();
            m.write(d).unwrap();
        };
        write_stage(b"old");
        let cfg = serde_json::Value::Null;
        assert!(is_fresh(d, "s", &cfg));
        // A rerun that replaces one output and stops: its old manifest went with the first rename.
        {
            let _lock = DirLock::stage(d, "s").unwrap();
            write_atomic(d.join("one.bin"), |w| w.write_all(b"new")).unwrap();
            assert!(!Manifest::path_in(d, "s").exists());
        }
        assert!(!is_fresh(d, "s", &cfg));
        assert!(matches!(
            check_input(d, "s", "two.bin", false),
            Err(Error::Stale { .. })
        ));
        write_stage(b"old");
        // A panic after one output: while it unwinds, the new output goes too (nothing vouches for it).
        let d2 = d.to_path_buf();
        let r = std::thread::spawn(move || {
            let _lock = DirLock::stage(&d2, "s").unwrap();
            write_atomic(d2.join("one.bin"), |w| w.write_all(b"new")).unwrap();
            panic!("a bug");
        })
        .join();
        assert!(r.is_err());
        assert!(!d.join("one.bin").exists());
        assert!(!Manifest::path_in(d, "s").exists());
        assert!(matches!(
            check_input(d, "s", "two.bin", false),
            Err(Error::Stale { .. })
        ));
        // The lock went with the panicking thread.
        drop(DirLock::acquire(d).unwrap());
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
    fn stale_temps_of_dead_processes_go_and_live_and_foreign_ones_stay() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let me = std::process::id();
        // pid 1 is always alive; a pid above the kernel's maximum (4194304) never is.
        let alive = ".a.bin.Xk3q9ZbT0a.sword.tmp.1";
        let dead = ".b.bin.Xk3q9ZbT0a.sword.tmp.999999999";
        let reused = format!(".c.bin.Xk3q9ZbT0a.sword.tmp.{me}");
        for n in [alive, dead, &reused, ".d.bin.tmp.999999999", "e.bin"] {
            fs::write(d.join(n), b"x").unwrap();
        }
        let victim = d.join("victim");
        fs::write(&victim, b"precious").unwrap();
        let link = ".f.bin.Xk3q9ZbT0a.sword.tmp.999999999";
        std::os::unix::fs::symlink(&victim, d.join(link)).unwrap();
        fs::create_dir(d.join(".g.bin.Xk3q9ZbT0a.sword.tmp.999999999")).unwrap();
        // This process's own file in progress, whose pid is ours: live.
        let mut ours = AtomicFile::create(d.join("h.bin")).unwrap();
        ours.write_all(b"h").unwrap();
        assert_eq!(clean_stale_temps(d).unwrap(), 2);
        assert!(d.join(alive).exists());
        assert!(!d.join(dead).exists());
        assert!(!d.join(&reused).exists(), "a pid reused in a container");
        assert!(d.join(".d.bin.tmp.999999999").exists(), "foreign");
        assert!(d.join("e.bin").exists());
        assert!(
            fs::symlink_metadata(d.join(link)).is_ok(),
            "not a file of ours"
        );
        assert!(d.join(".g.bin.Xk3q9ZbT0a.sword.tmp.999999999").is_dir());
        assert_eq!(fs::read(&victim).unwrap(), b"precious");
        ours.commit().unwrap();
        assert_eq!(fs::read(d.join("h.bin")).unwrap(), b"h");
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
