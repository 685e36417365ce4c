//! The integration tests of `pgsurge-script`, as modules of one test binary: one
//! build and link for all of them, and one shared test server per run.
//!
//! `tests/no_alloc.rs` is a binary of its own: it installs a counting global
//! allocator.

mod eval;
mod expressions;
mod fuzz_regressions;
mod invalid_scripts;
mod long_chain;
mod parse;
mod seeded_clients;
mod split_diff;
