//! `compare --explain` and `--profile-diff` over a store (real SQLite) whose two
//! targets ran the same cell three times each with profiles stored: B spends most of
//! its samples in one function A hardly runs. The explanation names it first, with
//! its change in µs per transaction and an interval that excludes zero; the JSON
//! stays valid against the schema; the differential flame graph holds the function
//! as a frame coloured as grown (red).

use pgsurge_report::{run_compare, CompareArgs, Format};
use pgsurge_results::profile::{parse_folded, Profile, ProfileKind};
use pgsurge_store::*;

fn profile(burn: u64, other: u64) -> ProfileRecord {
    let text = format!(
        "postgres;main;PostgresMain;exec_simple_query;burn_cpu {burn}\n\
         postgres;main;PostgresMain;exec_simple_query;ExecutorRun {other}\n\
         postgres;main;PostgresMain;ReadyForQuery 50\n"
    );
    pgsurge_store::profile::encode(&Profile {
        kind: ProfileKind::ServerCpu,
        frequency_hz: Some(1000),
        stacks: parse_folded(&text).unwrap(),
        notes: Vec::new(),
    })
}

fn store_with_profiles(path: &str) {
    let mut store = Store::open(path).unwrap();
    let set_id = store
        .create_set(&SetRecord {
            name: "explain".into(),
            kind: "campaign".into(),
            status: "complete".into(),
            created_at: "2026-01-01T00:00:00Z".into(),
            ..Default::default()
        })
        .unwrap();
    for (t, name) in ["base", "patched"].iter().enumerate() {
        let target_id = store
            .upsert_target(&TargetRecord {
                set_id,
                name: (*name).into(),
                kind: "existing".into(),
                ..Default::default()
            })
            .unwrap();
        for repeat in 1..=3u64 {
            let tps = if t == 0 { 1000.0 } else { 700.0 } + repeat as f64;
            let burn = if t == 0 { 2 } else { 3000 + 40 * repeat };
            store
                .write_run(&RunWrite {
                    run: RunRecord {
                        set_id,
                        target_id: Some(target_id),
                        test_key: format!("{t}/r{repeat}"),
                        repeat_no: repeat as i64,
                        status: "ok".into(),
                        start_epoch: Some(1_790_000_000.0 + (t * 10) as f64 + repeat as f64),
                        end_epoch: Some(1_790_000_005.0 + (t * 10) as f64 + repeat as f64),
                        script: Some("select-only".into()),
                        scale: Some(1),
                        clients: Some(1),
                        threads: Some(1),
                        duration_s: Some(10.0),
                        query_mode: Some("simple".into()),
                        tps: Some(tps),
                        transactions: Some(10_000),
                        failures: Some(0),
                        latency_mean_ms: Some(1000.0 / tps),
                        ..Default::default()
                    },
                    profiles: vec![profile(burn, 4000 + 10 * repeat)],
                    ..Default::default()
                })
                .unwrap();
        }
    }
}

#[test]
fn explain_names_the_function_that_grew_and_the_diff_shows_it_red() {
    let dir = pgsurge_testkit::scratch_dir("compare-explain");
    let path = dir.path().join("r.db");
    store_with_profiles(path.to_str().unwrap());
    let svg_dir = dir.path().join("diff");
    let args = |explain: bool, format: Format| CompareArgs {
        a: Some("target:base".into()),
        b: Some("target:patched".into()),
        store: Some(path.to_str().unwrap().into()),
        aa: None,
        along: vec![],
        format,
        fail_on: None,
        margin: None,
        explain,
        profile_diff: explain.then(|| svg_dir.clone()),
    };
    // Without --explain: nothing of it.
    let plain = run_compare(&args(false, Format::Text)).unwrap();
    assert!(plain.cells.iter().all(|r| r.explanations.is_empty()));
    assert!(!pgsurge_report::compare::render_text(&plain).contains("Why "));

    let c = run_compare(&args(true, Format::Json)).unwrap();
    assert_eq!(c.cells.len(), 1);
    let e = &c.cells[0].explanations;
    assert_eq!(e.len(), 1, "{e:?}");
    assert_eq!(
        (e[0].kind.as_str(), e[0].a_n, e[0].b_n),
        ("server-cpu", 3, 3)
    );
    let first = &e[0].functions[0];
    assert_eq!(first.function, "burn_cpu");
    // 3080 samples of 1 ms over 10000 transactions: 308 µs per transaction, from 0.2.
    assert!((first.self_us.change - 307.8).abs() < 0.01, "{first:?}");
    let (lo, hi) = (
        first.self_us.ci_low.unwrap(),
        first.self_us.ci_high.unwrap(),
    );
    assert!(lo > 0.0 && lo < 307.8 && hi > 307.8, "{lo} {hi}");

    let text = pgsurge_report::compare::render_text(&c);
    let line = text
        .lines()
        .find(|l| l.trim_start().starts_with("burn_cpu"))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(line.contains("self +308 µs ["), "{line}");
    let md = pgsurge_report::compare::render_markdown(&c);
    assert!(md.contains("| `burn_cpu` | +308 µs ["), "{md}");

    let doc = serde_json::to_value(&c).unwrap();
    assert_eq!(
        doc["cells"][0]["explanations"][0]["functions"][0]["function"],
        "burn_cpu"
    );
    pgsurge_testkit::schema::assert_valid(pgsurge_report::COMPARE_SCHEMA, &doc);

    let svgs: Vec<_> = std::fs::read_dir(&svg_dir).unwrap().flatten().collect();
    assert_eq!(svgs.len(), 1);
    let svg = std::fs::read_to_string(svgs[0].path()).unwrap();
    // The grown frame: its title, and a red fill (inferno: rgb(255,…) for growth).
    let at = svg
        .find("<title>burn_cpu")
        .unwrap_or_else(|| panic!("{svg}"));
    let rect = &svg[at..at + svg[at..].find("</g>").unwrap()];
    assert!(rect.contains("fill=\"rgb(255,"), "{rect}");
}
