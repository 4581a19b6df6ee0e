//! The one door into a run folder: [`RunDir`], a handle that owns the folder's lock and follows every file
//! written through it.
//!
//! Every command that writes into a run folder opens it once ([`RunDir::open`]: the lock, exit code 6 when
//! another writer holds it) and writes each artifact through the handle ([`RunDir::create`],
//! [`RunDir::write`], [`super::Manifest::write`]): a temporary file beside the destination, renamed into
//! place when committed. Because every write comes through here, the rules of a run folder live in one
//! place, not in each command:
//!
//! - the first temporary file in a directory of the folder clears the stale ones a killed run left there
//!   (by then the command has accepted its input);
//! - while a stage writes ([`RunDir::begin_stage`]), its first output renamed into place removes the stage's
//!   old manifest (made durable first), so that no manifest vouches for a half-replaced set of outputs; the
//!   new manifest comes last;
//! - the outputs renamed into place are remembered ([`RunDir::committed`]), so that a stage that fails has
//!   them removed again ([`RunDir::remove_outputs`]), and one that panics has them removed while the panic
//!   unwinds ([`StageGuard`]);
//! - an output a command declares but did not write this time is removed through the handle
//!   ([`RunDir::remove`]) before the manifest.
//!
//! `sword run` opens the folder once and hands the same handle to every stage it runs; the state is the
//! handle's own (no process-wide record of held folders).

use super::atomic::{AtomicFile, Follow, Role, Written};
use super::files::{clean_stale_temps, ensure_dir, remove_all, sync_dir};
use super::layout;
use super::lock::DirLock;
use crate::core::error::{Error, IoContext, Result};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::{Component, Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

/// A locked run folder and the writes made into it. Cloning gives another view of the same handle (the lock
/// is released when the last goes).
#[derive(Clone)]
pub struct RunDir {
    inner: Arc<Inner>,
}

struct Inner {
    /// The folder as given.
    dir: PathBuf,
    state: Mutex<State>,
    /// Declared last: dropped after the state, when every file of the handle is done.
    _lock: DirLock,
}

#[derive(Default)]
struct State {
    /// Directories (relative to the folder) whose stale temporary files were cleared under this handle.
    cleaned: BTreeSet<PathBuf>,
    /// The stage writing now, if any.
    frame: Option<Frame>,
}

/// One stage writing into the folder.
struct Frame {
    stage: String,
    /// `<stage>.manifest.json` was removed before the first output was replaced.
    manifest_removed: bool,
    /// The stage's new manifest is in place: its outputs are vouched for.
    finished: bool,
    /// Outputs renamed into place so far (removed again if the stage fails or panics before its manifest).
    committed: Vec<PathBuf>,
    /// What each of them holds, as written, and the file's stamp just after its rename (the last rename of a
    /// path counts).
    written: Vec<(PathBuf, Written, Stamp)>,
}

/// Who a file is and when it last changed (inode, size, modification time): a file with another stamp than
/// just after its rename was replaced or written since.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Stamp {
    ino: u64,
    len: u64,
    modified: Option<std::time::SystemTime>,
}

impl Stamp {
    fn of(path: &Path) -> Option<Stamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(path).ok()?;
        Some(Stamp {
            ino: m.ino(),
            len: m.len(),
            modified: m.modified().ok(),
        })
    }
}

impl RunDir {
    /// Lock `dir` (created if needed) for writing, or fail at once: [`Error::Locked`] (exit 6) when another
    /// process or another handle holds it, an I/O error (exit 4) naming `dir` when it cannot be written into.
    pub fn open(dir: &Path) -> Result<RunDir> {
        let lock = DirLock::acquire(dir)?;
        Ok(RunDir {
            inner: Arc::new(Inner {
                dir: dir.to_path_buf(),
                state: Mutex::new(State::default()),
                _lock: lock,
            }),
        })
    }

    /// The folder, as it was given.
    pub fn dir(&self) -> &Path {
        &self.inner.dir
    }

    /// The path of `rel` in the folder.
    pub fn path(&self, rel: impl AsRef<Path>) -> PathBuf {
        self.inner.dir.join(rel)
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.inner.state()
    }

