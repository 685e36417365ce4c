//! A log replayed by two generators (`pgsurge dist local -n 2 -- replay …`): a real
//! pgbench run (tpcb-like, `-M prepared`, four clients, a fixed seed) is logged, then
//! replayed onto one copy of the database as it was before the run by one
//! `pgsurge replay`, and onto another by two generators that each play half of the
//! sessions from one start. Both copies end as pgbench left the original, and the
//! merged report counts what the single replay counts, fingerprint by fingerprint.

use std::process::Command;

use serde_json::Value;

use super::replay_roundtrip::{
    assert_schema, logged_pgbench, logging_server, pgbench_init, replay, state,
};

fn report(path: &std::path::Path) -> Value {
    serde_json::from_slice(&std::fs::read(path).expect("report")).expect("report JSON")
}

/// Fingerprint → (logged, replayed) statements.
fn counts(report: &Value) -> Vec<(String, u64, u64)> {
    let mut v: Vec<(String, u64, u64)> = report["fingerprints"]
        .as_array()
        .expect("fingerprints")
        .iter()
        .map(|f| {
            (
                f["fingerprint"].as_str().unwrap().to_string(),
                f["logged"]["statements"].as_u64().unwrap(),
                f["replayed"]["statements"].as_u64().unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn a_log_replayed_by_two_generators_ends_as_one_replay_and_merges_to_its_counts() {
    let Some(pgbench) = pgsurge_testkit::reference_pgbench() else {
        return;
    };
    // Replays at --max load the machine on purpose: not beside a measuring test.
    let _heavy = pgsurge_testkit::one_heavy_test_at_a_time();
    let srv = logging_server();
    let dir = pgsurge_testkit::scratch_dir("replay-dist");
    let db = srv.create_database("rd");
    pgbench_init(pgbench, &srv, &db);
    let (one, two) = (format!("{db}_one"), format!("{db}_two"));
    for c in [&one, &two] {
        srv.psql("postgres", &format!("create database {c} template {db}"));
    }
    let run = ["-M", "prepared", "-c", "4", "-t", "30", "--random-seed=5"];
    let ([log, _, _], expected) = logged_pgbench(pgbench, &srv, &db, (&run, 4), dir.path(), "run");

    let single = dir.path().join("one.json");
    let (code, _, stderr) = replay(
        &srv,
        &[
            "--max",
            "-d",
            &one,
            "--json",
            single.to_str().unwrap(),
            log.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "{stderr}");

    let out_dir = dir.path().join("generators");
    let merged = dir.path().join("two.json");
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.args(["dist", "local", "-n", "2", "--start-in", "1s", "--out-dir"])
        .arg(&out_dir)
        .arg("--json")
        .arg(&merged)
        .args(["--", "replay", "--max", "-d", &two])
        .arg(&log);
    srv.apply_env(&mut c);
    let out = c.output().expect("dist local");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{stdout}{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("merged from 2 generators"), "{stdout}");

    // Both copies end as pgbench left the original.
    assert_eq!(state(&srv, &one), expected, "one replay");
    assert_eq!(state(&srv, &two), expected, "two generators");

    // The merge counts what the single replay counts.
    let (single, merged) = (report(&single), report(&merged));
    assert_schema(&merged);
    assert_eq!(merged["settings"]["generators"], 2);
    assert_eq!(counts(&merged), counts(&single));
    for (fp, logged, replayed) in counts(&merged) {
        assert_eq!(logged, replayed, "{fp}");
    }
    for key in ["sessions", "statements", "executes", "errors"] {
        assert_eq!(merged["read"][key], single["read"][key], "read.{key}");
    }
    assert_eq!(merged["read"]["sessions"], 5);
    for key in ["sessions", "statements", "unexpected_errors", "not_sent"] {
        assert_eq!(merged["replay"][key], single["replay"][key], "replay.{key}");
    }
    // Each generator played a share of its own: the sessions split, none twice.
    let shares: Vec<u64> = (0..2)
        .map(|i| report(&out_dir.join(format!("local-{i}.json"))))
        .map(|r| {
            assert_eq!(r["settings"]["generator"][1], 2, "{}", r["settings"]);
            r["replay"]["sessions"].as_u64().unwrap()
        })
        .collect();
    assert!(shares.iter().all(|&s| s > 0), "{shares:?}");
    assert_eq!(shares.iter().sum::<u64>(), 5);
    // The latency histograms pooled: each fingerprint's replayed count is its
    // histogram's.
    for f in merged["fingerprints"].as_array().unwrap() {
        let n = f["replayed"]["statements"].as_u64().unwrap();
        if let Some(l) = f["replayed"]["latency"].as_object() {
            assert_eq!(l["count"].as_u64(), Some(n), "{f}");
        }
    }
}

#[test]
fn a_replay_option_set_per_generator_is_refused_before_anything_runs() {
    let dir = pgsurge_testkit::scratch_dir("replay-dist-refused");
    let out_dir = dir.path().join("generators");
    for (extra, says) in [
        (
            "--strict-order",
            "one order across sessions needs one process",
        ),
        ("--generator=1/2", "gives each generator its share"),
        ("--store", "each generator would store a share"),
    ] {
        let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
            .args(["dist", "local", "-n", "2", "--out-dir"])
            .arg(&out_dir)
            .args(["--", "replay", extra, "x.log"])
            .output()
            .expect("dist local");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{extra}: {err}");
        assert!(err.contains(says), "{extra}: {err}");
    }
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args(["dist", "local", "-n", "2", "-c", "8", "--out-dir"])
        .arg(&out_dir)
        .args(["--", "replay", "x.log"])
        .output()
        .expect("dist local");
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("split the log's sessions"), "{err}");
}
