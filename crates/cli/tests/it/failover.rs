//! Failures under load on a real primary with a streaming standby: `bench --reconnect`
//! carries on through a failover (its lost transactions counted by class, the run
//! completing on the promoted standby), its outage agrees with the servers' logs, and
//! `--check-commits` counts exactly the acknowledged commits the new primary lacks; a
//! campaign's primary restarted in place mid-run is carried through the same way, and
//! the report's test page marks the outage on its time charts.

use std::collections::BTreeSet;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pgsurge_server::{ClusterBuilder, Topology};

use crate::campaigns::Campaign;

/// A primary and one standby with the test settings; commits wait for the standby when
/// `sync` (which needs `synchronous_commit` on).
fn topology(sync: bool) -> Topology {
    let builder = ClusterBuilder::new()
        .settings(pgsurge_server::testing::TEST_SETTINGS.iter().copied())
        .setting("synchronous_commit", "on")
        .setting("log_timezone", "UTC")
        .setting("log_min_messages", "log")
        .setting("log_line_prefix", "%m ")
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
    // straddles the moment the promotion was asked for (to its 10 ms buckets), and the
    // first lost connection, whatever stalls the promoted server had later.
    assert!(
        stdout.contains("stretch without a commit at the first lost connection = "),
        "{stdout}"
    );
    let o = &r["failure_cost"]["outage"];
    assert_eq!(o["anchor"], "first_connection_lost", "{o}");
    let before = o["last_commit_before_unix_us"]
        .as_i64()
        .expect("outage window");
    let after = o["first_commit_after_unix_us"].as_i64().unwrap();
    let lost = o["connection_lost_unix_us"]
        .as_i64()
        .expect("the lost connection's time");
    assert!(before <= promote_called_us, "{o}");
    assert!(after + 10_000 >= promote_called_us, "{o}");
    // The outage holds the first lost connection, or starts among the failing
    // server's late commits (a quarter of a second at most) after it.
    assert!(lost <= after + 10_000, "the outage ends before {lost}\n{o}");
    assert!(before <= lost + 260_000, "the outage starts late\n{o}");
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
    let (_, run) = campaign_run(dir.path(), &file);
    let cost = &run["result_json"]["failure_cost"];
    let faults = cost["faults"].as_array().expect("the faults applied");
    assert_eq!(faults.len(), 2, "{cost}");
    assert!(faults.iter().all(|f| f["error"].is_null()), "{cost}");
    let stopped = faults[0]["done_unix_us"].as_i64().unwrap();
    // No commit between the primary's end and the promotion: the outage covers it,
    // and it is the stretch at the first lost connection, as `bench --reconnect` gives.
    let o = &cost["outage"];
    let before = o["last_commit_before_unix_us"].as_i64().expect("an outage");
    let after = o["first_commit_after_unix_us"].as_i64().unwrap();
    assert!(after + 10_000 >= stopped, "{cost}");
    assert_eq!(o["anchor"], "first_connection_lost", "{o}");
    let lost = o["connection_lost_unix_us"]
        .as_i64()
        .expect("the lost connection's time");
    // The outage holds the first lost connection, found through the end of the
    // standby's archive recovery as its log gives it: the failing primary's late
    // commits, however late, come before that moment, the promoted standby's after.
    assert!(lost <= after + 10_000, "the outage ends before {lost}\n{o}");
    let failover = o["failover_unix_us"]
        .as_i64()
        .unwrap_or_else(|| panic!("no failover moment from the standby's log\n{o}"));
    assert!(
        before <= failover && failover < after + 10_000,
        "the outage does not hold the failover moment\n{o}"
    );
    assert!(run["transactions"].as_i64().unwrap() > 0);
    // The standby's lag was sampled while the primary answered.
    assert!(!cost["lag"].as_array().unwrap().is_empty(), "{cost}");
}

