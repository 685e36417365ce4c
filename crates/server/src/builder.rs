//! Configuring and starting a cluster: [`ClusterBuilder`] resolves the binaries and the
//! run-as user, lays out the directories, initializes or reuses the data directory,
//! writes the configuration, then starts the postmaster on a free port and waits until
//! it accepts connections (retrying when another process takes the port first).

use std::ffi::OsString;
use std::fs::File;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::atomic::AtomicI32;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pgsurge_wire::quote_conninfo;

use crate::binaries::PgBinaries;
use crate::cluster::{free_port, register, Cluster, Inner, RunState};
use crate::config_files::{
    check_setting_name, prepend_hba, write_auto_conf, write_files, OwnerMarker,
};
use crate::datadir::{
    absolute, check_socket_path_length, create_database_single_user, log_tail_since, make_subdir,
    make_temp_dir, prepare_data_dir, run_checked, server_command,
};
use crate::error::{Result, ServerError};
use crate::postmaster::{stop_postmaster, PidFile, StopTimeouts};
use crate::relay::LinkRelay;
use crate::run_as::{chown_opt, RunAs};
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
    cpus: Option<pgsurge_affinity::CpuList>,
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
    statements: bool,
    standby: Option<Standby>,
}

/// The primary a standby streams from: where to reach it and the name it knows the
/// standby by (`application_name`, as `synchronous_standby_names` lists it).
#[derive(Debug, Clone)]
struct Standby {
    socket_dir: PathBuf,
    port: u16,
    user: String,
    name: String,
    /// Streams through a [`LinkRelay`] (started with the standby) rather than
    /// straight to the primary's socket.
    relayed: bool,
    relay: Option<Arc<LinkRelay>>,
}

impl Standby {
    /// `primary_conninfo`, over the primary's Unix socket or the relay's.
    fn conninfo(&self) -> String {
        let dir = self
            .relay
            .as_ref()
            .map_or(&*self.socket_dir, |r| r.socket_dir());
        format!(
            "{} application_name={}",
            crate::cluster::conninfo_no_db(dir, self.port, &self.user),
            quote_conninfo(&self.name)
        )
    }
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
            cpus: None,
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
            statements: false,
            standby: None,
        }
    }
}

