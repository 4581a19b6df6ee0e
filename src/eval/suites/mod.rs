//! The suites, one module each: SWORD ([`sword`]), the Chinese yes/no sycophancy study ([`sycophancy`]),
//! AdversaRiskQA ([`adversariskqa`]) and its long-form factuality ([`longform`]). Each module holds the suite's
//! measures; its `suite` submodule implements [`crate::eval::suite::Suite`] on top of the shared readers,
//! prompts and reports.

pub mod adversariskqa;
pub mod longform;
pub mod sword;
pub mod sycophancy;

use crate::eval::suite::{Suite, SuiteName};

/// The suite `--suite` names.
pub fn of(name: SuiteName) -> &'static dyn Suite {
    match name {
        SuiteName::Sword => &self::sword::suite::SwordSuite,
        SuiteName::Sycophancy => &self::sycophancy::suite::SycophancySuite,
        SuiteName::Adversariskqa => &self::adversariskqa::suite::AdversariskqaSuite,
        SuiteName::Longform => &self::longform::suite::CountsSuite,
        SuiteName::AdversariskqaLongform => &self::longform::suite::FactFilesSuite,
    }
}
