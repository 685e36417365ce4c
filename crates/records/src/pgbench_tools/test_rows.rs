//! One pgbench-tools test: its `tests` row and details as read, what its `results.txt`
//! supplies where the row holds NULL, the values no test can have, and the run it is
//! stored as.

use std::collections::BTreeMap;
use std::path::Path;

use pgsurge_store::{
    epoch_to_rfc3339, facts, run_status, CounterRecord, FactRecord, IntervalRecord, MetricSample,
    RunRecord, RunWrite, SettingRecord,
};

/// One row of `tests`, as read.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestRow {
    /// `server`.
    pub server: String,
    /// `test`.
    pub test: i64,
    /// `set`.
    pub set: i64,
    /// `scale`.
    pub scale: Option<i64>,
    /// `dbsize`, bytes.
    pub dbsize: Option<i64>,
    /// `start_time`, epoch seconds.
    pub start: Option<f64>,
    /// `end_time`, epoch seconds.
    pub end: Option<f64>,
    /// `tps`.
    pub tps: Option<f64>,
    /// `script`.
    pub script: String,
    /// `clients`.
    pub clients: Option<i64>,
    /// `workers`.
    pub workers: Option<i64>,
    /// `trans`.
    pub trans: Option<i64>,
    /// `avg_latency`, ms.
    pub avg_latency: Option<f64>,
    /// `max_latency`, ms.
    pub max_latency: Option<f64>,
    /// `percentile_90_latency`, ms.
    pub p90_latency: Option<f64>,
    /// `wal_written`, bytes.
    pub wal_written: Option<i64>,
    /// `cleanup`, seconds.
    pub cleanup_s: Option<f64>,
    /// `rate_limit`, total tps.
    pub rate_limit: Option<f64>,
    /// `client_limit`, tps per client (0 = none).
    pub client_limit: Option<f64>,
    /// `multi`.
    pub multi: Option<f64>,
    /// `server_version` (the `version()` text).
    pub server_version: Option<String>,
    /// `server_mem_gb`.
    pub server_mem_gb: Option<i64>,
    /// `server_cpu`.
    pub server_cpu: Option<String>,
    /// `server_os_release`.
    pub server_os_release: Option<String>,
    /// `conn_method` (`host`, `sockets`, with ` prepared` when `-M prepared`).
    pub conn_method: Option<String>,
    /// `uname`.
    pub uname: Option<String>,
    /// `server_disk`.
    pub server_disk: Option<String>,
    /// `artifacts` (JSON).
    pub artifacts: Option<serde_json::Value>,
}

impl TestRow {
    /// An initialization test (`:-i …`), not a benchmark run.
    pub fn is_init(&self) -> bool {
        self.script.starts_with(':')
    }

    /// The script's name in the store: the pgsurge built-in it equals, or its own.
    pub fn workload(&self) -> String {
        builtin_of(&self.script)
            .map(str::to_string)
            .unwrap_or_else(|| self.script.clone())
    }

    /// `prepared` when the test ran with `-M prepared` (PREPARED=1), else `simple`.
    pub fn query_mode(&self) -> &'static str {
        match &self.conn_method {
            Some(m) if m.split_whitespace().any(|w| w == "prepared") => "prepared",
            _ => "simple",
        }
    }

    /// The test's key in its set: target, scale, workload, clients, rate, then the
    /// pgbench-tools test number (unique in the set).
    pub fn key(&self) -> String {
        let rate = match self.rate_limit {
            Some(r) => format!("r{}", trim(r)),
            None => "r-".into(),
        };
        format!(
            "{}/s{}/{}/c{}/{rate}/t{}",
            self.server,
            self.scale.unwrap_or(0),
            self.workload(),
            self.clients.unwrap_or(0),
            self.test
        )
    }
}

