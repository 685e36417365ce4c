//! The load marker: a row of the table `pgsurge_workload_load` in the loaded database,
//! saying that a pack's loader ran to its end there. The loader removes every row
//! before its first statement and writes its own after its last one succeeded, so a
//! load that was interrupted or failed leaves no row, and a run or a campaign that
//! finds none refuses the database (or loads it again) instead of measuring
//! half-loaded tables.
//!
//! A row is keyed by the loader's digest ([`loader_digest`]): packs that share their
//! loader files (`ycsb-a`…`ycsb-f`, `tpcc` and `tpcc-procedures`) share the data.

use pgsurge_wire::Connection;
use sha2::{Digest, Sha256};

use crate::error::WorkloadError;
use crate::manifest::Per;
use crate::pack::Pack;

/// The marker's table, in the loaded database.
pub const TABLE: &str = "pgsurge_workload_load";

/// What the marker of a finished load says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadMarker {
    /// The pack whose loader wrote it.
    pub pack: String,
    /// The scale it loaded (`-s`).
    pub scale: i64,
    /// The random seed the data derives from.
    pub seed: u64,
    /// [`loader_digest`] of the loader that ran.
    pub digest: String,
}

/// SHA-256 (hex) of what decides the loaded data: every loader file (schema, steps
/// with their `per`, finish) by path and bytes, in the order they run.
pub fn loader_digest(pack: &Pack) -> String {
    let load = &pack.manifest.load;
    let mut h = Sha256::new();
    let mut add = |phase: &str, rel: &str| {
        let text = pack.file(rel);
        for part in [phase, rel] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
        h.update((text.len() as u64).to_le_bytes());
        h.update(text.as_bytes());
    };
    for rel in &load.schema {
        add("schema", rel);
    }
    for step in &load.steps {
        let per = match step.per {
            Per::Once => "once",
            Per::Unit => "unit",
        };
        add(per, &step.file);
    }
    for rel in &load.finish {
        add("finish", rel);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

fn sql_error(what: &str, e: pgsurge_wire::QueryError) -> WorkloadError {
    WorkloadError::Sql {
        file: what.to_string(),
        message: e.to_string().trim_end().to_string(),
    }
}

/// Before a load's first statement: the table exists and holds no row. Every row
/// goes, not only this pack's: a pack's schema may drop any table.
pub(crate) fn clear(conn: &mut Connection) -> Result<(), WorkloadError> {
    conn.execute(&format!(
        "set client_min_messages = warning; \
         create table if not exists {TABLE} (\
           loader_digest text primary key, pack text not null, scale bigint not null, \
           seed numeric(20) not null, finished_at timestamptz not null default now()); \
         delete from {TABLE}"
    ))
    .map_err(|e| sql_error("the load marker", e))
}

/// After a load's last statement succeeded: its marker.
pub(crate) fn write(conn: &mut Connection, marker: &LoadMarker) -> Result<(), WorkloadError> {
    let scale = marker.scale.to_string();
    let seed = marker.seed.to_string();
    conn.query_params(
        &format!(
            "insert into {TABLE} (loader_digest, pack, scale, seed) values ($1, $2, $3, $4) \
             on conflict (loader_digest) do update set pack = excluded.pack, \
             scale = excluded.scale, seed = excluded.seed, finished_at = now()"
        ),
        &[
            Some(&marker.digest),
            Some(&marker.pack),
            Some(&scale),
            Some(&seed),
        ],
    )
    .map(|_| ())
    .map_err(|e| sql_error("the load marker", e))
}

/// The marker of a finished load of `pack`'s loader in the database of `conn`; an
/// error when there is none (the load did not finish, another pack's load replaced it,
/// or the tables were never loaded by this loader).
pub fn read(pack: &Pack, conn: &mut Connection) -> Result<LoadMarker, WorkloadError> {
    let not_loaded = |why: &str| WorkloadError::NotLoaded {
        pack: pack.name().to_string(),
        message: why.to_string(),
    };
    let exists = conn
        .simple_query(&format!("select to_regclass('{TABLE}') is not null"))
        .map_err(|e| sql_error("the load marker", e))?;
    if exists.last().and_then(|r| r.get(0, 0)) != Some("t") {
        return Err(not_loaded(
            "no load of a workload pack finished in this database",
        ));
    }
    let digest = loader_digest(pack);
    let rows = conn
        .query_params(
            &format!("select pack, scale, seed from {TABLE} where loader_digest = $1"),
            &[Some(&digest)],
        )
        .map_err(|e| sql_error("the load marker", e))?;
    let row = rows.last().filter(|r| !r.rows.is_empty()).ok_or_else(|| {
        not_loaded(
            "no load by its loader finished in this database (a load was interrupted or \
             failed, another pack was loaded since, or its loader files changed)",
        )
    })?;
    let field = |i: usize| row.get(0, i).unwrap_or("").to_string();
    Ok(LoadMarker {
        pack: field(0),
        scale: field(1).parse().unwrap_or(0),
        seed: field(2).parse().unwrap_or(0),
        digest,
    })
}
