//! The integration tests of `pgsurge-records`, as modules of one test binary: one
//! build and link for all of them, and one shared test server per run.

mod fuzz_replay;
mod pgbench_tools_import;
mod where_time_goes;
