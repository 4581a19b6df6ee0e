//! `sword walks`: node2vec second-order random walks over the CSR graph.
//!
//! Walk order follows node2vec and pecanpy: for round `r` in `0..walks_per_node`, for every node `v` in an
//! order shuffled anew each round (a keyed permutation, [`order`]; `--order sorted` = `0..n`), one walk of
//! `length` nodes starting at `v`. Walk `(v, r)` draws from its own `ChaCha8Rng` seeded from `(seed, v, r)`,
//! so the walks do not depend on the thread count or on batch boundaries.
//!
//! ## The biased step (why rejection sampling, and no alias tables)
//! After stepping `t → v`, node2vec picks the next node `x ∈ N(v)` with weight `1/p` if `x = t` (return),
//! `1` if `x ∈ N(t)` (stay close), `1/q` otherwise (move out). The textbook implementation precomputes an
//! alias table per directed edge `(t, v)`: `Σ_v deg(v)²` entries, which is hopeless with Wikidata hubs
//! ("human" has millions of neighbours). We sample by rejection instead, with an envelope of height
//! `M = max(1, 1/q)` over every candidate plus, when `1/p > M`, an extra block of area `1/p − M` that
//! belongs to the return candidate `t` alone ("outlier folding"): a uniform point in the envelope is drawn
//! with one random number; it lands in column `i` (candidate `x = N(v)[i]`) at height `y`, and `x` is kept
//! iff `y < w(x)`. The point below `min(1/p, 1, 1/q)` is accepted without looking anything up; otherwise
//! `x ∈ N(t)` is decided by searching the shorter of the two sorted neighbour lists (a linear scan up to 32
//! entries, else binary search). Cost per step: O(1) expected tries (≤ `M / min(1, 1/q)`, e.g. ≤ 2 for
//! q = 0.5, and 1/p never inflates it) × O(log min(deg t, deg x)) per lookup, no memory beyond the CSR.
//! For `p = q = 1` every weight is 1 and the step is a single uniform draw (the "uniform path").
//!
//! ## Many walks in flight
//! On a graph whose CSR does not fit in cache every step is a chain of dependent cache misses (offsets of
//! the current node → the candidate → its offsets → the list searched). One task therefore keeps
//! `LOCKSTEP` walks in flight and advances them in passes, each pass issuing the prefetches the next one
//! reads (`walk_group`; on the biased path a finished walk's slot starts the next walk at once). Each walk
//! consumes its own random stream in exactly the order `walk_into` does, so the ids are those of
//! `walk_into` walk by walk (tests `lockstep_groups_equal_single_walks*`).
//!
//! ## Artifact `walks.bin`
//! ```text
//! offset  size            field
//! 0       8               magic b"SWORDWLK"
//! 8       4               format version (u32 LE) = 1
//! 12      4               walk_length (u32 LE)
//! 16      8               num_walks (u64 LE)
//! 24      4 L num_walks   node ids (u32 LE), walk after walk; u32::MAX pads a walk that cannot continue
//! ```
//! A walk can only stop early at a node without neighbours, i.e. when it starts at an isolated node: it is
//! then `[v, MAX, MAX, ...]`. `--text` also writes `walks.txt`: one walk per line, node keys (from
//! `nodes.txt`) separated by single spaces, padding omitted — the input format of gensim's `LineSentence`.
//!
//! The file is written streaming, batch after batch, while the next batch is computed (bounded memory:
//! two batches of ~16 MB, whatever the graph size).

pub mod config;
pub mod format;
pub mod generate;
pub mod lockstep;
pub mod order;
pub mod stage;
pub mod step;
#[cfg(test)]
mod tests;

pub use self::config::WalkConfig;
pub use self::format::{
    write_header, write_ids, write_text, WalkHeader, Walks, PAD, WALKS_HEADER_LEN, WALKS_MAGIC,
    WALKS_VERSION,
};
pub use self::generate::{generate, generate_batched, generate_with, WalkStats};
pub use self::lockstep::{walk_group, LOCKSTEP, TASK_WALKS};
pub use self::order::{Order, Starts};
pub use self::stage::WalksStage;
pub use self::step::{biased_step, walk_into, walk_rng, Bias};
