//! Headless Chromium for the tests that look at a page as a browser lays it out: the
//! one place that finds the browser, gives it the flags a container needs, and bounds
//! how long it may take, so no test hangs on a browser that never exits.

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
