//! The pipeline's stages, each one folder: [`extract`] (dump → Parquet), [`embed`] (graph → walks → train),
//! [`distort`], [`export`] (with its report), [`translate`]; the contract they all implement ([`contract`]:
//! the `Stage` trait and the context that runs it), the same contract for the commands that write a folder
//! without being a stage ([`folder`]: `sword eval run`, `eval compare`, the eval reports), the one
//! command-line path ([`cli`]), and [`pipeline`], `sword run`, a loop over the stages.

pub mod cli;
pub mod contract;
pub mod distort;
pub mod embed;
pub mod export;
pub mod extract;
pub mod folder;
pub mod pipeline;
pub mod revalidate;
pub mod translate;
