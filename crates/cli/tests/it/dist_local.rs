//! Distributed runs end to end on one machine: `pgsurge dist local` runs 4 generators ×
//! 2 clients against a real server with a common `--start-at`; the merged count is
//! the sum of the generators', the merged histogram is bucket for bucket the sum of
//! theirs, starts are synchronised, seeds are derived from the run seed, and the
//! server's commit count over the run matches the merged count within 1 %. Also: a
//! start time in the past is refused with exit code 1, and a generator that hangs is
//! stopped at its deadline, named, and its output kept.

use std::process::Command;

use pgsurge_generators::histograms::{buckets, decode};
use pgsurge_results::RunResult;
use pgsurge_server::testing::TestServer;

fn pgsurge(srv: &TestServer, args: &[&str]) -> (String, String, i32) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.args(args);
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    let out = c.output().expect("run pgsurge");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn read(p: &std::path::Path) -> RunResult {
    serde_json::from_str(&std::fs::read_to_string(p).expect("read")).expect("result document")
}

fn commits(srv: &TestServer, db: &str) -> i64 {
    let q = format!(
        "SELECT pg_stat_clear_snapshot(); SELECT xact_commit FROM pg_stat_database WHERE datname = '{db}'"
    );
    srv.psql(db, &q)
        .lines()
        .rev()
        .find_map(|l| l.trim().parse().ok())
        .expect("xact_commit")
}

