//! The live view of a running campaign: a real campaign (an existing server, two
//! tests) tells its events to the page's state while the test reads the page and
//! `/state.json` over HTTP, as a browser would, until the running test's seconds
//! arrive with their rate and latency percentiles; the page is then opened in headless
//! Chromium, whose script draws the tests. No password reaches either.

use pgsurge_campaign::{run_campaign_telling, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_live::{serve, Live};
use pgsurge_server::testing::TestServer;
use pgsurge_store::Store;
use pgsurge_testkit::live_page::{assert_percentiles_rise, get, Reader};

const SECRET: &str = "live-view-secret-pw";

/// Runs `campaign` (its store in `dir`) telling its events to a live page, which a
/// browser reads meanwhile; checks that its `tests` all ran. The page's server (still
/// serving the ended campaign's state), the page as first read, and every state read.
fn run_read(
    campaign: &Campaign,
    dir: &pgsurge_testkit::ScratchDir,
    tests: usize,
) -> (pgsurge_live::LiveServer, Option<String>, Vec<String>) {
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let mut live = Live::new();
    let server = serve("127.0.0.1:0", live.shared()).unwrap();
    assert!(server.addr().ip().is_loopback());
    // What a browser sees while the campaign runs: every state it fetched.
    let reader = Reader::start(&server.url());
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign_telling(
        campaign,
        &mut store,
        &opts,
        &StopFlag::new(),
        &mut [&mut live],
    );
    let (page, seen) = reader.finish();
    let out = out.unwrap();
    assert_eq!((out.ok, out.failed), (tests, 0), "{out:?}");
    (server, page, seen)
}

#[test]
fn a_running_campaigns_page_shows_its_seconds_as_they_come() {
    let srv = TestServer::shared();
    let db = srv.create_database("liveview");
    // The server trusts local connections: the password is never needed, only kept
    // out of what the page shows.
    let text = format!(
        r#"
[campaign]
name = "live"
shuffle = false

[[target]]
name = "existing"
conninfo = "{} password={SECRET}"

[matrix]
scales = [1]
clients = [1, 2]
scripts = ["select-only"]

[run]
duration = 4

[hygiene]
vacuum = false
checkpoint = false
"#,
        srv.conninfo(&db)
    );
    let campaign = Campaign::parse(&text, "live.toml", std::path::Path::new(".")).unwrap();
    let dir = pgsurge_testkit::scratch_dir("campaign-live");
    let (server, page, seen) = run_read(&campaign, &dir, 2);
    let url = server.url();

    let page = page.expect("the page was served during the run");
    assert!(page.contains("/state.json") && page.contains("<script>"));
    // Nothing is fetched from the network: no external script, style or image.
    assert!(!page.contains("src=\"http") && !page.contains("href=\"http"));
    let states: Vec<serde_json::Value> = seen
        .iter()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();
    // A state fetched while a test ran shows its seconds, each with its rate and its
    // percentiles from that second's histogram.
    let running = states.iter().find(|s| {
        s["running"].is_string()
            && s["seconds"].as_array().is_some_and(|v| {
                v.iter().any(|x| {
                    x["tps"].as_f64().is_some_and(|t| t > 0.0)
                        && x["percentiles"].as_array().is_some_and(|p| p.len() == 4)
                })
            })
    });
    let running = running.unwrap_or_else(|| panic!("no running second seen in {states:?}"));
    assert_eq!(running["tests"].as_array().unwrap().len(), 2);
    assert!(running["ended"].is_null());
    for second in running["seconds"].as_array().unwrap() {
        assert_percentiles_rise(second);
    }
    for s in seen.iter().chain([&page]) {
        assert!(!s.contains(SECRET), "a password reached the page: {s}");
    }

    // The page as a browser draws it: its script fetched the state and wrote the
    // tests (the campaign has ended by now; the server still answers).
    let last = get(&format!("{url}state.json")).unwrap();
    let last: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(last["ended"], "complete");
    let shown =
        pgsurge_testkit::chromium::open_url(&["--dump-dom", "--virtual-time-budget=5000"], &url);
    let key = last["tests"][0]["key"].as_str().unwrap();
    assert!(shown.stdout.contains(key), "{}", shown.stdout);
    assert!(shown.stdout.contains("ended: complete"), "{}", shown.stdout);
    assert!(!shown.stdout.contains(SECRET));
    drop(server);
}

/// The page shows, beside the running test's seconds, the server's waits and its
/// host's figures sampled during them, and each cell's verdict (the second target
/// against the first, as `compare` judges it) as soon as both have run it: a campaign
/// of two targets whose script sleeps on the server.
#[test]
fn a_running_campaigns_page_shows_waits_host_figures_and_verdicts() {
    let srv = TestServer::shared();
    let db = srv.create_database("liveview_waits");
    let dir = pgsurge_testkit::scratch_dir("campaign-live-waits");
    std::fs::write(dir.path().join("sleep.sql"), "SELECT pg_sleep(0.02);\n").unwrap();
    let conninfo = format!("{} password={SECRET}", srv.conninfo(&db));
    let text = format!(
        r#"
[campaign]
name = "live-waits"
shuffle = false
[[target]]
name = "a"
conninfo = "{conninfo}"
host_metrics = "local"
[[target]]
name = "b"
conninfo = "{conninfo}"
host_metrics = "local"
[matrix]
scales = [1]
clients = [2, 4]
scripts = [{{ file = "sleep.sql" }}]
[run]
duration = 4
[hygiene]
vacuum = false
checkpoint = false
"#
    );
    let campaign = Campaign::parse(&text, "live.toml", dir.path()).unwrap();
    let (server, _, seen) = run_read(&campaign, &dir, 4);
    let url = server.url();
    for s in &seen {
        assert!(!s.contains(SECRET), "a password reached the page: {s}");
    }
    let states: Vec<serde_json::Value> = seen
        .iter()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();
    let running = || states.iter().filter(|s| s["running"].is_string());
    // The clients sleep on the server: their sessions wait in `Timeout.PgSleep`.
    let sleeping = running().find(|s| {
        s["waits"].as_array().is_some_and(|w| {
            w.iter()
                .any(|x| x[0] == "Timeout.PgSleep" && x[1].as_f64().is_some_and(|n| n > 0.0))
        })
    });
    assert!(sleeping.is_some(), "no wait seen in {states:?}");
    // The server's host is this machine: its CPU is shown as sampled.
    let host = running().find(|s| {
        s["host"]
            .as_array()
            .is_some_and(|h| h.iter().any(|x| x[0] == "os.cpu.idle_pct"))
    });
    assert!(host.is_some(), "no host figure seen in {states:?}");
    // The first cell's verdict is shown while the campaign still runs.
    let judged = running()
        .find(|s| s["verdicts"].as_array().is_some_and(|v| !v.is_empty()))
        .unwrap_or_else(|| panic!("no verdict seen during the run: {states:?}"));
    let first = &judged["verdicts"][0];
    assert_eq!(
        (&first["a"], &first["b"]),
        (&"a".into(), &"b".into()),
        "{first}"
    );
    assert!(
        ["faster", "slower", "no-difference", "inconclusive"]
            .contains(&first["tps"].as_str().unwrap()),
        "{first}"
    );
    let cell = first["cell"].as_str().unwrap();
    assert!(
        cell.starts_with("s1/sleep") && cell.contains("/c"),
        "{cell}"
    );
    let last = get(&format!("{url}state.json")).unwrap();
    let last: serde_json::Value = serde_json::from_str(&last).unwrap();
    assert_eq!(last["verdicts"].as_array().unwrap().len(), 2, "{last}");

    // The page as a browser draws it: the waits and the verdicts.
    let shown =
        pgsurge_testkit::chromium::open_url(&["--dump-dom", "--virtual-time-budget=5000"], &url);
    assert!(shown.stdout.contains("Timeout.PgSleep"), "{}", shown.stdout);
    assert!(shown.stdout.contains(cell), "{}", shown.stdout);
    assert!(shown.stdout.contains("b against a"), "{}", shown.stdout);
    assert!(!shown.stdout.contains(SECRET));
    drop(server);
}
