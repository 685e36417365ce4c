//! Where a test's time went, as stored: active sessions by wait event (per-second
//! metrics `pg.wait.<type>.<event>`, `pg.wait.CPU`) and the statements that took the
//! most execution time (facts `statements.source` and `statements.top`). Campaigns write
//! them; `pgsurge results show` and the report read them through these helpers, so the
//! names and the JSON shape live in one place.
//!
//! * `pg.wait.<type>.<event>`: mean number of active sessions of the benchmark database
//!   in that wait event over one second (`pg_stat_activity` sampled several times a
//!   second); `pg.wait.CPU` counts active sessions without a wait event (running, or
//!   waiting for a CPU). Unit `sessions`, category `pg.wait`. A value times the
//!   window's length is session-seconds.
//! * `statements.source`: `pg_stat_statements <version>` when the extension was read,
//!   else `none (<why>)`.
//! * `statements.top`: a JSON array of [`TopStatement`], the statements of the
//!   benchmark database with the largest execution-time delta over the test (from
//!   `pg_stat_statements` snapshots before and after), largest first. Absent when the
//!   source is `none`.

use serde::{Deserialize, Serialize};

use crate::model::{FactRecord, MetricSample};

/// Prefix of the wait-event metrics.
pub const WAIT_PREFIX: &str = "pg.wait.";
/// Metric category of the wait-event metrics (`metrics_info.category`).
pub const WAIT_CATEGORY: &str = "pg.wait";
/// Unit of the wait-event metrics.
pub const WAIT_UNIT: &str = "sessions";
/// The pseudo wait event of an active session without a wait event.
pub const CPU: &str = "CPU";
/// Fact: where the statement statistics came from, or why there are none.
pub const STATEMENTS_SOURCE: &str = "statements.source";
/// Fact: the top statements (JSON array of [`TopStatement`]).
pub const STATEMENTS_TOP: &str = "statements.top";

/// The metric name of a wait event (`wait_event_type`, `wait_event`; both None for
/// an active session without a wait event). Characters other than letters, digits and
/// `_` become `_`, so the name splits back at its dots.
pub fn wait_metric(event_type: Option<&str>, event: Option<&str>) -> String {
    let clean = |s: &str| -> String {
        let c: String = s
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        if c.is_empty() {
            "_".into()
        } else {
            c
        }
    };
    match (event_type, event) {
        (None, _) => format!("{WAIT_PREFIX}{CPU}"),
        (Some(t), None) => format!("{WAIT_PREFIX}{}", clean(t)),
        (Some(t), Some(e)) => format!("{WAIT_PREFIX}{}.{}", clean(t), clean(e)),
    }
}

/// `Type:Event` (or `CPU`) of a wait metric name; None for other metrics.
pub fn wait_label(metric: &str) -> Option<String> {
    let rest = metric.strip_prefix(WAIT_PREFIX)?;
    Some(match rest.split_once('.') {
        Some((t, e)) => format!("{t}:{e}"),
        None => rest.to_string(),
    })
}

/// The wait events of writing and flushing the WAL on a commit's path, as `Type:Event`
/// labels, in the spelling of the server version `version_num`
/// (`server_version_num`; None when unknown: every spelling). PostgreSQL 17 generates
/// the I/O events' names from `wait_event_names.txt` (`IO:WALSync` became
/// `IO:WalSync`); 13 dropped the `Lock` of the LWLocks' names (`LWLock:WALWriteLock`
/// became `LWLock:WALWrite`).
pub fn wal_wait_events(version_num: Option<i64>) -> &'static [&'static str] {
    const FROM_17: &[&str] = &[
        "IO:WalSync",
        "IO:WalWrite",
        "IO:WalInitSync",
        "IO:WalInitWrite",
        "LWLock:WALWrite",
        "LWLock:WALInsert",
        "LWLock:WALBufMapping",
    ];
    const FROM_13: &[&str] = &[
        "IO:WALSync",
        "IO:WALWrite",
        "IO:WALInitSync",
        "IO:WALInitWrite",
        "LWLock:WALWrite",
        "LWLock:WALInsert",
        "LWLock:WALBufMapping",
    ];
    const BEFORE_13: &[&str] = &[
        "IO:WALSync",
        "IO:WALWrite",
        "IO:WALInitSync",
        "IO:WALInitWrite",
        "LWLock:WALWriteLock",
        "LWLock:wal_insert",
        "LWLock:WALBufMappingLock",
    ];
    const ANY: &[&str] = &[
        "IO:WalSync",
        "IO:WalWrite",
        "IO:WalInitSync",
        "IO:WalInitWrite",
        "IO:WALSync",
        "IO:WALWrite",
        "IO:WALInitSync",
        "IO:WALInitWrite",
        "LWLock:WALWrite",
        "LWLock:WALInsert",
        "LWLock:WALBufMapping",
        "LWLock:WALWriteLock",
        "LWLock:wal_insert",
        "LWLock:WALBufMappingLock",
    ];
    match version_num {
        Some(v) if v >= 170000 => FROM_17,
        Some(v) if v >= 130000 => FROM_13,
        Some(_) => BEFORE_13,
        None => ANY,
    }
}

