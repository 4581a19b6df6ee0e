//! Integration tests for `pipeline`.
