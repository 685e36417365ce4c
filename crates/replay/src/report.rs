//! The fidelity report of a replay: one serde document ([`ReplayReport`], `--json`,
//! schema [`REPLAY_SCHEMA`], `pgsurge schema replay`) and its text table. Built once at
//! the end from what the reader and the drivers counted; rendering reads only the
//! document, so a stored or merged report prints the same.

use std::fmt::Write as _;

use base64::Engine as _;
use hdrhistogram::serialization::{Deserializer, Serializer as _, V2DeflateSerializer};
use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

use crate::fidelity::{Counts, ErrorExample, FpCounts, LagSecond, ReplayTally};
use crate::fingerprint::{Fingerprint, FpId, OTHER};
use crate::log::LogFormat;
use crate::sessions::ReadCounts;

/// Version of the document (`version`); extended additively.
pub const REPORT_VERSION: u32 = 1;

/// The committed JSON Schema of [`ReplayReport`].
pub const REPLAY_SCHEMA: &str = include_str!("../schema/replay-report.v1.json");

/// One log file of the replay: its identity.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogFile {
    /// The path as given.
    pub path: String,
    /// Its format.
    pub format: LogFormat,
    /// Its size in bytes.
    pub bytes: u64,
    /// SHA-256 of its bytes (hex), when it was read to its end: two replays of the same
    /// log have the same.
    #[serde(default)]
    pub sha256: Option<String>,
}

/// What was read.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ReadSummary {
    /// Log entries.
    pub entries: u64,
    /// Sessions.
    pub sessions: u64,
    /// Statements.
    pub statements: u64,
    /// Of which extended-protocol executions.
    pub executes: u64,
    /// Statements that failed in the log (cancels included).
    pub errors: u64,
    /// Statements cancelled by their client in the log.
    pub cancels: u64,
    /// Statements with a logged duration.
    pub durations: u64,
    /// Unreadable lines skipped (`--skip-unreadable`).
    pub skipped: u64,
    /// The first few skipped lines: `file:line: reason`.
    pub skipped_examples: Vec<String>,
    /// The number of fingerprints counted apart, when the log had more: the statements
    /// of the further ones are counted together in the row [`OTHER`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fingerprint_limit: Option<u64>,
    /// Sessions whose end the log does not show, ended where the log proves they had
    /// ended, when there were any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unlogged_ends: Option<UnloggedEnds>,
}

/// Sessions whose end the log does not show (`log_disconnections` off, a log cut, a
/// backend that crashed), by what proves they had ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct UnloggedEnds {
    /// At the first line of another process with the session's pid.
    pub pid_reused: u64,
    /// Where the server started, shut down or restarted after a crash.
    pub server_restart: u64,
}

impl UnloggedEnds {
    /// `Some` when any session ended so.
    pub fn of(pid_reused: u64, server_restart: u64) -> Option<UnloggedEnds> {
        (pid_reused + server_restart > 0).then_some(UnloggedEnds {
            pid_reused,
            server_restart,
        })
    }
}

impl ReadSummary {
    /// From the reader's counts and its fingerprints' limit, when it was reached.
    pub fn from_counts(
        c: &ReadCounts,
        skipped: u64,
        skipped_examples: Vec<String>,
        fingerprint_limit: Option<usize>,
    ) -> Self {
        ReadSummary {
            entries: c.entries,
            sessions: c.sessions,
            statements: c.statements,
            executes: c.executes,
            errors: c.errors,
            cancels: c.cancels,
            durations: c.durations,
            skipped,
            skipped_examples,
            fingerprint_limit: fingerprint_limit.map(|n| n as u64),
            unlogged_ends: UnloggedEnds::of(c.ended_pid_reused, c.ended_restart),
        }
    }
}

