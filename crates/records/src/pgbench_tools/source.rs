//! Reading the pgbench-tools database: a read-only session on it, its `tests` rows
//! (each read or left out with why) and the details of a test in its other tables.

use std::collections::BTreeSet;

use pgsurge_store::{CounterRecord, MetricSample, SettingRecord};

use super::schema::{SchemaColumns, BGWRITER_COUNTERS, STAT_DATABASE_COUNTERS, TABLES};
use super::test_rows::{TestDetails, TestRow};
use super::LeftOut;

/// A read-only session on the pgbench-tools database.
pub(super) struct Source {
    conn: pgsurge_wire::Connection,
    secrets: Vec<String>,
}

impl Source {
    pub(super) fn connect(conninfo: &str) -> Result<Source, String> {
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

    pub(super) fn rows(&mut self, sql: &str) -> Result<Vec<Vec<Option<String>>>, String> {
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

    pub(super) fn schema(&mut self) -> Result<SchemaColumns, String> {
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
pub(super) fn select_list(schema: &SchemaColumns, table: &str, wanted: &[(&str, &str)]) -> String {
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

pub(super) const TESTS_SELECT: &[(&str, &str)] = &[
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
pub(super) fn int(v: &Option<String>, column: &str) -> Result<Option<i64>, String> {
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
pub(super) fn test_row(r: &[Option<String>]) -> Result<TestRow, LeftOut> {
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

pub(super) fn read_details(
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
