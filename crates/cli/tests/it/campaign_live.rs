//! `campaign run --live` as a user looks at it: a real campaign serves its page, and
//! while one of its tests runs the page is opened in headless Chromium, whose script
//! draws the plan (done, running, left, the time left), the running test's seconds
//! with their rate and latency percentiles, the server's waits and its host's figures —
//! asking for nothing but the page's own address. A campaign whose server goes away
//! during a test shows the outage on its page and in its store's events, and the test
//! run again shows one attempt's seconds at a time, its time from 0 again; its tests
//! left and time left fall as tests end and are 0 at the end.

use std::process::Stdio;

use pgsurge_server::testing::{TestServer, TestServerOptions};
use pgsurge_testkit::live_page::{
    interrupt, served_url, table_rows, wait_for_state, Killed, Reader,
};

use crate::campaigns::Campaign;

const SECRET: &str = "campaign-live-secret-pw";

/// The campaign run with `--quiet --live=127.0.0.1:0`, its stderr piped (the address
/// is said there).
fn campaign_run_live(c: &Campaign) -> Killed {
    Killed(
        c.command(&["--quiet", "--live=127.0.0.1:0"])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    )
}

/// A figure the page drew (`12.5`), as a number.
fn number(cell: &str) -> f64 {
    cell.parse()
        .unwrap_or_else(|_| panic!("not a number: {cell:?}"))
}

#[test]
fn a_running_campaigns_page_in_chromium_shows_the_plan_seconds_waits_and_host() {
    let srv = TestServer::shared();
    let db = srv.create_database("campaign_live_page");
    let dir = pgsurge_testkit::scratch_dir("campaign-live-page");
    std::fs::write(dir.path().join("sleep.sql"), "SELECT pg_sleep(0.01);\n").unwrap();
    // Long tests: the campaign is interrupted once the browser has looked. The server
    // trusts local connections: the password is never needed, only kept off the page.
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "looked-at"
shuffle = false
[[target]]
name = "existing"
conninfo = "{} password={SECRET}"
host_metrics = "local"
[matrix]
scales = [1]
clients = [2, 3]
scripts = [{{ file = "sleep.sql" }}]
[run]
duration = 600
[hygiene]
vacuum = false
checkpoint = false
"#,
            srv.conninfo(&db)
        ),
    );
    let mut campaign = campaign_run_live(&c);
    let (url, said) = served_url(&mut campaign.0);

    // Once the first test has run a few seconds with its waits and host figures.
    let seen = wait_for_state(&url, &mut campaign.0, "a test ran with its waits", |s| {
        let has = |list: &str, name: &str| {
            s[list]
                .as_array()
                .is_some_and(|v| v.iter().any(|x| x[0] == name))
        };
        s["running"].is_string()
            && s["seconds"].as_array().is_some_and(|v| v.len() >= 2)
            && has("waits", "Timeout.PgSleep")
            && has("host", "os.cpu.idle_pct")
    });
    let running = seen["running"].as_str().unwrap().to_string();
    let (shown, asked) = pgsurge_testkit::chromium::open_url_logged(
        &["--dump-dom", "--virtual-time-budget=3000"],
        &url,
    );
    let after = get_state(&url);
    interrupt(&campaign.0);
    let ended = campaign.0.wait().unwrap();
    let said = said.join().unwrap();
    assert!(!ended.success(), "an interrupted campaign: {said}");
    // The test still ran when the browser had drawn the page.
    assert_eq!(after["running"], running.as_str(), "{after}");
    let dom = &shown.stdout;
    assert!(!dom.contains(SECRET), "a password reached the page: {dom}");
    assert!(!said.contains(SECRET), "{said}");

    // Nothing but the page's own address was asked for (the state its script drew
    // is below).
    let origin = url.trim_end_matches('/');
    assert!(asked.contains(&url), "{asked:?}");
    for a in &asked {
        assert!(
            a.starts_with(&format!("{origin}/")),
            "{a} asked for: {asked:?}"
        );
    }

    // The plan: none done of two, one running, one left, and the time left.
    for part in [
        "<span>done 0 / 2</span>",
        "<span>running 1</span>",
        "<span>left 1</span>",
    ] {
        assert!(dom.contains(part), "no {part} in {dom}");
    }
    let time_left = dom
        .split("<span>time left ")
        .nth(1)
        .and_then(|t| t.split_once("</span>"))
        .unwrap_or_else(|| panic!("no time left in {dom}"))
        .0;
    assert!(
        time_left.ends_with('s') && time_left.contains('m'),
        "{time_left}"
    );
    assert!(
        dom.contains(&format!("<span id=\"running\">{running}</span>")),
        "{dom}"
    );

    // The running test's seconds, newest first: each with its rate and its four
    // latency percentiles from that second's histogram, rising.
    let seconds = table_rows(dom, "seconds");
    assert!(seconds.len() >= 2, "{seconds:?}");
    for row in &seconds {
        assert_eq!(row.len(), 8, "{row:?}");
        assert!(number(&row[1]) > 0.0, "{row:?}");
        let p: Vec<f64> = row[3..7].iter().map(|c| number(c)).collect();
        assert!(p[0] > 0.0 && p.windows(2).all(|w| w[0] <= w[1]), "{row:?}");
        assert_eq!(row[7], "0", "{row:?}");
    }
    let elapsed: Vec<f64> = seconds.iter().map(|r| number(&r[0])).collect();
    assert!(elapsed.windows(2).all(|w| w[0] > w[1]), "{elapsed:?}");
    // The server's waits: its clients sleep in pg_sleep, each a session.
    let waits = table_rows(dom, "waits");
    let sleeping = waits
        .iter()
        .find(|r| r[0] == "Timeout.PgSleep")
        .unwrap_or_else(|| panic!("{waits:?}"));
    assert!(number(&sleeping[1]) > 0.0, "{waits:?}");
    // Its host's figures (the host is this machine).
    let host = table_rows(dom, "host");
    let idle = host
        .iter()
        .find(|r| r[0] == "os.cpu.idle_pct")
        .unwrap_or_else(|| panic!("{host:?}"));
    assert!((0.0..=100.0).contains(&number(&idle[1])), "{host:?}");
    // The plan's tests, the first running.
    let tests = table_rows(dom, "tests");
    assert_eq!(tests.len(), 2, "{tests:?}");
    assert_eq!((&tests[0][0], tests[0][1].as_str()), (&running, "running"));
    assert_eq!(tests[1][1], "planned", "{tests:?}");
}

