//! Headless Chromium for the tests that look at a page as a browser lays it out: the
//! one place that finds the browser, gives it the flags a container needs, keeps its
//! traffic on this machine (no background requests of its own; no name outside it
//! resolves), and bounds how long it may take, so no test hangs on a browser that never
//! exits. [`open_url_logged`] also tells which addresses a page asked for.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// The longest one page may take, a slow shared machine included.
const DEADLINE: Duration = Duration::from_secs(180);

/// What headless Chromium printed for one page: stdout carries what `--dump-dom` or
/// `--print-to-pdf` asked for, stderr the console when `--enable-logging=stderr`.
pub struct Shown {
    /// The browser's standard output (the DOM after load with `--dump-dom`).
    pub stdout: String,
    /// The browser's standard error (console messages with `--enable-logging=stderr`).
    pub stderr: String,
}

/// Opens the file `page` in headless Chromium with `args` (e.g. `--dump-dom`,
/// `--screenshot=FILE`, `--virtual-time-budget=MS`) added to the flags every test
/// needs. Panics, naming what to install, when no Chromium is found.
pub fn open_file(args: &[&str], page: &Path) -> Shown {
    open_url(args, &format!("file://{}", page.display()))
}

/// Opens `url` (a `file://` page or one a test serves on localhost) as
/// [`open_file`] does.
pub fn open_url(args: &[&str], url: &str) -> Shown {
    let mut child = Command::new(binary())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--hide-scrollbars",
            "--allow-file-access-from-files",
            // The browser's own requests (updates, accounts, time) never leave the
            // machine: none is made, and no name but localhost resolves.
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost, EXCLUDE 127.0.0.1",
        ])
        .args(args)
        .arg(url)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start headless Chromium");
    let drain = |mut from: Box<dyn Read + Send>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            let _ = from.read_to_end(&mut bytes);
            String::from_utf8_lossy(&bytes).into_owned()
        })
    };
    let stdout = drain(Box::new(child.stdout.take().expect("piped stdout")));
    let stderr = drain(Box::new(child.stderr.take().expect("piped stderr")));
    let started = Instant::now();
    while child.try_wait().expect("wait for Chromium").is_none() {
        if started.elapsed() > DEADLINE {
            let _ = child.kill();
            let _ = child.wait();
            panic!("headless Chromium did not finish {url} within {DEADLINE:?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Shown {
        stdout: stdout.join().expect("read Chromium's stdout"),
        stderr: stderr.join().expect("read Chromium's stderr"),
    }
}

/// Opens `url` as [`open_url`] does, with the browser's network log kept: what it
/// showed, and every address the page asked for — the page itself and what its
/// document and scripts fetched (a style, a script, an image, a `fetch`), whether or
/// not it could be reached — leaving out the browser's own requests.
pub fn open_url_logged(args: &[&str], url: &str) -> (Shown, Vec<String>) {
    let dir = crate::scratch_dir("chromium-net-log");
    let log = dir.path().join("net-log.json");
    let flag = format!("--log-net-log={}", log.display());
    let mut all = vec![flag.as_str()];
    all.extend_from_slice(args);
    let shown = open_url(&all, url);
    let text = std::fs::read_to_string(&log).expect("Chromium wrote its network log");
    (shown, page_requests(&text))
}

/// The addresses a page asked for, from a network log: the requests Chromium started
/// for a frame (the main frame, or one with an origin that asked for it), not those
/// it makes for itself (whose initiator is no origin).
fn page_requests(log: &str) -> Vec<String> {
    let log: serde_json::Value = serde_json::from_str(log).expect("a network log is JSON");
    let start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"].clone();
    let mut urls = Vec::new();
    for event in log["events"].as_array().expect("a network log has events") {
        let p = &event["params"];
        let Some(url) = p["url"].as_str() else {
            continue;
        };
        let by_page = p["request_type"] == "main frame" || p["initiator"] != "not an origin";
        if event["type"] == start && by_page && !urls.iter().any(|u| u == url) {
            urls.push(url.to_string());
        }
    }
    urls
}

/// The first Chromium found on `PATH` under the names distributions give it.
fn binary() -> &'static str {
    ["chromium", "chromium-browser", "google-chrome"]
        .into_iter()
        .find(|b| {
            Command::new(b)
                .arg("--version")
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("headless Chromium is required to look at pages: apt-get install chromium")
}
