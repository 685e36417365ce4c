//! End-to-end test of the report: a store with a realistic A/B campaign (two targets, an
//! A/A repeat, two scales, three client counts, three repeats, per-second intervals,
//! histograms, metrics with a checkpoint, settings, environment) is written through the
//! store's API; the report is generated from it and opened in headless Chromium.

use crate::common;

use hdrhistogram::Histogram;
use pgsurge_report::cells::build_cells;
use pgsurge_report::compare::{compare, render_text, Along};
use pgsurge_report::{write_report, ReportRequest};
use pgsurge_store::*;
use std::collections::BTreeMap;
use std::path::Path;

/// Deterministic pseudo-random numbers (xorshift), so snapshots are stable.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> f64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        (self.0 >> 11) as f64 / (1u64 << 53) as f64
    }
}

fn build_store(path: &str) -> Store {
    let mut store = Store::open(path).unwrap();
    let set_id = store
        .create_set(&SetRecord {
            name: "ab-test".into(),
            kind: "campaign".into(),
            status: "complete".into(),
            created_at: "2026-11-22T00:00:00Z".into(),
            description: Some("shared_buffers 128MB vs 1GB".into()),
            ..Default::default()
        })
        .unwrap();
    let mut rng = Rng(0x9e3779b97f4a7c15);
    let targets = [("default", 1.0), ("default (A-A)", 1.0), ("tuned", 1.12)];
    let mut run_no = 0;
    for (name, speedup) in targets {
        let target_id = store
            .upsert_target(&TargetRecord {
                set_id,
                name: name.into(),
                kind: "throwaway".into(),
                server_version: Some("15.18".into()),
                server_version_num: Some(150018),
                settings: Some(
                    serde_json::json!({"shared_buffers": if speedup > 1.0 {"1GB"} else {"128MB"}}),
                ),
                ..Default::default()
            })
            .unwrap();
        for scale in [1i64, 10] {
            for clients in [1i64, 2, 4] {
                for repeat in 1..=3i64 {
                    run_no += 1;
                    let base =
                        900.0 * (clients as f64).powf(0.8) * speedup / (1.0 + scale as f64 / 50.0);
                    let tps = base * (1.0 + (rng.next() - 0.5) * 0.01);
                    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
                    let mean_us = clients as f64 * 1e6 / tps;
                    for _ in 0..2000 {
                        let v = mean_us
                            * (0.5 + rng.next())
                            * if rng.next() > 0.98 { 4.0 } else { 1.0 };
                        h.record(v as u64).unwrap();
                    }
                    let t0 = 1_790_000_000.0 + run_no as f64 * 10.0;
                    // Five full seconds, then the partial last interval the engine
                    // stores (0.041 s, 4 transactions, "tps" over a full second).
                    let intervals: Vec<IntervalRecord> = (0..6)
                        .map(|i| IntervalRecord {
                            ts: t0 + i as f64,
                            elapsed_s: i as f64,
                            duration_s: if i == 5 { 0.041 } else { 1.0 },
                            transactions: if i == 5 {
                                4
                            } else {
                                (tps * (1.0 + (rng.next() - 0.5) * 0.05)) as i64
                            },
                            tps: if i == 5 { 4.0 } else { tps },
                            latency_p50_ms: Some(h.value_at_quantile(0.5) as f64 / 1000.0),
                            latency_p90_ms: Some(h.value_at_quantile(0.9) as f64 / 1000.0),
                            latency_p99_ms: Some(h.value_at_quantile(0.99) as f64 / 1000.0),
                            latency_max_ms: Some(h.max() as f64 / 1000.0),
                            failures: Some(0),
                            retried: Some(0),
                            skipped: Some(0),
                            ..Default::default()
                        })
                        .collect();
                    let mut metrics = Vec::new();
                    for i in 0..5 {
                        let ts = t0 + i as f64 + 0.5;
                        metrics.push(MetricSample {
                            ts,
                            metric: "os.cpu.user_pct".into(),
                            value: 40.0 + 10.0 * rng.next(),
                        });
                        metrics.push(MetricSample {
                            ts,
                            metric: "os.cpu.system_pct".into(),
                            value: 10.0 + 5.0 * rng.next(),
                        });
                        metrics.push(MetricSample {
                            ts,
                            metric: "os.disk.vda.write_mb_s".into(),
                            value: 5.0 * rng.next(),
                        });
                        metrics.push(MetricSample {
                            ts,
                            metric: "os.cpu.iowait_pct".into(),
                            value: 2.0 * rng.next(),
                        });
                        metrics.push(MetricSample {
                            ts,
                            metric: "os.ctxt_per_s".into(),
                            value: 20000.0 + 1000.0 * rng.next(),
                        });
                        metrics.push(MetricSample {
                            ts,
                            metric: "pg.db.xact_commit_per_s".into(),
                            value: tps * (1.0 + (rng.next() - 0.5) * 0.1),
                        });
                        metrics.push(MetricSample {
                            ts,
                            metric: "pg.db.size_bytes".into(),
                            value: 1.6e8 + i as f64 * 1e5,
                        });
                        metrics.push(MetricSample {
                            ts,
                            metric: "pg.wal.lsn_bytes_per_s".into(),
                            value: 2.0e6 * (1.0 + rng.next()),
                        });
                        metrics.push(MetricSample {
                            ts,
                            metric: "pg.checkpointer.requested_per_s".into(),
                            value: if i == 3 { 1.0 } else { 0.0 },
                        });
                    }
                    store
                        .write_run(&RunWrite {
                            run: RunRecord {
                                set_id,
                                target_id: Some(target_id),
                                test_key: format!("{name}/s{scale}/c{clients}/r{repeat}"),
                                repeat_no: repeat,
                                status: "ok".into(),
                                start_epoch: Some(t0),
                                end_epoch: Some(t0 + 5.0),
                                script: Some("select-only".into()),
                                scripts: Some(serde_json::json!([{"name": "select-only", "weight": 1, "text": "\\set aid random(1, 100000 * :scale)\nSELECT abalance FROM pgbench_accounts WHERE aid = :aid;\n"}])),
                                options: Some(serde_json::json!({"clients": clients, "jobs": 1, "protocol": "prepared"})),
                                command_line: Some(format!("pgbench -S -M prepared -c {clients} -T 5")),
                                scale: Some(scale),
                                clients: Some(clients),
                                threads: Some(1),
                                duration_s: Some(5.0),
                                query_mode: Some("prepared".into()),
                                tps: Some(tps),
                                transactions: Some((tps * 5.0) as i64),
                                server_commits: Some((tps * 5.0) as i64),
                                failures: Some(0),
                                latency_mean_ms: Some(h.mean() / 1000.0),
                                latency_p50_ms: Some(h.value_at_quantile(0.5) as f64 / 1000.0),
                                latency_p99_ms: Some(h.value_at_quantile(0.99) as f64 / 1000.0),
                                latency_max_ms: Some(h.max() as f64 / 1000.0),
                                ..Default::default()
                            },
                            intervals,
                            histograms: vec![HistogramRecord::from_histogram("latency", -1, None, &h).unwrap()],
                            metrics,
                            settings: vec![SettingRecord {
                                name: "shared_buffers".into(),
                                setting: Some(if speedup > 1.0 { "131072" } else { "16384" }.into()),
                                unit: Some("8kB".into()),
                                source: Some("configuration file".into()),
                                boot_val: Some("1024".into()),
                            }],
                            environment: Some(serde_json::json!({"kernel": "6.1.0", "cpu": {"model": "Test CPU", "count": 2}})),
                            ..Default::default()
                        })
                        .unwrap();
                }
            }
        }
    }
    store
}

