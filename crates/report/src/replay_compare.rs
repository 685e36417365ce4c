//! `pgsurge compare run:A run:B` when both runs are replays of the same log: per
//! statement fingerprint, the replayed latency of each side (mean, 95th percentile) and
//! its change; the replay's total time, its rate and its lag behind the schedule. The
//! two logs must be the same (their SHA-256s), else the comparison is refused: the
//! same fingerprint on two logs is not the same work.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use pgsurge_replay::report::{FingerprintRow, ReplayReport};
use pgsurge_store::{facts, LoadedRun, Store};
use serde::Serialize;

/// One fingerprint on both sides.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FingerprintChange {
    /// pg_query's fingerprint.
    pub fingerprint: String,
    /// An example.
    pub statement: String,
    /// Statements replayed by A and B.
    pub statements: (u64, u64),
    /// Mean replayed latency (ms) of A and B.
    pub mean_ms: (Option<f64>, Option<f64>),
    /// 95th percentile (ms) of A and B.
    pub p95_ms: (Option<f64>, Option<f64>),
    /// B's mean over A's, minus 1 (`0.1`: 10 % slower).
    pub mean_change: Option<f64>,
}

/// Totals of one side.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplaySideTotals {
    /// The run.
    pub run_id: i64,
    /// Seconds the replay took.
    pub elapsed_s: f64,
    /// Statements sent.
    pub statements: u64,
    /// Statements per second.
    pub statements_per_s: f64,
    /// Replay errors.
    pub unexpected_errors: u64,
    /// Mean and largest lag behind the schedule (ms), when there was one.
    pub lag_ms: Option<(f64, f64)>,
    /// Speed factor and `--max`.
    pub pace: String,
}

/// The JSON Schema of [`ReplayComparison`] (`pgsurge schema replay-compare`).
pub const REPLAY_COMPARE_SCHEMA: &str = include_str!("../schema/replay-compare.v1.json");

/// Two replays of one log compared.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ReplayComparison {
    /// Always `pgsurge-replay-compare`.
    pub format: &'static str,
    /// 1: the version of [`REPLAY_COMPARE_SCHEMA`].
    pub schema_version: u32,
    /// The log's digest.
    pub log_sha256: String,
    /// Side A.
    pub a: ReplaySideTotals,
    /// Side B.
    pub b: ReplaySideTotals,
    /// Per fingerprint, most replayed first.
    pub fingerprints: Vec<FingerprintChange>,
}

/// The replay report a stored run holds, if it is a replay.
pub fn stored_report(run: &LoadedRun) -> Option<Result<ReplayReport, String>> {
    let fact = run.facts.iter().find(|f| f.name == facts::REPLAY_REPORT)?;
    let text = fact.value.as_deref().unwrap_or_default();
    Some(
        serde_json::from_str(text)
            .map_err(|e| format!("run {}: its replay report cannot be read: {e}", run.run.id)),
    )
}

fn totals(run_id: i64, r: &ReplayReport) -> ReplaySideTotals {
    let p = &r.replay;
    ReplaySideTotals {
        run_id,
        elapsed_s: p.elapsed_s,
        statements: p.statements,
        statements_per_s: if p.elapsed_s > 0.0 {
            p.statements as f64 / p.elapsed_s
        } else {
            0.0
        },
        unexpected_errors: p.unexpected_errors,
        lag_ms: r.lag.scheduled.then_some((r.lag.mean_ms, r.lag.max_ms)),
        pace: if r.settings.max {
            "--max".into()
        } else {
            format!("speed {}", r.settings.speed)
        },
    }
}

fn digest(r: &ReplayReport) -> Option<String> {
    let parts: Option<Vec<&str>> = r.logs.iter().map(|l| l.sha256.as_deref()).collect();
    parts.map(|p| p.join(","))
}

