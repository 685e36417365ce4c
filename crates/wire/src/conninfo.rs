//! Connection parameters resolved the way libpq resolves them for pgbench.
//!
//! Owns: the keyword table, parsing of `key=value` conninfo strings and
//! `postgresql://` URIs, `expand_dbname` semantics of `PQconnectdbParams`, defaults
//! from the service file (`service.rs`), `PG*` environment variables and built-in
//! defaults, and splitting of comma-separated host/port lists.
//! It does no I/O except reading the service file; passwords from `.pgpass` are
//! looked up per host at connect time (`pgpass.rs`), as libpq does.

use std::path::PathBuf;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

pub use crate::error::ConfigError;
use crate::keywords::{is_keyword, Settings, KEYWORDS};
use crate::require_auth::RequireAuth;
use crate::service;

/// Debian's libpq default socket directory (`DEFAULT_PGSOCKET_DIR`), tried first.
pub const DEFAULT_SOCKET_DIR: &str = "/var/run/postgresql";
/// The default socket directory of libpq built from source, used when
/// [`DEFAULT_SOCKET_DIR`] does not exist.
pub const FALLBACK_SOCKET_DIR: &str = "/tmp";

/// The socket directory used when no host is given: `/var/run/postgresql` where it
/// exists (Debian, Ubuntu, Red Hat packages), else `/tmp` (PostgreSQL built from source,
/// and most other builds).
pub fn default_socket_dir() -> &'static str {
    static DIR: std::sync::OnceLock<&'static str> = std::sync::OnceLock::new();
    DIR.get_or_init(|| {
        if std::path::Path::new(DEFAULT_SOCKET_DIR).is_dir() {
            DEFAULT_SOCKET_DIR
        } else {
            FALLBACK_SOCKET_DIR
        }
    })
}
/// `DEF_PGPORT_STR`.
pub const DEFAULT_PORT: u16 = 5432;

/// `sslmode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SslMode {
    /// Never TLS.
    Disable,
    /// Plain first, TLS if the server insists.
    Allow,
    /// TLS if the server supports it (libpq's default).
    Prefer,
    /// TLS, no certificate check.
    Require,
    /// TLS, certificate must chain to `sslrootcert`.
    VerifyCa,
    /// TLS, certificate must chain and match the host name.
    VerifyFull,
}

impl SslMode {
    fn parse(s: &str) -> Result<SslMode, ConfigError> {
        Ok(match s {
            "disable" => SslMode::Disable,
            "allow" => SslMode::Allow,
            "prefer" => SslMode::Prefer,
            "require" => SslMode::Require,
            "verify-ca" => SslMode::VerifyCa,
            "verify-full" => SslMode::VerifyFull,
            _ => return Err(ConfigError(format!("invalid sslmode value: \"{s}\""))),
        })
    }
}

/// `target_session_attrs`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TargetSessionAttrs {
    /// Any server.
    Any,
    /// `read-write`: `transaction_read_only` must be off.
    ReadWrite,
    /// `read-only`.
    ReadOnly,
    /// `primary`: not in recovery.
    Primary,
    /// `standby`: in recovery.
    Standby,
    /// `prefer-standby`: a standby if any, else any.
    PreferStandby,
}

/// Where one host entry points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostKind {
    /// A Unix-domain socket directory (host starts with `/` or `@`).
    UnixSocket,
    /// A host name to resolve.
    Name,
    /// A numeric address given with `hostaddr`.
    Address,
}

/// One entry of the (possibly comma-separated) host list, ready to connect to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostSpec {
    /// `host` entry as given (empty when only `hostaddr` was given).
    pub host: String,
    /// `hostaddr` entry, if any.
    pub hostaddr: Option<String>,
    /// Port number.
    pub port: u16,
    /// What kind of address this is.
    pub kind: HostKind,
}

impl HostSpec {
    /// The host as libpq's `PQhost` shows it: the host name or socket directory,
    /// else the `hostaddr`.
    pub fn display_host(&self) -> &str {
        if !self.host.is_empty() {
            &self.host
        } else {
            self.hostaddr.as_deref().unwrap_or("")
        }
    }

