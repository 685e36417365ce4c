//! `pgsurge results import --from pgbench-tools`: a pgbench-tools results database
//! (its `testset`, `tests`, `test_bgwriter`, `test_stat_database`, `test_statio`,
//! `test_settings`, `timing` and `test_metrics_data` tables) into the store.
//!
//! Every testset becomes a set of kind `import`, every benchmark test a run of it;
//! the initialization tests (a script beginning with `:`, such as `:-i -I dtGvp`)
//! become the initialization facts of the first run after them. The schema is
//! checked before anything is read: a column this module does not know (a newer
//! pgbench-tools) or a column it needs that is missing is refused, naming both table
//! and column. A set already imported from the same database is found again by its
//! identity, and its tests already stored are not written twice.
//!
//! An import is all or nothing: every row is read and checked before the first write,
//! and the writes go to the store in one transaction. A row that cannot be imported is
//! left out and named, never dropped without a word.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use pgsurge_store::{
    epoch_to_rfc3339, facts, now_rfc3339, run_status, set_kind, set_status, CounterRecord,
    FactRecord, IntervalRecord, MetricSample, RunRecord, RunWrite, ServerRecord, SetRecord,
    SettingRecord, Store, TargetRecord, WarningRecord,
};

/// Whether a known column must be present for the import to make sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Need {
    Required,
    Optional,
}
use Need::{Optional, Required};

/// The tables read, and whether the table itself must exist.
const TABLES: &[(&str, Need)] = &[
    ("testset", Required),
    ("tests", Required),
    ("test_bgwriter", Optional),
    ("test_stat_database", Optional),
    ("test_statio", Optional),
    ("test_settings", Optional),
    ("timing", Optional),
    ("test_metrics_data", Optional),
];

/// Every column of the pgbench-tools schema this import knows, per table. Columns
/// marked optional are missing in older pgbench-tools versions and read as NULL.
const COLUMNS: &[(&str, &[(&str, Need)])] = &[
    (
        "testset",
        &[
            ("server", Required),
            ("set", Required),
            ("info", Optional),
            ("category", Optional),
        ],
    ),
    (
        "tests",
        &[
            ("server", Required),
            ("test", Required),
            ("set", Required),
            ("scale", Required),
            ("dbsize", Optional),
            ("start_time", Required),
            ("end_time", Required),
            ("tps", Required),
            ("script", Required),
            ("clients", Required),
            ("workers", Required),
            ("trans", Required),
            ("avg_latency", Required),
            ("max_latency", Optional),
            ("percentile_90_latency", Optional),
            ("wal_written", Optional),
            ("cleanup", Optional),
            ("rate_limit", Optional),
            ("start_latency", Optional),
            ("end_latency", Optional),
            ("trans_latency", Optional),
            ("server_version", Optional),
            ("client_limit", Optional),
            ("multi", Optional),
            ("artifacts", Optional),
            ("server_mem_gb", Optional),
            ("server_cpu", Optional),
            ("server_os_release", Optional),
            ("conn_method", Optional),
            ("uname", Optional),
            ("server_disk", Optional),
        ],
    ),
    (
        "test_bgwriter",
        &[
            ("test", Required),
            ("checkpoints_timed", Optional),
            ("checkpoints_req", Optional),
            ("buffers_checkpoint", Optional),
            ("buffers_clean", Optional),
            ("maxwritten_clean", Optional),
            ("buffers_backend", Optional),
            ("buffers_alloc", Optional),
            ("buffers_backend_fsync", Optional),
            ("max_dirty", Optional),
            ("server", Required),
        ],
    ),
    (
        "test_stat_database",
        &[
            ("test", Required),
            ("collected", Optional),
            ("last_reset", Optional),
            ("numbackends", Optional),
            ("xact_commit", Optional),
            ("xact_rollback", Optional),
            ("blks_read", Optional),
            ("blks_hit", Optional),
            ("tup_returned", Optional),
            ("tup_fetched", Optional),
            ("tup_inserted", Optional),
            ("tup_updated", Optional),
            ("tup_deleted", Optional),
            ("conflicts", Optional),
            ("temp_files", Optional),
            ("temp_bytes", Optional),
            ("deadlocks", Optional),
            ("blk_read_time", Optional),
            ("blk_write_time", Optional),
            ("server", Required),
        ],
    ),
    (
        "test_statio",
        &[
            ("test", Required),
            ("collected", Required),
            ("nspname", Optional),
            ("tablename", Optional),
            ("indexname", Optional),
            ("size", Optional),
            ("rel_blks_read", Optional),
            ("rel_blks_hit", Optional),
            ("server", Required),
        ],
    ),
    (
        "test_settings",
        &[
            ("server", Required),
            ("test", Required),
            ("name", Required),
            ("setting", Optional),
            ("unit", Optional),
            ("source", Optional),
            ("boot_val", Optional),
            ("value", Optional),
            ("numeric_value", Optional),
            ("numeric_unit", Optional),
        ],
    ),
    (
        "timing",
        &[
            ("ts", Required),
            ("filenum", Optional),
            ("latency", Required),
            ("test", Required),
            ("server", Required),
            ("schedule_lag", Optional),
        ],
    ),
    (
        "test_metrics_data",
        &[
            ("collected", Required),
            ("value", Required),
            ("metric", Required),
            ("test", Required),
            ("server", Required),
        ],
    ),
];

