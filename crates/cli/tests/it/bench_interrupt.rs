//! Ctrl-C and SIGTERM stop `pgsurge bench` promptly: a `\sleep`, a `-R` wait or a
//! statement running on the server (cancelled there) does not hold the report back;
//! what completed before the signal is reported at once (a statement the cancel does
//! not end holds it back for about a second), with exit status 2 and no client
//! reported as aborted. A second signal ends the process at once, killed by it,
//! without a report. "At once" is checked against the waits interrupted, which are
//! half a minute and more: a busy machine may take seconds to schedule the process.

use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use pgsurge_server::testing::TestServer;

/// How soon after the signal the run must have ended: far less than the waits it
/// interrupts (30 s and more), far more than a busy machine takes to act on it.
const PROMPT: Duration = Duration::from_secs(15);

fn bench(srv: &TestServer, args: &[&str]) -> Child {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.arg("bench").args(args);
    srv.apply_env(&mut c);
    c.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pgsurge")
}

/// Waits for the child; past `limit` it is killed (a hang fails the test instead of
/// blocking the suite) and its output so far is returned.
fn wait_or_kill(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    while start.elapsed() < limit {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    child.wait_with_output().expect("wait")
}

fn signal(pid: i32, sig: i32) {
    // SAFETY: plain kill(2) on a process this test started (or a server backend).
    let rc = unsafe { libc::kill(pid, sig) };
    assert_eq!(
        rc,
        0,
        "kill({pid}, {sig}): {}",
        std::io::Error::last_os_error()
    );
}

fn write_script(dir: &Path, text: &str) -> String {
    let p = dir.join("script.sql");
    std::fs::write(&p, text).expect("write script");
    p.to_string_lossy().into_owned()
}

/// Runs `sql` (one number out) on `db` until `ok` accepts the value; panics after 60 s.
fn wait_for(srv: &TestServer, db: &str, sql: &str, ok: impl Fn(i64) -> bool) -> i64 {
    let start = Instant::now();
    loop {
        let v: i64 = srv.psql(db, sql).trim().parse().expect("a number");
        if ok(v) {
            return v;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "still {v} after 60 s: {sql}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The run's backends: those of the database but not the ones asking about them (the
/// backend of an earlier question may linger a moment after its psql is gone).
const RUN_BACKENDS: &str = "from pg_stat_activity where datname = current_database() \
     and pid <> pg_backend_pid() and query not like '%pg_stat_activity%'";

/// How many of the run's backends are in `state` with `marker` in their query.
fn backends_with(marker: &str, state: &str) -> String {
    format!("select count(*) {RUN_BACKENDS} and state = '{state}' and query like '%{marker}%'")
}

/// How many connections the run has.
fn connections() -> String {
    format!("select count(*) {RUN_BACKENDS}")
}

/// A script whose first transaction per client completes at once (`-D done=0`) and
/// whose next ones run `long`.
fn first_quick_then(long: &str) -> String {
    format!("\\if :done\n{long}\n\\else\n\\set done 1\nSELECT 1 AS quick;\n\\endif\n")
}

fn processed(stdout: &str) -> &str {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix("number of transactions actually processed: "))
        .unwrap_or("<none>")
}

/// The outcome of a run stopped by `sig`: within [`PROMPT`], exit status 2, the
/// report and the interruption line, and no client reported as aborted. Returns stdout.
fn assert_stopped_promptly(out: &Output, elapsed: Duration, sig: &str) -> String {
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        elapsed < PROMPT,
        "ended {elapsed:?} after {sig}\n{stdout}\n{stderr}"
    );
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert_ne!(processed(&stdout), "<none>", "no report: {stdout}");
    assert!(
        stderr.contains(&format!(
            "Run was interrupted by {sig}; the above results cover the transactions completed before it."
        )),
        "{stderr}"
    );
    assert!(!stderr.contains("aborted"), "{stderr}");
    stdout
}

/// Waits until `sig`, sent to process `pid`, has been delivered (it is pending no
/// more); panics after a minute.
fn wait_delivered(pid: i32, sig: i32) {
    let bit = 1u64 << (sig - 1);
    let start = Instant::now();
    loop {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).expect("status");
        let pending = status
            .lines()
            .filter_map(|l| {
                l.strip_prefix("ShdPnd:")
                    .or_else(|| l.strip_prefix("SigPnd:"))
            })
            .map(|v| u64::from_str_radix(v.trim(), 16).expect("a signal mask"))
            .fold(0, |a, b| a | b);
        if pending & bit == 0 {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "{sig} still pending"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Resumes a backend stopped with SIGSTOP when the test ends, passed or not.
struct Resume(i32);

impl Drop for Resume {
    fn drop(&mut self) {
        // SAFETY: plain kill(2); the backend may have gone already.
        unsafe { libc::kill(self.0, libc::SIGCONT) };
    }
}

#[test]
fn sigint_ends_a_long_sleep_at_once_with_the_report() {
    let srv = TestServer::shared();
    let db = srv.create_database("interrupt_sleep");
    let dir = pgsurge_testkit::scratch_dir("bench-interrupt");
    let script = write_script(dir.path(), &first_quick_then("\\sleep 120 s"));
    let child = bench(
        srv,
        &[
            "-n", "-f", &script, "-c", "2", "-j", "2", "-D", "done=0", "-T", "600", &db,
        ],
    );
    // Both clients completed their first transaction and now sleep.
    wait_for(srv, &db, &backends_with("quick", "idle"), |n| n == 2);
    let start = Instant::now();
    signal(child.id() as i32, libc::SIGINT);
    let out = wait_or_kill(child, Duration::from_secs(30));
    let stdout = assert_stopped_promptly(&out, start.elapsed(), "SIGINT");
    // The two completed transactions, not the two interrupted in their sleep.
    assert_eq!(processed(&stdout), "2", "{stdout}");
    assert!(stdout.contains("tps = "), "{stdout}");
}

/// Every statement running at the SIGINT is cancelled on the server; 17 clients per
/// thread, so the threads run their clients as when they are out of cache.
#[test]
fn sigint_cancels_running_statements_on_the_server() {
    let srv = TestServer::shared();
    let db = srv.create_database("interrupt_cancel");
    let marker = format!("cancel_marker_{db}");
    let dir = pgsurge_testkit::scratch_dir("bench-interrupt");
    let long = format!("SELECT pg_sleep(60) AS {marker};");
    let script = write_script(dir.path(), &first_quick_then(&long));
    let child = bench(
        srv,
        &[
            "-n", "-f", &script, "-c", "34", "-j", "2", "-D", "done=0", "-T", "600", &db,
        ],
    );
    let running = backends_with(&marker, "active");
    wait_for(srv, &db, &running, |n| n == 34);
    let start = Instant::now();
    signal(child.id() as i32, libc::SIGINT);
    let out = wait_or_kill(child, Duration::from_secs(30));
    let stdout = assert_stopped_promptly(&out, start.elapsed(), "SIGINT");
    assert_eq!(processed(&stdout), "34", "{stdout}");
    assert!(stdout.contains("tps = "), "{stdout}");
    // The statements were cancelled on the server: no backend runs them any more (a
    // backend whose client merely went away would sleep on for a minute) ...
    let gone = Instant::now();
    wait_for(srv, &db, &running, |n| n == 0);
    assert!(
        gone.elapsed() < Duration::from_secs(30),
        "{:?}",
        gone.elapsed()
    );
    // ... and the server logged each as cancelled by request.
    let log = std::fs::read_to_string(srv.cluster().log_file()).expect("server log");
    let lines: Vec<&str> = log.lines().collect();
    let cancelled = lines
        .windows(2)
        .filter(|w| {
            w[0].contains("ERROR:  canceling statement due to user request")
                && w[1].contains("STATEMENT:")
                && w[1].contains(&marker)
        })
        .count();
    assert_eq!(cancelled, 34, "server log:\n{log}");
}

#[test]
fn sigint_ends_rate_limited_waits_at_once() {
    let srv = TestServer::shared();
    let db = srv.create_database("interrupt_rate");
    let dir = pgsurge_testkit::scratch_dir("bench-interrupt");
    let script = write_script(dir.path(), "SELECT 1;\n");
    // One transaction per 100 s on average: the clients wait for their scheduled starts.
    let child = bench(
        srv,
        &[
            "-n",
            "-f",
            &script,
            "-c",
            "2",
            "-j",
            "2",
            "-R",
            "0.01",
            "--random-seed=7",
            "-T",
            "600",
            &db,
        ],
    );
    wait_for(srv, &db, &connections(), |n| n == 2);
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    signal(child.id() as i32, libc::SIGINT);
    let out = wait_or_kill(child, Duration::from_secs(30));
    let stdout = assert_stopped_promptly(&out, start.elapsed(), "SIGINT");
    let n: u64 = processed(&stdout).parse().expect("processed count");
    assert!(n <= 2, "{stdout}");
}

#[test]
fn sigterm_ends_a_sleep_of_2147_s_at_once() {
    let srv = TestServer::shared();
    let db = srv.create_database("interrupt_term");
    let dir = pgsurge_testkit::scratch_dir("bench-interrupt");
    let script = write_script(dir.path(), "\\sleep 2147 s\n");
    let child = bench(srv, &["-n", "-f", &script, "-c", "1", &db]);
    wait_for(srv, &db, &connections(), |n| n == 1);
    std::thread::sleep(Duration::from_millis(300));
    let start = Instant::now();
    signal(child.id() as i32, libc::SIGTERM);
    let out = wait_or_kill(child, Duration::from_secs(30));
    let stdout = assert_stopped_promptly(&out, start.elapsed(), "SIGTERM");
    assert_eq!(processed(&stdout), "0/10", "{stdout}");
}

/// Starts a run whose one client completes a transaction, then runs a long statement
/// on a backend that is stopped (SIGSTOP), so a cancel cannot end it; returns the run
/// and the guard that resumes the backend.
fn run_with_a_frozen_statement(srv: &TestServer, db: &str, dir: &Path) -> (Child, Resume) {
    let marker = format!("frozen_marker_{db}");
    let long = format!("SELECT pg_sleep(30) AS {marker};");
    let script = write_script(dir, &first_quick_then(&long));
    let child = bench(
        srv,
        &[
            "-n", "-f", &script, "-c", "1", "-D", "done=0", "-T", "600", db,
        ],
    );
    wait_for(srv, db, &backends_with(&marker, "active"), |n| n == 1);
    let pids = srv.psql(
        db,
        &format!("select pid {RUN_BACKENDS} and state = 'active' and query like '%{marker}%'"),
    );
    let pid = pids
        .trim()
        .parse()
        .unwrap_or_else(|e| panic!("backend pid: {e}: {pids:?}"));
    signal(pid, libc::SIGSTOP);
    (child, Resume(pid))
}

/// A statement the cancel does not end (its backend is stopped) holds the report back
/// for about a second only.
#[test]
fn the_report_comes_when_a_cancel_does_not_end_the_statement() {
    let srv = TestServer::shared();
    let db = srv.create_database("interrupt_frozen");
    let dir = pgsurge_testkit::scratch_dir("bench-interrupt");
    let (child, _resume) = run_with_a_frozen_statement(srv, &db, dir.path());
    let start = Instant::now();
    signal(child.id() as i32, libc::SIGINT);
    let out = wait_or_kill(child, Duration::from_secs(40));
    let elapsed = start.elapsed();
    let stdout = assert_stopped_promptly(&out, elapsed, "SIGINT");
    assert_eq!(processed(&stdout), "1", "{stdout}");
    // It did wait for the server's answer first.
    assert!(elapsed >= Duration::from_millis(900), "{elapsed:?}");
}

/// A second SIGINT while the first still waits for a statement ends the process at
/// once, killed by SIGINT as if no handler were installed (a shell shows status 130),
/// without a report.
#[test]
fn a_second_sigint_ends_the_wind_down_at_once() {
    use std::os::unix::process::ExitStatusExt;
    let srv = TestServer::shared();
    let db = srv.create_database("interrupt_twice");
    let dir = pgsurge_testkit::scratch_dir("bench-interrupt");
    let (mut child, _resume) = run_with_a_frozen_statement(srv, &db, dir.path());
    // The second signal right after the first was taken (two pending at once would
    // be one), while the run waits for the statement's answer or its grace is over.
    signal(child.id() as i32, libc::SIGINT);
    wait_delivered(child.id() as i32, libc::SIGINT);
    assert!(
        child.try_wait().expect("try_wait").is_none(),
        "exited before the statement it cancelled was answered or its grace was over"
    );
    let start = Instant::now();
    signal(child.id() as i32, libc::SIGINT);
    let out = wait_or_kill(child, Duration::from_secs(40));
    let elapsed = start.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(elapsed < PROMPT, "took {elapsed:?} after the second SIGINT");
    assert_eq!(
        out.status.signal(),
        Some(libc::SIGINT),
        "status {:?}\n{stdout}\n{stderr}",
        out.status
    );
    assert!(
        !stdout.contains("number of transactions actually processed"),
        "{stdout}"
    );
}