/// How the replay went, in totals.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct ReplaySummary {
    /// When the replay's schedule started (µs since the Unix epoch; 0 when nothing was
    /// replayed).
    #[serde(default)]
    pub start_time_unix_us: i64,
    /// Seconds from the replay's start to its end.
    pub elapsed_s: f64,
    /// Seconds from the log's first entry to its last (of the sessions played).
    pub log_span_s: f64,
    /// Sessions that connected.
    pub sessions: u64,
    /// Sessions that could not connect.
    pub failed_connections: u64,
    /// Statements sent.
    pub statements: u64,
    /// Statements not sent (their session could not connect or was lost, or the replay
    /// was stopped).
    pub not_sent: u64,
    /// Statements that failed in the log and in the replay.
    pub expected_errors: u64,
    /// Statements that failed in the log but not in the replay.
    pub missing_errors: u64,
    /// Statements that succeeded in the log but failed in the replay.
    pub unexpected_errors: u64,
    /// Cancel requests sent as the log's clients sent theirs.
    pub cancels_sent: u64,
    /// Sessions whose connection closed inside a transaction block.
    pub ended_in_transaction: u64,
    /// The first unexpected errors.
    pub error_examples: Vec<ErrorExample>,
}

/// Latency figures of one side (ms), with the histogram for exact merging.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// Values.
    pub count: u64,
    /// Mean.
    pub mean_ms: f64,
    /// Median.
    pub p50_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// 99th percentile.
    pub p99_ms: f64,
    /// Largest.
    pub max_ms: f64,
    /// The HDR histogram (µs), V2-deflate serialized, base64.
    pub histogram: String,
}

impl Latency {
    /// The figures of `h`.
    pub fn of(h: &Histogram<u64>) -> Latency {
        let ms = |us: u64| us as f64 / 1000.0;
        let mut bytes = Vec::new();
        let _ = V2DeflateSerializer::new().serialize(h, &mut bytes);
        Latency {
            count: h.len(),
            mean_ms: h.mean() / 1000.0,
            p50_ms: ms(h.value_at_quantile(0.50)),
            p95_ms: ms(h.value_at_quantile(0.95)),
            p99_ms: ms(h.value_at_quantile(0.99)),
            max_ms: ms(h.max()),
            histogram: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// The histogram back, or `None` when the text is not one.
    pub fn histogram(&self) -> Option<Histogram<u64>> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(&self.histogram)
            .ok()?;
        Deserializer::new().deserialize(&mut bytes.as_slice()).ok()
    }
}

/// One side's counts of a fingerprint.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Side {
    /// Statements.
    pub statements: u64,
    /// Errors.
    pub errors: u64,
    /// Latency, when known.
    pub latency: Option<Latency>,
}

impl Side {
    fn of(c: Option<&FpCounts>) -> Side {
        match c {
            None => Side::default(),
            Some(c) => Side {
                statements: c.statements,
                errors: c.errors,
                latency: c
                    .latency
                    .as_ref()
                    .filter(|h| !h.is_empty())
                    .map(Latency::of),
            },
        }
    }
}

/// Logged against replayed, for one fingerprint.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FingerprintRow {
    /// pg_query's fingerprint (hex).
    pub fingerprint: String,
    /// An example, constants replaced by `$n`.
    pub statement: String,
    /// What the log had.
    pub logged: Side,
    /// What the replay did.
    pub replayed: Side,
}

/// One second of lag.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LagRow {
    /// Seconds since the replay's start.
    pub second: u64,
    /// Statements sent in it.
    pub statements: u64,
    /// Their mean lag (ms).
    pub mean_ms: f64,
    /// Their largest lag (ms).
    pub max_ms: f64,
}

/// The replay's lag behind its schedule.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct LagReport {
    /// Whether there was a schedule (`--max` has none for statements).
    pub scheduled: bool,
    /// Mean over all statements (ms).
    pub mean_ms: f64,
    /// Largest (ms).
    pub max_ms: f64,
    /// Per second.
    pub per_second: Vec<LagRow>,
}

impl LagReport {
    /// From the merged per-second lags.
    pub fn of(lag: &[LagSecond], scheduled: bool) -> LagReport {
        let total: u64 = lag.iter().map(|s| s.statements).sum();
        let sum: u64 = lag.iter().map(|s| s.lag_sum_us).sum();
        LagReport {
            scheduled,
            mean_ms: if total == 0 {
                0.0
            } else {
                sum as f64 / total as f64 / 1000.0
            },
            max_ms: lag.iter().map(|s| s.lag_max_us).max().unwrap_or(0) as f64 / 1000.0,
            per_second: lag
                .iter()
                .enumerate()
                .filter(|(_, s)| s.statements > 0)
                .map(|(i, s)| LagRow {
                    second: i as u64,
                    statements: s.statements,
                    mean_ms: s.lag_sum_us as f64 / s.statements as f64 / 1000.0,
                    max_ms: s.lag_max_us as f64 / 1000.0,
                })
                .collect(),
        }
    }
}

