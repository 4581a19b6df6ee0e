//! Integration tests for `extract`.
