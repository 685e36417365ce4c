//! The `tpcc` pack end to end: `bench --workload tpcc -i` loads the specification's
//! data (the same `--random-seed` gives the same rows, whatever `--init-jobs`), `workload
//! check tpcc` holds after the load and after a run and names the condition a database
//! broken on purpose violates, and a run's NOPM and transaction mix agree with what
//! the server executed.

use pgsurge_server::testing::TestServer;
use std::process::Command;

use crate::workload_common::{load_tpcc as load, num, pgsurge, Out};

/// `k` of `n` trials is within five standard deviations of proportion `p`.
fn assert_proportion(what: &str, k: f64, n: f64, p: f64) {
    assert!(n > 0.0, "{what}: no trials");
    let sd = (n * p * (1.0 - p)).sqrt();
    let expected = n * p;
    assert!(
        (k - expected).abs() <= 5.0 * sd + 1.0,
        "{what}: {k} of {n} ({:.4}), expected {p} (±{:.1} at 5 sd)",
        k / n,
        5.0 * sd
    );
}

fn check(srv: &TestServer, db: &str) -> Out {
    pgsurge(srv, &["workload", "check", "tpcc", db])
}

/// Table contents without the load-time timestamps, as one digest per table.
fn digest(srv: &TestServer, db: &str) -> String {
    srv.psql(
        db,
        "select (select md5(string_agg(t::text, ',' order by i_id)) from item t), \
         (select md5(string_agg(row(w_id, w_name, w_street_1, w_city, w_state, w_zip, w_tax)::text, ',' order by w_id)) from warehouse), \
         (select md5(string_agg(row(d_w_id, d_id, d_name, d_tax)::text, ',' order by d_w_id, d_id)) from district), \
         (select md5(string_agg(row(c_w_id, c_d_id, c_id, c_first, c_last, c_phone, c_credit, c_discount, c_data)::text, ',' order by c_w_id, c_d_id, c_id)) from customer), \
         (select md5(string_agg(row(s_w_id, s_i_id, s_quantity, s_dist_05, s_data)::text, ',' order by s_w_id, s_i_id)) from stock), \
         (select md5(string_agg(row(o_w_id, o_d_id, o_id, o_c_id, o_carrier_id, o_ol_cnt)::text, ',' order by o_w_id, o_d_id, o_id)) from orders), \
         (select md5(string_agg(row(ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_amount, ol_dist_info)::text, ',' order by ol_w_id, ol_d_id, ol_o_id, ol_number)) from order_line)",
    )
}

