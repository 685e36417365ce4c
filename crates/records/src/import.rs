//! `pgsurge results import`: existing pgbench outputs into the store — the text report
//! (stdout of a run), and optionally its `-l` per-transaction log or
//! `--aggregate-interval` log, which give per-second intervals and an exact latency
//! histogram (per-transaction logs) for the imported run.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use pgsurge_store::{
    epoch_to_rfc3339, run_status, HistogramRecord, IntervalRecord, RunRecord, RunWrite,
};

/// What a pgbench text report says.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ParsedReport {
    /// `transaction type:` (first one).
    pub transaction_type: Option<String>,
    /// `scaling factor:`.
    pub scale: Option<i64>,
    /// `query mode:`.
    pub query_mode: Option<String>,
    /// `number of clients:`.
    pub clients: Option<i64>,
    /// `number of threads:`.
    pub threads: Option<i64>,
    /// `duration: N s`.
    pub duration_s: Option<f64>,
    /// `number of transactions per client:`.
    pub transactions_per_client: Option<i64>,
    /// `number of transactions actually processed:`.
    pub transactions: Option<i64>,
    /// `number of failed transactions:`.
    pub failures: Option<i64>,
    /// `latency average = X ms`.
    pub latency_mean_ms: Option<f64>,
    /// `latency stddev = X ms`.
    pub latency_stddev_ms: Option<f64>,
    /// `rate limit schedule lag: avg X (max Y) ms`.
    pub lag_mean_ms: Option<f64>,
    /// `tps = X (without initial connection time)` or the older `excluding connections establishing`.
    pub tps: Option<f64>,
    /// The 1-based line each field above was read from, by its label in the report
    /// (`"tps"`, `"number of clients"`, …).
    pub lines: BTreeMap<&'static str, usize>,
    /// Lines refused while parsing, as (1-based line, why): a value that is not a
    /// number in range, a second report. [`ParsedReport::check`] reports the first.
    pub problems: Vec<(usize, String)>,
}

impl ParsedReport {
    /// `line N: ` for the line `label` was read from (empty when unknown).
    fn at(&self, label: &str) -> String {
        self.lines
            .get(label)
            .map(|n| format!("line {n}: "))
            .unwrap_or_default()
    }

    /// The number `value` of field `label`, read on line `n` (`text`); a value that
    /// is not a number is a problem, not a missing field.
    fn real(&mut self, label: &'static str, value: &str, n: usize, text: &str) -> Option<f64> {
        self.lines.insert(label, n);
        let v = num::<f64>(value);
        if v.is_none() {
            self.problems
                .push((n, format!("\"{text}\": the value is not a number")));
        }
        v
    }

    /// As [`Self::real`], for a count: a whole number within the range stored.
    fn count(&mut self, label: &'static str, value: &str, n: usize, text: &str) -> Option<i64> {
        self.real(label, value, n, text)?;
        let v = num::<i64>(value);
        if v.is_none() {
            self.problems.push((
                n,
                format!("\"{text}\": the value is not a whole number in range"),
            ));
        }
        v
    }

    /// Rejects what no pgbench run can have, naming the line: a value the parser
    /// refused (out of range, not a number), a second report, negative counts,
    /// infinite or negative rates and latencies (`1e400` parses as infinity), and a
    /// report that contradicts itself (no transaction processed, yet a rate above 0).
    pub fn check(&self) -> Result<(), String> {
        if let Some((line, why)) = self.problems.first() {
            return Err(format!("line {line}: {why}"));
        }
        let counts = [
            ("scaling factor", self.scale, 1),
            ("number of clients", self.clients, 1),
            ("number of threads", self.threads, 1),
            (
                "number of transactions per client",
                self.transactions_per_client,
                1,
            ),
            (
                "number of transactions actually processed",
                self.transactions,
                0,
            ),
            ("number of failed transactions", self.failures, 0),
        ];
        for (name, v, min) in counts {
            if let Some(v) = v {
                if v < min {
                    return Err(format!(
                        "{}\"{name}: {v}\" is not valid (must be ≥ {min})",
                        self.at(name)
                    ));
                }
            }
        }
        let reals = [
            ("duration", self.duration_s),
            ("latency average", self.latency_mean_ms),
            ("latency stddev", self.latency_stddev_ms),
            ("rate limit schedule lag", self.lag_mean_ms),
            ("tps", self.tps),
        ];
        for (name, v) in reals {
            if let Some(v) = v {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(format!(
                        "{}\"{name}\" is {v}: not a finite, non-negative number",
                        self.at(name)
                    ));
                }
            }
        }
        const PROCESSED: &str = "number of transactions actually processed";
        if let (Some(n), Some(tps)) = (self.transactions, self.tps) {
            if (n == 0) != (tps == 0.0) {
                return Err(format!(
                    "{}tps = {tps} contradicts {}\"{PROCESSED}: {n}\"",
                    self.at("tps"),
                    self.at(PROCESSED)
                ));
            }
        }
        Ok(())
    }
}

