//! The test page's "Where the time goes": wait events by share of active session time
//! (table and chart from the `pg.wait.*` samples) and the top statements (from the
//! `statements.*` facts), or a line saying why either is missing.

use pgsurge_report::{write_report, ReportRequest};
use pgsurge_store::activity::{TopStatement, STATEMENTS_SOURCE, STATEMENTS_TOP};
use pgsurge_store::*;

fn run(set_id: i64, key: &str, t0: f64) -> RunRecord {
    RunRecord {
        set_id,
        test_key: key.into(),
        repeat_no: 1,
        status: "ok".into(),
        start_epoch: Some(t0),
        end_epoch: Some(t0 + 4.0),
        clients: Some(4),
        scale: Some(1),
        tps: Some(70.0),
        transactions: Some(280),
        ..Default::default()
    }
}

fn intervals(t0: f64) -> Vec<IntervalRecord> {
    (0..4)
        .map(|i| IntervalRecord {
            ts: t0 + i as f64,
            elapsed_s: i as f64,
            duration_s: 1.0,
            transactions: 70,
            tps: 70.0,
            ..Default::default()
        })
        .collect()
}

/// The page's text from `from` to the next `<h3>` or `<h2>`.
fn section<'a>(html: &'a str, from: &str) -> &'a str {
    let start = html
        .find(from)
        .unwrap_or_else(|| panic!("no {from:?} in page"));
    let rest = &html[start + from.len()..];
    let end = ["<h3>", "<h2>"]
        .iter()
        .filter_map(|t| rest.find(t))
        .min()
        .unwrap_or(rest.len());
    &rest[..end]
}

#[test]
fn test_pages_show_wait_events_and_top_statements() {
    let dir = pgsurge_testkit::scratch_dir("where-time-goes");
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let set_id = store
        .create_set(&SetRecord {
            name: "waits".into(),
            kind: "campaign".into(),
            status: "complete".into(),
            created_at: "2026-11-22T00:00:00Z".into(),
            ..Default::default()
        })
        .unwrap();

    // Test 1: 4 seconds; sleeping 3, 4, 4, 3 sessions, CPU 1, 0, 0, 0, a lock wait
    // of 2 sessions in the last second: 14 + 1 + 2 = 17 session-seconds.
    let t0 = 1_790_000_000.0;
    let mut metrics = Vec::new();
    for (i, (sleep, cpu, lock)) in [
        (3.0, 1.0, 0.0),
        (4.0, 0.0, 0.0),
        (4.0, 0.0, 0.0),
        (3.0, 0.0, 2.0),
    ]
    .into_iter()
    .enumerate()
    {
        let ts = t0 + i as f64 + 1.0;
        for (metric, value) in [
            ("pg.wait.Timeout.PgSleep", sleep),
            ("pg.wait.CPU", cpu),
            ("pg.wait.Lock.transactionid", lock),
        ] {
            metrics.push(MetricSample {
                ts,
                metric: metric.into(),
                value,
            });
        }
    }
    let top = vec![
        TopStatement {
            query: "SELECT pg_sleep($1)".into(),
            calls: 280,
            total_ms: 14_100.0,
            mean_ms: 14_100.0 / 280.0,
            rows: 280,
            share_pct: Some(99.0),
        },
        TopStatement {
            query: "SELECT * FROM t WHERE x < $1".into(),
            calls: 3,
            total_ms: 142.5,
            mean_ms: 47.5,
            rows: 0,
            share_pct: Some(1.0),
        },
    ];
    store
        .write_run(&RunWrite {
            run: run(set_id, "pgss/sleep/c4", t0),
            intervals: intervals(t0),
            metrics,
            facts: vec![
                FactRecord::new(STATEMENTS_SOURCE, "pg_stat_statements 1.10"),
                FactRecord::new(STATEMENTS_TOP, serde_json::to_string(&top).unwrap()),
            ],
            ..Default::default()
        })
        .unwrap();
    // Test 2: no extension, no wait samples.
    store
        .write_run(&RunWrite {
            run: run(set_id, "plain/sleep/c4", t0 + 10.0),
            intervals: intervals(t0 + 10.0),
            facts: vec![FactRecord::new(
                STATEMENTS_SOURCE,
                "none (pg_stat_statements not installed)",
            )],
            ..Default::default()
        })
        .unwrap();
    // Test 3: recorded before any of it existed.
    store
        .write_run(&RunWrite {
            run: run(set_id, "old/sleep/c4", t0 + 20.0),
            intervals: intervals(t0 + 20.0),
            ..Default::default()
        })
        .unwrap();

    let files = write_report(
        &mut store,
        &ReportRequest::default(),
        &dir.path().join("out"),
    )
    .unwrap();
    let page = |n: usize| std::fs::read_to_string(&files.files[n]).unwrap();
    let (first, second, third) = (page(1), page(2), page(3));
    assert!(first.contains("Test #1"), "pages in run order");

    // Wait events, largest share first, with their numbers.
    let waits = section(&first, "<h3>Wait events</h3>");
    let order: Vec<usize> = ["Timeout:PgSleep", "Lock:transactionid", "CPU"]
        .iter()
        .map(|l| {
            waits
                .find(&format!("<td class=\"l\">{l}</td>"))
                .unwrap_or_else(|| panic!("no row {l} in {waits}"))
        })
        .collect();
    assert!(order.windows(2).all(|w| w[0] < w[1]), "{waits}");
    for cells in [
        // mean sessions, session-seconds, share
        "<td class=\"l\">Timeout:PgSleep</td><td>3.50</td><td>14.0</td><td>82.4 %</td>",
        "<td class=\"l\">Lock:transactionid</td><td>0.50</td><td>2.0</td><td>11.8 %</td>",
        "<td class=\"l\">CPU</td><td>0.25</td><td>1.0</td><td>5.9 %</td>",
    ] {
        assert!(waits.contains(cells), "{cells} not in {waits}");
    }
    assert!(waits.contains("Active sessions by wait event"), "{waits}");
    assert!(
        waits.contains("<polyline"),
        "the chart draws lines: {waits}"
    );
    assert!(
        first.contains("Timeout:PgSleep 82 %, Lock:transactionid 12 %, CPU 6 %"),
        "summary line of the top wait events"
    );

    // Top statements, escaped, in stored order.
    let statements = section(&first, "<h3>Top statements</h3>");
    assert!(
        statements.contains("pg_stat_statements 1.10"),
        "{statements}"
    );
    let sleep = statements
        .find("<code>SELECT pg_sleep($1)</code></td><td>280</td><td>14100.0</td><td>50.357</td><td>280</td><td>99.0 %</td>")
        .unwrap_or_else(|| panic!("{statements}"));
    let other = statements
        .find("<code>SELECT * FROM t WHERE x &lt; $1</code></td><td>3</td>")
        .unwrap_or_else(|| panic!("{statements}"));
    assert!(sleep < other);

    // Missing data is said, not silently left out.
    let second_waits = section(&second, "<h3>Wait events</h3>");
    assert!(
        second_waits.contains("No wait events were sampled"),
        "{second_waits}"
    );
    assert!(!second_waits.contains("<table"));
    assert!(section(&second, "<h3>Top statements</h3>")
        .contains("No statement statistics: pg_stat_statements not installed."));
    assert!(section(&third, "<h3>Top statements</h3>")
        .contains("Statement statistics were not recorded for this test."));
}
