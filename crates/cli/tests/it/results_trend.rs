//! `pgsurge results trend` and the report's trends on a store of nightly sets (real
//! SQLite, written through the store's API as a campaign writes it): fourteen sets of
//! one campaign, each a build of its own commit, with two cells of three repeats. One
//! cell is 10 % slower from the ninth set on; the other stays level. Both wobble by up
//! to ±1 % from set to set and repeat to repeat.

use pgsurge_store::{facts, FactRecord, RunWrite, Store};

use crate::stored_runs::{campaign_set, pgsurge, select_only_run, throwaway_target};

/// A fixed ±1 % wobble, so the test is the same on every run.
const WOBBLE: [f64; 11] = [0.4, -0.7, 0.9, -0.2, 0.6, -1.0, 0.1, 0.8, -0.5, 0.3, -0.8];

fn nightly_store(path: &str) {
    let mut store = Store::open(path).unwrap();
    for night in 1..=14i64 {
        let set_id = campaign_set(
            &mut store,
            "nightly",
            &format!("2026-11-{night:02}T02:00:00Z"),
        );
        let target_id = throwaway_target(&mut store, set_id, "pg");
        for (clients, slower) in [(8i64, true), (1, false)] {
            for repeat in 1..=3i64 {
                let k = (night * 3 + repeat + clients) as usize;
                let level = if slower && night >= 9 { 900.0 } else { 1000.0 };
                let tps = level * clients as f64 * (1.0 + WOBBLE[k % WOBBLE.len()] / 100.0);
                store
                    .write_run(&RunWrite {
                        run: select_only_run(
                            set_id,
                            target_id,
                            format!("pg/s1/select-only/c{clients}/r-/{repeat}"),
                            repeat,
                            1_790_000_000.0 + (night * 100 + repeat) as f64,
                            clients,
                            tps,
                        ),
                        facts: vec![FactRecord::new(
                            facts::BUILD_COMMIT,
                            format!("c0mm1t{night:02}"),
                        )],
                        ..Default::default()
                    })
                    .unwrap();
            }
        }
    }
}

#[test]
fn a_cell_slower_from_one_set_on_has_its_change_point_there_and_nowhere_else() {
    let dir = pgsurge_testkit::scratch_dir("results-trend");
    let path = dir.path().join("r.db").display().to_string();
    nightly_store(&path);
    let (code, out, err) = pgsurge(&["results", "trend", "--store", &path]);
    assert_eq!(code, 0, "{err}");
    let cell = |name: &str| -> String {
        let start = out
            .find(&format!("nightly · pg · s1/select-only/{name}/r-:"))
            .unwrap();
        let rest = &out[start..];
        let end = rest[1..].find("nightly · ").map_or(rest.len(), |e| e + 1);
        rest[..end].to_string()
    };
    let slower = cell("c8");
    assert!(
        slower.starts_with("nightly · pg · s1/select-only/c8/r-: 14 sets\n"),
        "{out}"
    );
    assert_eq!(slower.matches("level changed at set").count(), 1, "{out}");
    assert!(
        slower.contains("level changed at set 9 (2026-11-09T02:00:00Z): "),
        "{out}"
    );
    assert!(slower.contains(" tps (-10.0 %), p = "), "{out}");
    assert!(
        slower.contains("(Welch's t over 8 sets before, 6 from it on)"),
        "{out}"
    );
    assert!(
        slower.contains(
            "between commits c0mm1t08 (set 8) and c0mm1t09: pgsurge bisect CAMPAIGN.toml \
             --good c0mm1t08 --bad c0mm1t09 --threshold 5"
        ),
        "{out}"
    );
    assert_eq!(
        cell("c1"),
        "nightly · pg · s1/select-only/c1/r-: 14 sets, no change of level\n"
    );
    // A filter keeps the cells whose label holds it.
    let (code, only, _) = pgsurge(&["results", "trend", "--store", &path, "c1/"]);
    assert_eq!(code, 0);
    assert_eq!(only, cell("c1"));
    let (_, none, _) = pgsurge(&["results", "trend", "--store", &path, "no such cell"]);
    assert_eq!(none, "no campaign cell matches\n");

    // The report's index (of a store of more than 12 sets: the sets' index) draws each
    // cell across the sets and marks the change.
    let report = dir.path().join("report");
    let (code, _, err) = pgsurge(&["report", "--store", &path, "-o", report.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let index = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(
        index.contains("Level changed (E-divisive means): pg · c=8: from set 9 on, -10.0 %"),
        "{index}"
    );
    assert!(!index.contains("c=1: from set"), "{index}");
}

#[test]
fn results_trend_json_is_a_versioned_document_its_schema_describes() {
    let dir = pgsurge_testkit::scratch_dir("results-trend-json");
    let path = dir.path().join("r.db").display().to_string();
    nightly_store(&path);
    let (code, out, err) = pgsurge(&["results", "trend", "--store", &path, "--json"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&out).unwrap();
    let (code, schema, err) = pgsurge(&["schema", "trend"]);
    assert_eq!(code, 0, "{err}");
    pgsurge_testkit::schema::assert_valid(&schema, &doc);
    assert_eq!(doc["format"], "pgsurge-trend");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["filter"], serde_json::Value::Null);
    let cells = doc["cells"].as_array().unwrap();
    assert_eq!(cells.len(), 2, "{doc:#}");
    let cell = |name: &str| {
        cells
            .iter()
            .find(|c| c["cell"] == format!("s1/select-only/{name}/r-"))
            .unwrap_or_else(|| panic!("no cell {name}: {doc:#}"))
    };
    // The slower cell: fourteen levels, one change at set 9, of about -10 %, with the
    // bisect of the commits around it.
    let slower = cell("c8");
    assert_eq!(slower["label"], "nightly · pg · s1/select-only/c8/r-");
    assert_eq!(slower["judged"], true);
    let levels = slower["levels"].as_array().unwrap();
    assert_eq!(levels.len(), 14);
    assert_eq!(levels[8]["set_id"], 9);
    assert_eq!(levels[8]["commit"], "c0mm1t09");
    assert!((levels[0]["tps"].as_f64().unwrap() - 8000.0).abs() < 100.0);
    let [change] = &slower["changes"].as_array().unwrap()[..] else {
        panic!("one change expected: {slower:#}");
    };
    assert_eq!(change["set_id"], 9);
    assert_eq!(change["index"], 8);
    assert_eq!(change["created_at"], "2026-11-09T02:00:00Z");
    assert!(
        (change["change"].as_f64().unwrap() + 0.10).abs() < 0.005,
        "{change}"
    );
    assert!(change["p_value"].as_f64().unwrap() < 0.001, "{change}");
    assert_eq!(
        (change["n_before"].clone(), change["n_after"].clone()),
        (8.into(), 6.into())
    );
    assert_eq!(change["bisect"]["good"], "c0mm1t08");
    assert_eq!(change["bisect"]["bad"], "c0mm1t09");
    assert_eq!(change["bisect"]["threshold_pct"], 5.0);
    assert_eq!(
        change["bisect"]["command"],
        "pgsurge bisect CAMPAIGN.toml --good c0mm1t08 --bad c0mm1t09 --threshold 5"
    );
    // The level one: none.
    assert_eq!(cell("c1")["changes"], serde_json::json!([]));
    // A filter is stated and keeps the cells whose label holds it.
    let (code, out, err) = pgsurge(&["results", "trend", "--store", &path, "--json", "c1/"]);
    assert_eq!(code, 0, "{err}");
    let only: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(only["filter"], "c1/");
    assert_eq!(only["cells"].as_array().unwrap().len(), 1, "{only:#}");
}
