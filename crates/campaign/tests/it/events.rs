//! The runner as a stream of events: a real small campaign (an existing server, two
//! tests, a warm-up and a `before_test` hook) told to a recorder and to a consumer that
//! keeps the seconds. Every planned test is started and ended once, its seconds come
//! between the two, the set ends last; what the store consumer wrote is what ended.

use std::collections::BTreeMap;

use pgsurge_campaign::runner::run_campaign_telling;
use pgsurge_campaign::{Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_events::recorder::Recorded;
use pgsurge_events::{Consumer, Event, Recorder, Second};
use pgsurge_server::testing::TestServer;
use pgsurge_store::{RunFilter, Store};

/// Keeps each test's seconds.
#[derive(Default)]
struct Seconds(BTreeMap<String, Vec<Second>>);

impl Consumer for Seconds {
    fn take(&mut self, event: &Event<'_>) {
        if let Event::Interval { test, second } = event {
            let key = test.key.to_string();
            self.0.entry(key).or_default().push((*second).clone());
        }
    }
}

fn positions(events: &[Recorded], kind: &str, key: &str) -> Vec<usize> {
    let key = Some(key.to_string());
    (0..events.len())
        .filter(|&i| events[i].kind == kind && events[i].key == key)
        .collect()
}

#[test]
fn a_campaign_tells_each_test_planned_started_its_seconds_and_ended() {
    let srv = TestServer::shared();
    let db = srv.create_database("events");
    let text = format!(
        r#"
[campaign]
name = "events"
shuffle = false

[[target]]
name = "existing"
conninfo = "{}"

[matrix]
scales = [1]
clients = [1, 2]
scripts = ["select-only"]

[run]
duration = 3
warmup = 1

[hooks]
before_test = "true"

[hygiene]
vacuum = false
checkpoint = false
"#,
        srv.conninfo(&db)
    );
    let campaign = Campaign::parse(&text, "events.toml", std::path::Path::new(".")).unwrap();
    let dir = pgsurge_testkit::scratch_dir("campaign-events");
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let (mut recorder, mut seconds) = (Recorder::default(), Seconds::default());
    let out = run_campaign_telling(
        &campaign,
        &mut store,
        &opts,
        &StopFlag::new(),
        &mut [&mut recorder, &mut seconds],
    )
    .unwrap();
    assert_eq!((out.ok, out.failed), (2, 0), "{out:?}");
    let events = &recorder.events;
    let kinds: Vec<&str> = events.iter().map(|e| e.kind).collect();
    assert_eq!(kinds.first(), Some(&"set_started"), "{kinds:?}");
    assert_eq!(kinds.last(), Some(&"set_ended"), "{kinds:?}");
    assert_eq!(events.last().unwrap().detail.as_deref(), Some("complete"));
    assert_eq!(kinds.iter().filter(|k| **k == "set_ended").count(), 1);
    assert_eq!(kinds.iter().filter(|k| **k == "target_started").count(), 1);

    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(out.set_id),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(runs.len(), 2);
    for run in &runs {
        let key = run.record.test_key.as_str();
        let planned = positions(events, "test_planned", key);
        let started = positions(events, "test_started", key);
        let ended = positions(events, "test_ended", key);
        assert_eq!(
            (planned.len(), started.len(), ended.len()),
            (1, 1, 1),
            "{key}"
        );
        assert!(planned[0] < started[0] && started[0] < ended[0], "{key}");
        assert_eq!(events[ended[0]].detail.as_deref(), Some("ok"));
        // The test's hook and seconds come between its start and its end.
        let hooks = positions(events, "hook_ran", key);
        assert_eq!(hooks.len(), 1, "{key}");
        assert!(started[0] < hooks[0] && hooks[0] < ended[0], "{key}");
        let intervals = positions(events, "interval", key);
        assert!(!intervals.is_empty(), "{key}: no second told");
        assert!(
            intervals.iter().all(|&i| started[0] < i && i < ended[0]),
            "{key}: a second told outside its test"
        );
        // The warm-up's seconds come first, then the measured ones.
        let details: Vec<&str> = intervals
            .iter()
            .map(|&i| events[i].detail.as_deref().unwrap())
            .collect();
        let measured_from = details.iter().position(|d| *d == "measured");
        assert!(measured_from.is_some(), "{key}: {details:?}");
        assert!(
            details[measured_from.unwrap()..]
                .iter()
                .all(|d| *d == "measured"),
            "{key}: {details:?}"
        );
        // A measured second with transactions has its percentiles from its histogram.
        let told = &seconds.0[key];
        let busy: Vec<&Second> = told
            .iter()
            .filter(|s| !s.warmup && s.transactions > 0)
            .collect();
        assert!(!busy.is_empty(), "{key}: {told:?}");
        for s in busy {
            let (p50, p99) = (s.at(50.0).unwrap(), s.at(99.0).unwrap());
            assert!(0.0 < p50 && p50 <= p99, "{key}: {s:?}");
            assert!(p99 <= s.latency_max_ms.unwrap(), "{key}: {s:?}");
        }
    }
    // Each test ended was stored once, by the store's consumer.
    let mut stored: Vec<i64> = runs.iter().map(|r| r.id).collect();
    let mut told = out.run_ids.clone();
    stored.sort_unstable();
    told.sort_unstable();
    assert_eq!(stored, told);
}
