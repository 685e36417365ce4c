//! `pgsurge bench --live[=ADDR]`: one run's live page. The address is said on stderr
//! and the page served while the run goes; the test reads the page and its state over
//! HTTP, as a browser would, and sees the run's seconds grow, each with its rate and
//! the percentiles of that second's histogram, and the server's waits and host figures
//! sampled beside it; stdout carries pgbench's report alone;
//! the password never reaches the page. A bad address is an error before anything
//! connects.

use std::process::{Command, Stdio};

use pgsurge_server::testing::TestServer;
use pgsurge_testkit::live_page::{assert_percentiles_rise, served_url, Killed, Reader};

const SECRET: &str = "bench-live-secret-pw";

fn pgsurge(srv: &TestServer) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    srv.apply_env(&mut c);
    c
}

#[test]
fn a_bench_runs_page_shows_its_seconds_as_they_come() {
    let srv = TestServer::shared();
    let db = srv.create_database("bench_live");
    let init = pgsurge(srv)
        .args(["bench", "-i", "-s", "1", "-q", &db])
        .output()
        .unwrap();
    assert!(init.status.success(), "{init:?}");
    // The server trusts local connections: the password is never needed, only kept
    // out of what the page shows.
    let conninfo = format!("dbname={db} password={SECRET}");
    // Its clients sleep on the server: their sessions wait in `Timeout.PgSleep`.
    let dir = pgsurge_testkit::scratch_dir("bench-live");
    let script = dir.path().join("sleep.sql");
    std::fs::write(&script, "SELECT pg_sleep(0.01);\n").unwrap();
    let mut bench = Killed(
        pgsurge(srv)
            .args(["bench", "-n", "-f", script.to_str().unwrap()])
            .args(["-c", "2", "-T", "6"])
            .args(["--live=127.0.0.1:0", &conninfo])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let (url, rest) = served_url(&mut bench.0);
    let stdout = bench.0.stdout.take().unwrap();
    let report = std::thread::spawn(move || std::io::read_to_string(stdout).unwrap_or_default());

    // What a browser sees: the page once, then the state every 200 ms until the run
    // has ended.
    let reader = Reader::start(&url);
    let ran = bench.0.wait().unwrap();
    let (page, seen) = reader.finish();
    let page = page.expect("the page is served while the run goes");
    assert!(page.contains("/state.json") && page.contains("<script>"));
    for text in &seen {
        assert!(
            !text.contains(SECRET),
            "a password reached the page: {text}"
        );
    }
    let states: Vec<serde_json::Value> = seen
        .iter()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();
    let said = rest.join().unwrap();
    let report = report.join().unwrap();
    assert!(ran.success(), "{said}");

    // The run's seconds, counted at each fetch while it ran.
    let counts: Vec<usize> = states
        .iter()
        .filter(|s| s["running"].is_string())
        .map(|s| s["seconds"].as_array().unwrap().len())
        .collect();
    assert!(
        counts.windows(2).any(|w| w[0] < w[1]),
        "the seconds did not grow between fetches: {counts:?}"
    );
    let seen = states
        .iter()
        .filter_map(|s| s["seconds"].as_array())
        .flatten()
        .find(|x| x["tps"].as_f64().is_some_and(|t| t > 0.0))
        .unwrap_or_else(|| panic!("no second with transactions in {states:?}"));
    assert_percentiles_rise(seen);
    // The server's waits and its host's figures (it runs on this machine), sampled
    // beside the run as a campaign samples them.
    let running = || states.iter().filter(|s| s["running"].is_string());
    let has = |s: &serde_json::Value, list: &str, name: &str| {
        s[list]
            .as_array()
            .is_some_and(|v| v.iter().any(|x| x[0] == name && x[1].as_f64().is_some()))
    };
    assert!(
        running().any(|s| has(s, "waits", "Timeout.PgSleep")),
        "no wait seen in {states:?}"
    );
    assert!(
        running().any(|s| has(s, "host", "os.cpu.idle_pct")),
        "no host figure seen in {states:?}"
    );
    assert!(states.iter().all(|s| s["host_note"].is_null()));
    // The one test is the run, named by its command line (no connection options);
    // the page has it once the setup is done, and says how it ended.
    let last = states.last().unwrap();
    assert_eq!(last["tests"].as_array().unwrap().len(), 1, "{last}");
    let key = last["tests"][0]["key"].as_str().unwrap();
    assert!(
        key.starts_with("pgbench ") && key.contains("--client=2"),
        "{key}"
    );
    assert!(!key.contains("password"), "{key}");

    // stdout is pgbench's report alone; the address was said on stderr.
    assert!(report.starts_with("pgbench ("), "{report}");
    assert!(report.contains("\ntps = "), "{report}");
    assert!(!report.contains("live view"), "{report}");
    assert!(!said.contains(SECRET), "{said}");
}

#[test]
fn bench_live_refuses_a_bad_address_before_anything_connects() {
    let dir = pgsurge_testkit::scratch_dir("bench-live-refused");
    let store = dir.path().join("r.db");
    // A port taken by someone else.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let taken = format!("--live={}", listener.local_addr().unwrap());
    for (live, says) in [
        (
            "--live=not-an-address",
            "live view: cannot listen on not-an-address",
        ),
        (
            "--live=127.0.0.1:99999",
            "live view: cannot listen on 127.0.0.1:99999",
        ),
        (taken.as_str(), "live view: cannot listen on 127.0.0.1:"),
        ("--live=", "--live= needs an address"),
    ] {
        // No server answers here: an error about the connection would mean the
        // address was checked too late.
        let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
            .args(["bench", "-h", "/nonexistent-socket-dir", "-T", "1"])
            .arg(format!("--store={}", store.display()))
            .args([live, "db"])
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{live}: {err}");
        assert!(err.contains(says), "{live}: {err}");
        assert!(!err.contains("connection"), "{live}: {err}");
        assert!(out.stdout.is_empty(), "{live}");
        assert!(!store.exists(), "{live}: a store was made");
    }
}