#[test]
fn the_load_follows_the_specification_and_the_seed() {
    let srv = TestServer::shared();
    let a = srv.create_database("tpcc_seed_a");
    let b = srv.create_database("tpcc_seed_b");
    let c = srv.create_database("tpcc_seed_c");
    load(srv, &a, "2", "2", "7");
    load(srv, &b, "2", "1", "7");
    load(srv, &c, "1", "1", "8");

    // Cardinalities of clause 4.3.3.1 at two warehouses.
    for (table, rows) in [
        ("warehouse", 2),
        ("district", 20),
        ("customer", 60_000),
        ("history", 60_000),
        ("orders", 60_000),
        ("new_order", 18_000),
        ("item", 100_000),
        ("stock", 200_000),
    ] {
        let n = num(srv, &a, &format!("select count(*) from {table}"));
        assert_eq!(n, f64::from(rows), "{table}");
    }
    let (lines, ol_cnt) = (
        num(srv, &a, "select count(*) from order_line"),
        num(srv, &a, "select sum(o_ol_cnt) from orders"),
    );
    assert_eq!(lines, ol_cnt);
    // Value rules: ORIGINAL in ~10 % of item and stock data, bad credit in ~10 %,
    // last names from the syllables (the first 1,000 customers in order), NURand
    // last names within 0..999, order-line counts 5..15.
    let original = num(
        srv,
        &a,
        "select count(*) from item where i_data like '%ORIGINAL%'",
    );
    assert_proportion("ORIGINAL items", original, 100_000.0, 0.1);
    let original = num(
        srv,
        &a,
        "select count(*) from stock where s_data like '%ORIGINAL%'",
    );
    assert_proportion("ORIGINAL stock", original, 200_000.0, 0.1);
    let bc = num(
        srv,
        &a,
        "select count(*) from customer where c_credit = 'BC'",
    );
    assert_proportion("bad credit", bc, 60_000.0, 0.1);
    assert_eq!(
        srv.psql(
            &a,
            "select c_last from customer where c_w_id = 1 and c_d_id = 1 and c_id in (1, 2, 372, 1000) order by c_id"
        )
        .trim(),
        "BARBARBAR\nBARBAROUGHT\nPRICALLYOUGHT\nEINGEINGEING"
    );
    let unknown = num(
        srv,
        &a,
        "select count(*) from customer where c_last not in (select tpcc_lastname(n) from generate_series(0, 999) n)",
    );
    assert_eq!(unknown, 0.0);
    assert_eq!(
        srv.psql(&a, "select min(o_ol_cnt), max(o_ol_cnt) from orders")
            .trim(),
        "5|15"
    );
    assert_eq!(
        srv.psql(
            &a,
            "select count(*) from orders where (o_carrier_id is null) <> (o_id >= 2101)"
        )
        .trim(),
        "0"
    );

    // The same seed gives the same rows over two connections as over one; another
    // seed gives other rows.
    let da = digest(srv, &a);
    assert_eq!(da, digest(srv, &b));
    let item_a = da.split('|').next().unwrap().to_string();
    let dc = digest(srv, &c);
    assert_ne!(dc.split('|').next().unwrap(), item_a);

    let o = check(srv, &a);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    assert!(o.stdout.contains("all 5 conditions hold"), "{}", o.stdout);
}

#[test]
fn workload_check_names_the_violated_condition() {
    let srv = TestServer::shared();
    let db = srv.create_database("tpcc_broken");
    load(srv, &db, "1", "1", "3");
    let cases = [
        (
            "3.3.2.1",
            "update warehouse set w_ytd = w_ytd + 1 where w_id = 1",
            "update warehouse set w_ytd = w_ytd - 1 where w_id = 1",
            "1 | 300001.00 | 300000.00",
        ),
        // A NULL where a value belongs violates the condition too.
        (
            "3.3.2.1",
            "update warehouse set w_ytd = null where w_id = 1",
            "update warehouse set w_ytd = 300000.00 where w_id = 1",
            "1 | NULL | 300000.00",
        ),
        (
            "3.3.2.1",
            "update district set d_ytd = null where d_w_id = 1",
            "update district set d_ytd = 30000.00 where d_w_id = 1",
            "1 | 300000.00 | NULL",
        ),
        (
            "3.3.2.2",
            "update district set d_next_o_id = d_next_o_id + 1 where d_w_id = 1 and d_id = 4",
            "update district set d_next_o_id = d_next_o_id - 1 where d_w_id = 1 and d_id = 4",
            "1 | 4 | 3002 | 3000 | 3000",
        ),
        (
            "3.3.2.3",
            "delete from new_order where no_w_id = 1 and no_d_id = 2 and no_o_id = 2500; \
             update orders set o_carrier_id = 1 where o_w_id = 1 and o_d_id = 2 and o_id = 2500",
            "insert into new_order values (2500, 2, 1); \
             update orders set o_carrier_id = null where o_w_id = 1 and o_d_id = 2 and o_id = 2500",
            "1 | 2 | 2101 | 3000 | 899",
        ),
        (
            "3.3.2.4",
            "update orders set o_ol_cnt = o_ol_cnt + 1 where o_w_id = 1 and o_d_id = 7 and o_id = 1",
            "update orders set o_ol_cnt = o_ol_cnt - 1 where o_w_id = 1 and o_d_id = 7 and o_id = 1",
            "1 | 7 |",
        ),
        (
            "3.3.2.5",
            "update orders set o_carrier_id = 3 where o_w_id = 1 and o_d_id = 9 and o_id = 3000",
            "update orders set o_carrier_id = null where o_w_id = 1 and o_d_id = 9 and o_id = 3000",
            "1 | 9 | 3000 | 3 | t",
        ),
    ];
    for (condition, breaks, repairs, row) in cases {
        srv.psql(&db, breaks);
        let o = check(srv, &db);
        assert_eq!(o.code, 1, "{condition}: {}{}", o.stdout, o.stderr);
        let violated: Vec<&str> = o
            .stdout
            .lines()
            .filter(|l| l.starts_with("VIOLATED"))
            .collect();
        assert_eq!(violated.len(), 1, "{condition}:\n{}", o.stdout);
        assert!(
            violated[0].starts_with(&format!("VIOLATED  {condition} ")),
            "{condition}:\n{}",
            o.stdout
        );
        assert!(
            o.stdout.contains(row),
            "{condition}: no row {row:?} in\n{}",
            o.stdout
        );
        assert!(
            o.stderr
                .contains("1 of 5 conditions of workload tpcc violated"),
            "{}",
            o.stderr
        );
        srv.psql(&db, repairs);
        let o = check(srv, &db);
        assert_eq!(o.code, 0, "{condition} repaired: {}{}", o.stdout, o.stderr);
    }
}

