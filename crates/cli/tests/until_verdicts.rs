//! `[repeats] until` answering the two questions a patch's author asks, on two
//! throwaway servers started from the same PostgreSQL binaries: is there a difference
//! (an A/A campaign: none), and is B slower (B's server has a setting that makes its
//! transaction sleep longer). Each transaction sleeps on the server for a fixed time
//! (long beside its own cost, so the rate is steady and a busy machine moves it
//! little); B's sleeps 2.5 ms more, about 5 % fewer transactions per second.
//!
//! What is asserted is what the semantics guarantee: every A/A cell is judged
//! `no-difference` with its smallest detectable change stated, and the slower B is
//! judged `slower` once its cell reached the precision, within fewer repeats than a
//! fixed `repeats = 10` would run. Never a timing. Each run stores the server start it
//! ran in (the two targets are two starts).
//!
//! These tests measure rates, so they are a test binary of their own: cargo runs test
//! binaries one after another, and nothing of the other tests runs beside them.

use std::path::Path;
use std::process::Command;
use std::sync::{Mutex, MutexGuard};

use pgsurge_analysis::precision::CellPrecision;
use pgsurge_store::{facts, RunFilter, Store};

/// Held by each test of this binary for its whole run: the other test's servers
/// starting and loading would move the rates this one measures. The test's thread,
/// and so its servers and clients, runs ahead of the machine's other work.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

fn one_at_a_time() -> MutexGuard<'static, ()> {
    let alone = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    pgsurge_testkit::ahead_of_other_work();
    alone
}

/// The script: sleep 50 ms, plus the server's `bench.extra_ms` when it has one.
const SCRIPT: &str = "SELECT pg_sleep((50 + coalesce(current_setting('bench.extra_ms', true), '0')::float8) / 1000);\n";