fn trim(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// The pgsurge built-in a pgbench-tools test script is the same transaction as:
/// `tests/select.sql` is pgbench's `select-only`, `tests/tpc-b.sql` its `tpcb-like`,
/// `tests/nobranch.sql` its `simple-update`. Other names are kept.
pub fn builtin_of(script: &str) -> Option<&'static str> {
    let base = script.rsplit('/').next().unwrap_or(script);
    let base = base.strip_suffix(".sql").unwrap_or(base);
    match base {
        "select" => Some("select-only"),
        "tpc-b" => Some("tpcb-like"),
        "nobranch" => Some("simple-update"),
        _ => None,
    }
}

/// What a test's `results.txt` (pgbench's report, in `results/<server>/<test>/`)
/// supplies where the database holds NULL.
pub(super) fn fill_from_results(row: &mut TestRow, dir: &Path) -> Result<bool, String> {
    // The server name comes from the database: as a directory name it must stay one
    // directory below `dir`.
    let plain_name = !row.server.is_empty()
        && !row.server.contains(['/', '\\'])
        && row.server != "."
        && row.server != "..";
    let mut candidates = Vec::new();
    if plain_name {
        candidates.push(dir.join(&row.server).join(row.test.to_string()));
    }
    candidates.push(dir.join(row.test.to_string()));
    let Some(path) = candidates
        .iter()
        .map(|d| d.join("results.txt"))
        .find(|p| p.is_file())
    else {
        return Ok(false);
    };
    let text =
        std::fs::read_to_string(&path).map_err(|e| format!("reading {}: {e}", path.display()))?;
    let Some(report) = crate::import::parse_report(&text) else {
        return Ok(false);
    };
    report
        .check()
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut filled = false;
    if row.tps.is_none() {
        row.tps = report.tps;
        filled |= row.tps.is_some();
    }
    if row.trans.is_none() {
        row.trans = report.transactions;
        filled |= row.trans.is_some();
    }
    if row.avg_latency.is_none() {
        row.avg_latency = report.latency_mean_ms;
        filled |= row.avg_latency.is_some();
    }
    Ok(filled)
}

/// Everything read about one test beside its `tests` row.
#[derive(Debug, Clone, Default)]
pub struct TestDetails {
    /// `test_bgwriter` and `test_stat_database` as counters (deltas over the test).
    pub counters: Vec<CounterRecord>,
    /// `test_statio` and `test_metrics_data` as samples.
    pub metrics: Vec<MetricSample>,
    /// `test_settings` whose source is not `default`.
    pub settings: Vec<SettingRecord>,
    /// `timing`: (epoch seconds, latency ms).
    pub timing: Vec<(f64, f64)>,
}

/// Above this a rate is not a measurement: no PostgreSQL server commits a billion
/// transactions a second.
const MAX_TPS: f64 = 1e9;

/// Above this a latency is not a measurement (about 116 days, in ms).
const MAX_LATENCY_MS: f64 = 1e10;

/// The values of a benchmark test that no test can have — a rate or latency that is
/// not a finite number, is negative or beyond [`MAX_TPS`] / [`MAX_LATENCY_MS`], a
/// negative count or size — as `column = value` texts (empty when there is none).
pub fn impossible_values(t: &TestRow) -> Vec<String> {
    let reals = [
        ("tps", t.tps, MAX_TPS),
        ("avg_latency", t.avg_latency, MAX_LATENCY_MS),
        ("max_latency", t.max_latency, MAX_LATENCY_MS),
        ("percentile_90_latency", t.p90_latency, MAX_LATENCY_MS),
        ("rate_limit", t.rate_limit, MAX_TPS),
        ("client_limit", t.client_limit, MAX_TPS),
        ("cleanup", t.cleanup_s, MAX_LATENCY_MS / 1000.0),
    ];
    let counts = [
        ("scale", t.scale),
        ("dbsize", t.dbsize),
        ("clients", t.clients),
        ("workers", t.workers),
        ("trans", t.trans),
        ("wal_written", t.wal_written),
    ];
    let mut out: Vec<String> = reals
        .iter()
        .filter_map(|(name, v, max)| {
            v.filter(|v| !(v.is_finite() && *v >= 0.0 && v <= max))
                .map(|v| match v.abs() >= 1e15 && v.is_finite() {
                    true => format!("{name} = {v:e}"),
                    false => format!("{name} = {v}"),
                })
        })
        .collect();
    out.extend(
        counts
            .iter()
            .filter_map(|(name, v)| v.filter(|v| *v < 0).map(|v| format!("{name} = {v}"))),
    );
    out
}

