//! Which node walk `w` starts at: round `w / n`, and in that round the node at position `w % n` of a
//! permutation of the nodes that is new for every round (`--order shuffled`, the default), or node `w % n`
//! itself (`--order sorted`).
//!
//! **Why shuffled.** node2vec's reference shuffles the start nodes of every round, and pecanpy shuffles all the
//! walks' starts at once; gensim then trains in that order. The trainer cuts the walks into contiguous blocks
//! trained in lockstep (`train::sgd`), so in node order the `s`-th walks of the blocks start at nodes a fixed
//! distance apart, and `gcd(blocks, walks_per_node)` of them at the *same* node, every super-step, all run long
//! (2 at the default 64 blocks, 10 at `--blocks 10`): their deltas on that node's rows, computed against one
//! snapshot, are summed. With `--blocks 10` that cost the real fixtures' graph 0.043 AUC (docs/embedding.md,
//! "Walk order and the blocks"). A new permutation every round spreads each super-step's starts at random.
//!
//! **How.** A keyed bijection of `0..n`, no table: a balanced Feistel network of 4 rounds over the smallest
//! even number of bits `2h` with `2^(2h) ≥ n`, applied again while the value is `≥ n` (cycle walking, which
//! keeps a bijection of `0..n`; fewer than 4 passes expected since `2^(2h) < 4n`). Its key is the seed and the
//! round, so the order does not depend on the thread count or the batches, and a walk's ids are still those
//! of its own stream `(seed, start, round)`.

use crate::core::ids::NodeId;
use serde::{Deserialize, Serialize};

/// The order of the walks' start nodes within a round (see the module doc).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Order {
    /// A permutation of the nodes, new for every round, keyed by the seed (node2vec's and pecanpy's order).
    #[default]
    Shuffled,
    /// Node 0, 1, …, n − 1 in every round (the bytes of the releases before the shuffle).
    Sorted,
}

/// The start node of every walk of a run over `n` nodes.
#[derive(Clone, Copy, Debug)]
pub struct Starts {
    n: u64,
    /// The seed mixed once; each round's key is derived from it.
    seed_key: u64,
    order: Order,
    /// Bits of one Feistel half (`h`).
    half: u32,
}

