//! The distributed-run additions to the JSON document: the `generator`
//! section and per-interval histograms validate against the committed schema and
//! round-trip; documents without them stay valid.

use crate::common;

use pgsurge_results::{
    write_json_to, GeneratorInfo, LatencyHistogram, MergedGenerator, RunResult, RUN_RESULT_SCHEMA,
};

fn validate(r: &RunResult) -> (serde_json::Value, Vec<String>) {
    let mut out = Vec::new();
    write_json_to(r, &mut out).expect("json");
    let doc: serde_json::Value = serde_json::from_slice(&out).expect("valid JSON");
    let errors = pgsurge_testkit::schema::violations(RUN_RESULT_SCHEMA, &doc);
    (doc, errors)
}

#[test]
fn generator_section_and_interval_histograms_validate_and_round_trip() {
    let mut r = common::result();
    let (doc, errors) = validate(&r);
    assert!(errors.is_empty(), "{errors:?}");
    assert!(
        doc.get("generator").is_none(),
        "absent unless a generator option was given"
    );

    let mut h = LatencyHistogram::default();
    for v in [900.0, 1000.0, 25_000.0] {
        h.record(v);
    }
    r.intervals[0].histogram = pgsurge_results::result::encode_histogram(&h);
    r.generator = Some(GeneratorInfo {
        name: "gen-1".into(),
        host: "node-a".into(),
        index: Some(1),
        count: Some(4),
        intended_start_unix_us: Some(1_795_473_000_000_000),
        actual_start_unix_us: 1_795_473_000_000_210,
        end_unix_us: 1_795_473_060_000_500,
        clock_origin_unix_us: 1_795_472_990_000_000,
    });
    let (doc, errors) = validate(&r);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(doc["generator"]["index"], 1);
    let back: RunResult = serde_json::from_value(doc.clone()).expect("reads back");
    assert_eq!(back.generator, r.generator);
    assert_eq!(back.intervals[0].histogram, r.intervals[0].histogram);

    // A merged document's list of generators.
    let mut merged = r.clone();
    merged.generator = None;
    merged.generators = vec![MergedGenerator {
        name: "gen-1".into(),
        host: Some("node-a".into()),
        index: Some(1),
        count: Some(4),
        clients: 8,
        transactions: 1234,
        tps: 20.5,
        actual_start_unix_us: 1_795_473_000_000_210,
        end_unix_us: 1_795_473_060_000_500,
    }];
    let (mdoc, errors) = validate(&merged);
    assert!(errors.is_empty(), "{errors:?}");
    assert_eq!(mdoc["generators"][0]["transactions"], 1234);
    let back: RunResult = serde_json::from_value(mdoc).expect("reads back");
    assert_eq!(back.generators, merged.generators);

    // The schema is strict about the new section too.
    let mut broken = doc;
    broken["generator"]["index"] = serde_json::json!("one");
    assert!(!pgsurge_testkit::schema::violations(RUN_RESULT_SCHEMA, &broken).is_empty());
}