#[test]
fn a_campaign_restarts_its_primary_mid_run_its_clients_carry_on_and_its_report_marks_the_outage() {
    let dir = pgsurge_testkit::scratch_dir("failover-restart");
    let file = dir.path().join("restart.toml");
    std::fs::write(
        &file,
        r#"
[campaign]
name = "restart"
[[target]]
name = "pg"
settings = { fsync = false, max_connections = 50, shared_buffers = "64MB" }
[matrix]
scales = [1]
clients = [4]
[run]
duration = 12
[[fault]]
at = "4s"
action = "restart"
"#,
    )
    .unwrap();
    let (store, run) = campaign_run(dir.path(), &file);
    let cost = &run["result_json"]["failure_cost"];
    let faults = cost["faults"].as_array().expect("the faults applied");
    assert_eq!(faults.len(), 1, "{cost}");
    assert_eq!(faults[0]["action"], "restart", "{cost}");
    assert!(faults[0]["error"].is_null(), "{cost}");
    // The restart returned once the server accepted connections again: nothing
    // committed while it was down, and the clients committed again after it.
    let restarted = faults[0]["done_unix_us"].as_i64().unwrap();
    let o = &cost["outage"];
    let before = o["last_commit_before_unix_us"].as_i64().expect("an outage");
    let after = o["first_commit_after_unix_us"].as_i64().unwrap();
    assert!(before <= restarted && before < after, "{cost}");
    let seconds = o["seconds"].as_f64().unwrap();
    assert!(seconds > 0.0, "{cost}");
    assert_eq!(o["anchor"], "first_connection_lost", "{o}");
    // Found through the moment the primary's log says it was ready again.
    let ready = o["failover_unix_us"]
        .as_i64()
        .unwrap_or_else(|| panic!("no ready moment from the primary's log\n{o}"));
    assert!(
        before <= ready && ready < after + 10_000,
        "the outage does not hold the ready moment\n{o}"
    );
    assert!(run["transactions"].as_i64().unwrap() > 0);
    outage_marked_on_the_test_page(dir.path(), &store, seconds);
}

/// The report's test page in headless Chromium: every time chart marks the outage with
/// a visible red range inside its plot and names it in its legend, and the summary
/// gives its length as stored and the failover's moment it was found through.
fn outage_marked_on_the_test_page(dir: &std::path::Path, store: &str, seconds: f64) {
    let out = dir.join("report");
    let report = pgsurge(&["report", "--store", store, "-o", out.to_str().unwrap()]);
    assert!(report.status.success(), "{}", text(&report));
    let page = std::fs::read_to_string(out.join("run-1.html")).unwrap();
    let length = format!("{seconds:.3} s, from ");
    assert!(page.contains(&length), "no outage row saying {length:?}");
    let which = "the stretch at the first lost connection (";
    assert!(page.contains(which), "no outage row saying {which:?}");
    let through = "through the failover at ";
    assert!(page.contains(through), "no outage row saying {through:?}");
    let probe = r#"<script>
      window.addEventListener('load', () => {
        const rows = [];
        for (const chart of document.querySelectorAll('.chart')) {
          const svg = chart.querySelector('svg');
          const rect = [...chart.querySelectorAll('rect')]
            .find(r => (r.getAttribute('fill') || '').toUpperCase() === '#FAC8C8');
          const legend = [...chart.querySelectorAll('.legend li')]
            .some(li => li.textContent.startsWith('outage: no commit for'));
          if (!rect && !legend) continue;
          const s = svg.getBoundingClientRect();
          const r = rect ? rect.getBoundingClientRect() : {left: -1, right: -1, width: 0};
          rows.push([legend ? 1 : 0, r.width, r.left - s.left, s.right - r.right]
            .map(v => v.toFixed(1)).join(','));
        }
        document.body.setAttribute('data-outages', rows.join(' '));
      });
    </script></body>"#;
    let probe_page = out.join("run-1.probe.html");
    std::fs::write(&probe_page, page.replace("</body>", probe)).unwrap();
    let dom = pgsurge_testkit::chromium::open_file(
        &[
            "--dump-dom",
            "--virtual-time-budget=5000",
            "--window-size=1600,1200",
        ],
        &probe_page,
    )
    .stdout;
    let found = regex::Regex::new(r#"data-outages="([-\d.,  ]*)""#)
        .unwrap()
        .captures(&dom)
        .unwrap_or_else(|| panic!("no probe in the DOM: {}", &dom[..dom.len().min(2000)]))[1]
        .to_string();
    let charts: Vec<Vec<f64>> = found
        .split_whitespace()
        .map(|c| c.split(',').map(|v| v.parse().unwrap()).collect())
        .collect();
    assert!(
        charts.len() >= 2,
        "the outage on the time charts: {found:?}"
    );
    for c in &charts {
        let [legend, width, left, right] = c[..] else {
            panic!("{found:?}")
        };
        assert_eq!(legend, 1.0, "a marked range without its legend: {found:?}");
        assert!(width >= 2.0 && left > 0.0 && right > 0.0, "{found:?}");
    }
}

/// pgbench's tpcb-like transaction that also writes an identifiable row: the client and
/// its transaction's number.
const ACKED_SCRIPT: &str = "\\set aid random(1, 100000 * :scale)
\\set bid random(1, 1 * :scale)
\\set tid random(1, 10 * :scale)
\\set delta random(-5000, 5000)
BEGIN;
UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;
SELECT abalance FROM pgbench_accounts WHERE aid = :aid;
UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;
UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;
INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);
INSERT INTO acks (client_id, txn_seq) VALUES (:client_id, :txn_seq);
END;
";

