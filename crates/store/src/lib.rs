//! The results store: every campaign, run, interval, histogram, metric sample, setting
//! and environment manifest pgsurge records, in a versioned schema on SQLite (a file, the
//! default) or PostgreSQL (a URL). Written by `pgsurge-campaign` and `pgsurge-records`
//! (and the generators of distributed runs), read by `pgsurge-report`.
//!
//! This crate owns the schema (`migrations/*.sql`, applied in order; the version is in
//! `PRAGMA user_version` on SQLite and in table `pgsurge_schema` on PostgreSQL), a
//! typed API over it, the names of what is stored by name (facts, wait-event metrics)
//! and the conversion of a [`pgsurge_results::RunResult`] into records. It knows
//! nothing about running benchmarks.
//!
//! | module | owns |
//! |---|---|
//! | `model` (re-exported at the root) | the records of every table, set kinds and statuses |
//! | `backend`, `pgconn`, `value` | SQLite and PostgreSQL behind one interface |
//! | `schema` | migrations and the schema version |
//! | `read`, `write` | queries and the one-transaction write of a run |
//! | `lock` | the lock of a set held by the campaign writing it |
//! | `live` | what a running campaign tells, kept for `campaign watch` in another process ([`LiveEvent`]) |
//! | [`histogram`] | HdrHistogram blobs: encoding, decoding, merging |
//! | [`activity`] | wait-event metrics and top statements: names and JSON shape |
//! | [`facts`] | names of the per-test facts (`run_facts`) |
//! | [`profile`] | profiles' folded stacks, deflated for `run_profiles`, and back |
//! | [`convert`] | `RunResult` and interval samples → run, histogram and interval records |
//! | [`window`] | a run's measured window before it is stored: its figures made the steady window's (`warmup = "auto"`), a checkpoint inside a window shorter than one checkpoint cycle |
//! | [`validity`] | what a run's stored facts and figures say about its validity, read once into `pgsurge_analysis`'s evidence |
//! | `error` | [`StoreError`] |
//!
//! Each module uses only modules below it in this order: `error` ← `value` ← `model` ←
//! `pgconn` ← `backend` ← `schema` ← `write` ← `lock`, `live`, `read` ← the public modules
//! (`histogram`, `activity`, `facts`, `profile`, `convert`, `window`, `validity`). [`Store`] itself is defined in the
//! crate root; `read`, `write`, `lock` and `live` add its methods.
//!
//! ```no_run
//! use pgsurge_store::{Store, RunFilter};
//! let mut store = Store::open("pgsurge-results.db")?;
//! for set in store.list_sets()? {
//!     println!("{} {} {} ok / {} failed", set.id, set.record.name, set.runs_ok, set.runs_failed);
//!     for run in store.list_runs(&RunFilter { set_id: Some(set.id), ..Default::default() })? {
//!         let full = store.load_run(run.id)?; // intervals, metrics, histograms, settings, manifest
//!         let latency = pgsurge_store::histogram::merged(&full.histograms, "latency", -1)?;
//!         println!("{} tps={:?} p99={:?}us", run.record.test_key, run.record.tps,
//!                  latency.map(|h| h.value_at_quantile(0.99)));
//!     }
//! }
//! # Ok::<(), pgsurge_store::StoreError>(())
//! ```
//!
//! Schema summary (see `migrations/*.sql` for every column):
//! `servers`, `sets`, `targets`, `runs` (unique `(set_id, test_key)`), `run_intervals`,
//! `run_histograms` (HdrHistogram V2 blobs, so percentiles over repeats are exact),
//! `run_interval_histograms` (version 3: one compressed histogram per interval, so
//! percentiles over any window of a run, or of several repeats, are exact),
//! `run_metrics` (long format: run, ts, metric, value) with `metrics_info`,
//! `run_counters`, `run_settings`, `run_environment` (JSON manifest), `warnings`,
//! `run_facts`, `run_profiles` (version 6: folded call stacks of the measured window),
//! `live_events` (version 7: a running campaign's events, for `campaign watch`).

#![warn(missing_docs)]

pub mod activity;
mod backend;
pub mod convert;
mod error;
pub mod facts;
pub mod histogram;
mod live;
mod lock;
mod model;
mod pgconn;
pub mod profile;
mod read;
mod schema;
pub mod validity;
mod value;
pub mod window;
mod write;

pub use backend::Dialect;
pub use error::{Result, StoreError};
pub use live::{LiveEvent, INTERVAL_KIND};
pub use lock::{this_host, LockHolder, SetLock, HEARTBEAT_EVERY, STALE_AFTER};
pub use model::*;
pub use pgsurge_results::write_output;
pub use schema::{LIVE_EVENTS_SINCE, SCHEMA_VERSION};
pub use value::{FromValue, Row, ToValue, Value};

