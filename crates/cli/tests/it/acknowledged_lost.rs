//! Acknowledged commits lost, said by `compare` (text and JSON) and by the report's
//! failure cost alike, on a store written through the store's API as a campaign with
//! `check_commits` writes it: target `a`'s three repeats each checked 100 commits and
//! lost none, target `b`'s lost 2, 3 and 0 of theirs.

use pgsurge_store::{RunWrite, Store};

use crate::stored_runs::{campaign_set, pgsurge, repeat_run, throwaway_target};

const LOST: [(&str, [u64; 3]); 2] = [("a", [0, 0, 0]), ("b", [2, 3, 0])];

fn checked_store(path: &str) {
    let mut store = Store::open(path).unwrap();
    let set_id = campaign_set(&mut store, "checked", "2026-11-01T02:00:00Z");
    for (target, lost) in LOST {
        let target_id = throwaway_target(&mut store, set_id, target);
        for (i, lost) in lost.into_iter().enumerate() {
            let repeat = i as i64 + 1;
            let mut run = repeat_run(set_id, target_id, target, repeat, 1000.0 + repeat as f64);
            run.result_json = Some(serde_json::json!({
                "failure_cost": {
                    "faults": [{"at_s": 5.0, "action": "kill", "done_unix_us": 1_790_000_005_000_000_i64}],
                    "acknowledged_checked": 100,
                    "acknowledged_lost": lost,
                }
            }));
            store
                .write_run(&RunWrite {
                    run,
                    ..Default::default()
                })
                .unwrap();
        }
    }
}

#[test]
fn compare_and_the_report_count_the_same_acknowledged_commits_lost() {
    let dir = pgsurge_testkit::scratch_dir("acknowledged-lost");
    let path = dir.path().join("r.db").display().to_string();
    checked_store(&path);

    let (code, text, err) = pgsurge(&["compare", "--store", &path]);
    assert_eq!(code, 0, "{err}");
    assert!(
        text.contains("acknowledged commits lost after the faults")
            && text.contains(": A 0 of 300 checked, B 5 of 300 checked\n"),
        "{text}"
    );

    let (code, json, err) = pgsurge(&["compare", "--store", &path, "--format", "json"]);
    assert_eq!(code, 0, "{err}");
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    pgsurge_testkit::schema::assert_valid(pgsurge_report::COMPARE_SCHEMA, &doc);
    let lost = &doc["cells"][0]["acknowledged_lost"];
    assert_eq!(
        lost["a"],
        serde_json::json!({"checked": 300, "lost": 0}),
        "{lost}"
    );
    assert_eq!(
        lost["b"],
        serde_json::json!({"checked": 300, "lost": 5}),
        "{lost}"
    );

    // The report's failure cost of each of b's runs says what compare summed.
    let out = dir.path().join("report");
    let (code, _, err) = pgsurge(&["report", "--store", &path, "-o", out.to_str().unwrap()]);
    assert_eq!(code, 0, "{err}");
    let mut said = Vec::new();
    for id in 1..=6 {
        let page = std::fs::read_to_string(out.join(format!("run-{id}.html"))).unwrap();
        let n = ["0", "2", "3"]
            .into_iter()
            .find(|n| page.contains(&format!("{n} of 100 checked")));
        said.push(n.expect("the acknowledged commits row"));
    }
    said.sort_unstable();
    assert_eq!(said, ["0", "0", "0", "0", "2", "3"]);
}