/// The settings the replay ran with.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplaySettings {
    /// Speed factor.
    pub speed: f64,
    /// `--max`.
    pub max: bool,
    /// `independent` or `strict`.
    pub order: String,
    /// Driver threads.
    pub threads: usize,
    /// Generator `index` of `count`, when the sessions were split.
    pub generator: Option<(u32, u32)>,
    /// How many generators' shares this report merges (`dist`), when it is a merge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generators: Option<u32>,
}

/// The fidelity report.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayReport {
    /// Always `pgsurge-replay`.
    pub format: String,
    /// [`REPORT_VERSION`].
    pub version: u32,
    /// The logs.
    pub logs: Vec<LogFile>,
    /// How it ran.
    pub settings: ReplaySettings,
    /// What was read.
    pub read: ReadSummary,
    /// How the replay went.
    pub replay: ReplaySummary,
    /// Its lag behind the schedule.
    pub lag: LagReport,
    /// Per fingerprint, most logged first.
    pub fingerprints: Vec<FingerprintRow>,
    /// Why the replay ended early, if it did (a stall in strict order, a stop).
    pub ended_early: Option<String>,
}

/// The fingerprint rows of the two sides, most logged first.
pub fn fingerprint_rows(
    table: &[Fingerprint],
    logged: &Counts,
    replayed: &Counts,
) -> Vec<FingerprintRow> {
    let mut rows: Vec<FingerprintRow> = table
        .iter()
        .enumerate()
        .map(|(i, f)| {
            let id = FpId(i as u32);
            FingerprintRow {
                fingerprint: f.id.clone(),
                statement: f.text.clone(),
                logged: Side::of(logged.get(id)),
                replayed: Side::of(replayed.get(id)),
            }
        })
        .filter(|r| r.logged.statements > 0 || r.replayed.statements > 0)
        .collect();
    rows.sort_by(|a, b| {
        b.logged
            .statements
            .cmp(&a.logged.statements)
            .then_with(|| a.fingerprint.cmp(&b.fingerprint))
    });
    rows
}

/// The totals of a drivers' tally.
pub fn replay_summary(t: &ReplayTally, elapsed_s: f64, log_span_s: f64) -> ReplaySummary {
    let statements = (0..t.counts.len())
        .filter_map(|i| t.counts.get(FpId(i as u32)))
        .map(|c| c.statements)
        .sum();
    ReplaySummary {
        start_time_unix_us: 0,
        elapsed_s,
        log_span_s,
        sessions: t.sessions,
        failed_connections: t.failed_connections,
        statements,
        not_sent: t.not_sent,
        expected_errors: t.expected_errors,
        missing_errors: t.missing_errors,
        unexpected_errors: t.unexpected_errors,
        cancels_sent: t.cancels_sent,
        ended_in_transaction: t.ended_in_transaction,
        error_examples: t.error_examples.clone(),
    }
}

fn ms(l: &Option<Latency>, f: impl Fn(&Latency) -> f64) -> String {
    match l {
        Some(l) => format!("{:.3}", f(l)),
        None => "-".into(),
    }
}

impl ReplayReport {
    /// The document as pretty JSON with a final newline.
    pub fn to_json(&self) -> String {
        let mut s = serde_json::to_string_pretty(self).expect("a report always serializes");
        s.push('\n');
        s
    }

    /// Whether the replay did what the log did: every statement sent, no replay error,
    /// no expected error missing, nothing ended early.
    pub fn faithful(&self) -> bool {
        let r = &self.replay;
        r.not_sent == 0
            && r.unexpected_errors == 0
            && r.missing_errors == 0
            && r.failed_connections == 0
            && self.ended_early.is_none()
    }

