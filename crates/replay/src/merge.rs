//! One replay played by several generators (each its share of the log's sessions, from
//! one start time) as one report: counts add up, latency histograms are added (so the
//! percentiles are those of every statement, never percentiles of percentiles), the lag
//! per second is pooled, and the wall time spans from the first start to the last end.
//!
//! What every generator read whole (the log's entries, its unreadable lines) is taken
//! once; what each read of its own sessions (sessions, statements, failures in the log)
//! adds up. Reports that are not shares of one replay — other logs, other pacing or
//! order, a share missing or given twice — are refused.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;

use crate::fidelity::ERROR_EXAMPLES;
use crate::report::{
    FingerprintRow, LagReport, LagRow, Latency, ReadSummary, ReplayReport, ReplaySummary, Side,
    UnloggedEnds,
};

/// Why reports cannot be merged.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum MergeError {
    /// Nothing to merge.
    #[error("no replay report to merge")]
    Empty,
    /// A report played every session, not a share.
    #[error("{label}: not a generator's share (replayed without --generator)")]
    NotAShare {
        /// The report's label (a file, a generator).
        label: String,
    },
    /// The shares do not make up one whole.
    #[error("the generators' shares do not make up one replay: {0}")]
    Shares(String),
    /// A report is of another replay.
    #[error("{label}: {what} differs from the first report's")]
    Differs {
        /// The report's label.
        label: String,
        /// What differs (`the logs`, `the pacing`, `the order`).
        what: &'static str,
    },
    /// A stored latency histogram does not decode.
    #[error("{label}: the latency histogram of {fingerprint} cannot be read")]
    Histogram {
        /// The report's label.
        label: String,
        /// The fingerprint whose histogram is broken.
        fingerprint: String,
    },
}

/// Merges `parts`, each labelled (a file, a generator) for the errors, into the report
/// of the whole replay; its `settings.generators` says how many were merged.
pub fn merge(parts: &[(String, ReplayReport)]) -> Result<ReplayReport, MergeError> {
    let (_, first) = parts.first().ok_or(MergeError::Empty)?;
    check_shares(parts)?;
    for (label, r) in &parts[1..] {
        let differs = |what| MergeError::Differs {
            label: label.clone(),
            what,
        };
        if r.logs != first.logs {
            return Err(differs("the logs"));
        }
        if r.settings.speed != first.settings.speed || r.settings.max != first.settings.max {
            return Err(differs("the pacing"));
        }
        if r.settings.order != first.settings.order {
            return Err(differs("the order"));
        }
    }
    let mut settings = first.settings.clone();
    settings.generator = None;
    settings.generators = Some(parts.len() as u32);
    settings.threads = parts.iter().map(|(_, r)| r.settings.threads).sum();
    let ended: Vec<String> = parts
        .iter()
        .filter_map(|(l, r)| r.ended_early.as_ref().map(|why| format!("{l}: {why}")))
        .collect();
    Ok(ReplayReport {
        format: first.format.clone(),
        version: first.version,
        logs: first.logs.clone(),
        settings,
        read: read(parts),
        replay: summary(parts),
        lag: lag(parts),
        fingerprints: fingerprints(parts)?,
        ended_early: (!ended.is_empty()).then(|| ended.join("; ")),
    })
}

/// Every part a share of the same count, each index once, none missing.
fn check_shares(parts: &[(String, ReplayReport)]) -> Result<(), MergeError> {
    let mut count = None;
    let mut seen = Vec::new();
    for (label, r) in parts {
        // A replay by one generator records no share: it is the whole, share 1 of 1.
        let share = match (r.settings.generator, parts.len()) {
            (Some(s), _) => Some(s),
            (None, 1) => Some((0, 1)),
            (None, _) => None,
        };
        let (index, n) = share.ok_or_else(|| MergeError::NotAShare {
            label: label.clone(),
        })?;
        if *count.get_or_insert(n) != n {
            return Err(MergeError::Shares(format!(
                "{label} is a share of {n}, the first report one of {}",
                count.unwrap_or(n)
            )));
        }
        if seen.contains(&index) {
            return Err(MergeError::Shares(format!(
                "share {} of {n} is given twice ({label})",
                index + 1
            )));
        }
        seen.push(index);
    }
    let n = count.unwrap_or(0);
    if seen.len() != n as usize {
        let missing: Vec<String> = (0..n)
            .filter(|i| !seen.contains(i))
            .map(|i| (i + 1).to_string())
            .collect();
        return Err(MergeError::Shares(format!(
            "share {} of {n} missing",
            missing.join(", ")
        )));
    }
    Ok(())
}

