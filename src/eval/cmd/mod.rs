//! One module per `sword eval` subcommand: its arguments and what it does. The suite-specific work goes
//! through [`crate::eval::suite::Suite`].

pub mod chain;
pub mod judge;
pub mod longform;
pub mod prompts;
pub mod report;
pub mod run;
pub mod score;