/// The setting that loads libraries at server start.
const PRELOAD: &str = "shared_preload_libraries";
/// The extension that counts each statement's calls and time.
const STATEMENTS: &str = "pg_stat_statements";

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
    /// Pins the server (the postmaster and every process it starts) to these CPUs.
    pub fn cpus(mut self, cpus: Option<pgsurge_affinity::CpuList>) -> Self {
        self.cpus = cpus;
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
    /// How long to wait for the server to accept connections, and for the setup of a
    /// new cluster (its database, `pg_stat_statements`) to finish (default 60 s).
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

    /// Loads `pg_stat_statements` when the binaries provide it and the settings do not
    /// set `shared_preload_libraries` themselves (an empty value turns it off): it is
    /// preloaded, and created in template1 of a fresh cluster, so every database has it.
    /// Off by default.
    pub fn statements(mut self, on: bool) -> Self {
        self.statements = on;
        self
    }

    /// Makes the server a streaming standby of `primary`: its data directory (which must
    /// be new) is a base backup of the primary instead of an initdb, it streams the
    /// primary's WAL under `name` (its `application_name`), answers read-only queries,
    /// and never waits for standbys of its own once promoted.
    pub fn standby_of(mut self, primary: &Cluster, name: impl Into<String>) -> Self {
        self.standby = Some(Standby {
            socket_dir: primary.socket_dir().to_path_buf(),
            port: primary.port(),
            user: primary.superuser().to_string(),
            name: name.into(),
            relayed: false,
            relay: None,
        });
        self
    }

    /// The builder of a standby of `primary` called `name`: the same binaries, user,
    /// settings and CPUs, a temporary data directory, its own port (`port_offset` above
    /// the primary's when the primary's port was given, else a free one).
    /// With `relayed`, the standby streams through a [`LinkRelay`] of its own.
    pub(crate) fn for_standby(
        &self,
        primary: &Cluster,
        name: &str,
        port_offset: u16,
        relayed: bool,
    ) -> Self {
        let mut b = self.clone();
        b.data_dir = None;
        b.keep_data = None;
        b.socket_dir = None;
        b.database = None;
        b.statements = false;
        b.port = self.port.map(|p| p + port_offset);
        b.source = BinarySource::Binaries(primary.binaries().clone());
        let mut b = b.standby_of(primary, name);
        if let Some(s) = &mut b.standby {
            s.relayed = relayed;
        }
        b
    }

    /// The port asked for, if any.
    pub(crate) fn requested_port(&self) -> Option<u16> {
        self.port
    }

    /// The value of a setting as given, if it was.
    pub(crate) fn setting_value(&self, name: &str) -> Option<&str> {
        self.settings
            .iter()
            .rev()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// Whether `pg_stat_statements` is preloaded (its setting added by [`start`]).
    ///
    /// [`start`]: ClusterBuilder::start
    fn preloads_statements(&self) -> bool {
        self.settings
            .iter()
            .any(|(n, v)| n == PRELOAD && v == STATEMENTS)
            && self.statements
    }

    /// Initializes if needed, configures, starts and waits for the server.
    pub fn start(mut self) -> Result<Cluster> {
        for (name, _) in &self.settings {
            check_setting_name(name)?;
        }
        let binaries = self.source.resolve()?;
        if self.statements
            && !self.settings.iter().any(|(n, _)| n == PRELOAD)
            && binaries.has_extension(STATEMENTS)
        {
            self.settings.push((PRELOAD.into(), STATEMENTS.into()));
        }
        let run_as = RunAs::resolve(self.run_as.as_deref())?;
        if let Some(s) = self
            .standby
            .as_mut()
            .filter(|s| s.relayed && s.relay.is_none())
        {
            let relay = LinkRelay::start(&s.socket_dir, s.port, run_as.as_ref())?;
            s.relay = Some(Arc::new(relay));
        }
        if let Some(s) = &self.standby {
            let standby_settings = [
                ("primary_conninfo", s.conninfo()),
                ("synchronous_standby_names", String::new()),
                ("hot_standby", "on".into()),
                // Replay progress reported every second, for the lag figures.
                ("wal_receiver_status_interval", "1s".into()),
            ];
            for (n, v) in standby_settings {
                self.settings.retain(|(name, _)| name != n);
                self.settings.push((n.into(), v));
            }
            self.settings_target = SettingsTarget::AutoConf;
            self.files.push(("standby.signal".into(), Vec::new()));
            self.database = None;
        }
        let mut cleanup = Cleanup::default();
        let result = self.start_inner(binaries, run_as, &mut cleanup);
        if result.is_err() {
            cleanup.run();
        }
        result
    }

    /// In a fresh cluster: the benchmark database, and `pg_stat_statements` when it is
    /// preloaded (single-user mode, before the server starts).
    fn create_database(
        &self,
        binaries: &PgBinaries,
        ra: Option<&RunAs>,
        data_dir: &Path,
    ) -> Result<()> {
        let extensions: &[&str] = if self.preloads_statements() {
            &[STATEMENTS]
        } else {
            &[]
        };
        if self.database.is_none() && extensions.is_empty() {
            return Ok(());
        }
        let database = self.database.as_deref();
        create_database_single_user(
            binaries,
            ra,
            data_dir,
            database,
            extensions,
            self.start_timeout,
        )
    }

    /// The directories of a start: a temporary base holding data/ and sock/ (tagged for
    /// the sweep of killed runs unless kept), or the given directories. Returns the data
    /// directory, the socket directory, the server log and what to remove at stop.
    fn layout(
        &self,
        ra: Option<&RunAs>,
        cleanup: &mut Cleanup,
    ) -> Result<(PathBuf, PathBuf, PathBuf, Vec<PathBuf>)> {
        Ok(match &self.data_dir {
            None => {
                let base = make_temp_dir(&self.temp_prefix, ra)?;
                cleanup.paths.push(base.clone());
                let data = base.join("data");
                let sock = match &self.socket_dir {
                    Some(s) => s.clone(),
                    None => make_subdir(&base.join("sock"), ra)?,
                };
                let keep = self.keep_data.unwrap_or(false);
                if !keep {
                    crate::sweep::tag_temporary(&base).map_err(|e| ServerError::io(&base, e))?;
                }
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
        })
    }

    fn start_inner(
        &self,
        binaries: PgBinaries,
        run_as: Option<RunAs>,
        cleanup: &mut Cleanup,
    ) -> Result<Cluster> {
        let ra = run_as.as_ref();
        let (data_dir, socket_dir, log_file, mut remove) = self.layout(ra, cleanup)?;
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
            match &self.standby {
                Some(s) => self.base_backup(&binaries, ra, &data_dir, s)?,
                None => self.initdb(&binaries, ra, &data_dir)?,
            }
        } else if self.standby.is_some() {
            return Err(ServerError::BadDataDir {
                data_dir: data_dir.clone(),
                reason: "a standby starts from a base backup into a new data directory; \
                         this one already holds a cluster"
                    .into(),
            });
        }
        if self.settings_target == SettingsTarget::AutoConf && !self.settings.is_empty() {
            write_auto_conf(&data_dir, &self.settings, ra)?;
        }
        prepend_hba(&data_dir, &self.hba, ra)?;
        write_files(&data_dir, &self.files, ra)?;
        if fresh {
            self.create_database(&binaries, ra, &data_dir)?;
        }

        // This process owns the directory from before its server starts: the marker a
        // killed run left names a dead owner, and a sweep of killed runs' directories
        // (another process's) reading it while the new server starts would stop that
        // server as the killed run's orphan. The watchdog is added once it runs.
        OwnerMarker {
            owner_pid: std::process::id() as i32,
            watchdog_pid: None,
            detached: self.detached,
        }
        .write(&data_dir, ra)?;

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
            pid: AtomicI32::new(pid),
            spawner: self.clone(),
            superuser: self.superuser.clone(),
            database: self.database.clone(),
            remove,
            stop_timeouts: self.stop_timeouts,
            detached: self.detached,
            relay: self.standby.as_ref().and_then(|s| s.relay.clone()),
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

    /// Copies the primary into `data` with `pg_basebackup` (fast checkpoint, WAL
    /// streamed alongside).
    fn base_backup(
        &self,
        binaries: &PgBinaries,
        ra: Option<&RunAs>,
        data: &Path,
        from: &Standby,
    ) -> Result<()> {
        // Made here and handed to the server's user, who may not write to its parent;
        // mode 0700, as the server demands of its data directory.
        if !data.exists() {
            std::fs::create_dir_all(data).map_err(|e| ServerError::io(data, e))?;
            std::fs::set_permissions(data, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| ServerError::io(data, e))?;
        }
        chown_opt(ra, data)?;
        let mut cmd = server_command(binaries.program("pg_basebackup"), ra, data);
        cmd.arg("-D")
            .arg(data)
            .arg("-h")
            .arg(&from.socket_dir)
            .arg("-p")
            .arg(from.port.to_string())
            .arg("-U")
            .arg(&from.user)
            .args(["-X", "stream", "-c", "fast", "--no-sync", "-w"]);
        run_checked(cmd, "pg_basebackup")
    }

    /// Starts the postmaster of a stopped `cluster` again on its data directory, port
    /// and socket directory, and waits until it accepts connections.
    pub(crate) fn spawn_again(&self, cluster: &Inner) -> Result<Child> {
        self.spawn_and_wait(
            &cluster.binaries,
            cluster.run_as.as_ref(),
            &cluster.data_dir,
            &cluster.socket_dir,
            &cluster.log_file,
            cluster.port,
        )
        .map_err(|(StartError::PortInUse(e) | StartError::Other(e))| e)
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
            .arg(format!("unix_socket_directories={}", socket_dir.display()));
        // Loopback only, unless the settings say where to listen: a command-line value
        // would override theirs, written to postgresql.auto.conf.
        if !self
            .settings
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("listen_addresses"))
        {
            cmd.arg("-c").arg("listen_addresses=127.0.0.1");
        }
        if self.settings_target == SettingsTarget::CommandLine {
            for (n, v) in &self.settings {
                cmd.arg("-c").arg(format!("{n}={v}"));
            }
        }
        cmd.stdin(Stdio::null())
            .stdout(log)
            .stderr(log2)
            .process_group(0);
        let spawned = match &self.cpus {
            // The postmaster inherits the CPUs of the thread that starts it, and every
            // backend the postmaster's.
            Some(cpus) => cpus.while_pinned(|| cmd.spawn()).and_then(|r| r),
            None => cmd.spawn(),
        };
        let mut child = spawned.map_err(|e| {
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
                // A hot standby says `ready` once it answers read-only queries; one
                // with hot_standby off says `standby` and never takes a connection.
                if pf.pid == pid {
                    match pf.status.as_deref() {
                        Some("ready") => return Ok(child),
                        Some("standby") => {
                            stop_postmaster(pid, Some(&mut child), self.stop_timeouts);
                            return Err(fail(
                                "it is a standby that accepts no connections \
                                 (hot_standby = off); hot_standby=on lets it answer \
                                 read-only queries"
                                    .into(),
                                false,
                            ));
                        }
                        _ => {}
                    }
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
