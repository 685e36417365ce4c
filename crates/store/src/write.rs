//! Writing to the store: sets, servers, targets, and runs (each run with everything
//! about it in one transaction, so a killed writer leaves either the whole test or
//! nothing).

use crate::backend::{insert_sql, Backend};
use crate::error::{Result, StoreError};
use crate::model::*;
use crate::value::{ToValue, Value};
use crate::Store;

fn insert_returning_id(
    b: &mut dyn Backend,
    table: &str,
    columns: &[&str],
    values: &[Value],
) -> Result<i64> {
    let sql = format!("{} RETURNING id", insert_sql(table, columns));
    let rows = b.query(&sql, values)?;
    rows.first()
        .ok_or_else(|| StoreError::BadValue {
            column: format!("{table}.id"),
            message: "INSERT … RETURNING id returned no row".into(),
        })?
        .read(0, "id")
}

fn update_by_id(
    b: &mut dyn Backend,
    table: &str,
    columns: &[&str],
    mut values: Vec<Value>,
    id: i64,
) -> Result<()> {
    let sets = columns
        .iter()
        .map(|c| format!("{c} = ?"))
        .collect::<Vec<_>>()
        .join(", ");
    values.push(Value::Int(id));
    b.execute(&format!("UPDATE {table} SET {sets} WHERE id = ?"), &values)?;
    Ok(())
}

/// Inserts a set (inside the caller's transaction) and returns its id.
pub(crate) fn insert_target(b: &mut dyn Backend, target: &TargetRecord) -> Result<i64> {
    let target = redacted_target(target);
    insert_returning_id(b, "targets", TargetRecord::COLUMNS, &target.values())
}

/// `t` with the passwords of its connection string and settings masked.
fn redacted_target(t: &TargetRecord) -> TargetRecord {
    TargetRecord {
        conninfo: t.conninfo.as_deref().map(pgsurge_wire::redact::redact),
        settings: t.settings.as_ref().map(redacted_json),
        ..t.clone()
    }
}

pub(crate) fn insert_set(b: &mut dyn Backend, set: &SetRecord) -> Result<i64> {
    insert_returning_id(b, "sets", SetRecord::COLUMNS, &set.values())
}

impl Store {
    /// Creates a set and returns its id.
    pub fn create_set(&mut self, set: &SetRecord) -> Result<i64> {
        self.transaction(|b| insert_set(b, set))
    }

    /// Sets a set's status (and `finished_at` when given).
    pub fn set_set_status(
        &mut self,
        set_id: i64,
        status: &str,
        finished_at: Option<&str>,
    ) -> Result<()> {
        let n = self.backend.execute(
            "UPDATE sets SET status = ?, finished_at = ? WHERE id = ?",
            &[
                status.to_value(),
                finished_at.map(str::to_string).to_value(),
                Value::Int(set_id),
            ],
        )?;
        if n == 0 {
            return Err(StoreError::NotFound {
                what: "set",
                id: set_id,
            });
        }
        Ok(())
    }

    /// Records how many tests a set's matrix holds (a campaign extended with new matrix
    /// values plans more tests in the same set).
    pub fn set_planned_tests(&mut self, set_id: i64, planned: i64) -> Result<()> {
        self.backend.execute(
            "UPDATE sets SET planned_tests = ? WHERE id = ?",
            &[Value::Int(planned), Value::Int(set_id)],
        )?;
        Ok(())
    }

    /// Inserts or updates (by name) a server and returns its id.
    pub fn upsert_server(&mut self, server: &ServerRecord) -> Result<i64> {
        self.transaction(|b| {
            let rows = b.query(
                "SELECT id FROM servers WHERE name = ?",
                &[server.name.to_value()],
            )?;
            match rows.first() {
                Some(r) => {
                    let id = r.read(0, "servers.id")?;
                    update_by_id(b, "servers", ServerRecord::COLUMNS, server.values(), id)?;
                    Ok(id)
                }
                None => insert_returning_id(b, "servers", ServerRecord::COLUMNS, &server.values()),
            }
        })
    }

    /// Inserts or updates (by set and name) a target and returns its id.
    pub fn upsert_target(&mut self, target: &TargetRecord) -> Result<i64> {
        let target = &redacted_target(target);
        self.transaction(|b| {
            let rows = b.query(
                "SELECT id FROM targets WHERE set_id = ? AND name = ?",
                &[Value::Int(target.set_id), target.name.to_value()],
            )?;
            match rows.first() {
                Some(r) => {
                    let id = r.read(0, "targets.id")?;
                    update_by_id(b, "targets", TargetRecord::COLUMNS, target.values(), id)?;
                    Ok(id)
                }
                None => insert_returning_id(b, "targets", TargetRecord::COLUMNS, &target.values()),
            }
        })
    }

    /// Writes one test and everything about it in one transaction; returns the run id.
    /// Fails with [`StoreError::DuplicateTest`] when the set already holds its test key.
    pub fn write_run(&mut self, w: &RunWrite) -> Result<i64> {
        let v = self.version;
        self.transaction(|b| write_run_in(b, v, w, false))
    }

