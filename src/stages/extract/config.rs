//! The extract stage's settings (`pipeline/extract.toml` and the flags of `sword extract`) and the read
//! options they make.

#![deny(clippy::indexing_slicing, clippy::arithmetic_side_effects)]

use crate::dump::ReadOpts;
use crate::stages::extract::spill::{MemoryLimit, SpillBudget};
use serde::{Deserialize, Serialize};

/// Settings of the extract stage (`pipeline/extract.toml`, bare or under `[extract]`; the flags of `sword
/// extract` have the same names, but `--no-skim` and `--skip-unlabelled-statements`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Languages an entity must be labelled in, in output-column order. SWORD: `en fr de es it pt ko ja`.
    #[arg(long, num_args = 1.., value_delimiter = ',', required = false)]
    pub languages: Vec<String>,
    /// Languages for which a `mul` ("default for all languages") label counts as a label. Default
    /// `en fr de es it pt` (Latin-script languages; never `ko`/`ja` unless configured).
    #[arg(long, num_args = 0.., value_delimiter = ',', required = false)]
    pub mul_fallback: Vec<String>,
    /// Malformed lines tolerated before the run fails with exit code 2. Default 1000: a real dump of ≈110 M
    /// lines has a handful at most; 1000 still stops a run fed the wrong file within seconds.
    #[arg(long, required = false)]
    pub max_bad_lines: u64,
    /// Largest share of malformed lines (of the non-blank lines) accepted, whatever `max_bad_lines` says: a
    /// stream with more is not a whole Wikidata dump (exit code 2). Default 0.01 (1%).
    #[arg(long, value_name = "SHARE", required = false)]
    pub max_bad_share: f64,
    /// Accept a dump that ends early — a compressed stream cut short, a last line cut in the middle, no closing
    /// `]` — keeping what was decoded; the manifest then says `"complete": false` and so does every later
    /// stage. Default `false`: such a dump fails with exit code 2 naming the byte offset.
    #[arg(long, action = clap::ArgAction::Set, num_args = 0, required = false, default_missing_value = "true")]
    pub allow_truncated: bool,
    /// Accept a dump without any entity line (`[` and `]` only). Default `false`: exit code 2.
    #[arg(long, action = clap::ArgAction::Set, num_args = 0, required = false, default_missing_value = "true")]
    pub allow_empty: bool,
    /// Longest line accepted, in MiB. A line is one entity (real ones are a few MB at most); a longer one is
    /// held whole until its newline, so this bounds memory against a file with no line structure (a minified
    /// array, a damaged stream): past it the run fails with exit code 2 naming the line's byte offset.
    /// Default 256; at least the chunk size.
    #[arg(long, value_name = "MIB", required = false)]
    pub max_line_mib: u64,
    /// Properties whose statements are kept whatever their subject's labels *before* their property entity is
    /// seen (the dump is not ordered by type, so transitivity is only known at the end). Statements of other
    /// transitive properties with unlabelled subjects are counted as `transitive_statements_missed`; add such
    /// properties here. Default: Wikidata's main transitive item properties (P131 P171 P276 P279 P361 P527
    /// P706).
    #[arg(skip)]
    pub transitive_seed: Vec<String>,
    /// Chunk size in KiB of decompressed JSON handed to one worker (typical 4096: a few hundred entity lines;
    /// lines longer than a chunk are joined across chunks). Does not change the outputs.
    #[arg(skip)]
    pub chunk_kib: usize,
    /// Inflate the members of a multi-member gzip in parallel (falls back to sequential when impossible).
    #[arg(skip)]
    pub parallel_gzip: bool,
    /// Decode the blocks of a bzip2 file in parallel (`dump::bz2`; stdin is always decoded on one thread).
    /// Does not change the outputs.
    #[arg(skip)]
    pub parallel_bzip2: bool,
    /// Skim each line before parsing it: copy only the keys the stage reads (dropping sitelinks, aliases,
    /// qualifiers, references and unconfigured languages) so that simd-json never tapes the rest (see
    /// `dump::skim`). Does not change the outputs of valid lines; `false` parses whole lines (slower; for
    /// comparison and as a fallback should a dump ever need it).
    #[arg(long = "no-skim", action = clap::ArgAction::Set, num_args = 0, required = false, default_missing_value = "false",
        help = "Parse whole lines instead of skimming them first (sets `skim = false`; for comparison)",
        long_help = None)]
    pub skim: bool,
    /// Memory for the join state (`--memory-limit`): past it, sorted runs are spilled to a temporary folder in
    /// the run directory and merged at the end (`extract::spill`; the outputs do not change). A size such as
    /// `64M` or `8G` (powers of 1024; at least 4M), `auto` (default: half the machine's memory, or of the
    /// cgroup's limit when lower) or `none`. The peak is this plus a fixed overhead (docs/extract.md). Not
    /// written to the manifest's config (it does not change the outputs); the manifest's `extra` has the
    /// bytes, runs and limit.
    #[arg(long, value_name = "SIZE", required = false)]
    #[serde(skip_serializing)]
    pub memory_limit: MemoryLimit,
    /// Disk for the spill runs (`--spill-budget`): the most bytes of runs on disk at once. Past it the stage
    /// exits with code 2 naming the budget and the kind of record that outgrew it, and leaves nothing (the
    /// spill folder goes, no artifact is written). A size such as `500M` or `64G` (powers of 1024), `auto`
    /// (default: half the space free on the run folder's filesystem when the stage starts) or
    /// `none`. What a full dump needs: docs/extract.md. Not written to the manifest's config (it does not
    /// change the outputs); the manifest's `extra.spill` has the budget and the bytes per kind.
    #[arg(long, value_name = "SIZE", required = false)]
    #[serde(skip_serializing)]
    pub spill_budget: SpillBudget,
    /// The statements of items not labelled in every language of `languages` (most of a dump: ≈ 2.1 M of the
    /// ≈ 788 M item statements of 2024 become triples; 76 % of a generated dump's bytes): `count` (default) reads
    /// them all for the manifest's dump-wide counts (`item_statements` — the paper's "≈ 788 M" —, `snaks_*`,
    /// `statements_without_id`, …, `transitive_statements_missed`); `skip` (`--skip-unlabelled-statements`)
    /// jumps over them without reading them, except those of `transitive_seed`: the five artifacts are the same,
    /// those counts are left out of the manifest (its `extra.unlabelled_statements` says `skipped`, else
    /// `read`), and what is jumped over is checked for structure only (docs/extract.md). Written to the
    /// manifest's config only when `skip`.
    #[arg(long = "skip-unlabelled-statements", action = clap::ArgAction::Set, num_args = 0, required = false, default_missing_value = "skip",
        value_enum,
        help = "Jump over the statements of items not labelled in every language instead of reading them (sets \
                `unlabelled_statements = \"skip\"`): the same five artifacts for less CPU, but the manifest has no \
                dump-wide statement counts (`item_statements`, `snaks_*`, `transitive_statements_missed`, …)",
        long_help = None)]
    #[serde(skip_serializing_if = "UnlabelledStatements::is_count")]
    pub unlabelled_statements: UnlabelledStatements,
}

