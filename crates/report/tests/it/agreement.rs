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
    // Keep the report of this real campaign as an artifact (to look at, screenshot).
    let artifact = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("agreement-report");
    let mut store = Store::open(path.to_str().unwrap()).unwrap();
    pgsurge_report::write_report(&mut store, &Default::default(), &artifact).unwrap();
}
