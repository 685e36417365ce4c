//! Reading the store: the API the report, `compare` and `pgsurge results` use.

use crate::error::{Result, StoreError};
use crate::model::*;
use crate::value::{Row, ToValue, Value};
use crate::Store;

const SET_COUNTS: &str =
    "(SELECT count(*) FROM runs r WHERE r.set_id = s.id AND r.status IN ('ok', 'imported')), \
     (SELECT count(*) FROM runs r WHERE r.set_id = s.id AND r.status IN ('failed', 'aborted'))";

fn set_from_row(r: &Row) -> Result<Set> {
    let n = SetRecord::COLUMNS.len();
    Ok(Set {
        id: r.read(0, "sets.id")?,
        record: SetRecord::from_row(r, 1)?,
        runs_ok: r.read(n + 1, "runs_ok")?,
        runs_failed: r.read(n + 2, "runs_failed")?,
    })
}

impl Store {
    /// Every set, oldest first, with run counts.
    pub fn list_sets(&mut self) -> Result<Vec<Set>> {
        let sql = format!(
            "SELECT s.id, {}, {SET_COUNTS} FROM sets s ORDER BY s.id",
            SetRecord::select_list("s")
        );
        self.backend
            .query(&sql, &[])?
            .iter()
            .map(set_from_row)
            .collect()
    }

    /// One set.
    pub fn set(&mut self, set_id: i64) -> Result<Set> {
        let sql = format!(
            "SELECT s.id, {}, {SET_COUNTS} FROM sets s WHERE s.id = ?",
            SetRecord::select_list("s")
        );
        let rows = self.backend.query(&sql, &[Value::Int(set_id)])?;
        rows.first()
            .map(set_from_row)
            .unwrap_or(Err(StoreError::NotFound {
                what: "set",
                id: set_id,
            }))
    }

    /// The id of a set given by id or by name (the newest set of that name wins), as the
    /// commands that take a set accept it. A number that is no set's id is tried as a name.
    pub fn resolve_set(&mut self, given: &str) -> Result<i64> {
        let sets = self.list_sets()?;
        if let Ok(id) = given.parse::<i64>() {
            if sets.iter().any(|x| x.id == id) {
                return Ok(id);
            }
        }
        if let Some(set) = sets.iter().rev().find(|x| x.record.name == given) {
            return Ok(set.id);
        }
        let known = if sets.is_empty() {
            "none".to_string()
        } else {
            sets.iter()
                .map(|x| format!("{} ({})", x.id, x.record.name))
                .collect::<Vec<_>>()
                .join(", ")
        };
        Err(StoreError::NoSuchSet {
            given: given.to_string(),
            known,
        })
    }

    /// The newest set of `kind` named `name` whose spec hash is `spec_hash` (how a rerun
    /// of a campaign finds the set to resume).
    pub fn find_set(&mut self, kind: &str, name: &str, spec_hash: &str) -> Result<Option<Set>> {
        let sql = format!(
            "SELECT s.id, {}, {SET_COUNTS} FROM sets s \
             WHERE s.kind = ? AND s.name = ? AND s.spec_hash = ? ORDER BY s.id DESC LIMIT 1",
            SetRecord::select_list("s")
        );
        let rows = self.backend.query(
            &sql,
            &[kind.to_value(), name.to_value(), spec_hash.to_value()],
        )?;
        rows.first().map(set_from_row).transpose()
    }

    /// Every server.
    pub fn servers(&mut self) -> Result<Vec<Server>> {
        let sql = format!(
            "SELECT s.id, {} FROM servers s ORDER BY s.id",
            ServerRecord::select_list("s")
        );
        self.backend
            .query(&sql, &[])?
            .iter()
            .map(|r| {
                Ok(Server {
                    id: r.read(0, "servers.id")?,
                    record: ServerRecord::from_row(r, 1)?,
                })
            })
            .collect()
    }

    /// The targets of a set.
    pub fn targets(&mut self, set_id: i64) -> Result<Vec<Target>> {
        let sql = format!(
            "SELECT t.id, {} FROM targets t WHERE t.set_id = ? ORDER BY t.id",
            TargetRecord::select_list("t")
        );
        self.backend
            .query(&sql, &[Value::Int(set_id)])?
            .iter()
            .map(target_from_row)
            .collect()
    }

