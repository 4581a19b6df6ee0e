//! The run folder's lock: every stage that writes into a run folder holds it, so a second writer (another
//! process, or another thread of this one) is refused at once (exit code 6), and the stage's own writes are
//! followed: its first temporary file clears stale ones, its first output renamed into place removes its old
//! manifest, and the outputs it renamed into place are remembered so that they can be removed again when the
//! stage fails or panics before its new manifest vouches for them.

use super::files::{clean_stale_temps, create_temp, ensure_dir, forget_temp, remove_all, sync_dir};
use super::layout::{self, LOCK_FILE};
use crate::core::error::{Error, IoContext, Result};
use std::collections::BTreeSet;
use std::fs::{self, File};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

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
    /// The lock file, when this process created it: removed again with the last [`DirLock`] (while still
    /// locked), so that a command leaves no lock file behind where there was none.
    created_file: Option<PathBuf>,
    /// The run directory as given, when taking the lock created it: removed again with the last [`DirLock`]
    /// if nothing else was put there (a refused command creates no folder).
    created_dir: Option<PathBuf>,
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
pub(super) fn before_create(dir: &Path) -> Result<()> {
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
            .is_some_and(|n| *n == *layout::manifest_file(&frame.stage))
}

/// Before a rename into a locked run directory by a stage: the first output of the stage to be replaced takes
/// the stage's old manifest with it (removed and the removal made durable first), so that from this moment
/// until the new manifest is written no manifest vouches for a half-replaced set of outputs.
pub(super) fn before_rename(dest: &Path) -> Result<()> {
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
    let old = root.join(layout::manifest_file(&frame.stage));
    match fs::remove_file(&old) {
        Ok(()) => sync_dir(&root),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(Error::io(&old, e)),
    }
    frame.manifest_removed = true;
    Ok(())
}