/// The log as read: entries and unreadable lines once (every generator read them all),
/// the counts of each generator's own sessions added, and the fingerprints' limit when
/// any generator reached it.
fn read(parts: &[(String, ReplayReport)]) -> ReadSummary {
    let first = &parts[0].1.read;
    let mut r = ReadSummary {
        entries: first.entries,
        skipped: first.skipped,
        skipped_examples: first.skipped_examples.clone(),
        fingerprint_limit: parts
            .iter()
            .filter_map(|(_, p)| p.read.fingerprint_limit)
            .max(),
        ..ReadSummary::default()
    };
    for (_, p) in parts {
        let p = &p.read;
        r.sessions += p.sessions;
        r.statements += p.statements;
        r.executes += p.executes;
        r.errors += p.errors;
        r.cancels += p.cancels;
        r.durations += p.durations;
        if let Some(u) = p.unlogged_ends {
            let sum = r.unlogged_ends.get_or_insert_with(UnloggedEnds::default);
            sum.pid_reused += u.pid_reused;
            sum.server_restart += u.server_restart;
        }
    }
    r
}

fn summary(parts: &[(String, ReplayReport)]) -> ReplaySummary {
    let start = parts
        .iter()
        .map(|(_, r)| r.replay.start_time_unix_us)
        .min()
        .unwrap_or(0);
    let end_s = parts
        .iter()
        .map(|(_, r)| (r.replay.start_time_unix_us - start) as f64 / 1e6 + r.replay.elapsed_s)
        .fold(0.0, f64::max);
    let mut s = ReplaySummary {
        start_time_unix_us: start,
        elapsed_s: end_s,
        log_span_s: parts
            .iter()
            .map(|(_, r)| r.replay.log_span_s)
            .fold(0.0, f64::max),
        ..ReplaySummary::default()
    };
    for (_, r) in parts {
        let p = &r.replay;
        s.sessions += p.sessions;
        s.failed_connections += p.failed_connections;
        s.statements += p.statements;
        s.not_sent += p.not_sent;
        s.expected_errors += p.expected_errors;
        s.missing_errors += p.missing_errors;
        s.unexpected_errors += p.unexpected_errors;
        s.cancels_sent += p.cancels_sent;
        s.ended_in_transaction += p.ended_in_transaction;
        for e in &p.error_examples {
            if s.error_examples.len() < ERROR_EXAMPLES {
                s.error_examples.push(e.clone());
            }
        }
    }
    s
}

/// The lag per second of the common schedule, pooled: statements added, the mean
/// weighted by them, the worst of the worst.
fn lag(parts: &[(String, ReplayReport)]) -> LagReport {
    let mut by_second: BTreeMap<u64, (u64, f64, f64)> = BTreeMap::new();
    for (_, r) in parts {
        for row in &r.lag.per_second {
            let e = by_second.entry(row.second).or_default();
            e.0 += row.statements;
            e.1 += row.mean_ms * row.statements as f64;
            e.2 = e.2.max(row.max_ms);
        }
    }
    let statements: u64 = by_second.values().map(|e| e.0).sum();
    let sum_ms: f64 = by_second.values().map(|e| e.1).sum();
    LagReport {
        scheduled: parts.iter().any(|(_, r)| r.lag.scheduled),
        mean_ms: if statements == 0 {
            0.0
        } else {
            sum_ms / statements as f64
        },
        max_ms: by_second.values().map(|e| e.2).fold(0.0, f64::max),
        per_second: by_second
            .into_iter()
            .map(|(second, (n, sum, max))| LagRow {
                second,
                statements: n,
                mean_ms: sum / n.max(1) as f64,
                max_ms: max,
            })
            .collect(),
    }
}

