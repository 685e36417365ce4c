//! Crash cleanup: a process that started a cluster is SIGKILLed; the server must not
//! be left running, and starting again on the same data directory must work.
//!
//! The crashing process is the helper binary `pgsurge-server-crash-helper`
//! (`tests/helpers/crash_helper.rs`).

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::common::wait_gone;
use pgsurge_server::{is_alive, Cluster, ClusterBuilder};

/// Runs a query; on failure panics with the server log, which tells what happened.
fn query(c: &Cluster, sql: &str) -> String {
    match c.psql("postgres", sql) {
        Ok(out) => out.trim().to_string(),
        Err(e) => panic!("{e}\n--- server log ---\n{}", c.log_tail(40)),
    }
}

/// Starts the helper; returns it, the postmaster pid and the watchdog pid.
fn start_helper(data: &Path) -> (Child, i32, i32) {
    let (child, pid, watchdog, _) = start_helper_in(data);
    (child, pid, watchdog)
}

/// Like `start_helper`, also returning the data directory the helper used.
fn start_helper_in(data: &Path) -> (Child, i32, i32, PathBuf) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_pgsurge-server-crash-helper"))
        .arg(data)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = loop {
        let l = lines
            .next()
            .expect("helper exited before starting its cluster")
            .unwrap();
        if let Some(rest) = l.strip_prefix("READY ") {
            break rest.to_string();
        }
    };
    let mut parts = line.splitn(3, ' ');
    let (pid, data_dir, marker) = (
        parts.next().unwrap(),
        parts.next().unwrap(),
        parts.next().unwrap(),
    );
    let watchdog: i32 = marker
        .split("\"watchdog_pid\":")
        .nth(1)
        .and_then(|s| s.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|s| s.parse().ok())
        .expect("owner marker names the watchdog");
    (
        child,
        pid.parse().unwrap(),
        watchdog,
        PathBuf::from(data_dir),
    )
}

fn sigkill(pid: i32) {
    let ok = Command::new("kill")
        .args(["-KILL", &pid.to_string()])
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn crash_cleanup_watchdog_stops_server_and_restart_reuses_data() {
    let dir = common::reachable_tempdir();
    let data = dir.path().join("data");
    let (mut child, postmaster, watchdog) = start_helper(&data);
    assert!(is_alive(postmaster));
    sigkill(child.id() as i32);
    let _ = child.wait();
    // Start again at once: either the watchdog has stopped the orphan already or the
    // new start stops it; both must end with one server on the data directory.
    let again = ClusterBuilder::new().data_dir(&data).start().unwrap();
    assert!(
        wait_gone(postmaster, 60),
        "old postmaster {postmaster} still running"
    );
    assert!(wait_gone(watchdog, 60), "watchdog {watchdog} still running");
    assert_ne!(again.pid(), postmaster);
    assert_eq!(query(&again, "select 1"), "1");
    let pid = again.pid();
    drop(again);
    assert!(!is_alive(pid));
    assert!(
        data.join("PG_VERSION").exists(),
        "a given data directory is kept"
    );
}

#[test]
fn crash_cleanup_without_watchdog_orphan_is_stopped_on_restart() {
    let dir = common::reachable_tempdir();
    let data = dir.path().join("data");
    let (mut child, postmaster, watchdog) = start_helper(&data);
    // Kill the watchdog first: now nothing will stop the orphaned server but us.
    sigkill(watchdog);
    sigkill(child.id() as i32);
    let _ = child.wait();
    assert!(wait_gone(watchdog, 60));
    assert!(
        is_alive(postmaster),
        "orphaned postmaster should still be running"
    );
    // The data directory was given (under a `pgsurge-…` scratch directory, as a
    // temporary cluster's would be): a sweep of killed runs must leave it and its
    // server alone, so that this restart finds them as the killed run left them.
    let removed = pgsurge_server::sweep_stale_temp_clusters();
    assert!(
        !removed.iter().any(|r| data.starts_with(r)),
        "a given data directory was swept: {removed:?}"
    );
    assert!(data.join("PG_VERSION").is_file());
    assert!(
        is_alive(postmaster),
        "the sweep stopped a given directory's server"
    );
    let again = ClusterBuilder::new().data_dir(&data).start().unwrap();
    assert!(
        !is_alive(postmaster),
        "orphan from the killed run was not stopped"
    );
    assert_eq!(query(&again, "select 2"), "2");
}

#[test]
fn running_server_of_a_live_owner_is_not_taken_over() {
    let dir = common::reachable_tempdir();
    let first = ClusterBuilder::new()
        .data_dir(dir.path().join("d"))
        .start()
        .unwrap();
    let err = ClusterBuilder::new()
        .data_dir(first.data_dir())
        .start()
        .unwrap_err();
    assert!(err.to_string().contains("already running"), "{err}");
    assert!(is_alive(first.pid()));
}

#[test]
fn stale_temporary_cluster_of_a_killed_run_is_swept() {
    let (mut child, postmaster, watchdog, data) = start_helper_in(Path::new("temp"));
    let base = data.parent().unwrap().to_path_buf();
    sigkill(watchdog);
    sigkill(child.id() as i32);
    let _ = child.wait();
    assert!(wait_gone(watchdog, 60));
    assert!(
        is_alive(postmaster),
        "orphaned postmaster should still be running"
    );
    let removed = pgsurge_server::sweep_stale_temp_clusters();
    assert!(
        removed.contains(&base),
        "{} not swept (removed: {removed:?})",
        base.display()
    );
    assert!(
        !is_alive(postmaster),
        "orphaned postmaster not stopped by the sweep"
    );
    assert!(!base.exists());
}