fn cells_of(store: &mut Store, target: &str) -> Vec<pgsurge_report::cells::Cell> {
    let mut names = BTreeMap::new();
    let mut ids = vec![];
    for t in store.targets(1).unwrap() {
        if t.record.name == target {
            ids.push(t.id);
        }
        names.insert(t.id, t.record.name);
    }
    let runs = store
        .list_runs(&RunFilter {
            target_id: Some(ids[0]),
            ..Default::default()
        })
        .unwrap();
    build_cells(store, &runs, &names).unwrap()
}

#[test]
fn comparison_table_snapshot() {
    let dir = pgsurge_testkit::scratch_dir("report-html");
    let mut store = build_store(dir.path().join("r.db").to_str().unwrap());
    let a = cells_of(&mut store, "default");
    let b = cells_of(&mut store, "tuned");
    let c = compare("default", &a, "tuned", &b, &Along::targets());
    // Every cell is 12 % faster with 1 % noise: all six must be detected.
    assert_eq!(c.summary.tps_verdicts.faster, 6, "{}", render_text(&c));
    insta::assert_snapshot!("compare_default_vs_tuned", render_text(&c));
}

#[test]
fn report_data_tables_snapshot() {
    let dir = pgsurge_testkit::scratch_dir("report-html");
    let mut store = build_store(dir.path().join("r.db").to_str().unwrap());
    let files = write_report(
        &mut store,
        &ReportRequest::default(),
        &dir.path().join("out"),
    )
    .unwrap();
    let index = std::fs::read_to_string(&files.index).unwrap();
    // The comparison tables and the targets beside them, then the scale x clients
    // tables, one row per line for review.
    let section = |from: &str, to: &str| {
        let start = index.find(from).unwrap_or_else(|| panic!("no {from}"));
        let end = start + index[start..].find(to).unwrap_or_else(|| panic!("no {to}"));
        index[start..end].to_string()
    };
    let tables = [
        section("<h2>Comparison</h2>", "<h2>Throughput and latency"),
        section("<h2>Scale × clients", "<h2>Tests</h2>"),
    ]
    .concat()
    .replace("<tr>", "\n<tr>")
    .replace("<h3>", "\n<h3>")
    .replace("<p>", "\n<p>")
    .replace("<h2>", "\n<h2>");
    insta::assert_snapshot!("index_data_tables", tables);
}