/// One row per fingerprint over all parts, most logged first.
fn fingerprints(parts: &[(String, ReplayReport)]) -> Result<Vec<FingerprintRow>, MergeError> {
    let mut rows: BTreeMap<String, (String, Pooled, Pooled)> = BTreeMap::new();
    for (label, r) in parts {
        for f in &r.fingerprints {
            let e = rows
                .entry(f.fingerprint.clone())
                .or_insert_with(|| (f.statement.clone(), Pooled::default(), Pooled::default()));
            let broken = || MergeError::Histogram {
                label: label.clone(),
                fingerprint: f.fingerprint.clone(),
            };
            e.1.add(&f.logged).map_err(|()| broken())?;
            e.2.add(&f.replayed).map_err(|()| broken())?;
        }
    }
    let mut rows: Vec<FingerprintRow> = rows
        .into_iter()
        .map(
            |(fingerprint, (statement, logged, replayed))| FingerprintRow {
                fingerprint,
                statement,
                logged: logged.side(),
                replayed: replayed.side(),
            },
        )
        .collect();
    rows.sort_by(|a, b| {
        b.logged
            .statements
            .cmp(&a.logged.statements)
            .then_with(|| a.fingerprint.cmp(&b.fingerprint))
    });
    Ok(rows)
}

/// One side of a fingerprint over the parts: counts and the added histogram.
#[derive(Default)]
struct Pooled {
    statements: u64,
    errors: u64,
    latency: Option<Histogram<u64>>,
}

impl Pooled {
    fn add(&mut self, s: &Side) -> Result<(), ()> {
        self.statements += s.statements;
        self.errors += s.errors;
        if let Some(l) = &s.latency {
            let h = l.histogram().ok_or(())?;
            // A decoded histogram keeps the range it was written with; the pool grows
            // to hold every part's values.
            let pooled = match &mut self.latency {
                Some(p) => p,
                None => {
                    let mut p = Histogram::new(h.sigfig()).map_err(|_| ())?;
                    p.auto(true);
                    self.latency.insert(p)
                }
            };
            pooled.add(&h).map_err(|_| ())?;
        }
        Ok(())
    }

