//! The integration tests of `pgsurge-store`, as modules of one test binary: one
//! build and link for all of them, and one shared test server per run.

mod common;

mod postgres;
mod sqlite;
