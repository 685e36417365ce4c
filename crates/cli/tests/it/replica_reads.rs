//! Reads on a standby (`bench --replica-file`) against a real primary and standby: a
//! client writes on the primary and reads its own latest write on the standby; with
//! the standby's replay paused its reads are stale and counted, with commits waiting
//! for the standby to apply them (`synchronous_commit = remote_apply`) none is; the
//! standbys' lag is recorded beside the reads; without the option nothing is added.

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pgsurge_server::{ClusterBuilder, Topology};

fn pgsurge(args: &[&str], pgoptions: Option<&str>) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    cmd.args(args).env_remove("PGTARGETSESSIONATTRS");
    match pgoptions {
        Some(o) => cmd.env("PGOPTIONS", o),
        None => cmd.env_remove("PGOPTIONS"),
    };
    cmd.output().expect("run pgsurge")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Each client's writes: `w` counts them, and row (client, w) marks the latest.
const WRITE: &str = "\\set w :w + 1\nINSERT INTO marks (client_id, w) VALUES (:client_id, :w);\n";
/// A read that must see the client's latest write: no row when the standby lacks it.
const READ: &str = "SELECT 1 FROM marks WHERE client_id = :client_id AND w = :w;\n";

/// Runs the writes on the primary and the reads on the standby (one card each per
/// deck: every deck after the first holds a read that follows a write), 3 s; the
/// result document.
fn run(
    topo: &Topology,
    dir: &std::path::Path,
    name: &str,
    pgoptions: Option<&str>,
) -> serde_json::Value {
    let json = dir.join(format!("{name}.json"));
    let (write, read) = (dir.join("write.sql"), dir.join("read.sql"));
    let out = pgsurge(
        &[
            "bench",
            "-n",
            "-c",
            "2",
            "-T",
            "3",
            "--mix=deck",
            "-D",
            "w=0",
            "-f",
            write.to_str().unwrap(),
            &format!("--replica-file={}", read.display()),
            &format!("--json={}", json.display()),
            &topo.conninfo("bench"),
        ],
        pgoptions,
    );
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("transactions run on a standby = ") && stdout.contains("stale reads = "),
        "{}",
        text(&out)
    );
    serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap()
}

fn count(v: &serde_json::Value) -> u64 {
    v.as_u64().expect("a count")
}

#[test]
fn reads_on_a_paused_standby_are_stale_and_counted_and_none_are_once_commits_wait_for_replay() {
    let builder = ClusterBuilder::new()
        .settings(pgsurge_server::testing::TEST_SETTINGS.iter().copied())
        .setting("synchronous_commit", "on")
        .database("bench");
    let topo = Topology::start(builder, 1, true).expect("a primary and a synchronous standby");
    let (primary, standby) = (topo.primary(), &topo.replicas()[0]);
    let dir = pgsurge_testkit::scratch_dir("replica-reads");
    std::fs::write(dir.path().join("write.sql"), WRITE).unwrap();
    std::fs::write(dir.path().join("read.sql"), READ).unwrap();
    // Every client's "no write yet" row (w = 0), on the standby before its replay stops.
    primary
        .psql(
            "bench",
            "CREATE TABLE marks (client_id int, w int); \
             INSERT INTO marks SELECT c, 0 FROM generate_series(0, 1) c",
        )
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while standby
        .psql("bench", "SELECT count(*) FROM marks")
        .map(|s| s.trim() != "2")
        .unwrap_or(true)
    {
        assert!(Instant::now() < deadline, "the standby never saw the table");
        std::thread::sleep(Duration::from_millis(100));
    }

    // Commits wait for the standby's flush only: with its replay paused, a client's
    // own writes are not visible there.
    standby.pause_replay(true).unwrap();
    let paused = run(&topo, dir.path(), "paused", None);
    let reads = &paused["replica_reads"];
    assert!(count(&reads["reads"]) > 0, "{reads}");
    assert!(
        count(&reads["stale"]) > 0,
        "no stale read on a paused standby: {reads}"
    );
    let per_second = reads["per_second"].as_array().expect("reads per second");
    let sum = |k: &str| per_second.iter().map(|s| count(&s[k])).sum::<u64>();
    assert_eq!(
        (sum("reads"), sum("stale")),
        (count(&reads["reads"]), count(&reads["stale"]))
    );
    // The lag beside the reads: WAL written on the primary and not replayed.
    let lag = reads["lag"].as_array().expect("the standby's lag");
    assert!(
        lag.iter()
            .any(|s| s["replica"] == "replica1" && s["bytes"].as_i64().unwrap() > 0),
        "{lag:?}"
    );
    // The writes all went to the primary, every transaction of the read script to the
    // standby.
    let txns = |i: usize| {
        paused["scripts"][i]["stats"]["transactions"]
            .as_i64()
            .unwrap()
    };
    let rows: i64 = primary
        .psql("bench", "SELECT count(*) FROM marks")
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    assert_eq!(txns(0) + 2, rows);
    assert_eq!(txns(1) as u64, count(&reads["reads"]));

    // Once a commit returns only after the standby applied it, every read sees the
    // client's latest write.
    standby.pause_replay(false).unwrap();
    let applied = run(
        &topo,
        dir.path(),
        "applied",
        Some("-c synchronous_commit=remote_apply"),
    );
    let reads = &applied["replica_reads"];
    assert!(count(&reads["reads"]) > 0, "{reads}");
    assert_eq!(count(&reads["stale"]), 0, "{reads}");

    // Without the option the result has no such figures.
    let json = dir.path().join("plain.json");
    let out = pgsurge(
        &[
            "bench",
            "-n",
            "-t",
            "5",
            "-D",
            "w=0",
            "-f",
            dir.path().join("write.sql").to_str().unwrap(),
            &format!("--json={}", json.display()),
            &topo.conninfo("bench"),
        ],
        None,
    );
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("standby"),
        "{}",
        text(&out)
    );
    let plain: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(plain.get("replica_reads").is_none(), "{plain}");
}

#[test]
fn replica_scripts_with_a_connection_per_transaction_are_refused_before_connecting() {
    let dir = pgsurge_testkit::scratch_dir("replica-reads-refused");
    let read = dir.path().join("read.sql");
    std::fs::write(&read, READ).unwrap();
    let out = pgsurge(
        &[
            "bench",
            "-C",
            &format!("--replica-file={}", read.display()),
            "host=/nonexistent dbname=x",
        ],
        None,
    );
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--replica-file cannot be used with -C"),
        "{}",
        text(&out)
    );
}