fn script_count(json: &serde_json::Value, file: &str) -> f64 {
    json["scripts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"].as_str() == Some(&format!("tpcc/{file}")))
        .unwrap_or_else(|| panic!("no script {file}"))["stats"]["transactions"]
        .as_f64()
        .unwrap()
}

#[test]
fn a_run_reports_nopm_and_the_server_executed_the_mix() {
    let srv = TestServer::shared();
    let db = srv.create_database("tpcc_run");
    load(srv, &db, "2", "2", "5");
    // Calls of tpcc_lastname() count the by-name selections on the server.
    srv.psql(
        &db,
        &format!("alter database {db} set track_functions = 'all'"),
    );
    let scratch = pgsurge_testkit::scratch_dir("workload-tpcc-run");
    let json_path = scratch.path().join("run.json");
    let next_o_id = "select sum(d_next_o_id) from district";
    let before = num(srv, &db, next_o_id);
    let new_orders_before = num(srv, &db, "select count(*) from new_order");
    let t0 = srv.psql(&db, "select now()").trim().to_string();
    let json_arg = format!("--json={}", json_path.display());
    // A number of transactions, not a duration: the checks of the mix below need
    // enough of them (a thousand New-Orders and more: 45 of every 100 cards dealt),
    // however slow the machine is.
    let o = pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            "tpcc",
            "-c",
            "4",
            "-j",
            "2",
            "-t",
            "700",
            "--max-tries",
            "20",
            &json_arg,
            &db,
        ],
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let total = json["totals"]["transactions"].as_f64().unwrap();
    let failures = json["totals"]["failures"].as_f64().unwrap();
    assert_eq!(total + failures, 4.0 * 700.0, "{}", o.stdout);

    // NOPM: the client's figure is the server's count of committed New-Orders.
    let committed = num(srv, &db, next_o_id) - before;
    let rollbacks = num(
        srv,
        &db,
        "select case when is_called then last_value else 0 end from tpcc_new_order_rollbacks",
    );
    let secs = json["bench_duration_us"].as_f64().unwrap() / 1e6;
    let nopm: f64 = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("NOPM = "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no NOPM line:\n{}", o.stdout))
        .parse()
        .unwrap();
    let server_nopm = committed * 60.0 / secs;
    assert!(
        (nopm - server_nopm).abs() <= 0.01 * server_nopm,
        "NOPM {nopm} vs server {server_nopm}"
    );
    // The JSON document carries the same metrics, and stays valid against its schema.
    let in_json = &json["workload_metrics"];
    assert_eq!(in_json[0]["name"], "NOPM", "{in_json}");
    assert_eq!(in_json[0]["unit"], "per minute");
    assert!((in_json[0]["value"].as_f64().unwrap() - nopm).abs() <= 0.1);
    assert_eq!(in_json[1]["name"], "New-Order rollbacks", "{in_json}");
    assert_eq!(in_json[1]["value"].as_f64(), Some(rollbacks));
    // Without the keying and think times the count is not a TPC-C tpmC, and its
    // efficiency means nothing: neither is printed nor stored.
    for left_out in ["tpmC", "efficiency"] {
        assert!(
            !o.stdout.contains(left_out)
                && !in_json
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|m| m["name"] == left_out),
            "{left_out} of a run without think times:\n{}{in_json}",
            o.stdout
        );
    }
    pgsurge_testkit::schema::assert_valid(pgsurge_results::RUN_RESULT_SCHEMA, &json);
    assert!(
        o.stdout
            .contains(&format!("New-Order rollbacks = {rollbacks} ")),
        "{}",
        o.stdout
    );
    // Each transaction's 90th percentile against the specification's limit, as the
    // run's own per-script latency gives it.
    for (name, file, limit) in [
        ("New-Order", "new_order.sql", 5),
        ("Payment", "payment.sql", 5),
        ("Order-Status", "order_status.sql", 5),
        ("Delivery", "delivery.sql", 5),
        ("Stock-Level", "stock_level.sql", 20),
    ] {
        let line = o
            .stdout
            .lines()
            .find(|l| l.starts_with(&format!("{name} 90th percentile = ")))
            .unwrap_or_else(|| panic!("no {name} 90th percentile line:\n{}", o.stdout));
        assert!(
            line.ends_with(&format!("(ms; latency; the limit is {limit} s: within)")),
            "{line}"
        );
        let shown: f64 = line
            .split(" = ")
            .nth(1)
            .unwrap()
            .split(' ')
            .next()
            .unwrap()
            .parse()
            .unwrap();
        let script = json["scripts"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"].as_str().unwrap().ends_with(file))
            .unwrap();
        let p90 = script["stats"]["latency"]["percentiles"]
            .as_array()
            .unwrap()
            .iter()
            .find(|p| p["percentile"] == 90.0)
            .and_then(|p| p["latency_ms"].as_f64())
            .unwrap();
        assert!(
            (shown - p90).abs() <= 0.05 + 1e-9,
            "{line}: the run's p90 is {p90}"
        );
    }
    // Every New-Order the client counted either committed or rolled back on purpose.
    let client_new_orders = script_count(&json, "new_order.sql");
    assert!(
        (client_new_orders - (committed + rollbacks)).abs() <= 0.01 * client_new_orders + failures,
        "client {client_new_orders} vs committed {committed} + rolled back {rollbacks}"
    );

    // The mix, from what the server wrote.
    let payments = num(
        srv,
        &db,
        &format!("select count(*) from history where h_date >= '{t0}'"),
    );
    let delivered = new_orders_before + committed - num(srv, &db, "select count(*) from new_order");
    assert_proportion("New-Order", committed + rollbacks, total, 0.45);
    assert_proportion("Payment", payments, total, 0.43);
    assert_proportion("Delivery", delivered / 10.0, total, 0.04);
    assert_proportion(
        "Order-Status",
        script_count(&json, "order_status.sql"),
        total,
        0.04,
    );
    assert_proportion(
        "Stock-Level",
        script_count(&json, "stock_level.sql"),
        total,
        0.04,
    );
    // 1 % rolled back, 1 % remote order lines, 15 % remote payments.
    assert!(rollbacks > 0.0);
    assert_proportion("rollbacks", rollbacks, committed + rollbacks, 0.01);
    let remote_lines = num(
        srv,
        &db,
        "select count(*) from order_line where ol_o_id > 3000 and ol_supply_w_id <> ol_w_id",
    );
    let new_lines = num(
        srv,
        &db,
        "select count(*) from order_line where ol_o_id > 3000",
    );
    assert_proportion("remote order lines", remote_lines, new_lines, 0.01);
    let remote_payments = num(
        srv,
        &db,
        &format!("select count(*) from history where h_date >= '{t0}' and h_c_w_id <> h_w_id"),
    );
    assert_proportion("remote payments", remote_payments, payments, 0.15);
    // Orders with a remote line are marked as not all local.
    let not_local = num(
        srv,
        &db,
        "select count(*) from orders o where o_id > 3000 and o_all_local = 0",
    );
    let with_remote = num(
        srv,
        &db,
        "select count(distinct (ol_w_id, ol_d_id, ol_o_id)) from order_line \
         where ol_o_id > 3000 and ol_supply_w_id <> ol_w_id",
    );
    assert_eq!(not_local, with_remote);
    // 60 % by last name: each selection calls tpcc_lastname() twice on the server
    // (the customers and their count). The statistics of the run's sessions are
    // flushed when they end.
    let by_name_calls = function_calls(srv, &db);
    let name_selections = payments + script_count(&json, "order_status.sql");
    assert_proportion("by last name", by_name_calls / 2.0, name_selections, 0.6);

    // NURand: the customers of the new orders and the items of their lines follow
    // NURand(1023, 1, 3000) and NURand(8191, 1, 100000) with the run's constants, and
    // are far from uniform.
    let customers = values(srv, &db, "select o_c_id from orders where o_id > 3000");
    assert_nurand("C_ID", &customers, 1023, 1, 3000, 259, 30);
    let items = values(
        srv,
        &db,
        "select ol_i_id from order_line where ol_o_id > 3000",
    );
    assert_nurand("OL_I_ID", &items, 8191, 1, 100_000, 7911, 50);

    let o = check(srv, &db);
    assert_eq!(o.code, 0, "after the run: {}{}", o.stdout, o.stderr);
}

