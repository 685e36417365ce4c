//! Where the time goes: a campaign whose script sleeps in the server (`SELECT
//! pg_sleep(0.08)`, wait event `Timeout:PgSleep`) on two existing servers, one with
//! `pg_stat_statements` preloaded and created in the benchmark database, one without.
//! Every test must store per-second wait-event samples in which the clients are seen
//! sleeping; the first must store its top statements with the script's statement
//! called once per transaction, the second must say there were none to read.

use std::collections::BTreeMap;

use pgsurge_campaign::{run_campaign, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_server::testing::{TestServer, TestServerOptions};
use pgsurge_store::activity::{self, Statements};
use pgsurge_store::{RunFilter, Store};

const CLIENTS: f64 = 4.0;
const PER_CLIENT: i64 = 25;

#[test]
fn wait_events_and_top_statements_are_stored_with_each_test() {
    let pgss = TestServer::start(TestServerOptions {
        settings: vec![(
            "shared_preload_libraries".into(),
            "pg_stat_statements".into(),
        )],
        ..Default::default()
    });
    let with = pgss.create_database("waits_pgss");
    pgss.psql(&with, "CREATE EXTENSION pg_stat_statements");
    let plain = TestServer::shared();
    let without = plain.create_database("waits_plain");

    let dir = pgsurge_testkit::scratch_dir("where-time-goes");
    std::fs::write(dir.path().join("sleep.sql"), "SELECT pg_sleep(0.08);\n").unwrap();
    let text = format!(
        r#"
[campaign]
name = "waits"
shuffle = false

[[target]]
name = "pgss"
conninfo = "{}"

[[target]]
name = "plain"
conninfo = "{}"

[matrix]
scales = [1]
clients = [{CLIENTS}]
scripts = [{{ file = "sleep.sql" }}]

[run]
transactions = {PER_CLIENT}

[hygiene]
vacuum = false
checkpoint = false

[sampling]
interval = 0.5
"#,
        pgss.conninfo(&with),
        plain.conninfo(&without)
    );
    let campaign = Campaign::parse(&text, "waits.toml", dir.path()).unwrap();
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign(&campaign, &mut store, &opts, &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed), (2, 0), "{out:?}");
    let info: BTreeMap<String, pgsurge_store::MetricInfo> = store
        .metrics_info()
        .unwrap()
        .into_iter()
        .map(|i| (i.metric.clone(), i))
        .collect();
    let sleep = "pg.wait.Timeout.PgSleep";
    assert_eq!(info[sleep].unit, "sessions", "{:?}", info[sleep]);
    assert_eq!(info[sleep].category, "pg.wait");

    let runs = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        let full = store.load_run(run.id).unwrap();
        let r = &full.run.record;
        let key = r.test_key.as_str();
        assert_eq!(r.status, "ok", "{key}: {:?}", r.error);
        let transactions = r.transactions.unwrap();
        assert_eq!(transactions, CLIENTS as i64 * PER_CLIENT, "{key}");
        assert!(
            r.commit_mismatch_pct.unwrap() <= 5.0,
            "{key}: {:?} server commits for {transactions} transactions",
            r.server_commits
        );
        assert!(
            !full
                .warnings
                .iter()
                .any(|w| w.message.contains("wait-event")),
            "{key}: {:?}",
            full.warnings
        );

        // Per second: the mean sessions in each wait event.
        let mut seconds: BTreeMap<u64, BTreeMap<&str, f64>> = BTreeMap::new();
        for m in full
            .metrics
            .iter()
            .filter(|m| m.metric.starts_with("pg.wait."))
        {
            seconds
                .entry(m.ts.to_bits())
                .or_default()
                .insert(m.metric.as_str(), m.value);
        }
        // 25 sleeps of 80 ms: at least 2 s of run, so 2 or more seconds sampled.
        assert!(seconds.len() >= 2, "{key}: {seconds:?}");
        for (ts, events) in &seconds {
            // Every event is stored every second (0 when absent), so the lines do
            // not break.
            assert!(events.contains_key(sleep), "{key} at {ts}: {events:?}");
            // Only the benchmark's sessions are counted (not the sampler's, not the
            // campaign's monitoring): never more than the clients.
            let active: f64 = events.values().sum();
            assert!(
                active <= CLIENTS + 1e-9,
                "{key}: {active} active sessions in a second: {events:?}"
            );
        }
        let sleeping: Vec<f64> = seconds.values().map(|e| e[sleep]).collect();
        let peak = sleeping.iter().cloned().fold(0.0, f64::max);
        // Each client sleeps 80 ms per transaction and spends a millisecond elsewhere
        // (up to ten and more on a busy machine): about 4 sessions sleeping in every
        // full second.
        assert!(
            peak >= 0.75 * CLIENTS,
            "{key}: at most {peak} sessions sleeping: {sleeping:?}"
        );
        let shares = activity::wait_shares(&full.metrics);
        assert_eq!(shares[0].label, "Timeout:PgSleep", "{key}: {shares:?}");
        assert!(shares[0].share_pct > 80.0, "{key}: {shares:?}");

        let shown = pgsurge_records::where_time_goes(&full.metrics, &full.facts);
        eprintln!("{key}: {sleeping:?} sleeping per second\n{shown}");
        assert!(shown.contains("Timeout:PgSleep"), "{shown}");

        match activity::statements(&full.facts) {
            Statements::Top { source, top } => {
                assert!(key.starts_with("pgss/"), "{key}: statements read: {top:?}");
                assert!(source.starts_with("pg_stat_statements 1."), "{source}");
                let first = &top[0];
                assert!(first.query.contains("pg_sleep"), "{key}: {top:?}");
                // Called once per transaction, one row each, ≥ 80 ms each.
                assert_eq!(first.calls, transactions, "{key}: {first:?}");
                assert_eq!(first.rows, transactions, "{key}: {first:?}");
                assert!(first.mean_ms >= 80.0 && first.mean_ms < 1000.0, "{first:?}");
                assert!(
                    (first.total_ms - first.mean_ms * transactions as f64).abs() < 1e-6,
                    "{first:?}"
                );
                assert!(first.share_pct.unwrap() > 90.0, "{top:?}");
                assert!(top.len() <= 10);
                assert!(
                    !top.iter().any(|t| t.query.contains("pgsurge:")),
                    "pgsurge's own queries are left out: {top:?}"
                );
                assert!(shown.contains("pg_sleep"), "{shown}");
            }
            Statements::None(why) => {
                assert!(key.starts_with("plain/"), "{key}: no statements: {why}");
                assert_eq!(why, "pg_stat_statements not installed");
                assert!(
                    !full
                        .facts
                        .iter()
                        .any(|f| f.name == activity::STATEMENTS_TOP),
                    "{:?}",
                    full.facts
                );
                assert!(!shown.contains("top statements"), "{shown}");
            }
            Statements::NotRecorded => panic!("{key}: no statements fact"),
        }
    }
}
