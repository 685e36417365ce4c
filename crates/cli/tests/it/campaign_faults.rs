//! Campaigns under abuse: two `campaign run` on one store at once, a server
//! restarted in the middle of a campaign, a campaign whose host does not resolve, a
//! store on read-only media, and passwords in every place a campaign can take one —
//! then a grep of everything written for them.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use pgsurge_server::testing::{TestServer, TestServerOptions};

use crate::campaigns::{export_runs, pgsurge, said as text, Campaign};

fn run(args: &[&str]) -> Output {
    pgsurge().args(args).output().unwrap()
}

#[test]
fn two_campaigns_on_one_store_at_once_one_runs_the_other_refuses() {
    let srv = TestServer::shared();
    let db = srv.create_database("two_at_once");
    let dir = pgsurge_testkit::scratch_dir("campaign-faults");
    // A new store: both also race to create its schema.
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "two"
[[target]]
name = "fx"
conninfo = "{}"
[matrix]
scales = [1]
clients = [1, 2, 3]
scripts = ["select-only"]
[run]
duration = 1
"#,
            srv.conninfo(&db)
        ),
    );
    let a = c.spawn(&[]);
    let b = c.spawn(&[]);
    let outs = [a.wait_with_output().unwrap(), b.wait_with_output().unwrap()];
    let ok: Vec<&Output> = outs.iter().filter(|o| o.status.success()).collect();
    let refused: Vec<&Output> = outs.iter().filter(|o| !o.status.success()).collect();
    assert_eq!(
        (ok.len(), refused.len()),
        (1, 1),
        "{}\n{}",
        text(&outs[0]),
        text(&outs[1])
    );
    // Refused by the set's lock in the store or by the server's lock, whichever it met
    // first (the set lock alone is tested in the store's tests).
    let why = String::from_utf8_lossy(&refused[0].stderr);
    assert!(
        (why.contains("is being run by another campaign")
            || why.contains("is being benchmarked by pgsurge campaign \"two\""))
            && refused[0].status.code() == Some(1),
        "{}",
        text(refused[0])
    );
    assert!(!why.contains("already exists"), "{why}");
    // Nothing discarded: the runner stored every test, once.
    let runs = c.runs();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
    // Once the first has ended, the same command resumes: nothing left to do.
    let again = c.run_ok(&[]);
    assert!(again.contains("3 already stored"), "{again}");
}

