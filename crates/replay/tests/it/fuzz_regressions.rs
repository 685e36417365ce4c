//! The inputs the fuzz targets over logs found (`fuzz/regressions/replay_log/`), read
//! the way `pgsurge replay --check` reads a log: each one is a clear error with its
//! file and line, and with `--skip-unreadable` a counted skip. An input's first byte
//! is the fuzz target's choice of file name and prefix; the rest is the log.

use std::path::{Path, PathBuf};

use pgsurge_replay::check::check;
use pgsurge_replay::report::ReplayReport;
use pgsurge_replay::ReplaySpec;

/// The log of finding `name`, written as `postgresql.log` in `dir`.
fn finding(name: &str, dir: &Path) -> PathBuf {
    finding_as(name, dir, "postgresql.log")
}

/// The log of finding `name`, written as `file` in `dir`.
fn finding_as(name: &str, dir: &Path, file: &str) -> PathBuf {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../fuzz/regressions/replay_log")
        .join(name);
    let input = std::fs::read(&from).unwrap_or_else(|e| panic!("{}: {e}", from.display()));
    let path = dir.join(file);
    std::fs::write(&path, &input[1..]).unwrap();
    path
}

/// The error of reading `path` with `prefix`, and the report of reading it skipping
/// unreadable lines.
fn read(path: &Path, prefix: &str) -> (String, ReplayReport) {
    let mut spec = ReplaySpec::new(vec![path.to_path_buf()]);
    spec.log_line_prefix = prefix.into();
    let err = match check(&spec) {
        Ok(r) => panic!("read without an error: {:?}", r.read),
        Err(e) => e,
    };
    spec.skip_unreadable = true;
    let skipped = check(&spec).unwrap_or_else(|e| panic!("skipping still failed: {e}"));
    (err, skipped)
}

#[test]
fn epoch_seconds_past_year_9999_are_an_unreadable_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = finding("epoch-seconds-overflow", dir.path());
    let (err, skipped) = read(&path, "%n|%c|%e|%u|%d|");
    let at = format!("{}:1: ", path.display());
    assert!(
        err.starts_with(&at) && err.contains("log_line_prefix"),
        "not a clear error: {err}"
    );
    assert_eq!(skipped.read.skipped, 1);
    assert_eq!(skipped.read.statements, 0);
}

#[test]
fn a_duration_out_of_range_is_an_unreadable_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = finding("negative-duration", dir.path());
    let (err, skipped) = read(&path, "%m|%u|%d|%c|");
    let at = format!("{}:2: ", path.display());
    assert!(
        err.starts_with(&at) && err.contains("duration"),
        "not a clear error: {err}"
    );
    assert_eq!(skipped.read.skipped, 1);
    assert_eq!(
        (skipped.read.sessions, skipped.read.statements),
        (1, 0),
        "{:?}",
        skipped.read
    );
}

#[test]
fn a_statement_holding_a_nul_byte_is_an_unreadable_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = finding("nul-in-statement", dir.path());
    let (err, skipped) = read(&path, "%m|%u|%d|%c|");
    let at = format!("{}:2: ", path.display());
    assert!(
        err.starts_with(&at) && err.contains("NUL byte"),
        "not a clear error: {err}"
    );
    assert_eq!(skipped.read.skipped, 1);
    assert_eq!(skipped.read.statements, 0, "{:?}", skipped.read);
}

#[test]
fn a_report_reads_back_from_its_json_exactly() {
    // A pgbench log whose means (0.09933333333333333 ms…) need the exact float reader.
    let dir = tempfile::tempdir().unwrap();
    let path = finding("report-means-through-json", dir.path());
    let mut spec = ReplaySpec::new(vec![path]);
    spec.skip_unreadable = true;
    let report = check(&spec).unwrap();
    assert!(report.read.durations > 0, "{:?}", report.read);
    let back: ReplayReport = serde_json::from_str(&report.to_json()).unwrap();
    let means = |r: &ReplayReport| -> Vec<u64> {
        r.fingerprints
            .iter()
            .filter_map(|f| f.logged.latency.as_ref())
            .map(|l| l.mean_ms.to_bits())
            .collect()
    };
    assert_eq!(means(&back), means(&report), "a mean changed through JSON");
    assert_eq!(back, report, "the report changed through its JSON");
}

#[test]
fn a_csvlog_record_cut_inside_quotes_is_an_unreadable_record() {
    // Record 2 ends inside its quoted message; record 3 was read into it and sent as
    // part of a statement.
    let dir = tempfile::tempdir().unwrap();
    let path = finding_as("csv-record-cut-inside-quotes", dir.path(), "postgresql.csv");
    let (err, skipped) = read(&path, "%m|%u|%d|%c|");
    let at = format!("{}:2: ", path.display());
    assert!(
        err.starts_with(&at) && err.contains("start of another record"),
        "not a clear error: {err}"
    );
    assert_eq!(skipped.read.skipped, 1);
    assert_eq!(skipped.read.statements, 5, "{:?}", skipped.read);
    assert!(
        skipped
            .fingerprints
            .iter()
            .all(|f| !f.statement.contains("UTC")),
        "a record sent inside a statement: {:?}",
        skipped.fingerprints
    );
}
