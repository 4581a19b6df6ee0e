//! The bottom layer: what every other module may use and nothing here uses from above.
//!
//! - [`error`]: the library's typed errors and the exit code of each kind;
//! - [`ids`]: Wikidata identifiers (`Q42`, `P31`), parsed and printed only here;
//! - [`records`]: the typed rows the Parquet artifacts hold (triples, entities with labels, properties);
//! - [`falsity`]: the falsity tier of a false statement and the constraint records it is read from;
//! - [`config`]: loading a stage's TOML configuration;
//! - [`size`]: sizes in bytes (`64M`, `1.5G`) and settings that are a size, `auto` or `none`, parsed once;
//! - [`progress`]: progress bars and log lines on stderr (`--quiet` silences them);
//! - [`stdout`]: a command's result on stdout (bytes, pretty JSON), flushed.

pub mod config;
pub mod error;
pub mod falsity;
pub mod ids;
pub mod progress;
pub mod records;
pub mod size;
pub mod stdout;