#[test]
fn two_campaigns_on_one_server_with_different_stores_one_runs_the_other_refuses() {
    let srv = TestServer::shared();
    let db = srv.create_database("one_server");
    let other_db = srv.create_database("one_server_other");
    let dir = pgsurge_testkit::scratch_dir("campaign-faults");
    let body = |name: &str, db: &str, clients: &str| {
        format!(
            r#"
[campaign]
name = "{name}"
[[target]]
name = "shared"
conninfo = "{}"
[matrix]
scales = [1]
clients = [{clients}]
scripts = ["select-only"]
[run]
duration = 2
"#,
            srv.conninfo(db)
        )
    };
    let first = Campaign::write_named(dir.path(), "first", &body("first", &db, "1, 2, 3"));
    let second = Campaign::write_named(dir.path(), "second", &body("second", &db, "1"));
    // Another database of the same server: not refused, but warned about.
    let third = Campaign::write_named(dir.path(), "third", &body("third", &other_db, "1"));
    let a = first.spawn(&[]);
    // Once the first holds the server.
    let deadline = Instant::now() + Duration::from_secs(60);
    let holders = || {
        srv.psql(
            "postgres",
            &format!(
                "SELECT count(*) FROM pg_locks l JOIN pg_database d ON d.oid = l.database \
                 WHERE locktype = 'advisory' AND granted AND d.datname = '{db}'"
            ),
        )
    };
    while holders().trim() == "0" {
        assert!(
            Instant::now() < deadline,
            "the first campaign never locked the server"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let b = second.run(&[]);
    let c = third.run(&[]);
    let a = a.wait_with_output().unwrap();
    assert!(a.status.success(), "{}", text(&a));
    assert_eq!(b.status.code(), Some(1), "{}", text(&b));
    let why = String::from_utf8_lossy(&b.stderr);
    assert!(
        why.contains("target \"shared\" is being benchmarked by pgsurge campaign \"first\""),
        "{why}"
    );
    assert!(c.status.success(), "{}", text(&c));
    assert!(
        String::from_utf8_lossy(&c.stderr)
            .contains("warning: target \"shared\": pgsurge campaign \"first\""),
        "{}",
        text(&c)
    );
    // The refused campaign stored nothing; the other kept every test.
    assert_eq!(second.stored().unwrap_or(0), 0);
    let runs = first.runs();
    assert_eq!(runs.len(), 3, "{runs:?}");
    assert!(runs.iter().all(|r| r["status"] == "ok"), "{runs:?}");
    // Ended, the lock is gone: the second one runs now.
    second.run_ok(&[]);
}

/// Runs `pg_ctl` on the server's data directory as the server's user.
fn pg_ctl(srv: &TestServer, args: &[&str]) -> Output {
    let pg_ctl = srv.bin_dir().join("pg_ctl");
    let mut cmd = if pgsurge_testkit::is_root() {
        let mut c = Command::new("runuser");
        c.args(["-u", srv.superuser(), "--"]).arg(pg_ctl);
        c
    } else {
        Command::new(pg_ctl)
    };
    cmd.arg("-D").arg(srv.data_dir()).args(args);
    cmd.stdin(Stdio::null()).output().unwrap()
}

/// Stops a server this test restarted itself (its fixture only knows the first
/// postmaster's pid), also when the test fails.
struct RestartedServer<'a>(&'a TestServer);

impl Drop for RestartedServer<'_> {
    fn drop(&mut self) {
        let _ = pg_ctl(self.0, &["stop", "-m", "immediate", "-w"]);
    }
}

#[test]
fn server_restarted_mid_campaign_is_waited_out_and_every_test_ends_ok() {
    let srv = TestServer::start(TestServerOptions::default());
    let db = srv.create_database("outage");
    let dir = pgsurge_testkit::scratch_dir("campaign-faults");
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "outage"
shuffle = false
[[target]]
name = "fx"
conninfo = "{}"
[matrix]
scales = [1]
clients = [1, 2, 3]
scripts = ["select-only"]
repeats = 2
[run]
duration = 1
outage_wait = "60s"
"#,
            srv.tcp_conninfo(&db)
        ),
    );
    let mut child = c.spawn(&[]);
    // Once a test is stored, take the server away for 4 seconds.
    c.wait_until_stored(&mut child, 1);
    let opts = std::fs::read_to_string(srv.data_dir().join("postmaster.opts")).unwrap();
    let opts = opts
        .trim()
        .split_once(' ')
        .map(|(_, rest)| rest.to_string())
        .unwrap();
    let _guard = RestartedServer(&srv);
    let stop = pg_ctl(&srv, &["stop", "-m", "fast", "-w"]);
    assert!(stop.status.success(), "{}", text(&stop));
    std::thread::sleep(Duration::from_secs(4));
    let logs = pgsurge_testkit::scratch_dir("campaign-faults");
    std::fs::set_permissions(
        logs.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o777),
    )
    .unwrap();
    let log = logs.path().join("restart.log");
    let start = pg_ctl(
        &srv,
        &["start", "-w", "-l", log.to_str().unwrap(), "-o", &opts],
    );
    assert!(start.status.success(), "{}", text(&start));

    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{}", text(&out));
    assert!(stderr.contains("is unreachable"), "{stderr}");
    assert!(stderr.contains("waiting up to 1m00s"), "{stderr}");
    let runs = c.runs();
    assert_eq!(runs.len(), 6, "{runs:?}");
    for r in &runs {
        assert_eq!(r["status"], "ok", "{r}");
    }
}