/// Checks that `log` (named `log_name`) is the log of `report`: it holds as many
/// transactions as the report says were processed. A log sampled with
/// `--sampling-rate`, one of several per-thread logs, or another run's log does not.
/// The error names the report's line.
pub fn check_log(report: &ParsedReport, log: &ParsedLog, log_name: &str) -> Result<(), String> {
    let Some(n) = report.transactions else {
        return Ok(());
    };
    let agrees = if log.aggregate {
        // pgbench does not write the interval the run ends in: the log may miss up to
        // one interval of transactions (at most twice the run's mean rate over one
        // interval, or the busiest interval written), never hold more. With a single
        // interval its length is unknown.
        let step = match log.intervals.as_slice() {
            [a, b, ..] => b.ts - a.ts,
            _ => f64::INFINITY,
        };
        let by_rate = (2.0 * report.tps.unwrap_or(f64::INFINITY) * step).ceil() as i64;
        let busiest = log
            .intervals
            .iter()
            .map(|i| i.transactions)
            .max()
            .unwrap_or(0);
        log.transactions <= n && n - log.transactions <= by_rate.max(busiest)
    } else {
        // pgbench 15 and later count skipped transactions apart from the processed
        // ones; older versions counted them in.
        log.transactions == n || log.transactions.saturating_add(log.skipped) == n
    };
    if agrees {
        return Ok(());
    }
    let what = if log.aggregate {
        "in its intervals"
    } else {
        "on its transaction lines"
    };
    Err(format!(
        "{}the report says {n} transactions were processed, but the log {log_name} holds {} {what} \
         (a log sampled with --sampling-rate, one of several per-thread logs, or another run's \
         log cannot be imported with this report)",
        report.at("number of transactions actually processed"),
        log.transactions
    ))
}

fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.split_whitespace().next()?.split('/').next()?.parse().ok()
}

/// Labels that begin a report's lines: met again after a report's `tps =` line, one
/// of them begins a second report.
const REPORT_LINES: &[&str] = &[
    "transaction type:",
    "scaling factor:",
    "number of clients:",
    "number of transactions actually processed:",
    "tps =",
];

/// Parses the report found in `text`; None when it holds no `tps =` line. What it
/// cannot accept (a value out of range, a second report after the first) is kept in
/// [`ParsedReport::problems`] for [`ParsedReport::check`].
pub fn parse_report(text: &str) -> Option<ParsedReport> {
    let mut r = ParsedReport::default();
    // The line of the `tps =` line that ended the report.
    let mut ended: Option<usize> = None;
    for (i, line) in text.lines().enumerate() {
        let n = i + 1;
        let line = line.trim();
        if let Some(end) = ended {
            if REPORT_LINES.iter().any(|p| line.starts_with(p)) {
                r.problems.push((
                    n,
                    format!(
                        "a second report begins here (the first ends at line {end}); import \
                         each report from its own file"
                    ),
                ));
                break;
            }
            continue;
        }
        let after = |p: &str| line.strip_prefix(p).map(str::trim);
        if let Some(v) = after("transaction type:") {
            r.lines.entry("transaction type").or_insert(n);
            r.transaction_type.get_or_insert_with(|| v.to_string());
        } else if let Some(v) = after("scaling factor:") {
            r.scale = r.count("scaling factor", v, n, line);
        } else if let Some(v) = after("query mode:") {
            r.lines.insert("query mode", n);
            r.query_mode = Some(v.to_string());
        } else if let Some(v) = after("number of clients:") {
            r.clients = r.count("number of clients", v, n, line);
        } else if let Some(v) = after("number of threads:") {
            r.threads = r.count("number of threads", v, n, line);
        } else if let Some(v) = after("duration:") {
            r.duration_s = r.real("duration", v, n, line);
        } else if let Some(v) = after("number of transactions per client:") {
            r.transactions_per_client = r.count("number of transactions per client", v, n, line);
        } else if let Some(v) = after("number of transactions actually processed:") {
            r.transactions = r.count("number of transactions actually processed", v, n, line);
            // `N/M` (a transaction-limited run): N of the M planned.
            let planned = v.split_whitespace().next().and_then(|t| t.split_once('/'));
            if let (Some(done), Some((_, planned))) = (r.transactions, planned) {
                let why = match planned.parse::<i64>() {
                    Ok(m) if done <= m => None,
                    Ok(m) => Some(format!("{done} transactions processed of {m} planned")),
                    Err(_) => Some("the planned count is not a whole number in range".into()),
                };
                if let Some(why) = why {
                    r.problems.push((n, format!("\"{line}\": {why}")));
                }
            }
        } else if let Some(v) = after("number of failed transactions:") {
            r.failures = r.count("number of failed transactions", v, n, line);
        } else if let Some(v) = after("latency average =") {
            r.latency_mean_ms = r.real("latency average", v, n, line);
        } else if let Some(v) = after("latency stddev =") {
            r.latency_stddev_ms = r.real("latency stddev", v, n, line);
        } else if let Some(v) = after("rate limit schedule lag: avg") {
            r.lag_mean_ms = r.real("rate limit schedule lag", v, n, line);
        } else if let Some(v) = after("tps =") {
            r.tps = r.real("tps", v, n, line);
            // Before pgbench 14 the report has two: including connection time, then
            // excluding it (the one kept). Either other form ends the report.
            if !v.contains("including connections establishing") {
                ended = Some(n);
            }
        }
    }
    r.lines.contains_key("tps").then_some(r)
}