/// The label a wait event has on servers of 16 and earlier, for an event of a server
/// of `version_num`: the WAL I/O events of 17 and later (`IO:WalSync`) by their older
/// name (`IO:WALSync`), every other label as it is. What stays the same across
/// versions (a chart's colour for an event) is keyed by it.
pub fn wait_label_before_17(label: &str, version_num: Option<i64>) -> std::borrow::Cow<'_, str> {
    let renamed = version_num.is_none_or(|v| v >= 170000);
    match label.strip_prefix("IO:Wal") {
        Some(rest) if renamed => format!("IO:WAL{rest}").into(),
        _ => label.into(),
    }
}

/// One wait event's part of a test's active session time.
#[derive(Debug, Clone, PartialEq)]
pub struct WaitShare {
    /// `Type:Event`, or `CPU`.
    pub label: String,
    /// The metric name.
    pub metric: String,
    /// Mean active sessions in this event over the sampled seconds.
    pub mean_sessions: f64,
    /// Session-seconds: the per-second means summed (each window counts as one second).
    pub session_s: f64,
    /// Share of all active session time, in percent.
    pub share_pct: f64,
}

/// The wait events of a test by share of active session time, largest first (empty
/// when no `pg.wait.*` sample is stored, or no session was ever active).
pub fn wait_shares(metrics: &[MetricSample]) -> Vec<WaitShare> {
    let mut sums: std::collections::BTreeMap<&str, f64> = Default::default();
    let mut seconds = std::collections::BTreeSet::new();
    for m in metrics {
        if m.metric.starts_with(WAIT_PREFIX) && m.value.is_finite() {
            *sums.entry(m.metric.as_str()).or_default() += m.value;
            seconds.insert(m.ts.to_bits());
        }
    }
    let total: f64 = sums.values().sum();
    if total <= 0.0 {
        return Vec::new();
    }
    let n = seconds.len().max(1) as f64;
    let mut out: Vec<WaitShare> = sums
        .into_iter()
        .filter(|(_, s)| *s > 0.0)
        .map(|(metric, s)| WaitShare {
            label: wait_label(metric).unwrap_or_else(|| metric.to_string()),
            metric: metric.to_string(),
            mean_sessions: s / n,
            session_s: s,
            share_pct: 100.0 * s / total,
        })
        .collect();
    out.sort_by(|a, b| {
        b.session_s
            .total_cmp(&a.session_s)
            .then_with(|| a.label.cmp(&b.label))
    });
    out
}

/// One statement of `statements.top`: its deltas over the test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TopStatement {
    /// Normalized query text (`pg_stat_statements.query`), white space collapsed,
    /// cut to about 200 characters (`…` marks a cut).
    pub query: String,
    /// Executions during the test.
    pub calls: i64,
    /// Execution time during the test, in milliseconds.
    pub total_ms: f64,
    /// `total_ms / calls`.
    pub mean_ms: f64,
    /// Rows returned or affected.
    pub rows: i64,
    /// Share of the execution time of every statement of the database during the
    /// test, in percent.
    #[serde(default)]
    pub share_pct: Option<f64>,
}

/// What a test's facts say about its statements.
#[derive(Debug, Clone, PartialEq)]
pub enum Statements {
    /// No `statements.*` fact (sampling off, or a store older than this).
    NotRecorded,
    /// `statements.source` is `none (…)`: the reason.
    None(String),
    /// The source and the top statements.
    Top {
        /// `statements.source`.
        source: String,
        /// `statements.top`, largest total time first.
        top: Vec<TopStatement>,
    },
}

