//! The replay crate's integration tests.

mod fuzz_regressions;
