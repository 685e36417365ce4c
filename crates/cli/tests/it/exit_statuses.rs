//! Every exit status of the README's table, each given by a real command: 0 done, 1
//! failed, 2 usage error, 3 nothing to act on (the same for `server status`, `server
//! stop`, `server stop --all`, `server env`, `server builds`, `server builds --prune` and
//! `report`), 3 done with the answer no (a campaign with a failed test, `dist wait` whose
//! server and generators disagree on commits), 4 a threshold
//! missed (in `cli_outputs::thresholds_fail_a_campaign_with_a_summary`), 130
//! interrupted (`campaign run` and `quickstart`). A status that needs a PostgreSQL build (`bisect` with nothing to
//! bisect) is given by the same constant as the others.

use std::path::Path;
use std::process::{Command, Output};
use std::time::{Duration, Instant};

use pgsurge_server::testing::TestServer;

fn pgsurge(dir: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.current_dir(dir)
        .env_remove("PGSURGE_STORE")
        .env("PGSURGE_CACHE_DIR", dir.join("cache"));
    c
}

fn run(dir: &Path, args: &[&str]) -> Output {
    pgsurge(dir).args(args).output().expect("run pgsurge")
}

fn text(o: &Output) -> String {
    format!(
        "status {:?}\nstdout:\n{}stderr:\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

fn assert_status(o: &Output, code: i32, stderr_says: &str) {
    assert_eq!(o.status.code(), Some(code), "{}", text(o));
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(
        said.contains(stderr_says),
        "{stderr_says:?} not said: {}",
        text(o)
    );
}

#[test]
fn status_0_done() {
    let dir = pgsurge_testkit::scratch_dir("exit-statuses");
    assert_status(&run(dir.path(), &["schema", "compare"]), 0, "\"$schema\"");
    assert_status(&run(dir.path(), &["workload", "list"]), 0, "tpcc");
}

#[test]
fn status_1_failed() {
    let dir = pgsurge_testkit::scratch_dir("exit-statuses");
    assert_status(
        &run(dir.path(), &["campaign", "plan", "no-such-campaign.toml"]),
        1,
        "no-such-campaign.toml",
    );
    assert_status(
        &run(dir.path(), &["workload", "show", "no-such-pack"]),
        1,
        "no-such-pack",
    );
}

#[test]
fn status_2_usage_error() {
    let dir = pgsurge_testkit::scratch_dir("exit-statuses");
    assert_status(
        &run(dir.path(), &["campaign", "run", "--no-such-option"]),
        2,
        "--no-such-option",
    );
    assert_status(&run(dir.path(), &["server"]), 2, "Usage");
}

#[test]
fn status_3_nothing_to_act_on_means_the_same_everywhere() {
    let dir = pgsurge_testkit::scratch_dir("exit-statuses");
    let state = dir.path().join("state");
    std::fs::create_dir_all(&state).unwrap();
    let sd = state.to_str().unwrap();
    for (args, says) in [
        (
            vec!["server", "status", "--state-dir", sd],
            "no pgsurge server",
        ),
        (
            vec!["server", "stop", "--state-dir", sd],
            "no server to stop",
        ),
        (
            vec!["server", "stop", "--all", "--state-dir", sd],
            "no server to stop",
        ),
        (
            vec!["server", "env", "--state-dir", sd],
            "no running server",
        ),
        (vec!["server", "builds"], "no builds in the cache"),
        (vec!["server", "builds", "--prune"], "removed 0 builds"),
    ] {
        assert_status(&run(dir.path(), &args), 3, says);
    }
    // An empty store: nothing to report, and nothing written.
    let store = dir.path().join("empty.db");
    drop(pgsurge_store::Store::open(store.to_str().unwrap()).unwrap());
    let out = run(
        dir.path(),
        &["report", "--store", store.to_str().unwrap(), "-o", "report"],
    );
    assert_status(&out, 3, "nothing to report");
    assert!(!dir.path().join("report/index.html").exists());
}

/// A campaign on the shared test server, one test of `script` for `duration`.
fn campaign(dir: &Path, srv: &TestServer, db: &str, script: &str, duration: u32) -> String {
    let sql = dir.join("script.sql");
    std::fs::write(&sql, script).unwrap();
    let file = dir.join("c.toml");
    std::fs::write(
        &file,
        format!(
            "[campaign]\nname = \"statuses\"\n[[target]]\nname = \"fx\"\nconninfo = \"{}\"\n\
             [matrix]\nscales = [1]\nclients = [1]\nscripts = [{{ file = \"{}\" }}]\n\
             [run]\nduration = {duration}\n[sampling]\nos = false\npg = false\n",
            srv.conninfo(db),
            sql.display()
        ),
    )
    .unwrap();
    file.display().to_string()
}

#[test]
fn status_3_done_and_the_answer_is_no() {
    let srv = TestServer::shared();
    let db = srv.create_database("exit_status_failed_test");
    let dir = pgsurge_testkit::scratch_dir("exit-statuses");
    let file = campaign(dir.path(), srv, &db, "SELECT * FROM no_such_table;\n", 1);
    let out = run(dir.path(), &["campaign", "run", "--store", "r.db", &file]);
    assert_status(&out, 3, "no_such_table");
}

/// `dist wait --server` names a database the generator did not load: the server
/// counted none of the generator's transactions, so the two disagree.
#[test]
fn status_3_when_server_and_generators_disagree_on_commits() {
    let srv = TestServer::shared();
    let db = srv.create_database("exit_status_generator");
    let idle = srv.create_database("exit_status_idle");
    let store = srv.create_database("exit_status_group_store");
    let dir = pgsurge_testkit::scratch_dir("exit-statuses");
    let with_env = |args: &[&str]| {
        let mut c = pgsurge(dir.path());
        for (k, v) in srv.env() {
            c.env(k, v);
        }
        c.args(args).output().expect("run pgsurge")
    };
    let store_arg = format!("--store={}", srv.conninfo(&store));
    assert_status(&with_env(&["bench", "-i", "-s", "1", "-q", &db]), 0, "done");
    let generator = with_env(&[
        "bench",
        "-n",
        "-S",
        "-c",
        "1",
        "-t",
        "50",
        "--generator-index=0",
        "--generator-count=1",
        &store_arg,
        "--group=g1",
        &db,
    ]);
    assert_status(&generator, 0, "in group \"g1\"");
    let wait = with_env(&[
        "dist",
        "wait",
        &store_arg,
        "--group",
        "g1",
        "-n",
        "1",
        "--timeout",
        "120",
        "--server",
        &srv.conninfo(&idle),
    ]);
    assert_status(&wait, 3, "more than 1 % apart");
}

#[test]
fn status_130_interrupted() {
    let srv = TestServer::shared();
    let db = srv.create_database("exit_status_interrupted");
    let dir = pgsurge_testkit::scratch_dir("exit-statuses");
    let file = campaign(dir.path(), srv, &db, "SELECT pg_sleep(0.01);\n", 600);
    let child = pgsurge(dir.path())
        .args(["campaign", "run", "--quiet", "--store", "r.db", &file])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Interrupted once the test runs: its session is on the server.
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let running: i64 = srv
            .psql(
                &db,
                "SELECT count(*) FROM pg_stat_activity \
                 WHERE query LIKE 'SELECT pg_sleep(0.01)%' AND pid <> pg_backend_pid()",
            )
            .trim()
            .parse()
            .unwrap();
        if running > 0 {
            break;
        }
        assert!(Instant::now() < deadline, "the test never started");
        std::thread::sleep(Duration::from_millis(100));
    }
    // SAFETY: kill(2) on the process this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_status(&out, 130, "run the same command again to resume");
}

/// The socket directory and port of the one server quickstart started under `tmp`, once
/// it listens.
fn socket_under(tmp: &Path) -> Option<(std::path::PathBuf, String)> {
    let mut stack = vec![tmp.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for e in std::fs::read_dir(&dir).into_iter().flatten().flatten() {
            let path = e.path();
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(port) = name.strip_prefix(".s.PGSQL.") {
                if !port.ends_with(".lock") {
                    return Some((dir, port.to_string()));
                }
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push(path);
            }
        }
    }
    None
}

/// A child process ended (SIGINT, then waited for) when a test fails before it has.
struct KillOnDrop(Option<std::process::Child>);

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            // SAFETY: kill(2) on the process this test started; SIGINT lets it clean up.
            unsafe { libc::kill(c.id() as i32, libc::SIGINT) };
            let _ = c.wait();
        }
    }
}