#[test]
fn four_local_generators_merge_exactly_and_match_the_server() {
    let srv = TestServer::shared();
    let db = srv.create_database("dist");
    let (_, err, code) = pgsurge(srv, &["bench", "-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");
    let dir = pgsurge_testkit::scratch_dir("dist-local");
    let out_dir = format!("--out-dir={}", dir.path().display());
    let merged_json = dir.path().join("merged.json");
    let json = format!("--json={}", merged_json.display());

    // The sessions before the run (the load, psql's) have published their statistics.
    srv.wait_for_sessions_to_end(&db);
    let before = commits(srv, &db);
    let (out, err, code) = pgsurge(
        srv,
        &[
            "dist",
            "local",
            "-n",
            "4",
            "-c",
            "8",
            "--random-seed=7",
            // Time for the four processes to start and connect before the common
            // start, on a busy machine too.
            "--start-in=5",
            &out_dir,
            &json,
            "--",
            "-S",
            "-n",
            "-T",
            "3",
            &db,
        ],
    );
    assert_eq!(code, 0, "stdout:\n{out}\nstderr:\n{err}");
    srv.wait_for_sessions_to_end(&db);
    let after = commits(srv, &db);

    let gens: Vec<RunResult> = (0..4)
        .map(|i| read(&dir.path().join(format!("local-{i}.json"))))
        .collect();
    let merged = read(&merged_json);
    let sum: u64 = gens.iter().map(|g| g.totals.transactions).sum();
    assert!(sum > 100, "the run did work: {sum}");
    assert_eq!(merged.totals.transactions, sum);
    assert_eq!(merged.options.clients, 8);
    assert!(
        out.contains(&format!(
            "number of transactions actually processed: {sum}/"
        )) || out.contains(&format!(
            "number of transactions actually processed: {sum}\n"
        )),
        "{out}"
    );
    assert!(out.contains("number of generators: 4\n"), "{out}");
    assert!(out.contains("start skew: "), "{out}");

    // Bucket for bucket: the merged histogram is the sum of the generators'.
    let mut sum_h = None;
    for g in &gens {
        let h = decode(g.totals.latency.histogram.as_deref().expect("histogram")).unwrap();
        pgsurge_generators::histograms::add(&mut sum_h, &h).unwrap();
    }
    let m = decode(merged.totals.latency.histogram.as_deref().expect("merged")).unwrap();
    assert_eq!(buckets(&m), buckets(&sum_h.expect("four")));

    // One intended start; every generator started at it, not before and not much later
    // (a thread woken on a busy machine may wait its turn for a core); derived seeds.
    let intended = gens[0]
        .generator
        .as_ref()
        .unwrap()
        .intended_start_unix_us
        .expect("start-at");
    for (i, g) in gens.iter().enumerate() {
        let gi = g.generator.as_ref().expect("generator section");
        assert_eq!(gi.intended_start_unix_us, Some(intended));
        assert_eq!((gi.index, gi.count), (Some(i as u32), Some(4)));
        assert_eq!(gi.name, format!("local-{i}"));
        let late = gi.actual_start_unix_us - intended;
        assert!(
            (0..500_000).contains(&late),
            "generator {i} started {late} µs after --start-at"
        );
        assert_eq!(g.options.clients, 2);
        assert_eq!(
            g.options.random_seed,
            Some(pgsurge_generators::generator_seed(7, i as u32))
        );
        assert!(
            g.intervals.iter().all(|iv| iv.histogram.is_some()),
            "per-second histograms"
        );
    }
    // The server saw the same number of commits (plus each process's few setup queries).
    let server = (after - before) as f64;
    let diff = (server - sum as f64).abs() / sum as f64;
    assert!(
        diff < 0.01,
        "server commits {server} vs merged {sum} ({:.3} %)",
        diff * 100.0
    );
}

#[test]
fn start_time_in_the_past_exits_1() {
    let srv = TestServer::shared();
    let (_, err, code) = pgsurge(
        srv,
        &[
            "bench",
            "--start-at=2020-01-01T00:00:00Z",
            "-t",
            "1",
            "postgres",
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("pgbench: error: start time \"2020-01-01T00:00:00Z\" is "),
        "{err}"
    );
}

#[test]
fn a_hung_generator_is_stopped_at_its_deadline_and_named() {
    let srv = TestServer::shared();
    let db = srv.create_database("dist_hang");
    let dir = pgsurge_testkit::scratch_dir("dist-local");
    // -T 1 ends only once the statement in flight is answered: a ten-minute sleep on
    // the server hangs every generator well past the run.
    let script = dir.path().join("hang.sql");
    std::fs::write(&script, "select pg_sleep(600);\n").unwrap();
    let out_dir = dir.path().join("out");
    let started = std::time::Instant::now();
    let (_, err, code) = pgsurge(
        srv,
        &[
            "dist",
            "local",
            "-n",
            "2",
            "-c",
            "2",
            // Time for the processes to start before the common start (one that comes
            // up after it is refused), on a busy machine too.
            "--start-in=5",
            "--deadline=3",
            &format!("--out-dir={}", out_dir.display()),
            "--",
            "-n",
            "-T",
            "1",
            "-f",
            script.to_str().unwrap(),
            &db,
        ],
    );
    let took = started.elapsed();
    assert_eq!(code, 1, "{err}");
    assert!(
        took.as_secs() < 60,
        "stopped at the deadline, took {took:?}"
    );
    for name in ["local-0", "local-1"] {
        assert!(
            err.contains(&format!(
                "{name} was still running 3 s after the common start"
            )),
            "{err}"
        );
        assert!(out_dir.join(format!("{name}.err")).exists(), "output kept");
    }
    assert!(err.contains(&out_dir.display().to_string()), "{err}");
}

#[test]
fn a_merged_json_that_cannot_be_written_fails_before_any_generator_starts() {
    let srv = TestServer::shared();
    let db = srv.create_database("dist_json_first");
    let dir = pgsurge_testkit::scratch_dir("dist-local");
    let out_dir = dir.path().join("out");
    let started = std::time::Instant::now();
    // A directory is no JSON file; the 600 s run must never start.
    let (out, err, code) = pgsurge(
        srv,
        &[
            "dist",
            "local",
            "-n",
            "2",
            "-c",
            "2",
            &format!("--json={}", dir.path().display()),
            &format!("--out-dir={}", out_dir.display()),
            "--",
            "-n",
            "-S",
            "-T",
            "600",
            &db,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("Is a directory"), "{err}");
    assert!(out.is_empty(), "{out}");
    assert!(started.elapsed().as_secs() < 60);
    assert!(
        !out_dir.join("local-0.out").exists(),
        "no generator started"
    );
}
