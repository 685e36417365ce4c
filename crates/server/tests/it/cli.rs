//! `pgsurge server start|status|stop` through the crate's entry point.

use crate::common;

use std::ffi::OsString;

use crate::common::wait_gone;

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

/// Stops every server recorded in a state directory when a test ends, even by panic:
/// detached servers have no watchdog.
struct StopAll(String);

impl Drop for StopAll {
    fn drop(&mut self) {
        run(&["stop", "--state-dir", &self.0, "--all"]);
    }
}

#[test]
fn server_start_status_stop_with_data_dir() {
    let state = pgsurge_testkit::scratch_dir("cli");
    let work = common::reachable_tempdir();
    let sd = state.path().to_str().unwrap();
    let _guard = StopAll(sd.to_string());
    let data = work.path().join("data");
    let data_s = data.to_str().unwrap();

    let (code, out, err) = run(&[
        "start",
        "--state-dir",
        sd,
        "--data",
        data_s,
        "--set",
        "work_mem=7MB",
    ]);
    assert_eq!(code, 0, "{err}");
    let conninfo = out.trim().to_string();
    assert!(conninfo.contains("dbname=pgsurge"), "{conninfo}");
    assert_eq!(psql(&conninfo, "show work_mem"), "7MB");
    let pid: i32 = psql(
        &conninfo,
        "select pg_postmaster_start_time() is not null and true",
    )
    .eq("t")
    .then(|| pgsurge_server::PidFile::read(&data).unwrap().pid)
    .unwrap();

    let (code, out, _) = run(&["status", "--state-dir", sd]);
    assert_eq!(code, 0);
    assert!(out.starts_with("running"), "{out}");
    assert!(out.contains(&format!("pid {pid}")), "{out}");

    // Starting again on the same data directory is refused while it runs.
    let (code, _, err) = run(&["start", "--state-dir", sd, "--data", data_s]);
    assert_eq!(code, 1);
    assert!(err.contains("already running"), "{err}");

    let (code, out, err) = run(&["stop", "--state-dir", sd, "--data", data_s]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("stopped"), "{out}");
    assert!(wait_gone(pid, 5));
    assert!(data.join("PG_VERSION").exists(), "--data directory is kept");

    let (code, _, _) = run(&["status", "--state-dir", sd]);
    assert_eq!(code, 3);

    // Restart on the kept directory: data survives.
    let (code, out, err) = run(&["start", "--state-dir", sd, "--data", data_s]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(
        psql(out.trim(), "select current_setting('work_mem')"),
        "7MB"
    );
    let (code, _, err) = run(&["stop", "--state-dir", sd]);
    assert_eq!(code, 0, "{err}");
}

#[test]
fn server_start_temporary_is_removed_at_stop() {
    let state = pgsurge_testkit::scratch_dir("cli");
    let sd = state.path().to_str().unwrap();
    let _guard = StopAll(sd.to_string());
    let (code, out, err) = run(&["start", "--state-dir", sd, "--database", "b1"]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(psql(out.trim(), "select current_database()"), "b1");
    let records = std::fs::read_dir(state.path()).unwrap().count();
    assert_eq!(records, 1);
    let rec: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::fs::read_dir(state.path())
                .unwrap()
                .next()
                .unwrap()
                .unwrap()
                .path(),
        )
        .unwrap(),
    )
    .unwrap();
    let data = std::path::PathBuf::from(rec["data_dir"].as_str().unwrap());
    assert!(data.exists());
    let (code, _, err) = run(&["stop", "--state-dir", sd]);
    assert_eq!(code, 0, "{err}");
    assert!(!data.exists(), "temporary data directory removed at stop");
}

/// `--port 0` asks for any free port (postgres itself refuses port 0).
#[test]
fn server_start_port_zero_picks_a_free_port() {
    let state = pgsurge_testkit::scratch_dir("cli");
    let sd = state.path().to_str().unwrap();
    let _guard = StopAll(sd.to_string());
    let (code, out, err) = run(&["start", "--state-dir", sd, "--port", "0"]);
    assert_eq!(code, 0, "{err}");
    let conninfo = out.trim().to_string();
    let port: u16 = conninfo
        .split_whitespace()
        .find_map(|kv| kv.strip_prefix("port="))
        .and_then(|p| p.parse().ok())
        .expect("port in the conninfo");
    assert_ne!(port, 0, "{conninfo}");
    assert_eq!(psql(&conninfo, "show port"), port.to_string());
    let (code, _, err) = run(&["stop", "--state-dir", sd]);
    assert_eq!(code, 0, "{err}");
}

