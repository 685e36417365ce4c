//! The pgbench-tools schema this import knows: its tables and columns (which are
//! required), the counters of its statistics tables, and the check of a found schema
//! against it.

use std::collections::{BTreeMap, BTreeSet};

/// Whether a known column must be present for the import to make sense.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Need {
    Required,
    Optional,
}

use Need::{Optional, Required};

/// The tables read, and whether the table itself must exist.
pub(super) const TABLES: &[(&str, Need)] = &[
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
pub(super) const BGWRITER_COUNTERS: &[&str] = &[
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
pub(super) const STAT_DATABASE_COUNTERS: &[&str] = &[
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
}
