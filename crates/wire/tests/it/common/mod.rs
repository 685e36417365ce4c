//! Helpers shared by the integration tests that run against real servers.

#![allow(dead_code)]

use pgsurge_wire::ConnConfig;
use std::path::{Path, PathBuf};
use std::process::Command;

/// An environment with only HOME set (to `home`), so the machine's own PG*
/// variables, ~/.pgpass and ~/.postgresql never leak into a test.
pub fn env_with_home(home: &Path) -> impl Fn(&str) -> Option<String> {
    let home = home.display().to_string();
    move |k: &str| (k == "HOME").then(|| home.clone())
}

/// Parses `conninfo` with a private empty HOME.
pub fn config(conninfo: &str) -> ConnConfig {
    let home = empty_home();
    ConnConfig::parse_with_env(conninfo, &env_with_home(&home)).expect("valid conninfo")
}

/// A fresh empty directory used as HOME, removed when dropped.
pub fn empty_home() -> pgsurge_testkit::ScratchDir {
    pgsurge_testkit::scratch_dir("home")
}

/// The psql binary to compare error texts with, if one exists.
pub fn psql_bin() -> Option<PathBuf> {
    let p = PathBuf::from("/usr/bin/psql");
    p.exists().then_some(p)
}

/// What psql prints on stderr when connecting with `conninfo` fails, without the
/// `psql: error: ` prefix and the final newline; `None` if psql is missing or
/// connected.
pub fn psql_error(conninfo: &str, extra_env: &[(&str, &str)]) -> Option<String> {
    let psql = psql_bin()?;
    let home = empty_home();
    let mut cmd = Command::new(psql);
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("PG") {
            cmd.env_remove(&k);
        }
    }
    cmd.env("HOME", &home)
        .env("PGPASSFILE", home.join("nopass"));
    for (k, v) in extra_env {
        cmd.env(k, v);
    }
    let out = cmd
        .args(["-X", "-w", "-c", "select 1", conninfo])
        .output()
        .expect("run psql");
    if out.status.success() {
        return None;
    }
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    Some(
        err.strip_prefix("psql: error: ")
            .unwrap_or(&err)
            .trim_end_matches('\n')
            .to_string(),
    )
}

/// Waits (up to 30 s) until a connection with `conninfo` succeeds: a freshly
/// started server may not listen yet or still be in startup recovery (57P03).
pub fn wait_until_accepting(conninfo: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while pgsurge_wire::Connection::connect(&config(conninfo)).is_err()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}