/// Per-second intervals from pgbench-tools' `timing` rows (one per transaction).
pub fn intervals_from_timing(start: Option<f64>, timing: &[(f64, f64)]) -> Vec<IntervalRecord> {
    let mut by_second: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
    for (ts, lat) in timing {
        by_second.entry(ts.floor() as i64).or_default().push(*lat);
    }
    let first = by_second.keys().next().copied().unwrap_or(0) as f64;
    let origin = start.map(f64::floor).unwrap_or(first);
    by_second
        .into_iter()
        .map(|(sec, lats)| {
            let n = lats.len() as i64;
            let sum: f64 = lats.iter().sum();
            IntervalRecord {
                ts: sec as f64,
                elapsed_s: sec as f64 - origin,
                duration_s: 1.0,
                warmup: false,
                transactions: n,
                tps: n as f64,
                latency_mean_ms: Some(sum / n as f64),
                latency_min_ms: lats.iter().copied().reduce(f64::min),
                latency_max_ms: lats.iter().copied().reduce(f64::max),
                ..Default::default()
            }
        })
        .collect()
}

/// The run of one benchmark test; `init` is the initialization test it follows, if
/// it is the first run after one.
pub fn to_run_write(
    set_id: i64,
    target_id: i64,
    repeat_no: i64,
    row: &TestRow,
    details: TestDetails,
    init: Option<&TestRow>,
) -> RunWrite {
    let duration = match (row.start, row.end) {
        (Some(a), Some(b)) if b >= a => Some(b - a),
        _ => None,
    };
    let commits = details
        .counters
        .iter()
        .find(|c| c.name == "pg_stat_database.xact_commit")
        .and_then(|c| c.delta)
        .map(|v| v as i64);
    let rollbacks = details
        .counters
        .iter()
        .find(|c| c.name == "pg_stat_database.xact_rollback")
        .and_then(|c| c.delta)
        .map(|v| v as i64);
    let commit_mismatch_pct = match (commits, row.trans) {
        (Some(s), Some(c)) if c > 0 => Some(100.0 * (s - c).abs() as f64 / c as f64),
        _ => None,
    };
    let run = RunRecord {
        set_id,
        target_id: Some(target_id),
        test_key: row.key(),
        seq: Some(row.test),
        repeat_no,
        status: run_status::IMPORTED.into(),
        started_at: row.start.map(epoch_to_rfc3339),
        finished_at: row.end.map(epoch_to_rfc3339),
        start_epoch: row.start,
        end_epoch: row.end,
        script: Some(row.workload()),
        options: Some(serde_json::json!({
            "imported_from": "pgbench-tools",
            "pgbench_tools": {
                "server": row.server,
                "set": row.set,
                "test": row.test,
                "script": row.script,
                "multi": row.multi,
                "client_limit": row.client_limit,
                "conn_method": row.conn_method,
                "artifacts": row.artifacts,
            }
        })),
        scale: row.scale,
        clients: row.clients,
        threads: row.workers,
        rate: row.rate_limit,
        rate_per_client: row.client_limit.filter(|l| *l > 0.0),
        duration_s: duration,
        query_mode: Some(row.query_mode().into()),
        warmup_s: Some(0.0),
        server_version: row.server_version.clone(),
        measured_s: duration,
        tps: row.tps,
        transactions: row.trans,
        latency_mean_ms: row.avg_latency,
        latency_p90_ms: row.p90_latency,
        latency_max_ms: row.max_latency,
        server_commits: commits,
        server_rollbacks: rollbacks,
        commit_mismatch_pct,
        wal_bytes: row.wal_written,
        db_size_start: row.dbsize,
        cleanup_s: row.cleanup_s,
        ..Default::default()
    };
    let mut facts_out = Vec::new();
    if let Some(init) = init {
        let method = if init.script.contains('G') {
            "server"
        } else {
            "client"
        };
        facts_out.push(FactRecord::new(facts::INIT_PERFORMED, "true"));
        facts_out.push(FactRecord::new(facts::INIT_METHOD, method));
        if let (Some(a), Some(b)) = (init.start, init.end) {
            facts_out.push(FactRecord::new(
                facts::INIT_DURATION_S,
                format!("{:.3}", (b - a).max(0.0)),
            ));
        }
        facts_out.push(FactRecord::new(
            facts::INIT_REASON,
            format!(
                "pgbench-tools initialization test {} (pgbench {}) at scale {}",
                init.test,
                init.script.trim_start_matches(':'),
                init.scale.unwrap_or(0)
            ),
        ));
    }
    RunWrite {
        intervals: intervals_from_timing(row.start, &details.timing),
        run,
        metrics: details.metrics,
        counters: details.counters,
        settings: details.settings,
        facts: facts_out,
        ..Default::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_scripts_map_to_pgsurge_names_and_others_are_kept() {
        assert_eq!(builtin_of("select"), Some("select-only"));
        assert_eq!(builtin_of("tpc-b"), Some("tpcb-like"));
        assert_eq!(builtin_of("nobranch"), Some("simple-update"));
        assert_eq!(builtin_of("insert"), None);
        let t = TestRow {
            server: "db1".into(),
            test: 7,
            set: 2,
            scale: Some(10),
            script: "update".into(),
            clients: Some(4),
            rate_limit: Some(500.0),
            conn_method: Some("host prepared".into()),
            ..Default::default()
        };
        assert_eq!(t.key(), "db1/s10/update/c4/r500/t7");
        assert_eq!(t.query_mode(), "prepared");
        assert!(!t.is_init());
        assert!(TestRow {
            script: ":-i -I dtGvp".into(),
            ..Default::default()
        }
        .is_init());
    }

    #[test]
    fn timing_rows_become_per_second_intervals() {
        let timing = [(100.2, 1.0), (100.7, 3.0), (101.1, 2.0), (103.9, 4.0)];
        let iv = intervals_from_timing(Some(100.05), &timing);
        assert_eq!(iv.len(), 3);
        assert_eq!(
            (iv[0].ts, iv[0].elapsed_s, iv[0].transactions),
            (100.0, 0.0, 2)
        );
        assert_eq!(iv[0].latency_mean_ms, Some(2.0));
        assert_eq!(iv[0].latency_max_ms, Some(3.0));
        assert_eq!((iv[2].elapsed_s, iv[2].transactions), (3.0, 1));
    }

    #[test]
    fn a_null_tps_is_read_from_the_results_file() {
        let dir = pgsurge_testkit::scratch_dir("pgbt-fill");
        let d = dir.path().join("db1").join("12");
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("results.txt"),
            "transaction type: tests/select.sql\nscaling factor: 1\nquery mode: simple\n\
             number of clients: 2\nnumber of threads: 2\nduration: 5 s\n\
             number of transactions actually processed: 1000\nlatency average = 9.5 ms\n\
             tps = 200.5 (without initial connection time)\n",
        )
        .unwrap();
        let mut row = TestRow {
            server: "db1".into(),
            test: 12,
            trans: Some(1000),
            ..Default::default()
        };
        assert_eq!(fill_from_results(&mut row, dir.path()), Ok(true));
        assert_eq!(row.tps, Some(200.5));
        assert_eq!(row.avg_latency, Some(9.5));
        let mut other = TestRow {
            server: "db1".into(),
            test: 13,
            ..Default::default()
        };
        assert_eq!(fill_from_results(&mut other, dir.path()), Ok(false));
        assert_eq!(other.tps, None);
    }
}
