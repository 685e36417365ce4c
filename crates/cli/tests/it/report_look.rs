//! The report of a real campaign of two throwaway targets on this machine (server and
//! client on one host), in headless Chromium: the index leads with the comparison, the
//! targets' provenance beside it, the charts below; a test page draws the host's CPU
//! once (not again as the client's), splits it by who used it (the target's PostgreSQL
//! processes, pgsurge, everything else), and gives each CPU state one colour and dash on
//! every chart. Screenshots of both pages are written to `target/tmp/report-look/`.

use std::path::Path;
use std::process::Command;

fn chromium(args: &[&str], page: &Path) -> String {
    pgsurge_testkit::chromium::open_file(args, page).stdout
}

/// One chart of a page: its title and its legend's entries (name, stroke, dash).
struct Chart {
    title: String,
    legend: Vec<(String, String, String)>,
}

fn charts(html: &str) -> Vec<Chart> {
    let attr = |s: &str, name: &str| -> String {
        let at = s.find(&format!("{name}=\"")).map(|i| i + name.len() + 2);
        at.map(|a| s[a..a + s[a..].find('"').unwrap()].to_string())
            .unwrap_or_default()
    };
    html.split("<div class=\"chart\">")
        .skip(1)
        .map(|c| {
            let c = &c[..c.find("</div>").unwrap_or(c.len())];
            let title = c
                .split("<text")
                .nth(1)
                .and_then(|t| t.split('>').nth(1))
                .map(|t| t.trim_end_matches("</text").trim().to_string())
                .unwrap_or_default();
            let legend = c
                .split("<ul class=\"legend\">")
                .nth(1)
                .map(|l| {
                    l.split("<li>")
                        .skip(1)
                        .map(|li| {
                            let swatch_end = li.find("</svg>").unwrap();
                            let name = li[swatch_end + 6..]
                                .split("</li>")
                                .next()
                                .unwrap()
                                .to_string();
                            let swatch = &li[..swatch_end];
                            (
                                name,
                                attr(swatch, "stroke"),
                                attr(swatch, "stroke-dasharray"),
                            )
                        })
                        .collect()
                })
                .unwrap_or_default();
            Chart { title, legend }
        })
        .collect()
}

#[test]
fn a_two_target_campaign_reads_answer_first_and_its_test_pages_show_the_host_cpu_once() {
    let dir = pgsurge_testkit::scratch_dir("report-look");
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        r#"
[campaign]
name = "look"
[[target]]
name = "base"
[[target]]
name = "tuned"
settings = { shared_buffers = "64MB" }
[matrix]
scales = [1]
clients = [2]
scripts = ["tpcb-like"]
repeats = 3
[run]
duration = 2
"#,
    )
    .unwrap();
    let store = dir.path().join("r.db");
    let pgsurge = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_pgsurge"))
            .args(args)
            .current_dir(dir.path())
            .env_remove("PGSURGE_STORE")
            .output()
            .expect("run pgsurge")
    };
    let store_s = store.to_str().unwrap();
    let run = pgsurge(&["campaign", "run", "--quiet", "--store", store_s, "c.toml"]);
    assert!(
        run.status.success(),
        "{}",
        String::from_utf8_lossy(&run.stderr)
    );
    let report = pgsurge(&["report", "--store", store_s, "-o", "out"]);
    assert!(
        report.status.success(),
        "{}",
        String::from_utf8_lossy(&report.stderr)
    );
    let index = dir.path().join("out/index.html");
    let test_page = dir.path().join("out/run-1.html");

    // The index in a browser: the comparison above the charts, the provenance beside it.
    let probe = r#"<script>
      window.addEventListener('load', () => {
        const box = s => document.querySelector(s).getBoundingClientRect();
        const v = box('.answer > .verdicts'), p = box('.answer > .provenance');
        const chart = box('.chart');
        document.body.setAttribute('data-layout',
          [v.top, v.left, v.right, p.top, p.left, chart.top].map(Math.round).join(' '));
      });
    </script></body>"#;
    let html = std::fs::read_to_string(&index).unwrap();
    assert!(html.contains("base"), "{html}");
    let probe_page = index.with_extension("probe.html");
    std::fs::write(&probe_page, html.replace("</body>", probe)).unwrap();
    let dom = chromium(
        &[
            "--dump-dom",
            "--virtual-time-budget=5000",
            "--window-size=1600,1200",
        ],
        &probe_page,
    );
    let layout: Vec<f64> = regex::Regex::new(r#"data-layout="([-\d ]+)""#)
        .unwrap()
        .captures(&dom)
        .unwrap_or_else(|| panic!("no layout in the DOM: {}", &dom[..dom.len().min(2000)]))[1]
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    let [v_top, v_left, v_right, p_top, p_left, chart_top] = layout[..] else {
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

    // A test page: the one host's CPU once, split by who used it.
    let page = std::fs::read_to_string(&test_page).unwrap();
    let charts = charts(&page);
    let titled = |t: &str| charts.iter().filter(|c| c.title == t).collect::<Vec<_>>();
    let cpu: Vec<&str> = charts
        .iter()
        .map(|c| c.title.as_str())
        .filter(|t| t.starts_with("CPU, "))
        .collect();
    assert_eq!(cpu, ["CPU, server and client host (os.*)"], "{cpu:?}");
    assert!(
        titled("client.cpu (%)").is_empty(),
        "the host's CPU drawn twice"
    );
    let by_user = titled("CPU by who used it, server host");
    assert_eq!(by_user.len(), 1);
    let who: Vec<&str> = by_user[0].legend.iter().map(|l| l.0.as_str()).collect();
    assert_eq!(
        who,
        [
            "PostgreSQL (the target&#39;s processes)",
            "pgsurge",
            "everything else"
        ],
        "{who:?}"
    );
    // Each CPU state in one colour and dash on every chart that draws it.
    let states = |c: &Chart| -> Vec<(String, String, String)> {
        c.legend
            .iter()
            .filter(|l| {
                [
                    "user",
                    "system",
                    "iowait",
                    "user_pct",
                    "system_pct",
                    "iowait_pct",
                ]
                .contains(&l.0.as_str())
            })
            .map(|l| {
                (
                    l.0.trim_end_matches("_pct").to_string(),
                    l.1.clone(),
                    l.2.clone(),
                )
            })
            .collect()
    };
    let sorted = |mut v: Vec<(String, String, String)>| {
        v.sort();
        v
    };
    let on_cpu_chart = sorted(states(titled("CPU, server and client host (os.*)")[0]));
    let os_cpu = titled("os.cpu (%)");
    assert_eq!(os_cpu.len(), 1, "no os.cpu chart among the sampled metrics");
    assert_eq!(on_cpu_chart.len(), 3, "{on_cpu_chart:?}");
    assert_eq!(sorted(states(os_cpu[0])), on_cpu_chart);

    // Screenshots of both pages, to look at.
    let shots = Path::new(env!("CARGO_TARGET_TMPDIR")).join("report-look");
    std::fs::create_dir_all(&shots).unwrap();
    for (page, name) in [(&index, "index.png"), (&test_page, "test-page.png")] {
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
