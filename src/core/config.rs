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
}