    /// Runs matching `filter`, in set then planned order. A row that does not decode
    /// is an error naming the run ([`StoreError::UnreadableRun`]); readers that should
    /// go on without it use [`Store::readable_runs`].
    pub fn list_runs(&mut self, filter: &RunFilter) -> Result<Vec<Run>> {
        let rows = self.run_rows(filter)?;
        let mut out = Vec::with_capacity(rows.len());
        for r in &rows {
            out.push(run_from_row(r).map_err(|e| self.unreadable_row(r, e))?);
        }
        Ok(out)
    }

    /// Runs matching `filter` that can be read, as [`Store::list_runs`]: a run whose
    /// row or whole-run histograms do not decode is left out and recorded
    /// ([`Store::skipped_runs`]), so one damaged run does not hide the others.
    pub fn readable_runs(&mut self, filter: &RunFilter) -> Result<Vec<Run>> {
        let rows = self.run_rows(filter)?;
        let mut runs = Vec::with_capacity(rows.len());
        for r in &rows {
            match run_from_row(r) {
                Ok(run) => runs.push(run),
                Err(e) => {
                    let e = self.unreadable_row(r, e);
                    if !matches!(e, StoreError::UnreadableRun(_)) {
                        return Err(e);
                    }
                }
            }
        }
        self.keep_readable(runs)
    }

    /// `runs` without those whose whole-run histograms do not decode (recorded in
    /// [`Store::skipped_runs`]).
    pub fn keep_readable(&mut self, runs: Vec<Run>) -> Result<Vec<Run>> {
        let mut out = Vec::with_capacity(runs.len());
        for run in runs {
            let records = self.children(
                &format!(
                    "SELECT {} FROM run_histograms x WHERE x.run_id = ?",
                    HistogramRecord::select_list("x")
                ),
                &[Value::Int(run.id)],
                HistogramRecord::from_row,
            );
            let bad = match records {
                Ok(records) => records.iter().find_map(|h| {
                    h.decode().err().map(|e| {
                        let what = match e {
                            StoreError::Histogram(m) => m,
                            other => other.to_string(),
                        };
                        match h.script_index {
                            i if i < 0 => format!("whole-run {} histogram: {what}", h.kind),
                            i => format!("{} histogram of script {i}: {what}", h.kind),
                        }
                    })
                }),
                Err(e) => Some(data_error(&e).ok_or(e)?),
            };
            match bad {
                Some(reason) => self.skip_run(&run, reason),
                None => out.push(run),
            }
        }
        Ok(out)
    }

    /// Records `run` as skipped by a reader, with why (e.g. it holds impossible values).
    pub fn skip_run(&mut self, run: &Run, reason: String) {
        self.record_skip(UnreadableRun {
            run_id: run.id,
            set_id: Some(run.record.set_id),
            test_key: Some(run.record.test_key.clone()),
            reason,
        });
    }

    /// Records a skipped run (the first reason found for it stays) and returns it.
    fn record_skip(&mut self, run: UnreadableRun) -> UnreadableRun {
        self.skipped.entry(run.run_id).or_insert(run).clone()
    }

    /// The runs met so far that could not be read (or were skipped with
    /// [`Store::skip_run`]), by id: what a reader names when it is done.
    pub fn skipped_runs(&self) -> Vec<UnreadableRun> {
        self.skipped.values().cloned().collect()
    }

    /// The error for a `runs` row that did not decode: a data error becomes
    /// [`StoreError::UnreadableRun`] naming the run (and is recorded); others pass.
    fn unreadable_row(&mut self, r: &Row, e: StoreError) -> StoreError {
        let Some(reason) = data_error(&e) else {
            return e;
        };
        let column = |name: &str| {
            RunRecord::COLUMNS
                .iter()
                .position(|c| *c == name)
                .map(|i| i + 1)
        };
        StoreError::UnreadableRun(self.record_skip(UnreadableRun {
            run_id: r.read(0, "runs.id").unwrap_or(-1),
            set_id: column("set_id").and_then(|i| r.read(i, "set_id").ok()),
            test_key: column("test_key").and_then(|i| r.read(i, "test_key").ok()),
            reason,
        }))
    }