fn values(srv: &TestServer, db: &str, sql: &str) -> Vec<u64> {
    srv.psql(db, sql)
        .lines()
        .map(|l| l.trim().parse().unwrap())
        .collect()
}

/// The probability of each of `bins` equal ranges of [x, y] under NURand(a, x, y)
/// with constant c (clause 2.1.6): exact when there are few pairs, else from 4
/// million draws of a fixed generator.
fn nurand_bin_probabilities(a: u64, x: u64, y: u64, c: u64, bins: usize) -> Vec<f64> {
    let width = (y - x + 1).div_ceil(bins as u64);
    let mut counts = vec![0f64; bins];
    let mut add = |r: u64, s: u64| {
        let v = ((r | s) + c) % (y - x + 1) + x;
        counts[((v - x) / width) as usize] += 1.0;
    };
    if (a + 1) * (y - x + 1) <= 10_000_000 {
        for r in 0..=a {
            for s in x..=y {
                add(r, s);
            }
        }
    } else {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..4_000_000 {
            let r = next() % (a + 1);
            let s = x + next() % (y - x + 1);
            add(r, s);
        }
    }
    let total: f64 = counts.iter().sum();
    counts.iter().map(|n| n / total).collect()
}

fn chi_square(observed: &[f64], p: &[f64], n: f64) -> f64 {
    observed
        .iter()
        .zip(p)
        .map(|(o, p)| (o - n * p).powi(2) / (n * p))
        .sum()
}

