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
}

impl ParsedReport {
    /// Rejects values no pgbench run can have (negative counts, infinite or negative
    /// rates and latencies — `1e400` parses as infinity), naming the field.
    pub fn check(&self) -> Result<(), String> {
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
                    return Err(format!("\"{name}: {v}\" is not valid (must be ≥ {min})"));
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
                        "\"{name}\" is {v}: not a finite, non-negative number"
                    ));
                }
            }
        }
        Ok(())
    }
}

fn num<T: std::str::FromStr>(s: &str) -> Option<T> {
    s.split_whitespace().next()?.split('/').next()?.parse().ok()
}

/// Parses the first report found in `text`; None when it holds no `tps =` line.
pub fn parse_report(text: &str) -> Option<ParsedReport> {
    let mut r = ParsedReport::default();
    for line in text.lines() {
        let line = line.trim();
        let after = |p: &str| line.strip_prefix(p).map(str::trim);
        if let Some(v) = after("transaction type:") {
            r.transaction_type.get_or_insert_with(|| v.to_string());
        } else if let Some(v) = after("scaling factor:") {
            r.scale = num(v);
        } else if let Some(v) = after("query mode:") {
            r.query_mode = Some(v.to_string());
        } else if let Some(v) = after("number of clients:") {
            r.clients = num(v);
        } else if let Some(v) = after("number of threads:") {
            r.threads = num(v);
        } else if let Some(v) = after("duration:") {
            r.duration_s = num(v);
        } else if let Some(v) = after("number of transactions per client:") {
            r.transactions_per_client = num(v);
        } else if let Some(v) = after("number of transactions actually processed:") {
            r.transactions = num(v);
        } else if let Some(v) = after("number of failed transactions:") {
            r.failures = num(v);
        } else if let Some(v) = after("latency average =") {
            r.latency_mean_ms = num(v);
        } else if let Some(v) = after("latency stddev =") {
            r.latency_stddev_ms = num(v);
        } else if let Some(v) = after("rate limit schedule lag: avg") {
            r.lag_mean_ms = num(v);
        } else if let Some(v) = after("tps =") {
            if r.tps.is_none() {
                r.tps = num(v);
            }
            // The first report is complete at its tps line.
            break;
        }
    }
    r.tps.is_some().then_some(r)
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
}

/// Parses a pgbench `-l` log, per-transaction or aggregated (detected per line: an
/// aggregate line starts with an epoch, a transaction line with a client id).
pub fn parse_log(text: &str) -> Result<ParsedLog, String> {
    let mut per_sec: BTreeMap<i64, (i64, f64, f64, f64, i64)> = BTreeMap::new(); // cnt, sum, min, max, failures
    let mut hist =
        Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).map_err(|e| e.to_string())?;
    let mut any_txn = false;
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
                "failed" | "skipped" => e.4 += 1,
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
                }
            }
            let t = epoch as f64;
            span = Some(span.map_or((t, t), |(a, b)| (a.min(t), b.max(t))));
        }
    }
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
            let q = |p: f64| Some(h.value_at_quantile(p) as f64 / 1000.0);
            run.latency_p50_ms = q(0.5);
            run.latency_p90_ms = q(0.9);
            run.latency_p95_ms = q(0.95);
            run.latency_p99_ms = q(0.99);
            run.latency_p999_ms = q(0.999);
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
