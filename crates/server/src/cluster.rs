//! Throwaway clusters: [`ClusterBuilder`] initializes (or reuses) a data directory,
//! configures and starts a postmaster on a private socket directory and a free
//! 127.0.0.1 port, and waits until it accepts connections; [`Cluster`] stops it (fast,
//! then immediate) when dropped — on normal exit, on error and on panic — and a
//! watchdog stops it if the process dies without dropping it.
//!
//! Ctrl-C: the postmaster runs in its own process group, so a terminal's SIGINT does not
//! reach it; the caller's signal handler calls [`StopHandle::stop`] or [`stop_all`].

use std::path::{Path, PathBuf};
use std::process::{Child, Command};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::Duration;

use pgsurge_wire::quote_conninfo;

use crate::binaries::PgBinaries;
use crate::builder::ClusterBuilder;
use crate::config_files::OwnerMarker;
use crate::datadir::log_tail_since;
use crate::deadline::output_within;
use crate::error::{Result, ServerError};
use crate::postmaster::{stop_postmaster, StopTimeouts};
use crate::run_as::RunAs;
use crate::watchdog::Watchdog;

/// Mutable state of a running cluster.
#[derive(Debug)]
pub(crate) struct RunState {
    pub(crate) child: Option<Child>,
    pub(crate) watchdog: Option<Watchdog>,
    pub(crate) stopped: bool,
}

#[derive(Debug)]
pub(crate) struct Inner {
    pub(crate) binaries: PgBinaries,
    pub(crate) run_as: Option<RunAs>,
    pub(crate) data_dir: PathBuf,
    pub(crate) socket_dir: PathBuf,
    pub(crate) log_file: PathBuf,
    pub(crate) port: u16,
    /// The postmaster's pid (another after a restart in place).
    pub(crate) pid: AtomicI32,
    /// How the postmaster was started, to start it again in place.
    pub(crate) spawner: ClusterBuilder,
    pub(crate) superuser: String,
    pub(crate) database: Option<String>,
    pub(crate) remove: Vec<PathBuf>,
    pub(crate) stop_timeouts: StopTimeouts,
    pub(crate) detached: bool,
    /// The relay a standby streams through, when it was started with one.
    pub(crate) relay: Option<Arc<crate::relay::LinkRelay>>,
    pub(crate) state: Mutex<RunState>,
}

impl Inner {
    fn state(&self) -> MutexGuard<'_, RunState> {
        match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        }
    }

    fn pid(&self) -> i32 {
        self.pid.load(Ordering::SeqCst)
    }

    fn stop(&self) -> bool {
        let mut st = self.state();
        if st.stopped {
            return true;
        }
        st.stopped = true;
        let gone = stop_postmaster(self.pid(), st.child.as_mut(), self.stop_timeouts);
        for p in &self.remove {
            let _ = std::fs::remove_dir_all(p);
        }
        if let Some(w) = st.watchdog.as_mut() {
            w.disarm();
        }
        gone
    }
}

/// A running PostgreSQL server. Dropping it stops the server (fast, then immediate) and
/// removes its temporary directories, unless it was started [`detached`](ClusterBuilder::detached).
#[derive(Debug)]
pub struct Cluster {
    pub(crate) inner: Arc<Inner>,
}

/// A cloneable handle that stops a [`Cluster`] from another thread (e.g. a Ctrl-C handler).
#[derive(Debug, Clone)]
pub struct StopHandle {
    inner: Weak<Inner>,
}

impl StopHandle {
    /// Stops the server (no-op if already stopped or dropped). Returns false if the
    /// postmaster could not be made to exit.
    pub fn stop(&self) -> bool {
        self.inner.upgrade().map(|i| i.stop()).unwrap_or(true)
    }
}

