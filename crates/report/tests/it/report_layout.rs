//! The index of a campaign of two targets leads with the answer: the comparison (its
//! verdicts, each side's repeats, the noise floor) beside the targets' provenance, then
//! the warnings (one shared by both targets listed once, naming them), the charts (a
//! target in one colour and one marker on every chart, charts as wide as the page) and
//! the tables; the sets table gives each test's length and the host's CPUs. Checked in
//! the HTML and, where the look matters, in headless Chromium, which also writes
//! screenshots of the index and a test page (`target/tmp/report-layout/`).

use pgsurge_report::{write_report, ReportRequest};
use pgsurge_store::*;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

const TARGETS: [&str; 2] = ["base", "patched"];
const WORKLOADS: [&str; 2] = ["select-only", "tpcb-like"];

/// A store of one campaign: two targets built from source (the second patched), two
/// workloads, two scales, clients 1, 2, 4, three repeats of 5 s; a host warning stored
/// with each test of each target.
fn two_target_store(path: &Path) -> Store {
    let mut store = Store::open(path.to_str().unwrap()).unwrap();
    let set_id = store
        .create_set(&SetRecord {
            name: "patch-ab".into(),
            kind: "campaign".into(),
            status: "complete".into(),
            created_at: "2026-11-22T00:00:00Z".into(),
            ..Default::default()
        })
        .unwrap();
    let mut seq = 0u64;
    for (t, target) in TARGETS.into_iter().enumerate() {
        let target_id = store
            .upsert_target(&TargetRecord {
                set_id,
                name: target.into(),
                kind: "throwaway".into(),
                server_version: Some("18.1".into()),
                server_version_num: Some(180001),
                ..Default::default()
            })
            .unwrap();
        for workload in WORKLOADS {
            for scale in [1i64, 10] {
                for clients in [1i64, 2, 4] {
                    for repeat in 1..=3i64 {
                        seq += 1;
                        let base = if workload == "select-only" {
                            9000.0
                        } else {
                            900.0
                        };
                        let tps = base * (clients as f64).powf(0.8) * (1.0 - 0.1 * t as f64)
                            + (seq % 7) as f64;
                        let t0 = 1_790_000_000.0 + seq as f64 * 10.0;
                        let mut source = "postgresql-18.1.tar.bz2".to_string();
                        if t == 1 {
                            source.push_str(" + slow.patch (1a2b3c4d)");
                        }
                        store
                            .write_run(&RunWrite {
                                run: RunRecord {
                                    set_id,
                                    target_id: Some(target_id),
                                    test_key: format!(
                                        "{target}/s{scale}/{workload}/c{clients}/r-/{repeat}"
                                    ),
                                    repeat_no: repeat,
                                    status: "ok".into(),
                                    start_epoch: Some(t0),
                                    end_epoch: Some(t0 + 5.0),
                                    script: Some(workload.into()),
                                    scale: Some(scale),
                                    clients: Some(clients),
                                    duration_s: Some(5.0),
                                    measured_s: Some(5.0),
                                    tps: Some(tps),
                                    transactions: Some((tps * 5.0) as i64),
                                    latency_mean_ms: Some(clients as f64 * 1000.0 / tps),
                                    latency_p99_ms: Some(clients as f64 * 3000.0 / tps),
                                    ..Default::default()
                                },
                                intervals: (0..5)
                                    .map(|i| IntervalRecord {
                                        ts: t0 + i as f64,
                                        elapsed_s: i as f64,
                                        duration_s: 1.0,
                                        transactions: tps as i64,
                                        tps,
                                        ..Default::default()
                                    })
                                    .collect(),
                                environment: Some(serde_json::json!({
                                    "hostname": "bench1",
                                    "cpu": {"model": "Test CPU", "count": 2},
                                    "client": {"hostname": "bench1", "cpu": {"model": "Test CPU", "count": 2}}
                                })),
                                facts: vec![
                                    FactRecord::new(facts::BUILD_SOURCE, source),
                                    FactRecord::new(
                                        facts::BUILD_CONFIGURE,
                                        "'--prefix=/usr/local/pgsql' '--without-icu'",
                                    ),
                                ],
                                warnings: vec![WarningRecord {
                                    code: "host_noise".into(),
                                    message: format!(
                                        "target \"{target}\" (server and client host): turbo/boost is on"
                                    ),
                                    created_at: "2026-11-22T00:00:00Z".into(),
                                    ..Default::default()
                                }],
                                ..Default::default()
                            })
                            .unwrap();
                    }
                }
            }
        }
    }
    store
}

