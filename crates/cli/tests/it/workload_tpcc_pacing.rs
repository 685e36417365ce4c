//! The `tpcc` pack's card deck, keying and think times, and efficiency, end to end:
//! each client's transactions are dealt from a deck of 45/43/4/4/4 (exact over every
//! 100 of them, replayed by the same `--random-seed`); with `-D think_times=1` the
//! clients pause around their transactions without the pauses counting in latency,
//! and the throughput falls to what the pauses allow; the efficiency line is tpmC over
//! 12.86 per warehouse; a run with the full times ends at its `-T` and at Ctrl-C.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use pgsurge_server::testing::TestServer;

use crate::workload_common::{load_tpcc, pgsurge, Out};

/// The scripts in manifest order, their weights, keying times and mean think times (s).
const SCRIPTS: [(&str, u64, f64, f64); 5] = [
    ("new_order.sql", 45, 18.0, 12.0),
    ("payment.sql", 43, 3.0, 12.0),
    ("order_status.sql", 4, 2.0, 10.0),
    ("delivery.sql", 4, 2.0, 5.0),
    ("stock_level.sql", 4, 2.0, 5.0),
];

fn json_of(path: &Path) -> serde_json::Value {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

fn script<'a>(json: &'a serde_json::Value, file: &str) -> &'a serde_json::Value {
    json["scripts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str() == Some(&format!("tpcc/{file}")))
        .unwrap_or_else(|| panic!("no script {file}"))
}

/// The per-transaction log of a run: `(client, script)` in each client's order, from
/// every `PREFIX.*` file in `dir`.
fn dealt(dir: &Path, prefix: &str) -> BTreeMap<u64, Vec<u64>> {
    let mut by_client: BTreeMap<u64, Vec<(u64, u64)>> = BTreeMap::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        if !name.starts_with(&format!("{prefix}.")) {
            continue;
        }
        for line in std::fs::read_to_string(&path).unwrap().lines() {
            // client_id transaction_no time script_no time_epoch time_us
            let f: Vec<&str> = line.split(' ').collect();
            let (client, txn, script) = (
                f[0].parse().unwrap(),
                f[1].parse().unwrap(),
                f[3].parse().unwrap(),
            );
            by_client.entry(client).or_default().push((txn, script));
        }
        std::fs::remove_file(&path).unwrap();
    }
    by_client
        .into_iter()
        .map(|(c, mut v)| {
            v.sort();
            (c, v.into_iter().map(|(_, s)| s).collect())
        })
        .collect()
}

fn run_logged(srv: &TestServer, db: &str, dir: &Path, prefix: &str, extra: &[&str]) -> Out {
    let log_prefix = format!("--log-prefix={}", dir.join(prefix).display());
    let mut args = vec![
        "bench",
        "--workload",
        "tpcc",
        "-c",
        "3",
        "-j",
        "2",
        "-t",
        "100",
        "--max-tries",
        "50",
        "-l",
        &log_prefix,
    ];
    args.extend_from_slice(extra);
    args.push(db);
    let o = pgsurge(srv, &args);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    o
}

#[test]
fn each_client_deals_the_mix_from_a_deck_that_the_seed_replays() {
    let srv = TestServer::shared();
    let db = srv.create_database("tpcc_deck");
    load_tpcc(srv, &db, "1", "1", "3");
    let scratch = pgsurge_testkit::scratch_dir("workload-tpcc-deck");
    let json_path = scratch.path().join("run.json");
    let json_arg = format!("--json={}", json_path.display());
    run_logged(
        srv,
        &db,
        scratch.path(),
        "a",
        &["--random-seed", "11", &json_arg],
    );

    // Every client ran one whole deck: 45/43/4/4/4 each, 135/129/12/12/12 in all.
    let a = dealt(scratch.path(), "a");
    assert_eq!(a.len(), 3, "{a:?}");
    for (client, scripts) in &a {
        assert_eq!(scripts.len(), 100, "client {client}");
        let counts: Vec<u64> = (0..5)
            .map(|i| scripts.iter().filter(|&&s| s == i).count() as u64)
            .collect();
        assert_eq!(counts, [45, 43, 4, 4, 4], "client {client}: {scripts:?}");
    }
    let json = json_of(&json_path);
    for (file, weight, _, _) in SCRIPTS {
        let stats = &script(&json, file)["stats"];
        let dealt = stats["transactions"].as_u64().unwrap() + stats["failures"].as_u64().unwrap();
        assert_eq!(dealt, 3 * weight, "{file}: {stats}");
    }

    // The same seed deals the same cards; another seed, other cards (shuffled, not
    // in script order).
    run_logged(srv, &db, scratch.path(), "b", &["--random-seed", "11"]);
    assert_eq!(dealt(scratch.path(), "b"), a);
    run_logged(srv, &db, scratch.path(), "c", &["--random-seed", "12"]);
    let c = dealt(scratch.path(), "c");
    assert_ne!(c, a);
    for scripts in a.values().chain(c.values()) {
        assert!(scripts.windows(2).any(|w| w[0] > w[1]), "{scripts:?}");
    }

    // --mix=random draws each script by weight, as pgbench: the clients' counts are
    // not each exactly the deck's.
    run_logged(
        srv,
        &db,
        scratch.path(),
        "d",
        &["--random-seed", "11", "--mix=random"],
    );
    let d = dealt(scratch.path(), "d");
    let exact = d
        .values()
        .filter(|s| {
            (0..5)
                .map(|i| s.iter().filter(|&&x| x == i).count())
                .eq([45, 43, 4, 4, 4])
        })
        .count();
    assert!(exact < 3, "{d:?}");
}