/// The counters of `test_bgwriter` (deltas over the test, as pgbench-tools stores them).
const BGWRITER_COUNTERS: &[&str] = &[
    "checkpoints_timed",
    "checkpoints_req",
    "buffers_checkpoint",
    "buffers_clean",
    "maxwritten_clean",
    "buffers_backend",
    "buffers_alloc",
    "buffers_backend_fsync",
    "max_dirty",
];

/// The counters of `test_stat_database` (the database's statistics, reset before the test).
const STAT_DATABASE_COUNTERS: &[&str] = &[
    "numbackends",
    "xact_commit",
    "xact_rollback",
    "blks_read",
    "blks_hit",
    "tup_returned",
    "tup_fetched",
    "tup_inserted",
    "tup_updated",
    "tup_deleted",
    "conflicts",
    "temp_files",
    "temp_bytes",
    "deadlocks",
    "blk_read_time",
    "blk_write_time",
];

/// The columns of a pgbench-tools database, as `information_schema.columns` lists them.
pub type SchemaColumns = BTreeMap<String, BTreeSet<String>>;

/// Checks the tables and columns of a pgbench-tools results database against the
/// schema this import knows. Refused, naming table and column: a required table or
/// column that is missing, and any column this import does not know (a newer or
/// changed pgbench-tools schema whose meaning would be lost).
pub fn check_schema(found: &SchemaColumns) -> Result<(), String> {
    for (table, need) in TABLES {
        let Some(columns) = found.get(*table) else {
            if *need == Required {
                return Err(format!(
                    "table {table} not found: this is not a pgbench-tools results database \
                     (or not in the connection's search_path)"
                ));
            }
            continue;
        };
        let known = known_columns(table);
        for c in columns {
            if !known.iter().any(|(k, _)| k == c) {
                return Err(format!(
                    "table {table} has column {c}, unknown to this import (a newer or changed \
                     pgbench-tools schema): refused rather than losing what it holds"
                ));
            }
        }
        for (k, need) in known {
            if *need == Required && !columns.contains(*k) {
                return Err(format!(
                    "table {table} lacks column {k}, which this import needs \
                     (an unknown pgbench-tools schema)"
                ));
            }
        }
    }
    Ok(())
}

fn known_columns(table: &str) -> &'static [(&'static str, Need)] {
    COLUMNS
        .iter()
        .find(|(t, _)| *t == table)
        .map(|(_, c)| *c)
        .unwrap_or(&[])
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

/// What a test's `results.txt` (pgbench's report, in `results/<server>/<test>/`)
/// supplies where the database holds NULL.
fn fill_from_results(row: &mut TestRow, dir: &Path) -> Result<bool, String> {
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

/// What `import` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportSummary {
    /// Sets created.
    pub sets_created: usize,
    /// Runs written.
    pub runs_written: usize,
    /// Runs already in the store, left as they were.
    pub runs_present: usize,
    /// Initialization tests, stored as facts of the run after them.
    pub init_tests: usize,
    /// Runs whose NULL figures were read from the results directory.
    pub filled_from_files: usize,
    /// The rows not imported, each with why.
    pub left_out: Vec<LeftOut>,
}

/// A row of the pgbench-tools database the import left out, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftOut {
    /// `testset` or `tests`.
    pub table: &'static str,
    /// Its `server`, when it has one.
    pub server: Option<String>,
    /// Its `set`, when it has one.
    pub set: Option<i64>,
    /// Its `test` (a `tests` row).
    pub test: Option<i64>,
    /// Why it was left out.
    pub why: String,
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut at = Vec::new();
        if let Some(s) = &self.server {
            at.push(format!("server {s:?}"));
        }
        if let Some(s) = self.set {
            at.push(format!("set {s}"));
        }
        if let Some(t) = self.test {
            at.push(format!("test {t}"));
        }
        write!(f, "{} row ({}): {}", self.table, at.join(", "), self.why)
    }
}

