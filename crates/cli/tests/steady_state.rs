//! A run whose warm-up has a known length: each transaction sleeps on the server for
//! a time that falls from 200 ms to 20 ms over the first `warm` seconds after the run's
//! first transaction (stamped in a table by the script itself), then stays at 20 ms
//! (long beside a transaction's own cost, so a busy machine moves the rate little),
//! plus up to 10 ms drawn at random: a real workload's seconds scatter, and a series
//! without any scatter would make a machine's slightest hiccup stand out beyond its
//! noise and count as warm-up. The
//! detected warm-up of `bench --json` and of a campaign with `warmup = "auto"` ends
//! within 2 s of `warm`; the campaign stops once the window after it has lasted its
//! duration, and stores the window's figures with the warm-up's seconds marked. A
//! checkpoint inside a window shorter than a checkpoint cycle is named.
//!
//! These tests measure a rate, so they are a test binary of their own: cargo runs test
//! binaries one after another, and nothing of the other tests runs beside them.

use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use pgsurge_server::testing::{TestServer, TestServerOptions};
use pgsurge_store::{RunFilter, Store};

/// Seconds of the script's warm-up.
const WARM: f64 = 8.0;

/// The script: stamp the first transaction, then sleep by the time since it.
const SCRIPT: &str = "INSERT INTO warm_start SELECT clock_timestamp() WHERE NOT EXISTS (SELECT 1 FROM warm_start);\n\
SELECT pg_sleep(0.02 + 0.01 * random() + 0.18 * greatest(0.0, 1.0 - extract(epoch FROM clock_timestamp() - (SELECT min(t) FROM warm_start)) / :warm));\n";

/// Held by each test of this binary for its whole run: a warm-up's rate is measured,
/// and another of these tests (a server starting, tables loading, checkpoints) would
/// move it. The test's thread, and so its servers and clients, runs ahead of the
/// machine's other work.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    let alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    pgsurge_testkit::ahead_of_other_work();
    alone
}

