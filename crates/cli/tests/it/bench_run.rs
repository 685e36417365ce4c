//! `pgsurge bench` runs against a throwaway server: every query mode, -C, -t/-T,
//! weighted scripts, \gset/\aset, pipelines, retried serialization failures, deadlocks,
//! missing tables, a server shut down mid-run, SIGINT during a busy run (a report; the
//! prompt stop in its other cases is in `bench_interrupt.rs`).

use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pgsurge_server::testing::{TestServer, TestServerOptions};

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pgsurge")
}

fn bench_cmd(srv: &TestServer, args: &[&str]) -> Command {
    let mut c = Command::new(bin());
    c.arg("bench").args(args);
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    c.env_remove("PGOPTIONS");
    c
}

struct Run {
    stdout: String,
    stderr: String,
    code: i32,
}

fn run(srv: &TestServer, args: &[&str]) -> Run {
    let out: Output = bench_cmd(srv, args).output().expect("run pgsurge");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

/// Waits for a child's output; past `limit` the child is killed (so a hang fails the test
/// instead of blocking the suite) and its output so far is returned.
fn wait_or_kill(mut child: std::process::Child, limit: Duration) -> Output {
    let start = Instant::now();
    while start.elapsed() < limit {
        if child.try_wait().expect("try_wait").is_some() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let _ = child.kill();
    child.wait_with_output().expect("wait")
}

fn line_value<'a>(out: &'a str, prefix: &str) -> Option<&'a str> {
    out.lines().find_map(|l| l.strip_prefix(prefix))
}

fn processed(out: &str) -> String {
    line_value(out, "number of transactions actually processed: ")
        .unwrap_or("<none>")
        .to_string()
}

fn initialized_db(srv: &TestServer, name: &str) -> String {
    let db = srv.create_database(name);
    let r = run(srv, &["-i", "-s", "1", "-q", &db]);
    assert_eq!(r.code, 0, "init failed: {}", r.stderr);
    db
}