/// A read-only session on the pgbench-tools database.
struct Source {
    conn: pgsurge_wire::Connection,
    secrets: Vec<String>,
}

impl Source {
    fn connect(conninfo: &str) -> Result<Source, String> {
        let secrets = pgsurge_wire::redact::passwords(conninfo);
        let redact = |s: &str| pgsurge_wire::redact::redact_with(s.trim_end(), &secrets);
        let cfg = pgsurge_wire::ConnConfig::parse(conninfo).map_err(|e| {
            format!(
                "pgbench-tools connection string: {}",
                redact(&e.to_string())
            )
        })?;
        let mut conn = pgsurge_wire::Connection::connect(&cfg).map_err(|e| {
            format!(
                "connecting to the pgbench-tools database: {}",
                redact(&e.to_string())
            )
        })?;
        conn.set_notice_handler(Box::new(|_| {}));
        Ok(Source { conn, secrets })
    }

    fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
        let results = self.conn.simple_query(sql).map_err(|e| {
            format!(
                "reading the pgbench-tools database: {}",
                pgsurge_wire::redact::redact_with(e.pq_message().trim_end(), &self.secrets)
            )
        })?;
        Ok(results
            .into_iter()
            .last()
            .map(|r| r.rows)
            .unwrap_or_default())
    }

    fn schema(&mut self) -> Result<SchemaColumns, String> {
        let names: Vec<String> = TABLES.iter().map(|(t, _)| format!("'{t}'")).collect();
        let rows = self.rows(&format!(
            "SELECT c.relname, a.attname FROM pg_catalog.pg_attribute a \
             JOIN pg_catalog.pg_class c ON c.oid = a.attrelid \
             WHERE c.relname IN ({}) AND c.relkind IN ('r', 'p', 'v') \
             AND pg_catalog.pg_table_is_visible(c.oid) \
             AND a.attnum > 0 AND NOT a.attisdropped ORDER BY 1, a.attnum",
            names.join(", ")
        ))?;
        let mut out = SchemaColumns::new();
        for r in rows {
            if let [Some(t), Some(c)] = r.as_slice() {
                out.entry(t.clone()).or_default().insert(c.clone());
            }
        }
        Ok(out)
    }
}

