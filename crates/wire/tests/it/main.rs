//! The integration tests of `pgsurge-wire`, as modules of one test binary: one
//! build and link for all of them, and one shared test server per run.

mod common;

mod fake_server;
mod reference_libpq;
mod server;
mod tls;
