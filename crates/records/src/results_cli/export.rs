//! `results export`: the selected runs as CSV (one row per run, or per interval) or as
//! the versioned JSON document ([`EXPORT_SCHEMA`]), to stdout or a file.

use super::show::runs_table;
use super::{
    select_runs, warn_impossible, warn_skipped, write_stdout, CliResult, Format, Names, Selection,
};
use pgsurge_plan::capacity;
use pgsurge_store::{now_rfc3339, Run, Store};
use std::path::PathBuf;

/// Version of the `results export --format json` document (`pgsurge schema export`).
pub const EXPORT_VERSION: u32 = 1;

/// JSON Schema of the `results export --format json` document.
pub const EXPORT_SCHEMA: &str = include_str!("../../schema/export.v1.json");

/// Columns of the per-run CSV after `run_id,set,target`, each a stored run field
/// (`repeat` is `repeat_no`).
pub(super) const CSV_COLUMNS: &[&str] = &[
    "set_id",
    "test_key",
    "repeat",
    "status",
    "started_at",
    "finished_at",
    "script",
    "scale",
    "clients",
    "threads",
    "rate",
    "rate_per_client",
    "latency_limit_ms",
    "duration_s",
    "transactions_per_client",
    "query_mode",
    "init_method",
    "warmup_s",
    "measured_s",
    "seed",
    "tps",
    "transactions",
    "failures",
    "serialization_failures",
    "deadlock_failures",
    "retried",
    "retries",
    "skipped",
    "late",
    "latency_mean_ms",
    "latency_stddev_ms",
    "latency_min_ms",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p95_ms",
    "latency_p99_ms",
    "latency_p999_ms",
    "latency_max_ms",
    "lag_mean_ms",
    "lag_max_ms",
    "server_commits",
    "server_rollbacks",
    "commit_mismatch_pct",
    "wal_bytes",
    "db_size_start",
    "db_size_end",
    "server_version",
    "command_line",
    "error",
];

/// Columns of the per-second CSV after `run_id,set,target,test_key,repeat`: stored
/// interval fields.
pub(super) const INTERVAL_COLUMNS: &[&str] = &[
    "elapsed_s",
    "ts",
    "duration_s",
    "warmup",
    "transactions",
    "tps",
    "failures",
    "retried",
    "skipped",
    "latency_mean_ms",
    "latency_min_ms",
    "latency_max_ms",
    "latency_p50_ms",
    "latency_p90_ms",
    "latency_p99_ms",
    "lag_mean_ms",
    "lag_max_ms",
];

pub(super) fn csv_field(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::Null => String::new(),
        serde_json::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

pub(super) fn run_field<'a>(v: &'a serde_json::Value, column: &str) -> &'a serde_json::Value {
    &v[if column == "repeat" {
        "repeat_no"
    } else {
        column
    }]
}

/// The per-run CSV: one header row, then one row per run (RFC 4180 quoting by the `csv`
/// crate, so commas, quotes, `\n` and `\r` in errors survive).
pub(super) fn runs_csv(runs: &[Run], names: &Names) -> Result<Vec<u8>, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = ["run_id", "set", "target"]
        .iter()
        .chain(CSV_COLUMNS)
        .copied();
    w.write_record(header).map_err(|e| e.to_string())?;
    for r in runs {
        let v = serde_json::to_value(&r.record).map_err(|e| e.to_string())?;
        let mut row = vec![
            r.id.to_string(),
            names.set(r).unwrap_or_default().to_string(),
            names.target(r).unwrap_or_default().to_string(),
        ];
        row.extend(CSV_COLUMNS.iter().map(|c| csv_field(run_field(&v, c))));
        w.write_record(&row).map_err(|e| e.to_string())?;
    }
    w.into_inner().map_err(|e| e.to_string())
}

/// The per-second CSV: one row per stored interval of every run.
pub(super) fn per_second_csv(
    store: &mut Store,
    runs: &[Run],
    names: &Names,
) -> Result<Vec<u8>, String> {
    let mut w = csv::Writer::from_writer(Vec::new());
    let header = ["run_id", "set", "target", "test_key", "repeat"]
        .iter()
        .chain(INTERVAL_COLUMNS)
        .copied();
    w.write_record(header).map_err(|e| e.to_string())?;
    for r in runs {
        let loaded = match store.load_run(r.id) {
            Ok(l) => l,
            // Named by the caller with the other runs left out.
            Err(pgsurge_store::StoreError::UnreadableRun(_)) => continue,
            Err(e) => return Err(e.to_string()),
        };
        for i in &loaded.intervals {
            let v = serde_json::to_value(i).map_err(|e| e.to_string())?;
            let mut row = vec![
                r.id.to_string(),
                names.set(r).unwrap_or_default().to_string(),
                names.target(r).unwrap_or_default().to_string(),
                r.record.test_key.clone(),
                r.record.repeat_no.to_string(),
            ];
            row.extend(INTERVAL_COLUMNS.iter().map(|c| csv_field(&v[*c])));
            w.write_record(&row).map_err(|e| e.to_string())?;
        }
    }
    w.into_inner().map_err(|e| e.to_string())
}

