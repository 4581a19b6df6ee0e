//! The run folder's layout: the names of the files in it that are not artifacts of one stage (the lock, the
//! manifests).

/// Name of the lock file in a run directory.
pub const LOCK_FILE: &str = ".sword.lock";

/// File name of the manifest of `stage` (`<stage>.manifest.json`).
pub fn manifest_file(stage: &str) -> String {
    format!("{stage}.manifest.json")
}