/// `--set listen_addresses=…` says where the server listens (loopback only without it):
/// here 127.0.0.2 only, so a TCP connection to 127.0.0.1 on its port is refused.
#[test]
fn server_start_listens_where_listen_addresses_says() {
    let state = pgsurge_testkit::scratch_dir("cli");
    let sd = state.path().to_str().unwrap();
    let _guard = StopAll(sd.to_string());
    let (code, out, err) = run(&[
        "start",
        "--state-dir",
        sd,
        "--set",
        "listen_addresses=127.0.0.2",
    ]);
    assert_eq!(code, 0, "{err}");
    let conninfo = out.trim().to_string();
    assert_eq!(psql(&conninfo, "show listen_addresses"), "127.0.0.2");
    let port = psql(&conninfo, "show port");
    let over_tcp: Vec<&str> = conninfo
        .split_whitespace()
        .map(|kv| {
            if kv.starts_with("host=") {
                "host=127.0.0.2"
            } else {
                kv
            }
        })
        .collect();
    assert_eq!(psql(&over_tcp.join(" "), "select 1"), "1");
    let to = |host: &str| {
        format!("{host}:{port}")
            .parse::<std::net::SocketAddr>()
            .unwrap()
    };
    let refused =
        std::net::TcpStream::connect_timeout(&to("127.0.0.1"), std::time::Duration::from_secs(5));
    assert!(refused.is_err(), "127.0.0.1:{port} accepted a connection");
    let (code, _, err) = run(&["stop", "--state-dir", sd]);
    assert_eq!(code, 0, "{err}");
}

/// A started server counts statements as campaign targets do: pg_stat_statements is
/// preloaded and its view exists in the database the connection string names.
#[test]
fn server_start_loads_pg_stat_statements_in_its_database() {
    let bin = pgsurge_server::PgBinaries::discover().unwrap();
    if !bin.has_extension("pg_stat_statements") {
        pgsurge_testkit::missing_prerequisite("pg_stat_statements is not installed");
        return;
    }
    let state = pgsurge_testkit::scratch_dir("cli");
    let sd = state.path().to_str().unwrap();
    let _guard = StopAll(sd.to_string());
    let (code, out, err) = run(&["start", "--state-dir", sd, "--database", "b2"]);
    assert_eq!(code, 0, "{err}");
    let conninfo = out.trim().to_string();
    assert_eq!(
        psql(&conninfo, "show shared_preload_libraries"),
        "pg_stat_statements"
    );
    assert_eq!(
        psql(
            &conninfo,
            "select count(*) from pg_extension where extname = 'pg_stat_statements'"
        ),
        "1"
    );
    psql(&conninfo, "select 6*7");
    assert_eq!(
        psql(
            &conninfo,
            "select count(*) > 0 from pg_stat_statements where query like 'select $1%'"
        ),
        "t"
    );
    let (code, _, err) = run(&["stop", "--state-dir", sd]);
    assert_eq!(code, 0, "{err}");

    // Settings that choose the preloaded libraries win: here none.
    let (code, out, err) = run(&[
        "start",
        "--state-dir",
        sd,
        "--set",
        "shared_preload_libraries=",
    ]);
    assert_eq!(code, 0, "{err}");
    assert_eq!(psql(out.trim(), "show shared_preload_libraries"), "");
    let (code, _, err) = run(&["stop", "--state-dir", sd]);
    assert_eq!(code, 0, "{err}");
}

/// Polls `sql` until it prints something non-empty, for up to two minutes.
fn poll_until_some(conninfo: &str, sql: &str) -> Option<String> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    while std::time::Instant::now() < deadline {
        let v = psql(conninfo, sql);
        if !v.is_empty() {
            return Some(v);
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    None
}

#[test]
fn server_start_with_a_synchronous_standby_named_but_absent() {
    let state = pgsurge_testkit::scratch_dir("cli");
    let sd = state.path().to_str().unwrap();
    let _guard = StopAll(sd.to_string());
    // The start's own setup (its database, pg_stat_statements) must not wait for a
    // standby that attaches later; the caller would hang until killed.
    let (tx, rx) = std::sync::mpsc::channel();
    let sd_owned = sd.to_string();
    std::thread::spawn(move || {
        let r = run(&[
            "start",
            "--state-dir",
            &sd_owned,
            "--set",
            "synchronous_standby_names=x",
        ]);
        let _ = tx.send(r);
    });
    let (code, out, err) = rx
        .recv_timeout(std::time::Duration::from_secs(300))
        .expect("server start still waiting after 300 s");
    assert_eq!(code, 0, "{err}");
    let conninfo = out.trim().to_string();
    assert_eq!(psql(&conninfo, "show synchronous_standby_names"), "x");

    // Another session's commit does wait for the absent standby.
    let bin = pgsurge_server::PgBinaries::discover().unwrap();
    let mut writer = std::process::Command::new(bin.bin_dir().join("psql"))
        .args(["-X", "-At", "-d", &conninfo, "-c", "create table t ()"])
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let waiting = poll_until_some(
        &conninfo,
        "select pid from pg_stat_activity where wait_event = 'SyncRep'",
    );
    let Some(pid) = waiting else {
        let _ = writer.kill();
        panic!("no commit waited for the synchronous standby within 120 s");
    };
    psql(&conninfo, &format!("select pg_cancel_backend({pid})"));
    let done = writer.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&done.stderr);
    assert!(
        stderr.contains("synchronous replication"),
        "the writer was not waiting for a standby:\n{stderr}"
    );

    let (code, out, err) = run(&["stop", "--state-dir", sd]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("stopped"), "{out}");
}

