//! Primaries with streaming standbys: `pgsurge server start --replicas N [--sync]`, and
//! the faults a topology takes (promote, pause replay, kill, restart in place).

use std::ffi::OsString;
use std::time::{Duration, Instant};

use pgsurge_server::{ClusterBuilder, Topology};

use crate::common::{self, wait_gone};

fn run(args: &[&str]) -> (i32, String, String) {
    let args: Vec<OsString> = args.iter().map(OsString::from).collect();
    let (mut out, mut err) = (Vec::new(), Vec::new());
    let code = pgsurge_server::server_command(&args, &mut out, &mut err);
    (
        code,
        String::from_utf8_lossy(&out).into_owned(),
        String::from_utf8_lossy(&err).into_owned(),
    )
}

fn psql(conninfo: &str, sql: &str) -> String {
    let bin = pgsurge_server::PgBinaries::discover().unwrap();
    common::psql(bin.bin_dir(), conninfo, sql)
}

/// Polls `sql` on `conninfo` until it returns `want` (generous deadline).
fn eventually(conninfo: &str, sql: &str, want: &str) {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let got = psql(conninfo, sql);
        if got == want {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{sql} gave {got:?}, not {want:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

struct StopAll(String);

impl Drop for StopAll {
    fn drop(&mut self) {
        run(&["stop", "--state-dir", &self.0, "--all"]);
    }
}

#[test]
fn server_start_with_a_sync_replica_streams_exports_both_and_stops_both() {
    let state = pgsurge_testkit::scratch_dir("replicas");
    let sd = state.path().to_str().unwrap();
    let _guard = StopAll(sd.to_string());
    let (code, out, err) = run(&[
        "start",
        "--state-dir",
        sd,
        "--replicas",
        "1",
        "--sync",
        "--set",
        "fsync=off",
    ]);
    assert_eq!(code, 0, "{err}");
    let conninfo = out.trim().to_string();
    assert!(
        conninfo.contains("target_session_attrs=read-write") && conninfo.contains(','),
        "{conninfo}"
    );
    assert!(err.contains("replica1 (synchronous)"), "{err}");
    // The multi-host string reaches the primary, which waits for the standby.
    assert_eq!(psql(&conninfo, "select pg_is_in_recovery()"), "f");
    assert_eq!(
        psql(&conninfo, "select sync_state from pg_stat_replication"),
        "quorum"
    );
    psql(
        &conninfo,
        "create table t(i int); insert into t values (42)",
    );

    let (code, env, _) = run(&["env", "--state-dir", sd]);
    assert_eq!(code, 0);
    let var = |k: &str| {
        env.lines()
            .find_map(|l| l.strip_prefix(&format!("export {k}=")))
            .unwrap_or_else(|| panic!("{k} missing from {env}"))
            .to_string()
    };
    assert_eq!(var("PGTARGETSESSIONATTRS"), "read-write");
    let hosts: Vec<String> = var("PGHOST").split(',').map(str::to_string).collect();
    let ports: Vec<String> = var("PGPORT").split(',').map(str::to_string).collect();
    assert_eq!((hosts.len(), ports.len()), (2, 2), "{env}");
    let replica = format!(
        "host={} port={} user=postgres dbname=pgsurge",
        hosts[1], ports[1]
    );
    assert_eq!(psql(&replica, "select pg_is_in_recovery()"), "t");
    eventually(&replica, "select i from t", "42");

    let (code, status, _) = run(&["status", "--state-dir", sd]);
    assert_eq!(code, 0);
    assert!(status.contains("replica1  running"), "{status}");
    let pids: Vec<i32> = status
        .split("pid ")
        .skip(1)
        .map(|s| s.split_whitespace().next().unwrap().parse().unwrap())
        .collect();
    assert_eq!(pids.len(), 2, "{status}");

    let (code, _, err) = run(&["stop", "--state-dir", sd]);
    assert_eq!(code, 0, "{err}");
    for pid in pids {
        assert!(wait_gone(pid, 30), "pid {pid} still runs");
    }
    for h in hosts {
        assert!(!std::path::Path::new(&h).exists(), "{h} left behind");
    }
}

#[test]
fn bad_topologies_are_refused_before_anything_starts() {
    let state = pgsurge_testkit::scratch_dir("replicas-bad");
    let sd = state.path().to_str().unwrap();
    let _guard = StopAll(sd.to_string());
    let (code, _, err) = run(&["start", "--state-dir", sd, "--replicas", "9"]);
    assert_eq!(code, 1);
    assert!(err.contains("at most 8"), "{err}");
    let (code, _, err) = run(&[
        "start",
        "--state-dir",
        sd,
        "--replicas",
        "2",
        "--port",
        "65534",
    ]);
    assert_eq!(code, 1);
    assert!(err.contains("past port 65535"), "{err}");
    // Four servers of 4 TB of shared buffers each: more memory than this machine has.
    let (code, _, err) = run(&[
        "start",
        "--state-dir",
        sd,
        "--replicas",
        "3",
        "--set",
        "shared_buffers=4TB",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("need 16777216 MB; this machine has"), "{err}");
    let (code, _, err) = run(&["start", "--state-dir", sd, "--sync"]);
    assert_eq!(code, 2, "{err}");
    // Nothing was started or recorded.
    let (code, out, _) = run(&["status", "--state-dir", sd]);
    assert_eq!(code, 3, "{out}");
}

#[test]
fn a_topology_pauses_replay_promotes_a_standby_and_loses_its_killed_primary() {
    let builder = ClusterBuilder::new()
        .settings(pgsurge_server::testing::TEST_SETTINGS.iter().copied())
        .database("bench");
    let topo = Topology::start(builder, 1, false).unwrap();
    let (primary, replica) = (topo.primary(), &topo.replicas()[0]);
    let dirs: Vec<_> = [primary, replica]
        .iter()
        .flat_map(|c| c.removable_paths().to_vec())
        .collect();
    let rconn = replica.conninfo("bench");
    primary.psql("bench", "create table t(i int)").unwrap();
    eventually(
        &rconn,
        "select count(*) from pg_class where relname = 't'",
        "1",
    );

    replica.pause_replay(true).unwrap();
    eventually(&rconn, "select pg_get_wal_replay_pause_state()", "paused");
    primary.psql("bench", "insert into t values (1)").unwrap();
    // Received, not replayed: the standby has the insert's WAL and does not show it.
    let written = primary
        .psql("bench", "select pg_current_wal_insert_lsn()")
        .unwrap();
    eventually(
        &rconn,
        &format!(
            "select pg_last_wal_receive_lsn() >= '{}'::pg_lsn",
            written.trim()
        ),
        "t",
    );
    assert_eq!(psql(&rconn, "select count(*) from t"), "0");
    replica.pause_replay(false).unwrap();
    eventually(&rconn, "select count(*) from t", "1");

    assert!(primary.kill(), "the killed primary is gone");
    assert!(replica.in_recovery().unwrap());
    replica.promote().unwrap();
    assert!(!replica.in_recovery().unwrap());
    replica.psql("bench", "insert into t values (2)").unwrap();
    assert_eq!(psql(&rconn, "select count(*) from t"), "2");
    assert!(psql(&topo.conninfo("bench"), "select pg_is_in_recovery()") == "f");
    drop(topo);
    for d in dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
}

#[test]
fn a_primary_restarted_in_place_keeps_its_port_and_data_and_its_standby_streams_again() {
    let builder = ClusterBuilder::new()
        .settings(pgsurge_server::testing::TEST_SETTINGS.iter().copied())
        .setting("synchronous_commit", "on")
        .database("bench");
    let topo = Topology::start(builder, 1, true).unwrap();
    let primary = topo.primary();
    let dirs = primary.removable_paths().to_vec();
    let (port, pid) = (primary.port(), primary.pid());
    primary.psql("bench", "create table t(i int)").unwrap();
    primary.psql("bench", "insert into t values (1)").unwrap();

    topo.restart_primary().unwrap();
    assert_eq!(primary.port(), port);
    assert_ne!(primary.pid(), pid, "a new postmaster");
    assert!(wait_gone(pid, 30), "the old postmaster is gone");
    // A commit waits for the standby: it streams again.
    primary.psql("bench", "insert into t values (2)").unwrap();
    let rconn = topo.replicas()[0].conninfo("bench");
    eventually(&rconn, "select count(*) from t", "2");

    // A killed primary is only started, recovering what it committed.
    let pid = primary.pid();
    assert!(primary.kill());
    primary.restart().unwrap();
    assert_ne!(primary.pid(), pid);
    assert_eq!(
        primary
            .psql("bench", "select count(*) from t")
            .unwrap()
            .trim(),
        "2"
    );
    drop(topo);
    for d in dirs {
        assert!(!d.exists(), "{} left behind", d.display());
    }
}