/// Runs headless Chromium on `page` and returns (DOM after load, stderr).
fn chromium(args: &[&str], page: &Path) -> (String, String) {
    let shown = pgsurge_testkit::chromium::open_file(args, page);
    (shown.stdout, shown.stderr)
}

#[test]
fn report_opens_in_headless_chromium_with_every_chart_rendered() {
    let dir = pgsurge_testkit::scratch_dir("report-html");
    let mut store = build_store(dir.path().join("r.db").to_str().unwrap());
    let out = dir.path().join("report");
    let files = write_report(&mut store, &ReportRequest::default(), &out).unwrap();
    assert_eq!(
        files.files.len(),
        1 + 3 * 2 * 3 * 3,
        "index + one page per test"
    );
    let index = std::fs::read_to_string(&files.index).unwrap();
    // The comparison section states the verdicts and the A/A noise floor.
    assert!(
        index.contains("ab-test · default → ab-test · tuned"),
        "comparison missing"
    );
    assert!(index.contains("noise floor (A/A, ab-test · default → ab-test · default (A-A)): ±"));
    assert!(index.contains(">faster<"));

    // Check in the browser that each page's SVG charts were laid out with a real size and
    // hold drawn geometry: an inline script writes its findings into the DOM we dump.
    let check = r#"<script>
      window.addEventListener('load', () => {
        const svgs = [...document.querySelectorAll('.chart > svg')];
        const bad = svgs.filter(s => { const r = s.getBoundingClientRect();
          return !(r.width > 100 && r.height > 100 && s.querySelectorAll('polyline,polygon,circle,path,line').length > 0); });
        document.body.setAttribute('data-check', svgs.length + ' charts, ' + bad.length + ' empty');
      });
    </script></body>"#;
    let artifacts = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-screenshots");
    std::fs::create_dir_all(&artifacts).unwrap();
    let first_run = files
        .files
        .iter()
        .find(|f| f.file_name().unwrap().to_string_lossy().starts_with("run-"))
        .unwrap()
        .clone();
    let marker = regex::Regex::new(r#"data-check="(\d+) charts, (\d+) empty""#).unwrap();
    for (page, expected_min) in [(files.index.clone(), 5usize), (first_run, 6)] {
        let html = std::fs::read_to_string(&page).unwrap();
        let probe = page.with_extension("probe.html");
        std::fs::write(&probe, html.replace("</body>", check)).unwrap();
        let (dom, stderr) = chromium(&["--dump-dom", "--virtual-time-budget=5000"], &probe);
        if page != files.index {
            // The run page marks the checkpoint sampled 3.5 s into the run: a legend entry
            // and a dashed vertical line in each per-second chart.
            assert!(
                html.contains("checkpoint</li>"),
                "checkpoint marker legend missing"
            );
            assert!(
                html.contains("stroke-dasharray") || html.matches("<line").count() >= 4,
                "no marker line drawn"
            );
            // "What limited this run?": CPU, commits, WAL, checkpoints; metric charts
            // split by unit; the partial last interval left out and said so.
            for needle in [
                "What limited this run?",
                "CPU, server host (os.*)",
                "Commits per second, server and client",
                "WAL written",
                "checkpoints during the test</td>",
                "pg.db (bytes)",
                "pg.db (1/s)",
                "os (1/s)",
                "interval at 5.00 s left out: 0.041 s long",
                "seconds since the measured start",
                // Server counters published in batches: five seconds are too short to
                // smooth, so each sample is drawn over its second, and the note says so.
                "too short for a 3-second moving average",
                "full_page_writes",
            ] {
                assert!(html.contains(needle), "run page lacks {needle:?}");
            }
        }
        let caps = marker
            .captures(&dom)
            .unwrap_or_else(|| panic!("no check result in DOM; stderr:\n{stderr}"));
        let (charts, empty): (usize, usize) = (caps[1].parse().unwrap(), caps[2].parse().unwrap());
        assert!(
            charts >= expected_min,
            "{}: only {charts} charts",
            page.display()
        );
        assert_eq!(empty, 0, "{}: {empty} charts empty", page.display());
        let console_errors: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("CONSOLE") && l.contains("ERROR"))
            .collect();
        assert!(
            console_errors.is_empty(),
            "console errors: {console_errors:?}"
        );
        let shot = artifacts.join(format!(
            "{}.png",
            page.file_stem().unwrap().to_string_lossy()
        ));
        let (_, stderr) = chromium(
            &[
                &format!("--screenshot={}", shot.display()),
                "--window-size=1400,2200",
            ],
            &page,
        );
        let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(
            size > 10_000,
            "screenshot {} missing or blank ({size} bytes); stderr:\n{stderr}",
            shot.display()
        );
    }
}