/// Reads [`STATEMENTS_SOURCE`] and [`STATEMENTS_TOP`] from a test's facts. A top
/// list that does not parse is reported as [`Statements::None`] saying so.
pub fn statements(facts: &[FactRecord]) -> Statements {
    let get = |name: &str| {
        facts
            .iter()
            .find(|f| f.name == name)
            .and_then(|f| f.value.as_deref())
    };
    let Some(source) = get(STATEMENTS_SOURCE) else {
        return Statements::NotRecorded;
    };
    if let Some(why) = source.strip_prefix("none") {
        let why = why.trim();
        let why = why
            .strip_prefix('(')
            .and_then(|w| w.strip_suffix(')'))
            .unwrap_or(why);
        return Statements::None(why.to_string());
    }
    match serde_json::from_str::<Vec<TopStatement>>(get(STATEMENTS_TOP).unwrap_or("[]")) {
        Ok(top) => Statements::Top {
            source: source.to_string(),
            top,
        },
        Err(e) => Statements::None(format!("{STATEMENTS_TOP} does not parse: {e}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wal_wait_events_are_spelled_as_the_server_version_spells_them() {
        let of = |v: i64| wal_wait_events(Some(v));
        assert!(of(180001).contains(&"IO:WalSync") && !of(180001).contains(&"IO:WALSync"));
        assert!(of(170000).contains(&"IO:WalWrite"));
        assert!(of(160004).contains(&"IO:WALSync") && !of(160004).contains(&"IO:WalSync"));
        assert!(of(150013).contains(&"LWLock:WALWrite"));
        assert!(of(120000).contains(&"LWLock:WALWriteLock"));
        let any = wal_wait_events(None);
        for v in [120000, 150000, 180000] {
            assert!(of(v).iter().all(|e| any.contains(e)), "{v}");
        }
        assert_eq!(
            wait_label_before_17("IO:WalSync", Some(180000)),
            "IO:WALSync"
        );
        assert_eq!(wait_label_before_17("IO:WalSync", None), "IO:WALSync");
        assert_eq!(
            wait_label_before_17("IO:WALSync", Some(150000)),
            "IO:WALSync"
        );
        assert_eq!(
            wait_label_before_17("LWLock:WALWrite", Some(180000)),
            "LWLock:WALWrite"
        );
    }

    #[test]
    fn wait_names_round_trip_and_odd_characters_are_replaced() {
        assert_eq!(
            wait_metric(Some("Timeout"), Some("PgSleep")),
            "pg.wait.Timeout.PgSleep"
        );
        assert_eq!(wait_metric(None, None), "pg.wait.CPU");
        assert_eq!(
            wait_metric(Some("Extension"), Some("my ext.wait")),
            "pg.wait.Extension.my_ext_wait"
        );
        assert_eq!(
            wait_label("pg.wait.Timeout.PgSleep").as_deref(),
            Some("Timeout:PgSleep")
        );
        assert_eq!(wait_label("pg.wait.CPU").as_deref(), Some("CPU"));
        assert_eq!(wait_label("pg.backends.wait.IO"), None);
    }

    #[test]
    fn shares_weigh_each_second_and_ignore_other_metrics() {
        let m = |ts: f64, metric: &str, value: f64| MetricSample {
            ts,
            metric: metric.into(),
            value,
        };
        let metrics = vec![
            m(1.0, "pg.wait.Timeout.PgSleep", 3.0),
            m(1.0, "pg.wait.CPU", 1.0),
            m(2.0, "pg.wait.Timeout.PgSleep", 4.0),
            m(2.0, "pg.wait.CPU", 0.0),
            m(2.0, "pg.wait.Lock.tuple", 0.0),
            m(2.0, "os.cpu.user_pct", 50.0),
        ];
        let s = wait_shares(&metrics);
        assert_eq!(s.len(), 2, "{s:?}");
        assert_eq!(s[0].label, "Timeout:PgSleep");
        assert!((s[0].session_s - 7.0).abs() < 1e-12);
        assert!((s[0].mean_sessions - 3.5).abs() < 1e-12);
        assert!((s[0].share_pct - 87.5).abs() < 1e-12);
        assert_eq!(s[1].label, "CPU");
        assert!((s[1].share_pct - 12.5).abs() < 1e-12);
        assert!(wait_shares(&[m(1.0, "pg.wait.CPU", 0.0)]).is_empty());
    }

    #[test]
    fn statement_facts_are_read_back() {
        let f = |n: &str, v: &str| FactRecord::new(n, v);
        assert_eq!(statements(&[]), Statements::NotRecorded);
        assert_eq!(
            statements(&[f(
                STATEMENTS_SOURCE,
                "none (pg_stat_statements not installed)"
            )]),
            Statements::None("pg_stat_statements not installed".into())
        );
        let top = r#"[{"query":"SELECT $1","calls":3,"total_ms":1.5,"mean_ms":0.5,"rows":3,"share_pct":100.0}]"#;
        match statements(&[
            f(STATEMENTS_SOURCE, "pg_stat_statements 1.10"),
            f(STATEMENTS_TOP, top),
        ]) {
            Statements::Top { source, top } => {
                assert_eq!(source, "pg_stat_statements 1.10");
                assert_eq!(top.len(), 1);
                assert_eq!((top[0].calls, top[0].rows), (3, 3));
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            statements(&[
                f(STATEMENTS_SOURCE, "pg_stat_statements 1.10"),
                f(STATEMENTS_TOP, "{")
            ]),
            Statements::None(_)
        ));
    }
}