impl Cluster {
    /// Starts a cluster with the default configuration (see [`ClusterBuilder`]).
    pub fn builder() -> ClusterBuilder {
        ClusterBuilder::new()
    }
    /// TCP port on 127.0.0.1.
    pub fn port(&self) -> u16 {
        self.inner.port
    }
    /// Unix socket directory (use it as `host`).
    pub fn socket_dir(&self) -> &Path {
        &self.inner.socket_dir
    }
    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        &self.inner.data_dir
    }
    /// The server log file.
    pub fn log_file(&self) -> &Path {
        &self.inner.log_file
    }
    /// The binaries in use.
    pub fn binaries(&self) -> &PgBinaries {
        &self.inner.binaries
    }
    /// The user the server runs as when we are root.
    pub fn run_as(&self) -> Option<&RunAs> {
        self.inner.run_as.as_ref()
    }
    /// The postmaster's pid.
    pub fn pid(&self) -> i32 {
        self.inner.pid()
    }
    /// The bootstrap superuser.
    pub fn superuser(&self) -> &str {
        &self.inner.superuser
    }
    /// The database created at initialization, if one was requested.
    pub fn database(&self) -> Option<&str> {
        self.inner.database.as_deref()
    }
    /// Keyword/value connection string over the Unix socket, e.g.
    /// `host=/tmp/pgsurge-x/sock port=40123 user=postgres dbname=bench`.
    pub fn conninfo(&self, dbname: &str) -> String {
        conninfo(
            &self.inner.socket_dir,
            self.inner.port,
            &self.inner.superuser,
            dbname,
        )
    }
    /// Keyword/value connection string over TCP to 127.0.0.1.
    pub fn tcp_conninfo(&self, dbname: &str) -> String {
        format!(
            "host=127.0.0.1 port={} user={} dbname={}",
            self.inner.port,
            quote_conninfo(&self.inner.superuser),
            quote_conninfo(dbname)
        )
    }
    /// The last `lines` lines of the server log.
    pub fn log_tail(&self, lines: usize) -> String {
        log_tail_since(&self.inner.log_file, 0, lines)
    }
    /// Directories removed when the server stops (temporary data and socket directories).
    pub fn removable_paths(&self) -> &[PathBuf] {
        &self.inner.remove
    }
    /// A handle that can stop the server from another thread.
    pub fn stop_handle(&self) -> StopHandle {
        StopHandle {
            inner: Arc::downgrade(&self.inner),
        }
    }
    /// Runs SQL through `psql -X -At -v ON_ERROR_STOP=1` and returns its standard output;
    /// an error when it has not ended within 60 s (`psql` is then stopped), so a server
    /// that never answers cannot hold the caller.
    pub fn psql(&self, dbname: &str, sql: &str) -> Result<String> {
        self.psql_within(dbname, sql, PSQL_LIMIT)
    }
    /// As [`Cluster::psql`], for a statement that may take up to `limit` (one that
    /// waits of its own, such as `pg_promote`).
    pub fn psql_within(&self, dbname: &str, sql: &str, limit: Duration) -> Result<String> {
        let psql = self
            .inner
            .binaries
            .psql()
            .ok_or_else(|| ServerError::MissingProgram {
                dir: self.inner.binaries.bin_dir().to_path_buf(),
                program: "psql".into(),
            })?;
        run_psql(Command::new(psql), &self.conninfo(dbname), sql, limit)
    }
    /// Creates a database (name quoted as an identifier).
    pub fn create_database(&self, name: &str) -> Result<()> {
        self.psql(
            "postgres",
            &format!("CREATE DATABASE {}", pgsurge_wire::quote_identifier(name)),
        )
        .map(|_| ())
    }
    /// Ends recovery on a standby (`pg_promote`, waiting up to a minute): it becomes a
    /// primary that accepts writes.
    pub fn promote(&self) -> Result<()> {
        // pg_promote gives up after its own 60 s; the limit leaves room beyond that.
        let out = self.psql_within(
            "postgres",
            "SELECT pg_promote(true, 60)",
            Duration::from_secs(120),
        )?;
        if out.trim() == "t" {
            Ok(())
        } else {
            Err(ServerError::CommandFailed {
                what: format!("promoting the standby on port {}", self.inner.port),
                detail: format!("pg_promote did not finish within 60 s ({})", out.trim()),
            })
        }
    }

    /// Whether the server is a standby in recovery.
    pub fn in_recovery(&self) -> Result<bool> {
        Ok(self.psql("postgres", "SELECT pg_is_in_recovery()")?.trim() == "t")
    }

    /// Holds what goes both ways between a standby and its primary for `delay` (zero:
    /// none), through the relay it was started with.
    pub fn set_link_delay(&self, delay: std::time::Duration) -> Result<()> {
        let relay = self.inner.relay.as_ref().ok_or_else(|| {
            ServerError::Invalid(format!(
                "the server on port {} does not stream through a relay",
                self.port()
            ))
        })?;
        relay.set_delay(delay);
        Ok(())
    }

    /// Pauses (`true`) or resumes WAL replay on a standby; WAL keeps arriving.
    pub fn pause_replay(&self, pause: bool) -> Result<()> {
        let sql = if pause {
            "SELECT pg_wal_replay_pause()"
        } else {
            "SELECT pg_wal_replay_resume()"
        };
        self.psql("postgres", sql).map(|_| ())
    }

    /// Immediate shutdown (SIGQUIT to the postmaster: no checkpoint, crash recovery at
    /// the next start), waiting up to `timeout` for it to exit. Temporary directories
    /// stay until the value is dropped.
    pub fn stop_immediate(&self, timeout: std::time::Duration) -> bool {
        self.signal_and_wait(rustix::process::Signal::QUIT, false, timeout)
    }

    /// SIGKILL to the postmaster and every process of its group (its backends), as a
    /// lost machine would end them. Temporary directories stay until the value is
    /// dropped.
    pub fn kill(&self) -> bool {
        self.signal_and_wait(
            rustix::process::Signal::KILL,
            true,
            std::time::Duration::from_secs(10),
        )
    }

    fn signal_and_wait(
        &self,
        signal: rustix::process::Signal,
        group: bool,
        timeout: std::time::Duration,
    ) -> bool {
        let pid = self.inner.pid();
        if let Some(target) = rustix::process::Pid::from_raw(pid) {
            let _ = if group {
                rustix::process::kill_process_group(target, signal)
            } else {
                rustix::process::kill_process(target, signal)
            };
        }
        let deadline = std::time::Instant::now() + timeout;
        loop {
            let gone = {
                let mut st = self.inner.state();
                match st.child.as_mut() {
                    Some(c) => !matches!(c.try_wait(), Ok(None)),
                    None => !crate::postmaster::is_alive(pid),
                }
            };
            if gone {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }

    /// Restarts the server in place: a fast shutdown (what runs is rolled back, a
    /// checkpoint is written), then the same data directory started again on the same
    /// port and socket directory, with the same settings and CPUs; returns once it
    /// accepts connections. A server already down (stopped immediately, killed) is only
    /// started, recovering from its crash first.
    pub fn restart(&self) -> Result<()> {
        let inner = &self.inner;
        let mut st = inner.state();
        if st.stopped {
            return Err(ServerError::Invalid(format!(
                "the server on port {} was stopped; it cannot be restarted",
                inner.port
            )));
        }
        if !stop_postmaster(inner.pid(), st.child.as_mut(), inner.stop_timeouts) {
            return Err(ServerError::CommandFailed {
                what: format!("restarting the server on port {}", inner.port),
                detail: "its postmaster did not exit".to_string(),
            });
        }
        if let Some(w) = st.watchdog.as_mut() {
            w.disarm();
        }
        st.watchdog = None;
        let child = inner.spawner.spawn_again(inner)?;
        let pid = child.id() as i32;
        inner.pid.store(pid, Ordering::SeqCst);
        st.child = Some(child);
        if !inner.detached {
            let remove: Vec<PathBuf> = inner
                .remove
                .iter()
                .filter(|p| p.exists())
                .cloned()
                .collect();
            st.watchdog = Some(Watchdog::spawn(pid, &remove)?);
        }
        let marker = OwnerMarker {
            owner_pid: std::process::id() as i32,
            watchdog_pid: st.watchdog.as_ref().map(Watchdog::pid),
            detached: inner.detached,
        };
        marker.write(&inner.data_dir, inner.run_as.as_ref())?;
        Ok(())
    }

    /// Stops the server now (fast, then immediate) and removes its temporary
    /// directories. Returns false if the postmaster could not be made to exit.
    pub fn stop(&self) -> bool {
        self.inner.stop()
    }
    /// Leaves the server running after this value is dropped (for `pgsurge server start`).
    /// Its watchdog, if any, is told to exit.
    pub fn detach(self) {
        let mut st = self.inner.state();
        st.stopped = true;
        if let Some(w) = st.watchdog.as_mut() {
            w.disarm();
        }
        // The child handle is dropped without waiting: the postmaster keeps running.
        st.child = None;
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        if !self.inner.detached {
            self.inner.stop();
        }
    }
}

/// Every running cluster of this process, for [`stop_all`].
static RUNNING: Mutex<Vec<Weak<Inner>>> = Mutex::new(Vec::new());

pub(crate) fn register(inner: &Arc<Inner>) {
    let mut list = match RUNNING.lock() {
        Ok(g) => g,
        Err(p) => p.into_inner(),
    };
    list.retain(|w| w.strong_count() > 0);
    list.push(Arc::downgrade(inner));
}

/// Stops every (non-detached) cluster this process started and has not stopped yet.
/// Meant for a Ctrl-C / SIGTERM handler that is about to exit the process.
pub fn stop_all() {
    let list: Vec<Weak<Inner>> = match RUNNING.lock() {
        Ok(g) => g.clone(),
        Err(p) => p.into_inner().clone(),
    };
    for w in list {
        if let Some(i) = w.upgrade() {
            i.stop();
        }
    }
}

/// Keyword/value conninfo for a socket directory.
pub(crate) fn conninfo(socket_dir: &Path, port: u16, user: &str, dbname: &str) -> String {
    format!(
        "host={} port={port} user={} dbname={}",
        quote_conninfo(&socket_dir.to_string_lossy()),
        quote_conninfo(user),
        quote_conninfo(dbname)
    )
}

/// How long a statement run through `psql` may take before `psql` is stopped: far
/// more than any of the cluster's own statements takes on a loaded machine, so only a
/// server that does not answer (a lock, a synchronous standby that is gone, a stopped
/// postmaster) reaches it.
const PSQL_LIMIT: Duration = Duration::from_secs(60);

/// Runs `sql` through `psql` (the program of `cmd`) on `conninfo` and returns what it
/// printed (unaligned, tuples only); stopped with an error naming the statement when it
/// has not ended within `limit`.
fn run_psql(mut cmd: Command, conninfo: &str, sql: &str, limit: Duration) -> Result<String> {
    let program = PathBuf::from(cmd.get_program());
    cmd.args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-d"])
        .arg(conninfo)
        .arg("-c")
        .arg(sql)
        .env_remove("PGSERVICE")
        .env_remove("PGOPTIONS");
    let ended = output_within(cmd, None, limit).map_err(|e| ServerError::io(&program, e))?;
    let detail = match ended.status {
        Some(status) if status.success() => {
            return Ok(String::from_utf8_lossy(&ended.stdout).into_owned())
        }
        Some(status) => status.to_string(),
        None => format!("no answer within {limit:?}; psql stopped"),
    };
    let stderr = String::from_utf8_lossy(&ended.stderr);
    Err(ServerError::CommandFailed {
        what: format!("psql {sql:?}"),
        detail: match stderr.trim() {
            "" => detail,
            said => format!("{detail}: {said}"),
        },
    })
}

/// Keyword/value conninfo for a socket directory, without a database (a replication
/// connection's).
pub(crate) fn conninfo_no_db(socket_dir: &Path, port: u16, user: &str) -> String {
    format!(
        "host={} port={port} user={}",
        quote_conninfo(&socket_dir.to_string_lossy()),
        quote_conninfo(user),
    )
}

/// A free TCP port on 127.0.0.1 (the kernel picks; the server may still lose a race, which
/// the caller handles by retrying).
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind(("127.0.0.1", 0))
        .map_err(|e| ServerError::io("127.0.0.1:0", e))?;
    l.local_addr()
        .map(|a| a.port())
        .map_err(|e| ServerError::io("127.0.0.1:0", e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conninfo_quotes_when_needed() {
        assert_eq!(
            conninfo(Path::new("/tmp/a dir"), 5432, "it's", "db"),
            r"host='/tmp/a dir' port=5432 user='it\'s' dbname=db"
        );
        assert_eq!(
            conninfo(Path::new("/tmp/s"), 5432, "postgres", "db"),
            "host=/tmp/s port=5432 user=postgres dbname=db"
        );
        assert_eq!(pgsurge_wire::quote_identifier("a\"b"), "\"a\"\"b\"");
    }

    /// A fake `psql`: a script read by `sh` (not executed itself, which could find it
    /// still open for writing in a process another test is starting).
    fn fake(script: &Path) -> Command {
        let mut cmd = Command::new("sh");
        cmd.arg(script);
        cmd
    }

    #[test]
    fn a_statement_without_an_answer_is_stopped_with_an_error() {
        let dir = tempfile::tempdir().unwrap();
        // A psql that never ends, like one waiting on a server that does not answer.
        let psql = dir.path().join("psql");
        std::fs::write(&psql, "exec sleep 600\n").unwrap();
        let limit = Duration::from_millis(300);
        let conninfo = conninfo(dir.path(), 5432, "postgres", "postgres");
        let err = run_psql(fake(&psql), &conninfo, "SELECT 1", limit)
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("psql \"SELECT 1\" failed"), "{err}");
        assert!(err.contains("no answer within 300ms"), "{err}");
    }

    #[test]
    fn a_statement_that_ends_gives_its_output_or_its_error() {
        let dir = tempfile::tempdir().unwrap();
        let psql = dir.path().join("psql");
        let script = "for a; do last=$a; done\n\
                      [ \"$last\" = fail ] && { echo 'ERROR: no' >&2; exit 3; }\n\
                      echo \"$last\"\n";
        std::fs::write(&psql, script).unwrap();
        let limit = Duration::from_secs(600);
        let out = run_psql(fake(&psql), "dbname=postgres", "SELECT 1", limit).unwrap();
        assert_eq!(out, "SELECT 1\n");
        let err = run_psql(fake(&psql), "dbname=postgres", "fail", limit)
            .unwrap_err()
            .to_string();
        assert!(err.contains("exit status: 3: ERROR: no"), "{err}");
    }
}
