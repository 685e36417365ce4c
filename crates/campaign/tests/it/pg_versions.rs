//! The observers' version-dependent statistics (pg_stat_bgwriter vs pg_stat_checkpointer in
//! 17+, pg_stat_io in 16+, pg_stat_wal, pg_stat_database, pg_stat_activity), the
//! statistics reset and the server manifest, against live PostgreSQL 16, 17 and 18
//! servers that the campaign itself starts from fetched binaries (cached under
//! `pgsurge_server::fetch::cache_root()`: about 60 MB and 4 s per version on a first
//! run, nothing after).
//!
//! One campaign with a throwaway target per version runs a short tpcb-like test on
//! each, with the samplers on; every metric family must be present with plausible
//! values, and no sampler query may have failed (a failing query becomes a "sampler"
//! warning, which this test refuses).

use std::collections::BTreeMap;

use pgsurge_campaign::{run_campaign, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_store::{RunFilter, Store};

const VERSIONS: [u32; 3] = [16, 17, 18];

fn campaign_text() -> String {
    let mut s = String::from(
        r#"
[campaign]
name = "versions"
seed = 5

[matrix]
scales = [1]
clients = [2]
scripts = ["tpcb-like"]

[run]
duration = 2

[sampling]
interval = 0.5
"#,
    );
    for v in VERSIONS {
        s.push_str(&format!(
            "\n[[target]]\nname = \"pg{v}\"\npg_version = \"{v}\"\nsettings = {{ track_io_timing = \"on\", track_wal_io_timing = \"on\" }}\n"
        ));
    }
    s
}

/// Values of `metric` over the run.
fn series<'a>(metrics: &'a BTreeMap<String, Vec<f64>>, metric: &str, v: u32) -> &'a [f64] {
    metrics
        .get(metric)
        .unwrap_or_else(|| {
            panic!(
                "PostgreSQL {v}: metric {metric} missing; have {:?}",
                metrics.keys().collect::<Vec<_>>()
            )
        })
        .as_slice()
}

