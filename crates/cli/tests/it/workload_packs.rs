//! Workload packs other than `tpcc`: `workload list/show/new`, a user's pack made with
//! `workload new` and edited, the errors of broken packs (file, line, key), and the
//! YCSB and sysbench-like packs with their statement mixes measured on the server.

use pgsurge_server::testing::TestServer;
use std::path::Path;
use std::process::Command;

use crate::workload_common::{num, pgsurge, Out};

fn ok(o: &Out) {
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
}

/// `k` of `n` trials is within five standard deviations of proportion `p`.
fn assert_proportion(what: &str, k: f64, n: f64, p: f64) {
    let sd = (n * p * (1.0 - p)).sqrt();
    assert!(
        (k - n * p).abs() <= 5.0 * sd + 1.0,
        "{what}: {k} of {n}, expected {p} (±{:.1} at 5 sd)",
        5.0 * sd
    );
}

/// A table's write counters once the ended sessions' statistics have arrived (they
/// are published when a session ends).
fn table_counters(srv: &TestServer, db: &str, table: &str) -> (f64, f64, f64) {
    srv.wait_for_sessions_to_end(db);
    let sql = format!(
        "select n_tup_ins || ' ' || n_tup_upd || ' ' || n_tup_del from pg_stat_user_tables where relname = '{table}'"
    );
    let now = srv.psql(db, &sql);
    let v: Vec<f64> = now.trim().split(' ').map(|x| x.parse().unwrap()).collect();
    (v[0], v[1], v[2])
}

#[test]
fn list_and_show_print_the_builtin_packs() {
    let srv = TestServer::shared();
    let o = pgsurge(srv, &["workload", "list"]);
    ok(&o);
    for name in [
        "tpcc",
        "ycsb-a",
        "ycsb-f",
        "oltp-read-write",
        "oltp-point-select",
        "oltp-insert",
    ] {
        assert!(
            o.stdout.lines().any(|l| l.starts_with(name)),
            "{name}:\n{}",
            o.stdout
        );
    }
    let o = pgsurge(srv, &["workload", "show", "tpcc"]);
    ok(&o);
    for file in [
        "workload.toml",
        "schema.sql",
        "load/warehouse.sql",
        "new_order.sql",
        "payment.sql",
        "order_status.sql",
        "delivery.sql",
        "stock_level.sql",
    ] {
        assert!(
            o.stdout.contains(&format!("==> {file} <==")),
            "{file} not shown"
        );
    }
    assert!(o.stdout.contains("CREATE TABLE order_line"));
    let o = pgsurge(srv, &["workload", "show", "nosuch"]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("no workload \"nosuch\""), "{}", o.stderr);
}

