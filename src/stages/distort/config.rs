//! The settings of `sword distort` (`pipeline/distort.toml` and the flags).

use crate::core::falsity::Tier;
use serde::{Deserialize, Serialize};

/// `--min-falsity`'s values: `open`, `likely`, `certain` (distort's flag and `sword run`'s).
pub fn parse_tier(s: &str) -> Result<Tier, String> {
    Tier::parse(s).ok_or_else(|| format!("`{s}`: expected open, likely or certain"))
}

/// Settings of `sword distort` (`pipeline/distort.toml`; the same names as its flags).
#[derive(Clone, Debug, Serialize, Deserialize, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct DistortConfig {
    /// Seed of every random draw (sampling and replacements). Same seed → byte-identical output. Typical: 42.
    #[arg(long, required = false)]
    pub seed: u64,
    /// Number of original triples to sample (the paper uses 500). Fewer when the frame is smaller.
    #[arg(long, required = false)]
    pub samples: usize,
    /// Sample per property: at most `per_property_cap` originals per property enter the pool that is then
    /// sampled uniformly (uniform sampling over triples is dominated by a few properties such as P31).
    #[arg(long, action = clap::ArgAction::Set, num_args = 0, default_missing_value = "true", required = false)]
    pub stratify_by_property: bool,
    /// Cap per property when stratifying (originals per property). Typical: 5–20.
    #[arg(long, required = false)]
    pub per_property_cap: usize,
    /// Candidate draws per variant before it is dropped. Typical: 100.
    #[arg(long, required = false)]
    pub max_attempts: u32,
    /// Node budget of one transitive reachability search; when exhausted the candidate is rejected
    /// (`transitive_bound`). Typical: 100 000 (a few ms).
    #[arg(long, required = false)]
    pub transitive_max_visits: usize,
    /// Guard probe: further candidates per variant on which every guard is run and its verdict counted
    /// (`extra.guard_probe` of the manifest), the whole pool when it is smaller. They come from a random
    /// stream of their own and never enter the output, so the probe changes no row. It measures how often a
    /// uniform draw would be true, per strategy and guard (a 500-original run draws ≈ 2 000 candidates, too
    /// few to meet the rarer near-misses). Default 100 (`max_attempts`); 0 turns it off.
    #[arg(long, required = false)]
    pub probe_candidates: usize,
    /// Keep only distortions at least this sure to be false (docs/falsity.md): `open` (the paper's rule:
    /// absent from Wikidata), `likely` (the subject has another value for the property) or `certain` (a
    /// `novalue` statement or a property constraint rules it out). A candidate below it is drawn again like
    /// one that exists; the manifest counts the rejected draws and the variants that fell short per strategy.
    #[arg(long, required = false, value_parser = parse_tier)]
    pub min_falsity: Tier,
}

impl Default for DistortConfig {
    fn default() -> Self {
        DistortConfig {
            seed: 42,
            samples: 500,
            stratify_by_property: false,
            per_property_cap: 10,
            max_attempts: 100,
            transitive_max_visits: crate::kb::index::DEFAULT_MAX_VISITS,
            probe_candidates: 100,
            min_falsity: Tier::Open,
        }
    }
}
