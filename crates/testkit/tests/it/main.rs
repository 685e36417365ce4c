//! The integration tests of `pgsurge-testkit`, as modules of one test binary: one
//! build and link for all of them.

mod house;
mod house_errors;
mod nothing_left_in_tmp;
mod uml;
