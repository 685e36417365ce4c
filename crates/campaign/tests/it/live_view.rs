//! The live view of a running campaign: a real campaign (an existing server, two
//! tests) tells its events to the page's state while the test reads the page and
//! `/state.json` over HTTP, as a browser would, until the running test's seconds
//! arrive with their rate and latency percentiles; the page is then opened in headless
//! Chromium, whose script draws the tests. No password reaches either.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use pgsurge_campaign::{run_campaign_telling, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_live::{serve, Live};
use pgsurge_server::testing::TestServer;
use pgsurge_store::Store;

const SECRET: &str = "live-view-secret-pw";

fn get(url: &str) -> Option<String> {
    let mut r = ureq::get(url).call().ok()?;
    r.body_mut().read_to_string().ok()
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
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let mut live = Live::new();
    let server = serve("127.0.0.1:0", live.shared()).unwrap();
    assert!(server.addr().ip().is_loopback());
    let url = server.url();
    let ended = Arc::new(AtomicBool::new(false));
    // What a browser sees while the campaign runs: every state it fetched.
    let reader = {
        let (url, ended) = (url.clone(), Arc::clone(&ended));
        std::thread::spawn(move || {
            let page = get(&url);
            let mut seen = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(600);
            while !ended.load(Ordering::SeqCst) && Instant::now() < deadline {
                if let Some(s) = get(&format!("{url}state.json")) {
                    seen.push(s);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            (page, seen)
        })
    };
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign_telling(
        &campaign,
        &mut store,
        &opts,
        &StopFlag::new(),
        &mut [&mut live],
    );
    ended.store(true, Ordering::SeqCst);
    let (page, seen) = reader.join().unwrap();
    let out = out.unwrap();
    assert_eq!((out.ok, out.failed), (2, 0), "{out:?}");

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
        let p: Vec<f64> = second["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p[1].as_f64().unwrap())
            .collect();
        assert!(p.windows(2).all(|w| w[0] <= w[1]), "{second}");
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
