//! Stable statement ids (docs/versions.md, "Stable statement ids"): a statement keeps its id in every later
//! version of its benchmark, and a new id never equals an id of an earlier version of the same lineage.
//!
//! - `<tag>-<n>-<STRATEGY>` (`7f3a09c2-000042-PSS`): drawn with its original, the n-th original of the build
//!   whose tag is `<tag>`;
//! - `<original>-<STRATEGY>.<tag>` (`7f3a09c2-000042-PSS.b41e0d77`): a variant redrawn by a later build
//!   `<tag>` for a carried original.
//!
//! Ids of benchmarks built before this scheme (`000042-PSS`, positions) are carried as they are: they have one
//! dash fewer than any new id, so no new id can equal one.

use super::config::DistortConfig;
use crate::core::records::Strategy;
use crate::store::FileRef;

/// The tag of a build: 8 hex digits, the first 32 bits of an xxh3-128 over what determines its draws — the
/// hashes of the extract artifacts distort reads (`inputs`), the settings except the guard probe (it changes
/// no row), and the lineage it carries from. A tag equal to one of `lineage` is hashed again with a counter,
/// so a build never reuses the tag of a build it descends from.
pub fn build_tag(inputs: &[FileRef], cfg: &DistortConfig, lineage: &[String]) -> String {
    let mut settings = serde_json::to_value(cfg).unwrap_or_default();
    if let Some(m) = settings.as_object_mut() {
        m.remove("probe_candidates");
    }
    let mut text = String::new();
    for f in inputs {
        let name = std::path::Path::new(&f.path)
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        text.push_str(&format!("{name}={}\n", f.xxh3.as_deref().unwrap_or("-")));
    }
    text.push_str(&format!(
        "settings={settings}\nlineage={}\n",
        lineage.join(",")
    ));
    let mut counter = 0u32;
    loop {
        let h = xxhash_rust::xxh3::xxh3_128(format!("{text}counter={counter}").as_bytes());
        let tag = format!("{:08x}", (h >> 96) as u32);
        if !lineage.contains(&tag) {
            return tag;
        }
        counter += 1;
    }
}

/// The id of the n-th original of build `tag`: `<tag>-<n, 6 digits or more>`.
pub fn original_key(tag: &str, n: usize) -> String {
    format!("{tag}-{n:06}")
}

/// The id of a statement drawn with its original: `<original>-<STRATEGY>`.
pub fn drawn_id(original: &str, strategy: Strategy) -> String {
    format!("{original}-{}", strategy.as_str())
}

/// The id of a variant that build `tag` redrew for a carried original: `<original>-<STRATEGY>.<tag>`.
pub fn redrawn_id(original: &str, strategy: Strategy, tag: &str) -> String {
    format!("{original}-{}.{tag}", strategy.as_str())
}

/// The original's id in a statement id (read back by the benchmark reader, below the stages).
pub use crate::kb::benchmark::original_of;

#[cfg(test)]
mod tests {
    use super::*;

    fn file(name: &str, hash: &str) -> FileRef {
        FileRef {
            path: format!("/some/run/{name}"),
            size: 1,
            xxh3: Some(hash.into()),
            in_run: false,
        }
    }

    #[test]
    fn the_tag_depends_on_inputs_and_settings_not_on_the_probe_or_the_folder() {
        let cfg = DistortConfig::default();
        let a = build_tag(&[file("triples.parquet", "aa")], &cfg, &[]);
        assert_eq!(a.len(), 8);
        assert!(a.chars().all(|c| c.is_ascii_hexdigit()));
        let moved = FileRef {
            path: "elsewhere/triples.parquet".into(),
            ..file("triples.parquet", "aa")
        };
        assert_eq!(build_tag(&[moved], &cfg, &[]), a);
        let probe = DistortConfig {
            probe_candidates: 0,
            ..cfg.clone()
        };
        assert_eq!(build_tag(&[file("triples.parquet", "aa")], &probe, &[]), a);
        let seed = DistortConfig {
            seed: 7,
            ..cfg.clone()
        };
        assert_ne!(build_tag(&[file("triples.parquet", "aa")], &seed, &[]), a);
        assert_ne!(build_tag(&[file("triples.parquet", "ab")], &cfg, &[]), a);
    }

    #[test]
    fn a_tag_of_the_lineage_is_never_drawn_again() {
        let cfg = DistortConfig::default();
        let inputs = [file("triples.parquet", "aa")];
        // Whatever tag the lineage holds, the new one differs from all of them: put the tag the build would
        // get with the lineage into the lineage, repeatedly.
        let mut lineage: Vec<String> = Vec::new();
        for _ in 0..5 {
            let t = build_tag(&inputs, &cfg, &lineage);
            assert!(!lineage.contains(&t));
            lineage.push(t);
        }
        // And with a lineage that holds the very tag the same text hashes to first.
        let first = build_tag(&inputs, &cfg, &["x".into()]);
        let again = build_tag(&inputs, &cfg, &["x".into(), first.clone()]);
        assert_ne!(first, again);
    }

    #[test]
    fn ids_name_their_original() {
        let o = original_key("7f3a09c2", 42);
        assert_eq!(o, "7f3a09c2-000042");
        assert_eq!(drawn_id(&o, Strategy::PSS), "7f3a09c2-000042-PSS");
        let r = redrawn_id(&o, Strategy::PSS, "b41e0d77");
        assert_eq!(r, "7f3a09c2-000042-PSS.b41e0d77");
        assert_eq!(original_of(&r), Some("7f3a09c2-000042"));
        assert_eq!(original_of("000042-PSS"), Some("000042"));
        assert_eq!(original_of("000042-XX"), None);
        assert_eq!(original_key("7f3a09c2", 1_234_567), "7f3a09c2-1234567");
        for id in [o.as_str(), r.as_str()] {
            assert!(!id.contains(':') && !id.contains(char::is_whitespace));
        }
    }
}
