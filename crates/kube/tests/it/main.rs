//! The integration tests of `pgsurge-kube`, as modules of one test binary: one
//! build and link for all of them.

mod job;
