//! Test bodies shared by the SQLite and PostgreSQL store tests.
#![allow(dead_code)]

use hdrhistogram::Histogram;
use pgsurge_store::*;

pub fn sample_set() -> SetRecord {
    SetRecord {
        name: "campaign-a".into(),
        kind: set_kind::CAMPAIGN.into(),
        description: Some("it's a test \\ with quotes".into()),
        spec_hash: Some("abc123".into()),
        spec: Some("[campaign]\nname = 'a'\n".into()),
        planned_tests: Some(2),
        status: set_status::RUNNING.into(),
        created_at: now_rfc3339(),
        finished_at: None,
    }
}

pub fn sample_run(set_id: i64, target_id: Option<i64>, key: &str) -> RunWrite {
    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    for v in [100u64, 200, 300, 4000] {
        h.record(v).unwrap();
    }
    let run = RunRecord {
        set_id,
        target_id,
        test_key: key.into(),
        seq: Some(1),
        repeat_no: 1,
        status: run_status::OK.into(),
        scale: Some(10),
        clients: Some(4),
        threads: Some(2),
        tps: Some(1234.5),
        transactions: Some(4),
        latency_p99_ms: Some(4.0),
        options: Some(serde_json::json!({"clients": 4, "script": "tpcb-like"})),
        result_json: Some(serde_json::json!({"tps": 1234.5})),
        ..Default::default()
    };
    // The measured intervals' histograms merge to the whole-run histogram.
    let mut second = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    second.record(100).unwrap();
    second.record(200).unwrap();
    let mut third = second.clone();
    third.reset();
    third.record(300).unwrap();
    third.record(4000).unwrap();
    let mut empty = third.clone();
    empty.reset();
    let interval_histograms = [(1, &second), (2, &third), (3, &empty)]
        .into_iter()
        .filter_map(|(i, h)| {
            IntervalHistogramRecord::from_histogram(
                "latency",
                1000.0 + f64::from(i),
                f64::from(i),
                1.0,
                h,
            )
            .unwrap()
        })
        .collect();
    RunWrite {
        run,
        interval_histograms,
        intervals: (0..3)
            .map(|i| IntervalRecord {
                ts: 1000.0 + f64::from(i),
                elapsed_s: f64::from(i),
                duration_s: 1.0,
                warmup: i == 0,
                transactions: 100 + i64::from(i),
                tps: 100.0 + f64::from(i),
                latency_p99_ms: Some(2.5),
                histogram: Some(histogram::encode(&h).unwrap()),
                ..Default::default()
            })
            .collect(),
        histograms: vec![HistogramRecord::from_histogram("latency", -1, None, &h).unwrap()],
        metrics: vec![
            MetricSample {
                ts: 1000.0,
                metric: "os.cpu.user_pct".into(),
                value: 10.0,
            },
            MetricSample {
                ts: 1001.0,
                metric: "os.cpu.user_pct".into(),
                value: 20.0,
            },
            MetricSample {
                ts: 1000.0,
                metric: "pg.db.xact_commit_per_s".into(),
                value: 99.0,
            },
            MetricSample {
                ts: 1001.0,
                metric: "pg.db.xact_commit_per_s".into(),
                value: 101.0,
            },
        ],
        metric_info: vec![MetricInfo {
            metric: "os.cpu.user_pct".into(),
            category: "os.cpu".into(),
            unit: "%".into(),
            description: Some("user CPU".into()),
        }],
        counters: vec![CounterRecord {
            name: "pg_stat_database.xact_commit".into(),
            before_value: Some(10.0),
            after_value: Some(210.0),
            delta: Some(200.0),
        }],
        settings: vec![SettingRecord {
            name: "shared_buffers".into(),
            setting: Some("16384".into()),
            unit: Some("8kB".into()),
            source: Some("configuration file".into()),
            boot_val: Some("1024".into()),
        }],
        environment: Some(serde_json::json!({"kernel": "6.1", "cpu": {"count": 2}})),
        warnings: vec![WarningRecord {
            code: "commit_mismatch".into(),
            message: "server counted 7% more commits".into(),
            created_at: now_rfc3339(),
            ..Default::default()
        }],
        facts: vec![
            FactRecord::new("server_host_metrics_source", "node_exporter"),
            FactRecord::new("client_bound", "false"),
        ],
        profiles: Vec::new(),
    }
}