    /// `rel` as a path inside the folder: relative, without `..` (else an internal error: a caller may write
    /// only into the folder it holds).
    fn inside(&self, rel: &Path) -> Result<PathBuf> {
        let ok = !rel.as_os_str().is_empty()
            && rel
                .components()
                .all(|c| matches!(c, Component::Normal(_) | Component::CurDir));
        if !ok {
            return Err(Error::internal(format!(
                "{} is not a path inside the run folder {}",
                rel.display(),
                self.dir().display()
            )));
        }
        Ok(self.path(rel))
    }

    /// Start writing `rel` (a path relative to the folder; its directories are created) atomically: it
    /// appears under its name when committed. The first file in a directory clears the stale temporary
    /// files there.
    pub fn create(&self, rel: impl AsRef<Path>) -> Result<AtomicFile> {
        self.create_as(rel.as_ref(), Role::Output)
    }

    pub(super) fn create_as(&self, rel: &Path, role: Role) -> Result<AtomicFile> {
        let dest = self.inside(rel)?;
        let sub = rel.parent().map(Path::to_path_buf).unwrap_or_default();
        let parent = self.path(&sub);
        if !sub.as_os_str().is_empty() {
            ensure_dir(&parent)?;
        }
        let first = self.state().cleaned.insert(sub);
        if first {
            clean_stale_temps(&parent)?;
        }
        let follow: Arc<dyn Follow> = self.inner.clone();
        AtomicFile::create_in(dest, Some((follow, role)))
    }

    /// Write `rel` atomically with the bytes `f` produces.
    pub fn write(
        &self,
        rel: impl AsRef<Path>,
        f: impl FnOnce(&mut dyn Write) -> std::io::Result<()>,
    ) -> Result<()> {
        let mut file = self.create(rel)?;
        let path = file.path().to_path_buf();
        f(&mut file).map_err(|e| Error::io(path, e))?;
        file.commit()
    }

