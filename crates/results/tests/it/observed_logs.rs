//! Reproduce real pgbench `-l` per-transaction log files line for line: the
//! options come from the recorded command line (which columns exist, which word
//! a failure gets), the per-transaction values from the recorded lines.

use std::path::Path;

use pgsurge_results::{FailureKind, LogOptions, TxnLogEntry, TxnLogWriter, TxnOutcome};

fn options(cmd: &str) -> LogOptions {
    let toks: Vec<&str> = cmd.split_whitespace().collect();
    let has = |o: &str| {
        toks.iter()
            .any(|t| *t == o || t.starts_with(&format!("{o}=")))
    };
    let max_tries = toks
        .iter()
        .find_map(|t| t.strip_prefix("--max-tries="))
        .map_or(1, |v| v.parse().expect("max tries"));
    LogOptions {
        throttled: has("-R"),
        latency_limit: has("-L"),
        max_tries,
        failures_detailed: has("--failures-detailed"),
    }
}

fn entry(line: &str, opts: &LogOptions) -> TxnLogEntry {
    let f: Vec<&str> = line.split(' ').collect();
    let int = |i: usize| {
        f[i].parse::<i64>()
            .unwrap_or_else(|_| panic!("field {i} of {line:?}"))
    };
    let outcome = match f[2] {
        "skipped" => TxnOutcome::Skipped,
        "serialization" => TxnOutcome::Failed(FailureKind::Serialization),
        "deadlock" => TxnOutcome::Failed(FailureKind::Deadlock),
        "failed" => TxnOutcome::Failed(FailureKind::Serialization),
        _ => TxnOutcome::Success,
    };
    let mut next = 6;
    let lag = if opts.throttled {
        next += 1;
        int(6) as f64
    } else {
        0.0
    };
    let tries = if opts.max_tries != 1 {
        int(next) as u32 + 1
    } else {
        1
    };
    TxnLogEntry {
        client_id: int(0) as u32,
        txn_no: int(1) as u64,
        script: int(3) as usize,
        outcome,
        latency_us: if outcome == TxnOutcome::Success {
            int(2) as f64
        } else {
            0.0
        },
        lag_us: lag,
        tries,
        now_epoch_us: int(4) * 1_000_000 + int(5),
    }
}

fn check(file: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/observed")
        .join(file);
    let text = std::fs::read_to_string(path).expect("observed log");
    let (cmd, body) = text.split_once('\n').expect("command line");
    let opts = options(cmd);
    let mut w = TxnLogWriter::new(Vec::new(), opts);
    for line in body.lines() {
        w.log(&entry(line, &opts)).expect("log");
    }
    let got = String::from_utf8(w.finish().expect("flush")).expect("utf8");
    assert_eq!(got, body, "{file}");
}

#[test]
fn plain_log_thread_0_and_1() {
    check("log.pgbench_log.28216.log");
    check("log.pgbench_log.28216.1.log");
}

#[test]
fn rate_and_tries_columns() {
    check("log-rate-tries.mylog.28227.log");
}

#[test]
fn skipped_under_rate_and_latency_limit() {
    check("log-rate-L.mylog.28238.log");
}

#[test]
fn sampled_log() {
    check("sampling.mylog.28383.log");
}

#[test]
fn serialization_failures_detailed_with_retries() {
    check("ser-3tries.mylog.28614.log");
}

/// `n` values with exactly the given min, max, sum and sum of squares: min,
/// max, and the other `n - 2` drawn from a two-point distribution.
fn values(n: usize, sum: f64, sum2: f64, min: f64, max: f64) -> Vec<f64> {
    let k = n - 2;
    let (s, q) = (sum - min - max, sum2 - min * min - max * max);
    let mean = s / k as f64;
    let var = q / k as f64 - mean * mean;
    let (p, a, b) = (1..k)
        .map(|p| {
            let w = p as f64 / k as f64;
            let a = mean - (var * (1.0 - w) / w).sqrt();
            let b = mean + (var * w / (1.0 - w)).sqrt();
            (p, a, b)
        })
        .find(|&(_, a, b)| a >= min && b <= max)
        .expect("feasible values");
    let mut v = vec![min, max];
    v.extend(std::iter::repeat_n(a, p));
    v.extend(std::iter::repeat_n(b, k - p));
    v
}

fn check_aggregate(file: &str, interval_s: u32) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/observed")
        .join(file);
    let text = std::fs::read_to_string(path).expect("observed log");
    let (cmd, body) = text.split_once('\n').expect("command line");
    let opts = options(cmd);
    let lines: Vec<Vec<f64>> = body
        .lines()
        .map(|l| l.split(' ').map(|f| f.parse().expect("number")).collect())
        .collect();
    let first = lines[0][0] as i64 * 1_000_000;
    // The thread started 0.3 s into the first second.
    let mut w =
        pgsurge_results::AggregateLogWriter::new(Vec::new(), opts, interval_s, first + 300_000);
    let mut no = 0;
    for f in &lines {
        let n = f[1] as usize;
        let lat = values(n, f[2], f[3], f[4], f[5]);
        let lag = if opts.throttled {
            values(n, f[6], f[7], f[8], f[9])
        } else {
            vec![0.0; n]
        };
        let at = f[0] as i64 * 1_000_000 + 1_000;
        for i in 0..n {
            no += 1;
            let e = TxnLogEntry {
                client_id: 0,
                txn_no: no,
                script: 0,
                outcome: TxnOutcome::Success,
                latency_us: lat[i],
                lag_us: lag[i],
                tries: 1,
                now_epoch_us: at + i as i64,
            };
            w.log(&e).expect("log");
        }
        for _ in 0..f[10] as usize {
            no += 1;
            let e = TxnLogEntry {
                outcome: TxnOutcome::Skipped,
                latency_us: 0.0,
                lag_us: 0.0,
                txn_no: no,
                client_id: 0,
                script: 0,
                tries: 1,
                now_epoch_us: at + 100_000,
            };
            w.log(&e).expect("log");
        }
    }
    // A transaction in the interval still open at the end is not written.
    let open = first + lines.len() as i64 * i64::from(interval_s) * 1_000_000;
    let e = TxnLogEntry {
        outcome: TxnOutcome::Success,
        latency_us: 5.0,
        lag_us: 0.0,
        txn_no: no + 1,
        client_id: 0,
        script: 0,
        tries: 1,
        now_epoch_us: open + 10,
    };
    w.log(&e).expect("log");
    let got = String::from_utf8(w.finish(open + 500_000).expect("flush")).expect("utf8");
    assert_eq!(got, body, "{file}");
}

#[test]
fn aggregate_lines_two_second_intervals() {
    check_aggregate("agg.mylog.28246.log", 2);
}

#[test]
fn aggregate_lines_with_lag_and_skips() {
    check_aggregate("agg2.mylog.28346.log", 1);
}