/// Writes a set, server, target and one run; returns the run id.
pub fn write_sample(store: &mut Store) -> i64 {
    let set_id = store.create_set(&sample_set()).unwrap();
    let server_id = store
        .upsert_server(&ServerRecord {
            name: "box1".into(),
            cpu_count: Some(2),
            details: Some(serde_json::json!({"x": 1})),
            ..Default::default()
        })
        .unwrap();
    let target_id = store
        .upsert_target(&TargetRecord {
            set_id,
            name: "pg17".into(),
            server_id: Some(server_id),
            kind: "throwaway".into(),
            settings: Some(serde_json::json!({"shared_buffers": "128MB"})),
            ..Default::default()
        })
        .unwrap();
    store
        .write_run(&sample_run(set_id, Some(target_id), "t1"))
        .unwrap()
}

/// Writes a second run into `set_id`.
pub fn write_more(store: &mut Store, set_id: i64) -> i64 {
    store.write_run(&sample_run(set_id, None, "t2")).unwrap()
}

/// After migrating a store written at version 1 (`old_run` was written then): the old
/// run reads back without interval histograms (version 1 had no such table), and the
/// migrated store takes new runs with them, deletes and replaces runs.
pub fn check_migrated(store: &mut Store, old_run: i64) {
    assert!(store
        .interval_histograms(&[old_run], "latency", IntervalWindow::default())
        .unwrap()
        .is_empty());
    let set_id = store.run(old_run).unwrap().record.set_id;
    let new_run = write_more(store, set_id);
    let ivh = store
        .interval_histograms(&[old_run, new_run], "latency", IntervalWindow::default())
        .unwrap();
    assert_eq!(ivh.len(), 2);
    assert!(ivh.iter().all(|h| h.run_id == new_run));
    let loaded = store.load_run(new_run).unwrap();
    assert_eq!(
        histogram::merged_intervals(&ivh).unwrap(),
        histogram::merged(&loaded.histograms, "latency", -1).unwrap()
    );
    store.delete_run(new_run).unwrap();
    let left = store
        .query("SELECT count(*) FROM run_interval_histograms", &[])
        .unwrap();
    assert_eq!(left[0].read::<i64>(0, "count").unwrap(), 0);
}