    /// The Unix socket file path (`<dir>/.s.PGSQL.<port>`), for socket hosts.
    pub fn socket_path(&self) -> Option<String> {
        (self.kind == HostKind::UnixSocket).then(|| format!("{}/.s.PGSQL.{}", self.host, self.port))
    }
}

/// Fully resolved connection parameters (what libpq's `PGconn` holds after
/// `connectOptions1/2`), plus the host list to try in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnConfig {
    values: Settings,
    hosts: Vec<HostSpec>,
    sslmode: SslMode,
    target_session_attrs: TargetSessionAttrs,
    connect_timeout: Option<Duration>,
    home: Option<PathBuf>,
    tls: TlsCache,
    require_auth: Option<RequireAuth>,
}

/// The TLS client configuration, built on first use and shared by clones (so
/// `-C` runs over TLS read the certificate files once, not per connection).
#[derive(Clone, Default)]
pub(crate) struct TlsCache(pub(crate) Arc<OnceLock<Result<Arc<rustls::ClientConfig>, String>>>);

impl PartialEq for TlsCache {
    fn eq(&self, _: &TlsCache) -> bool {
        // A cache, not part of the configuration's value.
        true
    }
}
impl Eq for TlsCache {}

impl std::fmt::Debug for TlsCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("TlsCache")
    }
}

/// The process environment as a lookup function.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

