//! The JSON document validates against the committed schema, and round-trips.

use crate::common;

use pgsurge_results::{
    write_json, write_json_to, write_pgbench_report, ReportOptions, RunResult, ThreadStats,
    RUN_RESULT_SCHEMA, SCHEMA_VERSION,
};

/// The committed schema, whose version is the document's.
fn schema() -> &'static str {
    let schema: serde_json::Value =
        serde_json::from_str(RUN_RESULT_SCHEMA).expect("schema is JSON");
    assert_eq!(
        schema["properties"]["schema_version"]["const"],
        SCHEMA_VERSION
    );
    RUN_RESULT_SCHEMA
}

fn to_value(r: &RunResult) -> serde_json::Value {
    let mut out = Vec::new();
    write_json_to(r, &mut out).expect("json");
    serde_json::from_slice(&out).expect("valid JSON")
}

fn assert_valid(v: &serde_json::Value) {
    pgsurge_testkit::schema::assert_valid(schema(), v);
}

#[test]
fn generated_document_validates() {
    assert_valid(&to_value(&common::result()));
}

#[test]
fn empty_and_degenerate_runs_validate() {
    // Nothing ran: no scripts' latencies, NaN tps (0 s), no intervals.
    let scripts = common::scripts();
    let stats = ThreadStats::new(&common::config(&scripts, false));
    let mut info = common::info(scripts, common::options());
    info.bench_duration_us = 0;
    info.aborted = true;
    let r = RunResult::build(info, &stats, vec![]);
    assert!(r.tps.is_nan());
    let v = to_value(&r);
    assert!(v["tps"].is_null());
    assert_valid(&v);
    // And it reads back (null → NaN).
    let back: RunResult = serde_json::from_value(v).expect("deserialize");
    assert!(back.tps.is_nan());
}

#[test]
fn schema_rejects_broken_documents() {
    let v = to_value(&common::result());
    let invalid =
        |doc: &serde_json::Value| !pgsurge_testkit::schema::violations(schema(), doc).is_empty();
    let mut missing = v.clone();
    missing.as_object_mut().expect("object").remove("totals");
    assert!(invalid(&missing));
    let mut extra = v.clone();
    extra["options"]["unknown_option"] = serde_json::json!(1);
    assert!(invalid(&extra));
    let mut wrong = v;
    wrong["options"]["query_mode"] = serde_json::json!("turbo");
    assert!(invalid(&wrong));
}

#[test]
fn document_round_trips_to_the_same_report() {
    let r = common::result();
    let dir = pgsurge_testkit::scratch_dir("results-json");
    let path = dir.join("run.json");
    write_json(&r, &path).expect("write file");
    let back: RunResult =
        serde_json::from_slice(&std::fs::read(&path).expect("read")).expect("parse");
    assert_eq!(back, r);
    let render = |r: &RunResult| {
        let mut out = Vec::new();
        write_pgbench_report(r, &ReportOptions::from_result(r), &mut out).expect("render");
        out
    };
    assert_eq!(render(&back), render(&r));
}

#[test]
fn write_json_reports_the_file_on_error() {
    let err = write_json(
        &common::result(),
        std::path::Path::new("/nonexistent-dir/run.json"),
    )
    .expect_err("cannot create");
    assert_eq!(
        err.to_string(),
        "could not write \"/nonexistent-dir/run.json\": No such file or directory"
    );
}