/// Per-second intervals and a histogram built from a log.
#[derive(Debug, Default)]
pub struct ParsedLog {
    /// Intervals by start second.
    pub intervals: Vec<IntervalRecord>,
    /// Latency histogram (µs) — per-transaction logs only.
    pub histogram: Option<Histogram<u64>>,
    /// First and last epoch seen.
    pub span: Option<(f64, f64)>,
    /// Transactions that completed: transaction lines with a latency, or the sum of
    /// the aggregate lines' counts.
    pub transactions: i64,
    /// Transaction lines marked `skipped` (0 for an aggregate log).
    pub skipped: i64,
    /// An `--aggregate-interval` log.
    pub aggregate: bool,
}

/// Parses a pgbench `-l` log, per-transaction or aggregated (detected per line: an
/// aggregate line starts with an epoch, a transaction line with a client id).
pub fn parse_log(text: &str) -> Result<ParsedLog, String> {
    let mut per_sec: BTreeMap<i64, (i64, f64, f64, f64, i64)> = BTreeMap::new(); // cnt, sum, min, max, failures
    let mut hist =
        Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).map_err(|e| e.to_string())?;
    let mut any_txn = false;
    // Transaction lines with a latency, and those marked skipped.
    let (mut completed, mut skipped) = (0i64, 0i64);
    let mut aggregate = Vec::new();
    let mut span: Option<(f64, f64)> = None;
    for (n, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        let bad = || format!("log line {}: unexpected format: {line}", n + 1);
        let first: f64 = f[0].parse().map_err(|_| bad())?;
        if first > 1e9 {
            // interval_start num_transactions sum_latency sum_latency_2 min max ...
            if f.len() < 6 {
                return Err(bad());
            }
            // Counts and latencies are finite and ≥ 0 (`1e400`, `-5` are not).
            let p = |i: usize| {
                f.get(i)
                    .and_then(|v| v.parse::<f64>().ok())
                    .filter(|v| v.is_finite() && *v >= 0.0)
            };
            let cnt = p(1).ok_or_else(bad)? as i64;
            let sum = p(2).ok_or_else(bad)?;
            aggregate.push(IntervalRecord {
                ts: first,
                elapsed_s: 0.0,
                duration_s: 1.0,
                warmup: false,
                transactions: cnt,
                tps: cnt as f64,
                latency_mean_ms: (cnt > 0).then(|| sum / cnt as f64 / 1000.0),
                latency_min_ms: p(4).filter(|_| cnt > 0).map(|v| v / 1000.0),
                latency_max_ms: p(5).filter(|_| cnt > 0).map(|v| v / 1000.0),
                ..Default::default()
            });
            span = Some(span.map_or((first, first), |(a, b)| (a.min(first), b.max(first))));
        } else {
            // client_id transaction_no time script_no time_epoch time_us [schedule_lag ...]
            if f.len() < 6 {
                return Err(bad());
            }
            let epoch: i64 = f[4].parse().map_err(|_| bad())?;
            let e = per_sec.entry(epoch).or_insert((0, 0.0, f64::MAX, 0.0, 0));
            match f[2] {
                "failed" => e.4 += 1,
                "skipped" => {
                    e.4 += 1;
                    skipped += 1;
                }
                t => {
                    let us: f64 = t
                        .parse()
                        .ok()
                        .filter(|v: &f64| v.is_finite() && *v >= 0.0)
                        .ok_or_else(bad)?;
                    e.0 += 1;
                    e.1 += us;
                    e.2 = e.2.min(us);
                    e.3 = e.3.max(us);
                    hist.record((us.max(1.0)) as u64)
                        .map_err(|e| e.to_string())?;
                    any_txn = true;
                    completed += 1;
                }
            }
            let t = epoch as f64;
            span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        }
    }
    let is_aggregate = !aggregate.is_empty();
    let transactions = if is_aggregate {
        aggregate
            .iter()
            .fold(0i64, |acc, iv| acc.saturating_add(iv.transactions))
    } else {
        completed
    };
    let mut intervals = if aggregate.is_empty() {
        per_sec
            .into_iter()
            .map(|(sec, (cnt, sum, min, max, fail))| IntervalRecord {
                ts: sec as f64,
                elapsed_s: 0.0,
                duration_s: 1.0,
                warmup: false,
                transactions: cnt,
                tps: cnt as f64,
                failures: Some(fail),
                latency_mean_ms: (cnt > 0).then(|| sum / cnt as f64 / 1000.0),
                latency_min_ms: (cnt > 0).then(|| min / 1000.0),
                latency_max_ms: (cnt > 0).then(|| max / 1000.0),
                ..Default::default()
            })
            .collect()
    } else {
        aggregate
    };
    intervals.sort_by(|a, b| a.ts.total_cmp(&b.ts));
    // Aggregate intervals may be longer than a second: infer from the spacing.
    if intervals.len() > 1 {
        let step = intervals[1].ts - intervals[0].ts;
        if step > 0.0 {
            for iv in &mut intervals {
                iv.duration_s = step;
                iv.tps = iv.transactions as f64 / step;
            }
        }
    }
    let t0 = intervals.first().map(|i| i.ts).unwrap_or(0.0);
    for iv in &mut intervals {
        iv.elapsed_s = iv.ts - t0;
    }
    Ok(ParsedLog {
        intervals,
        histogram: any_txn.then_some(hist),
        span,
        transactions,
        skipped: if is_aggregate { 0 } else { skipped },
        aggregate: is_aggregate,
    })
}

