//! Failures under load on a real primary with a streaming standby: `bench --reconnect`
//! carries on through a failover (its lost transactions counted by class, the run
//! completing on the promoted standby).

use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pgsurge_server::{ClusterBuilder, Topology};

/// A primary and one standby with the test settings; commits wait for the standby when
/// `sync` (which needs `synchronous_commit` on).
fn topology(sync: bool) -> Topology {
    let builder = ClusterBuilder::new()
        .settings(pgsurge_server::testing::TEST_SETTINGS.iter().copied())
        .setting("synchronous_commit", "on")
        .setting("log_timezone", "UTC")
        .database("bench");
    Topology::start(builder, 1, sync).expect("a primary and a standby")
}

fn pgsurge(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args(args)
        .env_remove("PGTARGETSESSIONATTRS")
        .output()
        .expect("run pgsurge")
}

fn text(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// Rows of `pgbench_history` on a server.
fn history(c: &pgsurge_server::Cluster) -> i64 {
    c.psql("bench", "SELECT count(*) FROM pgbench_history")
        .expect("count history")
        .trim()
        .parse()
        .expect("a count")
}

/// Waits (generously) until the run has committed on the primary.
fn wait_for_commits(c: &pgsurge_server::Cluster) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while history(c) < 200 {
        assert!(Instant::now() < deadline, "no commits on the primary");
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn bench_reconnect_carries_on_through_a_failover() {
    let topo = topology(true);
    let conninfo = topo.conninfo("bench");
    let init = pgsurge(&["bench", "-i", "-s", "1", "-q", &conninfo]);
    assert!(init.status.success(), "{}", text(&init));
    let dir = pgsurge_testkit::scratch_dir("failover-reconnect");
    let json = dir.path().join("run.json");
    let json_arg = format!("--json={}", json.display());
    let run = {
        let conninfo = conninfo.clone();
        std::thread::spawn(move || {
            pgsurge(&[
                "bench",
                "--reconnect",
                "-c",
                "4",
                "-j",
                "2",
                "-T",
                "15",
                "-P",
                "1",
                &json_arg,
                &conninfo,
            ])
        })
    };
    let (primary, standby) = (topo.primary(), &topo.replicas()[0]);
    wait_for_commits(primary);
    assert!(primary.stop_immediate(Duration::from_secs(30)));
    let promote_called_us = unix_us();
    standby.promote().expect("promote the standby");
    let at_promotion = history(standby);
    let out = run.join().expect("the bench thread");
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("number of connection-lost failures: "),
        "{stdout}"
    );
    // The clients went on against the promoted standby.
    assert!(
        history(standby) > at_promotion,
        "no commit after the failover\n{}",
        text(&out)
    );
    let r: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(r["options"]["reconnect"], true);
    let t = &r["totals"];
    let n = |k: &str| t[k].as_u64().unwrap_or(0);
    assert_eq!(
        n("failures"),
        n("connection_lost_failures") + n("read_only_failures") + n("cancelled_failures"),
        "{t}"
    );
    assert!(!r["aborted"].as_bool().unwrap(), "no client aborted: {r}");
    // Nothing commits between the primary's end and the promotion: the outage window
    // straddles the moment the promotion was asked for (to its 10 ms buckets).
    assert!(
        stdout.contains("longest stretch without a commit = "),
        "{stdout}"
    );
    let o = &r["failure_cost"]["outage"];
    let before = o["last_commit_before_unix_us"]
        .as_i64()
        .expect("outage window");
    let after = o["first_commit_after_unix_us"].as_i64().unwrap();
    assert!(before <= promote_called_us, "{o}");
    assert!(after + 10_000 >= promote_called_us, "{o}");
    assert!(o["seconds"].as_f64().unwrap() > 0.0, "{o}");
}

fn unix_us() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_micros() as i64
}

#[test]
fn a_campaign_promotes_a_sync_replica_mid_run_and_stores_what_it_cost() {
    let dir = pgsurge_testkit::scratch_dir("failover-campaign");
    let file = dir.path().join("failover.toml");
    std::fs::write(
        &file,
        r#"
[campaign]
name = "failover"
[[target]]
name = "pg"
replicas = 1
replication = "sync"
settings = { fsync = false, synchronous_commit = "on", max_connections = 50, shared_buffers = "64MB" }
[matrix]
scales = [1]
clients = [4]
[run]
duration = 15
[[fault]]
at = "5s"
action = "stop"
[[fault]]
at = "5s"
action = "promote"
"#,
    )
    .unwrap();
    let store = dir.path().join("r.db").display().to_string();
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args(["campaign", "run", file.to_str().unwrap(), "--store", &store])
        .env_remove("PGSURGE_STORE")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", text(&out));
    let export = pgsurge(&["results", "export", "--format", "json", "--store", &store]);
    let doc: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
    let run = &doc["runs"][0];
    assert_eq!(run["status"], "ok", "{run}");
    let cost = &run["result_json"]["failure_cost"];
    let faults = cost["faults"].as_array().expect("the faults applied");
    assert_eq!(faults.len(), 2, "{cost}");
    assert!(faults.iter().all(|f| f["error"].is_null()), "{cost}");
    let stopped = faults[0]["done_unix_us"].as_i64().unwrap();
    // No commit between the primary's end and the promotion: the outage covers it.
    let o = &cost["outage"];
    let after = o["first_commit_after_unix_us"].as_i64().expect("an outage");
    assert!(after + 10_000 >= stopped, "{cost}");
    assert!(run["transactions"].as_i64().unwrap() > 0);
    // The standby's lag was sampled while the primary answered.
    assert!(!cost["lag"].as_array().unwrap().is_empty(), "{cost}");
}
