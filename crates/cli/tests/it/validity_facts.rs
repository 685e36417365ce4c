//! The validity facts a campaign stores with each test, from a real run: a script whose
//! transaction sleeps 50 ms on the server cannot keep one client at `-R 100` (it does
//! 20 a second at most), so its schedule lag grows over the whole run and the test
//! stores `lag_growing` with a warning; the same script at `-R 5` keeps up and stores
//! none.

use std::process::Command;

use pgsurge_server::testing::TestServer;
use pgsurge_store::{facts, RunFilter, Store};

#[test]
fn a_server_that_falls_behind_the_rate_is_stored_as_a_growing_lag() {
    let srv = TestServer::shared();
    let db = srv.create_database("validity_facts");
    let dir = pgsurge_testkit::scratch_dir("validity-facts");
    std::fs::write(dir.path().join("sleep.sql"), "SELECT pg_sleep(0.05);\n").unwrap();
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        format!(
            "[campaign]\nname = \"lag\"\n[[target]]\nname = \"pg\"\nconninfo = \"{}\"\n\
             [matrix]\nscales = [1]\nclients = [1]\nrates = [5, 100]\n\
             scripts = [{{ file = \"sleep.sql\" }}]\n[run]\nduration = 10\n",
            srv.conninfo(&db)
        ),
    )
    .unwrap();
    let store_path = dir.path().join("r.db").display().to_string();
    let out = srv
        .apply_env(&mut Command::new(env!("CARGO_BIN_EXE_pgsurge")))
        .args([
            "campaign",
            "run",
            &file.display().to_string(),
            "--store",
            &store_path,
        ])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let mut store = Store::open(&store_path).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 2);
    for r in runs {
        let loaded = store.load_run(r.id).unwrap();
        let growing = loaded
            .facts
            .iter()
            .any(|f| f.name == facts::LAG_GROWING && f.value.as_deref() == Some("true"));
        let behind = r.record.test_key.contains("/r100/");
        assert_eq!(growing, behind, "{}: {:?}", r.record.test_key, loaded.facts);
        // Every test also says which server start it ran in.
        assert!(
            loaded.facts.iter().any(|f| f.name == facts::SERVER_START),
            "{:?}",
            loaded.facts
        );
    }
    assert!(err.contains("the server fell behind the rate"), "{err}");
}
