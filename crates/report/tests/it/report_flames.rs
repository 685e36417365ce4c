//! Flame graphs in the report, from a real short campaign with `[profile]`: two
//! targets (two databases of a throwaway server of this test's own) × 2 repeats of
//! 2-second select-only tests in the simple protocol, each test's server processes
//! sampled with perf. The report writes a flame graph per test (embedded in its page),
//! one per cell pooled over its repeats and a differential one of the compared cell
//! (linked from the comparison); opened in headless Chromium, the graphs are drawn and
//! their frames are PostgreSQL's functions.

use std::path::Path;

use pgsurge_campaign::{run_campaign, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_report::{write_report, ReportRequest};
use pgsurge_server::testing::{TestServer, TestServerOptions};
use pgsurge_store::{RunFilter, Store};

fn chromium(args: &[&str], page: &Path) -> String {
    pgsurge_testkit::chromium::open_file(args, page).stdout
}

/// The frames of a flame graph as Chromium's DOM has them: the function of each
/// `<title>` (`name (N samples, P%)`, differential graphs add the change).
fn frames(dom: &str) -> Vec<String> {
    regex::Regex::new(r"<title>([^<(]+?) \(")
        .unwrap()
        .captures_iter(dom)
        .map(|c| c[1].to_string())
        .collect()
}

#[test]
fn a_profiled_campaign_has_flame_graphs_per_test_per_cell_and_b_against_a() {
    if pgsurge_testkit::command_path("perf").is_none() {
        return;
    }
    let srv = TestServer::start(TestServerOptions::default());
    let (db_a, db_b) = (
        srv.create_database("flame_a"),
        srv.create_database("flame_b"),
    );
    let text = format!(
        r#"
[campaign]
name = "flames"
[[target]]
name = "a"
conninfo = "{}"
[[target]]
name = "b"
conninfo = "{}"
[matrix]
scales = [1]
clients = [2]
scripts = ["select-only"]
repeats = 2
[run]
duration = 2
query_mode = "simple"
[profile]
frequency = 999
"#,
        srv.conninfo(&db_a),
        srv.conninfo(&db_b)
    );
    let dir = pgsurge_testkit::scratch_dir("report-flames");
    let campaign = Campaign::parse(&text, "flames.toml", dir.path()).unwrap();
    let path = dir.path().join("r.db");
    let mut store = Store::open(path.to_str().unwrap()).unwrap();
    let opts = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign(&campaign, &mut store, &opts, &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed), (4, 0), "{out:?}");
    let runs = store.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 4);
    // A count is a sample: at 999 Hz no more than 999 a second on each CPU, over a
    // window far shorter than a minute.
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get()) as u64;
    for r in &runs {
        let stored = store.profiles(r.id).unwrap();
        assert_eq!(stored.len(), 1, "run {} has no server profile", r.id);
        let total = pgsurge_store::profile::decode(&stored[0]).unwrap().total();
        assert!(
            total > 0 && total < 999 * 60 * cpus,
            "run {}: {total} samples",
            r.id
        );
    }

    let report = dir.path().join("report");
    let files = write_report(&mut store, &ReportRequest::default(), &report).unwrap();
    let names: Vec<String> = files
        .files
        .iter()
        .map(|f| f.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let postgres = ["PostgresMain", "exec_simple_query"];

    // Each test's page embeds its graph, whose frames are the server's functions.
    for r in &runs {
        let svg = format!("run-{}-server-cpu.svg", r.id);
        assert!(names.contains(&svg), "{svg} not among {names:?}");
        let page = std::fs::read_to_string(report.join(format!("run-{}.html", r.id))).unwrap();
        assert!(
            page.contains(&format!(
                "<object class=\"flame\" type=\"image/svg+xml\" data=\"{svg}\">"
            )),
            "run {} does not embed {svg}",
            r.id
        );
        let shown = frames(&chromium(&["--dump-dom"], &report.join(&svg)));
        assert!(
            postgres.iter().any(|f| shown.iter().any(|s| s == f)),
            "{svg}: no PostgreSQL frame among {:?}",
            &shown[..shown.len().min(40)]
        );
    }

    // In a browser the graph embedded in a test's page is drawn, at its own size.
    let page = report.join(format!("run-{}.html", runs[0].id));
    let probe = r#"<script>
      window.addEventListener('load', () => {
        const o = document.querySelector('object.flame');
        const b = o.getBoundingClientRect();
        const doc = o.contentDocument;
        const n = doc ? doc.querySelectorAll('g > title').length : -1;
        document.body.setAttribute('data-flame', [Math.round(b.width), Math.round(b.height), n].join(' '));
      });
    </script></body>"#;
    let probed = report.join("probe.html");
    std::fs::write(
        &probed,
        std::fs::read_to_string(&page)
            .unwrap()
            .replace("</body>", probe),
    )
    .unwrap();
    let dom = chromium(
        &[
            "--dump-dom",
            "--virtual-time-budget=5000",
            "--window-size=1600,1200",
        ],
        &probed,
    );
    let flame: Vec<i64> = regex::Regex::new(r#"data-flame="([-\d ]+)""#)
        .unwrap()
        .captures(&dom)
        .unwrap_or_else(|| panic!("no flame graph probed: {}", &dom[..dom.len().min(2000)]))[1]
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    assert!(flame[0] > 1000 && flame[1] > 200, "{flame:?}");
    assert!(flame[2] > 10, "the embedded graph has no frames: {flame:?}");
    // A screenshot of the test's page, to look at.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-flames");
    std::fs::create_dir_all(&shots).unwrap();
    let shot = shots.join("test-page.png");
    chromium(
        &[
            &format!("--screenshot={}", shot.display()),
            "--window-size=1600,4000",
            "--virtual-time-budget=5000",
        ],
        &page,
    );

    // Each cell pooled over its repeats, and the compared cell B against A, linked from
    // the comparison on the index.
    let targets = store.targets(runs[0].record.set_id).unwrap();
    let first = |target: &str| {
        let id = targets.iter().find(|t| t.record.name == target).unwrap().id;
        runs.iter()
            .filter(|r| r.record.target_id == Some(id))
            .map(|r| r.id)
            .min()
            .unwrap()
    };
    let (a, b) = (first("a"), first("b"));
    let index = std::fs::read_to_string(&files.index).unwrap();
    for svg in [
        format!("cell-{a}-server-cpu.svg"),
        format!("cell-{b}-server-cpu.svg"),
        format!("diff-{a}-{b}-server-cpu.svg"),
    ] {
        assert!(names.contains(&svg), "{svg} not among {names:?}");
        assert!(
            index.contains(&format!("<a href=\"{svg}\">")),
            "the index does not link {svg}"
        );
        let shown = frames(&chromium(&["--dump-dom"], &report.join(&svg)));
        assert!(
            postgres.iter().any(|f| shown.iter().any(|s| s == f)),
            "{svg}: no PostgreSQL frame among {:?}",
            &shown[..shown.len().min(40)]
        );
    }
    drop(store);
    drop(srv);
}