impl ConnConfig {
    /// Resolves parameters as pgbench's `doConnect` does: `PQconnectdbParams` with
    /// keywords `host, port, user, password, dbname, fallback_application_name` (in
    /// that order, `expand_dbname` on), where `None`/empty values are left unset.
    /// `dbname` may be a plain name, a `key=value` string or a URI; settings it holds
    /// override `host`/`port`/`user` given before it.
    pub fn for_pgbench(
        host: Option<&str>,
        port: Option<&str>,
        user: Option<&str>,
        dbname: &str,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<ConnConfig, ConfigError> {
        Self::for_pgbench_with_password(host, port, user, None, dbname, env)
    }

    /// Like [`ConnConfig::for_pgbench`], with the password pgbench passes (after it
    /// prompted for one).
    pub fn for_pgbench_with_password(
        host: Option<&str>,
        port: Option<&str>,
        user: Option<&str>,
        password: Option<&str>,
        dbname: &str,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<ConnConfig, ConfigError> {
        let params: [(&str, Option<&str>); 6] = [
            ("host", host),
            ("port", port),
            ("user", user),
            ("password", password),
            ("dbname", Some(dbname)),
            ("fallback_application_name", Some("pgbench")),
        ];
        Self::from_params(&params, true, env)
    }

    /// `PQconnectdbParams` semantics: keyword/value pairs in order, `None` or empty
    /// values skipped; with `expand_dbname` the first `dbname` that looks like a
    /// conninfo string or URI is expanded in place. Then defaults are applied from
    /// the service file, the environment and built-in values.
    pub fn from_params(
        params: &[(&str, Option<&str>)],
        expand_dbname: bool,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<ConnConfig, ConfigError> {
        let mut settings = Settings::new();
        let mut expanded = false;
        for (k, v) in params {
            let Some(v) = v.filter(|v| !v.is_empty()) else {
                continue;
            };
            if !is_keyword(k) {
                return Err(ConfigError(format!("invalid connection option \"{k}\"")));
            }
            if *k == "dbname" && expand_dbname && !expanded && recognized_connection_string(v) {
                expanded = true;
                for (ek, ev) in parse_conninfo_or_uri(v)? {
                    settings.insert(ek, ev);
                }
                continue;
            }
            settings.insert((*k).to_string(), v.to_string());
        }
        Self::resolve(settings, env)
    }

    /// `PQconnectdb(conninfo)` semantics with the process environment: a `key=value`
    /// string or a URI, completed with service file, environment and defaults.
    pub fn parse(conninfo: &str) -> Result<ConnConfig, ConfigError> {
        Self::parse_with_env(conninfo, &process_env)
    }

    /// [`ConnConfig::parse`] with an explicit environment.
    pub fn parse_with_env(
        conninfo: &str,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<ConnConfig, ConfigError> {
        let settings: Settings = parse_conninfo_or_uri(conninfo)?.into_iter().collect();
        Self::resolve(settings, env)
    }

    /// Applies defaults (service file, then environment, then built-ins) to explicit
    /// settings and validates them (libpq's `conninfo_add_defaults` +
    /// `connectOptions2`).
    fn resolve(
        mut settings: Settings,
        env: &impl Fn(&str) -> Option<String>,
    ) -> Result<ConnConfig, ConfigError> {
        // Service file values only fill unset keywords, and win over the environment.
        service::apply_service(&mut settings, env)?;
        for (kw, var) in KEYWORDS {
            if settings.contains_key(*kw) {
                continue;
            }
            if let Some(var) = var {
                if let Some(v) = env(var) {
                    // libpq takes environment values even when empty, except that an
                    // empty value behaves like "unset" for most keywords later on.
                    settings.insert((*kw).to_string(), v);
                }
            }
        }
        // An empty user or dbname means "use the default" (connectOptions2).
        for kw in ["user", "dbname"] {
            if settings.get(kw).is_some_and(|v| v.is_empty()) {
                settings.remove(kw);
            }
        }
        let home = env("HOME")
            .map(PathBuf::from)
            .or_else(|| crate::OsUser::effective().map(|u| u.home));
        if !settings.contains_key("user") {
            match crate::OsUser::effective().map(|u| u.name) {
                Some(u) => {
                    settings.insert("user".into(), u);
                }
                None => {
                    return Err(ConfigError(
                        "could not look up local user ID: user does not exist".into(),
                    ))
                }
            }
        }
        if !settings.contains_key("dbname") {
            let u = settings.get("user").cloned().unwrap_or_default();
            settings.insert("dbname".into(), u);
        }

        // Validation in connectOptions2's order, so the first complaint matches.
        let mut hosts = split_hosts(&settings)?;
        let require_auth =
            RequireAuth::parse(settings.get("require_auth").map_or("", String::as_str))?;
        if let Some(cb) = settings.get("channel_binding") {
            if !matches!(cb.as_str(), "disable" | "prefer" | "require") {
                return Err(ConfigError(format!(
                    "invalid channel_binding value: \"{cb}\""
                )));
            }
        }
        // sslrootcert=system makes verify-full the default (libpq 16+).
        let root_system = settings.get("sslrootcert").is_some_and(|r| r == "system");
        let sslmode = match settings.get("sslmode") {
            Some(m) => SslMode::parse(m)?,
            None if root_system => SslMode::VerifyFull,
            None => {
                if settings
                    .get("requiressl")
                    .is_some_and(|v| v.starts_with('1'))
                {
                    SslMode::Require
                } else {
                    SslMode::Prefer
                }
            }
        };
        let mode_text = settings
            .get("sslmode")
            .cloned()
            .unwrap_or_else(|| "prefer".into());
        match settings.get("sslnegotiation").map(String::as_str) {
            None | Some("") | Some("postgres") => {}
            Some("direct") => {
                if !matches!(
                    sslmode,
                    SslMode::Require | SslMode::VerifyCa | SslMode::VerifyFull
                ) {
                    return Err(ConfigError(format!(
                        "weak sslmode \"{mode_text}\" may not be used with sslnegotiation=direct (use \"require\", \"verify-ca\", or \"verify-full\")"
                    )));
                }
            }
            Some(other) => {
                return Err(ConfigError(format!(
                    "invalid sslnegotiation value: \"{other}\""
                )))
            }
        }
        if root_system && sslmode != SslMode::VerifyFull {
            return Err(ConfigError(format!(
                "weak sslmode \"{mode_text}\" may not be used with sslrootcert=system (use \"verify-full\")"
            )));
        }
        let target_session_attrs = match settings.get("target_session_attrs").map(String::as_str) {
            None | Some("any") => TargetSessionAttrs::Any,
            Some("read-write") => TargetSessionAttrs::ReadWrite,
            Some("read-only") => TargetSessionAttrs::ReadOnly,
            Some("primary") => TargetSessionAttrs::Primary,
            Some("standby") => TargetSessionAttrs::Standby,
            Some("prefer-standby") => TargetSessionAttrs::PreferStandby,
            Some(other) => {
                return Err(ConfigError(format!(
                    "invalid target_session_attrs value: \"{other}\""
                )))
            }
        };
        match settings.get("load_balance_hosts").map(String::as_str) {
            None | Some("disable") => {}
            Some("random") => shuffle(&mut hosts),
            Some(other) => {
                return Err(ConfigError(format!(
                    "invalid load_balance_hosts value: \"{other}\""
                )))
            }
        }
        // libpq parses connect_timeout when it starts waiting.
        let connect_timeout = match settings.get("connect_timeout") {
            None => None,
            Some(v) if v.is_empty() => None,
            Some(v) => {
                let n = parse_int_option(v, "connect_timeout")?;
                // libpq: values <= 0 mean no timeout, and 1 is raised to 2.
                if n <= 0 {
                    None
                } else {
                    Some(Duration::from_secs(n.max(2) as u64))
                }
            }
        };
        Ok(ConnConfig {
            values: settings,
            hosts,
            sslmode,
            target_session_attrs,
            connect_timeout,
            home,
            tls: TlsCache::default(),
            require_auth,
        })
    }

    /// The value of any libpq keyword after resolution (`PQconninfo`).
    pub fn get(&self, keyword: &str) -> Option<&str> {
        self.values.get(keyword).map(String::as_str)
    }

    /// The hosts to try, in order.
    pub fn hosts(&self) -> &[HostSpec] {
        &self.hosts
    }

    /// True when every host is on this machine (a Unix socket or a loopback address).
    pub fn is_local(&self) -> bool {
        !self.hosts.is_empty()
            && self.hosts.iter().all(|h| {
                let addr = h.hostaddr.as_deref().unwrap_or(&h.host);
                matches!(h.kind, HostKind::UnixSocket)
                    || addr == "localhost"
                    || addr == "::1"
                    || addr.starts_with("127.")
            })
    }

    /// The first host as `PQhost` would show it before connecting.
    pub fn host(&self) -> &str {
        self.hosts.first().map(HostSpec::display_host).unwrap_or("")
    }

    /// The port string as given (`PQport`), or the default.
    pub fn port(&self) -> String {
        match self.values.get("port") {
            Some(p) if !p.is_empty() => p.clone(),
            _ => DEFAULT_PORT.to_string(),
        }
    }

    /// Database name (`PQdb`).
    pub fn dbname(&self) -> &str {
        self.get("dbname").unwrap_or("")
    }

    /// User name (`PQuser`).
    pub fn user(&self) -> &str {
        self.get("user").unwrap_or("")
    }

    /// Explicit password (keyword or `PGPASSWORD`), if any.
    pub fn password(&self) -> Option<&str> {
        self.get("password").filter(|p| !p.is_empty())
    }

    /// Sets the password (pgbench does this after prompting).
    pub fn set_password(&mut self, password: &str) {
        self.values.insert("password".into(), password.to_string());
    }

    /// `application_name`, else `fallback_application_name`.
    pub fn application_name(&self) -> Option<&str> {
        self.get("application_name")
            .filter(|s| !s.is_empty())
            .or_else(|| {
                self.get("fallback_application_name")
                    .filter(|s| !s.is_empty())
            })
    }

    /// Appends `extra` (e.g. `-c work_mem=64MB`) to the `options` startup parameter.
    pub fn add_options(&mut self, extra: &str) {
        let value = match self.options() {
            Some(o) => format!("{o} {extra}"),
            None => extra.to_string(),
        };
        self.values.insert("options".into(), value);
    }

    /// `options` (sent as the `options` startup parameter).
    pub fn options(&self) -> Option<&str> {
        self.get("options").filter(|s| !s.is_empty())
    }

    /// `connect_timeout` as libpq applies it (None: wait forever).
    pub fn connect_timeout(&self) -> Option<Duration> {
        self.connect_timeout
    }

    /// Effective `sslmode`.
    pub fn ssl_mode(&self) -> SslMode {
        self.sslmode
    }

    /// Effective `target_session_attrs`.
    pub fn target_session_attrs(&self) -> TargetSessionAttrs {
        self.target_session_attrs
    }

    /// The same parameters asking for servers of another kind (`target_session_attrs`):
    /// of a multi-host list, the first server that is one.
    pub fn with_target_session_attrs(&self, attrs: TargetSessionAttrs) -> ConnConfig {
        let mut c = self.clone();
        c.target_session_attrs = attrs;
        let name = match attrs {
            TargetSessionAttrs::Any => "any",
            TargetSessionAttrs::ReadWrite => "read-write",
            TargetSessionAttrs::ReadOnly => "read-only",
            TargetSessionAttrs::Primary => "primary",
            TargetSessionAttrs::Standby => "standby",
            TargetSessionAttrs::PreferStandby => "prefer-standby",
        };
        c.values
            .insert("target_session_attrs".to_string(), name.to_string());
        c
    }

    /// The password file to consult (`passfile`/`PGPASSFILE`, else `~/.pgpass`).
    pub fn passfile(&self) -> Option<PathBuf> {
        match self.get("passfile") {
            Some(p) if !p.is_empty() => Some(PathBuf::from(p)),
            _ => self.home.as_ref().map(|h| h.join(".pgpass")),
        }
    }

    /// The TLS client configuration built for these parameters, once per configuration
    /// and its clones.
    pub(crate) fn tls_cache(&self) -> &TlsCache {
        &self.tls
    }

    /// The parsed `require_auth` rule, if any.
    pub(crate) fn require_auth(&self) -> Option<&RequireAuth> {
        self.require_auth.as_ref()
    }

    /// A path under `~/.postgresql/` (libpq's default location of TLS files).
    pub(crate) fn home_file(&self, name: &str) -> Option<PathBuf> {
        self.home.as_ref().map(|h| h.join(".postgresql").join(name))
    }
}

fn parse_int_option(v: &str, name: &str) -> Result<i64, ConfigError> {
    let t = v.trim();
    t.parse::<i64>()
        .ok()
        .filter(|n| i32::try_from(*n).is_ok())
        .ok_or_else(|| {
            ConfigError(format!(
                "invalid integer value \"{v}\" for connection option \"{name}\""
            ))
        })
}

/// `load_balance_hosts=random`: a Fisher-Yates shuffle seeded from the clock and
/// the process id (libpq seeds its PRNG per connection object as well).
fn shuffle<T>(items: &mut [T]) {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    let mut x = nanos ^ ((std::process::id() as u64) << 32) | 1;
    for i in (1..items.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        items.swap(i, (x % (i as u64 + 1)) as usize);
    }
}

fn split_list(v: Option<&String>) -> Vec<String> {
    match v {
        None => Vec::new(),
        Some(s) => s.split(',').map(str::to_string).collect(),
    }
}

/// libpq's connectOptions2: split `host`, `hostaddr` and `port` lists and pair them.
fn split_hosts(settings: &Settings) -> Result<Vec<HostSpec>, ConfigError> {
    let hostaddrs = split_list(settings.get("hostaddr").filter(|s| !s.is_empty()));
    let mut hosts = split_list(settings.get("host").filter(|s| !s.is_empty()));
    let n = if !hostaddrs.is_empty() {
        if !hosts.is_empty() && hosts.len() != hostaddrs.len() {
            return Err(ConfigError(format!(
                "could not match {} host names to {} hostaddr values",
                hosts.len(),
                hostaddrs.len()
            )));
        }
        hostaddrs.len()
    } else {
        hosts.len().max(1)
    };
    if hosts.is_empty() {
        hosts = vec![String::new(); n];
    }
    let ports = split_list(settings.get("port").filter(|s| !s.is_empty()));
    if ports.len() > 1 && ports.len() != n {
        return Err(ConfigError(format!(
            "could not match {} port numbers to {} hosts",
            ports.len(),
            n
        )));
    }
    let mut out = Vec::with_capacity(n);
    for i in 0..n {
        let port_str = if ports.is_empty() {
            ""
        } else if ports.len() == 1 {
            &ports[0]
        } else {
            &ports[i]
        };
        let port = if port_str.is_empty() {
            DEFAULT_PORT
        } else {
            let p = parse_int_option(port_str, "port")?;
            if !(1..=65535).contains(&p) {
                return Err(ConfigError(format!("invalid port number: \"{port_str}\"")));
            }
            p as u16
        };
        let hostaddr = hostaddrs.get(i).filter(|a| !a.is_empty()).cloned();
        let mut host = hosts[i].clone();
        let kind = if hostaddr.is_some() {
            HostKind::Address
        } else if host.is_empty() {
            host = default_socket_dir().to_string();
            HostKind::UnixSocket
        } else if host.starts_with('/') || host.starts_with('@') {
            HostKind::UnixSocket
        } else {
            HostKind::Name
        };
        out.push(HostSpec {
            host,
            hostaddr,
            port,
            kind,
        });
    }
    Ok(out)
}

/// libpq's `recognized_connection_string`: a URI prefix or an `=` sign.
pub(crate) fn recognized_connection_string(s: &str) -> bool {
    uri_prefix_len(s).is_some() || s.contains('=')
}

fn uri_prefix_len(s: &str) -> Option<usize> {
    ["postgresql://", "postgres://"]
        .iter()
        .find(|p| s.starts_with(*p))
        .map(|p| p.len())
}

/// Parses a conninfo string or URI into keyword/value pairs, in order.
pub(crate) fn parse_conninfo_or_uri(s: &str) -> Result<Vec<(String, String)>, ConfigError> {
    if uri_prefix_len(s).is_some() {
        crate::uri::parse_uri(s)
    } else {
        parse_conninfo(s)
    }
}

/// White space between conninfo words: C's `isspace` in the C locale, as libpq reads it
/// (not Unicode white space).
pub(crate) fn is_conninfo_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

/// A value as a `key=value` conninfo string takes it: as written when libpq reads it
/// back whole, else in single quotes with `\` and `'` escaped by a backslash. libpq
/// ends an unquoted value at white space (any of C's `isspace`) and reads `\` as an
/// escape in both forms, so an empty value, or one holding white space (Unicode's
/// too: quoting more is harmless), a quote or a backslash is quoted.
pub fn quote_conninfo(value: &str) -> String {
    let plain =
        !value.is_empty() && !value.contains(|c: char| c.is_whitespace() || c == '\'' || c == '\\');
    if plain {
        return value.to_string();
    }
    let mut out = String::with_capacity(value.len() + 2);
    out.push('\'');
    for c in value.chars() {
        if c == '\\' || c == '\'' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('\'');
    out
}

/// Parses `key = value key2='quoted \' value'` (libpq's `conninfo_parse`).
pub(crate) fn parse_conninfo(s: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let b: Vec<char> = s.chars().collect();
    let mut i = 0;
    let mut out: Vec<(String, String)> = Vec::new();
    loop {
        while i < b.len() && is_conninfo_space(b[i]) {
            i += 1;
        }
        if i >= b.len() {
            break;
        }
        let start = i;
        while i < b.len() && b[i] != '=' && !is_conninfo_space(b[i]) {
            i += 1;
        }
        let key: String = b[start..i].iter().collect();
        while i < b.len() && is_conninfo_space(b[i]) {
            i += 1;
        }
        if i >= b.len() || b[i] != '=' {
            return Err(ConfigError(format!(
                "missing \"=\" after \"{key}\" in connection info string"
            )));
        }
        i += 1;
        while i < b.len() && is_conninfo_space(b[i]) {
            i += 1;
        }
        let mut val = String::new();
        if i < b.len() && b[i] == '\'' {
            i += 1;
            loop {
                if i >= b.len() {
                    return Err(ConfigError(
                        "unterminated quoted string in connection info string".into(),
                    ));
                }
                match b[i] {
                    '\\' => {
                        i += 1;
                        if i < b.len() {
                            val.push(b[i]);
                            i += 1;
                        }
                    }
                    '\'' => {
                        i += 1;
                        break;
                    }
                    c => {
                        val.push(c);
                        i += 1;
                    }
                }
            }
        } else {
            while i < b.len() && !is_conninfo_space(b[i]) {
                if b[i] == '\\' {
                    i += 1;
                    if i < b.len() {
                        val.push(b[i]);
                    }
                } else {
                    val.push(b[i]);
                }
                i += 1;
            }
        }
        if !is_keyword(&key) {
            return Err(ConfigError(format!("invalid connection option \"{key}\"")));
        }
        // A later setting of the same keyword wins.
        out.retain(|(k, _)| *k != key);
        out.push((key, val));
    }
    Ok(out)
}

/// `pg_fe_getusername`: the OS user name of the effective uid.
#[cfg(test)]
mod tests;