/// Waits until `db` has `n` client sessions, asking from the `postgres` database.
fn wait_for_sessions(srv: &TestServer, db: &str, n: usize) {
    let sql = format!(
        "SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}' \
         AND backend_type = 'client backend'"
    );
    let start = Instant::now();
    while srv.psql("postgres", &sql).trim() != n.to_string() {
        assert!(start.elapsed() < Duration::from_secs(60), "no {n} sessions");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Waits until the server has counted `n` more commits in `db` than `before`, asking
/// from the `postgres` database (so that the asking is not counted).
fn wait_for_commits(srv: &TestServer, db: &str, before: u64, n: u64) {
    let sql = format!("SELECT xact_commit FROM pg_stat_database WHERE datname = '{db}'");
    let start = Instant::now();
    loop {
        let now: u64 = srv.psql("postgres", &sql).trim().parse().expect("a count");
        if now >= before + n {
            return;
        }
        assert!(start.elapsed() < Duration::from_secs(60), "{now} commits");
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn write_script(dir: &Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).expect("write script");
    p.to_string_lossy().into_owned()
}

#[test]
fn bench_every_query_mode_runs_builtins() {
    let srv = TestServer::shared();
    let db = initialized_db(srv, "modes");
    for mode in ["simple", "extended", "prepared"] {
        for b in ["tpcb-like", "simple-update", "select-only"] {
            let r = run(
                srv,
                &[
                    "-n", "-M", mode, "-b", b, "-c", "3", "-j", "2", "-t", "15", &db,
                ],
            );
            assert_eq!(r.code, 0, "{mode} {b}: {}", r.stderr);
            assert_eq!(processed(&r.stdout), "45/45", "{mode} {b}:\n{}", r.stdout);
            assert_eq!(line_value(&r.stdout, "query mode: "), Some(mode));
            assert!(r.stdout.starts_with("pgbench (18.0"), "{}", r.stdout);
        }
    }
    // history rows prove the updates really ran: 3 modes × 2 writing scripts × 45
    let n = srv.psql(&db, "select count(*) from pgbench_history");
    assert_eq!(n.trim(), "270");
}

#[test]
fn bench_connect_per_transaction_and_duration() {
    let srv = TestServer::shared();
    let db = initialized_db(srv, "connect");
    let r = run(srv, &["-n", "-C", "-S", "-c", "2", "-t", "10", &db]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(processed(&r.stdout), "20/20");
    assert!(
        r.stdout.contains("average connection time = "),
        "{}",
        r.stdout
    );
    assert!(r.stdout.contains("(including reconnection times)"));

    let start = Instant::now();
    let r = run(srv, &["-n", "-S", "-T", "2", "-c", "2", &db]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Ended by -T (the time to start and connect aside).
    assert!(start.elapsed() < Duration::from_secs(30));
    assert_eq!(line_value(&r.stdout, "duration: "), Some("2 s"));
    let n: u64 = processed(&r.stdout).parse().expect("count in -T mode");
    assert!(n > 10, "{n} transactions in 2 s");
}

/// The `-T` end is noticed while every client waits: on the server or in a `\sleep`.
/// Each transaction takes 0.35 s, so each client starts 3 before the end (the third
/// at 0.7 s, or up to 0.15 s later per transaction on a busy machine) and none after
/// the third ends at 1.05 s, as pgbench counts.
#[test]
fn bench_duration_ends_while_clients_wait() {
    let srv = TestServer::shared();
    let dir = pgsurge_testkit::scratch_dir("bench-run");
    for (name, text, want) in [
        ("server.sql", "SELECT pg_sleep(0.35);\n", "6"),
        ("sleep.sql", "\\sleep 350 ms\nSELECT 1;\n", "6"),
    ] {
        let script = write_script(dir.path(), name, text);
        let start = Instant::now();
        let child = bench_cmd(
            srv,
            &["-n", "-f", &script, "-c", "2", "-T", "1", "postgres"],
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pgsurge");
        let out = wait_or_kill(child, Duration::from_secs(30));
        let took = start.elapsed();
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(processed(&stdout), want, "{name}: {stdout}");
        assert!(took < Duration::from_secs(10), "{name}: {took:?}");
    }
}

#[test]
fn bench_weighted_scripts_and_per_command_report() {
    let srv = TestServer::shared();
    let db = initialized_db(srv, "weights");
    let r = run(
        srv,
        &[
            "-n",
            "-b",
            "simple-update@0",
            "-b",
            "select-only@3",
            "-t",
            "30",
            "-r",
            "--random-seed=7",
            &db,
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(r.stdout.contains("transaction type: multiple scripts"));
    assert!(r.stdout.contains("SQL script 1: <builtin: simple update>\n - weight: 0 (targets 0.0% of total)\n - 0 transactions (0.0% of total)"), "{}", r.stdout);
    assert!(
        r.stdout.contains(" - 30 transactions (100.0% of total)"),
        "{}",
        r.stdout
    );
    assert!(r
        .stdout
        .contains("statement latencies in milliseconds and failures:"));
}

#[test]
fn bench_gset_aset_and_pipelines() {
    let srv = TestServer::shared();
    let db = srv.create_database("gset");
    let dir = pgsurge_testkit::scratch_dir("bench-run");
    let f = write_script(
        dir.path(),
        "g.sql",
        "SELECT 3 AS three, 'x' AS ex \\gset p_\n\
         \\set four :p_three + 1\n\
         SELECT :four AS f1 \\; SELECT 5 AS f2 \\aset\n\
         \\set d debug(:f1 + :f2)\n",
    );
    let r = run(srv, &["-n", "-t", "1", "-f", &f, &db]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains("debug(script=0,command=4): int 9"),
        "{}",
        r.stderr
    );

    let p = write_script(
        dir.path(),
        "p.sql",
        "\\startpipeline\nSELECT 1;\nSELECT 2;\n\\syncpipeline\nSELECT 3;\n\\endpipeline\n",
    );
    for mode in ["extended", "prepared"] {
        let r = run(
            srv,
            &["-n", "-M", mode, "-t", "5", "-c", "2", "-f", &p, &db],
        );
        assert_eq!(r.code, 0, "{mode}: {}", r.stderr);
        assert_eq!(processed(&r.stdout), "10/10");
    }
    let r = run(srv, &["-n", "-M", "simple", "-t", "1", "-f", &p, &db]);
    assert_eq!(r.code, 2);
    assert!(r.stderr.contains("client 0 aborted in command 0 (startpipeline) of script 0; cannot use pipeline mode with the simple query protocol"), "{}", r.stderr);

    let bad = write_script(dir.path(), "b.sql", "SELECT 1 WHERE false \\gset\n");
    let r = run(srv, &["-n", "-t", "1", "-f", &bad, &db]);
    assert_eq!(r.code, 2);
    assert!(
        r.stderr
            .contains("client 0 script 0 command 0 query 0: expected one row, got 0"),
        "{}",
        r.stderr
    );
    assert!(r
        .stderr
        .contains("Run was aborted; the above results are incomplete."));
}

/// With more clients per thread than fit in cache the driver lends its own buffers to the
/// client it runs (engine `driver::Lent`). Replies of hundreds of kB arrive in many reads
/// and requests as large do not fit the socket at once, so clients keep lent buffers
/// with a partial message in them while others run: every value must still reach the
/// right client whole, in every query mode, with a pipeline among the scripts.
/// (With 10 clients per thread nothing is lent: the last run takes the plain path.)
#[test]
fn bench_many_clients_per_thread_with_large_requests_and_replies() {
    let srv = TestServer::shared();
    let db = srv.create_database("crowded");
    let dir = pgsurge_testkit::scratch_dir("bench-run");
    // The server checks what it gets back: a wrong or cut value divides by zero.
    let quoted = "\\set n random(1, 3)\n\
         SELECT :n AS m, repeat(chr(64 + :client_id % 26), 100000 * :n) AS big, :client_id AS who \\gset\n\
         SELECT 1 / (length(':big') = 100000 * :m AND :who::int = :client_id\n\
           AND ':big' = repeat(chr(64 + :client_id % 26), 100000 * :n))::int AS one;\n";
    let typed = quoted
        .replace("length(':big')", "length(:big::text)")
        .replace("':big' =", ":big::text =");
    // \gset is not allowed in a pipeline: large replies there are only read through.
    let pipelined =
        "\\startpipeline\nSELECT repeat('y', 150000);\nSELECT 2 AS two;\n\\endpipeline\n\
         SELECT repeat('z', 120000);\n";
    let f_quoted = write_script(dir.path(), "q.sql", quoted);
    let f_typed = write_script(dir.path(), "t.sql", &typed);
    let f_pipe = write_script(dir.path(), "p.sql", pipelined);
    for (mode, jobs, scripts) in [
        ("simple", "1", vec![f_quoted.as_str()]),
        ("extended", "1", vec![f_typed.as_str(), f_pipe.as_str()]),
        ("prepared", "1", vec![f_typed.as_str(), f_pipe.as_str()]),
        ("prepared", "4", vec![f_typed.as_str(), f_pipe.as_str()]),
    ] {
        let mut args = vec!["-n", "-M", mode, "-c", "40", "-j", jobs, "-t", "3"];
        for f in &scripts {
            args.extend(["-f", f]);
        }
        args.push(&db);
        // A request or reply lost between clients would leave one waiting for ever.
        let child = bench_cmd(srv, &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        let out = wait_or_kill(child, Duration::from_secs(60));
        let r = Run {
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            code: out.status.code().unwrap_or(-1),
        };
        assert_eq!(r.code, 0, "{mode} -j {jobs}: {}", r.stderr);
        assert_eq!(processed(&r.stdout), "120/120", "{mode}: {}", r.stdout);
        assert!(
            r.stdout
                .contains("number of failed transactions: 0 (0.000%)"),
            "{mode}: {}",
            r.stdout
        );
    }
}

#[test]
fn bench_serialization_failures_are_retried() {
    let srv = TestServer::shared();
    let db = srv.create_database("serial");
    srv.psql(
        &db,
        "create table hot(id int primary key, v int); insert into hot values (1, 0)",
    );
    let dir = pgsurge_testkit::scratch_dir("bench-run");
    let f = write_script(
        dir.path(),
        "s.sql",
        "BEGIN;\nSELECT v FROM hot WHERE id = 1;\n\\sleep 2 ms\nUPDATE hot SET v = v + 1 WHERE id = 1;\nEND;\n",
    );
    let mut c = bench_cmd(
        srv,
        &[
            "-n",
            "-c",
            "4",
            "-t",
            "10",
            "-f",
            &f,
            "--max-tries=20",
            "--failures-detailed",
            "-r",
            &db,
        ],
    );
    c.env(
        "PGOPTIONS",
        "-c default_transaction_isolation=repeatable\\ read",
    );
    let out = c.output().expect("run");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let retried = line_value(&stdout, "number of transactions retried: ").expect("retried line");
    let n: u64 = retried
        .split(' ')
        .next()
        .and_then(|s| s.parse().ok())
        .expect("number");
    assert!(n > 0, "no retries happened:\n{stdout}");
    let (ok, failed) = (
        processed(&stdout),
        line_value(&stdout, "number of serialization failures: "),
    );
    let ok: u64 = ok
        .split('/')
        .next()
        .and_then(|s| s.parse().ok())
        .expect("processed");
    let failed: u64 = failed
        .and_then(|s| s.split(' ').next()?.parse().ok())
        .expect("failures");
    assert_eq!(ok + failed, 40, "{stdout}");
    let v: u64 = srv
        .psql(&db, "select v from hot")
        .trim()
        .parse()
        .expect("v");
    assert_eq!(v, ok, "each successful transaction incremented once");
}

#[test]
fn bench_deadlocks_are_counted_as_failures() {
    let srv = TestServer::shared();
    let db = srv.create_database("deadlock");
    srv.psql(
        &db,
        "create table d(id int primary key, v int); insert into d values (1,0),(2,0)",
    );
    let dir = pgsurge_testkit::scratch_dir("bench-run");
    // Clients take the two rows in opposite orders depending on their id.
    let f = write_script(
        dir.path(),
        "d.sql",
        "\\set a 1 + :client_id % 2\n\\set b 2 - :client_id % 2\nBEGIN;\nUPDATE d SET v = v + 1 WHERE id = :a;\n\\sleep 20 ms\nUPDATE d SET v = v + 1 WHERE id = :b;\nEND;\n",
    );
    let r = run(
        srv,
        &[
            "-n",
            "-c",
            "2",
            "-j",
            "2",
            "-t",
            "6",
            "-f",
            &f,
            "--failures-detailed",
            &db,
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let dl = line_value(&r.stdout, "number of deadlock failures: ").expect("deadlock line");
    let n: u64 = dl
        .split(' ')
        .next()
        .and_then(|s| s.parse().ok())
        .expect("n");
    assert!(n > 0, "{}", r.stdout);
}

#[test]
fn bench_missing_tables_hint_and_exit_1() {
    let srv = TestServer::shared();
    let db = srv.create_database("empty");
    let r = run(srv, &["-S", "-t", "1", &db]);
    assert_eq!(r.code, 1);
    assert!(r.stderr.contains("pgbench: error: could not count number of branches: ERROR:  relation \"pgbench_branches\" does not exist"), "{}", r.stderr);
    assert!(r.stderr.contains(&format!("pgbench: hint: Perhaps you need to do initialization (\"pgbench -i\") in database \"{db}\".")), "{}", r.stderr);
}

/// Regression: the hang-up arrived in the same edge-triggered event as the server's
/// FATAL message; the driver read the message, skipped the EOF read, and polled forever.
#[test]
fn bench_server_shutdown_mid_run_aborts_clients_and_reports() {
    let srv = TestServer::start(TestServerOptions::default());
    let db = initialized_db(&srv, "shutdown");
    let child = bench_cmd(&srv, &["-n", "-S", "-c", "4", "-j", "2", "-T", "30", &db])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // The run starts once its four clients are connected.
    wait_for_sessions(&srv, &db, 4);
    let start = Instant::now();
    srv.cluster().stop();
    let out = wait_or_kill(child, Duration::from_secs(60));
    assert!(
        start.elapsed() < Duration::from_secs(60),
        "hung after shutdown"
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("number of transactions actually processed: "),
        "{stdout}"
    );
    assert!(
        stderr.contains("Run was aborted; the above results are incomplete."),
        "{stderr}"
    );
    assert!(stderr.contains("client "), "{stderr}");
}

#[test]
fn bench_sigint_stops_gracefully_with_report() {
    let srv = TestServer::shared();
    let db = initialized_db(srv, "sigint");
    srv.wait_for_sessions_to_end(&db);
    let before: u64 = srv
        .psql(
            "postgres",
            &format!("SELECT xact_commit FROM pg_stat_database WHERE datname = '{db}'"),
        )
        .trim()
        .parse()
        .expect("a count");
    let child = bench_cmd(srv, &["-n", "-S", "-c", "2", "-T", "60", &db])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    // Ten commits: beyond the few of the set-up, one of the two clients has committed
    // more than one, so it has completed one (each sends its next only when it has the
    // answer to the one before).
    wait_for_commits(srv, &db, before, 10);
    let start = Instant::now();
    // SAFETY-free: send SIGINT with the kill command.
    let ok = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .expect("kill");
    assert!(ok.success());
    let out = child.wait_with_output().expect("wait");
    // Stopped by the signal, long before -T 60.
    assert!(start.elapsed() < Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    let n: u64 = processed(&stdout).parse().expect("processed count");
    assert!(n > 0, "{stdout}");
    assert!(stdout.contains("tps = "), "{stdout}");
    assert!(stderr.contains("Run was interrupted by SIGINT"), "{stderr}");
}

/// pgbench's `doConnect`: with no password given and a server that wants one, it prompts
/// `Password: ` once (on stderr/stdin without a terminal), and every later connection of
/// the run, all clients included, uses that password. Compared with the real pgbench.
#[test]
fn bench_prompts_for_a_password_once_like_pgbench() {
    let srv = TestServer::start(TestServerOptions {
        hba: vec!["host all pwuser 127.0.0.1/32 scram-sha-256".into()],
        ..Default::default()
    });
    srv.psql(
        "postgres",
        "create role pwuser login password 'prompt-pw' createdb",
    );
    let db = srv.create_database("pwprompt");
    srv.psql(&db, "grant all on schema public to pwuser");
    let port = srv.port().to_string();
    let common = ["-h", "127.0.0.1", "-p", &port, "-U", "pwuser"];
    let run_with_stdin = |program: &str, pre: &[&str], args: &[&str], input: &str| {
        use std::io::Write as _;
        // setsid: no controlling terminal, so the prompt goes to stderr and the answer
        // comes from stdin, as with a wrapper that pipes the password in.
        let mut c = Command::new("setsid");
        c.arg("-w").arg(program).args(pre).args(common).args(args);
        for (k, v) in srv.env() {
            c.env(k, v);
        }
        c.env_remove("PGPASSWORD").env_remove("PGOPTIONS");
        let mut child = c
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn");
        child
            .stdin
            .take()
            .expect("stdin")
            .write_all(input.as_bytes())
            .expect("write password");
        let out = wait_or_kill(child, Duration::from_secs(60));
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, _, err) = run_with_stdin(bin(), &["bench"], &["-i", "-s", "1", &db], "prompt-pw\n");
    assert_eq!(code, 0, "{err}");
    assert!(err.starts_with("Password: "), "{err}");
    assert_eq!(err.matches("Password: ").count(), 1, "{err}");
    // Four clients on two threads connect after setup with the prompted password.
    let (code, out, err) = run_with_stdin(
        bin(),
        &["bench"],
        &["-n", "-S", "-c", "4", "-j", "2", "-t", "20", &db],
        "prompt-pw\n",
    );
    assert_eq!(code, 0, "{err}");
    assert_eq!(err.matches("Password: ").count(), 1, "{err}");
    assert_eq!(processed(&out), "80/80", "{out}");
    // A wrong answer: one prompt, libpq's authentication failure, exit 1 — as pgbench.
    let ours = run_with_stdin(bin(), &["bench"], &["-n", "-S", "-t", "1", &db], "wrong\n");
    if Path::new("/usr/bin/pgbench").exists() {
        let theirs = run_with_stdin(
            "/usr/bin/pgbench",
            &[],
            &["-n", "-S", "-t", "1", &db],
            "wrong\n",
        );
        assert_eq!(ours.0, theirs.0, "ours: {}\ntheirs: {}", ours.2, theirs.2);
        assert_eq!(ours.2, theirs.2);
    }
    assert_eq!(ours.0, 1, "{}", ours.2);
    assert!(
        ours.2
            .starts_with("Password: \npgbench: error: connection to server at \"127.0.0.1\""),
        "{}",
        ours.2
    );
    assert!(
        ours.2
            .contains("password authentication failed for user \"pwuser\""),
        "{}",
        ours.2
    );
}

/// `program bench-args…` with the open-files limit (soft and hard) set to `limit` and
/// every inherited descriptor above the standard streams closed, as a fresh shell
/// with `ulimit -n LIMIT` would run it.
fn run_with_open_files(srv: &TestServer, program: &str, args: &[&str], limit: u64) -> Run {
    use std::os::unix::process::CommandExt;
    let mut c = Command::new(program);
    if program == bin() {
        c.arg("bench");
    }
    c.args(args);
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    // SAFETY: between fork and exec only async-signal-safe calls: setrlimit and
    // close_range, with no allocation.
    unsafe {
        c.pre_exec(move || {
            let lim = libc::rlimit {
                rlim_cur: limit,
                rlim_max: limit,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            libc::syscall(libc::SYS_close_range, 3u32, u32::MAX, 0u32);
            Ok(())
        });
    }
    let out = c.output().expect("run");
    Run {
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        code: out.status.code().unwrap_or(-1),
    }
}

#[test]
fn bench_counts_every_descriptor_before_the_run() {
    let srv = TestServer::shared();
    let db = srv.create_database("open_files");
    let init = run(srv, &["-i", "-s", "1", "-q", &db]);
    assert_eq!(init.code, 0, "{}", init.stderr);
    let args = ["-n", "-S", "-c", "30", "-j", "2", "-T", "1", db.as_str()];
    // 36 descriptors: pgbench needs 33 (30 sockets and the standard streams); pgsurge
    // also one poll set per thread and the stop's eventfd, and does without its timers.
    if let Some(pgbench) = pgsurge_testkit::reference_pgbench() {
        let pgbench = run_with_open_files(srv, pgbench, &args, 36);
        assert_eq!(pgbench.code, 0, "pgbench runs there: {}", pgbench.stderr);
    }
    let at_36 = run_with_open_files(srv, bin(), &args, 36);
    assert_eq!(at_36.code, 0, "{}", at_36.stderr);
    assert!(at_36.stdout.contains("tps = "), "{}", at_36.stdout);
    // One fewer than the run needs: refused before its clients connect, in pgbench's words,
    // instead of a thread failing in the middle.
    let at_35 = run_with_open_files(srv, bin(), &args, 35);
    assert_eq!(at_35.code, 1, "{}", at_35.stderr);
    assert!(
        at_35
            .stderr
            .contains("need at least 36 open files, but system limit is 35"),
        "{}",
        at_35.stderr
    );
    assert!(!at_35.stderr.contains("epoll_create1"), "{}", at_35.stderr);
    assert!(
        !at_35.stdout.contains("transactions actually processed"),
        "no report: {}",
        at_35.stdout
    );
}