#[test]
fn compare_command_line_resolves_sides_and_rejects_bad_ones() {
    use pgsurge_report::compare_main;
    let dir = pgsurge_testkit::scratch_dir("report-html");
    let path = dir.path().join("r.db");
    drop(build_store(path.to_str().unwrap()));
    let args = |v: &[&str]| -> Vec<std::ffi::OsString> {
        ["--store", path.to_str().unwrap()]
            .iter()
            .chain(v)
            .map(Into::into)
            .collect()
    };
    // Explicit sides by set and target names, by ids, as JSON, and with an A/A pair.
    assert_eq!(
        compare_main(&args(&[
            "set:ab-test/target:default",
            "set:ab-test/target:tuned"
        ])),
        0
    );
    assert_eq!(
        compare_main(&args(&[
            "target:default",
            "target:tuned",
            "--format",
            "json"
        ])),
        0
    );
    assert_eq!(
        compare_main(&args(&[
            "set:1/target:default",
            "set:1/target:tuned",
            "--aa",
            "target:default,target:default (A-A)"
        ])),
        0
    );
    // Runs 1-3 are default's c=1 repeats, 37-39 tuned's (targets were written in order).
    assert_eq!(compare_main(&args(&["run:1,2,3", "run:37,38,39"])), 0);
    assert_eq!(
        compare_main(&args(&["run:1,2,3", "run:4,5,6"])),
        1,
        "no cell in common"
    );
    // Filters: mode and script are dimensions; an unknown mode is an error.
    assert_eq!(
        compare_main(&args(&[
            "set:ab-test/target:default/mode:prepared",
            "set:ab-test/target:tuned/script:<builtin: select only>"
        ])),
        0
    );
    assert_eq!(
        compare_main(&args(&["target:default/mode:fast", "target:tuned"])),
        1
    );
    // --fail-on: tuned is 12 % faster than default. Exit 3 only for a regression
    // beyond the threshold.
    assert_eq!(
        compare_main(&args(&[
            "target:default",
            "target:tuned",
            "--fail-on=slower"
        ])),
        0
    );
    assert_eq!(
        compare_main(&args(&[
            "target:tuned",
            "target:default",
            "--fail-on=slower"
        ])),
        pgsurge_report::EXIT_REGRESSION
    );
    assert_eq!(pgsurge_report::EXIT_REGRESSION, 3);
    assert_eq!(
        compare_main(&args(&[
            "target:tuned",
            "target:default",
            "--fail-on=slower:5%"
        ])),
        3
    );
    assert_eq!(
        compare_main(&args(&[
            "target:tuned",
            "target:default",
            "--fail-on=slower:50%"
        ])),
        0,
        "the worst regression (tps -10.7 %, p99 +41 % at c=1) is within 50 %"
    );
    assert_eq!(
        compare_main(&args(&[
            "target:tuned",
            "target:default",
            "--fail-on=faster"
        ])),
        2,
        "bad --fail-on is a usage error"
    );
    // --fail-on=invalid: three repeats a side and no stored reason pass; two repeats
    // a side cannot pass the gate, whatever the verdict.
    assert_eq!(
        compare_main(&args(&[
            "target:tuned",
            "target:default",
            "--fail-on=slower:50%,invalid"
        ])),
        0
    );
    assert_eq!(
        compare_main(&args(&[
            "run:1,2",
            "run:37,38",
            "--margin=5%",
            "--fail-on=invalid"
        ])),
        3
    );
    assert_eq!(
        compare_main(&args(&["target:tuned", "target:default", "--margin=0%"])),
        2,
        "a margin must be above 0"
    );
    // No sides: the two real targets (the A-A twin is the noise check).
    assert_eq!(compare_main(&args(&[])), 0);
    // Bad input: clear error, exit 1; usage error, exit 2.
    assert_eq!(compare_main(&args(&["target:nope", "target:tuned"])), 1);
    assert_eq!(compare_main(&args(&["bogus", "target:tuned"])), 1);
    assert_eq!(compare_main(&args(&["run:x", "target:tuned"])), 1);
    assert_eq!(compare_main(&args(&["target:default"])), 1);
    assert_eq!(compare_main(&args(&["--format", "yaml"])), 2);
    let missing = vec![
        "--store".into(),
        dir.path().join("none.db").into_os_string(),
    ];
    assert_eq!(compare_main(&missing), 1);
    assert!(
        !dir.path().join("none.db").exists(),
        "a missing store must not be created"
    );
}

