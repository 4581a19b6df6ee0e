//! The one integration-test binary: each module tests one stage through the `sword` binary and the library.

mod stub;
mod util;

mod bz2;
mod carry;
mod chain;
mod cli;
mod compare;
mod compare_languages;
mod disk_full;
mod distort;
mod docs;
mod eval;
mod extract;
mod falsity;
mod folder;
mod gz;
mod hostile;
mod modules;
mod node2vec;
mod pipeline;
mod promotion;
mod refusal;
mod revalidate;
mod safety;
mod spill;
mod stale;
mod synth;
mod synth_world;
mod versions;