#[test]
fn a_deck_larger_than_ten_thousand_cards_and_bad_mixes_are_refused() {
    let srv = TestServer::shared();
    let scratch = pgsurge_testkit::scratch_dir("workload-deck-refused");
    let script = scratch.path().join("s.sql");
    std::fs::write(&script, "SELECT 1;\n").unwrap();
    let big = format!("{}@10001", script.display());
    let o = pgsurge(
        srv,
        &["bench", "-f", &big, "--mix=deck", "-t", "1", "postgres"],
    );
    assert_eq!(o.code, 1, "{}{}", o.stdout, o.stderr);
    assert!(
        o.stderr
            .contains("total weight 10001 is more than 10000 cards"),
        "{}",
        o.stderr
    );
    let o = pgsurge(
        srv,
        &["bench", "-f", &big, "--mix=cards", "-t", "1", "postgres"],
    );
    assert_eq!(o.code, 1);
    assert!(
        o.stderr
            .contains("invalid --mix \"cards\": expected \"random\" or \"deck\""),
        "{}",
        o.stderr
    );
    for (define, bad) in [("think_times=yes", "yes"), ("think_scale=-1", "-1")] {
        let o = pgsurge(
            srv,
            &[
                "bench",
                "--workload",
                "tpcc",
                "-D",
                "think_times=1",
                "-D",
                define,
                "-t",
                "1",
                "postgres",
            ],
        );
        assert_eq!(o.code, 1, "{define}: {}{}", o.stdout, o.stderr);
        let param = define.split('=').next().unwrap();
        assert!(
            o.stderr
                .contains(&format!("workload tpcc: parameter {param}: \"{bad}\"")),
            "{}",
            o.stderr
        );
    }
}

/// The number after `NAME = ` in the report.
fn metric(stdout: &str, name: &str) -> f64 {
    stdout
        .lines()
        .find_map(|l| l.strip_prefix(&format!("{name} = ")))
        .and_then(|l| l.split(' ').next())
        .unwrap_or_else(|| panic!("no {name} line:\n{stdout}"))
        .parse()
        .unwrap()
}

