//! The walks stage's settings (`pipeline/walks.toml` and the flags of `sword walks`).

use super::order::Order;
use crate::core::error::{Error, Result};
use serde::{Deserialize, Serialize};

/// Settings of the walks stage (`pipeline/walks.toml`; the same names as flags of `sword walks`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, clap::Args)]
#[serde(default, deny_unknown_fields)]
pub struct WalkConfig {
    /// node2vec return parameter p: weight 1/p for stepping back to the previous node. 1.0 = unbiased (the
    /// default); typical 0.25–4 (low p keeps walks local).
    #[arg(long, required = false)]
    pub p: f64,
    /// node2vec in-out parameter q: weight 1/q for moving to a node not adjacent to the previous one.
    /// 1.0 = unbiased (the default); q > 1 favours breadth (BFS-like), q < 1 depth (DFS-like); typical 0.25–4.
    #[arg(long, required = false)]
    pub q: f64,
    /// Nodes per walk, start included. Default 10, as the SWORD paper.
    #[arg(long, required = false)]
    pub length: usize,
    /// Walks started from every node. Default 10, as the SWORD paper.
    #[arg(long, required = false)]
    pub walks_per_node: usize,
    /// Seed of every walk's random stream (with the start node and round). Default 1 (`sword run` passes its
    /// `--seed`).
    #[arg(long, required = false)]
    pub seed: u64,
    /// The order of the start nodes within a round: `shuffled` (default: a new permutation of the nodes every
    /// round, keyed by the seed, as node2vec and pecanpy) or `sorted` (node 0, 1, … every round: the bytes of
    /// earlier releases; it costs the trainer's lockstep blocks embedding quality, docs/embedding.md).
    #[arg(long, required = false, value_enum)]
    pub order: Order,
    /// Also write `walks.txt` (node keys, one walk per line) for gensim and other tools.
    #[arg(long, action = clap::ArgAction::Set, num_args = 0, default_missing_value = "true", required = false)]
    pub text: bool,
}

impl Default for WalkConfig {
    fn default() -> Self {
        WalkConfig {
            p: 1.0,
            q: 1.0,
            length: 10,
            walks_per_node: 10,
            seed: 1,
            order: Order::Shuffled,
            text: false,
        }
    }
}

impl WalkConfig {
    /// Check ranges: p, q finite and > 0, length and walks per node ≥ 1, length fits u32.
    pub fn validate(&self) -> Result<()> {
        for (name, v) in [("p", self.p), ("q", self.q)] {
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::Config(format!(
                    "walks: {name} must be a positive number, got {v}"
                )));
            }
        }
        if self.length == 0 || self.length > u32::MAX as usize {
            return Err(Error::Config(format!(
                "walks: length must be in 1..2^32, got {}",
                self.length
            )));
        }
        if self.walks_per_node == 0 {
            return Err(Error::Config("walks: walks-per-node must be ≥ 1".into()));
        }
        Ok(())
    }
}
