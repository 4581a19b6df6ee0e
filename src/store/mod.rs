//! The run folder on disk: how artifacts are written, locked, vouched for and laid out.
//!
//! - [`layout`]: the names of the files in a run folder (each artifact with the stage that writes it);
//! - [`atomic`]: atomic files (temporary file, fsync, rename) and crash points for tests;
//! - [`files`]: file-system primitives (no link followed, marked temporary names, stale ones cleared);
//! - [`rundir`]: the one door into a run folder ([`RunDir`]): its lock, every write into it, in order;
//! - [`lock`]: the run folder's lock, which the handle owns;
//! - [`manifest`]: provenance of a stage's outputs, input checks, freshness;
//! - [`tables`]: every Parquet schema and its readers and writers;
//! - [`embeddings`]: keyed embedding vectors (word2vec text; NPY through [`npy`]);
//! - [`npy`]: NPY matrices, read whole or memory-mapped row by row.
//!
//! The items stages use most are re-exported here (`store::AtomicFile`, `store::Manifest`, ...).

pub mod atomic;
pub mod embeddings;
pub mod files;
pub mod layout;
pub mod lock;
pub mod manifest;
pub mod npy;
pub mod rundir;
pub mod tables;

pub use self::atomic::{commit_all, crash_point, sync_files, write_atomic, AtomicFile, Written};
pub use self::files::{clean_stale_temps, ensure_dir, parse_temp_name, remove_all, TEMP_MARK};
pub use self::layout::LOCK_FILE;
pub use self::lock::DirLock;
pub use self::manifest::{
    check_input, is_fresh, FileRef, InputName, Manifest, Reads, CRATE_VERSION, GIT_COMMIT,
};
pub use self::rundir::{RunDir, StageGuard};
