//! Outputs scripts and CI rely on: a closed stdout ends every command quietly, JSON
//! outputs validate against the schemas `pgsurge schema` prints, `--json=-` is alone on
//! stdout, CSV exports parse, help/completions/man come from one command tree,
//! `server env` works with `eval`, and campaign thresholds fail a run.

use std::io::Read;
use std::os::unix::process::ExitStatusExt;
use std::process::{Command, Output, Stdio};

use pgsurge_server::testing::TestServer;

use crate::campaigns::Campaign;

fn pgsurge() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.env_remove("NO_COLOR").env_remove("PGSURGE_STORE");
    c
}

fn run(args: &[&str]) -> Output {
    pgsurge().args(args).output().expect("run pgsurge")
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn repo(path: &str) -> String {
    format!("{}/../../{path}", env!("CARGO_MANIFEST_DIR"))
}

fn validate(schema_name: &str, doc: &serde_json::Value) {
    let out = run(&["schema", schema_name]);
    assert!(
        out.status.success(),
        "schema {schema_name}: {}",
        stderr(&out)
    );
    let errors = pgsurge_testkit::schema::violations(&stdout(&out), doc);
    assert!(errors.is_empty(), "{schema_name}: {errors:#?}");
}

/// A store holding one imported pgbench run.
fn imported_store(dir: &std::path::Path) -> String {
    let report = dir.join("out.txt");
    std::fs::write(
        &report,
        "transaction type: <builtin: select only>\nscaling factor: 1\nquery mode: simple\n\
         number of clients: 2\nnumber of threads: 1\nduration: 2 s\n\
         number of transactions actually processed: 3\nlatency average = 2.000 ms\n\
         tps = 1.5 (without initial connection time)\n",
    )
    .unwrap();
    let store = dir.join("i.db").display().to_string();
    let out = pgsurge()
        .args(["results", "import", "--store", &store, "--name", "imported"])
        .arg(&report)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    store
}

#[test]
fn a_closed_stdout_ends_every_command_quietly() {
    let dir = pgsurge_testkit::scratch_dir("cli-outputs");
    let store = imported_store(dir.path());
    let plan = repo("examples/scaling.toml");
    let commands: Vec<Vec<&str>> = vec![
        vec!["campaign", "plan", &plan],
        vec!["campaign", "plan", "--format", "json", &plan],
        vec!["campaign", "new"],
        vec!["results", "list", "--store", &store],
        vec!["results", "show", "imported", "--store", &store],
        vec!["results", "export", "--store", &store],
        vec!["results", "export", "--format", "csv", "--store", &store],
        vec!["schema", "run-result"],
        vec!["completions", "bash"],
        vec!["man"],
        vec!["help", "campaign"],
        vec!["--help"],
        vec!["server", "--help"],
        vec!["bench", "--help"],
    ];
    for args in commands {
        // The reader is gone before the first write: every write gets EPIPE.
        let mut child = pgsurge()
            .args(&args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        drop(child.stdout.take());
        let mut err = String::new();
        child
            .stderr
            .take()
            .unwrap()
            .read_to_string(&mut err)
            .unwrap();
        let status = child.wait().unwrap();
        assert!(
            status.success() || status.signal() == Some(libc::SIGPIPE),
            "{args:?}: {status:?}\n{err}"
        );
        assert!(
            !err.contains("panicked") && !err.contains("Broken pipe"),
            "{args:?}: {err}"
        );
    }
    // What a shell user sees.
    let out = Command::new("bash")
        .arg("-c")
        .arg(format!(
            "'{}' campaign plan '{plan}' | head -1",
            env!("CARGO_BIN_EXE_pgsurge")
        ))
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).lines().count(), 1);
    // Nothing on stderr but what plan warns of on this host and its disks.
    assert!(
        stderr(&out)
            .lines()
            .all(|l| l.starts_with("warning: this host: ")
                || l.contains("rotational disk")
                || l.contains("I/O scheduler")),
        "{}",
        stderr(&out)
    );
}