    fn side(self) -> Side {
        Side {
            statements: self.statements,
            errors: self.errors,
            latency: self
                .latency
                .filter(|h| !h.is_empty())
                .map(|h| Latency::of(&h)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fidelity::{Counts, LagSecond};
    use crate::fingerprint::{Fingerprint, FpId};
    use crate::report::{fingerprint_rows, LogFile, ReplaySettings, REPORT_VERSION};

    fn settings(generator: Option<(u32, u32)>) -> ReplaySettings {
        ReplaySettings {
            speed: 1.0,
            max: true,
            order: "session".into(),
            threads: 1,
            generator,
            generators: None,
        }
    }

    /// A report of one share: statements of fingerprint 0 with `latencies_us`, the lag
    /// of `lag` (second, µs) per statement.
    fn part(
        share: (u32, u32),
        start_us: i64,
        latencies_us: &[i64],
        lag: &[(usize, i64)],
    ) -> ReplayReport {
        let table = vec![Fingerprint {
            id: "abc".into(),
            text: "SELECT $1".into(),
        }];
        let mut logged = Counts::default();
        let mut replayed = Counts::default();
        for &us in latencies_us {
            logged.of(FpId(0)).record(false, None);
            replayed.of(FpId(0)).record(false, Some(us));
        }
        let mut tally = crate::fidelity::ReplayTally::default();
        for &(s, us) in lag {
            tally.note_lag(s, us);
        }
        let lag_seconds: Vec<LagSecond> = tally.lag.clone();
        ReplayReport {
            format: "pgsurge-replay".into(),
            version: REPORT_VERSION,
            logs: vec![LogFile {
                path: "x.log".into(),
                format: crate::log::LogFormat::Stderr,
                bytes: 10,
                sha256: Some("00".into()),
            }],
            settings: settings(Some(share)),
            read: ReadSummary {
                entries: 100,
                sessions: 2,
                statements: latencies_us.len() as u64,
                ..ReadSummary::default()
            },
            replay: ReplaySummary {
                start_time_unix_us: start_us,
                elapsed_s: 2.0,
                log_span_s: 3.0,
                sessions: 2,
                statements: latencies_us.len() as u64,
                ..ReplaySummary::default()
            },
            lag: LagReport::of(&lag_seconds, true),
            fingerprints: fingerprint_rows(&table, &logged, &replayed),
            ended_early: None,
        }
    }

    fn labelled(parts: Vec<ReplayReport>) -> Vec<(String, ReplayReport)> {
        parts
            .into_iter()
            .enumerate()
            .map(|(i, r)| (format!("g{i}"), r))
            .collect()
    }

    #[test]
    fn shares_add_up_and_histograms_pool_exactly() {
        let a = part((0, 2), 1_000_000, &[100, 200, 300], &[(0, 10), (1, 30)]);
        // Far beyond the range the first part's histogram was written with.
        let mut b = part((1, 2), 1_500_000, &[400, 5_000_000_000], &[(1, 50)]);
        b.read.unlogged_ends = UnloggedEnds::of(2, 1);
        let mut c = a.clone();
        c.read.unlogged_ends = UnloggedEnds::of(1, 0);
        let m = merge(&labelled(vec![c, b.clone()])).unwrap();
        assert_eq!(m.read.unlogged_ends, UnloggedEnds::of(3, 1));
        let m = merge(&labelled(vec![a, b])).unwrap();
        assert_eq!(m.read.entries, 100, "entries are read whole by each");
        assert_eq!((m.read.sessions, m.read.statements), (4, 5));
        assert_eq!((m.replay.sessions, m.replay.statements), (4, 5));
        assert_eq!(m.replay.start_time_unix_us, 1_000_000);
        assert!(
            (m.replay.elapsed_s - 2.5).abs() < 1e-9,
            "first start to last end"
        );
        assert_eq!(m.settings.generators, Some(2));
        assert_eq!(m.settings.generator, None);
        let f = &m.fingerprints[0];
        assert_eq!((f.logged.statements, f.replayed.statements), (5, 5));
        // The pooled histogram is the one of all five statements.
        let mut all = Counts::default();
        for us in [100, 200, 300, 400, 5_000_000_000] {
            all.of(FpId(0)).record(false, Some(us));
        }
        let whole = fingerprint_rows(
            &[Fingerprint {
                id: "abc".into(),
                text: "SELECT $1".into(),
            }],
            &all,
            &all,
        );
        let l = f.replayed.latency.as_ref().unwrap();
        assert_eq!(l.count, 5);
        assert_eq!((l.mean_ms, l.p50_ms, l.p99_ms, l.max_ms), {
            let w = whole[0].replayed.latency.as_ref().unwrap();
            (w.mean_ms, w.p50_ms, w.p99_ms, w.max_ms)
        });
        // Second 1 holds one statement of each share: lag 30 and 50 µs.
        let s1 = m.lag.per_second.iter().find(|r| r.second == 1).unwrap();
        assert_eq!(s1.statements, 2);
        assert!((s1.mean_ms - 0.040).abs() < 1e-9, "{}", s1.mean_ms);
        assert!((s1.max_ms - 0.050).abs() < 1e-9);
        assert!((m.lag.mean_ms - 0.030).abs() < 1e-9, "{}", m.lag.mean_ms);
    }

    #[test]
    fn what_is_not_one_replay_is_refused() {
        let a = part((0, 2), 0, &[1], &[]);
        let b = part((1, 2), 0, &[1], &[]);
        assert_eq!(merge(&[]), Err(MergeError::Empty));
        let e = merge(&labelled(vec![a.clone()])).unwrap_err();
        assert!(e.to_string().contains("share 2 of 2 missing"), "{e}");
        let e = merge(&labelled(vec![a.clone(), a.clone()])).unwrap_err();
        assert!(e.to_string().contains("given twice"), "{e}");
        let mut whole = a.clone();
        whole.settings.generator = None;
        assert!(matches!(
            merge(&labelled(vec![whole.clone(), b.clone()])),
            Err(MergeError::NotAShare { .. })
        ));
        assert_eq!(merge(&labelled(vec![whole])).unwrap().read.statements, 1);
        let mut other = b.clone();
        other.logs[0].sha256 = Some("ff".into());
        let e = merge(&labelled(vec![a.clone(), other])).unwrap_err();
        assert!(e.to_string().contains("the logs"), "{e}");
        let mut slower = b.clone();
        slower.settings.speed = 2.0;
        let e = merge(&labelled(vec![a.clone(), slower])).unwrap_err();
        assert!(e.to_string().contains("the pacing"), "{e}");
        let mut three = b;
        three.settings.generator = Some((1, 3));
        let e = merge(&labelled(vec![a, three])).unwrap_err();
        assert!(e.to_string().contains("share of 3"), "{e}");
    }
}