    /// The report as text: totals, lag, and the table of fingerprints.
    pub fn to_text(&self) -> String {
        let mut o = String::new();
        let r = &self.read;
        let p = &self.replay;
        let files: Vec<String> = self
            .logs
            .iter()
            .map(|l| format!("{} ({})", l.path, l.format))
            .collect();
        let _ = writeln!(o, "replay of {}", files.join(", "));
        let _ = writeln!(
            o,
            "read: {} sessions, {} statements ({} extended-protocol executions), {} failed in the log ({} cancelled), {} with durations{}",
            r.sessions,
            r.statements,
            r.executes,
            r.errors,
            r.cancels,
            r.durations,
            if r.skipped > 0 { format!(", {} unreadable lines skipped", r.skipped) } else { String::new() }
        );
        for e in &r.skipped_examples {
            let _ = writeln!(o, "  skipped {e}");
        }
        if let Some(u) = r.unlogged_ends {
            let _ = writeln!(
                o,
                "sessions without a logged end: {} ended where another process had their pid, {} where the server restarted",
                u.pid_reused, u.server_restart
            );
        }
        if let Some(n) = r.fingerprint_limit {
            let _ = writeln!(
                o,
                "fingerprints: more than {n} in the log; the statements of those past the first {n} are counted together in the row \"{OTHER}\""
            );
        }
        let s = &self.settings;
        let pacing = if s.max {
            format!("--max (sessions start at speed {})", s.speed)
        } else {
            format!("speed {}", s.speed)
        };
        let _ = writeln!(
            o,
            "settings: {pacing}, {} order, {} thread{}{}",
            s.order,
            s.threads,
            if s.threads == 1 { "" } else { "s" },
            match (s.generator, s.generators) {
                (Some((i, n)), _) => format!(", generator {} of {n}", i + 1),
                (None, Some(n)) => format!(", merged from {n} generators"),
                (None, None) => String::new(),
            }
        );
        let rate = if p.elapsed_s > 0.0 {
            p.statements as f64 / p.elapsed_s
        } else {
            0.0
        };
        let _ = writeln!(
            o,
            "replayed: {} sessions, {} statements in {:.3} s ({:.0} statements/s) for {:.3} s of log",
            p.sessions, p.statements, p.elapsed_s, rate, p.log_span_s
        );
        let _ = writeln!(
            o,
            "errors: {} failed as logged, {} logged failures did not fail, {} replay errors; {} cancels sent; {} sessions ended inside a transaction",
            p.expected_errors, p.missing_errors, p.unexpected_errors, p.cancels_sent, p.ended_in_transaction
        );
        if p.not_sent > 0 || p.failed_connections > 0 {
            let _ = writeln!(
                o,
                "not sent: {} statements ({} sessions could not connect)",
                p.not_sent, p.failed_connections
            );
        }
        for e in &p.error_examples {
            let _ = writeln!(
                o,
                "  replay error at {}: {} {}",
                e.at, e.sqlstate, e.message
            );
        }
        if self.lag.scheduled {
            let worst = self
                .lag
                .per_second
                .iter()
                .max_by(|a, b| a.max_ms.total_cmp(&b.max_ms));
            let _ = writeln!(
                o,
                "lag behind the schedule: mean {:.3} ms, max {:.3} ms{}",
                self.lag.mean_ms,
                self.lag.max_ms,
                worst.map_or(String::new(), |w| format!(" (in second {})", w.second))
            );
        }
        if let Some(why) = &self.ended_early {
            let _ = writeln!(o, "ended early: {why}");
        }
        let _ = writeln!(o);
        let _ = writeln!(
            o,
            "{:<16} {:>9} {:>9} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9}  statement",
            "fingerprint",
            "logged",
            "replayed",
            "err log",
            "err rep",
            "log mean",
            "rep mean",
            "log p95",
            "rep p95"
        );
        for f in &self.fingerprints {
            let text: String = f.statement.split_whitespace().collect::<Vec<_>>().join(" ");
            let text: String = text.chars().take(60).collect();
            let _ = writeln!(
                o,
                "{:<16} {:>9} {:>9} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9}  {}",
                f.fingerprint.chars().take(16).collect::<String>(),
                f.logged.statements,
                f.replayed.statements,
                f.logged.errors,
                f.replayed.errors,
                ms(&f.logged.latency, |l| l.mean_ms),
                ms(&f.replayed.latency, |l| l.mean_ms),
                ms(&f.logged.latency, |l| l.p95_ms),
                ms(&f.replayed.latency, |l| l.p95_ms),
                text
            );
        }
        let _ = writeln!(
            o,
            "(latencies in ms: logged = the server's durations, replayed = from send to answer)"
        );
        o
    }
}
