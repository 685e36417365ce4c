//! Cluster lifecycle: start, connect, stop, nothing left; privilege drop; two servers
//! at once; settings applied; a statement to a server that does not answer.

use crate::common::{children_of, psql, uid_of};
use pgsurge_server::{is_alive, ClusterBuilder, SettingsTarget};

#[test]
fn lifecycle_start_connect_stop_leaves_nothing() {
    let cluster = ClusterBuilder::new().database("bench").start().unwrap();
    let bin = cluster.binaries().bin_dir().to_path_buf();
    assert_eq!(
        psql(
            &bin,
            &cluster.conninfo("bench"),
            "select current_database()"
        ),
        "bench"
    );
    assert_eq!(
        psql(&bin, &cluster.tcp_conninfo("bench"), "select 6*7"),
        "42"
    );
    let enc = psql(&bin, &cluster.conninfo("bench"), "select pg_encoding_to_char(encoding) || ' ' || datcollate from pg_database where datname = 'bench'");
    assert_eq!(enc, "UTF8 C");
    let pid = cluster.pid();
    assert!(is_alive(pid));
    let backends = children_of(pid);
    assert!(
        !backends.is_empty(),
        "a running postmaster has auxiliary processes"
    );
    let data = cluster.data_dir().to_path_buf();
    let sock = cluster.socket_dir().to_path_buf();
    drop(cluster);
    assert!(!is_alive(pid), "postmaster still running after drop");
    for b in backends {
        assert!(!is_alive(b), "server process {b} survived the stop");
    }
    assert!(!data.exists(), "temporary data directory left behind");
    assert!(!sock.exists(), "socket directory left behind");
}

/// Stops a process (SIGSTOP) until dropped, on a panic too.
struct Stopped(rustix::process::Pid);

impl Stopped {
    fn new(pid: i32) -> Stopped {
        let pid = rustix::process::Pid::from_raw(pid).expect("a postmaster's pid");
        rustix::process::kill_process(pid, rustix::process::Signal::STOP).unwrap();
        Stopped(pid)
    }
}

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = rustix::process::kill_process(self.0, rustix::process::Signal::CONT);
    }
}

#[test]
fn a_statement_to_a_stopped_server_ends_with_an_error() {
    let cluster = ClusterBuilder::new().start().unwrap();
    let limit = std::time::Duration::from_secs(3);
    let err = {
        // A stopped postmaster takes the connection into its socket's queue and never
        // answers it: psql would wait for ever.
        let _stopped = Stopped::new(cluster.pid());
        cluster
            .psql_within("postgres", "SELECT 1", limit)
            .unwrap_err()
            .to_string()
    };
    assert!(err.starts_with("psql \"SELECT 1\" failed"), "{err}");
    assert!(err.contains("no answer within 3s"), "{err}");
    // Running again, the server answers: only its stop held psql.
    assert_eq!(cluster.psql("postgres", "SELECT 6*7").unwrap().trim(), "42");
}

#[test]
fn root_privilege_drop() {
    if !pgsurge_testkit::is_root() {
        pgsurge_testkit::missing_prerequisite("root, to test dropping privileges to postgres");
        return;
    }
    let cluster = ClusterBuilder::new().start().unwrap();
    let uid = uid_of(cluster.pid());
    assert_ne!(uid, 0, "postmaster runs as root");
    let run_as = cluster.run_as().expect("root run resolves a run-as user");
    assert_eq!(uid, run_as.uid);
    assert_eq!(run_as.name, "postgres");
    for child in children_of(cluster.pid()) {
        assert_eq!(uid_of(child), run_as.uid);
    }
    use std::os::unix::fs::MetadataExt;
    assert_eq!(
        std::fs::metadata(cluster.data_dir()).unwrap().uid(),
        run_as.uid
    );
    // A data directory the server user cannot reach is refused before initdb runs.
    let private = pgsurge_testkit::scratch_dir("lifecycle");
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(private.path(), std::fs::Permissions::from_mode(0o700)).unwrap();
    let err = ClusterBuilder::new()
        .data_dir(private.path().join("d"))
        .start()
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("not accessible to user `postgres`"),
        "{err}"
    );
    // A user that does not exist is refused with a clear message.
    let err = ClusterBuilder::new()
        .run_as("no_such_user_pgsurge")
        .start()
        .unwrap_err();
    assert!(err.to_string().contains("no_such_user_pgsurge"), "{err}");
}