fn pgsurge(srv: &TestServer, args: &[&str]) -> (String, String, i32) {
    let out = srv
        .apply_env(&mut Command::new(env!("CARGO_BIN_EXE_pgsurge")))
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// `items`, ten to a line: a failure's figures stay readable wherever it is shown.
fn ten_a_line(items: &[String]) -> String {
    items
        .chunks(10)
        .map(|c| c.join(" "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// A database with pgbench's tables and an empty `warm_start`.
fn database(srv: &TestServer, name: &str) -> String {
    let db = srv.create_database(name);
    let (_, err, code) = pgsurge(srv, &["bench", "-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");
    srv.psql(&db, "CREATE TABLE warm_start (t timestamptz)");
    db
}

/// Runs a campaign named `name` against `db`, its file's `[matrix]` and `[run]`
/// being `body`, in `dir`, and opens its store.
fn run_campaign(
    srv: &TestServer,
    db: &str,
    dir: &std::path::Path,
    name: &str,
    body: &str,
) -> Store {
    let file = dir.join("c.toml");
    std::fs::write(
        &file,
        format!(
            "[campaign]\nname = \"{name}\"\n[[target]]\nname = \"fx\"\nconninfo = \"{}\"\n{body}",
            srv.conninfo(db)
        ),
    )
    .unwrap();
    let store = dir.join("r.db").display().to_string();
    let (_, err, code) = pgsurge(
        srv,
        &[
            "campaign",
            "run",
            &file.display().to_string(),
            "--store",
            &store,
            "--quiet",
        ],
    );
    assert_eq!(code, 0, "{err}");
    Store::open(&store).unwrap()
}

#[test]
fn bench_json_finds_a_known_warm_up_and_states_the_window_beside_the_raw_figures() {
    let _alone = one_at_a_time();
    // A server of its own: other tests' checkpoints would slow this one's rate.
    let own = TestServer::start(TestServerOptions::default());
    let srv = &own;
    let db = database(srv, "steady_bench");
    let dir = pgsurge_testkit::scratch_dir("steady-bench");
    let script = dir.path().join("warm.sql");
    std::fs::write(&script, SCRIPT).unwrap();
    let script = script.display().to_string();
    let store = dir.path().join("r.db").display().to_string();
    let store_arg = format!("--store={store}");
    let (json, err, code) = pgsurge(
        srv,
        &[
            "bench",
            "-n",
            "-c",
            "4",
            "-j",
            "2",
            "-T",
            "60",
            "-D",
            &format!("warm={WARM}"),
            "-f",
            &script,
            "--json=-",
            &store_arg,
            &db,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    pgsurge_testkit::schema::assert_valid(pgsurge_results::RUN_RESULT_SCHEMA, &doc);
    let st = &doc["steady_state"];
    assert_eq!(st["method"], "mser-5", "{st}");
    let warmup = st["warmup_s"].as_f64().unwrap();
    // The true end: `warm` seconds after the first transaction, counted from the
    // start of the first interval.
    let first = &doc["intervals"][0];
    let start = first["epoch_s"].as_f64().unwrap() - first["duration_s"].as_f64().unwrap();
    let stamped: f64 = srv
        .psql(&db, "SELECT extract(epoch FROM min(t)) FROM warm_start")
        .trim()
        .parse()
        .unwrap();
    let truth = stamped + WARM - start;
    // Every second, so that a failure shows what else moved the rate.
    let rates: Vec<String> = doc["intervals"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            let (tps, ms) = (
                i["tps"].as_f64().unwrap(),
                i["latency_ms"].as_f64().unwrap(),
            );
            format!("{tps:.0}/{ms:.1}")
        })
        .collect();
    assert!(
        (warmup - truth).abs() <= 2.0,
        "detected {warmup} s, true {truth} s\n{st}\nevery second (tps/latency ms):\n{}",
        ten_a_line(&rates)
    );
    // The window's figures beside the raw ones: faster, since the slow start is left out.
    let (raw, window) = (doc["tps"].as_f64().unwrap(), st["tps"].as_f64().unwrap());
    assert!(window > raw, "raw {raw} tps, window {window} tps");
    let counted: u64 = doc["intervals"].as_array().unwrap()
        [st["warmup_intervals"].as_u64().unwrap() as usize..]
        .iter()
        .map(|i| i["transactions"].as_u64().unwrap())
        .sum();
    // The window holds the intervals after the warm-up (a last short one included).
    assert_eq!(st["transactions"].as_u64().unwrap(), counted, "{st}");
    let p99 = st["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["percentile"] == 99.0)
        .and_then(|p| p["latency_ms"].as_f64())
        .expect("the window's p99");
    let raw_p99 = doc["totals"]["latency"]["percentiles"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["percentile"] == 99.0)
        .and_then(|p| p["latency_ms"].as_f64())
        .unwrap();
    assert!(p99 < raw_p99, "window p99 {p99} ms, raw {raw_p99} ms");
    // The report's run page shades the detected warm-up on its time charts and states
    // the window's figures in its summary.
    let out = dir.path().join("report");
    let (_, err, code) = pgsurge(srv, &["report", "-o", out.to_str().unwrap(), &store_arg]);
    assert_eq!(code, 0, "{err}");
    let page = std::fs::read_to_string(out.join("run-1.html")).unwrap();
    let label = format!(
        "detected warm-up ({:.0} s, MSER-5): in the raw figures, not in the steady window&#39;s",
        warmup
    );
    let label_plain = label.replace("&#39;", "'");
    assert!(
        page.contains(&label) || page.contains(&label_plain),
        "no shaded warm-up in the run page"
    );
    assert!(
        page.contains("fill=\"rgb(236,236,236)\"") || page.contains("fill=\"#ECECEC\""),
        "no shade drawn"
    );
    assert!(page.contains(&format!("warm-up {warmup:.0} s (MSER-5); steady window")));
}

#[test]
fn a_campaign_with_automatic_warm_up_runs_until_the_window_lasted_its_duration() {
    let _alone = one_at_a_time();
    // A server of its own: other tests' checkpoints would slow this one's rate.
    let own = TestServer::start(TestServerOptions::default());
    let srv = &own;
    let db = database(srv, "steady_campaign");
    let dir = pgsurge_testkit::scratch_dir("steady-campaign");
    std::fs::write(dir.path().join("warm.sql"), SCRIPT).unwrap();
    let mut store = run_campaign(
        srv,
        &db,
        dir.path(),
        "auto-warm-up",
        &format!(
            "[matrix]\nscales = [1]\nclients = [2]\nscripts = [{{ file = \"warm.sql\" }}]\n\
             [run]\nduration = 10\nwarmup = \"auto\"\nwarmup_max = \"90s\"\n\
             defines = {{ warm = {WARM} }}\n"
        ),
    );
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 1);
    let r = &runs[0].record;
    assert_eq!(r.status, "ok", "{r:?}");
    let warmup = r.warmup_s.unwrap();
    let loaded = store.load_run(runs[0].id).unwrap();
    let stamped: f64 = srv
        .psql(&db, "SELECT extract(epoch FROM min(t)) FROM warm_start")
        .trim()
        .parse()
        .unwrap();
    let truth = stamped + WARM - loaded.intervals[0].ts;
    let seconds: Vec<String> = loaded
        .intervals
        .iter()
        .map(|i| {
            format!(
                "{}/{:.2}",
                i.transactions,
                i.latency_mean_ms.unwrap_or(f64::NAN)
            )
        })
        .collect();
    assert!(
        (warmup - truth).abs() <= 2.0,
        "detected {warmup} s, true {truth} s\n{}\nevery second (transactions/mean latency ms):\n{}",
        r.result_json
            .as_ref()
            .map_or(String::new(), |d| d["steady_state"].to_string()),
        ten_a_line(&seconds)
    );
    // Stopped by its watch, long before the cap: the window lasted the duration.
    let measured = r.measured_s.unwrap();
    assert!((10.0..70.0).contains(&measured), "window {measured} s");
    let doc = r.result_json.as_ref().unwrap();
    assert_eq!(doc["interrupted"], false);
    let whole = doc["bench_duration_us"].as_f64().unwrap() / 1e6;
    assert!(whole < 100.0, "ran {whole} s");
    // The stored figures are the window's; the raw ones stay in the document.
    assert_eq!(r.tps, doc["steady_state"]["tps"].as_f64());
    assert!(r.tps.unwrap() > doc["tps"].as_f64().unwrap());
    let warm: Vec<_> = loaded.intervals.iter().filter(|i| i.warmup).collect();
    assert_eq!(
        warm.len() as u64,
        doc["steady_state"]["warmup_intervals"].as_u64().unwrap()
    );
    assert!(warm.iter().all(|i| i.elapsed_s < 0.0), "{warm:?}");
    assert!(loaded
        .intervals
        .iter()
        .filter(|i| !i.warmup)
        .all(|i| i.elapsed_s >= -1e-6));
    let latency = loaded
        .histograms
        .iter()
        .find(|h| h.kind == "latency" && h.script_index == -1)
        .expect("the window's latency histogram");
    let window_transactions: i64 = loaded
        .intervals
        .iter()
        .filter(|i| !i.warmup)
        .map(|i| i.transactions)
        .sum();
    assert_eq!(latency.count, window_transactions);
    assert_eq!(r.transactions, Some(window_transactions));
}

#[test]
fn a_checkpoint_inside_a_window_shorter_than_its_cycle_is_named() {
    let _alone = one_at_a_time();
    let srv = TestServer::shared();
    let db = srv.create_database("steady_checkpoint");
    let dir = pgsurge_testkit::scratch_dir("steady-checkpoint");
    // The script asks for checkpoints; the test server's cycle is 30 minutes.
    std::fs::write(
        dir.path().join("ckpt.sql"),
        "CHECKPOINT;\nSELECT pg_sleep(0.2);\n",
    )
    .unwrap();
    let mut store = run_campaign(
        srv,
        &db,
        dir.path(),
        "checkpoint",
        "[matrix]\nscales = [1]\nclients = [1]\n\
         scripts = [{ file = \"ckpt.sql\" }, \"select-only\"]\n[run]\nduration = 2\n",
    );
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 2);
    let set = runs[0].record.set_id;
    let flagged: Vec<i64> = store
        .set_facts(set)
        .unwrap()
        .into_iter()
        .filter(|(_, f)| {
            f.name == pgsurge_store::facts::CHECKPOINT_IN_SHORT_WINDOW
                && f.value.as_deref() == Some("true")
        })
        .map(|(run, _)| run)
        .collect();
    let ckpt = runs
        .iter()
        .find(|r| {
            r.record
                .script
                .as_deref()
                .is_some_and(|s| s.contains("ckpt"))
        })
        .expect("the checkpointing test");
    // (The server is shared with other tests, whose checkpoints the cluster-wide
    // counters also see: only the test that surely checkpointed is asserted.)
    assert!(flagged.contains(&ckpt.id), "{flagged:?}");
    let warnings = store.warnings(Some(set)).unwrap();
    let key = &ckpt.record.test_key;
    let named = warnings
        .iter()
        .find(|w| {
            w.record.code == "checkpoint_in_window" && w.record.message.contains(key.as_str())
        })
        .unwrap_or_else(|| panic!("no warning for {key}: {warnings:?}"));
    assert!(
        named
            .record
            .message
            .contains("shorter than one checkpoint cycle (1800 s)"),
        "{}",
        named.record.message
    );
}