#[test]
fn a_campaign_checks_its_acknowledged_commits_after_a_sync_failover_and_finds_none_lost() {
    let dir = pgsurge_testkit::scratch_dir("failover-check-commits");
    std::fs::write(dir.path().join("acked.sql"), ACKED_SCRIPT).unwrap();
    let file = dir.path().join("check.toml");
    std::fs::write(
        &file,
        r#"
[campaign]
name = "check-commits"
[[target]]
name = "pg"
replicas = 1
replication = "sync"
settings = { fsync = false, synchronous_commit = "on", max_connections = 50, shared_buffers = "64MB" }
[matrix]
scales = [1]
clients = [4]
scripts = [{ file = "acked.sql" }]
[run]
duration = 12
check_commits = "acks"
[hooks]
before_test = "psql -X -q -v ON_ERROR_STOP=1 -c 'CREATE TABLE IF NOT EXISTS acks (client_id int, txn_seq bigint)'"
[[fault]]
at = "4s"
action = "stop"
[[fault]]
at = "4s"
action = "promote"
"#,
    )
    .unwrap();
    let (store, run) = campaign_run(dir.path(), &file);
    let cost = &run["result_json"]["failure_cost"];
    assert!(
        cost["faults"]
            .as_array()
            .unwrap()
            .iter()
            .all(|f| f["error"].is_null()),
        "{cost}"
    );
    // Every commit acknowledged before the failover and after it, looked for on the
    // promoted standby: synchronous replication loses none.
    let checked = cost["acknowledged_checked"].as_u64().expect("checked");
    assert!(checked > 0, "{cost}");
    assert_eq!(cost["acknowledged_lost"], 0, "{cost}");
    let out_dir = dir.path().join("report");
    let report = pgsurge(&["report", "--store", &store, "-o", out_dir.to_str().unwrap()]);
    assert!(report.status.success(), "{}", text(&report));
    let page = std::fs::read_to_string(out_dir.join("run-1.html")).unwrap();
    assert!(
        page.contains(&format!("0 of {checked} checked")),
        "no acknowledged commits row"
    );
}