/// `seen` fits NURand(a, x, y) with constant c (chi-square over `bins` ranges below
/// a bound that chance passes with a probability under 1e-9), and does not fit a
/// uniform draw.
fn assert_nurand(what: &str, seen: &[u64], a: u64, x: u64, y: u64, c: u64, bins: usize) {
    let n = seen.len() as f64;
    assert!(n >= 1000.0, "{what}: only {n} values");
    let width = (y - x + 1).div_ceil(bins as u64);
    let mut observed = vec![0f64; bins];
    for v in seen {
        assert!((x..=y).contains(v), "{what}: {v} outside {x}..{y}");
        observed[((v - x) / width) as usize] += 1.0;
    }
    let p = nurand_bin_probabilities(a, x, y, c, bins);
    let df = (bins - 1) as f64;
    let bound = df + 10.0 * (2.0 * df).sqrt();
    let fit = chi_square(&observed, &p, n);
    assert!(
        fit < bound,
        "{what}: chi-square {fit:.1} against NURand (bound {bound:.1})"
    );
    let uniform = vec![1.0 / bins as f64; bins];
    let against_uniform = chi_square(&observed, &uniform, n);
    assert!(
        against_uniform > 3.0 * bound,
        "{what}: chi-square {against_uniform:.1} against uniform: not skewed"
    );
}

