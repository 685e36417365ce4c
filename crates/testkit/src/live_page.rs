//! The live page as a test reads it: over HTTP from the address a `pgsurge` process
//! says on stderr, as a browser would, with the process killed and reaped when the
//! test ends; its state waited for, the process interrupted as Ctrl-C does, the
//! tables of the page as a browser drew them.

use std::io::BufRead;
use std::process::Child;

/// A child process killed and reaped when the test ends, passed or failed.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The body of `url`, or `None` when it cannot be fetched.
pub fn get(url: &str) -> Option<String> {
    let mut r = ureq::get(url).call().ok()?;
    r.body_mut().read_to_string().ok()
}

/// The address the live view is said to be served on: the first line `child` (its
/// stderr piped) writes to stderr, `live view: URL …`. The rest of stderr is kept and
/// returned by the handle when the process has ended, so it never writes to a closed
/// pipe.
pub fn served_url(child: &mut Child) -> (String, std::thread::JoinHandle<String>) {
    let stderr = child.stderr.take().expect("stderr is piped");
    let mut reader = std::io::BufReader::new(stderr);
    let mut line = String::new();
    reader.read_line(&mut line).expect("stderr is readable");
    let rest = std::thread::spawn(move || {
        let mut rest = String::new();
        let _ = std::io::Read::read_to_string(&mut reader, &mut rest);
        rest
    });
    let url = line
        .strip_prefix("live view: ")
        .and_then(|rest| rest.split_whitespace().next())
        .unwrap_or_else(|| panic!("no address said: {line:?}"));
    assert!(url.starts_with("http://127.0.0.1:"), "{line}");
    (url.to_string(), rest)
}

/// Asks `child` to stop as Ctrl-C does (SIGINT).
pub fn interrupt(child: &Child) {
    let pid = libc::pid_t::try_from(child.id()).expect("a pid");
    // SAFETY: kill(2) with the pid of a child this test started and has not reaped.
    let sent = unsafe { libc::kill(pid, libc::SIGINT) };
    assert_eq!(sent, 0, "SIGINT to {pid}");
}

/// Fetches the state of the page at `url` every 200 ms until `wanted` holds of it,
/// and returns that state. Panics, with the last state fetched, when `child` (the
/// process serving it) ends first or after ten minutes.
pub fn wait_for_state(
    url: &str,
    child: &mut Child,
    what: &str,
    wanted: impl Fn(&serde_json::Value) -> bool,
) -> serde_json::Value {
    use std::time::{Duration, Instant};
    let deadline = Instant::now() + Duration::from_secs(600);
    let mut last = serde_json::Value::Null;
    loop {
        if let Some(text) = get(&format!("{url}state.json")) {
            last = serde_json::from_str(&text).expect("the state is JSON");
            if wanted(&last) {
                return last;
            }
        }
        if let Ok(Some(status)) = child.try_wait() {
            panic!("the process ended ({status}) before {what}: {last}");
        }
        assert!(Instant::now() < deadline, "never {what}: {last}");
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The text of each cell of each body row of the table `id` in a page as Chromium
/// dumps it (`--dump-dom`), its markup's entities left as they are.
pub fn table_rows(dom: &str, id: &str) -> Vec<Vec<String>> {
    let at = dom
        .find(&format!("id=\"{id}\""))
        .unwrap_or_else(|| panic!("no table {id} in {dom}"));
    let table = &dom[at..];
    let table = &table[..table.find("</table>").unwrap_or(table.len())];
    let Some(body) = table.split_once("<tbody>").map(|(_, b)| b) else {
        return Vec::new();
    };
    body.split("<tr")
        .skip(1)
        .map(|row| {
            row.split("<td")
                .skip(1)
                .map(|cell| {
                    let text = cell.split_once('>').map_or("", |(_, t)| t);
                    text[..text.find("</td>").unwrap_or(text.len())].to_string()
                })
                .collect()
        })
        .collect()
}

/// A browser's view of a live page while something runs: the page once, then its
/// state (`/state.json`) every 200 ms, on a thread of its own, until
/// [`Reader::finish`] (or a deadline of ten minutes).
pub struct Reader {
    ended: std::sync::Arc<std::sync::atomic::AtomicBool>,
    thread: std::thread::JoinHandle<(Option<String>, Vec<String>)>,
}

impl Reader {
    /// Starts reading the page served at `url` (`http://…/`).
    pub fn start(url: &str) -> Reader {
        use std::sync::atomic::Ordering;
        use std::time::{Duration, Instant};
        let ended = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let (url, flag) = (url.to_string(), std::sync::Arc::clone(&ended));
        let thread = std::thread::spawn(move || {
            let page = get(&url);
            let mut seen = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(600);
            while !flag.load(Ordering::SeqCst) && Instant::now() < deadline {
                if let Some(s) = get(&format!("{url}state.json")) {
                    seen.push(s);
                }
                std::thread::sleep(Duration::from_millis(200));
            }
            (page, seen)
        });
        Reader { ended, thread }
    }

    /// Stops reading: the page as first fetched, and every state fetched, in order.
    pub fn finish(self) -> (Option<String>, Vec<String>) {
        self.ended.store(true, std::sync::atomic::Ordering::SeqCst);
        self.thread.join().expect("the reader does not panic")
    }
}

/// Checks one second of the page's state: its four latency percentiles (p50, p90,
/// p95, p99), each no lower than the one before.
pub fn assert_percentiles_rise(second: &serde_json::Value) {
    let p: Vec<f64> = second["percentiles"]
        .as_array()
        .unwrap_or_else(|| panic!("no percentiles in {second}"))
        .iter()
        .map(|p| p[1].as_f64().expect("a latency"))
        .collect();
    assert_eq!(p.len(), 4, "{second}");
    assert!(p.windows(2).all(|w| w[0] <= w[1]), "{second}");
}