/// Compares two replays (A is the baseline).
pub fn compare_replays(
    a_id: i64,
    a: &ReplayReport,
    b_id: i64,
    b: &ReplayReport,
) -> Result<ReplayComparison, String> {
    let (Some(da), Some(db)) = (digest(a), digest(b)) else {
        return Err("a replay without its log's digest (the log was not read to its end) cannot be compared".into());
    };
    if da != db {
        return Err(format!(
            "run {a_id} and run {b_id} are not replays of the same log (their logs' SHA-256 differ): \
             the same fingerprint on two logs is not the same work"
        ));
    }
    let by_fp = |r: &ReplayReport| -> BTreeMap<String, FingerprintRow> {
        r.fingerprints
            .iter()
            .map(|f| (f.fingerprint.clone(), f.clone()))
            .collect()
    };
    let (fa, fb) = (by_fp(a), by_fp(b));
    let mut rows: Vec<FingerprintChange> = fa
        .keys()
        .chain(fb.keys())
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .map(|k| {
            let (ra, rb) = (fa.get(k), fb.get(k));
            let lat = |r: Option<&FingerprintRow>,
                       f: fn(&pgsurge_replay::report::Latency) -> f64| {
                r.and_then(|r| r.replayed.latency.as_ref()).map(f)
            };
            let mean = (lat(ra, |l| l.mean_ms), lat(rb, |l| l.mean_ms));
            FingerprintChange {
                fingerprint: k.clone(),
                statement: ra.or(rb).map(|r| r.statement.clone()).unwrap_or_default(),
                statements: (
                    ra.map_or(0, |r| r.replayed.statements),
                    rb.map_or(0, |r| r.replayed.statements),
                ),
                mean_ms: mean,
                p95_ms: (lat(ra, |l| l.p95_ms), lat(rb, |l| l.p95_ms)),
                mean_change: match mean {
                    (Some(x), Some(y)) if x > 0.0 => Some(y / x - 1.0),
                    _ => None,
                },
            }
        })
        .collect();
    rows.sort_by_key(|r| std::cmp::Reverse(r.statements.0 + r.statements.1));
    Ok(ReplayComparison {
        format: "pgsurge-replay-compare",
        schema_version: 1,
        log_sha256: da,
        a: totals(a_id, a),
        b: totals(b_id, b),
        fingerprints: rows,
    })
}

fn opt(v: Option<f64>) -> String {
    v.map_or("-".into(), |v| format!("{v:.3}"))
}

impl ReplayComparison {
    /// The comparison as text.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let _ = writeln!(
            o,
            "replays of one log (sha256 {}…)",
            self.log_sha256.chars().take(16).collect::<String>()
        );
        for (name, s) in [("A", &self.a), ("B", &self.b)] {
            let lag = s.lag_ms.map_or("no schedule".into(), |(m, x)| {
                format!("lag mean {m:.3} ms, max {x:.3} ms")
            });
            let _ =
                writeln!(
                o,
                "{name}: run {}, {}: {} statements in {:.3} s ({:.0}/s), {} replay errors, {lag}",
                s.run_id, s.pace, s.statements, s.elapsed_s, s.statements_per_s, s.unexpected_errors
            );
        }
        if self.a.elapsed_s > 0.0 {
            let _ = writeln!(
                o,
                "total time B/A: {:.3}",
                self.b.elapsed_s / self.a.elapsed_s
            );
        }
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{:<16} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}  statement",
            "fingerprint", "A n", "B n", "A mean", "B mean", "A p95", "B p95", "change"
        );
        for f in &self.fingerprints {
            let text: String = f.statement.split_whitespace().collect::<Vec<_>>().join(" ");
            let _ = writeln!(
                o,
                "{:<16} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>8}  {}",
                f.fingerprint.chars().take(16).collect::<String>(),
                f.statements.0,
                f.statements.1,
                opt(f.mean_ms.0),
                opt(f.mean_ms.1),
                opt(f.p95_ms.0),
                opt(f.p95_ms.1),
                f.mean_change
                    .map_or("-".into(), |c| format!("{:+.1}%", c * 100.0)),
                text.chars().take(60).collect::<String>()
            );
        }
        let _ = writeln!(
            o,
            "(replayed latencies in ms, from send to answer; change: B's mean over A's)"
        );
        o
    }
}

/// The single run id of a side `run:ID`, if that is what it is.
fn single_run(side: Option<&str>) -> Option<i64> {
    side?.strip_prefix("run:")?.parse().ok()
}

/// `compare` of two sides that are each one stored replay: the comparison as text or
/// JSON; `None` when the sides are not two replays (the usual comparison then runs).
pub fn compare_sides(
    store: &mut Store,
    a: Option<&str>,
    b: Option<&str>,
    json: bool,
) -> Option<Result<String, String>> {
    let (ia, ib) = (single_run(a)?, single_run(b)?);
    let ra = store.load_run(ia).ok()?;
    let rb = store.load_run(ib).ok()?;
    let (ra, rb) = match (stored_report(&ra), stored_report(&rb)) {
        (None, None) => return None,
        (Some(x), Some(y)) => (x, y),
        _ => {
            return Some(Err(format!(
                "run {ia} and run {ib}: a replay compares only with another replay"
            )))
        }
    };
    Some((|| {
        let c = compare_replays(ia, &ra?, ib, &rb?)?;
        Ok(if json {
            serde_json::to_string_pretty(&c).map_err(|e| e.to_string())? + "\n"
        } else {
            c.to_text()
        })
    })())
}

