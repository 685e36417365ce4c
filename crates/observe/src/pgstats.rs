//! PostgreSQL statistics: which views and columns exist in which version, in one
//! place. [`counters_sql`] reads cumulative counters (deltas and per-second rates are
//! taken from them), [`gauges_sql`] reads instantaneous values. Both return rows of
//! (name, value) so samplers and snapshots treat every version alike.
//!
//! Names: `pg.db.*` (pg_stat_database of the benchmark database), `pg.checkpointer.*`,
//! `pg.bgwriter.*`, `pg.wal.*` (pg_stat_wal, 14+), `pg.io.*` (pg_stat_io, 16+),
//! `pg.wal.lsn_bytes`; gauges `pg.db.size_bytes`, `pg.backends.state.*`,
//! `pg.backends.wait.*`. [`read_counters`] and [`read_settings`] take the snapshots
//! stored with a test.

use std::collections::BTreeMap;

use pgsurge_store::SettingRecord;

use crate::sql_session::{literal, Pg};

/// Queries returning (name, value) rows of cumulative counters for database `db` on a
/// server of version `version_num`, one per view, so a view the role cannot read (or a
/// column a patched server lacks) costs only its own counters.
pub fn counters_sql(version_num: i32, db: &str) -> Vec<String> {
    let dbl = literal(db);
    let mut parts = vec![format!(
        "SELECT 'pg.db.' || k, v FROM (SELECT * FROM pg_stat_database WHERE datname = {dbl}) d, \
         LATERAL (VALUES ('xact_commit', d.xact_commit::float8), ('xact_rollback', d.xact_rollback::float8), \
         ('blks_read', d.blks_read::float8), ('blks_hit', d.blks_hit::float8), \
         ('tup_returned', d.tup_returned::float8), ('tup_fetched', d.tup_fetched::float8), \
         ('tup_inserted', d.tup_inserted::float8), ('tup_updated', d.tup_updated::float8), \
         ('tup_deleted', d.tup_deleted::float8), ('conflicts', d.conflicts::float8), \
         ('temp_files', d.temp_files::float8), ('temp_bytes', d.temp_bytes::float8), \
         ('deadlocks', d.deadlocks::float8)) AS x(k, v)"
    )];
    if version_num >= 170000 {
        // 18 counts skipped checkpoints in num_timed/num_requested and adds num_done
        // (checkpoints completed) and slru_written.
        let v18 = if version_num >= 180000 {
            ", ('done', c.num_done::float8), ('slru_written', c.slru_written::float8)"
        } else {
            ""
        };
        parts.push(format!(
            "SELECT 'pg.checkpointer.' || k, v FROM pg_stat_checkpointer c, \
             LATERAL (VALUES ('timed', c.num_timed::float8), ('requested', c.num_requested::float8), \
             ('buffers_written', c.buffers_written::float8), ('write_time_ms', c.write_time::float8), \
             ('sync_time_ms', c.sync_time::float8){v18}) AS x(k, v)"
        ));
        parts.push(
            "SELECT 'pg.bgwriter.' || k, v FROM pg_stat_bgwriter b, \
             LATERAL (VALUES ('buffers_clean', b.buffers_clean::float8), \
             ('maxwritten_clean', b.maxwritten_clean::float8), ('buffers_alloc', b.buffers_alloc::float8)) AS x(k, v)"
                .into(),
        );
    } else {
        parts.push(
            "SELECT k, v FROM pg_stat_bgwriter b, \
             LATERAL (VALUES ('pg.checkpointer.timed', b.checkpoints_timed::float8), \
             ('pg.checkpointer.requested', b.checkpoints_req::float8), \
             ('pg.checkpointer.buffers_written', b.buffers_checkpoint::float8), \
             ('pg.checkpointer.write_time_ms', b.checkpoint_write_time::float8), \
             ('pg.checkpointer.sync_time_ms', b.checkpoint_sync_time::float8), \
             ('pg.bgwriter.buffers_clean', b.buffers_clean::float8), \
             ('pg.bgwriter.maxwritten_clean', b.maxwritten_clean::float8), \
             ('pg.bgwriter.buffers_backend', b.buffers_backend::float8), \
             ('pg.bgwriter.buffers_alloc', b.buffers_alloc::float8)) AS x(k, v)"
                .into(),
        );
    }
    if version_num >= 140000 {
        parts.push(
            "SELECT 'pg.wal.' || k, v FROM pg_stat_wal w, \
             LATERAL (VALUES ('records', w.wal_records::float8), ('fpi', w.wal_fpi::float8), \
             ('bytes', w.wal_bytes::float8), ('buffers_full', w.wal_buffers_full::float8)) AS x(k, v)"
                .into(),
        );
    }
    if version_num >= 160000 {
        parts.push(
            "SELECT 'pg.io.' || k, v FROM (SELECT sum(reads)::float8 AS reads, sum(writes)::float8 AS writes, \
             sum(extends)::float8 AS extends, sum(hits)::float8 AS hits, sum(evictions)::float8 AS evictions, \
             sum(fsyncs)::float8 AS fsyncs FROM pg_stat_io) i, \
             LATERAL (VALUES ('reads', i.reads), ('writes', i.writes), ('extends', i.extends), \
             ('hits', i.hits), ('evictions', i.evictions), ('fsyncs', i.fsyncs)) AS x(k, v)"
                .into(),
        );
    }
    if version_num >= 100000 {
        parts.push(
            "SELECT 'pg.wal.lsn_bytes', (pg_current_wal_lsn() - '0/0'::pg_lsn)::float8 \
             WHERE NOT pg_is_in_recovery()"
                .into(),
        );
    }
    parts
}