#[test]
fn help_completions_and_man_pages_come_from_one_tree() {
    let top = run(&["--help"]);
    assert!(top.status.success());
    for cmd in [
        "bench",
        "campaign",
        "results",
        "report",
        "compare",
        "server",
        "quickstart",
        "schema",
        "completions",
        "man",
    ] {
        assert!(
            stdout(&top).contains(cmd),
            "top-level help lacks {cmd}:\n{}",
            stdout(&top)
        );
    }
    let h = run(&["help", "campaign"]);
    assert!(h.status.success());
    for sub in ["run", "plan", "new", "convert"] {
        assert!(stdout(&h).contains(sub), "{}", stdout(&h));
    }
    let h = run(&["help", "results", "export"]);
    assert!(stdout(&h).contains("--per-second"), "{}", stdout(&h));
    let h = run(&["help", "bench"]);
    assert!(
        stdout(&h).contains("Usage:\n  pgbench [OPTION]... [DBNAME]"),
        "{}",
        stdout(&h)
    );
    let h = run(&["help", "nonsense"]);
    assert_eq!(h.status.code(), Some(2));
    assert!(
        stderr(&h).contains("no command \"nonsense\""),
        "{}",
        stderr(&h)
    );

    for shell in ["bash", "zsh", "fish", "elvish", "powershell"] {
        let c = run(&["completions", shell]);
        assert!(c.status.success(), "{shell}: {}", stderr(&c));
        let text = stdout(&c);
        for word in ["campaign", "per-second", "quickstart"] {
            assert!(text.contains(word), "{shell} completion lacks {word}");
        }
    }
    assert_eq!(run(&["completions", "tcsh"]).status.code(), Some(2));

    let man = run(&["man"]);
    assert!(man.status.success());
    assert!(
        stdout(&man).starts_with(".ie") || stdout(&man).contains(".TH pgsurge"),
        "{}",
        stdout(&man)
    );
    let dir = pgsurge_testkit::scratch_dir("cli-outputs");
    let m = pgsurge()
        .args(["man", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(m.status.success(), "{}", stderr(&m));
    for page in [
        "pgsurge.1",
        "pgsurge-campaign-plan.1",
        "pgsurge-server-env.1",
        "pgsurge-results-export.1",
    ] {
        let text = std::fs::read_to_string(dir.path().join(page))
            .unwrap_or_else(|e| panic!("{page}: {e}"));
        assert!(text.contains(".TH"), "{page}");
    }
}

#[test]
fn plan_and_export_validate_against_their_schemas_and_csv_parses() {
    let plan = run(&[
        "campaign",
        "plan",
        "--format",
        "json",
        &repo("examples/scaling.toml"),
    ]);
    assert!(plan.status.success(), "{}", stderr(&plan));
    let doc: serde_json::Value =
        serde_json::from_slice(&plan.stdout).expect("plan JSON alone on stdout");
    validate("plan", &doc);
    assert!(doc["estimate"]["total_s"].as_f64().unwrap() > 0.0);
    let text = run(&["campaign", "plan", &repo("examples/scaling.toml")]);
    assert!(
        stdout(&text).contains("estimated time: about "),
        "{}",
        stdout(&text)
    );

    let dir = pgsurge_testkit::scratch_dir("cli-outputs");
    let store = imported_store(dir.path());
    for extra in [&[][..], &["--full"][..]] {
        let mut args = vec!["results", "export", "--store", &store, "--set", "imported"];
        args.extend_from_slice(extra);
        let out = run(&args);
        assert!(out.status.success(), "{}", stderr(&out));
        let doc: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        validate("export", &doc);
        assert_eq!(doc["runs"].as_array().unwrap().len(), 1);
    }
    let csv = run(&["results", "export", "--format", "csv", "--store", &store]);
    let mut r = csv::Reader::from_reader(&csv.stdout[..]);
    let header = r.headers().unwrap().clone();
    let rows: Vec<csv::StringRecord> = r.records().map(|x| x.unwrap()).collect();
    assert_eq!(rows.len(), 1);
    let tps = header.iter().position(|h| h == "tps").unwrap();
    assert_eq!(&rows[0][tps], "1.5");
    let per_second = run(&[
        "results",
        "export",
        "--format",
        "csv",
        "--per-second",
        "--store",
        &store,
    ]);
    assert!(per_second.status.success(), "{}", stderr(&per_second));
    assert!(stdout(&per_second).starts_with("run_id,set,target,test_key,repeat,elapsed_s"));
    let bad = run(&["results", "export", "--per-second", "--store", &store]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(stderr(&bad).contains("--per-second goes with --format csv"));

    // results show takes set names as report and compare do.
    let show = run(&["results", "show", "imported", "--store", &store]);
    assert!(
        show.status.success() && stdout(&show).contains("\"imported\""),
        "{}",
        stdout(&show)
    );
    let show = run(&["results", "show", "nope", "--store", &store]);
    assert_eq!(show.status.code(), Some(1));
    assert!(
        stderr(&show).contains("no set \"nope\""),
        "{}",
        stderr(&show)
    );
}

#[test]
fn campaign_new_writes_a_template_that_plans() {
    let dir = pgsurge_testkit::scratch_dir("cli-outputs");
    let file = dir.path().join("mine.toml");
    let out = pgsurge()
        .args(["campaign", "new"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    let plan = pgsurge()
        .args(["campaign", "plan"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(plan.status.success(), "{}", stderr(&plan));
    assert!(stdout(&plan).contains("6 tests"), "{}", stdout(&plan));
    let again = pgsurge()
        .args(["campaign", "new"])
        .arg(&file)
        .output()
        .unwrap();
    assert_eq!(again.status.code(), Some(1), "must not overwrite");
}

#[test]
fn json_dash_is_alone_on_stdout_and_validates() {
    let srv = TestServer::shared();
    let db = srv.create_database("json_dash");
    let mut init = pgsurge();
    srv.apply_env(&mut init);
    let o = init
        .args(["bench", "-i", "-s", "1", "-q", &db])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let mut b = pgsurge();
    srv.apply_env(&mut b);
    let o = b
        .args(["bench", "-S", "-c", "2", "-t", "20", "--json=-", &db])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let doc: serde_json::Value = serde_json::from_slice(&o.stdout)
        .unwrap_or_else(|e| panic!("stdout is not one JSON document ({e}):\n{}", stdout(&o)));
    validate("run-result", &doc);
    assert_eq!(doc["totals"]["transactions"], 40);
    assert!(
        stderr(&o).contains("number of transactions actually processed: 40/40"),
        "{}",
        stderr(&o)
    );
}

/// Stops the servers recorded in a state directory, also when a test fails.
struct StopAll(std::path::PathBuf);

impl Drop for StopAll {
    fn drop(&mut self) {
        let _ = pgsurge()
            .args(["server", "stop", "--all", "--state-dir"])
            .arg(&self.0)
            .output();
    }
}

#[test]
fn server_env_makes_bench_and_psql_connect_after_eval() {
    let state = pgsurge_testkit::scratch_dir("cli-outputs");
    let _guard = StopAll(state.path().to_path_buf());
    let sd = state.path().display().to_string();
    let started = run(&["server", "start", "--state-dir", &sd, "--port", "0"]);
    assert!(started.status.success(), "{}", stderr(&started));
    let env = run(&["server", "env", "--state-dir", &sd]);
    assert!(env.status.success(), "{}", stderr(&env));
    for k in ["PGHOST", "PGPORT", "PGUSER", "PGDATABASE"] {
        assert!(
            stdout(&env).contains(&format!("export {k}=")),
            "{}",
            stdout(&env)
        );
    }
    let psql = if std::path::Path::new("/usr/bin/psql").exists() {
        "psql -XAtc 'select 42'"
    } else {
        "echo 42"
    };
    let script = format!(
        "set -e; unset PGHOST PGPORT PGUSER PGDATABASE PGSERVICE; \
         eval \"$('{bin}' server env --state-dir '{sd}')\"; \
         '{bin}' bench -i -s 1 -q; '{bin}' bench -S -t 5; {psql}",
        bin = env!("CARGO_BIN_EXE_pgsurge")
    );
    let out = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}\n{}", stdout(&out), stderr(&out));
    assert!(
        stdout(&out).contains("number of transactions actually processed: 5/5"),
        "{}",
        stdout(&out)
    );
    assert!(stdout(&out).trim_end().ends_with("42"), "{}", stdout(&out));
}

/// The README's flow with two recorded servers: `env` and `stop` take the most recently
/// started one that runs (and say so), and with none running the eval fails instead of
/// leaving the shell's PG* variables as they were.
#[test]
fn server_env_and_stop_pick_the_newest_of_two_servers() {
    let state = pgsurge_testkit::scratch_dir("cli-outputs");
    let _guard = StopAll(state.path().to_path_buf());
    let sd = state.path().display().to_string();
    let mut ports = Vec::new();
    for _ in 0..2 {
        let started = run(&["server", "start", "--state-dir", &sd, "--port", "0"]);
        assert!(started.status.success(), "{}", stderr(&started));
        let conninfo = stdout(&started);
        let port = conninfo
            .split_whitespace()
            .find_map(|kv| kv.strip_prefix("port="))
            .expect("the connection string names the port")
            .to_string();
        ports.push(port);
        // Start times a clock tick apart.
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let bin = env!("CARGO_BIN_EXE_pgsurge");
    let port_after_eval = || {
        let script = format!(
            "unset PGHOST PGPORT PGUSER PGDATABASE PGSERVICE; PGPORT=untouched; \
             eval \"$('{bin}' server env --state-dir '{sd}')\" && echo \"port=$PGPORT\""
        );
        Command::new("bash")
            .arg("-c")
            .arg(&script)
            .output()
            .unwrap()
    };
    let out = port_after_eval();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), format!("port={}", ports[1]));
    assert!(
        stderr(&out).contains("2 servers are recorded; using the most recently started that runs"),
        "{}",
        stderr(&out)
    );
    // `stop` takes the same one; then the other is the one that runs.
    let stopped = run(&["server", "stop", "--state-dir", &sd]);
    assert!(stopped.status.success(), "{}", stderr(&stopped));
    assert!(
        stderr(&stopped).contains("using the most recently started"),
        "{}",
        stderr(&stopped)
    );
    let out = port_after_eval();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(stdout(&out).trim(), format!("port={}", ports[0]));
    let stopped = run(&["server", "stop", "--state-dir", &sd]);
    assert!(stopped.status.success(), "{}", stderr(&stopped));
    // Nothing left to export: the eval fails and the next command does not run.
    let out = port_after_eval();
    assert!(!out.status.success(), "{}", stdout(&out));
    assert!(!stdout(&out).contains("port="), "{}", stdout(&out));
    assert!(
        stderr(&out).contains("no running server"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn thresholds_fail_a_campaign_with_a_summary() {
    let srv = TestServer::shared();
    let db = srv.create_database("thresholds");
    let dir = pgsurge_testkit::scratch_dir("cli-outputs");
    // The same file and store each time, with other thresholds.
    let write = |thresholds: &str| {
        Campaign::write(
            dir.path(),
            &format!(
                "[campaign]\nname = \"gate\"\n[[target]]\nname = \"fx\"\nconninfo = \"{}\"\n\
                 [matrix]\nscales = [1]\nclients = [1]\nscripts = [\"select\"]\n\
                 [run]\nduration = \"1s\"\n[sampling]\nos = false\npg = false\n\
                 [thresholds]\n{thresholds}\n",
                srv.conninfo(&db)
            ),
        )
    };
    let out = write("tps = \"> 1000000000\"\np99 = \"< 60s\"").run(&["--quiet"]);
    assert_eq!(out.status.code(), Some(4), "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("thresholds: 1 of 1 tests failed"), "{err}");
    assert!(err.contains("fx/s1/select-only/c1/r-/1: tps = "), "{err}");
    assert!(err.contains("not > 1000000000"), "{err}");
    assert!(!err.contains("p99"), "the p99 gate passed: {err}");
    // Thresholds are not part of the set's identity: the same set, checked again.
    let out = write("tps = \"> 0\"").run(&["--quiet"]);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("thresholds: all 1 tests pass"),
        "{}",
        stderr(&out)
    );
}

/// A tmpfs mounted on a fresh directory, unmounted (then removed) on drop, also when
/// the test fails.
struct MountedTmpfs(pgsurge_testkit::ScratchDir);

impl Drop for MountedTmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

/// A filesystem held in memory, for the data directory warning: a tmpfs of `size` the
/// test mounts (CI runs as root), else /dev/shm when it is one.
fn memory_dir(size: &str) -> Option<(std::path::PathBuf, Option<MountedTmpfs>)> {
    let dir = pgsurge_testkit::scratch_dir("tmpfs");
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
        .arg(dir.path())
        .status()
        .is_ok_and(|s| s.success());
    if mounted {
        return Some((dir.path().to_path_buf(), Some(MountedTmpfs(dir))));
    }
    let mounts = std::fs::read_to_string("/proc/mounts").unwrap_or_default();
    mounts
        .lines()
        .any(|l| l.split(' ').nth(1) == Some("/dev/shm") && l.split(' ').nth(2) == Some("tmpfs"))
        .then(|| ("/dev/shm".into(), None))
}

#[test]
fn plan_warns_about_a_data_directory_in_memory_and_lists_the_swept_dimensions() {
    let Some((mem, _mount)) = memory_dir("1m") else {
        pgsurge_testkit::missing_prerequisite("no tmpfs to test with (not root, no /dev/shm)");
        return;
    };
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let file = dir.path().join("c.toml");
    let body = |data_dir: &std::path::Path| {
        format!(
            r#"
[campaign]
name = "mem"
[[target]]
name = "local"
data_dir = "{}"
[matrix]
scales = [1]
clients = [1]
query_modes = ["prepared"]
threads = [1]
settings = {{ shared_buffers = ["16MB", "32MB"] }}
"#,
            data_dir.display()
        )
    };
    std::fs::write(&file, body(&mem.join("pgdata"))).unwrap();
    let f = file.to_str().unwrap();
    let text = run(&["campaign", "plan", f]);
    assert!(text.status.success(), "{}", stderr(&text));
    assert!(
        stderr(&text).contains("warning: target \"local\": its data directory")
            && stderr(&text).contains("would be on tmpfs"),
        "{}",
        stderr(&text)
    );
    assert!(
        stdout(&text).contains("local/s1/tpcb-like/c1/r-/Mprepared/j1/shared_buffers=32MB/1"),
        "{}",
        stdout(&text)
    );
    let json = run(&["campaign", "plan", "--format", "json", f]);
    let doc: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    validate("plan", &doc);
    // Besides what on this host moves numbers ("this host: …", and the kind of disk
    // under the data directory, which depends on the machine), one warning.
    let about_targets = |doc: &serde_json::Value| -> Vec<String> {
        doc["warnings"]
            .as_array()
            .unwrap()
            .iter()
            .filter_map(|w| w.as_str())
            .filter(|w| !w.starts_with("this host: "))
            .filter(|w| !w.contains("rotational disk") && !w.contains("I/O scheduler"))
            .map(str::to_string)
            .collect()
    };
    assert_eq!(about_targets(&doc).len(), 1, "{doc}");
    assert_eq!(doc["tests"][1]["settings"]["shared_buffers"], "32MB");
    assert_eq!(doc["tests"][0]["query_mode"], "prepared");
    // On a disk: no warning (when the build directory is on one).
    std::fs::write(&file, body(&dir.path().join("pgdata"))).unwrap();
    let disk = run(&["campaign", "plan", "--format", "json", f]);
    let doc: serde_json::Value = serde_json::from_slice(&disk.stdout).unwrap();
    let df = Command::new("stat")
        .args(["-f", "-c", "%T"])
        .arg(dir.path())
        .output()
        .unwrap();
    let fs_type = String::from_utf8_lossy(&df.stdout).trim().to_string();
    if fs_type != "tmpfs" && fs_type != "ramfs" {
        assert!(about_targets(&doc).is_empty(), "{fs_type}: {doc}");
    }
}

/// Removes a directory when the test ends, also by panic.
struct RemoveDir(std::path::PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// `campaign run` on a terminal: a target's warning (its data directory in memory,
/// stored with each of its tests) is said once however many tests carry it, no warning
/// line is said twice, and the run ends with the commands that come next.
#[test]
fn campaign_run_says_each_warning_once_and_ends_with_what_comes_next() {
    let Some((mem, _mount)) = memory_dir("512m") else {
        pgsurge_testkit::missing_prerequisite("no tmpfs to test with (not root, no /dev/shm)");
        return;
    };
    let data = mem.join(format!("pgsurge-warn-once-{}", std::process::id()));
    let _remove = RemoveDir(data.clone());
    let dir = pgsurge_testkit::scratch_dir("cli-outputs");
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "once"
[[target]]
name = "mem"
data_dir = "{}"
settings = {{ max_wal_size = "64MB", min_wal_size = "32MB" }}
[matrix]
scales = [1]
clients = [1, 2]
scripts = ["select-only"]
repeats = 2
[run]
duration = 1
"#,
            data.join("pgdata").display()
        ),
    );
    let out = c.run(&[]);
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        err.matches("the data directory").count(),
        1,
        "the target's warning, once: {err}"
    );
    let warnings: Vec<&str> = err.lines().filter(|l| l.starts_with("warning: ")).collect();
    assert!(warnings.iter().any(|w| w.contains("(in memory)")), "{err}");
    for w in &warnings {
        assert_eq!(
            warnings.iter().filter(|x| x == &w).count(),
            1,
            "{w:?} said more than once: {err}"
        );
    }
    // Four tests ran, each said once.
    assert_eq!(err.matches("tps, latency avg").count(), 4, "{err}");
    // The end: what to run next, with this store, the last lines of the output.
    let next: Vec<&str> = err.lines().skip_while(|l| *l != "next:").collect();
    assert!(next.len() >= 3, "no next: lines at the end: {err}");
    assert!(
        next[1..].iter().all(|l| l.starts_with("  pgsurge ")),
        "{next:?}"
    );
    assert!(
        next.iter().any(|l| l.contains("pgsurge report --set")),
        "{next:?}"
    );
    assert!(
        next.iter()
            .any(|l| l.contains("pgsurge results show") && l.contains(&c.store)),
        "{next:?}"
    );
}

/// pgsurge's own commands end a wrong command line the same way: status 2, the message
/// on stderr naming the command, nothing on stdout; `--help` is status 0 on stdout.
/// (`bench` keeps pgbench's statuses.)
#[test]
fn every_own_command_gives_status_2_on_a_usage_error() {
    let commands: &[&[&str]] = &[
        &[],
        &["no-such-command"],
        &["campaign"],
        &["campaign", "plan", "--no-such-option"],
        &["results", "--no-such-option"],
        &["report", "--no-such-option"],
        &["compare", "--no-such-option"],
        &["server", "--no-such-option"],
        &["quickstart", "--no-such-option"],
        &["merge", "--no-such-option"],
        &["dist"],
        &["dist", "local", "--no-such-option"],
        &["dist", "local", "-n", "2", "--start-in", "soon"],
        &["dist", "ssh", "--no-such-option"],
        &["dist", "wait", "--no-such-option"],
        &["kube"],
        &["kube", "job", "--no-such-option"],
        &["schema"],
        &["help", "no-such-command"],
    ];
    for args in commands {
        let out = run(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "pgsurge {args:?}: {}",
            stderr(&out)
        );
        assert!(out.stdout.is_empty(), "pgsurge {args:?}: {}", stdout(&out));
        assert!(!stderr(&out).trim().is_empty(), "pgsurge {args:?}");
    }
    for args in [
        &["campaign", "--help"][..],
        &["dist", "local", "--help"],
        &["kube", "job", "--help"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(0), "pgsurge {args:?}");
        assert!(stdout(&out).contains("Usage"), "pgsurge {args:?}");
    }
}

/// The subcommand names listed under `Commands:` in a help text (without `help`).
fn listed_subcommands(help: &str) -> Vec<String> {
    help.lines()
        .skip_while(|l| !l.starts_with("Commands:"))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .filter(|l| l.starts_with("  ") && !l.starts_with("   "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .map(str::to_string)
        .collect()
}

#[test]
fn no_help_text_shows_rustdoc_link_syntax() {
    let top = run(&["--help"]);
    assert!(top.status.success(), "{}", stderr(&top));
    let mut pending: Vec<Vec<String>> = listed_subcommands(&stdout(&top))
        .into_iter()
        .map(|c| vec![c])
        .collect();
    assert!(pending.len() >= 10, "{}", stdout(&top));
    let mut seen = 0;
    while let Some(path) = pending.pop() {
        let mut args = vec!["help".to_string()];
        args.extend(path.iter().cloned());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let out = run(&args);
        let text = format!("{}{}", stdout(&out), stderr(&out));
        assert!(out.status.success(), "pgsurge {args:?}: {text}");
        for needle in ["[`", "crate::", "](", "super::", "Self::"] {
            assert!(
                !text.contains(needle),
                "`pgsurge {}` shows {needle:?}:\n{text}",
                args.join(" ")
            );
        }
        seen += 1;
        for sub in listed_subcommands(&stdout(&out)) {
            let mut next = path.clone();
            next.push(sub);
            pending.push(next);
        }
    }
    // The top level's commands and the subcommands of campaign, results, server, dist, kube.
    assert!(seen >= 25, "only {seen} help texts");
}

#[test]
fn results_show_help_explains_test_keys_and_commit_delta() {
    for args in [
        &["results", "show", "--help"][..],
        &["help", "results", "show"],
    ] {
        let out = run(args);
        assert!(out.status.success(), "{}", stderr(&out));
        // The help wraps lines: compare with single spaces.
        let text = stdout(&out)
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for part in [
            "`target/s10/tpcb-like/c1/r-/1`",
            "the target's name, `s` and the scale, the workload, `c` and the clients, the rate",
            "then the repeat number last",
            "query mode (`/Mprepared`), the threads (`/j4`) and each swept setting (`/shared_buffers=1GB`)",
            "`commit Δ%` compares the server's committed transactions",
            "100 × |server − client| / client",
            "commit_tolerance_pct",
        ] {
            assert!(text.contains(part), "{args:?} lacks {part:?}:\n{text}");
        }
    }
}