#[test]
fn think_times_pause_the_clients_outside_the_latency() {
    let srv = TestServer::shared();
    let db = srv.create_database("tpcc_think");
    load_tpcc(srv, &db, "1", "1", "3");
    let scratch = pgsurge_testkit::scratch_dir("workload-tpcc-think");
    let json_path = scratch.path().join("run.json");
    let json_arg = format!("--json={}", json_path.display());
    let (clients, secs, scale) = (8.0, 10.0, 0.05);
    let o = pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            "tpcc",
            "-c",
            "8",
            "-j",
            "2",
            "-T",
            "10",
            "--max-tries",
            "50",
            "-D",
            "think_times=1",
            "-D",
            "think_scale=0.05",
            &json_arg,
            &db,
        ],
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let json = json_of(&json_path);
    let duration = json["bench_duration_us"].as_f64().unwrap() / 1e6;
    assert!((secs - 0.5..secs + 2.0).contains(&duration), "{duration}");

    // Neither the keying nor the think time is in the latency: every transaction of a
    // script has its keying time (a fixed one), and some took less than that.
    let mut busy = 0.0;
    let mut total = 0.0;
    for (file, _, keying, think) in SCRIPTS {
        let stats = &script(&json, file)["stats"];
        let n = stats["transactions"].as_f64().unwrap() + stats["failures"].as_f64().unwrap();
        let mean_ms = stats["latency"]["mean_ms"].as_f64().unwrap_or(0.0);
        let min_ms = stats["latency"]["min_ms"].as_f64().unwrap_or(0.0);
        assert!(
            min_ms < keying * scale * 1000.0,
            "{file}: latency at least {min_ms} ms, keying {} ms",
            keying * scale * 1000.0
        );
        // What the clients spent on these transactions: pauses (their means) and
        // latency.
        busy += n * ((keying + think) * scale + mean_ms / 1000.0);
        total += n;
    }
    assert!(total > 20.0, "too few transactions: {total}");
    // The clients' time is their transactions' pauses and latencies: throughput is
    // what the pauses allow, up to the draws of the think times and each client's
    // last, unfinished pause.
    let ratio = busy / (clients * duration);
    assert!(
        (0.7..1.3).contains(&ratio),
        "{total} transactions took {busy:.1} s of pauses and latency in {clients} × {duration:.1} s"
    );
    // At most clients × duration / (the mix's mean keying and think time) of them.
    let mean_pause: f64 = SCRIPTS
        .iter()
        .map(|(_, w, k, t)| *w as f64 / 100.0 * (k + t) * scale)
        .sum();
    let tps = json["tps"].as_f64().unwrap();
    assert!(
        tps < 1.3 * clients / mean_pause,
        "tps {tps} above {}",
        clients / mean_pause
    );

    // Efficiency: tpmC over 12.86 per warehouse, from the printed numbers.
    let tpmc = metric(&o.stdout, "tpmC");
    let efficiency = metric(&o.stdout, "efficiency");
    let expected = tpmc / (12.86 * 1.0) * 100.0;
    assert!(
        (efficiency - expected).abs() <= 0.05 / 12.86 * 100.0 + 0.05 + 1e-9,
        "efficiency {efficiency} vs tpmC {tpmc}:\n{}",
        o.stdout
    );
    assert!(
        o.stdout.contains(&format!(
            "efficiency = {efficiency:.1} % (tpmC over the 12.86 × warehouses a TPC-C run at full think times can reach)"
        )) || o.stdout.contains(&format!("efficiency = {efficiency} % (")),
        "{}",
        o.stdout
    );
    let in_json = json["workload_metrics"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["name"] == "efficiency")
        .unwrap();
    assert_eq!(in_json["unit"], "%");
    let tpmc_json = json["workload_metrics"][1]["value"].as_f64().unwrap();
    assert!(
        (in_json["value"].as_f64().unwrap() - tpmc_json / 12.86 * 100.0).abs() < 1e-6,
        "{in_json}"
    );
    assert!(tpmc_json > 0.0);
    pgsurge_testkit::schema::assert_valid(pgsurge_results::RUN_RESULT_SCHEMA, &json);
}

#[test]
fn full_think_times_end_at_the_runs_end_and_at_ctrl_c() {
    let srv = TestServer::shared();
    let db = srv.create_database("tpcc_think_end");
    load_tpcc(srv, &db, "1", "1", "3");
    // With the full times every client is in its first keying time when -T 2 ends (of
    // 2 s and more; 18 s for a New-Order, which 45 % of the cards are, so some of the 16
    // clients are in one): the run ends then all the same.
    let start = Instant::now();
    let o = pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            "tpcc",
            "-c",
            "16",
            "-T",
            "2",
            "-D",
            "think_times=1",
            &db,
        ],
    );
    let took = start.elapsed();
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(took < Duration::from_secs(12), "took {took:?}");
    // (The clients were in keying and think times when the run ended: few
    // transactions, if any.)
    assert!(
        o.stdout
            .contains("number of transactions actually processed: "),
        "{}",
        o.stdout
    );

    // Ctrl-C while the clients pause.
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.args([
        "bench",
        "--workload",
        "tpcc",
        "-c",
        "16",
        "-T",
        "600",
        "-D",
        "think_times=1",
        &db,
    ]);
    srv.apply_env(&mut c);
    let mut child = c
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_secs(2));
    // SAFETY: plain kill(2) on the process this test started.
    assert_eq!(unsafe { libc::kill(child.id() as i32, libc::SIGINT) }, 0);
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() && start.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = start.elapsed();
    let _ = child.kill();
    let out = child.wait_with_output().unwrap();
    assert!(
        took < Duration::from_secs(12),
        "ended {took:?} after SIGINT: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(out.status.code(), Some(2));
}
