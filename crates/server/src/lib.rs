//! Throwaway PostgreSQL clusters: find or fetch binaries, initdb, start, stop.
//!
//! * [`PgBinaries`] finds server binaries (`--pg-bin DIR`, `PGSURGE_PG_BIN`, `PATH`,
//!   `pg_config`, `/usr/lib/postgresql/*/bin`); [`fetch`] gets a requested version.
//! * [`ClusterBuilder`] / [`Cluster`]: initdb (dropping root to `postgres`), settings,
//!   start on a private socket directory and a free port, stop on drop, watchdog.
//! * [`testing`]: the fixture all pgsurge tests use.
//! * [`server_main`]: `pgsurge server start|stop|status`.
//!
//! Modules: `binaries` (finding binaries and their version), `fetch` and
//! `fetch_archive` (a requested version, downloaded when not installed), `cluster`
//! (throwaway clusters), `builder` (configuring and starting one), `config_files`
//! (settings and `pg_hba.conf` before each start), `topology` (a primary and its
//! streaming standbys), `fault` (the faults a topology takes: promote, pause or resume
//! replay, immediate stop, kill, a delay on a standby's link), `relay` (a standby's
//! replication link through this process, with a delay of its own), `datadir` (temporary and socket
//! directories, reusing a data directory), `deadline` (a child program killed when it
//! runs past its limit: `psql`, the single-user setup), `run_as` (dropping root), `postmaster` (the
//! running postmaster seen from outside), `watchdog` (stopping a server whose starter
//! died), `sweep` (cleaning up after killed runs), `state` (what `server start` leaves
//! for `stop` and `status`), `cli` (`pgsurge server`), `testing` (the test fixture),
//! `error` ([`ServerError`]), `source_build` (PostgreSQL built from source, cached).
//!
//! ```no_run
//! use pgsurge_server::{BinarySource, ClusterBuilder};
//!
//! let cluster = ClusterBuilder::new()
//!     .binaries(BinarySource::Auto)          // or Dir("/opt/pg/bin"), Version("17")
//!     .setting("shared_buffers", "1GB")
//!     .data_checksums(true)
//!     .database("bench")
//!     .start()?;
//! println!("{}", cluster.conninfo("bench")); // host=/tmp/pgsurge-…/sock port=… user=postgres dbname=bench
//! // Ctrl-C: the postmaster sits in its own process group, so the terminal's SIGINT
//! // reaches only us; a handler (e.g. the `ctrlc` crate) calls
//! // `cluster.stop_handle().stop()` or `pgsurge_server::stop_all()` before exiting.
//! drop(cluster);                             // fast shutdown, then immediate; temp dirs removed
//! # Ok::<(), pgsurge_server::ServerError>(())
//! ```
//!
//! Exits that skip destructors (SIGKILL, `process::exit`, abort) are covered by a
//! watchdog process per cluster, and [`sweep_stale_temp_clusters`] cleans up after runs
//! whose watchdog died too.

#![warn(missing_docs)]

mod binaries;
mod builder;
mod cli;
mod cluster;
mod config_files;
mod datadir;
mod deadline;
mod error;
mod fault;
pub mod fetch;
#[cfg(feature = "fetch")]
mod fetch_archive;
mod postmaster;
mod relay;
mod run_as;
pub mod source_build;
mod state;
mod sweep;
pub mod testing;
mod topology;
mod watchdog;

use std::ffi::OsString;

pub use binaries::{PgBinaries, PgVersion, PG_BIN_ENV};
pub use builder::{BinarySource, ClusterBuilder, SettingsTarget};
pub use cluster::{free_port, stop_all, Cluster, StopHandle};
pub use error::{Result, ServerError};
pub use fault::Fault;
pub use postmaster::{is_alive, PidFile};
pub use relay::LinkRelay;
pub use run_as::RunAs;
pub use state::{ServerRecord, STATE_DIR_ENV};
pub use sweep::sweep_stale_temp_clusters;
pub use topology::{check_topology, multi_host_conninfo, replica_name, Topology, MAX_REPLICAS};

/// `pgsurge server ...` writing to the given streams instead of the process's stdout and
/// stderr (for tests and embedding); returns the exit code like [`server_main`].
pub fn server_command(
    args: &[OsString],
    stdout: &mut dyn std::io::Write,
    stderr: &mut dyn std::io::Write,
) -> i32 {
    cli::run(args, stdout, stderr)
}

/// The clap definition of `pgsurge server` (for the top-level help, completions and man
/// page; parsing uses the same definition).
pub fn server_cli() -> clap::Command {
    cli::command()
}

/// Entry point of `pgsurge server ...`; `args` follow the word `server`. Returns the
/// process exit code.
pub fn server_main(args: &[OsString]) -> i32 {
    cli::main(args)
}
