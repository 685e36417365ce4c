//! The integration tests of `pgsurge-generators`, as modules of one test binary: one
//! build and link for all of them.

mod common;

mod merge;
mod merge_refusals;