/// The select list of `table`: each wanted expression, or NULL when its column is
/// absent (an older schema).
fn select_list(schema: &SchemaColumns, table: &str, wanted: &[(&str, &str)]) -> String {
    let cols = schema.get(table);
    wanted
        .iter()
        .map(|(col, expr)| {
            if cols.is_some_and(|c| c.contains(*col)) {
                (*expr).to_string()
            } else {
                "NULL".into()
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

fn num<T: std::str::FromStr>(v: &Option<String>) -> Option<T> {
    v.as_deref().and_then(|s| s.trim().parse().ok())
}

fn text(v: &Option<String>) -> Option<String> {
    v.clone()
}

const TESTS_SELECT: &[(&str, &str)] = &[
    ("server", "server"),
    ("test", "test"),
    ("set", "set"),
    ("scale", "scale"),
    ("dbsize", "dbsize"),
    ("start_time", "extract(epoch FROM start_time::timestamptz)"),
    ("end_time", "extract(epoch FROM end_time::timestamptz)"),
    ("tps", "tps"),
    ("script", "script"),
    ("clients", "clients"),
    ("workers", "workers"),
    ("trans", "trans"),
    ("avg_latency", "avg_latency"),
    ("max_latency", "max_latency"),
    ("percentile_90_latency", "percentile_90_latency"),
    ("wal_written", "round(wal_written)"),
    ("cleanup", "extract(epoch FROM cleanup)"),
    ("rate_limit", "rate_limit"),
    ("client_limit", "client_limit"),
    ("multi", "multi"),
    ("server_version", "server_version"),
    ("server_mem_gb", "server_mem_gb"),
    ("server_cpu", "server_cpu"),
    ("server_os_release", "server_os_release"),
    ("conn_method", "conn_method"),
    ("uname", "uname"),
    ("server_disk", "server_disk"),
    ("artifacts", "artifacts::text"),
];

/// A `tests` column read as an integer: NULL as `None`, anything but an integer an
/// error naming the column and its text.
fn int(v: &Option<String>, column: &str) -> Result<Option<i64>, String> {
    v.as_deref()
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|_| format!("{column} {s:?} is not an integer"))
        })
        .transpose()
}

/// A `tests` column read as a number: NULL as `None`, anything but a number an error
/// naming the column and its text.
fn real(v: &Option<String>, column: &str) -> Result<Option<f64>, String> {
    v.as_deref()
        .map(|s| {
            s.trim()
                .parse()
                .map_err(|_| format!("{column} {s:?} is not a number"))
        })
        .transpose()
}

/// A `tests` row as read, or the row left out and why (a column without the value it
/// needs, or a value that is not the number the column holds).
fn test_row(r: &[Option<String>]) -> Result<TestRow, LeftOut> {
    let g = |i: usize| r.get(i).cloned().flatten();
    // Column `i`'s name, for the message.
    let c = |i: usize| TESTS_SELECT[i].0;
    let read = || -> Result<TestRow, String> {
        let server = g(0).ok_or("it has no server")?;
        let test = int(&g(1), c(1))?.ok_or("it has no test number")?;
        Ok(TestRow {
            server,
            test,
            set: int(&g(2), c(2))?.ok_or("it has no set")?,
            scale: int(&g(3), c(3))?,
            dbsize: int(&g(4), c(4))?,
            start: real(&g(5), c(5))?,
            end: real(&g(6), c(6))?,
            tps: real(&g(7), c(7))?,
            script: g(8).unwrap_or_default(),
            clients: int(&g(9), c(9))?,
            workers: int(&g(10), c(10))?,
            trans: int(&g(11), c(11))?,
            avg_latency: real(&g(12), c(12))?,
            max_latency: real(&g(13), c(13))?,
            p90_latency: real(&g(14), c(14))?,
            wal_written: int(&g(15), c(15))?,
            cleanup_s: real(&g(16), c(16))?,
            rate_limit: real(&g(17), c(17))?,
            client_limit: real(&g(18), c(18))?,
            multi: real(&g(19), c(19))?,
            server_version: text(&g(20)),
            server_mem_gb: int(&g(21), c(21))?,
            server_cpu: text(&g(22)),
            server_os_release: text(&g(23)),
            conn_method: text(&g(24)),
            uname: text(&g(25)),
            server_disk: text(&g(26)),
            artifacts: g(27).and_then(|s| serde_json::from_str(&s).ok()),
        })
    };
    read().map_err(|why| LeftOut {
        table: "tests",
        server: g(0),
        set: int(&g(2), c(2)).ok().flatten(),
        test: int(&g(1), c(1)).ok().flatten(),
        why,
    })
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

fn read_details(
    src: &mut Source,
    schema: &SchemaColumns,
    row: &TestRow,
) -> Result<TestDetails, String> {
    let mut d = TestDetails::default();
    let filter = format!(
        "server = {} AND test = {}",
        pgsurge_wire::quote_literal(&row.server),
        row.test
    );
    let ts = row.end.or(row.start).unwrap_or(0.0);
    for (table, view, names) in [
        ("test_bgwriter", "pg_stat_bgwriter", BGWRITER_COUNTERS),
        (
            "test_stat_database",
            "pg_stat_database",
            STAT_DATABASE_COUNTERS,
        ),
    ] {
        if !schema.contains_key(table) {
            continue;
        }
        let wanted: Vec<(&str, String)> = names.iter().map(|c| (*c, c.to_string())).collect();
        let wanted_ref: Vec<(&str, &str)> = wanted.iter().map(|(c, e)| (*c, e.as_str())).collect();
        let rows = src.rows(&format!(
            "SELECT {} FROM {table} WHERE {filter} LIMIT 1",
            select_list(schema, table, &wanted_ref)
        ))?;
        if let Some(r) = rows.first() {
            for (name, v) in names.iter().zip(r) {
                if let Some(v) = num::<f64>(v) {
                    d.counters.push(CounterRecord {
                        name: format!("{view}.{name}"),
                        before_value: None,
                        after_value: None,
                        delta: Some(v),
                    });
                }
            }
        }
    }
    if schema.contains_key("test_statio") {
        let rows = src.rows(&format!(
            "SELECT {} FROM test_statio WHERE {filter} ORDER BY 2, 3, 4",
            select_list(
                schema,
                "test_statio",
                &[
                    ("collected", "extract(epoch FROM collected::timestamptz)"),
                    ("nspname", "nspname"),
                    ("tablename", "tablename"),
                    ("indexname", "indexname"),
                    ("size", "size"),
                    ("rel_blks_read", "rel_blks_read"),
                    ("rel_blks_hit", "rel_blks_hit"),
                ],
            )
        ))?;
        for r in rows {
            let at = num::<f64>(&r[0]).unwrap_or(ts);
            let rel: Vec<&str> = r[1..4].iter().filter_map(|v| v.as_deref()).collect();
            let rel = rel.join(".");
            for (i, what) in [(4, "size"), (5, "rel_blks_read"), (6, "rel_blks_hit")] {
                if let Some(v) = num::<f64>(&r[i]) {
                    d.metrics.push(MetricSample {
                        ts: at,
                        metric: format!("pgbench_tools.statio.{rel}.{what}"),
                        value: v,
                    });
                }
            }
        }
    }
    if schema.contains_key("test_metrics_data") {
        let rows = src.rows(&format!(
            "SELECT extract(epoch FROM collected::timestamptz), metric, value \
             FROM test_metrics_data WHERE {filter} ORDER BY 1, 2"
        ))?;
        for r in rows {
            if let (Some(at), Some(m), Some(v)) = (num::<f64>(&r[0]), &r[1], num::<f64>(&r[2])) {
                d.metrics.push(MetricSample {
                    ts: at,
                    metric: format!("pgbench_tools.{m}"),
                    value: v,
                });
            }
        }
    }
    if schema.contains_key("test_settings") {
        let rows = src.rows(&format!(
            "SELECT {} FROM test_settings WHERE {filter} \
             AND coalesce(source, '') NOT IN ('default', 'override') ORDER BY name",
            select_list(
                schema,
                "test_settings",
                &[
                    ("name", "name"),
                    ("setting", "setting"),
                    ("unit", "unit"),
                    ("source", "source"),
                    ("boot_val", "boot_val"),
                ],
            )
        ))?;
        let mut seen = BTreeSet::new();
        for r in rows {
            let Some(name) = r[0].clone() else { continue };
            if seen.insert(name.clone()) {
                d.settings.push(SettingRecord {
                    name,
                    setting: r[1].clone(),
                    unit: r[2].clone(),
                    source: r[3].clone(),
                    boot_val: r[4].clone(),
                });
            }
        }
    }
    if schema.contains_key("timing") {
        let rows = src.rows(&format!(
            "SELECT extract(epoch FROM ts::timestamptz), latency FROM timing \
             WHERE {filter} AND latency IS NOT NULL ORDER BY ts"
        ))?;
        d.timing = rows
            .iter()
            .filter_map(|r| Some((num::<f64>(&r[0])?, num::<f64>(&r[1])?)))
            .collect();
    }
    Ok(d)
}

/// How to import.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The results database (conninfo or URL); its password never reaches the store.
    pub conninfo: String,
    /// pgbench-tools' `results/` directory, read where the database holds NULL.
    pub results_dir: Option<PathBuf>,
    /// Prefix of the set names: `<name>-<server>-set<set>`.
    pub name: String,
}

/// Imports a pgbench-tools results database into `store`, all or nothing: everything is
/// read and checked first, then written in one store transaction, so an error leaves
/// the store as it was. A row that cannot be imported (a test whose set has no
/// `testset` row, a value that is not a number or that no test can have, a
/// `results.txt` that cannot be read) is left out and named in
/// [`ImportSummary::left_out`]; a set missing any of its tests is stored `incomplete`
/// with a warning per test left out.
pub fn import(store: &mut Store, opts: &ImportOptions) -> Result<ImportSummary, String> {
    let nothing = |e: String| format!("{e}; nothing was imported");
    let mut src = Source::connect(&opts.conninfo).map_err(nothing)?;
    let schema = src.schema().map_err(nothing)?;
    check_schema(&schema).map_err(nothing)?;
    let identity = src
        .rows(
            "SELECT (SELECT system_identifier FROM pg_catalog.pg_control_system()), \
             current_database()",
        )
        .ok()
        .and_then(|r| r.into_iter().next())
        .map(|r| {
            r.into_iter()
                .map(Option::unwrap_or_default)
                .collect::<Vec<_>>()
                .join("/")
        })
        .unwrap_or_default();
    let (sets, left_out) =
        plan_import(store, &mut src, &schema, opts, &identity).map_err(nothing)?;
    let mut summary = ImportSummary {
        left_out,
        ..Default::default()
    };
    store
        .all_or_nothing(|store| {
            for set in sets {
                import_set(store, &mut src, &schema, set, &mut summary)?;
            }
            Ok::<(), String>(())
        })
        .map_err(|e| nothing(e.to_string()))?
        .map_err(nothing)?;
    Ok(summary)
}

/// What becomes of one test of a set.
#[derive(Debug)]
enum Fate {
    /// Written, `filled` when `results.txt` supplied a figure.
    Write { filled: bool },
    /// An initialization test: facts of the next run.
    Init,
    /// Already in the store.
    Present,
    /// Left out (named in the summary).
    LeftOut,
}

/// One `testset` row to write, with its tests in order.
#[derive(Debug)]
struct PlannedSet {
    record: SetRecord,
    /// The set stored by an earlier import of the same database.
    existing: Option<i64>,
    server: String,
    tests: Vec<(TestRow, Fate)>,
    /// The rows of this set left out (stored with it as warnings).
    left_out: Vec<LeftOut>,
}

/// Reads every `testset` and `tests` row and decides what becomes of each, writing
/// nothing: the sets with their tests, and the rows left out.
fn plan_import(
    store: &mut Store,
    src: &mut Source,
    schema: &SchemaColumns,
    opts: &ImportOptions,
    identity: &str,
) -> Result<(Vec<PlannedSet>, Vec<LeftOut>), String> {
    let set_rows = src.rows(&format!(
        "SELECT server, set::text, {} FROM testset ORDER BY server, set",
        select_list(schema, "testset", &[("info", "info")])
    ))?;
    let rows = src.rows(&format!(
        "SELECT {} FROM tests ORDER BY server, set, test",
        select_list(schema, "tests", TESTS_SELECT)
    ))?;
    let mut left_out = Vec::new();
    let mut tests: BTreeMap<(String, i64), Vec<TestRow>> = BTreeMap::new();
    for r in &rows {
        match test_row(r) {
            Ok(t) => tests.entry((t.server.clone(), t.set)).or_default().push(t),
            Err(l) => left_out.push(l),
        }
    }
    let mut sets = Vec::new();
    for s in &set_rows {
        let server = s[0].clone();
        let set = int(&s[1], "set");
        let (Some(server), Ok(Some(set))) = (server.clone(), set.clone()) else {
            left_out.push(LeftOut {
                table: "testset",
                server,
                set: set.ok().flatten(),
                test: None,
                why: "it has no server or no set number".into(),
            });
            continue;
        };
        let info = s.get(2).cloned().flatten();
        let set_tests = tests.remove(&(server.clone(), set)).unwrap_or_default();
        // Rows of this set that could not be read are already in `left_out`.
        let unreadable: Vec<LeftOut> = left_out
            .iter()
            .filter(|l| l.server.as_ref() == Some(&server) && l.set == Some(set))
            .cloned()
            .collect();
        if set_tests.is_empty() && unreadable.is_empty() {
            left_out.push(LeftOut {
                table: "testset",
                server: Some(server),
                set: Some(set),
                test: None,
                why: "no test of the tests table is in this set".into(),
            });
            continue;
        }
        let known = unreadable.len();
        let planned = plan_set(
            store,
            opts,
            identity,
            (server, set, info),
            set_tests,
            unreadable,
        )?;
        left_out.extend(planned.left_out[known..].iter().cloned());
        sets.push(planned);
    }
    for ((server, set), orphans) in tests {
        for t in orphans {
            left_out.push(LeftOut {
                table: "tests",
                server: Some(server.clone()),
                set: Some(set),
                test: Some(t.test),
                why: format!("testset has no row for set {set} of this server"),
            });
        }
    }
    Ok((sets, left_out))
}

/// The fate of each test of one `testset` row: already stored, completed from its
/// `results.txt`, or left out for a file that cannot be read or an impossible value.
fn plan_set(
    store: &mut Store,
    opts: &ImportOptions,
    identity: &str,
    (server, set, info): (String, i64, Option<String>),
    tests: Vec<TestRow>,
    mut left_out: Vec<LeftOut>,
) -> Result<PlannedSet, String> {
    let unreadable = left_out.len();
    let name = format!("{}-{server}-set{set}", opts.name);
    let hash = format!("pgbench-tools {identity} {server} {set}");
    let existing = store
        .find_set(set_kind::IMPORT, &name, &hash)
        .map_err(|e| e.to_string())?
        .map(|s| s.id);
    let present: BTreeSet<String> = match existing {
        Some(id) => store
            .stored_tests(id)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|(k, _)| k)
            .collect(),
        None => BTreeSet::new(),
    };
    let mut planned = Vec::new();
    for mut t in tests {
        let fate = if t.is_init() {
            Fate::Init
        } else if present.contains(&t.key()) {
            Fate::Present
        } else {
            let filled = match &opts.results_dir {
                Some(dir) => fill_from_results(&mut t, dir),
                None => Ok(false),
            };
            let impossible = impossible_values(&t);
            let why = match &filled {
                Err(e) => Some(e.clone()),
                Ok(_) if !impossible.is_empty() => Some(format!(
                    "impossible value{}: {}",
                    if impossible.len() > 1 { "s" } else { "" },
                    impossible.join(", ")
                )),
                Ok(_) => None,
            };
            match why {
                Some(why) => {
                    left_out.push(LeftOut {
                        table: "tests",
                        server: Some(t.server.clone()),
                        set: Some(t.set),
                        test: Some(t.test),
                        why,
                    });
                    Fate::LeftOut
                }
                None => Fate::Write {
                    filled: filled == Ok(true),
                },
            }
        };
        planned.push((t, fate));
    }
    // The benchmark tests of the set: those read, and the rows that could not be.
    let bench = planned.iter().filter(|(t, _)| !t.is_init()).count() + unreadable;
    let status = if left_out.is_empty() {
        set_status::COMPLETE
    } else {
        set_status::INCOMPLETE
    };
    Ok(PlannedSet {
        record: SetRecord {
            name,
            kind: set_kind::IMPORT.into(),
            description: Some(match &info {
                Some(i) => format!("pgbench-tools set {set} of {server}: {i}"),
                None => format!("pgbench-tools set {set} of {server}"),
            }),
            spec_hash: Some(hash),
            planned_tests: Some(bench as i64),
            status: status.into(),
            created_at: now_rfc3339(),
            finished_at: Some(now_rfc3339()),
            ..Default::default()
        },
        existing,
        server,
        tests: planned,
        left_out,
    })
}

