//! Snapshot tests (insta) of every output format from fixed statistics, plus
//! exact-format checks taken from the spec's examples and real transcripts.

use crate::common;

use pgsurge_results::{
    format_progress_line, log_file_path, write_json_to, write_pgbench_report, AggregateLogWriter,
    FailureKind, HdrIntervalLogWriter, HdrLogUnit, IntervalSample, LatencyHistogram, LogOptions,
    Percentile, PgCompat, ProgressOptions, ReportOptions, RunResult, TxnLogEntry, TxnLogWriter,
    TxnOutcome,
};

fn report(r: &RunResult, opts: &ReportOptions) -> String {
    let mut out = Vec::new();
    write_pgbench_report(r, opts, &mut out).expect("render");
    String::from_utf8(out).expect("utf8")
}

#[test]
fn report_multi_script_everything_on() {
    let r = common::result();
    insta::assert_snapshot!(report(&r, &ReportOptions::from_result(&r)));
}

#[test]
fn report_multi_script_pg17_layout() {
    let r = common::result();
    let opts = ReportOptions {
        compat: PgCompat::Pg17,
        percentiles: vec![],
        ..ReportOptions::from_result(&r)
    };
    insta::assert_snapshot!(report(&r, &opts));
}

#[test]
fn percentile_lines_only_when_asked() {
    let r = common::result();
    let with = report(&r, &ReportOptions::from_result(&r));
    let without = report(
        &r,
        &ReportOptions {
            percentiles: vec![],
            ..ReportOptions::from_result(&r)
        },
    );
    assert!(with.contains("\nlatency p99 = "));
    assert!(with.contains("\n - latency p50 = "));
    assert!(with.contains("statement latency percentiles in milliseconds (p50 p99):"));
    assert!(!without.contains(" p50"));
    assert!(!without.contains("percentile"));
    // Removing the opt-in lines gives back exactly the pgbench report.
    let stripped: String = with
        .lines()
        .scan(false, |in_pct, l| {
            if l.contains("statement latency percentiles") {
                *in_pct = true;
                return Some(None);
            }
            if *in_pct && (l.starts_with("SQL script") || !l.starts_with("   ")) {
                *in_pct = false;
            }
            Some((!*in_pct && !l.contains("latency p")).then(|| format!("{l}\n")))
        })
        .flatten()
        .collect();
    assert_eq!(stripped, without);
}

#[test]
fn report_single_script_duration_connect_interrupted() {
    let mut r = common::result();
    r.scripts.truncate(1);
    r.transaction_type = r.scripts[0].name.clone();
    r.options.duration_s = Some(2);
    r.options.transactions_per_client = None;
    r.options.rate_tps = None;
    r.options.latency_limit_us = None;
    r.options.max_tries = 1;
    r.options.connect_per_transaction = true;
    r.options.report_per_command = false;
    r.connection_total_us = 123_456;
    r.interrupted = true;
    r.partition_method = Some("hash".into());
    r.partitions = 4;
    let opts = ReportOptions {
        failures_detailed: false,
        percentiles: vec![],
        ..ReportOptions::from_result(&r)
    };
    let text = report(&r, &opts);
    // Not detailed: duration-based average, and failures happened.
    assert!(text.contains(" ms (including failures)\n"), "{text}");
    assert!(text.contains("tps = ") && text.contains(" (including reconnection times)\n"));
    assert!(text.ends_with(
        "run interrupted: results cover only the transactions finished before the interruption\n"
    ));
    insta::assert_snapshot!(text);
}

