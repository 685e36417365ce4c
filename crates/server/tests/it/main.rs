//! The integration tests of `pgsurge-server`, as modules of one test binary: one
//! build and link for all of them, and one shared test server per run.
//!
//! `tests/bin_env.rs` is a binary of its own: it sets `PGSURGE_PG_BIN` in its
//! environment, which every test of the process would see.

mod common;

mod cli;
mod crash;
mod fetched;
mod fixture;
mod fixture_exit;
mod lifecycle;
mod meson_build;
mod replicas;