#[test]
fn server_start_on_a_standby_data_directory_starts_it_read_only() {
    let state = pgsurge_testkit::scratch_dir("cli");
    let work = common::reachable_tempdir();
    let sd = state.path().to_str().unwrap();
    let _guard = StopAll(sd.to_string());
    let primary = pgsurge_server::ClusterBuilder::new()
        .database("pgsurge")
        .start()
        .unwrap();
    primary
        .psql(
            "pgsurge",
            "create table seen (x int); insert into seen values (42)",
        )
        .unwrap();
    // A standby's data directory as `pg_basebackup -R` leaves it: standby.signal and
    // primary_conninfo.
    let data = work.path().join("standby");
    let standby = pgsurge_server::ClusterBuilder::new()
        .standby_of(&primary, "s1")
        .data_dir(&data)
        .start()
        .unwrap();
    standby.stop();
    drop(standby);
    assert!(data.join("standby.signal").exists());

    let (tx, rx) = std::sync::mpsc::channel();
    let (sd_owned, data_s) = (sd.to_string(), data.to_str().unwrap().to_string());
    std::thread::spawn(move || {
        let _ = tx.send(run(&["start", "--state-dir", &sd_owned, "--data", &data_s]));
    });
    let (code, out, err) = rx
        .recv_timeout(std::time::Duration::from_secs(300))
        .expect("server start on a standby still waiting after 300 s");
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("standby"), "{err}");
    let conninfo = out.trim().to_string();
    assert_eq!(psql(&conninfo, "select pg_is_in_recovery()"), "t");
    assert_eq!(psql(&conninfo, "select x from seen"), "42");
    // It streams from its primary: a row written there arrives.
    primary
        .psql("pgsurge", "insert into seen values (43)")
        .unwrap();
    assert!(
        poll_until_some(&conninfo, "select x from seen where x = 43").is_some(),
        "the standby did not replay its primary's write within 120 s"
    );

    let (code, out, err) = run(&["stop", "--state-dir", sd]);
    assert_eq!(code, 0, "{err}");
    assert!(out.contains("stopped"), "{out}");
    assert!(data.join("standby.signal").exists(), "the data is kept");

    // A database its primary does not have: the connection string names one the standby
    // has, and says so.
    let data_s = data.to_str().unwrap();
    let (code, out, err) = run(&[
        "start",
        "--state-dir",
        sd,
        "--data",
        data_s,
        "--database",
        "nosuch",
    ]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("no database \"nosuch\""), "{err}");
    let conninfo = out.trim().to_string();
    assert!(!conninfo.contains("nosuch"), "{conninfo}");
    assert_eq!(psql(&conninfo, "select current_database()"), "postgres");
    let (code, _, err) = run(&["stop", "--state-dir", sd]);
    assert_eq!(code, 0, "{err}");

    // A standby cannot be the primary of a topology: refused before anything starts.
    let (code, _, err) = run(&[
        "start",
        "--state-dir",
        sd,
        "--data",
        data_s,
        "--replicas",
        "1",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("standby.signal"), "{err}");
    assert!(
        pgsurge_server::PidFile::read(&data).is_none(),
        "nothing started"
    );

    // With hot_standby off it would run without ever taking a connection: an error
    // that says so, and nothing left running.
    let (code, _, err) = run(&[
        "start",
        "--state-dir",
        sd,
        "--data",
        data_s,
        "--set",
        "hot_standby=off",
    ]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("hot_standby"), "{err}");
    assert!(
        pgsurge_server::PidFile::read(&data).is_none(),
        "the refused standby still runs"
    );
}