use backend::Backend;

/// Name of the default store file, created in the current directory.
pub const DEFAULT_STORE_FILE: &str = "pgsurge-results.db";

/// Environment variable naming the store when `--store` is not given.
pub const STORE_ENV: &str = "PGSURGE_STORE";

/// The store location to use when none was given: `$PGSURGE_STORE`, else
/// [`DEFAULT_STORE_FILE`] in the current directory.
pub fn default_location() -> String {
    std::env::var(STORE_ENV)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| DEFAULT_STORE_FILE.to_string())
}

/// True when `location` names a PostgreSQL database (URL or conninfo) rather than a file.
pub fn is_postgres_location(location: &str) -> bool {
    location.starts_with("postgres://")
        || location.starts_with("postgresql://")
        || (location.contains('=') && !location.contains('/') && location.contains(' '))
        || location.starts_with("host=")
        || location.starts_with("dbname=")
}

/// `location` with every password masked (`postgres://u:********@h/db`,
/// `password=********`): what to print when naming a store.
pub fn redact_location(location: &str) -> String {
    pgsurge_wire::redact::redact(location)
}

/// `text` (a setting's value, a connection string, hook output) with every password
/// masked, as the store keeps it.
pub fn redact_text(text: &str) -> String {
    pgsurge_wire::redact::redact(text)
}

/// `value` with every password in its strings masked, and the whole value of every key
/// named like a password, as the store keeps JSON documents.
pub fn redact_json(value: &serde_json::Value) -> serde_json::Value {
    write::redacted_json(value)
}

fn check_location(location: &str) -> Result<()> {
    if location.is_empty() {
        return Err(StoreError::BadLocation("empty store location".into()));
    }
    Ok(())
}

/// Errors when the directory a SQLite store file would be created in does not exist.
fn check_directory(location: &str) -> Result<()> {
    match std::path::Path::new(location).parent() {
        Some(parent) if !parent.as_os_str().is_empty() && !parent.is_dir() => {
            Err(StoreError::BadLocation(format!(
                "cannot create {location}: directory {} does not exist",
                parent.display()
            )))
        }
        _ => Ok(()),
    }
}

/// An open results store.
pub struct Store {
    backend: Box<dyn Backend>,
    /// Redacted: safe to print.
    location: String,
    /// As given (with its password), to open more connections; never printed.
    raw_location: String,
    /// Schema version after opening (what the writer may use; older stores opened with
    /// [`Store::open_at_version`] lack the newer tables).
    version: i64,
    /// Runs the readers met and could not read (or were told to skip), by id.
    skipped: std::collections::BTreeMap<i64, UnreadableRun>,
    /// Inside [`Store::all_or_nothing`]: each write joins its transaction.
    in_outer: bool,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store")
            .field("location", &self.location)
            .field("dialect", &self.backend.dialect())
            .finish()
    }
}

impl Store {
    /// Opens the store at `location` and brings its schema to [`SCHEMA_VERSION`]:
    /// a `postgres://` / `postgresql://` URL or a conninfo string opens PostgreSQL;
    /// `:memory:` an in-memory SQLite database; anything else a SQLite file (created).
    pub fn open(location: &str) -> Result<Self> {
        Self::open_at_version(location, SCHEMA_VERSION)
    }

    /// Opens the store migrating only up to `version` (tests of migrations use this to
    /// build an old store). Fails if the store is newer than this build.
    pub fn open_at_version(location: &str, version: i64) -> Result<Self> {
        check_location(location)?;
        let backend: Box<dyn Backend> = if is_postgres_location(location) {
            Box::new(backend::postgres::PostgresBackend::connect(location)?)
        } else {
            check_directory(location)?;
            Box::new(backend::sqlite::SqliteBackend::open(location)?)
        };
        let mut store = Store::with_backend(backend, location)?;
        schema::migrate(
            store.backend.as_mut(),
            version.min(SCHEMA_VERSION),
            &store.location,
        )?;
        store.version = store.backend.schema_version()?;
        Ok(store)
    }

    /// Opens an existing store for reading only (`results`, `report`, `compare`):
    /// nothing is created, migrated or switched to WAL, so a store on read-only media
    /// can be read and a foreign SQLite file is left as it was. A store written by an
    /// older pgsurge is read as it is (readers know every older schema).
    pub fn open_read_only(location: &str) -> Result<Self> {
        check_location(location)?;
        let backend: Box<dyn Backend> = if is_postgres_location(location) {
            let mut b = backend::postgres::PostgresBackend::connect(location)?;
            b.batch("SET default_transaction_read_only = on")?;
            Box::new(b)
        } else if location == ":memory:" {
            return Err(StoreError::BadLocation(
                "an in-memory store cannot be opened read-only".into(),
            ));
        } else {
            Box::new(backend::sqlite::SqliteBackend::open_read_only(location)?)
        };
        let mut store = Store::with_backend(backend, location)?;
        store.version = store.backend.schema_version()?;
        if store.version == 0 {
            schema::refuse_unversioned_tables(store.backend.as_mut(), &store.location)?;
            return Err(StoreError::BadLocation(format!(
                "{} is not a pgsurge results store (it is empty)",
                store.location
            )));
        }
        Ok(store)
    }

