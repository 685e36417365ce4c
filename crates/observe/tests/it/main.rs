//! The integration tests of `pgsurge-observe`, as modules of one test binary: one
//! build and link for all of them, and one shared test server per run.

mod host_through_server;
mod lag;
