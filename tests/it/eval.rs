//! Integration tests for `eval`.