#[test]
fn workload_new_replaces_nothing_and_follows_no_symlink() {
    let srv = TestServer::shared();
    let scratch = pgsurge_testkit::scratch_dir("workload-new-refuses");
    let outside = scratch.path().join("outside");
    std::fs::create_dir_all(&outside).unwrap();
    let mine = outside.join("mine.sql");
    std::fs::write(&mine, "-- the user's own file\n").unwrap();
    let unchanged = |p: &Path, text: &str| {
        assert_eq!(std::fs::read_to_string(p).unwrap(), text, "{}", p.display());
    };
    // Each DIR holds one thing a pack writes, and no workload.toml.
    type Prepare<'a> = &'a dyn Fn(&Path);
    let cases: [(&str, Prepare); 4] = [
        ("schema.sql", &|d| {
            std::fs::write(d.join("schema.sql"), "-- my schema\n").unwrap()
        }),
        ("finish.sql", &|d| {
            std::os::unix::fs::symlink(&mine, d.join("finish.sql")).unwrap()
        }),
        ("txn.sql", &|d| {
            std::os::unix::fs::symlink(d.join("gone.sql"), d.join("txn.sql")).unwrap()
        }),
        ("load", &|d| {
            std::os::unix::fs::symlink(&outside, d.join("load")).unwrap()
        }),
    ];
    for (what, prepare) in cases {
        let dir = scratch
            .path()
            .join(format!("pack-{}", what.replace('.', "-")));
        std::fs::create_dir_all(&dir).unwrap();
        prepare(&dir);
        let o = pgsurge(srv, &["workload", "new", dir.to_str().unwrap()]);
        assert_eq!(o.code, 1, "{what}: {}{}", o.stdout, o.stderr);
        assert!(
            o.stderr.contains(&dir.join(what).display().to_string())
                && o.stderr.contains("nothing written"),
            "{what}: {}",
            o.stderr
        );
        // Nothing written: not the manifest, not through the symlinks.
        assert!(!dir.join("workload.toml").exists(), "{what}");
        assert!(!dir.join("gone.sql").exists(), "{what}");
        unchanged(&mine, "-- the user's own file\n");
        assert_eq!(
            std::fs::read_dir(&outside).unwrap().count(),
            1,
            "{what}: written outside DIR"
        );
        if what == "schema.sql" {
            unchanged(&dir.join("schema.sql"), "-- my schema\n");
        }
    }
    // A copy of a pack (--from) is refused the same way.
    let dir = scratch.path().join("copy");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("schema.sql"), "-- mine\n").unwrap();
    let o = pgsurge(
        srv,
        &["workload", "new", dir.to_str().unwrap(), "--from", "ycsb-a"],
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    unchanged(&dir.join("schema.sql"), "-- mine\n");
    assert!(!dir.join("workload.toml").exists());
}

fn edit(path: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(path).unwrap();
    assert!(text.contains(from), "{from:?} not in {}", path.display());
    std::fs::write(path, text.replacen(from, to, 1)).unwrap();
}

#[test]
fn a_pack_from_workload_new_loads_runs_and_checks_once_edited() {
    let srv = TestServer::shared();
    let db = srv.create_database("workload_user_pack");
    let scratch = pgsurge_testkit::scratch_dir("workload-user-pack");
    let dir = scratch.path().join("kv");
    let d = dir.to_str().unwrap();
    ok(&pgsurge(srv, &["workload", "new", d]));
    // A second `new` never replaces a pack.
    let o = pgsurge(srv, &["workload", "new", d]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("already exists"), "{}", o.stderr);

    // Edited: every transaction updates, rows are 500 per unit.
    edit(
        &dir.join("workload.toml"),
        "read_percent = 80",
        "read_percent = 0",
    );
    edit(
        &dir.join("load/kv.sql"),
        "(:unit - 1) * 1000 + 1, :unit * 1000",
        "(:unit - 1) * 500 + 1, :unit * 500",
    );
    edit(
        &dir.join("txn.sql"),
        "random(1, 1000 * :scale)",
        "random(1, 500 * :scale)",
    );
    edit(
        &dir.join("workload.toml"),
        "count(*) / 1000",
        "count(*) / 500",
    );
    let o = pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            d,
            "-i",
            "-s",
            "3",
            "--init-jobs",
            "2",
            &db,
        ],
    );
    ok(&o);
    assert_eq!(num(srv, &db, "select count(*) from kv"), 1500.0);
    let o = pgsurge(srv, &["bench", "--workload", d, "-c", "2", "-t", "50", &db]);
    ok(&o);
    assert!(o.stdout.contains("scaling factor: 3"), "{}", o.stdout);
    assert!(
        o.stdout.contains("updates = 100 (in the run"),
        "{}",
        o.stdout
    );
    // -D overrides a parameter: all reads.
    let o = pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            d,
            "-D",
            "read_percent=100",
            "-t",
            "40",
            &db,
        ],
    );
    ok(&o);
    assert!(o.stdout.contains("updates = 0 (in the run"), "{}", o.stdout);

    // Stored, the run's command line names the pack, not its scripts.
    let store_path = scratch.path().join("runs.db");
    let store_arg = format!("--store={}", store_path.display());
    ok(&pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            d,
            "-t",
            "10",
            "-D",
            "read_percent=50",
            &store_arg,
            &db,
        ],
    ));
    let mut store = pgsurge_store::Store::open(store_path.to_str().unwrap()).unwrap();
    let runs = store
        .list_runs(&pgsurge_store::RunFilter::default())
        .unwrap();
    let line = runs[0].record.command_line.clone().unwrap();
    assert!(
        line.starts_with(&format!("pgsurge bench --workload={d} ")),
        "{line}"
    );
    assert!(line.contains("--define=read_percent=50"), "{line}");
    assert!(!line.contains("--file="), "{line}");

    let o = pgsurge(srv, &["workload", "check", d, &db]);
    ok(&o);
    srv.psql(&db, "delete from kv where k = 700");
    let o = pgsurge(srv, &["workload", "check", d, &db]);
    assert_eq!(o.code, 1, "{}", o.stdout);
    assert!(o.stdout.contains("VIOLATED  every key"), "{}", o.stdout);
    assert!(o.stdout.lines().any(|l| l.trim() == "700"), "{}", o.stdout);
}

