//! Results without shared disks: three generators write their results into
//! a PostgreSQL results store (`bench --store URL --group NAME`), `pgsurge dist wait`
//! waits for them and merges them — exactly as `pgsurge merge` merges their JSON files
//! — and compares the server's commits over the run; `results show` of the group
//! prints the same merge. A generator index stored twice is refused, and so is a
//! generator of another `--generator-count` than the group's (and a wait for another
//! number of generators); a missing generator ends the wait with a timeout naming it;
//! generators that ran one after another are not merged; and `--group` needs
//! `--store` and the generator options.

use std::process::{Child, Command, Stdio};
use std::time::{SystemTime, UNIX_EPOCH};

use pgsurge_results::RunResult;
use pgsurge_server::testing::{TestServer, TestServerOptions};

fn command(srv: &TestServer, args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.args(args);
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    c.env_remove("PGSURGE_STORE");
    c
}

fn run(srv: &TestServer, args: &[&str]) -> (String, String, i32) {
    let out = command(srv, args).output().expect("run pgsurge");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn spawn(srv: &TestServer, args: &[&str]) -> Child {
    command(srv, args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn pgsurge")
}

fn finish(child: Child) -> (String, String, i32) {
    let out = child.wait_with_output().unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn read(p: &std::path::Path) -> RunResult {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("result document")
}

#[test]
fn generators_through_a_postgres_store_are_waited_for_and_merged_exactly() {
    // A server of its own, without autovacuum: the bound below holds only when nothing
    // but this test commits in its database. On the shared server, a campaign another
    // test runs on a database of its own at the same time adds commits to this
    // database's count beyond the bound, with no session of its own on this database;
    // and an autovacuum worker's transactions count too, in a database whose catalogs
    // it visits whatever the tables' autovacuum_enabled says.
    let own = TestServer::start(TestServerOptions {
        settings: vec![("autovacuum".into(), "off".into())],
        ..Default::default()
    });
    let srv = &own;
    let db = srv.create_database("group_bench");
    let store_db = srv.create_database("group_store");
    let store = srv.conninfo(&store_db);
    // --store takes its location after '=' (its value is optional, like pgbench's).
    let store_arg = format!("--store={store}");
    let (_, err, code) = run(srv, &["bench", "-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");
    let dir = pgsurge_testkit::scratch_dir("dist-group");
    // The sessions before the run have published their statistics.
    srv.wait_for_sessions_to_end(&db);

    // The coordinator first: it takes the server's commit count before the start.
    let merged_path = dir.path().join("merged.json");
    let merged_arg = format!("--json={}", merged_path.display());
    let server = srv.conninfo(&db);
    let coordinator = spawn(
        srv,
        &[
            "dist",
            "wait",
            "--store",
            &store,
            "--group",
            "g1",
            "-n",
            "3",
            "--timeout",
            "90",
            "--server",
            &server,
            &merged_arg,
        ],
    );
    // Time for the coordinator to take its count and for the generators to start and
    // connect before the common start, on a busy machine too.
    let start = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
        + 6;
    let start_at = format!("--start-at={start}");
    let generators: Vec<(Child, std::path::PathBuf)> = (0..3)
        .map(|i| {
            let json = dir.path().join(format!("g{i}.json"));
            let json_arg = format!("--json={}", json.display());
            let index = format!("--generator-index={i}");
            let child = spawn(
                srv,
                &[
                    "bench",
                    "-n",
                    "-S",
                    "-c",
                    "2",
                    "-j",
                    "1",
                    "-T",
                    "3",
                    &start_at,
                    &index,
                    "--generator-count=3",
                    &store_arg,
                    "--group=g1",
                    &json_arg,
                    &db,
                ],
            );
            (child, json)
        })
        .collect();
    let mut files = Vec::new();
    for (child, json) in generators {
        let (_, err, code) = finish(child);
        assert_eq!(code, 0, "{err}");
        assert!(err.contains("in group \"g1\""), "{err}");
        files.push(json);
    }
    let (report, err, code) = finish(coordinator);
    assert_eq!(code, 0, "{report}\n{err}");
    assert!(report.contains("number of generators: 3"), "{report}");
    assert!(err.contains("3 of 3 generators stored"), "{err}");
    assert!(err.contains("server commits over the run:"), "{err}");
    // The commit count the coordinator reads must not include its own reads (a session
    // per read would add its queries' commits, about 3 per read): what the server
    // counts beyond the clients' transactions is only the
    // generators' own: each connection's start-up transaction and a few set-up queries
    // per generator (16 here), plus at most the coordinator's two sessions' start-up.
    let line = err
        .lines()
        .find(|l| l.starts_with("server commits over the run:"))
        .unwrap();
    let numbers: Vec<i64> = line
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    let (server_commits, clients) = (numbers[0], numbers[1]);
    // Ten more for what the statistics collector may still be adding from the sessions
    // before the run (initialization, database creation) when the first count is read;
    // the coordinator's own reads, if counted, would add about 60.
    assert!(
        (0..=3 * (2 + 4) + 2 + 10).contains(&(server_commits - clients)),
        "server {server_commits} vs clients {clients}: {line}"
    );

    // The store's merge is the files' merge, exactly.
    let merged = read(&merged_path);
    let sum: u64 = files.iter().map(|f| read(f).totals.transactions).sum();
    assert_eq!(merged.totals.transactions, sum);
    let file_merge = dir.path().join("files.json");
    let mut args = vec![
        "merge".to_string(),
        format!("--json={}", file_merge.display()),
    ];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_, err, code) = run(srv, &args);
    assert_eq!(code, 0, "{err}");
    let from_files = read(&file_merge);
    // The whole merged document, histograms and per-second samples included.
    assert_eq!(
        serde_json::to_value(&merged).unwrap(),
        serde_json::to_value(&from_files).unwrap()
    );

    // results show of the group prints the merge.
    let (shown, err, code) = run(srv, &["results", "show", "--store", &store, "g1"]);
    assert_eq!(code, 0, "{err}");
    assert!(
        shown.contains("merged result of the group's 3 generator(s)"),
        "{shown}"
    );
    assert!(
        shown.contains(&format!(
            "number of transactions actually processed: {}",
            merged.totals.transactions
        )),
        "{shown}"
    );

    // The same index again is refused; the stored group is unchanged.
    let (_, err, code) = run(
        srv,
        &[
            "bench",
            "-n",
            "-S",
            "-c",
            "1",
            "-t",
            "5",
            "--generator-index=0",
            "--generator-count=3",
            &store_arg,
            "--group=g1",
            &db,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("group \"g1\" already holds generator 0 of 3"),
        "{err}"
    );
}

#[test]
fn a_missing_generator_ends_the_wait_naming_it() {
    let srv = TestServer::shared();
    let db = srv.create_database("group_missing");
    let store_db = srv.create_database("group_missing_store");
    let store = srv.conninfo(&store_db);
    // --store takes its location after '=' (its value is optional, like pgbench's).
    let store_arg = format!("--store={store}");
    let (_, err, code) = run(srv, &["bench", "-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");
    let (_, err, code) = run(
        srv,
        &[
            "bench",
            "-n",
            "-S",
            "-c",
            "1",
            "-t",
            "10",
            "--generator-index=1",
            "--generator-count=3",
            &store_arg,
            "--group=g2",
            &db,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let (_, err, code) = run(
        srv,
        &[
            "dist",
            "wait",
            "--store",
            &store,
            "--group",
            "g2",
            "-n",
            "3",
            "--timeout",
            "1",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("1 of 3 generators stored after 1s; missing generator index(es): 0, 2"),
        "{err}"
    );
}

#[test]
fn a_group_holds_the_generators_of_one_generator_count() {
    let srv = TestServer::shared();
    let db = srv.create_database("group_counts");
    let store_db = srv.create_database("group_counts_store");
    let store = srv.conninfo(&store_db);
    let store_arg = format!("--store={store}");
    let (_, err, code) = run(srv, &["bench", "-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");
    let generator = |index: u32, count: u32| {
        let index = format!("--generator-index={index}");
        let count = format!("--generator-count={count}");
        run(
            srv,
            &[
                "bench",
                "-n",
                "-S",
                "-c",
                "1",
                "-t",
                "10",
                &index,
                &count,
                &store_arg,
                "--group=g2",
                &db,
            ],
        )
    };
    let (_, err, code) = generator(1, 2);
    assert_eq!(code, 0, "{err}");
    // Index 1 again, "of 3": not a generator of the same run.
    let (_, err, code) = generator(1, 3);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "group \"g2\" is a run of 2 generators (--generator-count 2); this is generator 1 of 3"
        ),
        "{err}"
    );
    let (_, err, code) = generator(0, 3);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("this is generator 0 of 3"), "{err}");

    // Waiting for 3 is refused at once; waiting for 2 finds only the one of 2.
    let dir = pgsurge_testkit::scratch_dir("dist-group");
    let json = dir.path().join("merged.json");
    let json_arg = format!("--json={}", json.display());
    let wait = |n: &str| {
        run(
            srv,
            &[
                "dist",
                "wait",
                "--store",
                &store,
                "--group",
                "g2",
                "-n",
                n,
                "--timeout",
                "1",
                &json_arg,
            ],
        )
    };
    let (out, err, code) = wait("3");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(
            "group \"g2\" is a run of 2 generators (--generator-count 2), not the 3 waited for"
        ),
        "{err}"
    );
    assert!(out.is_empty(), "{out}");
    let (_, err, code) = wait("2");
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("1 of 2 generators stored after 1s; missing generator index(es): 0"),
        "{err}"
    );
    assert!(!json.exists(), "nothing merged, nothing written");
}

#[test]
fn generators_that_ran_one_after_another_are_not_merged() {
    let srv = TestServer::shared();
    let db = srv.create_database("group_sequential");
    let store_db = srv.create_database("group_sequential_store");
    let store = srv.conninfo(&store_db);
    let store_arg = format!("--store={store}");
    let (_, err, code) = run(srv, &["bench", "-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");
    let dir = pgsurge_testkit::scratch_dir("dist-group");
    let mut files = Vec::new();
    // Three generators of one group, each started after the one before had finished.
    for i in 0..3 {
        let json = dir.path().join(format!("g{i}.json"));
        let json_arg = format!("--json={}", json.display());
        let index = format!("--generator-index={i}");
        let (_, err, code) = run(
            srv,
            &[
                "bench",
                "-n",
                "-S",
                "-c",
                "1",
                "-T",
                "1",
                &index,
                "--generator-count=3",
                &store_arg,
                "--group=g3",
                &json_arg,
                &db,
            ],
        );
        assert_eq!(code, 0, "{err}");
        files.push(json);
    }
    let merged = dir.path().join("merged.json");
    let merged_arg = format!("--json={}", merged.display());
    let (out, err, code) = run(
        srv,
        &[
            "dist",
            "wait",
            "--store",
            &store,
            "--group",
            "g3",
            "-n",
            "3",
            "--timeout",
            "5",
            &merged_arg,
        ],
    );
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(
        err.contains("pgsurge dist wait: error: generator 2/3 started ")
            && err.contains(" after generator 0/3, but generator ")
            && err.contains("these results did not run at the same time"),
        "{err}"
    );
    assert!(!out.contains("number of generators"), "{out}");
    assert!(!merged.exists(), "nothing merged, nothing written");
    // Their files are refused the same way.
    let mut args = vec!["merge".to_string(), merged_arg];
    args.extend(files.iter().map(|f| f.display().to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (_, err, code) = run(srv, &args);
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains(&format!(
            "pgsurge merge: error: {} started ",
            files[2].display()
        )) && err.contains("these results did not run at the same time"),
        "{err}"
    );
    assert!(!merged.exists(), "nothing merged, nothing written");
}

#[test]
fn group_needs_a_store_and_the_generator_options() {
    let srv = TestServer::shared();
    for (args, message) in [
        (vec!["--group=g", "-t", "1"], "--group requires --store"),
        (
            vec!["--group=g", "--store=x.db", "-t", "1"],
            "--group requires --generator-count (and --generator-index)",
        ),
        (
            vec!["--group=g", "--store=x.db", "--set=s", "-t", "1"],
            "--set and --group cannot be used together",
        ),
    ] {
        let mut all = vec!["bench"];
        all.extend(args);
        let (_, err, code) = run(srv, &all);
        assert_eq!(code, 1, "{err}");
        assert!(err.contains(&format!("pgbench: error: {message}")), "{err}");
    }
}
