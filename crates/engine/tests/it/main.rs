//! The integration tests of `pgsurge-engine`, as modules of one test binary: one
//! build and link for all of them, and one shared test server per run.
//!
//! `tests/no_alloc.rs` is a binary of its own: it installs a counting global
//! allocator.

mod connection_loss;
mod run_spec;
