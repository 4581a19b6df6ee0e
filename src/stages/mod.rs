//! The pipeline's stages, each one folder: [`extract`] (dump → Parquet), [`embed`] (graph → walks → train),
//! [`distort`], [`export`] (with its report), [`translate`]; and [`pipeline`], `sword run`, which chains them.

pub mod distort;
pub mod embed;
pub mod export;
pub mod extract;
pub mod pipeline;
pub mod translate;