/// Each legend entry of a page: (series name, line colour, marker element).
fn legend_entries(html: &str) -> Vec<(String, String, String)> {
    html.split("<ul class=\"legend\">")
        .skip(1)
        .flat_map(|legend| {
            let legend = &legend[..legend.find("</ul>").unwrap()];
            legend
                .split("<li>")
                .skip(1)
                .map(|li| {
                    let li = li.trim_end_matches("</li>");
                    let at = li.find("stroke=\"").unwrap() + 8;
                    let colour = li[at..at + li[at..].find('"').unwrap()].to_string();
                    let swatch_end = li.find("</svg>").unwrap();
                    let marker = ["<circle", "<rect", "<polygon", "<path"]
                        .into_iter()
                        .find(|m| li[..swatch_end].contains(m))
                        .unwrap_or("none")
                        .to_string();
                    (li[swatch_end + 6..].to_string(), colour, marker)
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn a_target_keeps_one_colour_and_one_marker_on_every_chart() {
    let dir = pgsurge_testkit::scratch_dir("report-layout");
    let mut store = two_target_store(&dir.path().join("r.db"));
    let files = write_report(
        &mut store,
        &ReportRequest::default(),
        &dir.path().join("out"),
    )
    .unwrap();
    let index = std::fs::read_to_string(&files.index).unwrap();
    let entries = legend_entries(&index);
    let mut looks: BTreeMap<&str, BTreeSet<(String, String)>> = BTreeMap::new();
    for (name, colour, marker) in &entries {
        let target = TARGETS
            .into_iter()
            .find(|t| name.starts_with(&format!("{t} ")))
            .unwrap_or_else(|| panic!("a line of no target: {name}"));
        looks
            .entry(target)
            .or_default()
            .insert((colour.clone(), marker.clone()));
    }
    // Both workloads, both scales, TPS and latency: many charts, one look per target.
    let charts = index.matches("<div class=\"chart\">").count();
    assert!(charts >= 8, "{charts} charts");
    for t in TARGETS {
        assert_eq!(
            looks[t].len(),
            1,
            "{t} drawn in several looks: {:?}",
            looks[t]
        );
    }
    assert_ne!(looks["base"], looks["patched"], "the targets look alike");
}

#[test]
fn the_index_leads_with_the_comparison_and_names_shared_warnings_once() {
    let dir = pgsurge_testkit::scratch_dir("report-layout");
    let mut store = two_target_store(&dir.path().join("r.db"));
    let files = write_report(
        &mut store,
        &ReportRequest::default(),
        &dir.path().join("out"),
    )
    .unwrap();
    let index = std::fs::read_to_string(&files.index).unwrap();
    let at = |needle: &str| {
        index
            .find(needle)
            .unwrap_or_else(|| panic!("{needle} not in the index"))
    };
    // The comparison and the provenance come before the warnings and the charts.
    assert!(at("<h2>Comparison</h2>") < at("<h2>Warnings</h2>"));
    assert!(at("<h2>Warnings</h2>") < at("<div class=\"chart\">"));
    let answer = &index[at("<div class=\"answer\">")..at("<h2>Warnings</h2>")];
    for needle in [
        "patch-ab · base → patch-ab · patched",
        "Repeats of each side",
        "<h3>Targets</h3>",
        "postgresql-18.1.tar.bz2 + slow.patch (1a2b3c4d)",
        "configure --without-icu",
    ] {
        assert!(
            answer.contains(needle),
            "{needle} not beside the comparison"
        );
    }
    assert!(!answer.contains("--prefix"), "pgsurge's own prefix shown");
    // A warning of both targets: once, naming both, with its count of tests.
    assert_eq!(index.matches("turbo/boost is on").count(), 1, "{index}");
    assert!(
        index.contains(
            "targets &quot;base&quot;, &quot;patched&quot; (server and client host): turbo/boost \
             is on <span class=\"muted\">(72 tests)</span>"
        ),
        "{index}"
    );
    // Each test's length and the host's CPUs.
    assert!(index.contains("<td>5 s</td>"), "no test length");
    assert!(
        index.contains("server and client: 2 CPUs (Test CPU)"),
        "no host CPUs"
    );
}

fn chromium(args: &[&str], page: &Path) -> String {
    pgsurge_testkit::chromium::open_file(args, page).stdout
}

#[test]
fn in_a_browser_the_comparison_comes_first_with_the_provenance_beside_it() {
    let dir = pgsurge_testkit::scratch_dir("report-layout");
    let mut store = two_target_store(&dir.path().join("r.db"));
    let files = write_report(
        &mut store,
        &ReportRequest::default(),
        &dir.path().join("out"),
    )
    .unwrap();
    // Positions as the browser lays them out, written into the DOM that is dumped.
    let probe = r#"<script>
      window.addEventListener('load', () => {
        const box = s => document.querySelector(s).getBoundingClientRect();
        const v = box('.answer > .verdicts'), p = box('.answer > .provenance');
        const chart = box('.chart'), main = box('main');
        const charts = [...document.querySelectorAll('.chart > svg')].map(s => s.getBoundingClientRect());
        const row = charts.filter(c => Math.abs(c.top - charts[0].top) < 2).length;
        document.body.setAttribute('data-layout', [v.top, v.left, v.right, p.top, p.left,
          chart.top, chart.width, main.width, row].map(Math.round).join(' '));
      });
    </script></body>"#;
    let html = std::fs::read_to_string(&files.index).unwrap();
    let page = files.index.with_extension("probe.html");
    std::fs::write(&page, html.replace("</body>", probe)).unwrap();
    let dom = chromium(
        &[
            "--dump-dom",
            "--virtual-time-budget=5000",
            "--window-size=1600,1200",
        ],
        &page,
    );
    let layout: Vec<f64> = regex::Regex::new(r#"data-layout="([-\d ]+)""#)
        .unwrap()
        .captures(&dom)
        .unwrap_or_else(|| panic!("no layout in the DOM: {}", &dom[..dom.len().min(2000)]))[1]
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    let [v_top, v_left, v_right, p_top, p_left, chart_top, chart_width, main_width, per_row] =
        layout[..]
    else {
        panic!("{layout:?}")
    };
    assert!(
        v_top < chart_top,
        "the comparison is below the charts: {layout:?}"
    );
    assert!(
        (p_top - v_top).abs() < 40.0 && p_left >= v_right - 1.0 && v_left < p_left,
        "the provenance is not beside the comparison: {layout:?}"
    );
    // Two charts a row on a 1600 px window, together as wide as the page's content.
    assert!(per_row >= 2.0, "{layout:?}");
    assert!(
        chart_width * per_row > 0.9 * main_width - 60.0,
        "charts leave the page's width unused: {layout:?}"
    );

    // Screenshots of the index and of a test page, to look at.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-layout");
    std::fs::create_dir_all(&shots).unwrap();
    let run_page = files
        .files
        .iter()
        .find(|f| f.file_name().unwrap().to_string_lossy().starts_with("run-"))
        .unwrap();
    for (page, name) in [(&files.index, "index.png"), (run_page, "test-page.png")] {
        let shot = shots.join(name);
        chromium(
            &[
                &format!("--screenshot={}", shot.display()),
                "--window-size=1600,2400",
            ],
            page,
        );
        let size = std::fs::metadata(&shot).map(|m| m.len()).unwrap_or(0);
        assert!(
            size > 10_000,
            "screenshot {} blank ({size} bytes)",
            shot.display()
        );
    }
}