/// `calls` of tpcc_lastname once the ended sessions' statistics have arrived.
fn function_calls(srv: &TestServer, db: &str) -> f64 {
    srv.wait_for_sessions_to_end(db);
    num(
        srv,
        db,
        "select coalesce(sum(calls), 0) from pg_stat_user_functions where funcname = 'tpcc_lastname'",
    )
}

#[test]
fn pgbench_itself_runs_the_pack_scripts_with_their_meaning() {
    let Some(pgbench) = pgsurge_testkit::reference_pgbench() else {
        return;
    };
    let srv = TestServer::shared();
    let db = srv.create_database("tpcc_pgbench");
    load(srv, &db, "1", "1", "9");
    let scratch = pgsurge_testkit::scratch_dir("workload-tpcc-pgbench");
    let dir = scratch.path().join("tpcc");
    let o = pgsurge(
        srv,
        &["workload", "new", dir.to_str().unwrap(), "--from", "tpcc"],
    );
    assert_eq!(o.code, 0, "{}", o.stderr);
    assert!(o.stdout.contains("a copy of tpcc"), "{}", o.stdout);
    let before = num(srv, &db, "select sum(d_next_o_id) from district");
    let mut c = Command::new(pgbench);
    c.current_dir(&dir).args([
        "-n",
        "-s",
        "1",
        "-c",
        "2",
        "-t",
        "150",
        "-M",
        "prepared",
        "--random-seed",
        "4",
        "-D",
        "nurand_c_last=223",
        "-D",
        "nurand_c_id=259",
        "-D",
        "nurand_ol_i_id=7911",
        "-f",
        "new_order.sql@45",
        "-f",
        "payment.sql@43",
        "-f",
        "order_status.sql@4",
        "-f",
        "delivery.sql@4",
        "-f",
        "stock_level.sql@4",
        &db,
    ]);
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    let out = c.output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("actually processed: 300/300"), "{stdout}");
    // pgbench's New-Orders committed or rolled back, as the pack counts them.
    let new_orders: f64 = stdout
        .split("SQL script 1: new_order.sql")
        .nth(1)
        .and_then(|s| {
            s.lines().find_map(|l| {
                l.strip_prefix(" - ")?
                    .split(" transactions")
                    .next()?
                    .parse()
                    .ok()
            })
        })
        .unwrap_or_else(|| panic!("{stdout}"));
    let committed = num(srv, &db, "select sum(d_next_o_id) from district") - before;
    let rollbacks = num(
        srv,
        &db,
        "select case when is_called then last_value else 0 end from tpcc_new_order_rollbacks",
    );
    assert_eq!(committed + rollbacks, new_orders);
    let o = check(srv, &db);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
}

/// What a run wrote, without timestamps: the new orders and lines, the payments, and
/// the customers' and stock's running totals.
fn run_digest(srv: &TestServer, db: &str) -> String {
    srv.psql(
        db,
        "select (select md5(string_agg(row(o_w_id, o_d_id, o_id, o_c_id, o_ol_cnt, o_all_local, o_carrier_id)::text, ',' order by o_w_id, o_d_id, o_id)) from orders where o_id > 3000), \
         (select md5(string_agg(row(ol_w_id, ol_d_id, ol_o_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount)::text, ',' order by ol_w_id, ol_d_id, ol_o_id, ol_number)) from order_line where ol_o_id > 3000), \
         (select md5(string_agg(row(h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_amount)::text, ',' order by h_c_w_id, h_c_d_id, h_c_id, h_d_id, h_w_id, h_amount)) from history), \
         (select sum(c_balance) || '/' || sum(c_payment_cnt) || '/' || sum(c_delivery_cnt) from customer), \
         (select sum(s_quantity) || '/' || sum(s_remote_cnt) from stock), \
         (select count(*) from new_order)",
    )
}

