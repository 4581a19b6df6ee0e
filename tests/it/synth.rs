//! Integration tests for `synth`.