#[test]
fn target_that_stays_down_fails_its_remaining_tests_with_one_message() {
    let srv = TestServer::start(TestServerOptions::default());
    let db = srv.create_database("down");
    let dir = pgsurge_testkit::scratch_dir("campaign-faults");
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "down"
shuffle = false
[[target]]
name = "fx"
conninfo = "{}"
[matrix]
scales = [1]
clients = [1, 2, 3, 4]
scripts = ["select-only"]
[run]
duration = 1
outage_wait = "3s"
"#,
            srv.tcp_conninfo(&db)
        ),
    );
    let mut child = c.spawn(&[]);
    c.wait_until_stored(&mut child, 1);
    assert!(srv.cluster().stop());
    let started = Instant::now();
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{}", text(&out));
    assert!(started.elapsed() < Duration::from_secs(60), "{stderr}");
    assert_eq!(stderr.matches("stayed unreachable").count(), 1, "{stderr}");
    assert!(
        !stderr.contains("FAILED"),
        "one message, not one per test: {stderr}"
    );
    let runs = c.runs();
    assert_eq!(runs.len(), 4, "{runs:?}");
    let failed = runs.iter().filter(|r| r["status"] == "failed").count();
    assert!((1..=3).contains(&failed), "{runs:?}");
}

#[test]
fn campaign_failing_before_its_first_test_is_marked_failed_with_the_reason() {
    let dir = pgsurge_testkit::scratch_dir("campaign-faults");
    let c = Campaign::write(
        dir.path(),
        r#"
[campaign]
name = "nohost"
[[target]]
name = "gone"
conninfo = "host=no-such-host.invalid dbname=x connect_timeout=2"
[matrix]
scales = [1]
clients = [1, 2, 3]
scripts = ["select-only"]
[run]
duration = 1
"#,
    );
    let out = c.run(&[]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    let store = &c.store;
    let list = run(&["results", "list", "--store", store]);
    let listed = String::from_utf8_lossy(&list.stdout);
    assert!(list.status.success(), "{}", text(&list));
    assert!(!listed.contains("running"), "{listed}");
    assert!(listed.contains("failed"), "{listed}");
    let show = run(&["results", "show", "--store", store]);
    let shown = String::from_utf8_lossy(&show.stdout);
    assert!(
        shown.contains("campaign failed") && shown.contains("no-such-host.invalid"),
        "{}",
        text(&show)
    );
}

/// A tmpfs mounted for the test, unmounted on drop (also when the test fails).
struct Mount(PathBuf);

impl Mount {
    fn tmpfs(dir: &Path) -> Mount {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=16m", "tmpfs"])
            .arg(dir)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(
            ok,
            "this test mounts a tmpfs (needs root, as in CI): mount failed on {}",
            dir.display()
        );
        Mount(dir.to_path_buf())
    }

    fn remount(&self, opts: &str) {
        let ok = Command::new("mount")
            .args(["-o", opts])
            .arg(&self.0)
            .status()
            .map(|s| s.success())
            .unwrap_or(false);
        assert!(ok, "remount {opts} failed");
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn store_on_read_only_media_serves_every_reader() {
    let srv = TestServer::shared();
    let db = srv.create_database("ro_store");
    let media = pgsurge_testkit::scratch_dir("campaign-faults");
    let work = pgsurge_testkit::scratch_dir("campaign-faults");
    let mnt = Mount::tmpfs(media.path());
    let c = Campaign::write(
        work.path(),
        &format!(
            r#"
[campaign]
name = "ro"
[[target]]
name = "fx"
conninfo = "{}"
[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]
[run]
duration = 1
"#,
            srv.conninfo(&db)
        ),
    );
    let c = c.with_store(media.path().join("r.db").display().to_string());
    let store = c.store.clone();
    // Two sets, so that `compare` has its obvious pair.
    for extra in [&[][..], &["--new"]] {
        c.run_ok(extra);
    }
    mnt.remount("remount,ro");
    assert!(std::fs::write(media.path().join("probe"), b"x").is_err());
    let before = std::fs::read(&store).unwrap();
    let report_dir = work.path().join("report");
    let export_file = work.path().join("export.json");
    for args in [
        vec!["results", "list"],
        vec!["results", "show"],
        vec!["results", "show", "--run", "1"],
        vec!["results", "export", "--format", "json"],
        vec!["results", "export", "--format", "csv"],
        vec!["results", "export", "-o", export_file.to_str().unwrap()],
        vec!["report", "-o", report_dir.to_str().unwrap()],
        vec!["compare"],
    ] {
        let mut a = args.clone();
        a.extend(["--store", &store]);
        let out = run(&a);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
    }
    assert!(report_dir.join("index.html").is_file());
    assert_eq!(c.runs().len(), 2);
    assert_eq!(std::fs::read(&store).unwrap(), before);
}

#[test]
fn export_that_cannot_be_written_whole_is_an_error_and_leaves_the_old_file() {
    let srv = TestServer::shared();
    let db = srv.create_database("export_full");
    let work = pgsurge_testkit::scratch_dir("campaign-faults");
    let c = Campaign::write(
        work.path(),
        &format!(
            r#"
[campaign]
name = "full"
[[target]]
name = "fx"
conninfo = "{}"
[matrix]
scales = [1]
clients = [1, 2]
scripts = ["select-only"]
[run]
duration = 1
"#,
            srv.conninfo(&db)
        ),
    );
    c.run_ok(&[]);
    let store = c.store.clone();
    // A tiny disk holding an earlier export: the full export does not fit beside it.
    let media = pgsurge_testkit::scratch_dir("campaign-faults");
    let _mnt = {
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=64k", "tmpfs"])
            .arg(media.path())
            .status()
            .unwrap()
            .success();
        assert!(ok, "mount tmpfs (needs root, as in CI)");
        Mount(media.path().to_path_buf())
    };
    let target = media.path().join("export.json");
    std::fs::write(&target, b"[\"the earlier export\"]\n").unwrap();
    let out = run(&[
        "results",
        "export",
        "--full",
        "--store",
        &store,
        "-o",
        target.to_str().unwrap(),
    ]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("export.json"),
        "{}",
        text(&out)
    );
    assert_eq!(
        std::fs::read(&target).unwrap(),
        b"[\"the earlier export\"]\n",
        "the old export was damaged"
    );
    let left: Vec<_> = std::fs::read_dir(media.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(left.len(), 1, "temporary files left: {left:?}");
}

const PASSWORD: &str = "Sp ace'Pw-7319";
const MARK: &str = "Pw-7319";

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                todo.push(p);
            } else {
                out.push(p);
            }
        }
    }
    out
}

