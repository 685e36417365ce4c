//! pgbench -i: schema creation and data generation identical to pgbench 18.
//!
//! [`initialize`] runs the steps of an [`InitSpec`] (`-I dtgGvpf`) over a
//! connection and prints pgbench's messages (`dropping old tables...`,
//! progress lines, `done in …`) to the given stderr writer. Failures come back
//! as [`InitError`], which renders pgbench's exact failure lines; every init
//! failure exits with status 1.
//!
//! Modules: `spec` (options), `steps` (step string), `ddl` (SQL text),
//! `rows` (COPY rows), `progress` (progress lines, clock), `runner` (step
//! execution), `parallel` (`--init-jobs`: the heavy steps over several
//! connections), `session` (what a connection must offer), `wire_session`
//! (that, for `pgsurge_wire::Connection`), `error` (`InitError`, pgbench's
//! failure texts), `runner_tests` (the runner against a fake session and clock).
//! This crate does not parse command lines or open connections.
#![warn(missing_docs)]

mod ddl;
mod error;
mod parallel;
mod progress;
mod rows;
mod runner;
mod session;
mod spec;
mod steps;
mod wire_session;

use std::io::{IsTerminal, Write};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

pub use error::InitError;
pub use parallel::{OpenSession, Parallel};
pub use progress::{Clock, MonotonicClock};
pub use runner::{run_steps, run_steps_parallel, InitContext};
pub use session::{Canceller, CopyFailure, Fill, InitSession, SessionError};
pub use spec::{InitSpec, PartitionMethod, SCALE_32BIT_THRESHOLD};
pub use steps::{effective_steps, InitStep, ALL_INIT_STEPS, DEFAULT_INIT_STEPS};
pub use wire_session::WireSession;

/// The SQL text builders, public for tests and for tools that want to show
/// what `-i` would run.
pub mod sql {
    pub use crate::ddl::{
        copy_statement, create_table_statements, partition_statements, primary_key_statements,
        server_side_inserts, DROP_TABLES, FOREIGN_KEY_STATEMENTS, RELKIND_QUERY, TRUNCATE_TABLES,
        VACUUM_STATEMENTS,
    };
}

/// Runs pgbench's initialization steps over `conn`, printing pgbench's
/// messages and the server's notices to `err` (the process's stderr in
/// pgbench; progress lines use `\r` when the real stderr is a terminal, as
/// pgbench decides).
///
/// On failure nothing more is printed: render the returned error to stderr
/// and exit with [`InitError::exit_code`]. Afterwards the connection's notice
/// handler prints to stderr (libpq's default).
pub fn initialize(
    conn: &mut pgsurge_wire::Connection,
    spec: &InitSpec,
    err: &mut dyn Write,
) -> Result<(), InitError> {
    let clock = MonotonicClock::new();
    let ctx = InitContext {
        clock: &clock,
        stderr_is_tty: std::io::stderr().is_terminal(),
        cancel: None,
    };
    initialize_with(conn, spec, err, &ctx)
}

/// [`initialize`] with an explicit clock, terminal flag and cancel flag.
///
/// When `ctx.cancel` is given, a watcher thread sends the server a cancel
/// request as soon as the flag is set (a SIGINT handler only has to set it),
/// as pgbench's cancel handler does: the running statement then fails with
/// `canceling statement due to user request` and nothing is committed.
pub fn initialize_with(
    conn: &mut pgsurge_wire::Connection,
    spec: &InitSpec,
    err: &mut dyn Write,
    ctx: &InitContext<'_>,
) -> Result<(), InitError> {
    initialize_parallel(conn, spec, None, err, ctx)
}

/// Opens one more connection like the initialization connection (same
/// server, database, user and password), for [`initialize_parallel`].
pub type Connect<'a> = dyn Fn() -> Result<pgsurge_wire::Connection, String> + Sync + 'a;

/// [`initialize_with`] that runs the heavy steps on `jobs` connections opened
/// with `connect` (`--init-jobs`, a pgsurge extension; see the `parallel`
/// module). `None`, or `Some((1, _))`, runs pgbench's serial steps.
pub fn initialize_parallel(
    conn: &mut pgsurge_wire::Connection,
    spec: &InitSpec,
    jobs: Option<(usize, &Connect<'_>)>,
    err: &mut dyn Write,
    ctx: &InitContext<'_>,
) -> Result<(), InitError> {
    let open = |connect: &Connect<'_>| -> Result<Box<dyn InitSession + Send>, SessionError> {
        match connect() {
            Ok(c) => Ok(Box::new(WireSession::new(c))),
            Err(message) => Err(SessionError { message }),
        }
    };
    let opener;
    let par = match jobs {
        Some((n, connect)) if n > 1 => {
            opener = move || open(connect);
            Some(Parallel {
                jobs: n,
                open: &opener,
            })
        }
        _ => None,
    };
    let Some(flag) = ctx.cancel else {
        let mut session = WireSession::new(conn);
        return run_steps_parallel(&mut session, spec, par.as_ref(), err, ctx);
    };
    let token = conn.cancel_token();
    let finished = AtomicBool::new(false);
    std::thread::scope(|scope| {
        scope.spawn(|| {
            while !finished.load(Ordering::Acquire) {
                if flag.load(Ordering::Acquire) {
                    // Nothing useful can be done if the request cannot be sent:
                    // generation still stops at the flag and the run fails.
                    let _ = token.cancel();
                    return;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        });
        let mut session = WireSession::new(conn);
        let result = run_steps_parallel(&mut session, spec, par.as_ref(), err, ctx);
        finished.store(true, Ordering::Release);
        result
    })
}

#[cfg(test)]
mod runner_tests;
