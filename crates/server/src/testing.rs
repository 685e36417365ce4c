//! The test fixture every pgsurge crate's tests use: one lazily started PostgreSQL
//! server per test process ([`TestServer::shared`]) and private servers with their own
//! settings, `pg_hba.conf` lines and files ([`TestServer::start`]).
//!
//! Built on [`crate::Cluster`]: local binaries (or `PGSURGE_PG_BIN`), a private socket
//! directory plus a free 127.0.0.1 port, trust authentication, settings that make tests
//! fast (`fsync=off`, …), and `max_connections=300`. As root the server runs as
//! `postgres`. The shared server is stopped when the test process exits — normally
//! (an `atexit` hook) or by being killed (the cluster's watchdog) — so no postgres is
//! left behind. This module is for tests: failures panic with the reason and log tail.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::OnceLock;

use crate::builder::ClusterBuilder;
use crate::cluster::Cluster;
use crate::error::Result;

/// Settings applied to every test server: durability off (tests never need it), room
/// for `pgbench -c 200` plus the tests' own connections, and no surprise checkpoints.
pub const TEST_SETTINGS: &[(&str, &str)] = &[
    ("fsync", "off"),
    ("synchronous_commit", "off"),
    ("full_page_writes", "off"),
    ("max_connections", "300"),
    ("shared_buffers", "64MB"),
    ("max_wal_size", "2GB"),
    ("checkpoint_timeout", "30min"),
    ("autovacuum_naptime", "10min"),
    ("log_min_messages", "warning"),
    ("lc_messages", "C"),
];

/// What a private test server should look like; `..Default::default()` for the rest.
#[derive(Debug, Clone, Default)]
pub struct TestServerOptions {
    /// Extra settings (`("password_encryption".into(), "md5".into())`, `("ssl".into(), "on".into())`);
    /// they override [`TEST_SETTINGS`].
    pub settings: Vec<(String, String)>,
    /// `pg_hba.conf` lines placed before the default trust lines, so they win
    /// (e.g. `"host all md5user 127.0.0.1/32 md5"`).
    pub hba: Vec<String>,
    /// Files written into the data directory before start, mode 0600 and owned by the
    /// server's user (e.g. `("server.crt".into(), pem)`, `("server.key".into(), key)`).
    pub files: Vec<(String, Vec<u8>)>,
    /// Extra initdb arguments.
    pub initdb_args: Vec<String>,
    /// `initdb --data-checksums`.
    pub data_checksums: bool,
}

/// A PostgreSQL server for tests. Its superuser is `postgres`, authentication is trust
/// (unless [`TestServerOptions::hba`] says otherwise).
#[derive(Debug)]
pub struct TestServer {
    cluster: Cluster,
}

static SHARED: OnceLock<std::result::Result<TestServer, String>> = OnceLock::new();
static DB_COUNTER: AtomicU32 = AtomicU32::new(0);

extern "C" fn stop_shared_at_exit() {
    if let Some(Ok(server)) = SHARED.get() {
        server.cluster.stop();
    }
}

