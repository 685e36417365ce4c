//! Names a user chose, as `compare` renders them: a target name holding HTML or
//! Markdown is text in `--format markdown`, never markup.

use pgsurge_report::compare::render_markdown;
use pgsurge_report::{run_compare, CompareArgs, Format};
use pgsurge_store::*;

/// A store (real SQLite) with one set and one target per name, each with three
/// repeats of the same cell.
fn store_with_targets(path: &str, names: &[&str]) {
    let mut store = Store::open(path).unwrap();
    let set_id = store
        .create_set(&SetRecord {
            name: "names".into(),
            kind: "campaign".into(),
            status: "complete".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            ..Default::default()
        })
        .unwrap();
    for (t, name) in names.iter().enumerate() {
        let target_id = store
            .upsert_target(&TargetRecord {
                set_id,
                name: (*name).into(),
                kind: "existing".into(),
                ..Default::default()
            })
            .unwrap();
        for repeat in 1..=3i64 {
            let tps = 1000.0 + 10.0 * t as f64 + repeat as f64;
            store
                .write_run(&RunWrite {
                    run: RunRecord {
                        set_id,
                        target_id: Some(target_id),
                        test_key: format!("{t}/r{repeat}"),
                        repeat_no: repeat,
                        status: "ok".into(),
                        start_epoch: Some(1_790_000_000.0 + (t as f64 * 10.0 + repeat as f64)),
                        end_epoch: Some(1_790_000_005.0 + (t as f64 * 10.0 + repeat as f64)),
                        script: Some("select-only".into()),
                        scale: Some(1),
                        clients: Some(1),
                        threads: Some(1),
                        duration_s: Some(5.0),
                        query_mode: Some("simple".into()),
                        tps: Some(tps),
                        transactions: Some((tps * 5.0) as i64),
                        failures: Some(0),
                        latency_mean_ms: Some(1000.0 / tps),
                        ..Default::default()
                    },
                    ..Default::default()
                })
                .unwrap();
        }
    }
}

#[test]
fn markdown_escapes_html_in_target_names() {
    let dir = pgsurge_testkit::scratch_dir("compare-names");
    let path = dir.path().join("r.db");
    let hostile = "<img src=x onerror=alert(1)>";
    let amp = "R&D <b>tuned";
    store_with_targets(path.to_str().unwrap(), &[hostile, amp]);
    let c = run_compare(&CompareArgs {
        a: Some(format!("target:{hostile}")),
        b: Some(format!("target:{amp}")),
        store: Some(path.to_str().unwrap().into()),
        aa: None,
        along: vec![],
        format: Format::Markdown,
        fail_on: None,
        margin: None,
        explain: false,
        profile_diff: None,
    })
    .expect("compare");
    let md = render_markdown(&c);
    for raw in ["<img", "<b>", "R&D"] {
        assert!(!md.contains(raw), "{raw} passed through raw:\n{md}");
    }
    assert!(
        md.contains("&lt;img src=x onerror=alert(1)&gt;"),
        "escaped name missing:\n{md}"
    );
    assert!(
        md.contains("R&amp;D &lt;b&gt;tuned"),
        "escaped name missing:\n{md}"
    );
}

#[test]
fn names_holding_a_slash_are_selectable() {
    let dir = pgsurge_testkit::scratch_dir("compare-names");
    let path = dir.path().join("r.db");
    store_with_targets(path.to_str().unwrap(), &["eu/db1", "eu/db2: tuned"]);
    let c = run_compare(&CompareArgs {
        a: Some("set:names/target:eu/db1".into()),
        b: Some("target:eu/db2: tuned/clients:1".into()),
        store: Some(path.to_str().unwrap().into()),
        aa: None,
        along: vec![],
        format: Format::Json,
        fail_on: None,
        margin: None,
        explain: false,
        profile_diff: None,
    })
    .expect("compare");
    assert_eq!(c.a_label, "names · eu/db1");
    assert_eq!(c.cells.len(), 1, "{:?}", c.cells);
}