/// Builds the stored test for an imported report (and optional log).
pub fn to_run_write(
    set_id: i64,
    key: &str,
    seq: i64,
    report: &ParsedReport,
    log: Option<ParsedLog>,
    source: &str,
) -> Result<RunWrite, String> {
    let mut run = RunRecord {
        set_id,
        test_key: key.to_string(),
        seq: Some(seq),
        repeat_no: 1,
        status: run_status::IMPORTED.into(),
        script: report.transaction_type.clone(),
        scale: report.scale,
        clients: report.clients,
        threads: report.threads,
        duration_s: report.duration_s,
        transactions_per_client: report.transactions_per_client,
        query_mode: report.query_mode.clone(),
        tps: report.tps,
        transactions: report.transactions,
        failures: report.failures,
        latency_mean_ms: report.latency_mean_ms,
        latency_stddev_ms: report.latency_stddev_ms,
        lag_mean_ms: report.lag_mean_ms,
        options: Some(serde_json::json!({ "imported_from": source })),
        ..Default::default()
    };
    let mut w = RunWrite::default();
    if let Some(log) = log {
        if let Some((a, b)) = log.span {
            run.start_epoch = Some(a);
            run.end_epoch = Some(b + 1.0);
            run.started_at = Some(epoch_to_rfc3339(a));
            run.finished_at = Some(epoch_to_rfc3339(b + 1.0));
        }
        if let Some(h) = &log.histogram {
            run.set_latency_percentiles(|rank| {
                Some(pgsurge_results::percentile::latency_ms_at(h, rank))
            });
            run.latency_min_ms = Some(h.min() as f64 / 1000.0);
            run.latency_max_ms = Some(h.max() as f64 / 1000.0);
            w.histograms.push(
                HistogramRecord::from_histogram("latency", -1, None, h)
                    .map_err(|e| e.to_string())?,
            );
        }
        w.intervals = log.intervals;
    }
    w.run = run;
    Ok(w)
}