    /// Remove `rel` from the folder (an output an earlier run wrote and this one did not); `false` when it is
    /// not there. The removal is made durable by the next rename in its directory (the manifest's, at the
    /// root).
    pub fn remove(&self, rel: impl AsRef<Path>) -> Result<bool> {
        let p = self.inside(rel.as_ref())?;
        match std::fs::remove_file(&p) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(Error::io(&p, e)),
        }
    }

    /// The stage `stage` starts writing: its first output renamed into place removes its old manifest, its
    /// outputs are remembered until its manifest is written, and if it panics first they are removed while
    /// the panic unwinds (the guard's drop). One stage at a time (else an internal error).
    pub fn begin_stage(&self, stage: &str) -> Result<StageGuard> {
        let mut st = self.state();
        if let Some(f) = &st.frame {
            return Err(Error::internal(format!(
                "stage {stage} started in {} while stage {} is writing there",
                self.dir().display(),
                f.stage
            )));
        }
        st.frame = Some(Frame {
            stage: stage.to_string(),
            manifest_removed: false,
            finished: false,
            committed: Vec::new(),
            written: Vec::new(),
        });
        Ok(StageGuard { run: self.clone() })
    }

    /// The outputs the stage writing now has renamed into place, as the paths it wrote them to.
    pub fn committed(&self) -> Vec<PathBuf> {
        self.state()
            .frame
            .as_ref()
            .map(|f| f.committed.clone())
            .unwrap_or_default()
    }

    /// What the stage writing now put into `rel` when it renamed it into place through this handle (the last
    /// time, if it did so more than once), provided the file is still the one renamed then (same inode, size
    /// and modification time); `None` otherwise (written some other way, by another stage, replaced or
    /// written since): then the caller hashes the file itself. A rewrite in place to the same size within the
    /// file system's timestamp granularity would pass unseen, as it would `make` or git: nothing in sword
    /// writes a run folder but through this handle.
    pub fn written(&self, rel: &str) -> Option<Written> {
        let path = self.inside(Path::new(rel)).ok()?;
        let (w, stamp) = self
            .state()
            .frame
            .as_ref()?
            .written
            .iter()
            .find(|(p, _, _)| *p == path)
            .map(|(_, w, s)| (*w, *s))?;
        (Stamp::of(&path)? == stamp).then_some(w)
    }

    /// For a stage that failed: remove the outputs it renamed into place (no manifest vouches for them: its
    /// old one went with the first). Returns how many went.
    pub fn remove_outputs(&self) -> usize {
        let committed = match self.state().frame.as_mut() {
            Some(f) if !f.finished => std::mem::take(&mut f.committed),
            _ => return 0,
        };
        remove_all(&committed);
        committed.len()
    }

    /// Write the manifest `bytes` as `<sub>/<name>` (the stage writing now is finished when `sub` is the
    /// folder itself).
    pub(super) fn write_manifest(&self, sub: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
        let rel = sub.join(name);
        let role = if sub.as_os_str().is_empty() {
            Role::Manifest
        } else {
            Role::Output
        };
        let mut file = self.create_as(&rel, role)?;
        let path = file.path().to_path_buf();
        file.write_all(bytes).at(&path)?;
        file.commit()?;
        Ok(path)
    }
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Follow for Inner {
    /// Before `dest` is renamed into place: the first output of the stage writing now takes the stage's old
    /// manifest with it (removed, and the removal made durable, first).
    fn before_rename(&self, role: Role) -> Result<()> {
        let mut st = self.state();
        let Some(frame) = st.frame.as_mut() else {
            return Ok(());
        };
        if frame.manifest_removed || role == Role::Manifest {
            return Ok(());
        }
        let old = self.dir.join(layout::manifest_file(&frame.stage));
        match std::fs::remove_file(&old) {
            Ok(()) => sync_dir(&self.dir),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(Error::io(&old, e)),
        }
        frame.manifest_removed = true;
        Ok(())
    }

    /// After `dest` was renamed into place: note the output (or that the stage is finished).
    fn after_rename(&self, dest: &Path, role: Role, written: Written) {
        if let Some(frame) = self.state().frame.as_mut() {
            match role {
                Role::Manifest => frame.finished = true,
                Role::Output => {
                    frame.committed.push(dest.to_path_buf());
                    // Unstamped (the file cannot be stat'ed): not recorded, hashed from disk instead.
                    frame.written.retain(|(p, _, _)| p != dest);
                    if let Some(stamp) = Stamp::of(dest).filter(|s| s.len == written.size) {
                        frame.written.push((dest.to_path_buf(), written, stamp));
                    }
                }
            }
        }
    }
}

/// A stage writing into a [`RunDir`] ([`RunDir::begin_stage`]). Dropped, it ends the stage; if a panic is
/// unwinding and the stage's manifest is not written, the outputs it renamed into place are removed (a kill
/// leaves them, unvouched: the next stage refuses them and `sword run` redoes the stage).
pub struct StageGuard {
    run: RunDir,
}