#[test]
fn compare_and_report_agree_on_a_store_with_an_a_a_twin() {
    let dir = pgsurge_testkit::scratch_dir("report-html");
    let path = dir.path().join("r.db");
    drop(build_store(path.to_str().unwrap()));
    let n = common::assert_compare_and_report_agree(&path, "ab-test · default → ab-test · tuned");
    assert_eq!(n, 6);
}

#[test]
fn compare_json_is_versioned_valid_and_the_schema_rejects_old_shapes() {
    let dir = pgsurge_testkit::scratch_dir("report-html");
    let path = dir.path().join("r.db");
    drop(build_store(path.to_str().unwrap()));
    let args = pgsurge_report::CompareArgs {
        a: Some("target:default".into()),
        b: Some("target:tuned".into()),
        store: Some(path.to_str().unwrap().into()),
        aa: Some("target:default,target:default (A-A)".into()),
        along: vec![],
        format: pgsurge_report::Format::Json,
        fail_on: None,
        margin: None,
        explain: false,
        profile_diff: None,
    };
    let c = pgsurge_report::run_compare(&args).unwrap();
    let v = serde_json::to_value(&c).unwrap();
    assert_eq!(v["format"], "pgsurge-compare");
    assert_eq!(v["schema_version"], pgsurge_report::COMPARE_SCHEMA_VERSION);
    let schema: serde_json::Value = serde_json::from_str(pgsurge_report::COMPARE_SCHEMA).unwrap();
    assert_eq!(
        schema["properties"]["schema_version"]["const"],
        pgsurge_report::COMPARE_SCHEMA_VERSION
    );
    pgsurge_testkit::schema::assert_valid(pgsurge_report::COMPARE_SCHEMA, &v);
    let invalid = |doc: &serde_json::Value| {
        !pgsurge_testkit::schema::violations(pgsurge_report::COMPARE_SCHEMA, doc).is_empty()
    };
    assert_eq!(v["cells"][0]["tps"]["verdict"], "faster");
    assert_eq!(v["summary"]["tps_verdicts"]["faster"], 6);
    assert!(v["noise_floor"]["tps_half_width"].as_f64().unwrap() > 0.0);
    // The old positional verdicts and symbols are not valid any more.
    let mut old = v.clone();
    old["cells"][0]["tps"]["verdict"] = serde_json::json!("~");
    assert!(invalid(&old));
    let mut old = v.clone();
    old["summary"]["tps_verdicts"] = serde_json::json!([6, 0, 0, 0]);
    assert!(invalid(&old));
    let mut unversioned = v;
    unversioned
        .as_object_mut()
        .unwrap()
        .remove("schema_version");
    assert!(invalid(&unversioned));
}