/// The state the page at `url` asks for, now.
fn get_state(url: &str) -> serde_json::Value {
    let text =
        pgsurge_testkit::live_page::get(&format!("{url}state.json")).expect("the state is served");
    serde_json::from_str(&text).unwrap()
}

/// The end of each second the state `s` shows, in order.
fn elapsed(s: &serde_json::Value) -> Vec<f64> {
    s["seconds"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["elapsed_s"].as_f64().unwrap())
        .collect()
}

#[test]
fn an_outage_is_shown_live_and_the_tests_and_time_left_fall_to_zero() {
    // A server of its own: it is stopped and started again.
    let srv = TestServer::start(TestServerOptions::default());
    let db = srv.create_database("campaign_live_outage");
    let dir = pgsurge_testkit::scratch_dir("campaign-live-outage");
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "outage-live"
shuffle = false
[[target]]
name = "fx"
conninfo = "{} password={SECRET}"
[matrix]
scales = [1]
clients = [1, 2, 3]
scripts = ["select-only"]
[run]
duration = 4
outage_wait = "60s"
[hygiene]
vacuum = false
checkpoint = false
"#,
            srv.tcp_conninfo(&db)
        ),
    );
    let mut campaign = campaign_run_live(&c);
    let (url, said) = served_url(&mut campaign.0);
    let reader = Reader::start(&url);

    // Once a test has ended and the next has run two seconds, the server goes away
    // for a few seconds: that test is cut short and run again.
    let cut = wait_for_state(&url, &mut campaign.0, "a second test ran", |s| {
        s["done"].as_u64().is_some_and(|d| d >= 1)
            && s["running"].is_string()
            && s["seconds"].as_array().is_some_and(|v| v.len() >= 2)
    });
    let cut_key = cut["running"].as_str().unwrap().to_string();
    let cluster = srv.cluster();
    assert!(cluster.stop_immediate(std::time::Duration::from_secs(60)));
    std::thread::sleep(std::time::Duration::from_secs(4));
    cluster.restart().expect("the server starts again");
    let ran = campaign.0.wait().unwrap();
    let (page, seen) = reader.finish();
    let said = said.join().unwrap();
    assert!(ran.success(), "{said}");
    let states: Vec<serde_json::Value> = seen
        .iter()
        .inspect(|s| assert!(!s.contains(SECRET), "a password reached the page: {s}"))
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();

    // The outage as the page showed it: the target unreachable, then back.
    let outages = |s: &serde_json::Value| -> Vec<String> {
        s["outages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|o| o.as_str().unwrap().to_string())
            .collect()
    };
    let away = states
        .iter()
        .find(|s| s["targets"][0][1] == "unreachable")
        .unwrap_or_else(|| panic!("the target was never shown unreachable: {states:?}"));
    assert!(
        outages(away)
            .iter()
            .any(|o| o.starts_with("fx: unreachable (")),
        "{away}"
    );
    let back = states
        .iter()
        .find(|s| outages(s).iter().any(|o| o.starts_with("fx: back after ")))
        .unwrap_or_else(|| panic!("the target was never shown back: {states:?}"));
    assert_eq!(back["targets"][0][1], "up", "{back}");
    assert!(
        outages(back)
            .iter()
            .any(|o| o.ends_with(&format!("{cut_key} run again"))),
        "{back}"
    );

    // One attempt's seconds at a time: every fetch showed a series whose seconds rise.
    // Without that, the re-run's seconds (from 0 again) follow the cut-short ones.
    for s in &states {
        let e = elapsed(s);
        assert!(e.windows(2).all(|w| w[0] < w[1]), "{e:?} in {s}");
    }
    // The cut-short attempt was seen with its seconds, then the second attempt of the
    // same test with its own, from 0, and the first said apart.
    assert_eq!(cut["attempt"], 1, "{cut}");
    let again = states
        .iter()
        .find(|s| s["running"] == cut_key.as_str() && s["attempt"] == 2 && !elapsed(s).is_empty())
        .unwrap_or_else(|| panic!("the second attempt was never shown: {states:?}"));
    assert!(elapsed(again)[0] <= 1.5, "{again}");
    let first = &again["cut_short"][0];
    assert_eq!(first["attempt"], 1, "{again}");
    assert!(first["seconds"].as_u64().is_some_and(|n| n >= 2), "{again}");
    assert_eq!(again["cut_short"].as_array().unwrap().len(), 1, "{again}");
    // The page says which attempt its seconds are, and how far the one cut short got.
    let page = page.expect("the page was served");
    assert!(
        page.contains("id=\"attempt\"") && page.contains("s.cut_short"),
        "{page}"
    );
    // Once the plan was shown, tests left never rose between two fetches of the page.
    let left: Vec<u64> = states
        .iter()
        .filter(|s| !s["tests"].as_array().unwrap().is_empty())
        .map(|s| s["left"].as_u64().unwrap())
        .collect();
    assert!(left.windows(2).all(|w| w[1] <= w[0]), "{left:?}");

    // The store's event stream, drawn as `campaign watch` draws it: the outage, and
    // after each test's end fewer tests and less time left, none at the end.
    let mut s = pgsurge_store::Store::open_read_only(&c.store).unwrap();
    let set = s.list_sets().unwrap()[0].id;
    let events = s.live_events(set, 0).unwrap();
    assert!(events.iter().all(|e| !e.body.contains(SECRET)));
    let mut drawn = pgsurge_live::LiveState::default();
    let mut ends: Vec<(usize, usize, u64)> = Vec::new();
    let mut kinds: Vec<(String, Option<String>)> = Vec::new();
    for e in &events {
        use pgsurge_events::Told;
        let told: Told = serde_json::from_str(&e.body).unwrap();
        kinds.push((told.kind().to_string(), told.key().map(str::to_string)));
        if let Told::TestRunAgain { key, attempt } = &told {
            assert_eq!((key, *attempt), (&cut_key, 2), "{told:?}");
        }
        if matches!(told, Told::TestStarted { .. }) && ends.is_empty() {
            // The plan, before its first test starts.
            ends.push((drawn.done, drawn.left, drawn.time_left_s));
        }
        drawn.take(&told);
        if matches!(told, Told::TestEnded { .. }) {
            ends.push((drawn.done, drawn.left, drawn.time_left_s));
        }
    }
    assert!(
        drawn
            .outages
            .iter()
            .any(|o| o.starts_with("fx: unreachable (")),
        "{:?}",
        drawn.outages
    );
    assert!(
        drawn
            .outages
            .iter()
            .any(|o| o.starts_with("fx: back after ")),
        "{:?}",
        drawn.outages
    );
    assert_eq!(drawn.ended.as_deref(), Some("complete"));
    // The stream tells the test run again once, after it started and before it ended.
    let at = |kind: &str| {
        kinds
            .iter()
            .position(|(k, key)| k == kind && key.as_deref() == Some(cut_key.as_str()))
            .unwrap_or_else(|| panic!("no {kind} of {cut_key}: {kinds:?}"))
    };
    let run_again = at("test_run_again");
    assert!(
        at("test_started") < run_again && run_again < at("test_ended"),
        "{kinds:?}"
    );
    assert_eq!(
        kinds.iter().filter(|(k, _)| k == "test_run_again").count(),
        1,
        "{kinds:?}"
    );
    assert_eq!((drawn.done, drawn.left, drawn.time_left_s), (3, 0, 0));
    // Planned, then after each of the three tests ended.
    assert_eq!(ends.len(), 4, "{ends:?}");
    assert_eq!((ends[0].0, ends[0].1), (0, 3), "{ends:?}");
    for w in ends.windows(2) {
        assert!(w[1].0 == w[0].0 + 1 && w[1].1 <= w[0].1, "{ends:?}");
        assert!(
            w[1].2 < w[0].2,
            "a test ended, the time left did not fall: {ends:?}"
        );
    }
}
