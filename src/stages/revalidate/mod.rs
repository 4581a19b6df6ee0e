//! `sword revalidate`: the status of every statement of an old SWORD benchmark against the extract of a newer
//! dump (docs/versions.md). [`verdict`] is the pure core, shared with `distort --carry-from`.

pub mod report;
pub mod stage;
pub mod verdict;

pub use self::stage::{RevalidateArgs, RevalidateConfig, RevalidateStage};

pub use self::verdict::{
    original_of, tally, verdict, verdicts, NewFacts, OldBenchmark, OldStatement, RolePools, Status,
    Verdict,
};