#[test]
fn client_bound_runs_are_flagged_in_the_report_cells() {
    let dir = pgsurge_testkit::scratch_dir("report-html");
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let set_id = store
        .create_set(&SetRecord {
            name: "bound".into(),
            kind: "campaign".into(),
            status: "complete".into(),
            created_at: "2026-11-22T00:00:00Z".into(),
            ..Default::default()
        })
        .unwrap();
    let target_id = store
        .upsert_target(&TargetRecord {
            set_id,
            name: "local".into(),
            kind: "throwaway".into(),
            ..Default::default()
        })
        .unwrap();
    for (repeat, bound) in [(1i64, false), (2, true)] {
        store
            .write_run(&RunWrite {
                run: RunRecord {
                    set_id,
                    target_id: Some(target_id),
                    test_key: format!("local/s1/select-only/c8/r-/{repeat}"),
                    repeat_no: repeat,
                    status: "ok".into(),
                    script: Some("select-only".into()),
                    scale: Some(1),
                    clients: Some(8),
                    tps: Some(1000.0 + repeat as f64),
                    ..Default::default()
                },
                facts: vec![
                    FactRecord::new(facts::CLIENT_BOUND, bound.to_string()),
                    FactRecord::new(
                        facts::CLIENT_BOUND_REASON,
                        "driver thread at 99 % of a core",
                    ),
                ],
                // A target's warning goes with each of its tests.
                warnings: vec![pgsurge_store::WarningRecord {
                    code: "host_noise".into(),
                    message: "target \"local\": turbo/boost is on".into(),
                    created_at: "2026-11-22T00:00:00Z".into(),
                    ..Default::default()
                }],
                ..Default::default()
            })
            .unwrap();
    }
    let files = write_report(
        &mut store,
        &ReportRequest::default(),
        &dir.path().join("out"),
    )
    .unwrap();
    let index = std::fs::read_to_string(&files.index).unwrap();
    assert!(index.contains("(client-bound 1 of 2)"), "{index}");
    // Listed once, with the number of tests it concerns.
    assert_eq!(index.matches("turbo/boost is on").count(), 1, "{index}");
    assert!(
        index.contains("turbo/boost is on <span class=\"muted\">(2 tests)</span>"),
        "{index}"
    );
}