/// Full round trip; returns the run id.
pub fn round_trip(store: &mut Store) -> i64 {
    let run_id = write_sample(store);
    let sets = store.list_sets().unwrap();
    assert_eq!(sets.len(), 1);
    let set = &sets[0];
    assert_eq!(set.record, sample_set_with_time(&set.record));
    assert_eq!((set.runs_ok, set.runs_failed), (1, 0));

    let loaded = store.load_run(run_id).unwrap();
    let expected = sample_run(set.id, loaded.run.record.target_id, "t1");
    assert_eq!(loaded.run.record, expected.run);
    assert_eq!(loaded.intervals, expected.intervals);
    assert_eq!(loaded.histograms, expected.histograms);
    // Interval histograms: the empty one was not stored; all of them merge to the run's
    // histogram; a window selects by interval start.
    assert_eq!(expected.interval_histograms.len(), 2);
    let ivh = store
        .interval_histograms(&[run_id], "latency", IntervalWindow::default())
        .unwrap();
    assert_eq!(
        ivh.iter().map(|h| h.record.clone()).collect::<Vec<_>>(),
        expected.interval_histograms
    );
    assert!(ivh
        .iter()
        .all(|h| h.run_id == run_id && h.record.encoding == histogram_encoding::HDR_V2_DEFLATE));
    let whole = histogram::merged(&loaded.histograms, "latency", -1)
        .unwrap()
        .unwrap();
    let from_intervals = histogram::merged_intervals(&ivh).unwrap().unwrap();
    assert_eq!(from_intervals, whole);
    let late = store
        .interval_histograms(
            &[run_id],
            "latency",
            IntervalWindow {
                from_s: Some(1.5),
                to_s: Some(3.0),
            },
        )
        .unwrap();
    assert_eq!(late.len(), 1);
    let late = histogram::merged_intervals(&late).unwrap().unwrap();
    assert_eq!((late.len(), late.min()), (2, 300));
    assert!(store
        .interval_histograms(&[run_id], "lag", IntervalWindow::default())
        .unwrap()
        .is_empty());
    assert_eq!(loaded.counters, expected.counters);
    assert_eq!(loaded.settings, expected.settings);
    assert_eq!(loaded.environment, expected.environment);
    assert_eq!(loaded.metrics.len(), 4);
    assert_eq!(loaded.warnings.len(), 1);
    assert_eq!(loaded.warnings[0].run_id, Some(run_id));
    // Facts come back ordered by name.
    let mut facts = expected.facts.clone();
    facts.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(loaded.facts, facts);
    let set_facts = store.set_facts(loaded.run.record.set_id).unwrap();
    assert_eq!(set_facts.len(), 2);
    assert!(set_facts.iter().all(|(id, _)| *id == run_id));
    let target = loaded.target.expect("target stored");
    assert_eq!(target.record.name, "pg17");
    let h = histogram::merged(&loaded.histograms, "latency", -1)
        .unwrap()
        .unwrap();
    assert_eq!(h.len(), 4);
    assert_eq!(h.max(), h.highest_equivalent(4000));

    assert_eq!(
        store.metric_series(run_id, "os.cpu.user_pct").unwrap(),
        vec![(1000.0, 10.0), (1001.0, 20.0)]
    );
    assert_eq!(
        store.metric_names(run_id).unwrap(),
        vec![
            "os.cpu.user_pct".to_string(),
            "pg.db.xact_commit_per_s".to_string()
        ]
    );
    assert_eq!(store.metrics_info().unwrap().len(), 1);
    assert_eq!(store.servers().unwrap()[0].record.cpu_count, Some(2));
    assert_eq!(store.targets(set.id).unwrap().len(), 1);
    assert_eq!(store.warnings(Some(set.id)).unwrap().len(), 1);
    assert_eq!(
        store.stored_tests(set.id).unwrap(),
        vec![("t1".to_string(), "ok".to_string())]
    );
    let found = store
        .find_set(set_kind::CAMPAIGN, "campaign-a", "abc123")
        .unwrap()
        .expect("set found by hash");
    assert_eq!(found.id, set.id);
    assert!(store
        .find_set(set_kind::CAMPAIGN, "campaign-a", "other")
        .unwrap()
        .is_none());
    store
        .set_set_status(
            set.id,
            set_status::COMPLETE,
            Some("2026-01-01T00:00:00.000Z"),
        )
        .unwrap();
    assert_eq!(store.set(set.id).unwrap().record.status, "complete");
    // Upserting the same server name updates in place.
    let again = store
        .upsert_server(&ServerRecord {
            name: "box1".into(),
            cpu_count: Some(4),
            ..Default::default()
        })
        .unwrap();
    assert_eq!(store.servers().unwrap().len(), 1);
    assert_eq!(store.servers().unwrap()[0].id, again);
    assert_eq!(store.servers().unwrap()[0].record.cpu_count, Some(4));
    run_id
}

fn sample_set_with_time(stored: &SetRecord) -> SetRecord {
    SetRecord {
        created_at: stored.created_at.clone(),
        ..sample_set()
    }
}

pub fn duplicate_and_atomicity(store: &mut Store) {
    let run_id = write_sample(store);
    let set_id = store.run(run_id).unwrap().record.set_id;
    let err = store
        .write_run(&sample_run(set_id, None, "t1"))
        .unwrap_err();
    assert!(matches!(err, StoreError::DuplicateTest { .. }), "{err}");

    // A run whose child rows violate the schema (duplicate interval key) is not stored
    // at all: no runs row, no metrics.
    let mut bad = sample_run(set_id, None, "t-bad");
    bad.intervals.push(bad.intervals[0].clone());
    assert!(store.write_run(&bad).is_err());
    let keys: Vec<String> = store
        .stored_tests(set_id)
        .unwrap()
        .into_iter()
        .map(|(k, _)| k)
        .collect();
    assert_eq!(keys, vec!["t1".to_string()]);
    let orphan_metrics = store
        .query(
            "SELECT count(*) FROM run_metrics WHERE run_id NOT IN (SELECT id FROM runs)",
            &[],
        )
        .unwrap();
    assert_eq!(orphan_metrics[0].read::<i64>(0, "count").unwrap(), 0);

    // Replacing a failed test keeps one row for the key.
    let mut failed = sample_run(set_id, None, "t3");
    failed.run.status = run_status::FAILED.into();
    failed.run.error = Some("connection refused".into());
    store.write_run(&failed).unwrap();
    let ok = sample_run(set_id, None, "t3");
    let new_id = store.write_run_replacing(&ok).unwrap();
    let t3: Vec<_> = store
        .stored_tests(set_id)
        .unwrap()
        .into_iter()
        .filter(|(k, _)| k == "t3")
        .collect();
    assert_eq!(t3, vec![("t3".to_string(), "ok".to_string())]);
    assert_eq!(store.load_run(new_id).unwrap().metrics.len(), 4);

    store.delete_set(set_id).unwrap();
    assert!(store.list_sets().unwrap().is_empty());
    let left = store
        .query("SELECT count(*) FROM run_metrics", &[])
        .unwrap();
    assert_eq!(left[0].read::<i64>(0, "count").unwrap(), 0);
}

