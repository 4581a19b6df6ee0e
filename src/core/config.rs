//! Loading stage configurations from TOML files (`pipeline/<stage>.toml`); missing fields take their defaults.

use crate::core::error::{Error, Result};
use serde::de::DeserializeOwned;
use std::path::Path;

/// Read a TOML config file into `T`, or `T::default()` when `path` is `None`. Unknown keys are an error
/// when `T` says `#[serde(deny_unknown_fields)]`, so a typo in a nightly config fails loudly.
pub fn load<T: DeserializeOwned + Default>(path: Option<&Path>) -> Result<T> {
    let Some(path) = path else {
        return Ok(T::default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    toml::from_str(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))
}

/// A stage's settings from a TOML file: its keys at the top, or under a `[<stage>]` table (so one file may hold
/// several stages' tables); the defaults without a file. Unknown keys are an error as in [`load`].
pub fn load_stage<T: DeserializeOwned + Default>(path: Option<&Path>, stage: &str) -> Result<T> {
    let Some(path) = path else {
        return Ok(T::default());
    };
    let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    let bad = |e: &dyn std::fmt::Display| Error::Config(format!("{}: {e}", path.display()));
    let value: toml::Table = toml::from_str(&text).map_err(|e| bad(&e))?;
    match value.get(stage) {
        Some(toml::Value::Table(t)) => t.clone().try_into().map_err(|e| bad(&e)),
        // Parsed again from the text, so that an error names its line and column.
        _ => toml::from_str(&text).map_err(|e| bad(&e)),
    }
}

/// Config file `<dir>/<stage>.toml` if `dir` is given and the file exists.
pub fn stage_file(dir: Option<&Path>, stage: &str) -> Option<std::path::PathBuf> {
    dir.map(|d| d.join(format!("{stage}.toml")))
        .filter(|p| p.exists())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(serde::Deserialize, Default, Debug, PartialEq)]
    #[serde(default, deny_unknown_fields)]
    struct C {
        a: u32,
        b: String,
    }

    #[test]
    fn loads_defaults_partial_files_and_rejects_typos() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(load::<C>(None).unwrap(), C::default());
        let p = dir.path().join("c.toml");
        std::fs::write(&p, "a = 3\n").unwrap();
        assert_eq!(
            load::<C>(Some(&p)).unwrap(),
            C {
                a: 3,
                b: String::new()
            }
        );
        std::fs::write(&p, "aa = 3\n").unwrap();
        let err = load::<C>(Some(&p)).unwrap_err().to_string();
        assert!(err.contains("c.toml") && err.contains("aa"), "{err}");
    }

    #[test]
    fn a_stage_reads_its_keys_bare_or_under_its_table() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("c.toml");
        let want = C {
            a: 3,
            b: "x".into(),
        };
        std::fs::write(&p, "a = 3\nb = \"x\"\n").unwrap();
        assert_eq!(load_stage::<C>(Some(&p), "s").unwrap(), want);
        std::fs::write(&p, "[s]\na = 3\nb = \"x\"\n\n[t]\nz = 1\n").unwrap();
        assert_eq!(load_stage::<C>(Some(&p), "s").unwrap(), want);
        // Another stage's table is not this one's: its keys are unknown here.
        let err = load_stage::<C>(Some(&p), "u").unwrap_err().to_string();
        assert!(
            err.contains("c.toml") && err.contains("unknown field"),
            "{err}"
        );
        std::fs::write(&p, "a = \"x\"\n").unwrap();
        let err = load_stage::<C>(Some(&p), "s").unwrap_err().to_string();
        assert!(err.contains("line 1"), "an error names its line: {err}");
    }
}