/// A store of many sets (a nightly benchmark): each set gets a page of its own, the
/// index lists the sets newest first and draws each cell's median across them.
#[test]
fn a_store_of_many_sets_gets_a_page_per_set_and_a_trend_per_cell() {
    let dir = pgsurge_testkit::scratch_dir("report-many-sets");
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let nights = pgsurge_report::SETS_ON_ONE_PAGE + 3;
    let mut set_ids = Vec::new();
    for night in 0..nights {
        let set_id = store
            .create_set(&SetRecord {
                name: format!("nightly-{night}"),
                kind: "quickstart".into(),
                status: "complete".into(),
                created_at: format!("2026-11-{:02}T00:00:00Z", night + 1),
                ..Default::default()
            })
            .unwrap();
        set_ids.push(set_id);
        let target_id = store
            .upsert_target(&TargetRecord {
                set_id,
                name: "local".into(),
                kind: "throwaway".into(),
                ..Default::default()
            })
            .unwrap();
        for clients in [1i64, 2] {
            for repeat in 1..=2i64 {
                store
                    .write_run(&RunWrite {
                        run: RunRecord {
                            set_id,
                            target_id: Some(target_id),
                            test_key: format!("local/s1/select-only/c{clients}/r-/{repeat}"),
                            repeat_no: repeat,
                            status: "ok".into(),
                            script: Some("select-only".into()),
                            scale: Some(1),
                            clients: Some(clients),
                            tps: Some(1000.0 * clients as f64 - night as f64 + repeat as f64),
                            ..Default::default()
                        },
                        ..Default::default()
                    })
                    .unwrap();
            }
        }
    }
    let out = dir.path().join("out");
    let files = write_report(&mut store, &ReportRequest::default(), &out).unwrap();
    let index = std::fs::read_to_string(&files.index).unwrap();
    // Sets newest first, each linked to its page; no list of every test.
    let links: Vec<usize> = set_ids
        .iter()
        .map(|id| {
            index
                .find(&format!("<a href=\"set-{id}.html\">"))
                .unwrap_or_else(|| panic!("no link to set {id}"))
        })
        .collect();
    assert!(links.windows(2).all(|w| w[0] > w[1]), "{links:?}");
    assert!(!index.contains("<h2>Tests</h2>"), "{index}");
    // One trend chart for the one workload and scale, a line per client count with a
    // point per set.
    assert_eq!(index.matches("TPS across sets, select-only s=1").count(), 1);
    let drawn = index
        .split("<polyline")
        .skip(1)
        // A series' line: its own tag drawn 2 wide (a change point's dashed mark is not).
        .filter(|p| p[..p.find('>').unwrap_or(p.len())].contains("stroke-width=\"2\""))
        .map(|p| {
            let start = p.find("points=\"").unwrap() + 8;
            p[start..start + p[start..].find('"').unwrap()]
                .split_whitespace()
                .count()
        })
        .collect::<Vec<_>>();
    assert_eq!(drawn, vec![nights, nights], "{index}");
    for id in &set_ids {
        let page = std::fs::read_to_string(out.join(format!("set-{id}.html"))).unwrap();
        assert!(page.contains("<h2>Tests</h2>") && page.contains("← all sets"));
        let runs: std::collections::BTreeSet<&str> = page
            .split("<a href=\"run-")
            .skip(1)
            .map(|l| &l[..l.find('"').unwrap()])
            .collect();
        assert_eq!(runs.len(), 4, "{page}");
    }
}
