//! Integration tests for `node2vec`.
