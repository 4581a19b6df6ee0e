//! The run folder's lock: an advisory `flock` on `<dir>/.sword.lock`, so that a second writer (another
//! process, or another [`super::RunDir`] of this one) is refused at once (exit code 6). The lock is owned by
//! the run folder's handle ([`super::RunDir`]), which also follows the writes made under it; no record of
//! held locks is kept anywhere else.

use super::files::{create_temp, ensure_dir, forget_temp};
use super::layout::LOCK_FILE;
use crate::core::error::{Error, IoContext, Result};
use std::fs::{self, File};
use std::io::{Read, Seek, Write};
use std::path::{Path, PathBuf};

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
/// A lock file that names this process is held either by another handle of this process (a descriptor of
/// the file is open here: refused at once, as another process would be) or, when none is, through a copy of
/// a descriptor this process closed a moment ago, in a child that another thread is forking (the copy lives
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
                if names_this_process(&holder) && open_elsewhere_here(&file) {
                    return Err(Error::Locked {
                        path: dir.to_path_buf(),
                        what: format!("held by {holder}, through another handle of this process"),
                    });
                }
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

/// Whether this process has the file `file` is open on open through another descriptor (Linux: looked up in
/// `/proc/self/fd`): a handle of this process holds its lock. Where that cannot be known, `false`.
fn open_elsewhere_here(file: &File) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        use std::os::unix::io::AsRawFd;
        let Ok(me) = file.metadata() else {
            return false;
        };
        let mine = file.as_raw_fd().to_string();
        let Ok(fds) = fs::read_dir("/proc/self/fd") else {
            return false;
        };
        fds.flatten().any(|e| {
            e.file_name() != *mine
                && fs::metadata(e.path()).is_ok_and(|m| m.dev() == me.dev() && m.ino() == me.ino())
        })
    }
    #[cfg(not(unix))]
    {
        let _ = file;
        false
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
/// `<dir>/.sword.lock`, released by the OS even on `kill -9`. A [`super::RunDir`] holds one; a second
/// process (another `sword extract`, a `sword run`) or a second handle in this process is refused at once
/// with [`Error::Locked`] (exit code 6).
///
/// Within one process the lock is taken once, by the handle of the command (`sword run` opens the folder and
/// hands the same handle to every stage it runs); nothing takes it twice.
pub struct DirLock {
    path: PathBuf,
    _file: File,
    /// The lock file, when this value created it: removed again with the lock (while still locked), so that
    /// a command leaves no lock file behind where there was none.
    created_file: Option<PathBuf>,
    /// The run directory as given, when taking the lock created it: removed again with the lock if nothing
    /// else was put there (a refused command creates no folder).
    created_dir: Option<PathBuf>,
}

impl DirLock {
    /// Take the lock on `dir` (created if needed) or fail at once: [`Error::Locked`] when another process or
    /// another handle of this one holds it, an I/O error (exit 4) naming `dir` when it cannot be written into.
    pub fn acquire(dir: &Path) -> Result<DirLock> {
        let dir_existed = fs::symlink_metadata(if dir.as_os_str().is_empty() {
            Path::new(".")
        } else {
            dir
        })
        .is_ok();
        ensure_dir(dir)?;
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
        Ok(DirLock {
            created_file: created_file.then(|| path.clone()),
            created_dir: (!dir_existed).then(|| dir.to_path_buf()),
            path,
            _file: file,
        })
    }

    /// The lock file.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for DirLock {
    fn drop(&mut self) {
        // Unlinked while still locked: a process that opened the file meanwhile finds, once it has the lock,
        // that the name no longer leads to its file, and starts again ([`lock_file`]).
        if let Some(p) = &self.created_file {
            let _ = fs::remove_file(p);
        }
        if let Some(d) = &self.created_dir {
            let _ = fs::remove_dir(d);
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
        // A child holding the lock file's lock while the file names this process: what a child that is being
        // forked keeps of a lock this process has just released (no descriptor of it is open here any more).
        std::fs::write(&path, format!("pid {} (sword extract)", std::process::id())).unwrap();
        let child = std::process::Command::new("flock")
            .arg(&path)
            .args(["sleep", "0.4"])
            .spawn();
        let Ok(mut child) = child else {
            eprintln!("no flock(1): skipped");
            return;
        };
        // Until the child holds it (it waits for the moments this loop holds it).
        loop {
            let f = File::open(&path).unwrap();
            match f.try_lock() {
                Ok(()) => drop(f),
                Err(_) => break,
            }
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let t0 = std::time::Instant::now();
        let lock = DirLock::acquire(dir.path()).unwrap();
        assert!(t0.elapsed() >= std::time::Duration::from_millis(100));
        child.wait().unwrap();
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
    fn dir_lock_is_exclusive_across_threads_and_handles() {
        let dir = tempfile::tempdir().unwrap();
        let a = DirLock::acquire(dir.path()).unwrap();
        // A second lock in this process, from this thread or another, is refused at once (no wait for a
        // forked child: the descriptor of the holder is open here).
        let t0 = std::time::Instant::now();
        let again = DirLock::acquire(dir.path()).map(|_| ());
        assert!(matches!(again, Err(Error::Locked { .. })), "{again:?}");
        let msg = again.unwrap_err().to_string();
        assert!(msg.contains("another handle of this process"), "{msg}");
        let d = dir.path().to_path_buf();
        let other = std::thread::spawn(move || DirLock::acquire(&d).map(|_| ()))
            .join()
            .unwrap();
        assert!(matches!(other, Err(Error::Locked { .. })), "{other:?}");
        assert!(t0.elapsed() < OWN_LOCK_WAIT);
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
