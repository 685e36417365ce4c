//! A test whose connections are lost while the server stays up is waited out and run
//! again: the failure's class (`pgsurge_wire::ErrorClass::Connection`, carried up
//! through the engine) tells an outage, since a probe of the server finds it answering.

use std::time::{Duration, Instant};

use pgsurge_campaign::{run_campaign, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_server::testing::TestServer;
use pgsurge_store::{RunFilter, Store};

const SLEEPING: &str = "SELECT count(*) FROM pg_stat_activity \
                        WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep%'";

#[test]
fn a_test_whose_backends_are_terminated_is_run_again_and_stored_ok() {
    let srv = TestServer::shared();
    let db = srv.create_database("outage_class");
    let dir = pgsurge_testkit::scratch_dir("campaign-outage");
    std::fs::write(dir.path().join("sleep.sql"), "SELECT pg_sleep(0.01);\n").unwrap();
    let text = format!(
        r#"
[campaign]
name = "outage-class"
shuffle = false
[[target]]
name = "fx"
conninfo = "{}"
[matrix]
scales = [1]
clients = [2]
scripts = [{{ file = "sleep.sql" }}]
[run]
duration = 2
outage_wait = "60s"
[hygiene]
vacuum = false
checkpoint = false
"#,
        srv.conninfo(&db)
    );
    let campaign = Campaign::parse(&text, "outage.toml", dir.path()).unwrap();
    let mut store = Store::open(":memory:").unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let (outcome, terminated) = std::thread::scope(|s| {
        let running = s.spawn(|| run_campaign(&campaign, &mut store, &opts, &StopFlag::new()));
        let deadline = Instant::now() + Duration::from_secs(300);
        while srv.psql(&db, SLEEPING).trim() != "2" {
            assert!(Instant::now() < deadline, "the test's clients never ran");
            std::thread::sleep(Duration::from_millis(50));
        }
        // The benchmark's sessions only; the server itself stays up.
        let terminated = srv.psql(
            &db,
            "SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM pg_stat_activity \
             WHERE datname = current_database() AND query LIKE 'SELECT pg_sleep%'",
        );
        (running.join().expect("the campaign returns"), terminated)
    });
    assert_ne!(terminated.trim(), "0", "sessions were terminated");
    let outcome = outcome.expect("the campaign ends");
    assert_eq!((outcome.ok, outcome.failed), (1, 0), "{outcome:?}");
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 1, "one stored test");
    assert_eq!(runs[0].record.status, "ok", "{:?}", runs[0].record.error);
}