/// The versioned JSON export document.
pub(super) fn export_json(
    store: &mut Store,
    runs: &[Run],
    names: &Names,
    full: bool,
) -> Result<serde_json::Value, String> {
    let mut items = Vec::new();
    for r in runs {
        let mut v = if full {
            match store.load_run(r.id) {
                Ok(l) => serde_json::to_value(l),
                // Named by the caller with the other runs left out.
                Err(pgsurge_store::StoreError::UnreadableRun(_)) => continue,
                Err(e) => return Err(e.to_string()),
            }
        } else {
            serde_json::to_value(r)
        }
        .map_err(|e| e.to_string())?;
        v["set"] = names.set(r).into();
        v["target"] = names.target(r).into();
        items.push(v);
    }
    let set_ids: std::collections::BTreeSet<i64> = runs.iter().map(|r| r.record.set_id).collect();
    let mut sets = Vec::new();
    for id in set_ids {
        let s = store.set(id).map_err(|e| e.to_string())?;
        let mut set = serde_json::json!({
            "id": s.id,
            "name": s.record.name,
            "kind": s.record.kind,
            "status": s.record.status,
            "created_at": s.record.created_at,
        });
        if let Some(cap) = s.record.spec.as_deref().and_then(capacity::stored_section) {
            let results = capacity::capacity_of_set(store, id, &cap.objective())
                .map_err(|e| e.to_string())?;
            set["capacity"] = serde_json::to_value(results).map_err(|e| e.to_string())?;
        }
        sets.push(set);
    }
    Ok(serde_json::json!({
        "format": "pgsurge-export",
        "version": EXPORT_VERSION,
        "full": full,
        "exported_at": now_rfc3339(),
        "sets": sets,
        "runs": items,
    }))
}

pub(super) fn export(
    store: &mut Store,
    sel: &Selection,
    format: Format,
    full: bool,
    per_second: bool,
    output: Option<PathBuf>,
) -> CliResult {
    if full && format != Format::Json {
        return Err("--full goes with --format json".into());
    }
    if per_second && format != Format::Csv {
        return Err("--per-second goes with --format csv".into());
    }
    let (runs, names) = select_runs(store, sel)?;
    let bytes = match format {
        Format::Text => runs_table(&runs).into_bytes(),
        Format::Csv if per_second => per_second_csv(store, &runs, &names)?,
        Format::Csv => runs_csv(&runs, &names)?,
        Format::Json => {
            let value = export_json(store, &runs, &names, full)?;
            let mut s = serde_json::to_string_pretty(&value).map_err(|e| e.to_string())?;
            s.push('\n');
            s.into_bytes()
        }
    };
    let skipped: Vec<i64> = store.skipped_runs().iter().map(|u| u.run_id).collect();
    warn_impossible(&runs);
    warn_skipped(store, runs.iter().any(|r| !skipped.contains(&r.id)))?;
    match output {
        // Whole or not at all: a failed export leaves no partial file (and an error).
        Some(p) => pgsurge_store::write_output(&p, &bytes)
            .map_err(|e| format!("writing {}: {e}", p.display())),
        None => write_stdout(&bytes),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results_cli::tests::{all, store};

    #[test]
    fn per_run_csv_is_complete_and_quotes_carriage_returns() {
        let mut s = store();
        let (runs, names) = select_runs(&mut s, &all()).unwrap();
        let bytes = runs_csv(&runs, &names).unwrap();
        let text = String::from_utf8(bytes.clone()).unwrap();
        assert!(
            text.contains("\"boom, \"\"quoted\"\"\r\nsecond line\nthird\""),
            "{text:?}"
        );
        let mut r = csv::Reader::from_reader(&bytes[..]);
        let header = r.headers().unwrap().clone();
        for c in [
            "target",
            "set",
            "repeat",
            "rate",
            "lag_mean_ms",
            "skipped",
            "late",
        ] {
            assert!(header.iter().any(|h| h == c), "no column {c}");
        }
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
        assert_eq!(rows.len(), 2);
        assert_eq!(&rows[0][col("target")], "pg17");
        assert_eq!(&rows[0][col("set")], "nightly, \"main\"");
        assert_eq!(&rows[0][col("repeat")], "2");
        assert_eq!(&rows[0][col("rate")], "100.0");
        assert_eq!(&rows[0][col("skipped")], "3");
        assert_eq!(&rows[0][col("late")], "4");
        assert_eq!(&rows[0][col("lag_mean_ms")], "0.25");
        assert_eq!(
            &rows[1][col("error")],
            "boom, \"quoted\"\r\nsecond line\nthird"
        );
    }

    #[test]
    fn per_second_csv_has_one_row_per_interval() {
        let mut s = store();
        let (runs, names) = select_runs(&mut s, &all()).unwrap();
        let bytes = per_second_csv(&mut s, &runs, &names).unwrap();
        let mut r = csv::Reader::from_reader(&bytes[..]);
        let header = r.headers().unwrap().clone();
        let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
        assert_eq!(
            rows.len(),
            2,
            "two intervals of the first run, none of the second"
        );
        let col = |name: &str| header.iter().position(|h| h == name).unwrap();
        assert_eq!(&rows[1][col("elapsed_s")], "1.0");
        assert_eq!(&rows[1][col("test_key")], "pg17/s1/tpcb-like/c4/r100/2");
        assert_eq!(&rows[1][col("latency_p99_ms")], "2.5");
    }

    #[test]
    fn json_export_is_versioned_and_validates_plain_and_full() {
        let mut s = store();
        let (runs, names) = select_runs(&mut s, &all()).unwrap();
        for full in [false, true] {
            let doc = export_json(&mut s, &runs, &names, full).unwrap();
            let errors = pgsurge_testkit::schema::violations(EXPORT_SCHEMA, &doc);
            assert!(errors.is_empty(), "full={full}: {errors:?}");
            assert_eq!(doc["version"], EXPORT_VERSION);
            assert_eq!(doc["runs"][0]["target"], "pg17");
            let mut bad = doc.clone();
            bad["runs"][0].as_object_mut().unwrap().remove(if full {
                "intervals"
            } else {
                "test_key"
            });
            assert!(
                !pgsurge_testkit::schema::violations(EXPORT_SCHEMA, &bad).is_empty(),
                "full={full}: a run missing a field validated"
            );
        }
    }
}