#[test]
fn procedures_mode_and_seeded_runs_replay_the_same_transactions() {
    let srv = TestServer::shared();
    let a = srv.create_database("tpcc_proc_a");
    let b = srv.create_database("tpcc_proc_b");
    load(srv, &a, "2", "2", "4");
    load(srv, &b, "2", "1", "4");
    // One client, the same seed: the same keys, in both modes.
    for pack in ["tpcc-procedures", "tpcc"] {
        for db in [&a, &b] {
            let o = pgsurge(
                srv,
                &[
                    "bench",
                    "--workload",
                    pack,
                    "-t",
                    "400",
                    "--random-seed",
                    "12",
                    db,
                ],
            );
            assert_eq!(o.code, 0, "{pack}: {}{}", o.stdout, o.stderr);
        }
        assert_eq!(run_digest(srv, &a), run_digest(srv, &b), "{pack}");
    }
    let o = check(srv, &a);
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);

    // Many clients in procedures mode: NOPM is the server's count, and the rollbacks
    // and remote lines keep their rates.
    let next_o_id = "select sum(d_next_o_id) from district";
    let rollbacks_sql =
        "select case when is_called then last_value else 0 end from tpcc_new_order_rollbacks";
    let lines_sql = "select count(*) from order_line where ol_o_id > 3000";
    let remote_sql =
        "select count(*) from order_line where ol_o_id > 3000 and ol_supply_w_id <> ol_w_id";
    let (before, rb0, lines0, remote0) = (
        num(srv, &a, next_o_id),
        num(srv, &a, rollbacks_sql),
        num(srv, &a, lines_sql),
        num(srv, &a, remote_sql),
    );
    let scratch = pgsurge_testkit::scratch_dir("workload-tpcc-proc");
    let json_path = scratch.path().join("run.json");
    let json_arg = format!("--json={}", json_path.display());
    let o = pgsurge(
        srv,
        &[
            "bench",
            "--workload",
            "tpcc-procedures",
            "-c",
            "4",
            "-j",
            "2",
            "-T",
            "8",
            "--max-tries",
            "20",
            &json_arg,
            &a,
        ],
    );
    assert_eq!(o.code, 0, "{}{}", o.stdout, o.stderr);
    let json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json_path).unwrap()).unwrap();
    let committed = num(srv, &a, next_o_id) - before;
    let rollbacks = num(srv, &a, rollbacks_sql) - rb0;
    let secs = json["bench_duration_us"].as_f64().unwrap() / 1e6;
    let nopm: f64 = o
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("NOPM = "))
        .and_then(|l| l.split_whitespace().next())
        .unwrap_or_else(|| panic!("no NOPM line:\n{}", o.stdout))
        .parse()
        .unwrap();
    let server_nopm = committed * 60.0 / secs;
    assert!(
        (nopm - server_nopm).abs() <= 0.01 * server_nopm,
        "NOPM {nopm} vs server {server_nopm}"
    );
    let new_orders = json["scripts"][0]["stats"]["transactions"]
        .as_f64()
        .unwrap();
    assert!(
        (new_orders - committed - rollbacks).abs() <= 0.01 * new_orders,
        "{new_orders} New-Orders, {committed} committed, {rollbacks} rolled back"
    );
    assert_proportion("rollbacks", rollbacks, new_orders, 0.01);
    assert_proportion(
        "remote order lines",
        num(srv, &a, remote_sql) - remote0,
        num(srv, &a, lines_sql) - lines0,
        0.01,
    );
    let o = check(srv, &a);
    assert_eq!(o.code, 0, "after the run: {}{}", o.stdout, o.stderr);
}