/// After a rename into a locked run directory by a stage: note the output (or that the stage is finished).
pub(super) fn after_rename(dest: &Path) {
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

/// Open and lock the lock file `path`, or fail at once with [`Error::Locked`] naming the holder. Returns the
/// locked file and whether this call created it.
///
/// A lock file that names this process while no `Held` has it was closed by this process a moment ago and is
/// still held through a copy of its descriptor in a child that another thread is forking (the copy lives
/// until the child's `exec` closes it): that is waited for, up to `OWN_LOCK_WAIT`, instead of refusing our
/// own run folder. A lock taken on a file that its holder unlinked meanwhile (it removes the file it created
/// when it lets go) is let go, and the file opened again.
fn lock_file(path: &Path) -> Result<(File, bool)> {
    let dir = path.parent().unwrap_or(Path::new("."));
    let since = std::time::Instant::now();
    loop {
        let existed = fs::symlink_metadata(path).is_ok();
        let mut file = open_lock(path)?;
        match file.try_lock() {
            Ok(()) => {
                if same_file(&file, path) {
                    return Ok((file, !existed));
                }
                continue;
            }
            Err(fs::TryLockError::WouldBlock) => {
                let holder = holder_of_lock(&mut file);
                if names_this_process(&holder) && since.elapsed() < OWN_LOCK_WAIT {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                    continue;
                }
                return Err(Error::Locked {
                    path: dir.to_path_buf(),
                    what: format!("held by {holder}"),
                });
            }
            Err(fs::TryLockError::Error(e)) => return Err(Error::io(path, e)),
        }
    }
}

/// Whether `path` still names the open file `file` (same device and inode).
fn same_file(file: &File, path: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (file.metadata(), fs::symlink_metadata(path)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (file, path);
        true
    }
}

/// Who holds the lock on `file`, as the refusal names it: `pid N (command)`. The holder writes that into the
/// file just after taking the lock, so an empty file is read again for a moment; a file that still names no
/// one (its holder is not sword, or is between the lock and the write) is looked up in `/proc/locks`, by
/// inode, with the command from `/proc/<pid>/cmdline`.
fn holder_of_lock(file: &mut File) -> String {
    let since = std::time::Instant::now();
    loop {
        let mut text = Vec::new();
        let _ = file.seek(std::io::SeekFrom::Start(0));
        let _ = file.take(256).read_to_end(&mut text);
        let text = String::from_utf8_lossy(&text).trim().to_string();
        if text.starts_with("pid ") {
            return text;
        }
        if since.elapsed() > std::time::Duration::from_millis(200) {
            return proc_holder(file).unwrap_or_else(|| {
                "another process (its lock file names no holder, and /proc/locks could not tell which)"
                    .to_string()
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

/// The holder of the `flock` on `file` from `/proc/locks` (Linux): `pid N (command)`.
fn proc_holder(file: &File) -> Option<String> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        let ino = file.metadata().ok()?.ino();
        let locks = fs::read_to_string("/proc/locks").ok()?;
        // `1: FLOCK  ADVISORY  WRITE 4711 08:01:1234567 0 EOF`: the pid, then major:minor:inode.
        let pid = locks.lines().find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            let at = f.iter().position(|w| *w == "FLOCK")?;
            let pid = f.get(at + 3)?;
            let inode = f.get(at + 4)?.rsplit(':').next()?;
            (inode.parse::<u64>().ok()? == ino).then(|| pid.to_string())
        })?;
        let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        let command: Vec<String> = cmdline
            .split(|b| *b == 0)
            .filter(|a| !a.is_empty())
            .take(2)
            .map(|a| {
                let a = String::from_utf8_lossy(a).into_owned();
                Path::new(&a)
                    .file_name()
                    .map_or(a.clone(), |n| n.to_string_lossy().into_owned())
            })
            .collect();
        Some(format!("pid {pid} ({})", command.join(" ")))
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        None
    }
}

/// How long [`DirLock::acquire`] waits for a lock that this process itself released but that a child being
/// forked still holds (a fork followed by `exec` takes microseconds to milliseconds).
const OWN_LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// The lock file's text (`pid N (command)`) names this process.
fn names_this_process(holder: &str) -> bool {
    holder
        .trim()
        .strip_prefix("pid ")
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|pid| pid.parse::<u32>().ok())
        == Some(std::process::id())
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
        let dir_existed = fs::symlink_metadata(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })
        .is_ok();
        ensure_dir(dir)?;
        let canon = fs::canonicalize(dir).at(dir)?;
        let path = dir.join(LOCK_FILE);
        let undo_dir = || {
            if !dir_existed {
                let _ = fs::remove_dir(dir);
            }
        };
        if let Err(e) = check_writable(dir) {
            undo_dir();
            return Err(e);
        }
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
        let (mut file, created_file) = match lock_file(&path) {
            Ok(f) => f,
            Err(e) => {
                undo_dir();
                return Err(e);
            }
        };
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
            created_file: created_file.then(|| path.clone()),
            created_dir: (!dir_existed).then(|| dir.to_path_buf()),
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

    /// For a stage ([`DirLock::stage`]): the outputs it has renamed into place since it took the lock, as the
    /// paths it wrote them to.
    pub fn committed(&self) -> Vec<PathBuf> {
        if !self.stage {
            return Vec::new();
        }
        let held = held();
        held.iter()
            .find(|h| h.dir == self.dir)
            .and_then(|h| h.frames.last())
            .map(|f| f.committed.clone())
            .unwrap_or_default()
    }

    /// For a stage that failed ([`DirLock::stage`]): remove the outputs it renamed into place since it took
    /// the lock (no manifest vouches for them: its old one went with the first). Returns how many went.
    pub fn remove_outputs(&self) -> usize {
        if !self.stage {
            return 0;
        }
        let committed = {
            let mut held = held();
            let Some(h) = held.iter_mut().find(|h| h.dir == self.dir) else {
                return 0;
            };
            match h.frames.last_mut() {
                Some(f) if !f.finished => std::mem::take(&mut f.committed),
                _ => return 0,
            }
        };
        remove_all(&committed);
        committed.len()
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
            let h = held.remove(i);
            // Unlinked while still locked: a process that opened the file meanwhile finds, once it has the
            // lock, that the name no longer leads to its file, and starts again ([`lock_file`]).
            if let Some(p) = &h.created_file {
                let _ = fs::remove_file(p);
            }
            if let Some(d) = &h.created_dir {
                let _ = fs::remove_dir(d);
            }
            drop(h);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_lock_this_process_released_while_a_child_was_forked_is_waited_for() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(LOCK_FILE);
        // Another open file description of the lock file, locked and naming this process: what a child that
        // is being forked keeps of a lock this process has just released.
        let mut copy = File::create(&path).unwrap();
        copy.lock().unwrap();
        write!(copy, "pid {} (sword extract)", std::process::id()).unwrap();
        let exec = std::thread::spawn(move || {
            std::thread::sleep(std::time::Duration::from_millis(150));
            drop(copy);
        });
        let t0 = std::time::Instant::now();
        let lock = DirLock::acquire(dir.path()).unwrap();
        assert!(t0.elapsed() >= std::time::Duration::from_millis(100));
        exec.join().unwrap();
        drop(lock);
        // Held under another process's name: refused at once.
        let mut other = File::create(&path).unwrap();
        other.lock().unwrap();
        write!(other, "pid {} (sword run)", std::process::id() + 1).unwrap();
        let t0 = std::time::Instant::now();
        let refused = DirLock::acquire(dir.path()).map(|_| ());
        assert!(matches!(refused, Err(Error::Locked { .. })), "{refused:?}");
        assert!(t0.elapsed() < OWN_LOCK_WAIT);
        assert!(names_this_process(&format!("pid {}\n", std::process::id())));
        assert!(!names_this_process(&format!(
            "pid {}0 (sword run)",
            std::process::id()
        )));
        assert!(!names_this_process("garbage"));
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
        let lock = std::thread::spawn(move || {
            let _held = DirLock::acquire(&d).unwrap();
            fs::read_to_string(d.join(LOCK_FILE)).unwrap()
        })
        .join()
        .unwrap();
        assert!(
            lock.starts_with(&format!("pid {} (", std::process::id())),
            "{lock}"
        );
        // The lock file it created went with the lock.
        assert!(!dir.path().join(LOCK_FILE).exists());
    }

    #[test]
    fn a_lock_leaves_the_folder_as_it_found_it() {
        let top = tempfile::tempdir().unwrap();
        // A folder the lock created, and nothing put in it: gone again with the lock.
        let new = top.path().join("new");
        drop(DirLock::acquire(&new).unwrap());
        assert!(!new.exists());
        // With something put in it, it stays; the lock file does not.
        let lock = DirLock::acquire(&new).unwrap();
        fs::write(new.join("out.txt"), b"x").unwrap();
        drop(lock);
        let names: Vec<_> = fs::read_dir(&new)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["out.txt"]);
        // A lock file that was there (a killed run's) stays, as it was found.
        fs::write(new.join(LOCK_FILE), b"pid 1 (sword extract)\n").unwrap();
        drop(DirLock::acquire(&new).unwrap());
        assert!(new.join(LOCK_FILE).exists());
    }

    #[test]
    fn a_holder_that_wrote_no_name_is_found_in_proc_locks() {
        if !Path::new("/proc/locks").exists() {
            eprintln!("no /proc/locks: skipped");
            return;
        }
        let dir = tempfile::tempdir().unwrap();
        let f = File::create(dir.path().join(LOCK_FILE)).unwrap();
        f.lock().unwrap();
        let e = DirLock::acquire(dir.path()).map(|_| ()).unwrap_err();
        assert_eq!(e.exit_code(), 6);
        assert!(
            e.to_string()
                .contains(&format!("held by pid {} (", std::process::id())),
            "{e}"
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
}