#[test]
fn a_broken_pack_is_refused_naming_file_line_and_key() {
    let srv = TestServer::shared();
    let scratch = pgsurge_testkit::scratch_dir("workload-broken-pack");
    let dir = scratch.path().join("p");
    let d = dir.to_str().unwrap();
    ok(&pgsurge(srv, &["workload", "new", d]));
    let manifest = dir.join("workload.toml");
    let good = std::fs::read_to_string(&manifest).unwrap();
    let weight_line = good
        .lines()
        .position(|l| l.starts_with("weight = 1"))
        .unwrap()
        + 1;

    edit(&manifest, "weight = 1", "weight = \"heavy\"");
    let o = pgsurge(srv, &["bench", "--workload", d, "-t", "1", "nodb"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains(&manifest.display().to_string()),
        "{}",
        o.stderr
    );
    assert!(
        o.stderr.contains(&format!("line {weight_line}")),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("weight"), "{}", o.stderr);

    std::fs::write(&manifest, good.replace("weight = 1", "wieght = 1")).unwrap();
    let o = pgsurge(srv, &["workload", "check", d]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("wieght"), "{}", o.stderr);
    assert!(
        o.stderr.contains(&format!("line {weight_line}")),
        "{}",
        o.stderr
    );

    std::fs::write(&manifest, &good).unwrap();
    let txn = dir.join("txn.sql");
    edit(
        &txn,
        "\\if random(1, 100)",
        "\\sett x 1\n\\if random(1, 100)",
    );
    let o = pgsurge(srv, &["bench", "--workload", d, "-i", "nodb"]);
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains(&txn.display().to_string()),
        "{}",
        o.stderr
    );
    assert!(o.stderr.contains("sett"), "{}", o.stderr);
    assert!(o.stderr.contains(":3"), "no line number: {}", o.stderr);

    // -i takes the loader's options only.
    let o = pgsurge(
        srv,
        &["bench", "--workload", "tpcc", "-i", "-c", "2", "nodb"],
    );
    assert_eq!(o.code, 1);
    assert!(
        o.stderr.contains("initialization (-i) mode"),
        "{}",
        o.stderr
    );
    let o = pgsurge(
        srv,
        &["bench", "--workload", "tpcc", "-i", "-I", "dtg", "nodb"],
    );
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("do not apply"), "{}", o.stderr);
    let o = pgsurge(srv, &["bench", "--workload", "nosuch", "-t", "1", "nodb"]);
    assert_eq!(o.code, 1);
    assert!(o.stderr.contains("no workload \"nosuch\""), "{}", o.stderr);
}

