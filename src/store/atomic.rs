//! Atomic files: every file a stage produces is written to a temporary file in the same directory (an
//! unguessable, marked name made with `O_EXCL | O_NOFOLLOW`, see [`super::files`]), flushed, fsynced and
//! renamed over its final name, so a reader never sees half a file and a crash (even `kill -9`) leaves at most
//! a stray marked temporary file that the next stage writing there removes.
//!
//! A file written into a run folder comes from the folder's handle ([`super::RunDir::create`]) and tells it
//! what happened (the first rename of a stage removes its old manifest; every rename is remembered, so that
//! the outputs of a stage that fails can be removed again). [`AtomicFile::create`] and [`write_atomic`] are
//! for files outside any run folder (a synthetic dump, an answers file named on the command line).

use super::files::{create_temp, forget_temp, remove_all, sync_dir};
use crate::core::error::{Error, IoContext, Result};
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What a file written into a run folder is to the folder's handle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    /// An output of the command.
    Output,
    /// The manifest of the stage writing now: renaming it into place finishes the stage.
    Manifest,
}

/// What went into a file through [`AtomicFile`]'s `write`: its size and the xxh3-128 of its bytes, as
/// [`super::FileRef::of`] would hash the finished file. The run folder's handle keeps it for the manifest, so
/// that a stage's outputs are not read back to be hashed (train's `embeddings.w2v` and `.npy` were read again
/// after being written: ≈ 19 ms of the stage's serial tail on the 400 k-line dump's walks).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Written {
    pub size: u64,
    pub xxh3: u128,
}

/// The run folder's handle as a file written into it sees it ([`super::RunDir`]): told before and after the
/// file is renamed into place.
pub trait Follow: Send + Sync {
    /// Before `dest` is renamed into place (an error stops the rename).
    fn before_rename(&self, role: Role) -> Result<()>;
    /// After `dest` was renamed into place, holding the bytes `written` says.
    fn after_rename(&self, dest: &Path, role: Role, written: Written);
}

/// A file being written atomically: bytes go to a temporary file beside the destination
/// (`.<name>.<random>.sword.tmp.<pid>`, created with `O_EXCL | O_NOFOLLOW`); `commit` renames it into place.
/// Dropping without `commit` removes the temporary file.
///
/// Made by a run folder's handle ([`super::RunDir::create`]), the first temporary file of a directory clears the
/// stale temporary files there — by then the stage has accepted its input — and the first rename of a stage
/// removes its old manifest, so a stage whose outputs are half replaced is never taken as fresh nor vouched
/// for.
pub struct AtomicFile {
    /// The run folder it is written into, and what it is to it.
    run: Option<(Arc<dyn Follow>, Role)>,
    dest: PathBuf,
    tmp: PathBuf,
    writer: Option<BufWriter<File>>,
    /// Renamed into place (else dropping removes the temporary file, a panic inside `commit` included).
    committed: bool,
    /// Flushed and fsynced by [`AtomicFile::sync`], nothing written since: `commit` need not fsync again.
    synced: bool,
    /// The bytes accepted by `write` so far, hashed in order (the file is only ever appended to), for a file
    /// of a run folder only: the handle keeps the hash for the manifest; nothing needs it for a file written
    /// anywhere else (a synthetic dump, a shard's part), so none is computed there. Boxed: the streaming state
    /// is ≈ 600 bytes, and files are moved around in enums.
    hash: Option<Box<xxhash_rust::xxh3::Xxh3>>,
    size: u64,
}

impl AtomicFile {
    /// Start writing `dest`, a file outside any run folder (inside one, [`super::RunDir::create`]). The parent
    /// directory must exist.
    pub fn create(dest: impl AsRef<Path>) -> Result<AtomicFile> {
        AtomicFile::create_in(dest.as_ref().to_path_buf(), None)
    }

    pub(super) fn create_in(
        dest: PathBuf,
        run: Option<(Arc<dyn Follow>, Role)>,
    ) -> Result<AtomicFile> {
        let name = dest
            .file_name()
            .ok_or_else(|| Error::bad_input(&dest, "output path has no file name"))?
            .to_string_lossy()
            .into_owned();
        let dir = dest.parent().map(Path::to_path_buf).unwrap_or_default();
        let (file, tmp) = create_temp(&dir, &name).at(&dest)?;
        Ok(AtomicFile {
            dest,
            tmp,
            writer: Some(BufWriter::with_capacity(1 << 20, file)),
            committed: false,
            synced: false,
            hash: run
                .is_some()
                .then(|| Box::new(xxhash_rust::xxh3::Xxh3::new())),
            run,
            size: 0,
        })
    }