impl Drop for StageGuard {
    fn drop(&mut self) {
        let Some(f) = self.run.state().frame.take() else {
            return;
        };
        if std::thread::panicking() && !f.finished && !f.committed.is_empty() {
            eprintln!(
                "sword: {} panicked before its manifest was written: removing the {} output(s) it had put in \
                 place",
                f.stage,
                f.committed.len()
            );
            remove_all(&f.committed);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes_stay_inside_the_folder() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::open(dir.path()).unwrap();
        for bad in ["", "../x", "/tmp/x", "a/../../x"] {
            let e = run.write(bad, |w| w.write_all(b"x")).unwrap_err();
            assert_eq!(e.exit_code(), 1, "{bad}: {e}");
        }
        run.write("sub/deeper/x.txt", |w| w.write_all(b"x"))
            .unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("sub/deeper/x.txt")).unwrap(),
            b"x"
        );
        assert!(run.remove("sub/deeper/x.txt").unwrap());
        assert!(!run.remove("sub/deeper/x.txt").unwrap());
    }

    #[test]
    fn one_stage_at_a_time_and_a_second_handle_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::open(dir.path()).unwrap();
        let g = run.begin_stage("a").unwrap();
        assert_eq!(run.begin_stage("b").map(|_| ()).unwrap_err().exit_code(), 1);
        drop(g);
        drop(run.begin_stage("b").unwrap());
        let e = RunDir::open(dir.path()).map(|_| ()).unwrap_err();
        assert_eq!(e.exit_code(), 6, "{e}");
        // A clone is the same handle: the lock goes with the last.
        let view = run.clone();
        drop(run);
        assert!(RunDir::open(dir.path()).is_err());
        drop(view);
        drop(RunDir::open(dir.path()).unwrap());
    }

    /// Write `pieces` one `write` call each (a short write is a piece taken in part: `write_all` goes on).
    fn write_pieces(run: &RunDir, rel: &str, pieces: &[Vec<u8>]) {
        let mut f = run.create(rel).unwrap();
        for p in pieces {
            f.write_all(p).unwrap();
        }
        f.commit().unwrap();
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(64))]
        /// What the handle records of a file written through it is what hashing the finished file from disk
        /// gives (the oracle: `FileRef::of`, reading it back), whatever the sizes of the writes, the buffer's
        /// 1 MiB included; the last write of a path counts.
        #[test]
        fn the_recorded_hash_is_the_hash_of_the_file_on_disk(
            pieces in proptest::collection::vec(proptest::collection::vec(proptest::prelude::any::<u8>(), 0..3000), 0..12),
            big in proptest::prelude::any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            let run = RunDir::open(dir.path()).unwrap();
            let _g = run.begin_stage("s").unwrap();
            let mut pieces = pieces;
            if big {
                pieces.push(vec![7u8; (1 << 20) + 13]);
            }
            write_pieces(&run, "sub/a.bin", &[b"an earlier version".to_vec()]);
            write_pieces(&run, "sub/a.bin", &pieces);
            let w = run.written("sub/a.bin").unwrap();
            let disk = crate::store::FileRef::of(&dir.path().join("sub/a.bin")).unwrap();
            proptest::prop_assert_eq!(w.size, disk.size);
            proptest::prop_assert_eq!(Some(format!("{:032x}", w.xxh3)), disk.xxh3);
            let all: Vec<u8> = pieces.concat();
            proptest::prop_assert_eq!(w.xxh3, xxhash_rust::xxh3::xxh3_128(&all));
        }
    }

    /// The manifest takes a recorded hash only for a file the stage writing now renamed through the handle and
    /// that still has that size; any other output is hashed from disk, so the record is right either way.
    #[test]
    fn outputs_are_recorded_from_the_writes_or_else_from_disk() {
        let dir = tempfile::tempdir().unwrap();
        let run = RunDir::open(dir.path()).unwrap();
        std::fs::write(
            dir.path().join("before.txt"),
            b"written by an earlier stage",
        )
        .unwrap();
        let g = run.begin_stage("s").unwrap();
        write_pieces(&run, "a.txt", &[b"hello ".to_vec(), b"world".to_vec()]);
        write_pieces(&run, "b.txt", &[b"to be changed".to_vec()]);
        write_pieces(&run, "c.txt", &[b"to be replaced".to_vec()]);
        // Changed behind the handle's back after its rename: another size; replaced by another file of the
        // same size (another inode). Both hashed again.
        std::fs::write(dir.path().join("b.txt"), b"changed since, longer").unwrap();
        std::fs::write(dir.path().join("c.new"), b"replaced since").unwrap();
        std::fs::rename(dir.path().join("c.new"), dir.path().join("c.txt")).unwrap();
        assert!(run.written("a.txt").is_some());
        assert_eq!(run.written("b.txt"), None);
        assert_eq!(run.written("c.txt"), None);
        assert_eq!(run.written("before.txt"), None);
        assert_eq!(run.written("../a.txt"), None);
        let names = ["a.txt", "b.txt", "c.txt", "before.txt"];
        let mut from_writes = crate::store::Manifest::default();
        from_writes.add_outputs_of(&run, &names).unwrap();
        let mut from_disk = crate::store::Manifest::default();
        from_disk.add_outputs(dir.path(), &names).unwrap();
        assert_eq!(
            serde_json::to_value(&from_writes.outputs).unwrap(),
            serde_json::to_value(&from_disk.outputs).unwrap()
        );
        // A file of the stage before is not taken for one of the next.
        drop(g);
        let _g = run.begin_stage("t").unwrap();
        assert_eq!(run.written("a.txt"), None);
    }
}