#[test]
fn two_servers_side_by_side() {
    let a = std::thread::spawn(|| ClusterBuilder::new().start().unwrap());
    let b = ClusterBuilder::new().start().unwrap();
    let a = a.join().unwrap();
    assert_ne!(a.port(), b.port());
    assert_ne!(a.socket_dir(), b.socket_dir());
    let bin = a.binaries().bin_dir().to_path_buf();
    psql(
        &bin,
        &a.conninfo("postgres"),
        "create table only_in_a(x int)",
    );
    assert_eq!(
        psql(
            &bin,
            &a.conninfo("postgres"),
            "select count(*) from pg_class where relname = 'only_in_a'"
        ),
        "1"
    );
    assert_eq!(
        psql(
            &bin,
            &b.conninfo("postgres"),
            "select count(*) from pg_class where relname = 'only_in_a'"
        ),
        "0"
    );
    let port_a = psql(&bin, &a.tcp_conninfo("postgres"), "show port");
    assert_eq!(port_a, a.port().to_string());
}

#[test]
fn settings_applied() {
    let c = ClusterBuilder::new()
        .setting("work_mem", "12MB")
        .setting("shared_buffers", "48MB")
        .setting("cluster_name", "it's quoted")
        .data_checksums(true)
        .start()
        .unwrap();
    let bin = c.binaries().bin_dir().to_path_buf();
    let ci = c.conninfo("postgres");
    assert_eq!(psql(&bin, &ci, "show work_mem"), "12MB");
    assert_eq!(psql(&bin, &ci, "show shared_buffers"), "48MB");
    assert_eq!(psql(&bin, &ci, "show cluster_name"), "it's quoted");
    assert_eq!(psql(&bin, &ci, "show data_checksums"), "on");
    assert_eq!(
        psql(
            &bin,
            &ci,
            "select source from pg_settings where name = 'work_mem'"
        ),
        "configuration file"
    );

    let c2 = ClusterBuilder::new()
        .settings_target(SettingsTarget::CommandLine)
        .setting("work_mem", "3MB")
        .start()
        .unwrap();
    let ci2 = c2.conninfo("postgres");
    assert_eq!(psql(&bin, &ci2, "show work_mem"), "3MB");
    assert_eq!(
        psql(
            &bin,
            &ci2,
            "select source from pg_settings where name = 'work_mem'"
        ),
        "command line"
    );
    assert_eq!(psql(&bin, &ci2, "show data_checksums"), "off");

    // A bad setting fails with the server's own message, not a hang.
    let err = ClusterBuilder::new()
        .setting("work_mem", "lots")
        .start()
        .unwrap_err();
    assert!(err.to_string().contains("work_mem"), "{err}");
}

#[test]
fn statements_are_preloaded_and_in_every_database_unless_the_settings_choose() {
    let c = ClusterBuilder::new()
        .statements(true)
        .database("bench")
        .start()
        .unwrap();
    let bin = c.binaries().bin_dir().to_path_buf();
    if !c.binaries().has_extension("pg_stat_statements") {
        pgsurge_testkit::missing_prerequisite("pg_stat_statements is not installed");
        return;
    }
    let ci = c.conninfo("bench");
    assert_eq!(
        psql(&bin, &ci, "show shared_preload_libraries"),
        "pg_stat_statements"
    );
    // The view answers (it would fail without the library loaded) and counts.
    psql(&bin, &ci, "select 6*7");
    let calls = psql(
        &bin,
        &ci,
        "select count(*) > 0 from pg_stat_statements where query like 'select $1%'",
    );
    assert_eq!(calls, "t");
    // A database created later has it too (from template1).
    psql(&bin, &c.conninfo("postgres"), "create database later");
    assert_eq!(
        psql(
            &bin,
            &c.conninfo("later"),
            "select count(*) from pg_extension where extname = 'pg_stat_statements'"
        ),
        "1"
    );
    // Settings that choose the preloaded libraries are kept: none here.
    let off = ClusterBuilder::new()
        .statements(true)
        .setting("shared_preload_libraries", "")
        .database("bench")
        .start()
        .unwrap();
    let ci = off.conninfo("bench");
    assert_eq!(psql(&bin, &ci, "show shared_preload_libraries"), "");
    assert_eq!(
        psql(
            &bin,
            &ci,
            "select count(*) from pg_extension where extname = 'pg_stat_statements'"
        ),
        "0"
    );
}
