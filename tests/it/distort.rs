//! Integration tests for `distort`.