/// `extract.unlabelled_statements`: read or jump over the statements of items without all labels.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum UnlabelledStatements {
    /// Read them all, for the manifest's dump-wide statement counts (default).
    #[default]
    Count,
    /// Jump over them (keeping the transitive seed's): 0.81–0.91 of the CPU on a generated dump, same artifacts.
    Skip,
}

impl UnlabelledStatements {
    fn is_count(&self) -> bool {
        *self == UnlabelledStatements::Count
    }
}

/// The manifest counts that `unlabelled_statements = "skip"` cannot make (they count unlabelled items'
/// statements), left out of its manifest.
pub const COUNTS_OF_ALL_STATEMENTS: &[&str] = &[
    "item_statements",
    "statements_without_id",
    "statements_bad_property",
    "statements_bad_rank",
    "snaks_value",
    "snaks_somevalue",
    "snaks_novalue",
    "snaks_unknown_datatype",
    "values_numeric_id_only",
    "values_other_entity_type",
    "values_bad_entity",
    "transitive_statements_missed",
];

impl Default for Config {
    fn default() -> Self {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect();
        Config {
            languages: s(&["en", "fr", "de", "es", "it", "pt", "ko", "ja"]),
            mul_fallback: s(&["en", "fr", "de", "es", "it", "pt"]),
            max_bad_lines: 1000,
            max_bad_share: 0.01,
            allow_truncated: false,
            allow_empty: false,
            max_line_mib: 256,
            transitive_seed: s(&[
                "P131", "P150", "P171", "P276", "P279", "P361", "P527", "P706",
            ]),
            chunk_kib: 4096,
            parallel_gzip: true,
            parallel_bzip2: true,
            skim: true,
            memory_limit: MemoryLimit::auto(),
            spill_budget: SpillBudget::auto(),
            unlabelled_statements: UnlabelledStatements::Count,
        }
    }
}

impl Config {
    /// How the readers chunk the dump under this config (the same for a whole run, a shard and decode-only),
    /// on a pool of `threads` workers (the stage context's).
    pub fn read_opts(&self, threads: usize) -> ReadOpts {
        ReadOpts {
            chunk_size: self
                .chunk_kib
                .clamp(1, CHUNK_KIB_MAX)
                .saturating_mul(1 << 10),
            parallel_gzip: self.parallel_gzip,
            parallel_bzip2: self.parallel_bzip2,
            max_line: usize::try_from(self.max_line_mib.saturating_mul(1 << 20))
                .unwrap_or(usize::MAX),
            threads,
            ..ReadOpts::default()
        }
    }
}

// ---- per-line core -----------------------------------------------------------------------------------------

/// Largest `chunk_kib` accepted (1 GiB; typical 4096).
pub const CHUNK_KIB_MAX: usize = 1 << 20;
/// Largest `max_line_mib` accepted (64 GiB: a line is held whole in memory; typical 256).
pub const MAX_LINE_MIB_MAX: u64 = 1 << 16;

#[cfg(test)]
mod tests {
    use super::*;

    /// The TOML keys `memory_limit` and `spill_budget` read through the flags' parser (`spill::MemoryLimit`,
    /// `spill::SpillBudget`): the same values, the same refusals.
    #[test]
    fn the_size_keys_are_parsed_as_the_flags_are() {
        let cfg = |t: &str| toml::from_str::<Config>(t);
        let c = cfg("memory_limit = \"4M\"\nspill_budget = \"none\"").unwrap();
        assert_eq!(
            (
                c.memory_limit.bytes(),
                c.spill_budget.bytes(std::path::Path::new("."))
            ),
            (Some(4 << 20), None)
        );
        let e = cfg("memory_limit = \"1M\"").unwrap_err().to_string();
        assert!(e.contains("use at least 4M"), "{e}");
        let e = cfg("spill_budget = \"lots\"").unwrap_err().to_string();
        assert!(e.contains("--spill-budget `lots`"), "{e}");
    }
}
