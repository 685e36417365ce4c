//! `bench --costs` on a server of its own (its WAL and CPU are nobody else's): the
//! per-transaction costs agree with what the server and the kernel count themselves.
//! WAL bytes per transaction of tpcb-like are `pg_stat_wal`'s delta over the run
//! divided by the transactions (within 1 %), select-only's are near zero, and the
//! server's CPU is what `/proc` says its processes used over the run.

use pgsurge_server::testing::{TestServer, TestServerOptions};
use std::process::Command;

fn bench(srv: &TestServer, args: &[&str]) -> (String, String, i32) {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.arg("bench").args(args);
    srv.apply_env(&mut c);
    let out = c.output().expect("run pgsurge bench");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// `pg_stat_wal.wal_bytes`, read from the `postgres` database.
fn wal_bytes(srv: &TestServer) -> f64 {
    srv.psql("postgres", "SELECT wal_bytes FROM pg_stat_wal")
        .trim()
        .parse()
        .expect("wal_bytes")
}

/// CPU seconds of the server's processes as `/proc` counts them: the postmaster (with
/// its reaped children) and its live children, read straight from `/proc/PID/stat`.
fn server_cpu_s(srv: &TestServer) -> f64 {
    let pid_file =
        std::fs::read_to_string(srv.data_dir().join("postmaster.pid")).expect("postmaster.pid");
    let postmaster: i64 = pid_file.lines().next().unwrap().trim().parse().unwrap();
    // Fields after the command's closing parenthesis: state is field 3, ppid 4,
    // utime 14, stime 15, cutime 16, cstime 17.
    let fields = |pid: &str| -> Option<Vec<i64>> {
        let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
        let rest = &text[text.rfind(')')? + 2..];
        Some(
            rest.split_whitespace()
                .map(|f| f.parse().unwrap_or(0))
                .collect(),
        )
    };
    let mut ticks = 0;
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        if !name.bytes().all(|b| b.is_ascii_digit()) {
            continue;
        }
        let Some(f) = fields(&name) else { continue };
        let pid: i64 = name.parse().unwrap();
        if pid == postmaster {
            ticks += f[11] + f[12] + f[13] + f[14];
        } else if f[1] == postmaster {
            ticks += f[11] + f[12];
        }
    }
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    ticks as f64 / hz
}

fn costs(doc: &serde_json::Value, name: &str) -> f64 {
    doc["txn_costs"]["costs"]
        .as_array()
        .expect("txn_costs.costs")
        .iter()
        .find(|c| c["name"] == name)
        .unwrap_or_else(|| panic!("no {name} in {}", doc["txn_costs"]))["per_txn"]
        .as_f64()
        .expect("per_txn")
}

fn run_json(srv: &TestServer, args: &[&str]) -> (serde_json::Value, String) {
    let (out, err, code) = bench(srv, args);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).expect("JSON on stdout");
    pgsurge_testkit::schema::assert_valid(pgsurge_results::RUN_RESULT_SCHEMA, &doc);
    (doc, err)
}

#[test]
fn costs_agree_with_the_servers_and_the_kernels_own_counts() {
    let srv = TestServer::start(TestServerOptions::default());
    let db = srv.create_database("costs");
    let (_, err, code) = bench(&srv, &["-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");

    // Without --costs, nothing of them.
    let (out, _, code) = bench(&srv, &["-n", "-S", "-t", "20", &db]);
    assert_eq!(code, 0);
    assert!(!out.contains("per-transaction costs"), "{out}");

    // Select-only first (before any update leaves pages to prune): almost no WAL.
    let (select, report) = run_json(
        &srv,
        &[
            "-n", "-S", "-c", "2", "-t", "500", "--costs", "--json=-", &db,
        ],
    );
    assert!(
        report.contains("per-transaction costs (over 1000 transactions)"),
        "{report}"
    );
    assert_eq!(select["txn_costs"]["transactions"], 1000);
    let select_wal = costs(&select, "wal_bytes");

    srv.wait_for_sessions_to_end(&db);
    let (wal_before, cpu_before) = (wal_bytes(&srv), server_cpu_s(&srv));
    let (tpcb, _) = run_json(
        &srv,
        &["-n", "-c", "2", "-t", "1500", "--costs", "--json=-", &db],
    );
    srv.wait_for_sessions_to_end(&db);
    let (wal_after, cpu_after) = (wal_bytes(&srv), server_cpu_s(&srv));
    let transactions = tpcb["totals"]["transactions"].as_f64().unwrap();
    assert_eq!(transactions, 3000.0);

    let expected = (wal_after - wal_before) / transactions;
    let wal = costs(&tpcb, "wal_bytes");
    assert!(
        (wal - expected).abs() <= 0.01 * expected,
        "WAL bytes per transaction {wal}, pg_stat_wal says {expected}"
    );
    assert!(
        select_wal < 0.02 * wal,
        "select-only wrote {select_wal} WAL bytes per transaction (tpcb-like {wal})"
    );
    assert!(costs(&tpcb, "wal_records") >= 3.0, "{}", tpcb["txn_costs"]);
    assert!(
        costs(&tpcb, "shared_blks_hit") > 5.0,
        "{}",
        tpcb["txn_costs"]
    );

    // The server's CPU: what /proc counted over the whole command, which holds the
    // measured window and a few setup statements around it.
    let proc_us = (cpu_after - cpu_before) * 1e6 / transactions;
    let server_us = costs(&tpcb, "server_cpu_user_us") + costs(&tpcb, "server_cpu_system_us");
    assert!(
        server_us > 0.0 && server_us <= proc_us * 1.02 + 5.0 && server_us >= proc_us * 0.8 - 5.0,
        "server CPU {server_us} µs per transaction, /proc says {proc_us}"
    );
    assert!(costs(&tpcb, "server_context_switches") > 0.0);
    assert!(costs(&tpcb, "client_cpu_user_us") > 0.0);
    assert!(costs(&tpcb, "client_context_switches") > 0.0);
    assert!(
        tpcb["txn_costs"].get("unavailable").is_none(),
        "{}",
        tpcb["txn_costs"]
    );
}