    fn run_rows(&mut self, filter: &RunFilter) -> Result<Vec<Row>> {
        let mut sql = format!(
            "SELECT r.id, {} FROM runs r WHERE 1 = 1",
            RunRecord::select_list("r")
        );
        let mut params = Vec::new();
        if let Some(s) = filter.set_id {
            sql.push_str(" AND r.set_id = ?");
            params.push(Value::Int(s));
        }
        if let Some(t) = filter.target_id {
            sql.push_str(" AND r.target_id = ?");
            params.push(Value::Int(t));
        }
        if let Some(st) = &filter.status {
            sql.push_str(" AND r.status = ?");
            params.push(st.to_value());
        }
        sql.push_str(" ORDER BY r.set_id, r.seq, r.id");
        self.backend.query(&sql, &params)
    }

    /// One run (its `runs` row only). A row that does not decode is
    /// [`StoreError::UnreadableRun`], naming the run.
    pub fn run(&mut self, run_id: i64) -> Result<Run> {
        let sql = format!(
            "SELECT r.id, {} FROM runs r WHERE r.id = ?",
            RunRecord::select_list("r")
        );
        let rows = self.backend.query(&sql, &[Value::Int(run_id)])?;
        let Some(r) = rows.first() else {
            return Err(StoreError::NotFound {
                what: "run",
                id: run_id,
            });
        };
        run_from_row(r).map_err(|e| self.unreadable_row(r, e))
    }

    /// The test keys stored in a set, with their status (resume uses this).
    pub fn stored_tests(&mut self, set_id: i64) -> Result<Vec<(String, String)>> {
        self.backend
            .query(
                "SELECT test_key, status FROM runs WHERE set_id = ? ORDER BY id",
                &[Value::Int(set_id)],
            )?
            .iter()
            .map(|r| Ok((r.read(0, "test_key")?, r.read(1, "status")?)))
            .collect()
    }

    /// A run with its target, intervals, histograms, metrics, counters, settings,
    /// environment manifest and warnings. A row of it that does not decode is
    /// [`StoreError::UnreadableRun`], naming the run (and recorded in
    /// [`Store::skipped_runs`]).
    pub fn load_run(&mut self, run_id: i64) -> Result<LoadedRun> {
        let run = self.run(run_id)?;
        let (set_id, test_key) = (run.record.set_id, run.record.test_key.clone());
        self.load_with(run).map_err(|e| match data_error(&e) {
            Some(reason) => StoreError::UnreadableRun(self.record_skip(UnreadableRun {
                run_id,
                set_id: Some(set_id),
                test_key: Some(test_key),
                reason,
            })),
            None => e,
        })
    }

    fn load_with(&mut self, run: Run) -> Result<LoadedRun> {
        let run_id = run.id;
        let target = match run.record.target_id {
            Some(t) => {
                let sql = format!(
                    "SELECT t.id, {} FROM targets t WHERE t.id = ?",
                    TargetRecord::select_list("t")
                );
                let rows = self.backend.query(&sql, &[Value::Int(t)])?;
                rows.first().map(target_from_row).transpose()?
            }
            None => None,
        };
        let id = [Value::Int(run_id)];
        let intervals = self.children(
            &format!(
                "SELECT {} FROM run_intervals x WHERE x.run_id = ? ORDER BY x.ts",
                IntervalRecord::select_list("x")
            ),
            &id,
            IntervalRecord::from_row,
        )?;
        let histograms = self.children(
            &format!(
                "SELECT {} FROM run_histograms x WHERE x.run_id = ? ORDER BY x.kind, x.script_index",
                HistogramRecord::select_list("x")
            ),
            &id,
            HistogramRecord::from_row,
        )?;
        let metrics = self.children(
            &format!(
                "SELECT {} FROM run_metrics x WHERE x.run_id = ? ORDER BY x.metric, x.ts",
                MetricSample::select_list("x")
            ),
            &id,
            MetricSample::from_row,
        )?;
        let counters = self.children(
            &format!(
                "SELECT {} FROM run_counters x WHERE x.run_id = ? ORDER BY x.name",
                CounterRecord::select_list("x")
            ),
            &id,
            CounterRecord::from_row,
        )?;
        let settings = self.children(
            &format!(
                "SELECT {} FROM run_settings x WHERE x.run_id = ? ORDER BY x.name",
                SettingRecord::select_list("x")
            ),
            &id,
            SettingRecord::from_row,
        )?;
        let environment = self
            .backend
            .query("SELECT manifest FROM run_environment WHERE run_id = ?", &id)?
            .first()
            .map(|r| r.read::<serde_json::Value>(0, "run_environment.manifest"))
            .transpose()?;
        let warnings = self.children(
            &format!(
                "SELECT {} FROM warnings x WHERE x.run_id = ? ORDER BY x.id",
                WarningRecord::select_list("x")
            ),
            &id,
            WarningRecord::from_row,
        )?;
        let facts = if self.version >= crate::schema::RUN_FACTS_SINCE {
            self.children(
                &format!(
                    "SELECT {} FROM run_facts x WHERE x.run_id = ? ORDER BY x.name",
                    FactRecord::select_list("x")
                ),
                &id,
                FactRecord::from_row,
            )?
        } else {
            Vec::new()
        };
        Ok(LoadedRun {
            run,
            target,
            intervals,
            histograms,
            metrics,
            counters,
            settings,
            environment,
            warnings,
            facts,
        })
    }

