//! `pgsurge compare` (text and JSON) and the HTML report render one comparison model:
//! on a store made by a real short campaign (two targets and the first one's A/A twin ×
//! 2 client counts × 3 repeats of 1-second tests against the shared throwaway test
//! server), every cell's direction, change, interval and verdict, the title (`A → B`,
//! A = the campaign file's first target), the summary and the A/A noise floor are the
//! same in all three outputs. The JSON is validated against the committed schema.

use crate::common;

use pgsurge_campaign::{run_campaign, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_server::testing::TestServer;
use pgsurge_store::Store;

#[test]
fn compare_text_json_and_report_agree_on_a_real_campaign() {
    let srv = TestServer::shared();
    let db_a = srv.create_database("agree_a");
    let db_b = srv.create_database("agree_b");
    // Target order in the file: "zeta" first, so a report that sorted targets by name
    // (the old bug) would put "alpha" first and fail the title check.
    let text = format!(
        r#"
[campaign]
name = "agree"
aa_check = true
[[target]]
name = "zeta"
conninfo = "{}"
[[target]]
name = "alpha"
conninfo = "{}"
[matrix]
scales = [1]
clients = [1, 2]
scripts = ["select-only"]
repeats = 3
[run]
duration = 1
[sampling]
interval = 0.5
"#,
        srv.conninfo(&db_a),
        srv.conninfo(&db_b)
    );
    let dir = pgsurge_testkit::scratch_dir("agreement");
    let campaign = Campaign::parse(&text, "agree.toml", dir.path()).unwrap();
    let path = dir.path().join("r.db");
    let mut store = Store::open(path.to_str().unwrap()).unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign(&campaign, &mut store, &opts, &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed), (18, 0), "{out:?}");
    drop(store);
    let checked = common::assert_compare_and_report_agree(&path, "agree · zeta → agree · alpha");
    assert_eq!(checked, 2, "one row per client count");
    // Along clients: one target's two client counts against each other, and the two
    // targets over both client counts pooled.
    let compare_json = |a: &str, b: &str, along: Vec<pgsurge_report::AlongArg>| {
        pgsurge_report::run_compare(&pgsurge_report::CompareArgs {
            a: Some(a.into()),
            b: Some(b.into()),
            store: Some(path.to_str().unwrap().into()),
            aa: None,
            along,
            format: pgsurge_report::Format::Json,
            fail_on: None,
            margin: None,
            explain: false,
            profile_diff: None,
        })
        .unwrap()
    };
    let c = compare_json(
        "set:agree/target:zeta/clients:1",
        "set:agree/target:zeta/clients:2",
        vec![],
    );
    let doc = serde_json::to_value(&c).unwrap();
    assert_eq!(doc["along"], serde_json::json!(["clients"]), "{doc}");
    assert_eq!(doc["cells"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["cells"][0]["key"]["clients"], -1, "{doc}");
    assert_eq!(doc["cells"][0]["a_n"], 3, "{doc}");
    assert!(
        !doc["cell_dimensions"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("clients")),
        "{doc}"
    );
    assert!(
        doc["cells"][0]["label"].as_str().unwrap().contains("c=*"),
        "{doc}"
    );
    let c = compare_json(
        "set:agree/target:zeta",
        "set:agree/target:alpha",
        vec![pgsurge_report::AlongArg::Clients],
    );
    let doc = serde_json::to_value(&c).unwrap();
    assert_eq!(doc["cells"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(
        (
            doc["cells"][0]["a_n"].as_u64(),
            doc["cells"][0]["b_n"].as_u64()
        ),
        (Some(6), Some(6)),
        "{doc}"
    );
    pgsurge_testkit::schema::assert_valid(pgsurge_report::COMPARE_SCHEMA, &doc);
    // Keep the report of this real campaign as an artifact (to look at, screenshot).
    let artifact = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("agreement-report");
    let mut store = Store::open(path.to_str().unwrap()).unwrap();
    pgsurge_report::write_report(&mut store, &Default::default(), &artifact).unwrap();
}
