//! Throwaway clusters: [`ClusterBuilder`] initializes (or reuses) a data directory,
//! configures and starts a postmaster on a private socket directory and a free
//! 127.0.0.1 port, and waits until it accepts connections; [`Cluster`] stops it (fast,
//! then immediate) when dropped — on normal exit, on error and on panic — and a
//! watchdog stops it if the process dies without dropping it.
//!
//! Ctrl-C: the postmaster runs in its own process group, so a terminal's SIGINT does not
//! reach it; the caller's signal handler calls [`StopHandle::stop`] or [`stop_all`].

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use crate::binaries::PgBinaries;
use crate::config_files::{
    check_setting_name, prepend_hba, write_auto_conf, write_files, OwnerMarker,
};
use crate::error::{Result, ServerError};
use crate::postmaster::{is_alive, looks_like_postgres, stop_postmaster, PidFile, StopTimeouts};
use crate::run_as::{apply_opt, chown_opt, RunAs};
use crate::watchdog::Watchdog;

/// Where the server binaries come from.
#[derive(Debug, Clone, Default)]
pub enum BinarySource {
    /// Local binaries found by [`PgBinaries::discover`].
    #[default]
    Auto,
    /// A binaries directory (`--pg-bin DIR`).
    Dir(PathBuf),
    /// A version (`17`, `18.1`): local binaries of that major version if installed and
    /// the request names no minor version, else fetched (see [`crate::fetch`]).
    Version(String),
    /// Binaries already found.
    Binaries(PgBinaries),
}

impl BinarySource {
    /// Resolves the source to a binaries directory (may download, see [`crate::fetch`]).
    pub fn resolve(&self) -> Result<PgBinaries> {
        match self {
            BinarySource::Auto => PgBinaries::discover(),
            BinarySource::Dir(d) => PgBinaries::from_dir(d),
            BinarySource::Version(v) => crate::fetch::binaries_for_version(v),
            BinarySource::Binaries(b) => Ok(b.clone()),
        }
    }
}

/// Where settings go.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SettingsTarget {
    /// Merged into `postgresql.auto.conf` before each start (visible to `ALTER SYSTEM`).
    #[default]
    AutoConf,
    /// Passed as `-c name=value` on the postmaster's command line.
    CommandLine,
}

/// Configures and starts a [`Cluster`]. Defaults: local binaries, a new temporary data
/// directory removed at stop, `-E UTF8 --locale=C`, superuser `postgres`, trust
/// authentication, a free port, and (as root) the `postgres` user.
#[derive(Debug, Clone)]
pub struct ClusterBuilder {
    source: BinarySource,
    data_dir: Option<PathBuf>,
    keep_data: Option<bool>,
    settings: Vec<(String, String)>,
    settings_target: SettingsTarget,
    hba: Vec<String>,
    files: Vec<(PathBuf, Vec<u8>)>,
    data_checksums: bool,
    encoding: String,
    locale: String,
    initdb_args: Vec<OsString>,
    superuser: String,
    database: Option<String>,
    run_as: Option<String>,
    port: Option<u16>,
    socket_dir: Option<PathBuf>,
    start_timeout: Duration,
    stop_timeouts: StopTimeouts,
    detached: bool,
    temp_prefix: String,
}

impl Default for ClusterBuilder {
    fn default() -> Self {
        ClusterBuilder {
            source: BinarySource::Auto,
            data_dir: None,
            keep_data: None,
            settings: Vec::new(),
            settings_target: SettingsTarget::AutoConf,
            hba: Vec::new(),
            files: Vec::new(),
            data_checksums: false,
            encoding: "UTF8".into(),
            locale: "C".into(),
            initdb_args: Vec::new(),
            superuser: "postgres".into(),
            database: None,
            run_as: None,
            port: None,
            socket_dir: None,
            start_timeout: Duration::from_secs(60),
            stop_timeouts: StopTimeouts::default(),
            detached: false,
            temp_prefix: "pgsurge-".into(),
        }
    }
}