    /// Like [`Store::write_run`], but first deletes a stored test with the same key (to
    /// rerun a failed test).
    pub fn write_run_replacing(&mut self, w: &RunWrite) -> Result<i64> {
        let v = self.version;
        self.transaction(|b| write_run_in(b, v, w, true))
    }

    /// Stores a warning (its message masked) and returns its id.
    pub fn add_warning(&mut self, warning: &WarningRecord) -> Result<i64> {
        let warning = WarningRecord {
            message: pgsurge_wire::redact::redact(&warning.message),
            ..warning.clone()
        };
        self.transaction(|b| {
            insert_returning_id(b, "warnings", WarningRecord::COLUMNS, &warning.values())
        })
    }

    /// Stores `fact` for a stored run, replacing a fact of the same name (facts known
    /// only once later runs are stored, such as `[repeats] until`'s).
    pub fn set_run_fact(&mut self, run_id: i64, fact: &FactRecord) -> Result<()> {
        if self.version < crate::schema::RUN_FACTS_SINCE {
            return Ok(());
        }
        self.transaction(|b| {
            b.execute(
                "INSERT INTO run_facts (run_id, name, value) VALUES (?, ?, ?) \
                 ON CONFLICT (run_id, name) DO UPDATE SET value = excluded.value",
                &[
                    Value::Int(run_id),
                    Value::Text(fact.name.clone()),
                    fact.value.clone().map_or(Value::Null, Value::Text),
                ],
            )?;
            Ok(())
        })
    }

    /// Deletes a run and everything about it.
    pub fn delete_run(&mut self, run_id: i64) -> Result<()> {
        let v = self.version;
        self.transaction(|b| delete_run_in(b, v, run_id))
    }

    /// Deletes a set with its targets, runs, warnings and live events.
    pub fn delete_set(&mut self, set_id: i64) -> Result<()> {
        let v = self.version;
        self.transaction(|b| {
            let ids = b.query(
                "SELECT id FROM runs WHERE set_id = ?",
                &[Value::Int(set_id)],
            )?;
            for r in ids {
                delete_run_in(b, v, r.read(0, "runs.id")?)?;
            }
            b.execute(
                "DELETE FROM warnings WHERE set_id = ?",
                &[Value::Int(set_id)],
            )?;
            b.execute(
                "DELETE FROM targets WHERE set_id = ?",
                &[Value::Int(set_id)],
            )?;
            if v >= crate::schema::LIVE_EVENTS_SINCE {
                b.execute(
                    "DELETE FROM live_events WHERE set_id = ?",
                    &[Value::Int(set_id)],
                )?;
            }
            let n = b.execute("DELETE FROM sets WHERE id = ?", &[Value::Int(set_id)])?;
            if n == 0 {
                return Err(StoreError::NotFound {
                    what: "set",
                    id: set_id,
                });
            }
            Ok(())
        })
    }
}

/// Child tables of `runs` with the schema version that added them, deleted explicitly
/// (PostgreSQL and SQLite both cascade, but SQLite only with `foreign_keys` on; explicit
/// deletes do not depend on it).
const RUN_CHILDREN: &[(&str, i64)] = &[
    ("run_intervals", 1),
    ("run_histograms", 1),
    ("run_interval_histograms", 3),
    ("run_metrics", 1),
    ("run_counters", 1),
    ("run_settings", 1),
    ("run_environment", 1),
    ("warnings", 1),
    ("run_facts", crate::schema::RUN_FACTS_SINCE),
    ("run_profiles", crate::schema::RUN_PROFILES_SINCE),
];

fn delete_run_in(b: &mut dyn Backend, version: i64, run_id: i64) -> Result<()> {
    for (t, since) in RUN_CHILDREN {
        if version < *since {
            continue;
        }
        b.execute(
            &format!("DELETE FROM {t} WHERE run_id = ?"),
            &[Value::Int(run_id)],
        )?;
    }
    b.execute("DELETE FROM runs WHERE id = ?", &[Value::Int(run_id)])?;
    Ok(())
}

fn with_run_id(run_id: i64, rows: Vec<Vec<Value>>) -> Vec<Vec<Value>> {
    rows.into_iter()
        .map(|mut r| {
            r.insert(0, Value::Int(run_id));
            r
        })
        .collect()
}

fn prefixed<'a>(columns: &[&'a str]) -> Vec<&'a str> {
    std::iter::once("run_id")
        .chain(columns.iter().copied())
        .collect()
}

/// `s` with every password in its values masked.
fn redacted_setting(s: &SettingRecord) -> SettingRecord {
    let mask = |v: &Option<String>| v.as_deref().map(pgsurge_wire::redact::redact);
    SettingRecord {
        setting: mask(&s.setting),
        boot_val: mask(&s.boot_val),
        ..s.clone()
    }
}