    /// The size and hash of the bytes written so far (of the whole file, once it is finished); `None` for a
    /// file outside any run folder, which is not hashed.
    pub fn written(&self) -> Option<Written> {
        self.hash.as_ref().map(|h| Written {
            size: self.size,
            xxh3: h.digest128(),
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
        w.get_ref().sync_all().at(&self.dest)?;
        self.synced = true;
        Ok(())
    }

    /// Flush, fsync, rename into place and fsync the directory. On failure (a full disk while flushing) the
    /// temporary file is removed: nothing of it stays behind.
    pub fn commit(self) -> Result<()> {
        let dir = self.dest.parent().map(Path::to_path_buf);
        self.commit_renamed()?;
        if let Some(dir) = dir {
            sync_dir(&dir);
        }
        Ok(())
    }

    /// [`AtomicFile::commit`] but for the directory's fsync, which the caller owes (one for several files).
    fn commit_renamed(mut self) -> Result<()> {
        let w = self.writer.take().expect("writer present until commit");
        let synced = self.synced;
        let written = self.written();
        let renamed = (|| {
            let file = w
                .into_inner()
                .map_err(|e| Error::io(&self.dest, e.into_error()))?;
            if !synced {
                file.sync_all().at(&self.dest)?;
            }
            drop(file);
            if let Some((run, role)) = &self.run {
                run.before_rename(*role)?;
            }
            crash_point(&format!(
                "before-rename:{}",
                self.dest.file_name().unwrap_or_default().to_string_lossy()
            ));
            fs::rename(&self.tmp, &self.dest).at(&self.dest)
        })();
        renamed?;
        self.committed = true;
        forget_temp(&self.tmp);
        if let (Some((run, role)), Some(written)) = (&self.run, written) {
            run.after_rename(&self.dest, *role, written);
        }
        Ok(())
    }
}

impl Write for AtomicFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.synced = false;
        let n = self.writer.as_mut().expect("not committed").write(buf)?;
        let done = buf.get(..n).unwrap_or(buf);
        if let Some(h) = &mut self.hash {
            h.update(done);
        }
        self.size = self.size.saturating_add(done.len() as u64);
        Ok(n)
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

/// Rename several finished files into place (call [`AtomicFile::sync`] on each first, or [`sync_files`] on
/// all, so that a full disk fails before any rename). If one rename fails, the files already renamed are
/// removed again: all or nothing. Each directory is fsynced once, after the last rename (what makes the
/// renames durable), not after every file. Returns the destinations.
pub fn commit_all(files: Vec<AtomicFile>) -> Result<Vec<PathBuf>> {
    let mut done: Vec<PathBuf> = Vec::with_capacity(files.len());
    let mut dirs: Vec<PathBuf> = Vec::new();
    let mut files = files.into_iter();
    while let Some(f) = files.next() {
        let dest = f.path().to_path_buf();
        if let Err(e) = f.commit_renamed() {
            remove_all(&done);
            drop(files);
            return Err(e);
        }
        if let Some(dir) = dest.parent().filter(|d| !dirs.iter().any(|x| x == d)) {
            dirs.push(dir.to_path_buf());
        }
        done.push(dest);
    }
    for dir in &dirs {
        sync_dir(dir);
    }
    Ok(done)
}

/// [`AtomicFile::sync`] on every file, the fsyncs at once (one thread each): a stage that renames several files
/// together waited for each fsync in turn (extract's ten: ≈ 15 ms of its tail, where no thread has work). The
/// first error in the files' order is returned.
pub fn sync_files(files: &mut [AtomicFile]) -> Result<()> {
    if files.len() < 2 {
        return files.iter_mut().try_for_each(AtomicFile::sync);
    }
    let results: Vec<Result<()>> = std::thread::scope(|s| {
        let handles: Vec<_> = files
            .iter_mut()
            .map(|f| s.spawn(move || f.sync()))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect()
    });
    results.into_iter().collect()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::files::{clean_stale_temps, open_new};

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
    fn files_synced_together_are_committed_together() {
        let dir = tempfile::tempdir().unwrap();
        let sub = dir.path().join("sub");
        fs::create_dir(&sub).unwrap();
        let dests = [dir.path().join("a"), dir.path().join("b"), sub.join("c")];
        let mut files: Vec<AtomicFile> = dests
            .iter()
            .map(|d| AtomicFile::create(d).unwrap())
            .collect();
        for (i, f) in files.iter_mut().enumerate() {
            // More than the write buffer for one of them: the sync flushes what is buffered either way.
            let n = if i == 1 { (1 << 20) + 5 } else { 3 };
            f.write_all(&vec![b'0' + i as u8; n]).unwrap();
        }
        assert!(files.iter().all(|f| !f.synced));
        sync_files(&mut files).unwrap();
        assert!(files.iter().all(|f| f.synced));
        // Written after its sync: no longer synced, so its commit fsyncs it (and keeps the bytes).
        files[0].write_all(b"+").unwrap();
        assert!(!files[0].synced && files[1].synced);
        assert!(dests.iter().all(|d| !d.exists()));
        let done = commit_all(files).unwrap();
        assert_eq!(done, dests.to_vec());
        assert_eq!(fs::read(&dests[0]).unwrap(), b"000+");
        assert_eq!(fs::read(&dests[1]).unwrap(), vec![b'1'; (1 << 20) + 5]);
        assert_eq!(fs::read(&dests[2]).unwrap(), b"222");
        // No temporary file is left in either directory.
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 3);
        assert_eq!(fs::read_dir(&sub).unwrap().count(), 1);
        // One file and none: the same calls work.
        sync_files(&mut []).unwrap();
        let mut one = vec![AtomicFile::create(dir.path().join("d")).unwrap()];
        sync_files(&mut one).unwrap();
        assert!(one[0].synced);
        commit_all(one).unwrap();
        assert_eq!(fs::read(dir.path().join("d")).unwrap(), b"");
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
}
