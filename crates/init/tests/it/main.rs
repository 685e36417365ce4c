//! The integration tests of `pgsurge-init`, as modules of one test binary: one
//! build and link for all of them, and one shared test server per run.

mod common;

mod differential;
mod freeze;
mod speed;
mod tablespaces_and_errors;