/// Initializes the primary, creates the table of identifiable rows and starts a 15 s
/// `--reconnect --check-commits` run with a transaction log in `dir`; returns the
/// run's thread and when the run was started.
fn start_acked_run(
    topo: &Topology,
    dir: &std::path::Path,
) -> (std::thread::JoinHandle<Output>, Instant) {
    let conninfo = topo.conninfo("bench");
    let init = pgsurge(&["bench", "-i", "-s", "1", "-q", &conninfo]);
    assert!(init.status.success(), "{}", text(&init));
    topo.primary()
        .psql("bench", "CREATE TABLE acks (client_id int, txn_seq bigint)")
        .unwrap();
    std::fs::write(dir.join("acked.sql"), ACKED_SCRIPT).unwrap();
    let dir = dir.to_path_buf();
    let started = Instant::now();
    let run = std::thread::spawn(move || {
        Command::new(env!("CARGO_BIN_EXE_pgsurge"))
            .args([
                "bench",
                "--reconnect",
                "--check-commits=acks",
                "-n",
                "-f",
                "acked.sql",
                "-c",
                "4",
                "-j",
                "2",
                "-T",
                "15",
                "-l",
                "--json=run.json",
                &conninfo,
            ])
            .current_dir(&dir)
            .env_remove("PGTARGETSESSIONATTRS")
            .output()
            .expect("run pgsurge")
    });
    (run, started)
}

/// Rows of `acks` on a server.
fn acks(c: &pgsurge_server::Cluster) -> i64 {
    c.psql("bench", "SELECT count(*) FROM acks")
        .expect("count acks")
        .trim()
        .parse()
        .expect("a count")
}

/// Waits (generously) until `acks` holds at least `n` rows on `c`.
fn wait_for_acks(c: &pgsurge_server::Cluster, n: i64) {
    let deadline = Instant::now() + Duration::from_secs(120);
    while acks(c) < n {
        assert!(
            Instant::now() < deadline,
            "fewer than {n} commits on the primary"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// The transactions the run's `-l` logs show as committed: (client, transaction number).
fn logged_commits(dir: &std::path::Path) -> BTreeSet<(i64, i64)> {
    let mut out = BTreeSet::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with("pgbench_log.") {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            let f: Vec<&str> = line.split_whitespace().collect();
            // client_id transaction_no time script_no epoch us: a number of µs when it
            // committed, `failed` or `skipped` when not.
            if f.len() >= 3 && f[2].parse::<i64>().is_ok() {
                out.insert((f[0].parse().unwrap(), f[1].parse().unwrap()));
            }
        }
    }
    out
}

/// The (client, transaction number) rows of `acks` on a server.
fn stored_commits(c: &pgsurge_server::Cluster) -> BTreeSet<(i64, i64)> {
    let text = c
        .psql("bench", "SELECT client_id || ' ' || txn_seq FROM acks")
        .unwrap();
    text.lines()
        .filter_map(|l| l.trim().split_once(' '))
        .map(|(a, b)| (a.parse().unwrap(), b.parse().unwrap()))
        .collect()
}

/// The time (Unix µs) of the first line of `log` after `after` that contains `needle`,
/// converted by `server` from the `%m` prefix (`2026-01-02 03:04:05.678 UTC`).
fn log_time(
    log: &std::path::Path,
    after: Option<&str>,
    needle: &str,
    server: &pgsurge_server::Cluster,
) -> i64 {
    let text = std::fs::read_to_string(log).unwrap();
    let from = after.map_or(0, |a| text.find(a).unwrap_or_else(|| panic!("{a}: {text}")));
    let line = text[from..]
        .lines()
        .find(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no \"{needle}\" in {}:\n{text}", log.display()));
    let stamp = line.split(" UTC ").next().unwrap();
    let sql = format!("SELECT (extract(epoch FROM timestamptz '{stamp} UTC') * 1000000)::bigint");
    server
        .psql("postgres", &sql)
        .unwrap()
        .trim()
        .parse()
        .unwrap()
}

fn read_json(dir: &std::path::Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(dir.join("run.json")).unwrap()).unwrap()
}

