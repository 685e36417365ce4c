//! `pgsurge campaign watch`: a real campaign runs in one process, `campaign watch` on
//! its store in another serves the live page from what the store receives; the test
//! reads the page and its state over HTTP during the run, as a browser would, and sees
//! the running test's seconds arrive, then the set end. The store ends as a campaign
//! leaves it without a watcher: each test's intervals in its run, none kept twice. A
//! file that is not a results store, or a store SQLite could read only as a snapshot,
//! is refused with a clear error.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pgsurge_server::testing::TestServer;
use pgsurge_store::Store;
use pgsurge_testkit::live_page::{assert_percentiles_rise, get, served_url, Killed};

use crate::campaigns::{pgsurge, wait_while_running, Campaign};

const SECRET: &str = "campaign-watch-secret-pw";

#[test]
fn a_campaign_in_another_process_is_watched_from_its_store() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_watch");
    let dir = pgsurge_testkit::scratch_dir("campaign-watch");
    // The server trusts local connections: the password is never needed, only kept
    // out of what the page shows.
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "watched"
shuffle = false
[[target]]
name = "existing"
conninfo = "{} password={SECRET}"
[matrix]
scales = [1]
clients = [1, 2]
scripts = ["select-only"]
[run]
duration = 5
[hygiene]
vacuum = false
checkpoint = false
"#,
            srv.conninfo(&db)
        ),
    );
    let store = c.store.clone();
    let mut campaign = Killed(
        c.command(&["--quiet"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    // Once the campaign has made its store, one that keeps live events.
    let limit = Duration::from_secs(300);
    wait_while_running(&mut campaign.0, "its store was made", limit, || {
        Store::open_read_only(&store).is_ok_and(|s| s.keeps_live_events())
    });
    let mut watch = Killed(
        pgsurge()
            .args(["campaign", "watch", &store, "--listen", "127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (url, _) = served_url(&mut watch.0);
    let page = get(&url).expect("the page is served");
    assert!(page.contains("/state.json") && page.contains("<script>"));

    // What a browser sees: the state every 200 ms, until the set has ended.
    let mut states: Vec<serde_json::Value> = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(600);
    while states.last().is_none_or(|s| s["ended"].is_null()) {
        assert!(Instant::now() < deadline, "the set never ended: {states:?}");
        if let Some(text) = get(&format!("{url}state.json")) {
            assert!(
                !text.contains(SECRET),
                "a password reached the page: {text}"
            );
            states.push(serde_json::from_str(&text).unwrap());
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let ran = campaign.0.wait().unwrap();
    let mut said = String::new();
    std::io::Read::read_to_string(campaign.0.stderr.as_mut().unwrap(), &mut said).unwrap();
    assert!(ran.success(), "{said}");

    // Seen during the run: the running test and its seconds, each with its rate and
    // the percentiles of that second's histogram.
    let running: Vec<&serde_json::Value> = states
        .iter()
        .filter(|s| {
            s["running"].is_string()
                && s["seconds"].as_array().is_some_and(|v| {
                    v.iter().any(|x| {
                        x["tps"].as_f64().is_some_and(|t| t > 0.0)
                            && x["percentiles"].as_array().is_some_and(|p| p.len() == 4)
                    })
                })
        })
        .collect();
    assert!(!running.is_empty(), "no running second seen in {states:?}");
    // The seconds arrive as they come: one fetch saw fewer of a test's seconds than a
    // later one.
    let counts: Vec<(String, usize)> = running
        .iter()
        .map(|s| {
            let key = s["running"].as_str().unwrap().to_string();
            (key, s["seconds"].as_array().unwrap().len())
        })
        .collect();
    assert!(
        counts
            .windows(2)
            .any(|w| w[0].0 == w[1].0 && w[0].1 < w[1].1),
        "the seconds did not grow between fetches: {counts:?}"
    );
    for second in running[0]["seconds"].as_array().unwrap() {
        assert_percentiles_rise(second);
    }
    assert_eq!(running[0]["tests"].as_array().unwrap().len(), 2);
    let last = states.last().unwrap();
    assert_eq!(last["ended"], "complete", "{last}");
    let statuses: Vec<&str> = last["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["status"].as_str().unwrap())
        .collect();
    assert_eq!(statuses, ["ok", "ok"], "{last}");
    assert_eq!(last["done"], 2);

    // The store as a campaign leaves it: each test's seconds are its run's intervals,
    // and no second is kept a second time.
    let mut s = Store::open_read_only(&store).unwrap();
    let sets = s.list_sets().unwrap();
    let set = sets[0].id;
    let live = s.live_events(set, 0).unwrap();
    assert!(!live.is_empty());
    assert!(
        live.iter()
            .all(|e| !e.body.contains(r#""kind":"interval""#)),
        "seconds kept after their test was stored: {live:?}"
    );
    for run in s.list_runs(&Default::default()).unwrap() {
        let loaded = s.load_run(run.id).unwrap();
        assert!(loaded.intervals.len() >= 4, "{:?}", loaded.intervals);
    }
    assert!(live.iter().all(|e| !e.body.contains(SECRET)));
}

#[test]
fn watch_refuses_what_is_not_a_results_store() {
    let dir = pgsurge_testkit::scratch_dir("campaign-watch-refused");
    let text = dir.path().join("notes.txt");
    std::fs::write(&text, "not a database\n").unwrap();
    let foreign = dir.path().join("other.db");
    rusqlite::Connection::open(&foreign)
        .unwrap()
        .execute_batch("CREATE TABLE customers (id INTEGER)")
        .unwrap();
    let missing = dir.path().join("missing.db");
    for (path, says) in [
        (&text, "is not a database"),
        (&foreign, "not a pgsurge results store"),
        (&missing, "does not exist"),
    ] {
        let out = pgsurge()
            .args(["campaign", "watch", path.to_str().unwrap()])
            .args(["--listen", "127.0.0.1:0"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{err}");
        assert!(err.contains(says), "{err}");
        assert!(!err.contains("panicked"), "{err}");
    }
    // Read-only: nothing was created or changed.
    assert!(!missing.exists());
    assert_eq!(std::fs::read_to_string(&text).unwrap(), "not a database\n");
}

/// `campaign run --live=ADDR`: a bad address is an error before anything starts (no
/// store is made); a good one is said on stderr and serves the page while the
/// campaign runs.
#[test]
fn campaign_run_live_says_its_address_and_refuses_a_bad_one_first() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_run_live");
    let dir = pgsurge_testkit::scratch_dir("campaign-run-live");
    let c = Campaign::write(
        dir.path(),
        &format!(
            "[campaign]\nname = \"flag\"\n[[target]]\nname = \"existing\"\nconninfo = \"{}\"\n\
             [matrix]\nscales = [1]\nclients = [1]\nscripts = [\"select-only\"]\n\
             [run]\nduration = 3\n[hygiene]\nvacuum = false\ncheckpoint = false\n",
            srv.conninfo(&db)
        ),
    );
    let store = std::path::Path::new(&c.store);
    let run = |live: &str| c.command(&["--quiet", live]);
    for bad in ["--live=not-an-address", "--live=127.0.0.1:99999"] {
        let out = run(bad).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{bad}: {err}");
        assert!(err.contains("live view: cannot listen on"), "{bad}: {err}");
        assert!(!store.exists(), "{bad}: a store was made");
    }

    let mut campaign = Killed(
        run("--live=127.0.0.1:0")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (url, _) = served_url(&mut campaign.0);
    // Served before the campaign starts, and for as long as it runs.
    let page = get(&url).expect("the page is served while the campaign runs");
    assert!(page.contains("/state.json"), "{page}");
    let ran = campaign.0.wait().unwrap();
    assert!(ran.success(), "{ran}");
    assert!(store.exists());
}

/// A store whose directory the watcher may not write: SQLite could read it only as a
/// snapshot that never shows a campaign's new rows (a WAL store needs its `-shm` file),
/// so `watch` refuses it, saying why, instead of showing a page that never moves. As
/// root (who may write anywhere) the watcher runs as the `postgres` user.
#[test]
fn watch_refuses_a_store_it_could_read_only_as_a_snapshot() {
    use std::os::unix::fs::{MetadataExt, PermissionsExt};
    let dir = pgsurge_testkit::scratch_dir("campaign-watch-snapshot");
    let store = dir.path().join("r.db");
    drop(Store::open(store.to_str().unwrap()).unwrap());
    let root = std::fs::metadata("/proc/self").unwrap().uid() == 0;
    let mode = |path: &std::path::Path, mode: u32| {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
    };
    mode(&store, 0o644);
    mode(dir.path(), if root { 0o755 } else { 0o555 });
    let mut watch = if root {
        let mut c = Command::new("runuser");
        c.args(["-u", "postgres", "--", env!("CARGO_BIN_EXE_pgsurge")]);
        c
    } else {
        pgsurge()
    };
    let out = watch
        .args(["campaign", "watch", store.to_str().unwrap()])
        .args(["--listen", "127.0.0.1:0"])
        .output()
        .unwrap();
    mode(dir.path(), 0o755);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("cannot watch"), "{err}");
    assert!(err.contains("snapshot"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
    // Nothing was made beside the store.
    let names: Vec<String> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["r.db"], "{names:?}");
}