/// Writes one planned set (inside the import's transaction): the set, its server and
/// target, each test to write with its details, a warning per test left out.
fn import_set(
    store: &mut Store,
    src: &mut Source,
    schema: &SchemaColumns,
    set: PlannedSet,
    summary: &mut ImportSummary,
) -> Result<(), String> {
    let serr = |e: pgsurge_store::StoreError| e.to_string();
    let set_id = match set.existing {
        Some(id) => {
            store
                .set_set_status(id, &set.record.status, set.record.finished_at.as_deref())
                .map_err(serr)?;
            store
                .set_planned_tests(id, set.record.planned_tests.unwrap_or(0))
                .map_err(serr)?;
            id
        }
        None => {
            summary.sets_created += 1;
            store.create_set(&set.record).map_err(serr)?
        }
    };
    let stored_warnings: BTreeSet<String> = store
        .warnings(Some(set_id))
        .map_err(serr)?
        .into_iter()
        .map(|w| w.record.message)
        .collect();
    for l in &set.left_out {
        let message = format!("left out: {l}");
        if !stored_warnings.contains(&message) {
            store
                .add_warning(&WarningRecord {
                    set_id: Some(set_id),
                    run_id: None,
                    code: "import_left_out".into(),
                    message,
                    created_at: now_rfc3339(),
                })
                .map_err(serr)?;
        }
    }
    let server = set.server.as_str();
    let first = set.tests.iter().map(|(t, _)| t).find(|t| !t.is_init());
    let host = first.map(|t| ServerRecord {
        name: server.to_string(),
        hostname: None,
        cpu_model: t.server_cpu.clone(),
        cpu_count: None,
        memory_bytes: t.server_mem_gb.map(|g| g * (1 << 30)),
        kernel: None,
        os_release: t.server_os_release.clone(),
        details: Some(serde_json::json!({
            "uname": t.uname,
            "server_disk": t.server_disk,
            "source": "pgbench-tools",
        })),
    });
    let server_id = match host {
        Some(h) => Some(store.upsert_server(&h).map_err(serr)?),
        None => None,
    };
    let target_id = store
        .upsert_target(&TargetRecord {
            set_id,
            name: server.to_string(),
            server_id,
            kind: "conninfo".into(),
            conninfo: None,
            bin_dir: None,
            server_version: first.and_then(|t| t.server_version.clone()),
            server_version_num: None,
            settings: None,
        })
        .map_err(serr)?;
    let mut pending_init: Option<TestRow> = None;
    let mut repeats: BTreeMap<String, i64> = BTreeMap::new();
    for (t, fate) in set.tests {
        if let Fate::Init = fate {
            summary.init_tests += 1;
            pending_init = Some(t);
            continue;
        }
        // Repeats are numbered over every test of the cell, those left out included,
        // so a test imported later keeps its number.
        let cell = format!(
            "{}/{}/{}/{:?}/{}",
            t.scale.unwrap_or(0),
            t.workload(),
            t.clients.unwrap_or(0),
            t.rate_limit,
            t.query_mode()
        );
        let repeat = repeats.entry(cell).or_insert(0);
        *repeat += 1;
        let init = pending_init.take();
        match fate {
            Fate::Present => summary.runs_present += 1,
            Fate::Write { filled } => {
                let details = read_details(src, schema, &t)?;
                let w = to_run_write(set_id, target_id, *repeat, &t, details, init.as_ref());
                store.write_run(&w).map_err(serr)?;
                summary.runs_written += 1;
                summary.filled_from_files += usize::from(filled);
            }
            Fate::Init | Fate::LeftOut => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn full_schema() -> SchemaColumns {
        COLUMNS
            .iter()
            .map(|(t, cols)| {
                (
                    t.to_string(),
                    cols.iter().map(|(c, _)| c.to_string()).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn the_current_schema_is_accepted_and_a_renamed_column_is_refused_by_name() {
        let schema = full_schema();
        assert_eq!(check_schema(&schema), Ok(()));

        let mut renamed = schema.clone();
        let tests = renamed.get_mut("tests").unwrap();
        tests.remove("tps");
        tests.insert("tps_including".into());
        let e = check_schema(&renamed).unwrap_err();
        assert!(
            e.contains("table tests") && e.contains("tps_including"),
            "{e}"
        );

        let mut missing = schema.clone();
        missing.get_mut("tests").unwrap().remove("clients");
        let e = check_schema(&missing).unwrap_err();
        assert!(e.contains("table tests lacks column clients"), "{e}");

        let mut newer = schema.clone();
        newer
            .get_mut("test_bgwriter")
            .unwrap()
            .insert("buffers_written".into());
        let e = check_schema(&newer).unwrap_err();
        assert!(
            e.contains("table test_bgwriter has column buffers_written"),
            "{e}"
        );

        let mut no_tests = schema.clone();
        no_tests.remove("tests");
        let e = check_schema(&no_tests).unwrap_err();
        assert!(e.contains("table tests not found"), "{e}");

        let mut older = schema;
        older.remove("test_metrics_data");
        older.get_mut("tests").unwrap().remove("artifacts");
        assert_eq!(check_schema(&older), Ok(()));
    }

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