    /// The profiles stored with a run, by kind (empty on stores older than
    /// `run_profiles`); decode them with [`crate::profile::decode`].
    pub fn profiles(&mut self, run_id: i64) -> Result<Vec<ProfileRecord>> {
        if self.version < crate::schema::RUN_PROFILES_SINCE {
            return Ok(Vec::new());
        }
        self.children(
            &format!(
                "SELECT {} FROM run_profiles x WHERE x.run_id = ? ORDER BY x.kind",
                ProfileRecord::select_list("x")
            ),
            &[Value::Int(run_id)],
            ProfileRecord::from_row,
        )
    }

    /// The facts of the runs of a set, as (run id, name, value) ordered by run and name
    /// (empty on stores older than `run_facts`).
    pub fn set_facts(&mut self, set_id: i64) -> Result<Vec<(i64, FactRecord)>> {
        if self.version < crate::schema::RUN_FACTS_SINCE {
            return Ok(Vec::new());
        }
        let sql = format!(
            "SELECT f.run_id, {} FROM run_facts f JOIN runs r ON r.id = f.run_id \
             WHERE r.set_id = ? ORDER BY f.run_id, f.name",
            FactRecord::select_list("f")
        );
        let rows = self.backend.query(&sql, &[Value::Int(set_id)])?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.read::<i64>(0, "run_facts.run_id")?,
                    FactRecord::from_row(r, 1)?,
                ))
            })
            .collect()
    }

    /// The whole-run histograms of several runs (to merge repeats: see
    /// [`crate::histogram::merged`]).
    pub fn histograms(&mut self, run_ids: &[i64]) -> Result<Vec<HistogramRecord>> {
        let mut out = Vec::new();
        for id in run_ids {
            out.extend(self.children(
                &format!(
                    "SELECT {} FROM run_histograms x WHERE x.run_id = ?",
                    HistogramRecord::select_list("x")
                ),
                &[Value::Int(*id)],
                HistogramRecord::from_row,
            )?);
        }
        Ok(out)
    }

    /// The per-interval histograms of several runs whose interval starts in `window`,
    /// by run then time (merge them with [`crate::histogram::merged_intervals`] for exact
    /// percentiles over a window, or over the same window of several repeats).
    pub fn interval_histograms(
        &mut self,
        run_ids: &[i64],
        kind: &str,
        window: IntervalWindow,
    ) -> Result<Vec<IntervalHistogram>> {
        if self.version < 3 {
            return Ok(Vec::new());
        }
        let mut sql = format!(
            "SELECT x.run_id, {} FROM run_interval_histograms x WHERE x.run_id = ? AND x.kind = ?",
            IntervalHistogramRecord::select_list("x")
        );
        if window.from_s.is_some() {
            sql.push_str(" AND x.elapsed_s >= ?");
        }
        if window.to_s.is_some() {
            sql.push_str(" AND x.elapsed_s < ?");
        }
        sql.push_str(" ORDER BY x.ts");
        let mut out = Vec::new();
        for id in run_ids {
            let mut params = vec![Value::Int(*id), kind.to_value()];
            params.extend(window.from_s.map(Value::Real));
            params.extend(window.to_s.map(Value::Real));
            for r in self.backend.query(&sql, &params)? {
                out.push(IntervalHistogram {
                    run_id: r.read(0, "run_interval_histograms.run_id")?,
                    record: IntervalHistogramRecord::from_row(&r, 1)?,
                });
            }
        }
        Ok(out)
    }

    /// One metric's samples of a run, by time, as (epoch seconds, value).
    pub fn metric_series(&mut self, run_id: i64, metric: &str) -> Result<Vec<(f64, f64)>> {
        self.backend
            .query(
                "SELECT ts, value FROM run_metrics WHERE run_id = ? AND metric = ? ORDER BY ts",
                &[Value::Int(run_id), metric.to_value()],
            )?
            .iter()
            .map(|r| Ok((r.read(0, "ts")?, r.read(1, "value")?)))
            .collect()
    }

    /// The metric names a run has samples for.
    pub fn metric_names(&mut self, run_id: i64) -> Result<Vec<String>> {
        self.backend
            .query(
                "SELECT DISTINCT metric FROM run_metrics WHERE run_id = ? ORDER BY metric",
                &[Value::Int(run_id)],
            )?
            .iter()
            .map(|r| r.read(0, "metric"))
            .collect()
    }

    /// What every known metric name means.
    pub fn metrics_info(&mut self) -> Result<Vec<MetricInfo>> {
        let sql = format!(
            "SELECT {} FROM metrics_info x ORDER BY x.metric",
            MetricInfo::select_list("x")
        );
        self.children(&sql, &[], MetricInfo::from_row)
    }

    /// Warnings of a set (all sets when None), oldest first.
    pub fn warnings(&mut self, set_id: Option<i64>) -> Result<Vec<Warning>> {
        let (filter, params) = match set_id {
            Some(s) => (" WHERE x.set_id = ?", vec![Value::Int(s)]),
            None => ("", vec![]),
        };
        let sql = format!(
            "SELECT x.id, {} FROM warnings x{filter} ORDER BY x.id",
            WarningRecord::select_list("x")
        );
        self.backend
            .query(&sql, &params)?
            .iter()
            .map(|r| {
                Ok(Warning {
                    id: r.read(0, "warnings.id")?,
                    record: WarningRecord::from_row(r, 1)?,
                })
            })
            .collect()
    }

    fn children<T>(
        &mut self,
        sql: &str,
        params: &[Value],
        read: fn(&Row, usize) -> Result<T>,
    ) -> Result<Vec<T>> {
        self.backend
            .query(sql, params)?
            .iter()
            .map(|r| read(r, 0))
            .collect()
    }
}