#[test]
fn a_sync_failover_at_5_s_loses_no_acknowledged_commit_and_its_outage_matches_the_logs() {
    let topo = topology(true);
    let dir = pgsurge_testkit::scratch_dir("failover-sync-acks");
    let (run, started) = start_acked_run(&topo, dir.path());
    let (primary, standby) = (topo.primary(), &topo.replicas()[0]);
    // The primary stops at 5 s of the run (later only if 200 commits took longer), and
    // the standby is promoted at once.
    wait_for_acks(primary, 200);
    if let Some(rest) = Duration::from_secs(5).checked_sub(started.elapsed()) {
        std::thread::sleep(rest);
    }
    assert!(primary.stop_immediate(Duration::from_secs(30)));
    standby.promote().expect("promote the standby");
    let out = run.join().expect("the bench thread");
    assert!(out.status.success(), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let r = read_json(dir.path());
    let cost = &r["failure_cost"];
    // Every commit a client was told of is on the promoted standby: the log's and the
    // table's view agree with the run's count.
    let logged = logged_commits(dir.path());
    let stored = stored_commits(standby);
    assert!(logged.len() > 200, "{}", logged.len());
    assert_eq!(logged.difference(&stored).count(), 0);
    assert_eq!(cost["acknowledged_checked"], logged.len() as u64, "{cost}");
    assert_eq!(cost["acknowledged_lost"], 0, "{cost}");
    assert!(
        stdout.contains(&format!(
            "acknowledged commits checked = {}\nacknowledged commits lost = 0\n",
            logged.len()
        )),
        "{stdout}"
    );
    // The outage runs from the primary's shutdown to the promoted standby's first
    // moment as a primary, as their logs tell them, to half a second.
    let shutdown = log_time(
        primary.log_file(),
        None,
        "received immediate shutdown request",
        standby,
    );
    let ready = log_time(
        standby.log_file(),
        Some("received promote request"),
        "database system is ready to accept connections",
        standby,
    );
    let o = &cost["outage"];
    let before = o["last_commit_before_unix_us"].as_i64().expect("an outage");
    let after = o["first_commit_after_unix_us"].as_i64().unwrap();
    assert!(
        (before - shutdown).abs() <= 500_000,
        "outage from {before}, shutdown at {shutdown}: not within 0.5 s\n{o}"
    );
    assert!(
        (after - ready).abs() <= 500_000,
        "outage to {after}, ready at {ready}: not within 0.5 s\n{o}"
    );
    assert_eq!(o["anchor"], "first_connection_lost", "{o}");
}

#[test]
fn an_async_primary_killed_ahead_of_its_standby_loses_exactly_the_commits_counted() {
    let topo = topology(false);
    let dir = pgsurge_testkit::scratch_dir("failover-async-acks");
    let (run, _) = start_acked_run(&topo, dir.path());
    let (primary, standby) = (topo.primary(), &topo.replicas()[0]);
    wait_for_acks(primary, 200);
    // The standby stops receiving WAL, so the commits the primary acknowledges from
    // here on exist only there: asynchronous replication's loss, made certain.
    standby
        .psql("postgres", "ALTER SYSTEM SET primary_conninfo = ''")
        .unwrap();
    standby.psql("postgres", "SELECT pg_reload_conf()").unwrap();
    let deadline = Instant::now() + Duration::from_secs(120);
    while standby
        .psql("postgres", "SELECT count(*) FROM pg_stat_wal_receiver")
        .unwrap()
        .trim()
        != "0"
    {
        assert!(Instant::now() < deadline, "the standby still receives WAL");
        std::thread::sleep(Duration::from_millis(50));
    }
    let cut = acks(primary);
    wait_for_acks(primary, cut + 200);
    assert!(primary.kill());
    standby.promote().expect("promote the standby");
    let out = run.join().expect("the bench thread");
    assert!(out.status.success(), "{}", text(&out));
    let r = read_json(dir.path());
    let cost = &r["failure_cost"];
    let logged = logged_commits(dir.path());
    let missing = logged.difference(&stored_commits(standby)).count() as u64;
    assert!(missing >= 200, "{missing} acknowledged commits missing");
    assert_eq!(cost["acknowledged_checked"], logged.len() as u64, "{cost}");
    assert_eq!(cost["acknowledged_lost"], missing, "{cost}");
}

#[test]
fn a_check_without_its_table_is_an_error_after_the_report() {
    let srv = pgsurge_server::testing::TestServer::shared();
    let db = srv.create_database("check_commits");
    let conninfo = srv.conninfo(&db);
    let init = pgsurge(&["bench", "-i", "-s", "1", "-q", &conninfo]);
    assert!(init.status.success(), "{}", text(&init));
    let out = pgsurge(&[
        "bench",
        "--reconnect",
        "--check-commits=no_such_acks",
        "-t",
        "5",
        &conninfo,
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("number of transactions actually processed: 5/5"),
        "{}",
        text(&out)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("--check-commits: the acknowledged commits were not checked")
            && stderr.contains("no_such_acks"),
        "{}",
        text(&out)
    );
}

#[test]
fn a_campaign_pausing_replay_stores_growing_lag_bytes_and_its_report_charts_the_lag() {
    let dir = pgsurge_testkit::scratch_dir("failover-lag");
    let file = dir.path().join("lag.toml");
    std::fs::write(
        &file,
        r#"
[campaign]
name = "lag"
[[target]]
name = "pg"
replicas = 1
settings = { fsync = false, max_connections = 50, shared_buffers = "64MB" }
[matrix]
scales = [1]
clients = [4]
[run]
duration = 14
[[fault]]
at = "3s"
action = "pause-replay"
[[fault]]
at = "10s"
action = "resume-replay"
"#,
    )
    .unwrap();
    let (store, run) = campaign_run(dir.path(), &file);
    let cost = &run["result_json"]["failure_cost"];
    let faults = cost["faults"].as_array().expect("the faults applied");
    assert_eq!(faults.len(), 2, "{cost}");
    assert!(faults.iter().all(|f| f["error"].is_null()), "{cost}");
    let lag = cost["lag"].as_array().expect("the lag samples");
    eprintln!("lag samples (t_s, bytes, seconds):");
    for s in lag {
        eprintln!("  {} {} {}", s["t_s"], s["bytes"], s["seconds"]);
    }
    // While replay is paused the primary goes on writing and the standby replays
    // nothing: the bytes behind grow from the first sample after the pause took hold
    // (its standby's report a second after it was done) to the last before the resume
    // was asked for at 10 s. A fault is applied at its time or later, never earlier:
    // the pause's time in the run is taken from the resume's, and is no earlier than
    // its own 3 s (a resume applied late would otherwise put it before then).
    let done = |i: usize| faults[i]["done_unix_us"].as_i64().unwrap() as f64 / 1e6;
    let paused_at = (10.0 - (done(1) - done(0))).max(3.0);
    let paused: Vec<&serde_json::Value> = lag
        .iter()
        .filter(|s| {
            let t = s["t_s"].as_f64().unwrap();
            s["replica"] == "replica1" && (paused_at + 1.5..=9.5).contains(&t)
        })
        .collect();
    assert!(paused.len() >= 2, "paused at {paused_at} s\n{cost}");
    let bytes: Vec<i64> = paused
        .iter()
        .map(|s| s["bytes"].as_i64().unwrap())
        .collect();
    assert!(
        bytes.last() > bytes.first(),
        "bytes behind did not grow\n{bytes:?}"
    );
    assert!(
        bytes.windows(2).all(|w| w[1] >= w[0]),
        "bytes behind fell\n{bytes:?}"
    );
    // The time lag is recorded beside them: PostgreSQL's replay_lag, counted from when
    // the primary wrote the WAL not yet replayed, goes on growing with the wall clock
    // while replay is paused, whatever the primary writes (it is not flat), and never
    // falls before the resume.
    let time: Vec<f64> = paused
        .iter()
        .filter_map(|s| s["seconds"].as_f64())
        .collect();
    assert!(time.len() >= 2, "no time lag while paused\n{cost}");
    assert!(
        time.last() > time.first(),
        "time lag did not grow\n{time:?}"
    );
    assert!(
        time.windows(2).all(|w| w[1] >= w[0]),
        "time lag fell\n{time:?}"
    );
    lag_charted_on_the_test_page(dir.path(), &store);
}

#[test]
fn a_campaign_on_a_target_with_a_standby_stores_its_lag_without_faults_and_its_report_charts_it() {
    let dir = pgsurge_testkit::scratch_dir("failover-lag-plain");
    let file = dir.path().join("plain.toml");
    std::fs::write(
        &file,
        r#"
[campaign]
name = "plain"
[[target]]
name = "pg"
replicas = 1
settings = { fsync = false, max_connections = 50, shared_buffers = "64MB" }
[matrix]
scales = [1]
clients = [4]
[run]
duration = 6
"#,
    )
    .unwrap();
    let (store, run) = campaign_run(dir.path(), &file);
    let cost = &run["result_json"]["failure_cost"];
    let lag = cost["lag"].as_array().expect("the lag samples");
    // Sampled every second of a 6 s run on the primary, for its one standby.
    assert!(lag.len() >= 3, "{cost}");
    assert!(lag.iter().all(|s| s["replica"] == "replica1"), "{cost}");
    assert!(lag.iter().all(|s| s["bytes"].as_i64().is_some()), "{cost}");
    // Nothing of a failure: no faults, no outage.
    assert!(
        cost.get("faults").is_none() && cost.get("outage").is_none(),
        "{cost}"
    );
    lag_charted_on_the_test_page(dir.path(), &store);
}

/// The report's test page in headless Chromium: the two lag charts each draw a line
/// for the standby, with a point per sample it had a figure for.
fn lag_charted_on_the_test_page(dir: &std::path::Path, store: &str) {
    let out = dir.join("report");
    let report = pgsurge(&["report", "--store", store, "-o", out.to_str().unwrap()]);
    assert!(report.status.success(), "{}", text(&report));
    let page = std::fs::read_to_string(out.join("run-1.html")).unwrap();
    let probe = r#"<script>
      window.addEventListener('load', () => {
        const rows = [];
        for (const chart of document.querySelectorAll('.chart')) {
          const title = chart.textContent;
          if (!title.includes('Replica lag in')) continue;
          const legend = [...chart.querySelectorAll('.legend li')].map(li => li.textContent);
          const points = [...chart.querySelectorAll('svg polyline')]
            .filter(p => p.getAttribute('stroke-width') === '2')
            .map(p => p.points.numberOfItems);
          rows.push((title.includes('Replica lag in bytes') ? 'bytes' : 'time') + '|'
            + legend.filter(l => !l.startsWith('outage')).join(',') + '|'
            + points.reduce((a, b) => a + b, 0));
        }
        document.body.setAttribute('data-lag', rows.join(';'));
      });
    </script></body>"#;
    let probe_page = out.join("run-1.probe.html");
    std::fs::write(&probe_page, page.replace("</body>", probe)).unwrap();
    let dom = pgsurge_testkit::chromium::open_file(
        &[
            "--dump-dom",
            "--virtual-time-budget=5000",
            "--window-size=1600,1200",
        ],
        &probe_page,
    )
    .stdout;
    let found = regex::Regex::new(r#"data-lag="([^"]*)""#)
        .unwrap()
        .captures(&dom)
        .unwrap_or_else(|| panic!("no probe in the DOM: {}", &dom[..dom.len().min(2000)]))[1]
        .to_string();
    let charts: Vec<(&str, &str, usize)> = found
        .split(';')
        .map(|c| {
            let mut f = c.split('|');
            let (kind, legend) = (f.next().unwrap(), f.next().unwrap());
            let points = f.next().and_then(|p| p.parse().ok());
            (kind, legend, points.unwrap_or_else(|| panic!("{found:?}")))
        })
        .collect();
    assert_eq!(charts.len(), 2, "the two lag charts: {found:?}");
    for (kind, legend, points) in charts {
        assert_eq!(legend, "replica1", "{found:?}");
        assert!(points >= 2, "the {kind} chart draws no line: {found:?}");
    }
}

/// Runs the campaign file `file` into a store in `dir`, and returns the store's path
/// and its one run as `results export` gives it (its status checked to be ok).
fn campaign_run(dir: &std::path::Path, file: &std::path::Path) -> (String, serde_json::Value) {
    let c = Campaign {
        file: file.to_path_buf(),
        store: dir.join("r.db").display().to_string(),
    };
    c.run_ok(&[]);
    let run = c.runs().into_iter().next().expect("a stored test");
    assert_eq!(run["status"], "ok", "{run}");
    (c.store, run)
}