#[test]
fn status_130_interrupted_quickstart() {
    let dir = pgsurge_testkit::scratch_dir("exit-statuses");
    let tmp = crate::quickstart::server_tmp(dir.path());
    let child = pgsurge(dir.path())
        .args([
            "quickstart",
            "--duration",
            "600",
            "--repeats",
            "1",
            "--clients",
            "1",
            "--scale",
            "1",
            "--quiet",
            "--store",
            "r.db",
        ])
        .env("TMPDIR", &tmp)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let child = KillOnDrop(Some(child));
    // Interrupted once the first test's client runs its queries on the server.
    let psql = pgsurge_server::PgBinaries::discover()
        .unwrap()
        .bin_dir()
        .join("psql");
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let running = socket_under(&tmp).is_some_and(|(sock, port)| {
            let out = Command::new(&psql)
                .args([
                    "-X", "-A", "-t", "-U", "postgres", "-d", "postgres", "-p", &port,
                ])
                .arg("-h")
                .arg(&sock)
                .arg("-c")
                .arg(
                    "SELECT count(*) FROM pg_stat_activity \
                     WHERE query LIKE 'SELECT abalance FROM pgbench_accounts%'",
                )
                .output();
            out.is_ok_and(|o| {
                String::from_utf8_lossy(&o.stdout)
                    .trim()
                    .parse::<i64>()
                    .unwrap_or(0)
                    > 0
            })
        });
        if running {
            break;
        }
        assert!(Instant::now() < deadline, "the test never started");
        std::thread::sleep(Duration::from_millis(200));
    }
    let mut child = child;
    let child = child.0.take().expect("the child");
    // SAFETY: kill(2) on the process this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let out = child.wait_with_output().unwrap();
    assert_status(&out, 130, "quickstart interrupted");
    assert!(
        crate::quickstart::quickstart_postgres(&tmp).is_empty(),
        "left running: {:?}",
        crate::quickstart::quickstart_postgres(&tmp)
    );
}