impl TestServer {
    /// The server shared by all tests of this process, started on first use. Panics
    /// (in every test that asks) if it cannot start, with the reason and the log tail.
    pub fn shared() -> &'static TestServer {
        let result = SHARED.get_or_init(|| {
            // Leftovers of test runs killed together with their watchdogs.
            crate::sweep::sweep_stale_temp_clusters();
            let server = TestServer::try_start(TestServerOptions::default(), "pgsurge-test-")
                .map_err(|e| e.to_string())?;
            // SAFETY: registering a plain `extern "C" fn` with no captured state; it only
            // touches the `SHARED` static, which is initialized before this call.
            unsafe {
                libc::atexit(stop_shared_at_exit);
            }
            Ok(server)
        });
        match result {
            Ok(s) => s,
            Err(e) => {
                panic!("pgsurge test fixture: could not start the shared PostgreSQL server: {e}")
            }
        }
    }

    /// A private server with its own options, stopped (and its files removed) on drop.
    /// Panics with the reason and the log tail if it cannot start.
    pub fn start(options: TestServerOptions) -> TestServer {
        match TestServer::try_start(options, "pgsurge-test-own-") {
            Ok(s) => s,
            Err(e) => {
                panic!("pgsurge test fixture: could not start a private PostgreSQL server: {e}")
            }
        }
    }

    fn try_start(options: TestServerOptions, prefix: &str) -> Result<TestServer> {
        let mut b = ClusterBuilder::new()
            .temp_prefix(prefix)
            .settings(TEST_SETTINGS.iter().copied())
            .settings(options.settings)
            .data_checksums(options.data_checksums);
        for line in options.hba {
            b = b.hba_line(line);
        }
        for (path, bytes) in options.files {
            b = b.file(path, bytes);
        }
        for arg in options.initdb_args {
            b = b.initdb_arg(arg);
        }
        Ok(TestServer {
            cluster: b.start()?,
        })
    }

    /// Creates a fresh empty database named `<prefix>_<n>` (prefix reduced to lowercase
    /// letters, digits and `_`) and returns its name.
    pub fn create_database(&self, prefix: &str) -> String {
        let mut clean: String = prefix
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() {
                    c.to_ascii_lowercase()
                } else {
                    '_'
                }
            })
            .take(40)
            .collect();
        if clean.is_empty() {
            clean.push_str("db");
        }
        let name = format!("{clean}_{}", DB_COUNTER.fetch_add(1, Ordering::Relaxed) + 1);
        if let Err(e) = self.cluster.create_database(&name) {
            panic!("pgsurge test fixture: creating database {name}: {e}");
        }
        name
    }

    /// `host=<socket dir> port=<port> user=postgres dbname=<db>`.
    pub fn conninfo(&self, db: &str) -> String {
        self.cluster.conninfo(db)
    }
    /// `host=127.0.0.1 port=<port> user=postgres dbname=<db>` (TCP).
    pub fn tcp_conninfo(&self, db: &str) -> String {
        self.cluster.tcp_conninfo(db)
    }
    /// The TCP port (the server listens on 127.0.0.1 and on the Unix socket).
    pub fn port(&self) -> u16 {
        self.cluster.port()
    }
    /// The Unix socket directory.
    pub fn socket_dir(&self) -> &Path {
        self.cluster.socket_dir()
    }
    /// The superuser, `postgres`.
    pub fn superuser(&self) -> &str {
        self.cluster.superuser()
    }
    /// The binaries directory (`psql`, `pg_dump`, … are usually there too).
    pub fn bin_dir(&self) -> &Path {
        self.cluster.binaries().bin_dir()
    }
    /// The data directory.
    pub fn data_dir(&self) -> &Path {
        self.cluster.data_dir()
    }
    /// `server_version_num`, e.g. `150018`.
    pub fn version_num(&self) -> u32 {
        self.cluster.binaries().version().num()
    }
    /// The underlying cluster (pid, log file, stop handle, …).
    pub fn cluster(&self) -> &Cluster {
        &self.cluster
    }

    /// Environment for child processes: `PGHOST` (socket dir), `PGPORT`, `PGUSER`.
    /// `PGDATABASE` is not set: a child then connects to the database named like the
    /// user (`postgres`) unless told otherwise; callers that must not inherit the
    /// caller's `PGDATABASE` (or other PG* variables) use [`TestServer::apply_env`].
    pub fn env(&self) -> Vec<(String, String)> {
        vec![
            (
                "PGHOST".into(),
                self.socket_dir().to_string_lossy().into_owned(),
            ),
            ("PGPORT".into(), self.port().to_string()),
            ("PGUSER".into(), self.superuser().to_string()),
        ]
    }

    /// Sets [`TestServer::env`] on `cmd` and removes every other inherited PG* variable
    /// (`PGDATABASE`, `PGPASSWORD`, `PGSERVICE`, `PGSSLMODE`, …).
    pub fn apply_env<'c>(&self, cmd: &'c mut Command) -> &'c mut Command {
        for (k, _) in std::env::vars_os() {
            if k.to_string_lossy().starts_with("PG") {
                cmd.env_remove(&k);
            }
        }
        for (k, v) in self.env() {
            cmd.env(OsString::from(k), v);
        }
        cmd
    }

    /// Runs `psql -X -At -v ON_ERROR_STOP=1 -c <sql>` on `db` and returns its output.
    /// Panics with psql's stderr on failure.
    pub fn psql(&self, db: &str, sql: &str) -> String {
        match self.cluster.psql(db, sql) {
            Ok(out) => out,
            Err(e) => panic!("pgsurge test fixture: {e}"),
        }
    }

    /// Waits until no client session is connected to `db`, and panics naming them
    /// after a minute. A session's statistics reach the shared views before it leaves
    /// `pg_stat_activity` (PostgreSQL 15 and later), so counters read afterwards hold
    /// what the ended sessions did; a backend exits a moment after its client has gone,
    /// and on a busy machine that moment can be long. It asks from the `postgres`
    /// database, so that its own queries are not counted in `db`'s statistics.
    pub fn wait_for_sessions_to_end(&self, db: &str) {
        let others = format!(
            "FROM pg_stat_activity WHERE datname = {} AND backend_type = 'client backend' \
             AND pid <> pg_backend_pid()",
            pgsurge_wire::quote_literal(db)
        );
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        while self
            .psql("postgres", &format!("SELECT count(*) {others}"))
            .trim()
            != "0"
        {
            if std::time::Instant::now() > deadline {
                let left = self.psql(
                    "postgres",
                    &format!("SELECT pid, application_name, state, query {others}"),
                );
                panic!("pgsurge test fixture: sessions still on {db} after a minute:\n{left}");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }

    /// Like [`TestServer::psql`] but returns the error instead of panicking.
    pub fn try_psql(&self, db: &str, sql: &str) -> Result<String> {
        self.cluster.psql(db, sql)
    }
}
