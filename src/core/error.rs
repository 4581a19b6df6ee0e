//! Typed errors of the library. Context (which file, which line, which byte) is carried in the variant so the
//! binary can print one clear message; `main.rs` prints the chain once and maps the kind to an exit code.

use std::path::PathBuf;

/// Result alias used across the library.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Every error a stage can return.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system I/O failure on a named path (`-` for stdin/stdout).
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// Malformed JSON (or a malformed record inside it) at a known position of an input file.
    #[error("{path}: line {line}, byte offset {offset}: {what}")]
    Json {
        path: PathBuf,
        line: u64,
        offset: u64,
        what: String,
    },
    /// The input is not what the stage expects (bad dump, too many bad lines, bad CLI combination).
    #[error("bad input {path}: {what}")]
    BadInput { path: PathBuf, what: String },
    /// Parquet / Arrow failure while writing an artifact (a failure to read one is [`Error::Corrupt`]: see
    /// [`Error::unreadable_parquet`]).
    #[error("{path}: parquet: {what}")]
    Parquet { path: PathBuf, what: String },
    /// Invalid configuration value.
    #[error("config: {0}")]
    Config(String),
    /// An input file that cannot be read as what it must be: a truncated or corrupt Parquet, NPY or JSON file,
    /// a table without the columns sword writes. Bad input (exit code 2) in every command, whether the file is
    /// an artifact of a run folder, a benchmark or a samples file: `what` says in words what is wrong.
    #[error("corrupt file {path}: {what}")]
    Corrupt { path: PathBuf, what: String },
    /// An input artifact changed after the output that depends on it was made (its size or hash differs from
    /// what its manifest lists), or no manifest vouches for it.
    #[error("stale input {path}: {what} (rerun the stage that makes it, or pass --force)")]
    Stale { path: PathBuf, what: String },
    /// Another run holds the lock on an output directory.
    #[error("{path} is locked by another sword run ({what}); wait for it to finish or remove a stale lock")]
    Locked { path: PathBuf, what: String },
    /// A remote service (model endpoint) failed after all retries.
    #[error("remote {url}: {what}")]
    Remote { url: String, what: String },
    /// A finished run may not replace the published one (the nightly's `latest`): it is incomplete, or its
    /// counts fall below the sanity bound against the published run.
    #[error("not promoting {path}: {what}")]
    NotPromoted { path: PathBuf, what: String },
    /// A fault inside sword itself, never the input's: a worker thread that panicked, a broken invariant, a
    /// stage that broke its own contract. The README's exit code 1 ("unexpected failure").
    #[error("internal error: {0} (a bug in sword; please report it with the command that failed)")]
    Internal(String),
}

impl Error {
    /// Wrap an `io::Error` with the path it concerns.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A bad-input error naming the path.
    pub fn bad_input(path: impl Into<PathBuf>, what: impl Into<String>) -> Self {
        Error::BadInput {
            path: path.into(),
            what: what.into(),
        }
    }

    /// An internal fault (exit code 1): `what` says what went wrong inside sword.
    pub fn internal(what: impl Into<String>) -> Self {
        Error::Internal(what.into())
    }

    /// A Parquet/Arrow error naming the path. When the Parquet or Arrow error is an I/O failure underneath (a
    /// full disk while the writer flushes), it becomes [`Error::Io`] (exit code 4), not a corrupt artifact.
    pub fn parquet(path: impl Into<PathBuf>, what: impl std::fmt::Display + 'static) -> Self {
        if let Some(source) = io_cause(&what) {
            return Error::Io {
                path: path.into(),
                source,
            };
        }
        Error::Parquet {
            path: path.into(),
            what: what.to_string(),
        }
    }