/// Eight connections open a store that does not exist yet at the same moment: every
/// one succeeds (the schema is created once) and sees the newest version.
pub fn concurrent_first_open(location: &str) {
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(8));
    let handles: Vec<_> = (0..8)
        .map(|_| {
            let b = barrier.clone();
            let loc = location.to_string();
            std::thread::spawn(move || {
                b.wait();
                Store::open(&loc).map(|mut s| s.schema_version().unwrap())
            })
        })
        .collect();
    for h in handles {
        match h.join().unwrap() {
            Ok(v) => assert_eq!(v, SCHEMA_VERSION),
            Err(e) => panic!("concurrent open failed: {e}"),
        }
    }
}

/// Claims: the second claim of a held set is refused with the holder named; after the
/// holder releases, the set is claimed again (the same set, not a new one); two
/// claims racing for a set that does not exist yet create it once.
pub fn set_locks(location: &str) {
    let mut a = Store::open(location).unwrap();
    let mut b = Store::open(location).unwrap();
    let record = sample_set();
    let (id, lock) = a.claim_set(&record, false).unwrap();
    let err = b.claim_set(&record, false).unwrap_err();
    match &err {
        StoreError::SetBusy { set_id, holder } => {
            assert_eq!(*set_id, id);
            assert_eq!(holder.pid, i64::from(std::process::id()));
            assert!(holder.is_alive());
        }
        other => panic!("expected SetBusy, got {other}"),
    }
    let text = err.to_string();
    assert!(text.contains("being run by another campaign"), "{text}");
    assert_eq!(a.set_lock_holder(id).unwrap().unwrap().host, this_host());
    lock.release();
    assert_eq!(b.set_lock_holder(id).unwrap(), None);
    let (again, lock_b) = b.claim_set(&record, false).unwrap();
    assert_eq!(again, id);
    // --new: a new set, locked apart from the first.
    let (other, lock_new) = a.claim_set(&record, true).unwrap();
    assert_ne!(other, id);
    drop(lock_b);
    drop(lock_new);

    // A lock left by a process that no longer exists is taken over.
    let mut record2 = sample_set();
    record2.name = "campaign-stale".into();
    let (sid, l) = a.claim_set(&record2, false).unwrap();
    std::mem::forget(l); // as if killed: the row stays
    a.query(
        "UPDATE set_locks SET pid = ? WHERE set_id = ?",
        &[Value::Int(i64::from(i32::MAX)), Value::Int(sid)],
    )
    .unwrap();
    let (taken, _l2) = b.claim_set(&record2, false).unwrap();
    assert_eq!(taken, sid);

    // Two claims at once for a set nobody created yet: one set, one holder.
    let mut record3 = sample_set();
    record3.name = "campaign-race".into();
    let barrier = std::sync::Arc::new(std::sync::Barrier::new(4));
    let tried = std::sync::Arc::new(std::sync::Barrier::new(4));
    let handles: Vec<_> = (0..4)
        .map(|_| {
            let bar = barrier.clone();
            let tried = tried.clone();
            let loc = location.to_string();
            let rec = record3.clone();
            std::thread::spawn(move || {
                let mut s = Store::open(&loc).unwrap();
                bar.wait();
                let r = s.claim_set(&rec, false);
                // Hold the lock until every thread has tried.
                tried.wait();
                r.map(|(id, lock)| {
                    drop(lock);
                    id
                })
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let won: Vec<i64> = results
        .iter()
        .filter_map(|r| r.as_ref().ok().copied())
        .collect();
    assert_eq!(won.len(), 1, "exactly one claim wins: {results:?}");
    for r in &results {
        if let Err(e) = r {
            assert!(
                matches!(e, StoreError::SetBusy { set_id, .. } if *set_id == won[0]),
                "{e}"
            );
        }
    }
    let sets = a.list_sets().unwrap();
    assert_eq!(
        sets.iter()
            .filter(|s| s.record.name == "campaign-race")
            .count(),
        1
    );
}

/// Writes made inside `all_or_nothing` are all kept when it returns Ok and all gone
/// when it returns Err or a write in it fails; a nested call joins the outer one.
pub fn all_or_nothing(store: &mut Store) {
    let failed = store
        .all_or_nothing(|s| {
            let set_id = s.create_set(&sample_set())?;
            s.write_run(&sample_run(set_id, None, "t1"))?;
            s.all_or_nothing(|s| s.write_run(&sample_run(set_id, None, "t2")))??;
            Err::<(), StoreError>(StoreError::BadValue {
                column: "test".into(),
                message: "the caller gave up".into(),
            })
        })
        .unwrap();
    assert!(failed.is_err());
    assert!(store.list_sets().unwrap().is_empty());
    assert!(store.list_runs(&RunFilter::default()).unwrap().is_empty());

    // A failing write (a duplicate test key) rolls back the writes before it.
    let duplicate = store
        .all_or_nothing(|s| {
            let set_id = s.create_set(&sample_set())?;
            s.write_run(&sample_run(set_id, None, "t1"))?;
            s.write_run(&sample_run(set_id, None, "t1"))
        })
        .unwrap();
    assert!(
        matches!(duplicate, Err(StoreError::DuplicateTest { .. })),
        "{duplicate:?}"
    );
    assert!(store.list_sets().unwrap().is_empty());

    let set_id = store
        .all_or_nothing(|s| {
            let set_id = s.create_set(&sample_set())?;
            s.write_run(&sample_run(set_id, None, "t1"))?;
            s.write_run(&sample_run(set_id, None, "t2"))?;
            Ok::<i64, StoreError>(set_id)
        })
        .unwrap()
        .unwrap();
    assert_eq!(store.stored_tests(set_id).unwrap().len(), 2);
    // The store writes on its own again afterwards.
    store.write_run(&sample_run(set_id, None, "t3")).unwrap();
    assert_eq!(store.stored_tests(set_id).unwrap().len(), 3);
}

/// Live events: kept in order with their passwords masked, read after an id, a
/// test's seconds forgotten when asked, a set's all when it starts again or is
/// deleted; the newest set with events is found.
pub fn live_events(store: &mut Store) {
    assert!(store.keeps_live_events());
    assert_eq!(store.newest_live_set().unwrap(), None);
    let set = store.create_set(&sample_set()).unwrap();
    let body = |n: i64| serde_json::json!({"n": n, "line": "host=h password=live-secret"});
    store
        .add_live_event(set, "test_started", Some("t/1"), &body(1))
        .unwrap();
    for n in 2..=4 {
        store
            .add_live_event(set, INTERVAL_KIND, Some("t/1"), &body(n))
            .unwrap();
    }
    store.add_live_event(set, "said", None, &body(5)).unwrap();
    let all = store.live_events(set, 0).unwrap();
    let ns: Vec<i64> = all
        .iter()
        .map(|e| {
            serde_json::from_str::<serde_json::Value>(&e.body).unwrap()["n"]
                .as_i64()
                .unwrap()
        })
        .collect();
    assert_eq!(ns, [1, 2, 3, 4, 5]);
    assert!(
        all.iter().all(|e| !e.body.contains("live-secret")),
        "{all:?}"
    );
    assert_eq!(
        store.live_events(set, all[2].id).unwrap(),
        all[3..].to_vec()
    );
    assert_eq!(store.newest_live_set().unwrap(), Some(set));

    store.clear_live_seconds(set, "t/1").unwrap();
    let left = store.live_events(set, 0).unwrap();
    assert_eq!(left, vec![all[0].clone(), all[4].clone()]);
    store.clear_live_events(set).unwrap();
    assert!(store.live_events(set, 0).unwrap().is_empty());

    store.add_live_event(set, "said", None, &body(6)).unwrap();
    store.delete_set(set).unwrap();
    assert_eq!(store.newest_live_set().unwrap(), None);
}