#[test]
fn report_nan_and_infinity_cases() {
    let mut r = common::result();
    // Everything skipped under -R -L: lag average is 0/0, tps over 0 s is inf.
    r.totals.transactions = 0;
    r.totals.failures = 0;
    r.totals.serialization_failures = 0;
    r.totals.deadlock_failures = 0;
    r.totals.skipped = 5;
    r.totals.late = 0;
    r.totals.latency.sums_us = Default::default();
    r.totals.lag.sums_us = Default::default();
    r.scripts.truncate(1);
    r.bench_duration_us = 0;
    r.tps = 0.0 / r.bench_duration_us as f64;
    let text = report(
        &r,
        &ReportOptions {
            per_command: false,
            ..ReportOptions::from_result(&r)
        },
    );
    assert!(
        text.contains("number of transactions skipped: 5 (100.000%)\n"),
        "{text}"
    );
    assert!(text.contains("latency limit: 0/0 (0.000%)\n"), "{text}");
    assert!(
        text.contains("rate limit schedule lag: avg NaN (max 0.000) ms\n"),
        "{text}"
    );
    assert!(
        text.contains("tps = NaN (without initial connection time)\n"),
        "{text}"
    );
    assert!(!text.contains("latency average"), "{text}");
}

#[test]
fn progress_lines_match_observed() {
    let s = |elapsed: f64, epoch: f64, tps: f64, lat: f64, sd: f64| IntervalSample {
        elapsed_s: elapsed,
        epoch_s: epoch,
        duration_s: 1.0,
        transactions: tps as u64,
        failures: 0,
        skipped: 0,
        retried: 0,
        retries: 0,
        tps,
        latency_ms: lat,
        stddev_ms: sd,
        lag_ms: 0.145,
        percentiles: vec![Percentile {
            percentile: 99.9,
            latency_ms: 1.25,
        }],
        histogram: None,
    };
    let line = |s: &IntervalSample, o: ProgressOptions| {
        let mut out = Vec::new();
        format_progress_line(s, &o, &mut out).expect("write");
        String::from_utf8(out).expect("utf8")
    };
    let plain = ProgressOptions {
        max_tries: 1,
        ..Default::default()
    };
    assert_eq!(
        line(&s(1.0, 0.0, 382.0, 5.183, 8.526), plain),
        "progress: 1.0 s, 382.0 tps, lat 5.183 ms stddev 8.526, 0 failed\n"
    );
    assert_eq!(
        line(
            &s(1.0, 1_795_305_676.654, 233.0, 4.256, 1.922),
            ProgressOptions {
                timestamp: true,
                ..plain
            }
        ),
        "progress: 1795305676.654 s, 233.0 tps, lat 4.256 ms stddev 1.922, 0 failed\n"
    );
    let all = ProgressOptions {
        throttled: true,
        latency_limit: true,
        max_tries: 2,
        ..plain
    };
    assert_eq!(
        line(&s(1.0, 0.0, 117.0, 0.474, 0.173), all),
        "progress: 1.0 s, 117.0 tps, lat 0.474 ms stddev 0.173, 0 failed, lag 0.145 ms, 0 skipped, 0 retried, 0 retries\n"
    );
    insta::assert_snapshot!(line(
        &s(2.0, 0.0, 57531.2, 0.066, 0.071),
        ProgressOptions { percentiles: true, ..all }
    ), @"progress: 2.0 s, 57531.2 tps, lat 0.066 ms stddev 0.071, 0 failed, lag 0.145 ms, 0 skipped, 0 retried, 0 retries, p99.9 1.250 ms
");
}

fn entry(
    client: u32,
    no: u64,
    outcome: TxnOutcome,
    lat: f64,
    lag: f64,
    tries: u32,
    now: i64,
) -> TxnLogEntry {
    TxnLogEntry {
        client_id: client,
        txn_no: no,
        script: 0,
        outcome,
        latency_us: lat,
        lag_us: lag,
        tries,
        now_epoch_us: now,
    }
}

fn txn_log(opts: LogOptions, entries: &[TxnLogEntry]) -> String {
    let mut w = TxnLogWriter::new(Vec::new(), opts);
    for e in entries {
        w.log(e).expect("log");
    }
    String::from_utf8(w.finish().expect("flush")).expect("utf8")
}

#[test]
fn transaction_log_lines_match_observed() {
    let plain = LogOptions {
        max_tries: 1,
        ..Default::default()
    };
    assert_eq!(
        txn_log(
            plain,
            &[entry(
                0,
                1,
                TxnOutcome::Success,
                12062.0,
                0.0,
                1,
                1_795_305_692_900_086
            )]
        ),
        "0 1 12062 0 1795305692 900086\n"
    );
    let rate_tries = LogOptions {
        throttled: true,
        max_tries: 2,
        ..plain
    };
    assert_eq!(
        txn_log(
            rate_tries,
            &[entry(
                0,
                1,
                TxnOutcome::Success,
                2840.0,
                88.0,
                1,
                1_795_305_692_947_520
            )]
        ),
        "0 1 2840 0 1795305692 947520 88 0\n"
    );
    let rate_limit = LogOptions {
        throttled: true,
        latency_limit: true,
        ..plain
    };
    assert_eq!(
        txn_log(
            rate_limit,
            &[entry(
                0,
                2,
                TxnOutcome::Skipped,
                0.0,
                5.0,
                1,
                1_795_305_693_024_190
            )]
        ),
        "0 2 skipped 0 1795305693 24190 0\n"
    );
    let detailed = LogOptions {
        max_tries: 3,
        failures_detailed: true,
        ..plain
    };
    let ser = TxnOutcome::Failed(FailureKind::Serialization);
    assert_eq!(
        txn_log(
            detailed,
            &[entry(2, 1, ser, 0.0, 0.0, 3, 1_795_305_706_945_650)]
        ),
        "2 1 serialization 0 1795305706 945650 2\n"
    );
    let failed = LogOptions {
        max_tries: 3,
        ..plain
    };
    let dl = TxnOutcome::Failed(FailureKind::Deadlock);
    assert_eq!(
        txn_log(
            failed,
            &[entry(1, 7, dl, 0.0, 0.0, 2, 1_795_305_706_000_001)]
        ),
        "1 7 failed 0 1795305706 1 1\n"
    );
    assert_eq!(
        txn_log(
            LogOptions {
                failures_detailed: true,
                ..failed
            },
            &[entry(1, 7, dl, 0.0, 0.0, 2, 5)]
        ),
        "1 7 deadlock 0 0 5 1\n"
    );
}

#[test]
fn log_file_names() {
    assert_eq!(
        log_file_path(None, 28216, 0).to_str(),
        Some("pgbench_log.28216")
    );
    assert_eq!(
        log_file_path(None, 28216, 1).to_str(),
        Some("pgbench_log.28216.1")
    );
    assert_eq!(
        log_file_path(Some("dir/mylog"), 7, 3).to_str(),
        Some("dir/mylog.7.3")
    );
}

#[test]
fn log_file_open_error_is_pgbench_text() {
    let err = TxnLogWriter::create(
        std::path::Path::new("/nonexistent-dir/pgbench_log.1"),
        LogOptions::default(),
    )
    .expect_err("cannot create");
    assert_eq!(
        err.to_string(),
        "could not open logfile \"/nonexistent-dir/pgbench_log.1\": No such file or directory"
    );
}

const T0: i64 = 1_795_305_697_000_000;

fn agg_log(opts: LogOptions, start: i64, entries: &[TxnLogEntry], end: i64) -> String {
    let mut w = AggregateLogWriter::new(Vec::new(), opts, 1, start);
    for e in entries {
        w.log(e).expect("log");
    }
    String::from_utf8(w.finish(end).expect("flush")).expect("utf8")
}

#[test]
fn aggregate_log_columns_and_partial_interval() {
    let all = LogOptions {
        throttled: true,
        latency_limit: true,
        max_tries: 3,
        failures_detailed: true,
    };
    let ok = TxnOutcome::Success;
    let entries = [
        entry(0, 1, ok, 1240.0, 35.0, 1, T0 + 100_000),
        entry(0, 2, ok, 13642.0, 9592.0, 2, T0 + 900_000),
        entry(0, 3, TxnOutcome::Skipped, 0.0, 0.0, 1, T0 + 950_000),
        entry(
            0,
            4,
            TxnOutcome::Failed(FailureKind::Serialization),
            0.0,
            0.0,
            3,
            T0 + 990_000,
        ),
        // Nothing in the second interval; the third is still open at the end.
        entry(0, 5, ok, 2000.0, 10.0, 1, T0 + 2_500_000),
    ];
    // Starts mid-second: the first interval begins at the whole second.
    let text = agg_log(all, T0 + 400_123, &entries, T0 + 2_999_999);
    assert_eq!(
        text,
        "1795305697 2 14882 187641764 1240 13642 9627 92007689 35 9592 1 2 3 1 0\n\
         1795305698 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    );
    // The same run without -R/-L/--max-tries/--failures-detailed zeroes those columns.
    let plain = LogOptions {
        max_tries: 1,
        ..Default::default()
    };
    let text = agg_log(plain, T0, &entries, T0 + 3_000_000);
    assert_eq!(
        text,
        "1795305697 2 14882 187641764 1240 13642 0 0 0 0 0 0 0 0 0\n\
         1795305698 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n\
         1795305699 1 2000 4000000 2000 2000 0 0 0 0 0 0 0 0 0\n"
    );
    // Observed pgbench line shape: 15 integer columns.
    for l in text.lines() {
        assert_eq!(l.split(' ').count(), 15);
        assert!(l.split(' ').all(|f| f.parse::<i64>().is_ok()));
    }
}

#[test]
fn json_document_snapshot() {
    let r = common::result();
    let mut out = Vec::new();
    write_json_to(&r, &mut out).expect("json");
    let mut v: serde_json::Value = serde_json::from_slice(&out).expect("parse");
    // Histogram payloads are long base64; keep them out of the snapshot but
    // check they decode back to the same counts.
    let h = v["totals"]["latency"]["histogram"].take();
    let bytes = base64_decode(h.as_str().expect("histogram string"));
    let mut de = hdrhistogram::serialization::Deserializer::new();
    let hist: hdrhistogram::Histogram<u64> = de.deserialize(&mut &bytes[..]).expect("decode");
    assert_eq!(hist.len(), r.totals.transactions);
    strip_histograms(&mut v);
    insta::assert_json_snapshot!(v);
}

fn strip_histograms(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            if let Some(h) = m.get_mut("histogram") {
                if h.is_string() {
                    *h = serde_json::Value::String("<base64>".into());
                }
            }
            m.values_mut().for_each(strip_histograms);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(strip_histograms),
        _ => {}
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD
        .decode(s)
        .expect("base64")
}

#[test]
fn hdr_interval_log_is_standard_and_round_trips() {
    let mut w = HdrIntervalLogWriter::new(Vec::new(), T0, "pgsurge test", HdrLogUnit::Micros)
        .expect("header");
    let mut h = LatencyHistogram::new(3);
    for v in [1000.0, 2000.0, 3000.0, 250_000.0] {
        h.record(v);
    }
    w.write_interval(&h, T0 + 1_000_000, 1_000_000, None)
        .expect("interval");
    h.reset();
    h.record(42.0);
    w.write_interval(&h, T0 + 2_000_000, 1_000_000, Some("script1"))
        .expect("interval");
    assert!(w.write_interval(&h, T0, 1, Some("bad tag,")).is_err());
    let out = String::from_utf8(w.finish().expect("flush")).expect("utf8");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "#pgsurge test");
    assert_eq!(lines[1], "#[Histogram log format version 1.3]");
    assert_eq!(
        lines[2],
        "#[StartTime: 1795305697.000 (seconds since epoch)]"
    );
    assert_eq!(
        lines[3],
        "#[BaseTime: 1795305697.000 (seconds since epoch)]"
    );
    assert_eq!(lines[4], "#[MaxValueDivisor: 1000.000]");
    assert_eq!(
        lines[5],
        "\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\",\"Interval_Compressed_Histogram\""
    );
    assert!(lines[6].starts_with("1.000,1.000,250.111,"), "{}", lines[6]);
    assert!(
        lines[7].starts_with("Tag=script1,2.000,1.000,0.042,"),
        "{}",
        lines[7]
    );
    assert_eq!(lines.len(), 8);
    // The crate's own reader accepts the log and gives back the values.
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let mut counts = Vec::new();
    for e in IntervalLogIterator::new(out.as_bytes()) {
        if let LogEntry::Interval(ih) = e.expect("parse") {
            let bytes = base64_decode(ih.encoded_histogram());
            let mut de = hdrhistogram::serialization::Deserializer::new();
            let hist: hdrhistogram::Histogram<u64> =
                de.deserialize(&mut &bytes[..]).expect("decode");
            counts.push(hist.len());
        }
    }
    assert_eq!(counts, vec![4, 1]);
}

/// The histograms of an interval log, in order.
fn log_histograms(log: &str) -> Vec<hdrhistogram::Histogram<u64>> {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let mut out = Vec::new();
    for e in IntervalLogIterator::new(log.as_bytes()) {
        if let LogEntry::Interval(ih) = e.expect("parse") {
            let bytes = base64_decode(ih.encoded_histogram());
            let mut de = hdrhistogram::serialization::Deserializer::new();
            out.push(de.deserialize(&mut &bytes[..]).expect("decode"));
        }
    }
    out
}

#[test]
fn hdr_interval_log_in_nanoseconds_scales_every_value() {
    let mut h = LatencyHistogram::new(3);
    for v in [17.0, 1000.0, 2000.0, 3000.0, 250_000.0] {
        h.record(v);
    }
    let write = |unit: HdrLogUnit| {
        let mut w =
            HdrIntervalLogWriter::new(Vec::new(), T0, unit.comment(), unit).expect("header");
        w.write_interval(&h, T0 + 1_000_000, 1_000_000, None)
            .expect("interval");
        String::from_utf8(w.finish().expect("flush")).expect("utf8")
    };
    let (us, ns) = (write(HdrLogUnit::Micros), write(HdrLogUnit::Nanos));
    assert!(
        us.starts_with("#pgsurge bench: latency values in microseconds (us)"),
        "{us}"
    );
    assert!(
        ns.starts_with("#pgsurge bench: latency values in nanoseconds (ns)"),
        "{ns}"
    );
    assert!(ns.contains("#[MaxValueDivisor: 1000000.000]"), "{ns}");
    // The max column is ms in both.
    let max_col = |log: &str| -> f64 {
        let line = log.lines().last().unwrap();
        line.split(',').nth(2).unwrap().parse().unwrap()
    };
    // Equal within the histograms' precision.
    let (mu, mn) = (max_col(&us), max_col(&ns));
    assert!((mu - mn).abs() <= mu * 0.002, "max {mu} ms vs {mn} ms");
    let (hu, hn) = (&log_histograms(&us)[0], &log_histograms(&ns)[0]);
    assert_eq!(hu.len(), hn.len());
    for q in [0.0, 0.25, 0.5, 0.75, 0.99, 1.0] {
        let (a, b) = (hu.value_at_quantile(q) * 1000, hn.value_at_quantile(q));
        // Same value within the histograms' 3 significant digits.
        assert!(
            (a as f64 - b as f64).abs() <= a as f64 * 0.002,
            "q {q}: {a} ns expected, got {b}"
        );
    }
    assert_eq!(HdrLogUnit::parse("ns"), Some(HdrLogUnit::Nanos));
    assert_eq!(HdrLogUnit::parse("ms"), None);
}