    /// A Parquet/Arrow error while *reading* `path`: [`Error::Corrupt`] (exit code 2) saying in words that the
    /// file is truncated, corrupt or not Parquet, with the decoder's own text after it ("RLE bit width 171"
    /// alone tells a user nothing). An I/O failure underneath stays [`Error::Io`] (exit code 4).
    pub fn unreadable_parquet(
        path: impl Into<PathBuf>,
        what: impl std::fmt::Display + 'static,
    ) -> Self {
        if let Some(source) = io_cause(&what) {
            return Error::Io {
                path: path.into(),
                source,
            };
        }
        Error::Corrupt {
            path: path.into(),
            what: format!(
                "cannot be read as a Parquet table: the file is truncated or damaged, or not a Parquet file \
                 at all (copy or download it again, or rerun the stage that writes it); the decoder said: {what}"
            ),
        }
    }

    /// Process exit code for this error kind, so a scheduler can act on it: 1 internal fault (a bug),
    /// 2 bad input or config (a truncated or corrupt input file included), 3 stale artifact (it differs from
    /// what its manifest vouches for), 4 I/O failure, 5 remote service failure,
    /// 6 output directory locked by another run, 7 promotion refused (the nightly keeps `latest`).
    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Internal(_) => 1,
            Error::Json { .. }
            | Error::BadInput { .. }
            | Error::Config(_)
            | Error::Corrupt { .. } => 2,
            Error::Stale { .. } | Error::Parquet { .. } => 3,
            Error::Io { .. } => 4,
            Error::Remote { .. } => 5,
            Error::Locked { .. } => 6,
            Error::NotPromoted { .. } => 7,
        }
    }

    /// True when the error is a closed stdout (`sword ... | head`), which must exit 0 quietly.
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }
}

/// The I/O error inside a Parquet or Arrow error, if there is one (copied: `io::Error` is not `Clone`).
fn io_cause(what: &dyn std::any::Any) -> Option<std::io::Error> {
    let top: &(dyn std::error::Error + 'static) =
        match what.downcast_ref::<parquet::errors::ParquetError>() {
            Some(e) => e,
            None => what.downcast_ref::<arrow_schema::ArrowError>()?,
        };
    let mut cur = Some(top);
    while let Some(e) = cur {
        if let Some(io) = e.downcast_ref::<std::io::Error>() {
            return Some(match io.raw_os_error() {
                Some(code) => std::io::Error::from_raw_os_error(code),
                None => std::io::Error::new(io.kind(), io.to_string()),
            });
        }
        cur = e.source();
    }
    None
}

/// Extension to attach a path to `io::Result`.
pub trait IoContext<T> {
    /// Attach `path` to the error.
    fn at(self, path: impl Into<PathBuf>) -> Result<T>;
}

impl<T> IoContext<T> for std::io::Result<T> {
    fn at(self, path: impl Into<PathBuf>) -> Result<T> {
        self.map_err(|e| Error::io(path, e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The exit codes the README's table documents, kind by kind (a scheduler acts on them).
    #[test]
    fn every_kind_has_its_documented_exit_code() {
        let p = || PathBuf::from("f");
        let w = || "w".to_string();
        let io = || std::io::Error::other("x");
        let cases = [
            (Error::internal("a writer thread panicked"), 1),
            (Error::bad_input(p(), w()), 2),
            (Error::Config(w()), 2),
            (
                Error::Json {
                    path: p(),
                    line: 1,
                    offset: 0,
                    what: w(),
                },
                2,
            ),
            (
                Error::Corrupt {
                    path: p(),
                    what: w(),
                },
                2,
            ),
            (
                Error::Stale {
                    path: p(),
                    what: w(),
                },
                3,
            ),
            (
                Error::Parquet {
                    path: p(),
                    what: w(),
                },
                3,
            ),
            (Error::io(p(), io()), 4),
            (
                Error::Remote {
                    url: w(),
                    what: w(),
                },
                5,
            ),
            (
                Error::Locked {
                    path: p(),
                    what: w(),
                },
                6,
            ),
            (
                Error::NotPromoted {
                    path: p(),
                    what: w(),
                },
                7,
            ),
        ];
        for (e, code) in cases {
            assert_eq!(e.exit_code(), code, "{e}");
        }
        let e = Error::internal("a writer thread panicked").to_string();
        assert!(
            e.starts_with("internal error: a writer thread panicked") && e.contains("bug"),
            "{e}"
        );
    }
}
