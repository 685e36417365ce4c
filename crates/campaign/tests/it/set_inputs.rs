//! A set is one set of inputs: a script file edited between two runs of the same
//! campaign file starts a new set naming the script; the file as it was resumes the
//! first set; a script added to the matrix extends it. Campaigns run into one set (as
//! bisect runs one per commit) plan every test of the set.

use std::path::Path;

use pgsurge_campaign::{run_campaign, Campaign, RunOptions, SetIdentity};
use pgsurge_engine::StopFlag;
use pgsurge_server::testing::TestServer;
use pgsurge_store::Store;

fn campaign(dir: &Path, conninfo: &str, target: &str, scripts: &str) -> Campaign {
    let text = format!(
        "[campaign]\nname = \"inputs\"\n[[target]]\nname = \"{target}\"\nconninfo = \"{conninfo}\"\n\
         [matrix]\nscales = [1]\nclients = [1]\nscripts = [{scripts}]\n\
         [run]\ntransactions = 5\n[hygiene]\nvacuum = false\ncheckpoint = false\n"
    );
    Campaign::parse(&text, "inputs.toml", dir).unwrap()
}

fn quiet() -> RunOptions {
    RunOptions {
        quiet: true,
        ..Default::default()
    }
}

#[test]
fn an_edited_script_starts_a_new_set_and_says_which_input_changed() {
    let srv = TestServer::shared();
    let db = srv.create_database("set_inputs");
    let dir = pgsurge_testkit::scratch_dir("set-inputs");
    let q = dir.path().join("q.sql");
    std::fs::write(&q, "SELECT 1;\n").unwrap();
    let store_path = dir.path().join("r.db");
    let mut store = Store::open(store_path.to_str().unwrap()).unwrap();
    let conninfo = srv.conninfo(&db);
    let one = campaign(dir.path(), &conninfo, "t", "{ file = \"q.sql\" }");
    let stop = StopFlag::new();

    let first = run_campaign(&one, &mut store, &quiet(), &stop).unwrap();
    assert_eq!((first.ok, first.failed), (1, 0));
    assert!(first.notices.is_empty(), "{:?}", first.notices);

    // The script the file names is edited; the file itself is not.
    std::fs::write(&q, "SELECT pg_sleep(0.001);\n").unwrap();
    let edited = run_campaign(&one, &mut store, &quiet(), &stop).unwrap();
    assert_ne!(
        edited.set_id, first.set_id,
        "tests of the edited script were pooled with the old ones"
    );
    assert_eq!(edited.ok, 1, "the edited script was not measured");
    assert_eq!(edited.notices.len(), 1, "{:?}", edited.notices);
    let note = &edited.notices[0];
    assert!(
        note.starts_with(&format!(
            "an input of the campaign changed since set {} was run: script q.sql (",
            first.set_id
        )) && note.contains(&format!("a new set {} is started", edited.set_id)),
        "{note}"
    );

    // The script as it was: the first set, complete already.
    std::fs::write(&q, "SELECT 1;\n").unwrap();
    let again = run_campaign(&one, &mut store, &quiet(), &stop).unwrap();
    assert_eq!(again.set_id, first.set_id);
    assert_eq!((again.ok, again.already_stored), (0, 1));
    assert!(again.notices.is_empty(), "{:?}", again.notices);

    // A script added to the matrix extends the set.
    std::fs::write(dir.path().join("r.sql"), "SELECT 2;\n").unwrap();
    let two = campaign(
        dir.path(),
        &conninfo,
        "t",
        "{ file = \"q.sql\" }, { file = \"r.sql\" }",
    );
    let extended = run_campaign(&two, &mut store, &quiet(), &stop).unwrap();
    assert_eq!(extended.set_id, first.set_id);
    assert_eq!((extended.ok, extended.already_stored), (1, 1));
}

#[test]
fn campaigns_run_into_one_set_plan_every_test_of_the_set() {
    let srv = TestServer::shared();
    let db = srv.create_database("set_inputs_into");
    let dir = pgsurge_testkit::scratch_dir("set-inputs-into");
    let store_path = dir.path().join("r.db");
    let mut store = Store::open(store_path.to_str().unwrap()).unwrap();
    let conninfo = srv.conninfo(&db);
    let into = SetIdentity {
        name: "one set".into(),
        identity: "several campaigns".into(),
    };
    let opts = RunOptions {
        quiet: true,
        kind: Some("bisect".into()),
        into_set: Some(into),
        ..Default::default()
    };
    let stop = StopFlag::new();
    let mut set_id = None;
    for target in ["pg @ 1111", "pg @ 2222", "pg @ 3333"] {
        let c = campaign(dir.path(), &conninfo, target, "\"select-only\"");
        let out = run_campaign(&c, &mut store, &opts, &stop).unwrap();
        assert_eq!(out.ok, 1);
        assert_eq!(*set_id.get_or_insert(out.set_id), out.set_id);
    }
    let set = store
        .list_sets()
        .unwrap()
        .into_iter()
        .find(|s| Some(s.id) == set_id)
        .unwrap();
    assert_eq!(
        (
            set.record.status.as_str(),
            set.runs_ok,
            set.record.planned_tests
        ),
        ("complete", 3, Some(3)),
        "the set reads complete {}/{:?}",
        set.runs_ok,
        set.record.planned_tests
    );
}