#[test]
fn statistics_views_and_manifest_on_postgresql_16_17_18() {
    let campaign =
        Campaign::parse(&campaign_text(), "versions.toml", std::path::Path::new(".")).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign(&campaign, &mut store, &opts, &StopFlag::new()).unwrap();
    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(out.set_id),
            ..Default::default()
        })
        .unwrap();
    for r in &runs {
        assert_eq!(
            r.record.status, "ok",
            "{}: {:?}",
            r.record.test_key, r.record.error
        );
    }
    assert_eq!((out.ok, out.failed), (3, 0), "{out:?}");
    let warnings = store.warnings(Some(out.set_id)).unwrap();
    let sampler: Vec<&str> = warnings
        .iter()
        .filter(|w| w.record.code == "sampler")
        .map(|w| w.record.message.as_str())
        .collect();
    assert!(sampler.is_empty(), "sampler queries failed: {sampler:?}");

    for v in VERSIONS {
        let run = runs
            .iter()
            .find(|r| r.record.test_key.starts_with(&format!("pg{v}/")))
            .unwrap_or_else(|| panic!("no test on pg{v}"));
        let full = store.load_run(run.id).unwrap();
        let rec = &full.run.record;
        assert_eq!(rec.server_version_num.unwrap() / 10000, i64::from(v));

        // Per-second samples: every family, plausible values.
        let mut metrics: BTreeMap<String, Vec<f64>> = BTreeMap::new();
        for m in &full.metrics {
            assert!(m.value.is_finite() && m.value >= 0.0, "pg{v}: {m:?}");
            metrics.entry(m.metric.clone()).or_default().push(m.value);
        }
        let positive = |name: &str| {
            let s = series(&metrics, name, v);
            assert!(
                s.iter().any(|x| *x > 0.0),
                "pg{v}: {name} never moved: {s:?}"
            );
        };
        let present = |name: &str| {
            series(&metrics, name, v);
        };
        // pg_stat_database
        for m in [
            "pg.db.xact_commit_per_s",
            "pg.db.blks_hit_per_s",
            "pg.db.tup_updated_per_s",
            "pg.db.tup_inserted_per_s",
        ] {
            positive(m);
        }
        for m in [
            "pg.db.xact_rollback_per_s",
            "pg.db.deadlocks_per_s",
            "pg.db.temp_bytes_per_s",
        ] {
            present(m);
        }
        // Checkpointer and background writer (one view before 17, two from 17).
        for m in [
            "pg.checkpointer.timed_per_s",
            "pg.checkpointer.requested_per_s",
            "pg.checkpointer.buffers_written_per_s",
            "pg.checkpointer.write_time_ms_per_s",
            "pg.checkpointer.sync_time_ms_per_s",
            "pg.bgwriter.buffers_clean_per_s",
            "pg.bgwriter.maxwritten_clean_per_s",
        ] {
            present(m);
        }
        positive("pg.bgwriter.buffers_alloc_per_s");
        assert_eq!(
            metrics.contains_key("pg.checkpointer.done_per_s"),
            v >= 18,
            "pg{v}: pg_stat_checkpointer.num_done is new in 18"
        );
        assert_eq!(
            metrics.contains_key("pg.bgwriter.buffers_backend_per_s"),
            v < 17,
            "pg{v}: buffers_backend is in pg_stat_bgwriter before 17 only"
        );
        // WAL: pg_stat_wal and the insert position.
        for m in [
            "pg.wal.records_per_s",
            "pg.wal.bytes_per_s",
            "pg.wal.lsn_bytes_per_s",
        ] {
            positive(m);
        }
        for m in ["pg.wal.fpi_per_s", "pg.wal.buffers_full_per_s"] {
            present(m);
        }
        // pg_stat_io (16+).
        positive("pg.io.hits_per_s");
        for m in [
            "pg.io.reads_per_s",
            "pg.io.writes_per_s",
            "pg.io.extends_per_s",
            "pg.io.evictions_per_s",
            "pg.io.fsyncs_per_s",
        ] {
            present(m);
        }
        // Gauges: database size and the benchmark's backends.
        let size = series(&metrics, "pg.db.size_bytes", v);
        assert!(
            size.iter().all(|s| *s > 10e6 && *s < 1e9),
            "pg{v}: size {size:?}"
        );
        let backends: f64 = metrics
            .iter()
            .filter(|(k, _)| k.starts_with("pg.backends.state."))
            .map(|(_, s)| s.iter().cloned().fold(0.0, f64::max))
            .fold(0.0, f64::max);
        assert!(
            (1.0..=4.0).contains(&backends),
            "pg{v}: client backends by state: {:?}",
            metrics
                .keys()
                .filter(|k| k.starts_with("pg.backends."))
                .collect::<Vec<_>>()
        );

        // Counters snapshotted before and after: every family, deltas that fit the run.
        let counter = |name: &str| {
            full.counters
                .iter()
                .find(|c| c.name == name)
                .unwrap_or_else(|| {
                    panic!(
                        "pg{v}: counter {name} missing from {:?}",
                        full.counters.iter().map(|c| &c.name).collect::<Vec<_>>()
                    )
                })
                .delta
                .unwrap()
        };
        let n = rec.transactions.unwrap() as f64;
        let commits = counter("pg.db.xact_commit");
        assert!(
            (commits - n).abs() <= n * 0.05 + 5.0,
            "pg{v}: {commits} commits for {n} transactions"
        );
        // The per-second series carry the counters.
        let what = format!("pg{v}");
        for (series, total) in [
            ("pg.db.xact_commit_per_s", "pg.db.xact_commit"),
            ("pg.wal.bytes_per_s", "pg.wal.bytes"),
        ] {
            crate::series::assert_carries(&full.metrics, series, counter(total), &what);
        }
        // Every tpcb-like transaction writes WAL records of its three updates and insert.
        let wal = counter("pg.wal.bytes");
        assert!(
            wal > 100.0 * n && wal < 1e6 * n,
            "pg{v}: {wal} bytes of WAL for {n} transactions"
        );
        assert!(counter("pg.wal.records") >= n, "pg{v}: WAL records");
        assert!(counter("pg.wal.lsn_bytes") >= counter("pg.wal.bytes") * 0.5);
        assert!(counter("pg.io.hits") > n, "pg{v}: pg_stat_io hits");
        assert!(counter("pg.checkpointer.requested") >= 0.0);
        assert!(counter("pg.bgwriter.buffers_alloc") >= 0.0);

        // The manifest: version, build options, settings.
        let env = full.environment.as_ref().expect("manifest");
        let server = &env["server"];
        let version = server["version"].as_str().unwrap_or_default();
        assert!(
            version.starts_with(&format!("PostgreSQL {v}.")),
            "pg{v}: version() = {version:?}"
        );
        assert_eq!(
            server["version_num"].as_i64().unwrap() / 10000,
            i64::from(v)
        );
        assert!(
            server["pg_config"]["VERSION"]
                .as_str()
                .is_some_and(|s| s.starts_with(&format!("PostgreSQL {v}."))),
            "pg{v}: pg_config {:?}",
            server["pg_config"]
        );
        assert!(server["pg_config"]["CONFIGURE"].as_str().is_some());
        assert!(server["data_directory"]
            .as_str()
            .is_some_and(|d| !d.is_empty()));
        assert_eq!(
            server["non_default_settings"]["track_io_timing"].as_str(),
            Some("on"),
            "pg{v}: {:?}",
            server["non_default_settings"]
        );
        assert!(full
            .settings
            .iter()
            .any(|s| s.name == "track_wal_io_timing" && s.setting.as_deref() == Some("on")));
    }
}