#[test]
fn ycsb_reads_updates_and_inserts_in_its_proportions_with_skew() {
    let srv = TestServer::shared();
    let db = srv.create_database("workload_ycsb");
    ok(&pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            "ycsb-a",
            "-i",
            "-D",
            "field_length=12",
            &db,
        ],
    ));
    assert_eq!(
        srv.psql(
            &db,
            "select count(*), min(length(field3)), max(length(field9)) from usertable"
        )
        .trim(),
        "100000|12|12"
    );
    srv.psql(&db, "create table loaded as select * from usertable");
    let (_, upd0, _) = table_counters(srv, &db, "usertable");
    let o = pgsurge(
        srv,
        &["bench", "--workload", "ycsb-a", "-c", "2", "-t", "500", &db],
    );
    ok(&o);
    // Workload A inserts nothing: no count of inserted records.
    assert!(!o.stdout.contains("records inserted"), "{}", o.stdout);
    let (_, upd1, _) = table_counters(srv, &db, "usertable");
    let updates = upd1 - upd0;
    assert_proportion("workload A updates", updates, 1000.0, 0.5);
    // Zipfian keys: far fewer distinct records than updates (uniform keys over
    // 100,000 records would repeat almost none).
    let changed = num(
        srv,
        &db,
        "select count(*) from usertable u join loaded l using (ycsb_key) \
         where row(u.*)::text <> row(l.*)::text",
    );
    assert!(
        changed > 0.0 && changed < 0.8 * updates,
        "{changed} records for {updates} updates"
    );

    // Workload D: 5 % inserts, reads of the latest records.
    let o = pgsurge(
        srv,
        &["bench", "--workload", "ycsb-d", "-c", "2", "-t", "500", &db],
    );
    ok(&o);
    let inserted: f64 = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("records inserted = "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("{}", o.stdout))
        .parse()
        .unwrap();
    assert_eq!(
        num(srv, &db, "select count(*) from usertable"),
        100_000.0 + inserted
    );
    assert_proportion("workload D inserts", inserted, 1000.0, 0.05);
    let o = pgsurge(srv, &["workload", "check", "ycsb-d", &db]);
    ok(&o);
}

#[test]
fn oltp_read_write_runs_sysbenchs_statement_mix() {
    let srv = TestServer::shared();
    let db = srv.create_database("workload_oltp");
    ok(&pgsurge(
        srv,
        &["bench", "--workload", "oltp-read-write", "-i", &db],
    ));
    assert_eq!(
        srv.psql(
            &db,
            "select count(*), min(id), max(id), max(length(c)), max(length(pad)) from sbtest1"
        )
        .trim(),
        "100000|1|100000|119|59"
    );
    let (ins0, upd0, del0) = table_counters(srv, &db, "sbtest1");
    let o = pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            "oltp-read-write",
            "-c",
            "2",
            "-t",
            "100",
            "-M",
            "prepared",
            &db,
        ],
    );
    ok(&o);
    assert!(
        o.stdout
            .contains("number of transactions actually processed: 200/200"),
        "{}",
        o.stdout
    );
    let (ins1, upd1, del1) = table_counters(srv, &db, "sbtest1");
    // Per transaction: two updates, one delete, one insert.
    assert_eq!(upd1 - upd0, 400.0);
    assert_eq!(del1 - del0, 200.0);
    assert_eq!(ins1 - ins0, 200.0);
    assert_eq!(num(srv, &db, "select count(*) from sbtest1"), 100_000.0);
    ok(&pgsurge(
        srv,
        &["workload", "check", "oltp-read-write", &db],
    ));

    let o = pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            "oltp-insert",
            "-c",
            "2",
            "-t",
            "50",
            &db,
        ],
    );
    ok(&o);
    assert!(
        o.stdout.contains("rows inserted = 100 (in the run"),
        "{}",
        o.stdout
    );
    assert_eq!(num(srv, &db, "select count(*) from sbtest1"), 100_100.0);
    for pack in ["oltp-read-only", "oltp-point-select", "oltp-update-index"] {
        let o = pgsurge(srv, &["bench", "--workload", pack, "-t", "20", &db]);
        ok(&o);
        assert!(
            o.stdout.contains("actually processed: 20/20"),
            "{pack}: {}",
            o.stdout
        );
    }
}

