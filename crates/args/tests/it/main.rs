//! The integration tests of `pgsurge-args`, as modules of one test binary: one
//! build and link for all of them.
//!
//! `tests/rlimit_raise.rs` is a binary of its own: it lowers and raises the
//! process's open-files limit, which every test of the process would see.

mod diff_pgbench;
mod generator_options;
mod init_jobs;
mod parse;
mod run_spec;
