//! Where a cell's noise lives, said by `compare` (text and JSON) and the report, on a
//! store written through the store's API as a campaign writes it: target `a` ran its
//! cell in three server starts of three runs each, the starts 5 % apart (on the log
//! scale: −5 %, 0, +5 %) and the runs within each ±1 %; target `b` ran all nine in one
//! start. So A's variance is known by construction — 1e-4 within a start, 25e-4 between
//! the starts' means, of which 1e-4 / 3 is the runs' — and B's levels cannot be told
//! apart.

use pgsurge_store::{facts, FactRecord, RunWrite, Store};

use crate::stored_runs::{campaign_set, pgsurge, repeat_run, throwaway_target};

fn levels_store(path: &str) {
    let mut store = Store::open(path).unwrap();
    let set_id = campaign_set(&mut store, "levels", "2026-11-01T02:00:00Z");
    for (target, starts) in [("a", [-0.05, 0.0, 0.05]), ("b", [0.0, 0.0, 0.0])] {
        let target_id = throwaway_target(&mut store, set_id, target);
        for (j, level) in starts.iter().enumerate() {
            for (k, run) in [-0.01, 0.0, 0.01].iter().enumerate() {
                let repeat = (j * 3 + k + 1) as i64;
                let tps = 1000.0 * f64::exp(level + run);
                // B's runs all in one start; A's in a start per three repeats.
                let start = if target == "a" { j } else { 0 };
                store
                    .write_run(&RunWrite {
                        run: repeat_run(set_id, target_id, target, repeat, tps),
                        facts: vec![FactRecord::new(
                            facts::SERVER_START,
                            format!("{}.{start:06}", 1_789_000_000 + start * 1000),
                        )],
                        ..Default::default()
                    })
                    .unwrap();
            }
        }
    }
}

#[test]
fn compare_and_the_report_say_where_the_noise_lives_and_what_to_repeat() {
    let dir = pgsurge_testkit::scratch_dir("noise-levels");
    let path = dir.path().join("r.db").display().to_string();
    levels_store(&path);
    let said = "noise levels of A: 96 % of the variance between server starts (±5.0 % a \
                start, ±1.0 % a run within one; 3 starts × 3 runs): cheapest to repeat \
                starts, one run each";

    let (code, text, err) = pgsurge(&["compare", "--store", &path]);
    assert_eq!(code, 0, "{err}");
    assert!(text.contains(said), "{text}");
    assert!(!text.contains("noise levels of B"), "{text}");

    let (code, json, err) = pgsurge(&["compare", "--store", &path, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    pgsurge_testkit::schema::assert_valid(pgsurge_report::COMPARE_SCHEMA, &doc);
    let levels = &doc["cells"][0]["noise_levels"];
    let a = &levels["a"];
    assert_eq!(
        (a["starts"].clone(), a["runs_per_start"].clone()),
        (3.into(), 3.into())
    );
    assert!((a["within"].as_f64().unwrap() - 1e-4).abs() < 1e-10, "{a}");
    assert!(
        (a["between"].as_f64().unwrap() - (25e-4 - 1e-4 / 3.0)).abs() < 1e-10,
        "{a}"
    );
    assert_eq!(a["advised_runs_per_start"], 1);
    assert_eq!(levels["b"], serde_json::Value::Null, "{levels}");

    let report = dir.path().join("report");
    let (code, _, err) = pgsurge(&["report", "--store", &path, "-o", report.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let index = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(index.contains(said), "{index}");
}