#[cfg(test)]
mod tests {
    use super::*;

    const REPORT: &str =
        "pgbench (18.0)\nstarting vacuum...end.\ntransaction type: <builtin: TPC-B (sort of)>\n\
scaling factor: 1\nquery mode: simple\nnumber of clients: 2\nnumber of threads: 2\n\
maximum number of tries: 1\nduration: 5 s\nnumber of transactions actually processed: 1234\n\
number of failed transactions: 0 (0.000%)\nlatency average = 8.104 ms\nlatency stddev = 1.5 ms\n\
initial connection time = 4.168 ms\ntps = 246.8 (without initial connection time)\n";

    #[test]
    fn impossible_values_are_rejected() {
        assert_eq!(parse_report(REPORT).unwrap().check(), Ok(()));
        for (from, to, field) in [
            (
                "number of clients: 2",
                "number of clients: -5",
                "number of clients",
            ),
            (
                "number of clients: 2",
                "number of clients: 0",
                "number of clients",
            ),
            ("tps = 246.8", "tps = 1e400", "tps"),
            ("tps = 246.8", "tps = -1", "tps"),
            (
                "latency average = 8.104",
                "latency average = NaN",
                "latency average",
            ),
            (
                "processed: 1234",
                "processed: -3",
                "transactions actually processed",
            ),
            (
                "processed: 1234",
                "processed: 12/10",
                "12 transactions processed of 10 planned",
            ),
        ] {
            let r = parse_report(&REPORT.replace(from, to)).unwrap();
            let e = r.check().unwrap_err();
            assert!(e.contains(field), "{to}: {e}");
        }
        let agg = "1700000000 10 5000 0 100 900\n1700000001 1e400 5000 0 100 900\n";
        assert!(parse_log(agg).is_err());
        assert!(parse_log("0 1 -500 0 1700000000 1\n").is_err());
    }

    #[test]
    fn parses_a_pgbench_report() {
        let r = parse_report(REPORT).unwrap();
        assert_eq!(r.clients, Some(2));
        assert_eq!(r.transactions, Some(1234));
        assert_eq!(r.duration_s, Some(5.0));
        assert_eq!(r.tps, Some(246.8));
        assert_eq!(r.latency_mean_ms, Some(8.104));
        assert_eq!(r.failures, Some(0));
        assert!(parse_report("no report here").is_none());
        // Transactions-limited runs print "N/M".
        let t = parse_report(&REPORT.replace("1234", "10/10")).unwrap();
        assert_eq!(t.transactions, Some(10));
    }

    #[test]
    fn reports_before_pgbench_14_keep_the_rate_without_connections() {
        let old = REPORT.replace(
            "initial connection time = 4.168 ms\ntps = 246.8 (without initial connection time)\n",
            "tps = 240.1 (including connections establishing)\ntps = 246.8 (excluding connections establishing)\n",
        );
        let r = parse_report(&old).unwrap();
        assert_eq!((r.tps, r.check()), (Some(246.8), Ok(())));
    }

    #[test]
    fn parses_transaction_and_aggregate_logs() {
        let txn = "0 0 1000 0 1700000000 100\n0 1 3000 0 1700000000 900\n1 0 2000 0 1700000001 5\n1 1 skipped 0 1700000001 9\n";
        let l = parse_log(txn).unwrap();
        assert_eq!(l.intervals.len(), 2);
        assert_eq!(l.intervals[0].transactions, 2);
        assert_eq!(l.intervals[0].latency_mean_ms, Some(2.0));
        assert_eq!(l.intervals[1].failures, Some(1));
        assert_eq!(l.histogram.as_ref().unwrap().len(), 3);
        let agg = "1700000000 10 20000 50000000 1000 3000\n1700000005 20 20000 30000000 500 1500\n";
        let l = parse_log(agg).unwrap();
        assert_eq!(l.intervals.len(), 2);
        assert_eq!(l.intervals[1].duration_s, 5.0);
        assert_eq!(l.intervals[1].tps, 4.0);
        assert_eq!(l.intervals[0].latency_mean_ms, Some(2.0));
        assert!(l.histogram.is_none());
        assert!(parse_log("garbage line\n").is_err());
    }
}