    /// Whether this read-only store is a snapshot that never shows what is written
    /// after it was opened: a SQLite store in WAL mode whose directory this user may
    /// not write (SQLite then reads the file as immutable, without its write-ahead
    /// log). A reader that follows a running campaign refuses such a store.
    pub fn reads_a_snapshot(&self) -> bool {
        self.backend.snapshot_only()
    }

    /// Checks, without creating or changing anything, that [`Store::open`] would
    /// accept `location`: a store of this or an older schema version, or a database
    /// or file that does not exist yet or holds nothing. What writes a run only once
    /// it has ended (`bench --store`) calls this first, so a store it cannot use fails
    /// before the run, not after it: a newer schema ([`StoreError::TooNew`]), another
    /// program's database, a missing directory, an unreachable server.
    pub fn check_writable(location: &str) -> Result<()> {
        check_location(location)?;
        let backend: Box<dyn Backend> = if is_postgres_location(location) {
            let mut b = backend::postgres::PostgresBackend::connect(location)?;
            b.batch("SET default_transaction_read_only = on")?;
            Box::new(b)
        } else if location == ":memory:" {
            return Ok(());
        } else {
            if !std::path::Path::new(location).exists() {
                return check_directory(location);
            }
            Box::new(backend::sqlite::SqliteBackend::open_read_only(location)?)
        };
        let mut store = Store::with_backend(backend, location)?;
        if store.version == 0 {
            schema::refuse_unversioned_tables(store.backend.as_mut(), &store.location)?;
        }
        Ok(())
    }

    fn with_backend(mut backend: Box<dyn Backend>, raw: &str) -> Result<Self> {
        let found = backend.schema_version()?;
        let location = redact_location(raw);
        if found > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                location,
                found,
                known: SCHEMA_VERSION,
            });
        }
        Ok(Store {
            backend,
            location,
            raw_location: raw.to_string(),
            version: found,
            skipped: Default::default(),
            in_outer: false,
        })
    }

    /// Where the store is: the path or URL as given, with any password masked
    /// ([`redact_location`]), so it can be printed.
    pub fn location(&self) -> &str {
        &self.location
    }

    /// The backend's dialect.
    pub fn dialect(&self) -> Dialect {
        self.backend.dialect()
    }

    /// The schema version of the open store.
    pub fn schema_version(&mut self) -> Result<i64> {
        self.backend.schema_version()
    }

    /// Runs a read-only query and returns its rows (`?` placeholders) — for reports
    /// that need an aggregate the typed API does not offer.
    pub fn query(&mut self, sql: &str, params: &[Value]) -> Result<Vec<Row>> {
        self.backend.query(sql, params)
    }

    /// Runs `f` with every write it makes through this store in one transaction:
    /// committed when `f` returns Ok, rolled back when it returns Err or a write fails,
    /// so a reader sees all of them or none. The outer `Err` is the store's own failure
    /// to begin or commit; the inner one is `f`'s. (The set-claiming writes of
    /// [`Store::claim_set`] take their own exclusive transaction and cannot be used in `f`.)
    pub fn all_or_nothing<T, E>(
        &mut self,
        f: impl FnOnce(&mut Store) -> std::result::Result<T, E>,
    ) -> Result<std::result::Result<T, E>> {
        if self.in_outer {
            return Ok(f(self));
        }
        self.backend.begin_write()?;
        self.in_outer = true;
        let out = f(self);
        self.in_outer = false;
        match out {
            Ok(v) => {
                self.backend.batch("COMMIT")?;
                Ok(Ok(v))
            }
            Err(e) => {
                self.backend.batch("ROLLBACK")?;
                Ok(Err(e))
            }
        }
    }

    /// Runs `f` inside one transaction: committed if it returns Ok, rolled back otherwise
    /// (inside [`Store::all_or_nothing`], `f` joins that transaction).
    pub(crate) fn transaction<T>(
        &mut self,
        f: impl FnOnce(&mut dyn Backend) -> Result<T>,
    ) -> Result<T> {
        if self.in_outer {
            return f(self.backend.as_mut());
        }
        self.backend.begin_write()?;
        match f(self.backend.as_mut()) {
            Ok(v) => {
                self.backend.batch("COMMIT")?;
                Ok(v)
            }
            Err(e) => {
                let _ = self.backend.batch("ROLLBACK");
                Err(e)
            }
        }
    }
}
