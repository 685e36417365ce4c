//! A delay on a standby's replication link through pgsurge's relay (no netem needed):
//! with a synchronous standby every commit waits for the round trip the relay adds,
//! with an asynchronous one commits do not wait for it.

use crate::campaigns::Campaign;

/// The delay each direction of the standby's link gets.
const DELAY_MS: f64 = 100.0;

/// Runs a 10 s tpcb-like campaign on a primary and one standby (`sync` or not) with
/// the standby's link delayed from 4 s on; returns the per-second (start of the
/// second after the delay was set, s; mean latency, ms; transactions) of the run.
fn delayed_run(sync: bool) -> Vec<(f64, f64, u64)> {
    let dir = pgsurge_testkit::scratch_dir("failover-relay");
    let replication = if sync { "sync" } else { "async" };
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "relay"
[[target]]
name = "pg"
replicas = 1
replication = "{replication}"
settings = {{ fsync = false, synchronous_commit = "on", max_connections = 50, shared_buffers = "64MB" }}
[matrix]
scales = [1]
clients = [4]
[run]
duration = 10
[[fault]]
at = "4s"
action = "delay"
link = "replication"
delay = "{DELAY_MS}ms"
"#
        ),
    );
    c.run_ok(&[]);
    let runs = c.runs();
    let run = &runs[0]["result_json"];
    let faults = run["failure_cost"]["faults"]
        .as_array()
        .expect("the faults");
    assert_eq!(faults.len(), 1, "{run}");
    assert!(faults[0]["error"].is_null(), "{faults:?}");
    let set_s = faults[0]["done_unix_us"].as_i64().unwrap() as f64 / 1e6;
    let seconds: Vec<(f64, f64, u64)> = run["intervals"]
        .as_array()
        .expect("per-second figures")
        .iter()
        .map(|i| {
            let start = i["epoch_s"].as_f64().unwrap() - i["duration_s"].as_f64().unwrap();
            let lat = i["latency_ms"].as_f64().unwrap_or(0.0);
            (start - set_s, lat, i["transactions"].as_u64().unwrap())
        })
        .collect();
    eprintln!("{replication}: second from the delay, mean latency ms, transactions");
    for s in &seconds {
        eprintln!("  {:6.2} {:8.2} {}", s.0, s.1, s.2);
    }
    seconds
}

#[test]
fn a_delay_on_a_sync_standbys_link_holds_every_commit_for_the_round_trip_and_an_async_ones_does_not(
) {
    let round_trip_ms = 2.0 * DELAY_MS;
    // A transaction that ends a second or more after the delay was set either began
    // after it, and so waited for its commit's WAL to reach the standby and the
    // standby's reply to come back through the relay, or ran for a second or more.
    let sync = delayed_run(true);
    let after: Vec<_> = sync.iter().filter(|s| s.0 >= 1.0 && s.2 > 0).collect();
    assert!(after.len() >= 2, "{sync:?}");
    for s in &after {
        assert!(s.1 >= round_trip_ms, "{s:?} in {sync:?}");
    }
    // Nothing holds an asynchronous commit for the standby: some second after the
    // delay has transactions faster on average than the round trip.
    let not_sync = delayed_run(false);
    let after: Vec<_> = not_sync.iter().filter(|s| s.0 >= 1.0 && s.2 > 0).collect();
    assert!(after.iter().any(|s| s.1 < round_trip_ms), "{not_sync:?}");
}
