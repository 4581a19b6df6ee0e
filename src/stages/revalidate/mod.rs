//! `sword revalidate`: the status of every statement of an old SWORD benchmark against the extract of a newer
//! dump (docs/versions.md). The pure core ([`crate::kb::verdict`]) is shared with `distort --carry-from`.

pub mod report;
pub mod stage;

pub use self::stage::{RevalidateArgs, RevalidateConfig, RevalidateStage};
