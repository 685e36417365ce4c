//! pgsurge's opt-in measurements on a real run: `--percentiles` adds lines to the report
//! (and only then), `--json` writes a document that validates against the committed
//! schema and carries the per-second series even without `-P`, and `--hdr-log` writes a
//! standard HdrHistogram interval log: an untagged overall series plus one tagged series
//! per script (`Tag=script0`, …) that sum to it.

use pgsurge_server::testing::TestServer;
use std::process::Command;

fn bench(srv: &TestServer, args: &[&str]) -> (String, String, i32) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.arg("bench").args(args);
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    let out = c.output().expect("run pgsurge bench");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

#[test]
fn percentiles_json_and_hdr_log_from_a_real_run() {
    let srv = TestServer::shared();
    let db = srv.create_database("extensions");
    let (_, err, code) = bench(srv, &["-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");
    let dir = pgsurge_testkit::scratch_dir("bench-extensions");
    let json = dir.path().join("run.json");
    let hlog = dir.path().join("run.hlog");

    // Without extensions: no percentile line.
    let (plain, err, code) = bench(srv, &["-S", "-c", "2", "-t", "50", &db]);
    assert_eq!(code, 0, "{err}");
    assert!(!plain.contains("latency p50"), "{plain}");

    let json_arg = format!("--json={}", json.display());
    let hlog_arg = format!("--hdr-log={}", hlog.display());
    let (out, err, code) = bench(
        srv,
        &[
            "-S",
            "-c",
            "2",
            "-j",
            "2",
            "-T",
            "3",
            "--percentiles=50,99",
            &json_arg,
            &hlog_arg,
            &db,
        ],
    );
    assert_eq!(code, 0, "{err}");
    for p in ["50", "99"] {
        assert!(
            out.lines()
                .any(|l| l.starts_with(&format!("latency p{p} = "))),
            "no {p} percentile line in:\n{out}"
        );
    }
    assert!(
        !err.contains("progress:"),
        "no progress lines without -P:\n{err}"
    );

    let doc: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&json).expect("json file")).expect("valid JSON");
    pgsurge_testkit::schema::assert_valid(pgsurge_results::RUN_RESULT_SCHEMA, &doc);
    let processed: u64 = out
        .lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .and_then(|v| v.split('/').next())
        .and_then(|v| v.trim().parse().ok())
        .expect("processed line");
    assert_eq!(
        doc["totals"]["transactions"].as_u64(),
        Some(processed),
        "JSON count differs from the report"
    );
    let intervals = doc["intervals"].as_array().expect("intervals");
    assert!(
        intervals.len() >= 2,
        "expected a per-second series with --json alone, got {}",
        intervals.len()
    );

    let log = std::fs::read_to_string(&hlog).expect("hdr log");
    assert!(
        log.lines().any(|l| l.starts_with("#[StartTime:")),
        "no StartTime header:\n{log}"
    );
    assert!(
        log.lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('"') && l.contains(','))
            .count()
            >= 2,
        "fewer than two interval lines:\n{log}"
    );
}

/// Decodes every interval of an HDR log with the `hdrhistogram` crate's own reader:
/// (tag, start in ms, histogram) in file order.
fn read_hdr_log(text: &str) -> Vec<(Option<String>, u128, hdrhistogram::Histogram<u64>)> {
    use base64::Engine as _;
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let mut out = Vec::new();
    for e in IntervalLogIterator::new(text.as_bytes()) {
        if let LogEntry::Interval(ih) = e.expect("the crate's reader parses every line") {
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(ih.encoded_histogram())
                .expect("base64");
            let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
                .deserialize(&mut &bytes[..])
                .expect("V2 histogram");
            out.push((
                ih.tag().map(|t| t.as_str().to_string()),
                ih.start_timestamp().as_millis(),
                h,
            ));
        }
    }
    out
}

#[test]
fn hdr_log_has_per_script_series_summing_to_the_overall_one() {
    let srv = TestServer::shared();
    let db = srv.create_database("hdr_tags");
    let (_, err, code) = bench(srv, &["-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");
    let dir = pgsurge_testkit::scratch_dir("bench-extensions");
    let hlog = dir.path().join("run.hlog");
    let hlog_arg = format!("--hdr-log={}", hlog.display());
    // Two scripts of very different latencies, so a mix-up between series shows.
    let (out, err, code) = bench(
        srv,
        &[
            "-b",
            "select-only@3",
            "-b",
            "simple-update@1",
            "-c",
            "3",
            "-j",
            "2",
            "-T",
            "3",
            &hlog_arg,
            &db,
        ],
    );
    assert_eq!(code, 0, "{err}\n{out}");
    let log = std::fs::read_to_string(&hlog).expect("hdr log");
    let entries = read_hdr_log(&log);
    let overall: Vec<_> = entries.iter().filter(|e| e.0.is_none()).collect();
    assert!(overall.len() >= 2, "fewer than two intervals:\n{log}");
    let mut seen = [0u64; 2];
    for (_, start, all) in &overall {
        let parts: Vec<_> = entries
            .iter()
            .filter(|e| e.0.is_some() && e.1 == *start)
            .collect();
        let tags: Vec<_> = parts.iter().filter_map(|e| e.0.as_deref()).collect();
        assert_eq!(tags, ["script0", "script1"], "at {start} ms:\n{log}");
        // Same values, bucket by bucket.
        let mut sum = hdrhistogram::Histogram::<u64>::new_from(all);
        for (i, p) in parts.iter().enumerate() {
            sum.add(&p.2).expect("same layout");
            seen[i] += p.2.len();
        }
        assert_eq!(sum.len(), all.len(), "at {start} ms");
        for v in all.iter_recorded() {
            assert_eq!(
                sum.count_at(v.value_iterated_to()),
                v.count_at_value(),
                "bucket {} at {start} ms",
                v.value_iterated_to()
            );
        }
        assert_eq!(sum.max(), all.max());
    }
    assert!(seen[0] > 0 && seen[1] > 0, "a script never ran: {seen:?}");
}