/// `v` with every password in its strings masked (each string as [`redact`] reads
/// text; a key named like a password hides its whole value).
///
/// [`redact`]: pgsurge_wire::redact::redact
pub(crate) fn redacted_json(v: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value as J;
    match v {
        J::String(s) => J::String(pgsurge_wire::redact::redact(s)),
        J::Array(a) => J::Array(a.iter().map(redacted_json).collect()),
        J::Object(o) => J::Object(
            o.iter()
                .map(|(k, v)| {
                    let secret = k.to_ascii_lowercase().ends_with("password")
                        && !matches!(v, J::Null | J::Bool(_));
                    let v = if secret {
                        J::String(pgsurge_wire::redact::MASK.to_string())
                    } else {
                        redacted_json(v)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

fn write_run_in(b: &mut dyn Backend, version: i64, w: &RunWrite, replace: bool) -> Result<i64> {
    let run = &w.run;
    let existing = b.query(
        "SELECT id FROM runs WHERE set_id = ? AND test_key = ?",
        &[Value::Int(run.set_id), run.test_key.to_value()],
    )?;
    if let Some(r) = existing.first() {
        if !replace {
            return Err(StoreError::DuplicateTest {
                set_id: run.set_id,
                test_key: run.test_key.clone(),
            });
        }
        delete_run_in(b, version, r.read(0, "runs.id")?)?;
    }
    // Everything of a run kept as text may quote a connection string: its error (a
    // server's or a generator's message), its options (a sweep's settings) and its
    // result document (the command line it ran with). Masked here, where it is kept.
    let masked = RunRecord {
        error: run.error.as_deref().map(pgsurge_wire::redact::redact),
        options: run.options.as_ref().map(redacted_json),
        result_json: run.result_json.as_ref().map(redacted_json),
        ..run.clone()
    };
    let run_id = insert_returning_id(b, "runs", RunRecord::COLUMNS, &masked.values())?;

    b.insert_many(
        "run_intervals",
        &prefixed(IntervalRecord::COLUMNS),
        &with_run_id(run_id, w.intervals.iter().map(|x| x.values()).collect()),
    )?;
    b.insert_many(
        "run_histograms",
        &prefixed(HistogramRecord::COLUMNS),
        &with_run_id(run_id, w.histograms.iter().map(|x| x.values()).collect()),
    )?;
    // Stores older than version 3 (opened with open_at_version) have no such table.
    if version >= 3 {
        b.insert_many(
            "run_interval_histograms",
            &prefixed(IntervalHistogramRecord::COLUMNS),
            &with_run_id(
                run_id,
                w.interval_histograms.iter().map(|x| x.values()).collect(),
            ),
        )?;
    }
    b.insert_many(
        "run_metrics",
        &prefixed(MetricSample::COLUMNS),
        &with_run_id(run_id, w.metrics.iter().map(|x| x.values()).collect()),
    )?;
    b.insert_many(
        "run_counters",
        &prefixed(CounterRecord::COLUMNS),
        &with_run_id(run_id, w.counters.iter().map(|x| x.values()).collect()),
    )?;
    // Settings and the environment may carry credentials (`primary_conninfo`, a
    // `restore_command` with a URL's user info): they are stored masked.
    b.insert_many(
        "run_settings",
        &prefixed(SettingRecord::COLUMNS),
        &with_run_id(
            run_id,
            w.settings
                .iter()
                .map(|x| redacted_setting(x).values())
                .collect(),
        ),
    )?;
    if let Some(env) = &w.environment {
        b.execute(
            "INSERT INTO run_environment (run_id, manifest) VALUES (?, ?)",
            &[Value::Int(run_id), redacted_json(env).to_value()],
        )?;
    }
    for info in &w.metric_info {
        b.execute(
            "INSERT INTO metrics_info (metric, category, unit, description) VALUES (?, ?, ?, ?) \
             ON CONFLICT (metric) DO UPDATE SET category = excluded.category, \
             unit = excluded.unit, description = excluded.description",
            &info.values(),
        )?;
    }
    if version >= crate::schema::RUN_FACTS_SINCE {
        b.insert_many(
            "run_facts",
            &prefixed(FactRecord::COLUMNS),
            &with_run_id(run_id, w.facts.iter().map(|x| x.values()).collect()),
        )?;
    }
    if version >= crate::schema::RUN_PROFILES_SINCE {
        b.insert_many(
            "run_profiles",
            &prefixed(ProfileRecord::COLUMNS),
            &with_run_id(run_id, w.profiles.iter().map(|x| x.values()).collect()),
        )?;
    }
    for warning in &w.warnings {
        let mut warning = warning.clone();
        warning.message = pgsurge_wire::redact::redact(&warning.message);
        warning.run_id = Some(run_id);
        warning.set_id = Some(run.set_id);
        insert_returning_id(b, "warnings", WarningRecord::COLUMNS, &warning.values())?;
    }
    Ok(run_id)
}
