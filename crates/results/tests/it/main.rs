//! The integration tests of `pgsurge-results`, as modules of one test binary: one
//! build and link for all of them.
//!
//! `tests/no_alloc.rs` is a binary of its own: it installs a counting global
//! allocator.

mod common;

mod formats;
mod generator_json;
mod json_schema;
mod observed_logs;
mod observed_reports;
mod progress_threads;