/// The fidelity section of a stored replay's page (empty for other runs): what was
/// read and replayed, the lag, and the table of fingerprints.
pub fn run_page_section(run: &LoadedRun) -> String {
    use crate::html::{escape, num, table};
    let Some(Ok(r)) = stored_report(run) else {
        return String::new();
    };
    let mut body = String::from("<h2>Replay fidelity</h2>");
    let logs: Vec<String> = r
        .logs
        .iter()
        .map(|l| format!("{} ({}, {} bytes)", l.path, l.format, l.bytes))
        .collect();
    let p = &r.replay;
    let _ = write!(
        body,
        "<p>Log: {}. Read {} sessions and {} statements ({} failed in the log); replayed {} \
         statements in {} s: {} failed as logged, {} logged failures did not fail, {} replay \
         errors, {} not sent.{}</p>",
        escape(&logs.join(", ")),
        r.read.sessions,
        r.read.statements,
        r.read.errors,
        p.statements,
        num(p.elapsed_s, 3),
        p.expected_errors,
        p.missing_errors,
        p.unexpected_errors,
        p.not_sent,
        if r.lag.scheduled {
            format!(
                " Lag behind the schedule: mean {} ms, max {} ms.",
                num(r.lag.mean_ms, 3),
                num(r.lag.max_ms, 3)
            )
        } else {
            String::new()
        }
    );
    let ms = |l: &Option<pgsurge_replay::report::Latency>,
              f: fn(&pgsurge_replay::report::Latency) -> f64| {
        l.as_ref().map_or("-".into(), |l| num(f(l), 3))
    };
    let rows: Vec<Vec<String>> = r
        .fingerprints
        .iter()
        .map(|f| {
            vec![
                escape(&f.fingerprint),
                f.logged.statements.to_string(),
                f.replayed.statements.to_string(),
                format!("{} / {}", f.logged.errors, f.replayed.errors),
                ms(&f.logged.latency, |l| l.mean_ms),
                ms(&f.replayed.latency, |l| l.mean_ms),
                ms(&f.replayed.latency, |l| l.p95_ms),
                escape(&f.statement.chars().take(200).collect::<String>()),
            ]
        })
        .collect();
    body.push_str(&table(
        &[
            "fingerprint",
            "logged",
            "replayed",
            "errors logged / replayed",
            "logged mean (ms)",
            "replayed mean (ms)",
            "replayed p95 (ms)",
            "statement",
        ]
        .map(String::from),
        &rows,
    ));
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The report `--check` reads from a one-session log whose statement is `sql`.
    fn checked(dir: &std::path::Path, name: &str, sql: &str) -> ReplayReport {
        let prefix = "2026-11-28 18:00:00.100 UTC|alice|shop|65.a|";
        let text = format!(
            "{prefix}LOG:  connection authorized: user=alice database=shop\n\
             {prefix}LOG:  statement: {sql}\n\
             {prefix}LOG:  disconnection: session time: 0:00:00.002 user=alice database=shop host=[local]\n"
        );
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        pgsurge_replay::check::check(&pgsurge_replay::ReplaySpec::new(vec![path])).unwrap()
    }

    #[test]
    fn replays_of_one_log_compare_and_of_two_logs_are_refused() {
        let dir = pgsurge_testkit::scratch_dir("replay-compare");
        let a = checked(dir.path(), "a.log", "select 1");
        let same = checked(dir.path(), "copy.log", "select 1");
        let other = checked(dir.path(), "b.log", "select 2");
        let c = compare_replays(1, &a, 2, &same).unwrap();
        assert_eq!(c.log_sha256.len(), 64);
        assert_eq!(c.fingerprints.len(), 1);
        assert_eq!(c.fingerprints[0].statement, "select $1");
        let e = compare_replays(1, &a, 3, &other).unwrap_err();
        assert!(e.contains("not replays of the same log"), "{e}");
        let mut unread = a.clone();
        unread.logs[0].sha256 = None;
        let e = compare_replays(1, &unread, 2, &same).unwrap_err();
        assert!(e.contains("without its log's digest"), "{e}");
    }
}