#[test]
fn a_failing_load_step_names_its_file_and_unit() {
    let srv = TestServer::shared();
    let db = srv.create_database("workload_load_fails");
    let scratch = pgsurge_testkit::scratch_dir("workload-load-fails");
    let dir = scratch.path().join("kv");
    let d = dir.to_str().unwrap();
    ok(&pgsurge(srv, &["workload", "new", d]));
    edit(
        &dir.join("load/kv.sql"),
        "INSERT INTO kv",
        "SELECT 1 / (:unit - 2);\nINSERT INTO kv",
    );
    let o = pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            d,
            "-i",
            "-s",
            "3",
            "--init-jobs",
            "2",
            &db,
        ],
    );
    assert_eq!(o.code, 1, "{}", o.stderr);
    assert!(
        o.stderr
            .contains("pgbench: error: load/kv.sql: unit 2: ERROR:  division by zero"),
        "{}",
        o.stderr
    );
    assert!(!o.stderr.contains("done in"), "{}", o.stderr);
}

#[test]
fn ctrl_c_stops_a_load_at_once_and_cancels_its_statements() {
    let srv = TestServer::shared();
    let db = srv.create_database("workload_load_ctrl_c");
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.args([
        "bench",
        "--workload",
        "tpcc",
        "-i",
        "-s",
        "20",
        "--init-jobs",
        "2",
        &db,
    ])
    .stderr(std::process::Stdio::piped());
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    let mut child = c.spawn().unwrap();
    let stderr = child.stderr.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel::<String>();
    std::thread::spawn(move || {
        use std::io::BufRead;
        for line in std::io::BufReader::new(stderr)
            .lines()
            .map_while(Result::ok)
        {
            let _ = tx.send(line);
        }
    });
    let mut seen = String::new();
    loop {
        let line = rx
            .recv_timeout(std::time::Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("no per-warehouse step in:\n{seen}"));
        seen.push_str(&line);
        seen.push('\n');
        if line.starts_with("loading load/warehouse.sql") {
            break;
        }
    }
    std::thread::sleep(std::time::Duration::from_millis(500));
    let pid = i32::try_from(child.id()).unwrap();
    // SAFETY: sends SIGINT to the child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGINT) }, 0);
    let sent = std::time::Instant::now();
    let status = child.wait().unwrap();
    let waited = sent.elapsed();
    // The rest of its output, until the reader meets its end.
    while let Ok(line) = rx.recv_timeout(std::time::Duration::from_secs(60)) {
        seen.push_str(&line);
        seen.push('\n');
    }
    assert_eq!(status.code(), Some(1), "{seen}");
    assert!(
        seen.contains("pgbench: error: loading was canceled"),
        "{seen}"
    );
    // At once: the load of twenty warehouses would take far longer.
    assert!(
        waited < std::time::Duration::from_secs(20),
        "took {waited:?}:\n{seen}"
    );
    // Each session had its statement's error back before the process exited: none
    // still runs a statement (one not cancelled would run on after its client left).
    let others = format!("datname = '{db}' and pid <> pg_backend_pid()");
    let active = num(
        srv,
        &db,
        &format!("select count(*) from pg_stat_activity where {others} and state = 'active'"),
    );
    assert_eq!(
        active, 0.0,
        "statements still running after the interrupted load"
    );
    // Their backends exit once they read the disconnection, which on a busy machine
    // can take a moment after the process is gone.
    let waiting = std::time::Instant::now();
    while num(
        srv,
        &db,
        &format!("select count(*) from pg_stat_activity where {others}"),
    ) > 0.0
    {
        assert!(
            waiting.elapsed() < std::time::Duration::from_secs(60),
            "sessions left after the interrupted load: {}",
            srv.psql(
                &db,
                &format!("select state, query from pg_stat_activity where {others}")
            )
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // The interrupted load is not measured.
    let o = pgsurge(srv, &["bench", "--workload", "tpcc", "-t", "5", &db]);
    assert_eq!(o.code, 1, "a half-loaded pack was measured:\n{}", o.stdout);
    assert!(
        o.stderr
            .contains("pgbench: error: workload tpcc is not loaded: "),
        "{}",
        o.stderr
    );
}