/// One 64-bit mix (splitmix64's finaliser).
#[inline]
fn mix(mut z: u64) -> u64 {
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

impl Starts {
    /// The starts of walks over `n` nodes, seeded by `seed`.
    pub fn new(n: u64, seed: u64, order: Order) -> Starts {
        let bits = 64 - n.saturating_sub(1).leading_zeros();
        Starts {
            n,
            seed_key: mix(seed ^ 0x6e32_765f_7374_6172),
            order,
            half: bits.div_ceil(2),
        }
    }

    /// `(round, start node)` of walk `w` (`n > 0`).
    #[inline]
    pub fn start(&self, w: u64) -> (u64, NodeId) {
        let (round, pos) = (w / self.n, w % self.n);
        match self.order {
            Order::Sorted => (round, pos as NodeId),
            Order::Shuffled => (round, self.permute(round, pos) as NodeId),
        }
    }

    /// Position `pos` of round `round`'s permutation of `0..n`.
    fn permute(&self, round: u64, pos: u64) -> u64 {
        if self.n <= 1 {
            return pos;
        }
        let key = mix(self.seed_key ^ round);
        let mut x = pos;
        loop {
            x = self.feistel(key, x);
            if x < self.n {
                return x;
            }
        }
    }

    /// The keyed Feistel bijection of `0..2^(2h)`.
    #[inline]
    fn feistel(&self, key: u64, x: u64) -> u64 {
        let h = self.half;
        let m = (1u64 << h) - 1;
        let (mut l, mut r) = (x >> h, x & m);
        for i in 0..4u64 {
            let f = mix(key ^ (i << 56) ^ r) & m;
            (l, r) = (r, l ^ f);
        }
        (l << h) | r
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Every round of every size is a permutation of `0..n` (each node starts exactly one walk per round).
    #[test]
    fn every_round_is_a_permutation() {
        for n in [
            1u64, 2, 3, 4, 5, 7, 8, 16, 17, 100, 255, 256, 257, 1000, 4097,
        ] {
            let s = Starts::new(n, 9, Order::Shuffled);
            for round in 0..3 {
                let mut seen = vec![false; n as usize];
                for pos in 0..n {
                    let (r, v) = s.start(round * n + pos);
                    assert_eq!(r, round);
                    assert!(!seen[v as usize], "n {n} round {round}: {v} twice");
                    seen[v as usize] = true;
                }
            }
        }
    }

    /// Sorted is the identity; shuffled differs between rounds and seeds, and is not the identity.
    #[test]
    fn shuffled_rounds_differ_and_sorted_is_the_identity() {
        let n = 1000u64;
        let order = |seed: u64, round: u64, o: Order| -> Vec<NodeId> {
            let s = Starts::new(n, seed, o);
            (0..n).map(|p| s.start(round * n + p).1).collect()
        };
        let id: Vec<NodeId> = (0..n as NodeId).collect();
        assert_eq!(order(1, 3, Order::Sorted), id);
        let a = order(1, 0, Order::Shuffled);
        assert_ne!(a, id);
        assert_ne!(a, order(1, 1, Order::Shuffled));
        assert_ne!(a, order(2, 0, Order::Shuffled));
        assert_eq!(a, order(1, 0, Order::Shuffled));
        // Far from sorted: fewer than 5 % of neighbours in the order are neighbours in id.
        let close = a.windows(2).filter(|w| w[0].abs_diff(w[1]) == 1).count();
        assert!(close < 50, "{close}");
    }

    /// The trap the shuffle removes: the trainer's lockstep blocks take contiguous ranges of the walks, and at
    /// super-step `s` train the `s`-th walk of each. In node order, with 10 walks per node and 64 blocks, blocks
    /// `k` and `k + 32` start at the same node at every step; shuffled, two blocks meet at a node about as often
    /// as chance has it (each pair of the step's 64 starts alike with probability 1/n).
    #[test]
    fn lockstep_blocks_do_not_start_together() {
        use crate::stages::embed::train::sgd::block_walks;
        let (n, rounds, blocks) = (1000u64, 10u64, 64usize);
        let total = (n * rounds) as usize;
        let ranges: Vec<_> = (0..blocks).map(|b| block_walks(b, blocks, total)).collect();
        let steps = ranges.iter().map(|r| r.len()).min().unwrap();
        let meetings = |order: Order| -> usize {
            let s = Starts::new(n, 5, order);
            (0..steps)
                .map(|step| {
                    let mut at: Vec<NodeId> = ranges
                        .iter()
                        .map(|r| s.start((r.start + step) as u64).1)
                        .collect();
                    at.sort_unstable();
                    at.windows(2).filter(|w| w[0] == w[1]).count()
                })
                .sum()
        };
        // Node order: 32 pairs meet at every one of the 156 steps.
        assert_eq!(meetings(Order::Sorted), 32 * steps);
        // Shuffled: 2016 pairs per step × 156 steps / 1000 nodes ≈ 314 expected; far below 4992.
        let shuffled = meetings(Order::Shuffled);
        assert!((150..600).contains(&shuffled), "{shuffled}");
    }

    proptest! {
        /// A permutation for any size and seed (checked on a sample of sizes up to 5000).
        #[test]
        fn any_size_is_a_permutation(n in 1u64..5000, seed: u64, round in 0u64..1000) {
            let s = Starts::new(n, seed, Order::Shuffled);
            let mut seen = vec![false; n as usize];
            for pos in 0..n {
                let (r, v) = s.start(round * n + pos);
                prop_assert_eq!(r, round);
                prop_assert!(!std::mem::replace(&mut seen[v as usize], true));
            }
        }
    }
}