/// SQL returning (name, value) rows of instantaneous values.
pub fn gauges_sql(db: &str) -> String {
    let dbl = literal(db);
    format!(
        "SELECT 'pg.db.size_bytes', pg_database_size({dbl})::float8 \
         UNION ALL SELECT 'pg.backends.state.' || coalesce(replace(state, ' ', '_'), 'unknown'), count(*)::float8 \
           FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = {dbl} GROUP BY 1 \
         UNION ALL SELECT 'pg.backends.wait.' || coalesce(wait_event_type, 'CPU'), count(*)::float8 \
           FROM pg_stat_activity WHERE backend_type = 'client backend' AND datname = {dbl} AND state = 'active' GROUP BY 1"
    )
}

/// SQL resetting statistics before a test (database and shared counters).
pub fn reset_sql(version_num: i32) -> String {
    let mut s = String::from("SELECT pg_stat_reset(); SELECT pg_stat_reset_shared('bgwriter');");
    if version_num >= 170000 {
        s.push_str(" SELECT pg_stat_reset_shared('checkpointer');");
    }
    if version_num >= 140000 {
        s.push_str(" SELECT pg_stat_reset_shared('wal');");
    }
    if version_num >= 160000 {
        s.push_str(" SELECT pg_stat_reset_shared('io');");
    }
    s
}

/// Settings that differ from their boot value or were set explicitly.
pub const SETTINGS_SQL: &str = "SELECT name, setting, unit, source, boot_val FROM pg_settings \
     WHERE source NOT IN ('default', 'override') OR setting IS DISTINCT FROM boot_val ORDER BY name";

/// Unit and description of a PostgreSQL metric name (for `metrics_info`).
pub fn describe(metric: &str) -> (&'static str, &'static str) {
    let base = metric.trim_end_matches("_per_s");
    let rate = metric.ends_with("_per_s");
    let category = if base.starts_with("pg.db.") {
        "pg.database"
    } else if base.starts_with("pg.checkpointer.") || base.starts_with("pg.bgwriter.") {
        "pg.checkpointer"
    } else if base.starts_with("pg.wal.") {
        "pg.wal"
    } else if base.starts_with("pg.io.") {
        "pg.io"
    } else if base.starts_with("pg.backends.") {
        "pg.backends"
    } else {
        "pg"
    };
    let unit = if base.ends_with("_bytes") || base == "pg.wal.bytes" {
        if rate {
            "bytes/s"
        } else {
            "bytes"
        }
    } else if base.ends_with("_ms") {
        if rate {
            "ms/s"
        } else {
            "ms"
        }
    } else if rate {
        "1/s"
    } else {
        "count"
    };
    (category, unit)
}
/// The cumulative counters of database `db` (name → value), its size, its autovacuum
/// runs and workers, and the server's start time: the snapshot taken before and after
/// a test. A view this role cannot read only loses its
/// own counters (the sampler reports it).
pub fn read_counters(
    pg: &mut Pg,
    version_num: i32,
    db: &str,
) -> crate::Result<BTreeMap<String, f64>> {
    let mut m: BTreeMap<String, f64> = BTreeMap::new();
    for sql in counters_sql(version_num, db) {
        if let Ok(pairs) = pg.pairs(&sql) {
            m.extend(pairs);
        }
    }
    for (k, v) in pg.pairs(&gauges_sql(db))? {
        if k == "pg.db.size_bytes" {
            m.insert(k, v);
        }
    }
    // Autovacuum: runs completed on the database's tables, workers active now.
    let autovacuum = format!(
        "SELECT '{}', coalesce(sum(autovacuum_count + autoanalyze_count), 0)::float8 FROM pg_stat_all_tables \
         UNION ALL SELECT '{}', count(*)::float8 FROM pg_stat_activity WHERE backend_type = 'autovacuum worker'",
        pgsurge_store::window::AUTOVACUUM_RUNS_COUNTER,
        pgsurge_store::window::AUTOVACUUM_WORKERS_COUNTER
    );
    if let Ok(pairs) = pg.pairs(&autovacuum) {
        m.extend(pairs);
    }
    // The server start the snapshot was taken in: runs of one start share it.
    let start = format!(
        "SELECT '{}', extract(epoch FROM pg_postmaster_start_time())::float8",
        pgsurge_store::convert::SERVER_START_COUNTER
    );
    if let Ok(pairs) = pg.pairs(&start) {
        m.extend(pairs);
    }
    Ok(m)
}

/// The server's settings in force ([`SETTINGS_SQL`]), as stored with a test.
pub fn read_settings(pg: &mut Pg) -> crate::Result<Vec<SettingRecord>> {
    let mut out = Vec::new();
    for r in pg.rows(SETTINGS_SQL)? {
        let get = |i: usize| r.get(i).cloned().flatten();
        if let Some(name) = get(0) {
            out.push(SettingRecord {
                name,
                setting: get(1),
                unit: get(2),
                source: get(3),
                boot_val: get(4),
            });
        }
    }
    Ok(out)
}