impl ClusterBuilder {
    /// A builder with the defaults described on the type.
    pub fn new() -> Self {
        Self::default()
    }
    /// Where the binaries come from.
    pub fn binaries(mut self, source: BinarySource) -> Self {
        self.source = source;
        self
    }
    /// Uses (and keeps, unless [`keep_data`](Self::keep_data)`(false)`) this data directory:
    /// initialized if missing or empty, reused if it holds a cluster of the same major
    /// version. A server left running by a killed pgsurge run is stopped first.
    pub fn data_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.data_dir = Some(dir.into());
        self
    }
    /// Keep the data directory after stop (default: keep a given one, remove a temporary one).
    pub fn keep_data(mut self, keep: bool) -> Self {
        self.keep_data = Some(keep);
        self
    }
    /// Adds a server setting (`shared_buffers`, `max_wal_size`, …).
    pub fn setting(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.settings.push((name.into(), value.into()));
        self
    }
    /// Adds several settings.
    pub fn settings<I, K, V>(mut self, settings: I) -> Self
    where
        I: IntoIterator<Item = (K, V)>,
        K: Into<String>,
        V: Into<String>,
    {
        self.settings
            .extend(settings.into_iter().map(|(k, v)| (k.into(), v.into())));
        self
    }
    /// Where settings are written (default `postgresql.auto.conf`).
    pub fn settings_target(mut self, target: SettingsTarget) -> Self {
        self.settings_target = target;
        self
    }
    /// Adds a `pg_hba.conf` line, placed before the default lines so that it wins.
    pub fn hba_line(mut self, line: impl Into<String>) -> Self {
        self.hba.push(line.into());
        self
    }
    /// Writes a file (path relative to the data directory, mode 0600, owned by the
    /// server's user) before start, e.g. `server.crt` / `server.key`.
    pub fn file(mut self, rel_path: impl Into<PathBuf>, contents: impl Into<Vec<u8>>) -> Self {
        self.files.push((rel_path.into(), contents.into()));
        self
    }
    /// `initdb --data-checksums`.
    pub fn data_checksums(mut self, on: bool) -> Self {
        self.data_checksums = on;
        self
    }
    /// initdb's encoding (default `UTF8`).
    pub fn encoding(mut self, encoding: impl Into<String>) -> Self {
        self.encoding = encoding.into();
        self
    }
    /// initdb's locale (default `C`).
    pub fn locale(mut self, locale: impl Into<String>) -> Self {
        self.locale = locale.into();
        self
    }
    /// Extra initdb arguments.
    pub fn initdb_arg(mut self, arg: impl Into<OsString>) -> Self {
        self.initdb_args.push(arg.into());
        self
    }
    /// The bootstrap superuser name (default `postgres`).
    pub fn superuser(mut self, name: impl Into<String>) -> Self {
        self.superuser = name.into();
        self
    }
    /// Creates this database when the cluster is initialized (the benchmark database).
    pub fn database(mut self, name: impl Into<String>) -> Self {
        self.database = Some(name.into());
        self
    }
    /// When running as root, run the server as this user (default `postgres`).
    pub fn run_as(mut self, user: impl Into<String>) -> Self {
        self.run_as = Some(user.into());
        self
    }
    /// TCP port on 127.0.0.1 (default: a free one).
    pub fn port(mut self, port: u16) -> Self {
        self.port = Some(port);
        self
    }
    /// Unix socket directory (default: a new private temporary directory).
    pub fn socket_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.socket_dir = Some(dir.into());
        self
    }
    /// How long to wait for the server to accept connections (default 60 s).
    pub fn start_timeout(mut self, t: Duration) -> Self {
        self.start_timeout = t;
        self
    }
    /// How long each stop phase may take (fast shutdown, immediate shutdown).
    pub fn stop_timeouts(mut self, fast: Duration, immediate: Duration) -> Self {
        self.stop_timeouts = StopTimeouts { fast, immediate };
        self
    }
    /// The server outlives this process (`pgsurge server start`): no watchdog, and
    /// dropping the [`Cluster`] leaves it running.
    pub fn detached(mut self, on: bool) -> Self {
        self.detached = on;
        self
    }
    /// Prefix of temporary directory names (default `pgsurge-`).
    pub fn temp_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.temp_prefix = prefix.into();
        self
    }

    /// Initializes if needed, configures, starts and waits for the server.
    pub fn start(self) -> Result<Cluster> {
        for (name, _) in &self.settings {
            check_setting_name(name)?;
        }
        let binaries = self.source.resolve()?;
        let run_as = RunAs::resolve(self.run_as.as_deref())?;
        let mut cleanup = Cleanup::default();
        let result = self.start_inner(binaries, run_as, &mut cleanup);
        if result.is_err() {
            cleanup.run();
        }
        result
    }

    fn start_inner(
        &self,
        binaries: PgBinaries,
        run_as: Option<RunAs>,
        cleanup: &mut Cleanup,
    ) -> Result<Cluster> {
        let ra = run_as.as_ref();
        // Layout: a temporary base holding data/ and sock/, or the given directories.
        let (data_dir, socket_dir, log_file, mut remove) = match &self.data_dir {
            None => {
                let base = make_temp_dir(&self.temp_prefix, ra)?;
                cleanup.paths.push(base.clone());
                let data = base.join("data");
                let sock = match &self.socket_dir {
                    Some(s) => s.clone(),
                    None => make_subdir(&base.join("sock"), ra)?,
                };
                let keep = self.keep_data.unwrap_or(false);
                let remove = if keep {
                    vec![sock.clone()]
                } else {
                    vec![base.clone()]
                };
                (data, sock, base.join("server.log"), remove)
            }
            Some(d) => {
                let data = absolute(d)?;
                let mut remove = Vec::new();
                let sock = match &self.socket_dir {
                    Some(s) => s.clone(),
                    None => {
                        let s = make_temp_dir(&format!("{}sock-", self.temp_prefix), ra)?;
                        cleanup.paths.push(s.clone());
                        remove.push(s.clone());
                        s
                    }
                };
                if !self.keep_data.unwrap_or(true) {
                    remove.push(data.clone());
                }
                let log = data.join("pgsurge.log");
                (data, sock, log, remove)
            }
        };
        check_socket_path_length(&socket_dir)?;
        if let Some(r) = ra {
            r.check_reachable(&data_dir)?;
            r.check_reachable(&socket_dir)?;
            r.check_reachable(&binaries.program("postgres"))?;
        }

        let fresh = prepare_data_dir(&data_dir, &binaries, self.stop_timeouts)?;
        if fresh {
            if self.data_dir.is_some() && !data_dir.exists() {
                cleanup.paths.push(data_dir.clone());
            }
            self.initdb(&binaries, ra, &data_dir)?;
        }
        if self.settings_target == SettingsTarget::AutoConf && !self.settings.is_empty() {
            write_auto_conf(&data_dir, &self.settings, ra)?;
        }
        prepend_hba(&data_dir, &self.hba, ra)?;
        write_files(&data_dir, &self.files, ra)?;
        if fresh {
            if let Some(db) = &self.database {
                create_database_single_user(&binaries, ra, &data_dir, db)?;
            }
        }

        // Start, retrying on a port taken between our probe and the server's bind.
        let mut attempt = 0;
        let (child, port) = loop {
            attempt += 1;
            let port = match self.port {
                Some(p) => p,
                None => free_port()?,
            };
            match self.spawn_and_wait(&binaries, ra, &data_dir, &socket_dir, &log_file, port) {
                Ok(child) => break (child, port),
                Err(StartError::PortInUse(_)) if self.port.is_none() && attempt < 8 => continue,
                Err(StartError::PortInUse(e)) | Err(StartError::Other(e)) => return Err(e),
            }
        };
        let pid = child.id() as i32;

        let watchdog = if self.detached {
            None
        } else {
            remove.retain(|p| p.exists());
            Some(Watchdog::spawn(pid, &remove)?)
        };
        let marker = OwnerMarker {
            owner_pid: std::process::id() as i32,
            watchdog_pid: watchdog.as_ref().map(|w| w.pid()),
            detached: self.detached,
        };
        marker.write(&data_dir, ra)?;
        cleanup.paths.clear();

        let inner = Arc::new(Inner {
            binaries,
            run_as,
            data_dir,
            socket_dir,
            log_file,
            port,
            pid,
            superuser: self.superuser.clone(),
            database: self.database.clone(),
            remove,
            stop_timeouts: self.stop_timeouts,
            detached: self.detached,
            state: Mutex::new(RunState {
                child: Some(child),
                watchdog,
                stopped: false,
            }),
        });
        if !self.detached {
            register(&inner);
        }
        Ok(Cluster { inner })
    }

    fn initdb(&self, binaries: &PgBinaries, ra: Option<&RunAs>, data: &Path) -> Result<()> {
        if !data.exists() {
            std::fs::create_dir_all(data).map_err(|e| ServerError::io(data, e))?;
        }
        chown_opt(ra, data)?;
        let mut cmd = server_command(binaries.program("initdb"), ra, data);
        cmd.arg("-D")
            .arg(data)
            .arg("-U")
            .arg(&self.superuser)
            .arg("--auth=trust")
            .arg("-E")
            .arg(&self.encoding)
            .arg(format!("--locale={}", self.locale))
            .arg("--no-sync");
        if self.data_checksums {
            cmd.arg("--data-checksums");
        }
        cmd.args(&self.initdb_args);
        run_checked(cmd, "initdb")
    }

    fn spawn_and_wait(
        &self,
        binaries: &PgBinaries,
        ra: Option<&RunAs>,
        data: &Path,
        socket_dir: &Path,
        log_file: &Path,
        port: u16,
    ) -> std::result::Result<Child, StartError> {
        let log = File::options()
            .create(true)
            .append(true)
            .open(log_file)
            .map_err(|e| StartError::Other(ServerError::io(log_file, e)))?;
        let log_len = log.metadata().map(|m| m.len()).unwrap_or(0);
        let log2 = log
            .try_clone()
            .map_err(|e| StartError::Other(ServerError::io(log_file, e)))?;
        let mut cmd = server_command(binaries.program("postgres"), ra, data);
        cmd.arg("-D")
            .arg(data)
            .arg("-c")
            .arg(format!("port={port}"))
            .arg("-c")
            .arg("listen_addresses=127.0.0.1")
            .arg("-c")
            .arg(format!("unix_socket_directories={}", socket_dir.display()));
        if self.settings_target == SettingsTarget::CommandLine {
            for (n, v) in &self.settings {
                cmd.arg("-c").arg(format!("{n}={v}"));
            }
        }
        cmd.stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .process_group(0);
        let mut child = cmd.spawn().map_err(|e| {
            StartError::Other(ServerError::CommandFailed {
                what: format!("starting {}", binaries.program("postgres").display()),
                detail: e.to_string(),
            })
        })?;
        let pid = child.id() as i32;
        let deadline = Instant::now() + self.start_timeout;
        let fail = |reason: String, port_in_use: bool| {
            let tail = log_tail_since(log_file, log_len, 30);
            let err = ServerError::StartFailed {
                reason,
                log: log_file.to_path_buf(),
                log_tail: tail.clone(),
            };
            if port_in_use || tail.contains("Address already in use") {
                StartError::PortInUse(err)
            } else {
                StartError::Other(err)
            }
        };
        loop {
            match child.try_wait() {
                Ok(Some(status)) => return Err(fail(format!("postgres exited ({status})"), false)),
                Ok(None) => {}
                Err(e) => return Err(StartError::Other(ServerError::io("postgres", e))),
            }
            if let Some(pf) = PidFile::read(data) {
                // PostgreSQL 10+ writes its status on line 8 once it accepts
                // connections; until then the file is shorter. (Older servers, which
                // never write it, are not supported: PgVersion rejects them.)
                let ready = pf.status.as_deref() == Some("ready");
                if pf.pid == pid && ready {
                    return Ok(child);
                }
            }
            if Instant::now() >= deadline {
                stop_postmaster(pid, Some(&mut child), self.stop_timeouts);
                return Err(fail(
                    format!("not accepting connections after {:?}", self.start_timeout),
                    false,
                ));
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

enum StartError {
    PortInUse(ServerError),
    Other(ServerError),
}

/// Paths to remove if starting fails half-way.
#[derive(Default)]
struct Cleanup {
    paths: Vec<PathBuf>,
}

impl Cleanup {
    fn run(&mut self) {
        for p in self.paths.drain(..) {
            let _ = std::fs::remove_dir_all(&p);
        }
    }
}

/// Mutable state of a running cluster.
#[derive(Debug)]
struct RunState {
    child: Option<Child>,
    watchdog: Option<Watchdog>,
    stopped: bool,
}

#[derive(Debug)]
struct Inner {
    binaries: PgBinaries,
    run_as: Option<RunAs>,
    data_dir: PathBuf,
    socket_dir: PathBuf,
    log_file: PathBuf,
    port: u16,
    pid: i32,
    superuser: String,
    database: Option<String>,
    remove: Vec<PathBuf>,
    stop_timeouts: StopTimeouts,
    detached: bool,
    state: Mutex<RunState>,
}

impl Inner {
    fn stop(&self) -> bool {
        let mut st = match self.state.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        if st.stopped {
            return true;
        }
        st.stopped = true;
        let gone = match st.child.as_mut() {
            Some(child) => stop_postmaster(self.pid, Some(child), self.stop_timeouts),
            None => stop_postmaster(self.pid, None, self.stop_timeouts),
        };
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
    inner: Arc<Inner>,
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
        self.inner.pid
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
    /// Runs SQL through `psql -X -At -v ON_ERROR_STOP=1` and returns its standard output.
    pub fn psql(&self, dbname: &str, sql: &str) -> Result<String> {
        let psql = self
            .inner
            .binaries
            .psql()
            .ok_or_else(|| ServerError::MissingProgram {
                dir: self.inner.binaries.bin_dir().to_path_buf(),
                program: "psql".into(),
            })?;
        let out = Command::new(&psql)
            .args(["-X", "-At", "-v", "ON_ERROR_STOP=1", "-d"])
            .arg(self.conninfo(dbname))
            .arg("-c")
            .arg(sql)
            .env_remove("PGSERVICE")
            .env_remove("PGOPTIONS")
            .stdin(Stdio::null())
            .output()
            .map_err(|e| ServerError::io(&psql, e))?;
        if !out.status.success() {
            return Err(ServerError::CommandFailed {
                what: format!("psql {sql:?}"),
                detail: format!(
                    "{}: {}",
                    out.status,
                    String::from_utf8_lossy(&out.stderr).trim()
                ),
            });
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }
    /// Creates a database (name quoted as an identifier).
    pub fn create_database(&self, name: &str) -> Result<()> {
        self.psql(
            "postgres",
            &format!("CREATE DATABASE {}", quote_ident(name)),
        )
        .map(|_| ())
    }
    /// Stops the server now (fast, then immediate) and removes its temporary
    /// directories. Returns false if the postmaster could not be made to exit.
    pub fn stop(&self) -> bool {
        self.inner.stop()
    }
    /// Leaves the server running after this value is dropped (for `pgsurge server start`).
    /// Its watchdog, if any, is told to exit.
    pub fn detach(self) {
        let mut st = match self.inner.state.lock() {
            Ok(g) => g,
            Err(p) => p.into_inner(),
        };
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

fn register(inner: &Arc<Inner>) {
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

/// Quotes a conninfo value when needed (spaces, quotes, backslashes, empty).
pub fn quote_conninfo(value: &str) -> String {
    if !value.is_empty() && !value.contains(|c: char| c.is_whitespace() || c == '\'' || c == '\\') {
        return value.to_string();
    }
    format!("'{}'", value.replace('\\', "\\\\").replace('\'', "\\'"))
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

/// Double-quotes an SQL identifier.
pub fn quote_ident(name: &str) -> String {
    format!("\"{}\"", name.replace('"', "\"\""))
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

/// A command for a server program: run as the unprivileged user, in a directory it can
/// read, without the caller's PG* variables (postgres reads PGDATA and PGPORT).
fn server_command(program: PathBuf, ra: Option<&RunAs>, data: &Path) -> Command {
    let mut cmd = Command::new(program);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PG") {
            cmd.env_remove(&k);
        }
    }
    cmd.env("LC_ALL", "C");
    let cwd = data
        .parent()
        .filter(|p| p.exists())
        .unwrap_or(Path::new("/"));
    cmd.current_dir(cwd);
    apply_opt(ra, &mut cmd);
    cmd
}

fn run_checked(mut cmd: Command, what: &str) -> Result<()> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| ServerError::CommandFailed {
            what: what.into(),
            detail: e.to_string(),
        })?;
    if out.status.success() {
        return Ok(());
    }
    Err(ServerError::CommandFailed {
        what: what.into(),
        detail: format!(
            "{}\n{}{}",
            out.status,
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    })
}

/// Creates a database in single-user mode (needs no client program, before start).
fn create_database_single_user(
    binaries: &PgBinaries,
    ra: Option<&RunAs>,
    data: &Path,
    db: &str,
) -> Result<()> {
    use std::io::Write;
    let mut cmd = server_command(binaries.program("postgres"), ra, data);
    cmd.args(["--single", "-F", "-c", "exit_on_error=true", "-D"])
        .arg(data)
        .arg("template1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().map_err(|e| ServerError::CommandFailed {
        what: "postgres --single".into(),
        detail: e.to_string(),
    })?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = writeln!(stdin, "CREATE DATABASE {}", quote_ident(db));
    }
    let out = child
        .wait_with_output()
        .map_err(|e| ServerError::io("postgres --single", e))?;
    if out.status.success() {
        Ok(())
    } else {
        Err(ServerError::CommandFailed {
            what: format!("creating database {db} (postgres --single)"),
            detail: format!("{}\n{}", out.status, String::from_utf8_lossy(&out.stderr)),
        })
    }
}

/// Decides what to do with an existing data directory. Returns true when initdb must run.
/// A server left running by a killed pgsurge run (owner dead, not detached) is stopped.
fn prepare_data_dir(data: &Path, binaries: &PgBinaries, timeouts: StopTimeouts) -> Result<bool> {
    let bad = |reason: String| ServerError::BadDataDir {
        data_dir: data.to_path_buf(),
        reason,
    };
    if !data.exists() {
        return Ok(true);
    }
    if !data.join("PG_VERSION").exists() {
        let empty = std::fs::read_dir(data)
            .map_err(|e| ServerError::io(data, e))?
            .next()
            .is_none();
        return if empty {
            Ok(true)
        } else {
            Err(bad(
                "exists, is not empty and is not a PostgreSQL data directory".into(),
            ))
        };
    }
    if let Some(pf) = PidFile::read(data) {
        if is_alive(pf.pid) && looks_like_postgres(pf.pid) {
            match OwnerMarker::read(data) {
                Some(m) if !m.detached && !is_alive(m.owner_pid) => {
                    // Orphan of a killed run: its watchdog may be stopping it already.
                    stop_postmaster(pf.pid, None, timeouts);
                    if let Some(w) = m.watchdog_pid {
                        wait_gone(w, Duration::from_secs(45));
                    }
                    remove_orphan_socket_dir(pf.socket_dir.as_deref());
                }
                _ => {
                    return Err(ServerError::AlreadyRunning {
                        pid: pf.pid,
                        data_dir: data.to_path_buf(),
                    })
                }
            }
        } else if let Some(m) = OwnerMarker::read(data) {
            if let Some(w) = m.watchdog_pid.filter(|_| !is_alive(m.owner_pid)) {
                wait_gone(w, Duration::from_secs(45));
            }
        }
        // A dead server's lock file: remove it so a reused pid cannot confuse the new one.
        let _ = std::fs::remove_file(data.join("postmaster.pid"));
    }
    if !data.exists() {
        // The killed run's watchdog removed it.
        return Ok(true);
    }
    let version = std::fs::read_to_string(data.join("PG_VERSION")).unwrap_or_default();
    let major = version.trim();
    if major != binaries.version().major.to_string() {
        return Err(bad(format!(
            "initialized by PostgreSQL {major}, but the binaries are {}; use another data directory",
            binaries.version()
        )));
    }
    Ok(false)
}

/// Removes the private socket directory of a killed run (its watchdog, which would have
/// removed it, may be dead too). Only directories pgsurge names `pgsurge-…` are touched.
fn remove_orphan_socket_dir(dir: Option<&str>) {
    let Some(dir) = dir.map(Path::new) else {
        return;
    };
    let ours = dir
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with("pgsurge-"));
    if ours && dir.is_absolute() {
        let _ = std::fs::remove_dir_all(dir);
    }
}

fn wait_gone(pid: i32, limit: Duration) {
    let deadline = Instant::now() + limit;
    while is_alive(pid) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn absolute(p: &Path) -> Result<PathBuf> {
    if p.is_absolute() {
        Ok(p.to_path_buf())
    } else {
        std::env::current_dir()
            .map(|c| c.join(p))
            .map_err(|e| ServerError::io(p, e))
    }
}

/// A new private temporary directory, owned by the run-as user. Short paths: a Unix
/// socket path must fit in 107 bytes.
fn make_temp_dir(prefix: &str, ra: Option<&RunAs>) -> Result<PathBuf> {
    let root = crate::sweep::temp_root();
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(&root)
        .map_err(|e| ServerError::io(&root, e))?
        .keep();
    chown_opt(ra, &dir)?;
    Ok(dir)
}

fn make_subdir(path: &Path, ra: Option<&RunAs>) -> Result<PathBuf> {
    use std::os::unix::fs::DirBuilderExt;
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(path)
        .map_err(|e| ServerError::io(path, e))?;
    chown_opt(ra, path)?;
    Ok(path.to_path_buf())
}

fn check_socket_path_length(dir: &Path) -> Result<()> {
    // ".s.PGSQL.65535" plus a separator must fit in sun_path (108 bytes with the NUL).
    if dir.as_os_str().len() + 15 > 107 {
        return Err(ServerError::Invalid(format!(
            "{}: socket directory path too long for a Unix socket; choose a shorter one",
            dir.display()
        )));
    }
    Ok(())
}

/// The last `lines` lines of `path` written after byte `from`.
fn log_tail_since(path: &Path, from: u64, lines: usize) -> String {
    let bytes = std::fs::read(path).unwrap_or_default();
    let start = (from as usize).min(bytes.len());
    let text = String::from_utf8_lossy(&bytes[start..]);
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conninfo_quotes_when_needed() {
        assert_eq!(quote_conninfo("abc"), "abc");
        assert_eq!(quote_conninfo("a b"), "'a b'");
        assert_eq!(quote_conninfo("it's"), "'it\\'s'");
        assert_eq!(quote_conninfo(""), "''");
        assert_eq!(
            conninfo(Path::new("/tmp/s"), 5432, "postgres", "db"),
            "host=/tmp/s port=5432 user=postgres dbname=db"
        );
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }
}
