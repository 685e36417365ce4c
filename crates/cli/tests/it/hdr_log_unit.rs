//! `--hdr-log-unit=ns` end to end: the log of a real run names nanoseconds in its first
//! line and its values are nanoseconds (a select over a Unix socket takes more than
//! 1 µs, so no recorded value is below 1000; in µs they would be tens).

use std::process::Command;

use pgsurge_server::testing::TestServer;

#[test]
fn a_nanosecond_hdr_log_from_a_real_run() {
    let srv = TestServer::shared();
    let db = srv.create_database("hdr_ns");
    let init = srv
        .apply_env(&mut Command::new(env!("CARGO_BIN_EXE_pgsurge")))
        .args(["bench", "-i", "-s", "1", "-q", &db])
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    let dir = pgsurge_testkit::scratch_dir("hdr-log-unit");
    let log = dir.path().join("run.hlog");
    let out = srv
        .apply_env(&mut Command::new(env!("CARGO_BIN_EXE_pgsurge")))
        .args(["bench", "-n", "-S", "-c", "2", "-T", "2"])
        .arg(format!("--hdr-log={}", log.display()))
        .arg("--hdr-log-unit=ns")
        .arg(&db)
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(
        text.starts_with("#pgsurge bench: latency values in nanoseconds (ns)"),
        "{text}"
    );
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    let mut intervals = 0;
    for e in IntervalLogIterator::new(text.as_bytes()) {
        if let LogEntry::Interval(ih) = e.expect("parse") {
            use base64::Engine as _;
            let bytes = base64::engine::general_purpose::STANDARD
                .decode(ih.encoded_histogram())
                .unwrap();
            let h: hdrhistogram::Histogram<u64> = hdrhistogram::serialization::Deserializer::new()
                .deserialize(&mut &bytes[..])
                .unwrap();
            if !h.is_empty() {
                intervals += 1;
                assert!(h.min() >= 1000, "a value below 1 µs in ns: {}", h.min());
            }
        }
    }
    assert!(intervals >= 1, "{text}");
}