fn pgsurge(args: &[&str]) -> (String, String, i32) {
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// Runs a campaign of two throwaway targets `a` and `b` from the same binaries (`b`
/// with `b_settings`), the script above at each of `clients`, `[repeats] until = "2%"`,
/// in `dir`; returns the store's path. Runs last 5 s: a busy machine's slow seconds
/// then weigh on a run's rate a fifth each, and a cell reaches its precision in a few
/// repeats even while other work runs.
fn run_campaign(dir: &Path, name: &str, clients: &str, b_settings: &str) -> String {
    std::fs::write(dir.join("sleep.sql"), SCRIPT).unwrap();
    let file = dir.join("c.toml");
    std::fs::write(
        &file,
        format!(
            "[campaign]\nname = \"{name}\"\n\
             [[target]]\nname = \"a\"\n\
             [[target]]\nname = \"b\"\nsettings = {{ {b_settings} }}\n\
             [matrix]\nscales = [1]\nclients = [{clients}]\nscripts = [{{ file = \"sleep.sql\" }}]\n\
             [repeats]\nuntil = \"2%\"\nmin = 3\nmax = 9\n\
             [run]\nduration = 5\n"
        ),
    )
    .unwrap();
    let store = dir.join("r.db").display().to_string();
    let (_, err, code) = pgsurge(&[
        "campaign",
        "run",
        &file.display().to_string(),
        "--store",
        &store,
        "--quiet",
    ]);
    assert_eq!(code, 0, "{err}");
    store
}

/// `compare` of the store's two targets, as JSON, and as text.
fn compare(store: &str) -> (serde_json::Value, String) {
    let (json, err, code) = pgsurge(&["compare", "--store", store, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let (text, err, code) = pgsurge(&["compare", "--store", store]);
    assert_eq!(code, 0, "{err}");
    (serde_json::from_str(&json).unwrap(), text)
}

/// Per cell of the store (by test key without target and repeat), its runs per target
/// and the `repeats_until` fact they hold.
fn stored_cells(store: &str) -> Vec<(String, usize, Vec<Option<CellPrecision>>)> {
    let mut store = Store::open(store).unwrap();
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    let mut cells: Vec<(String, usize, Vec<Option<CellPrecision>>)> = Vec::new();
    for r in &runs {
        assert_eq!(r.record.status, "ok", "{:?}", r.record);
        // `TARGET/s1/sleep.sql/cN/r-/REPEAT`: the cell is what lies between.
        let key = &r.record.test_key;
        let cell = key[key.find('/').unwrap() + 1..key.rfind('/').unwrap()].to_string();
        let fact = store
            .load_run(r.id)
            .unwrap()
            .facts
            .into_iter()
            .find(|f| f.name == facts::REPEATS_UNTIL)
            .and_then(|f| serde_json::from_str(f.value.as_deref()?).ok());
        match cells.iter_mut().find(|(c, _, _)| *c == cell) {
            Some((_, n, stored)) => {
                *n += 1;
                stored.push(fact);
            }
            None => cells.push((cell, 1, vec![fact])),
        }
    }
    cells
}

#[test]
fn an_a_a_campaign_until_two_per_cent_finds_no_difference_in_every_cell() {
    let _alone = one_at_a_time();
    let dir = pgsurge_testkit::scratch_dir("until-aa");
    let store = run_campaign(dir.path(), "aa", "2, 4", "");
    let (doc, text) = compare(&store);
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{doc:#}");
    for cell in cells {
        let tps = &cell["tps"];
        assert_eq!(tps["verdict"], "no-difference", "{cell:#}\n{text}");
        // Its smallest detectable change is stated, in the JSON and in the text.
        let detectable = tps["detectable_change"].as_f64().unwrap();
        assert!(detectable > 0.0, "{cell:#}");
        let said = format!("smallest detectable change {:.1} %", detectable * 100.0);
        assert!(text.contains(&said), "{said}\n{text}");
        assert!(
            cell["repeats_until"]["a"]["half_width"].as_f64().unwrap() <= 0.02,
            "{cell:#}"
        );
    }
    // Each target's runs ran in one server start of its own, and say so.
    let mut s = Store::open(&store).unwrap();
    let mut starts: Vec<(String, String)> = Vec::new();
    for r in s.list_runs(&RunFilter::default()).unwrap() {
        let start = s
            .load_run(r.id)
            .unwrap()
            .facts
            .into_iter()
            .find(|f| f.name == facts::SERVER_START)
            .and_then(|f| f.value)
            .unwrap_or_else(|| panic!("run {} has no server_start", r.id));
        let target = r.record.test_key.split('/').next().unwrap().to_string();
        if !starts.contains(&(target.clone(), start.clone())) {
            starts.push((target, start));
        }
    }
    starts.sort();
    assert_eq!(starts.len(), 2, "{starts:?}");
    assert_ne!(starts[0].1, starts[1].1, "{starts:?}");
    // Both targets ran every round of a cell, and its runs hold the precision it
    // reached.
    for (cell, runs, stored) in stored_cells(&store) {
        assert_eq!(runs % 2, 0, "{cell}: {runs} runs");
        assert!(runs / 2 >= 3, "{cell}: {runs} runs");
        let reached = stored[0].unwrap_or_else(|| panic!("{cell}: no repeats_until"));
        assert!(reached.reached(), "{cell}: {reached:?}");
        assert_eq!(reached.repeats, runs / 2, "{cell}");
        assert!(stored.iter().all(|s| *s == Some(reached)), "{stored:?}");
    }
}

#[test]
fn a_slower_b_is_judged_slower_in_fewer_repeats_than_ten() {
    let _alone = one_at_a_time();
    let dir = pgsurge_testkit::scratch_dir("until-slower");
    let store = run_campaign(dir.path(), "slower", "4", "\"bench.extra_ms\" = \"2.5\"");
    let (doc, text) = compare(&store);
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 1, "{doc:#}");
    let tps = &cells[0]["tps"];
    assert_eq!(tps["verdict"], "slower", "{doc:#}\n{text}");
    // B's rate is lower by a few per cent: beyond the margin, far from a collapse.
    let change = tps["change"].as_f64().unwrap();
    assert!((-0.25..-0.02).contains(&change), "{tps:#}");
    let [(cell, runs, stored)] = &stored_cells(&store)[..] else {
        panic!("one cell expected");
    };
    let reached = stored[0].unwrap_or_else(|| panic!("{cell}: no repeats_until"));
    assert!(reached.reached(), "{cell}: {reached:?}");
    assert_eq!(reached.repeats, runs / 2, "{cell}");
    assert!(reached.repeats < 10, "{cell}: {reached:?}");
    assert!(text.contains("slower"), "{text}");
}
