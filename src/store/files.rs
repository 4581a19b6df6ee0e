//! File-system primitives of the run folder: files created without following links, temporary files with
//! marked, unguessable names (and the removal of those a killed run left), directory fsync.
//!
//! A temporary file of this tool is named `.<name>.<10 alphanumerics>.sword.tmp.<pid>` ([`parse_temp_name`]);
//! no other file is ever removed as stale.

use crate::core::error::{Error, IoContext, Result};
use std::collections::BTreeSet;
use std::ffi::OsString;
use std::fs::{self, File};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError};

/// What marks a temporary file as one this tool made: its name is `.<name>.<random>.sword.tmp.<pid>`
/// ([`parse_temp_name`]), e.g. `.triples.parquet.Xk3q9ZbT0a.sword.tmp.4711`.
pub const TEMP_MARK: &str = ".sword.tmp.";

/// Random alphanumerics in a temporary file's name (62¹⁰ ≈ 8·10¹⁷ names: not guessable in advance).
const TEMP_RAND: usize = 10;

/// The destination name and writer's pid of a temporary file this tool made (`.<name>.<10 alphanumerics>
/// .sword.tmp.<pid>`), or `None` for every other name — in particular the `.<name>.tmp.<pid>` files of other
/// tools (and of sword before its temporary names were marked), which are never touched.
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
pub(super) fn open_new(path: &Path) -> std::io::Result<File> {
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
pub(super) fn create_temp(dir: &Path, name: &str) -> std::io::Result<(File, PathBuf)> {
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

pub(super) fn forget_temp(path: &Path) {
    if let Some(n) = path.file_name() {
        live_temps().remove(n);
    }
}

/// fsync a directory (makes a rename or an unlink durable); not every filesystem supports it: best effort.
pub(super) fn sync_dir(dir: &Path) {
    let dir = if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    };
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
}

/// Remove files (best effort: used to undo the outputs of a stage that failed after writing them).
pub fn remove_all(paths: &[PathBuf]) {
    for p in paths {
        let _ = fs::remove_file(p);
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
        crate::core::progress::log(format!(
            "removed {n} temporary file(s) left in {} by an interrupted run",
            dir.display()
        ));
    }
    Ok(n)
}

/// Create a directory (and parents), naming it in the error.
pub fn ensure_dir(dir: &Path) -> Result<()> {
    fs::create_dir_all(dir).at(dir)
}

/// The paths of `dir`'s entries, sorted (so what is read from a folder does not depend on the order the file
/// system lists it in); an error names the folder.
pub fn sorted_entries(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut entries: Vec<PathBuf> = fs::read_dir(dir)
        .at(dir)?
        .map(|e| e.map(|e| e.path()).at(dir))
        .collect::<Result<_>>()?;
    entries.sort();
    Ok(entries)
}

/// The last part of `p` as text (invalid UTF-8 replaced; empty for a path without one, such as `/`).
pub fn file_name_of(p: &Path) -> String {
    p.file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
