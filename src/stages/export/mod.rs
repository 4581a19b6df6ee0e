//! `sword export`: `sword.parquet` (the benchmark), the translation requests, an optional Hugging Face dataset
//! layout ([`stage`]), and the report ([`report`]).

pub mod report;
pub mod stage;

pub use self::stage::*;