fn contains(hay: &[u8], needle: &str) -> bool {
    hay.windows(needle.len()).any(|w| w == needle.as_bytes())
}

#[test]
fn passwords_in_conninfo_uri_and_store_url_are_never_written_or_shown() {
    let srv = TestServer::start(TestServerOptions {
        hba: vec![
            "host all secretuser 127.0.0.1/32 scram-sha-256".into(),
            "local all secretuser scram-sha-256".into(),
        ],
        ..Default::default()
    });
    let sql_pw = PASSWORD.replace('\'', "''");
    srv.psql(
        "postgres",
        &format!("CREATE ROLE secretuser LOGIN SUPERUSER PASSWORD '{sql_pw}'"),
    );
    let db1 = srv.create_database("secret_a");
    let db2 = srv.create_database("secret_b");
    let store_db = srv.create_database("secret_store");
    let port = srv.port();
    let encoded = "Sp%20ace%27Pw-7319";
    // libpq's three spellings: spaced keyword with a quoted, escaped value; URI user
    // info; URI query parameter.
    let conninfo = format!(
        "host=127.0.0.1 port={port} user=secretuser dbname={db1} password = 'Sp ace\\'Pw-7319'"
    );
    let uri = format!("postgresql://secretuser@127.0.0.1:{port}/{db2}?password={encoded}");
    let store_url = format!("postgresql://secretuser:{encoded}@127.0.0.1:{port}/{store_db}");
    let work = pgsurge_testkit::scratch_dir("campaign-faults");
    let toml_escape = |s: &str| s.replace('\\', "\\\\");
    let c = Campaign::write(
        work.path(),
        &format!(
            r#"
[campaign]
name = "secret"
[[target]]
name = "kv"
conninfo = "{}"
[[target]]
name = "uri"
conninfo = "{}"
[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]
[run]
duration = 1
"#,
            toml_escape(&conninfo),
            uri
        ),
    );
    let out_dir = work.path().join("out");
    std::fs::create_dir(&out_dir).unwrap();
    let sqlite = out_dir.join("r.db").display().to_string();
    let mut shown: Vec<(String, Output)> = Vec::new();
    let mut step = |name: &str, out: Output, must_succeed: bool| {
        if must_succeed {
            assert!(out.status.success(), "{name}: {}", text(&out));
        }
        shown.push((name.to_string(), out));
    };
    for store in [sqlite.as_str(), store_url.as_str()] {
        step("campaign run", c.with_store(store).run(&[]), true);
        step(
            "results list",
            run(&["results", "list", "--store", store]),
            true,
        );
        step(
            "results show",
            run(&["results", "show", "--store", store]),
            true,
        );
        step(
            "show run",
            run(&["results", "show", "--run", "1", "--store", store]),
            true,
        );
        step(
            "export full",
            run(&["results", "export", "--full", "--store", store]),
            true,
        );
        step(
            "export csv",
            run(&["results", "export", "--format", "csv", "--store", store]),
            true,
        );
        let report = out_dir.join(if store == sqlite {
            "report-sqlite"
        } else {
            "report-pg"
        });
        step(
            "report",
            run(&["report", "--store", store, "-o", report.to_str().unwrap()]),
            true,
        );
        step("compare", run(&["compare", "--store", store]), false);
        step(
            "export to file",
            run(&[
                "results",
                "export",
                "--full",
                "--store",
                store,
                "-o",
                out_dir.join("export.json").to_str().unwrap(),
            ]),
            true,
        );
    }
    // Error paths: a wrong store password, a bad percent-encoding, an unreachable store.
    let wrong = store_url.replace(encoded, "Wrong-Pw-7319");
    step(
        "wrong password",
        run(&["results", "list", "--store", &wrong]),
        false,
    );
    step("wrong password run", c.with_store(&wrong).run(&[]), false);
    let bad = store_url.replace(encoded, "Pw-7319%zz");
    step("bad encoding", run(&["report", "--store", &bad]), false);
    step(
        "bad encoding compare",
        run(&["compare", "--store", &bad]),
        false,
    );
    let down = format!("postgresql://secretuser:{encoded}@127.0.0.1:1/x?connect_timeout=2");
    step("unreachable", c.with_store(&down).run(&[]), false);

    // Both stores really hold the campaign (else the grep proves nothing).
    let runs = export_runs(&sqlite);
    assert_eq!(runs.len(), 2, "{runs:?}");
    let mut leaks = Vec::new();
    for (name, out) in &shown {
        for (stream, bytes) in [("stdout", &out.stdout), ("stderr", &out.stderr)] {
            if contains(bytes, MARK) {
                leaks.push(format!(
                    "{name} {stream}: {}",
                    String::from_utf8_lossy(bytes)
                ));
            }
        }
    }
    for f in files_under(&out_dir) {
        let bytes = std::fs::read(&f).unwrap();
        if contains(&bytes, MARK) {
            leaks.push(format!("file {}", f.display()));
        }
    }
    // The PostgreSQL store, dumped.
    let dump = Command::new(srv.bin_dir().join("pg_dump"))
        .args(["-h", &srv.socket_dir().display().to_string()])
        .args(["-p", &port.to_string(), "-U", "postgres", "-d", &store_db])
        .output()
        .unwrap();
    assert!(dump.status.success(), "{}", text(&dump));
    assert!(
        contains(&dump.stdout, "CREATE TABLE public.sets"),
        "empty dump"
    );
    assert!(
        contains(&dump.stdout, "secret"),
        "the campaign is not in the dump"
    );
    if contains(&dump.stdout, MARK) {
        leaks.push("pg_dump of the PostgreSQL store".into());
    }
    assert!(leaks.is_empty(), "password found in:\n{}", leaks.join("\n"));
    // And the store still says where the targets are.
    let targets_sql = "SELECT conninfo FROM targets ORDER BY name";
    let stored = srv.psql(&store_db, targets_sql);
    assert!(stored.contains("password = '********'"), "{stored}");
    assert!(stored.contains("?password=********"), "{stored}");
}