/// What was wrong with a stored value, when `e` is about the data (a value or a
/// histogram that does not decode) rather than the store or the connection.
fn data_error(e: &StoreError) -> Option<String> {
    match e {
        StoreError::BadValue { column, message } => Some(format!("column {column}: {message}")),
        StoreError::Histogram(m) => Some(format!("histogram: {m}")),
        StoreError::UnreadableRun(u) => Some(u.reason.clone()),
        _ => None,
    }
}

fn target_from_row(r: &Row) -> Result<Target> {
    Ok(Target {
        id: r.read(0, "targets.id")?,
        record: TargetRecord::from_row(r, 1)?,
    })
}

fn run_from_row(r: &Row) -> Result<Run> {
    Ok(Run {
        id: r.read(0, "runs.id")?,
        record: RunRecord::from_row(r, 1)?,
    })
}

#[cfg(test)]
mod tests {
    use crate::{set_kind, set_status, SetRecord, Store, StoreError};

    fn set(store: &mut Store, name: &str) -> i64 {
        store
            .create_set(&SetRecord {
                name: name.into(),
                kind: set_kind::CAMPAIGN.into(),
                status: set_status::COMPLETE.into(),
                created_at: "2025-01-01T00:00:00Z".into(),
                ..Default::default()
            })
            .unwrap()
    }

    #[test]
    fn a_set_is_resolved_by_id_or_by_its_newest_name() {
        let mut store = Store::open(":memory:").unwrap();
        let e = store.resolve_set("nightly").unwrap_err();
        assert_eq!(e.to_string(), "no set \"nightly\" in the store; sets: none");
        let first = set(&mut store, "nightly");
        let named_7 = set(&mut store, "7");
        let second = set(&mut store, "nightly");
        assert_ne!(first, second);
        assert_eq!(store.resolve_set("nightly").unwrap(), second);
        assert_eq!(store.resolve_set(&first.to_string()).unwrap(), first);
        assert_eq!(store.resolve_set("7").unwrap(), named_7);
        let e = store.resolve_set("weekly").unwrap_err();
        assert!(matches!(e, StoreError::NoSuchSet { .. }), "{e:?}");
        assert_eq!(
            e.to_string(),
            format!(
                "no set \"weekly\" in the store; sets: {first} (nightly), {named_7} (7), {second} (nightly)"
            )
        );
    }
}
