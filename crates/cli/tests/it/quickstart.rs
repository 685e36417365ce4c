//! `pgsurge quickstart`: a throwaway server, init, the select-only/tpcb-like matrix,
//! a summary table, results in a store file, the report's path, and no server left
//! running. The short variant keeps CI fast; the default path (scale 10, 1/2/4/8
//! clients, three rounds of 4 s tests) runs once and must finish in under three
//! minutes.

use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

fn pgsurge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pgsurge"))
}

/// PIDs of postgres processes whose command line names a quickstart data directory
/// (its target is `local`: the other tests of this binary that run campaigns on
/// throwaway servers name their targets otherwise).
fn quickstart_postgres() -> Vec<String> {
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains("postgres") && cmdline.contains("pgsurge-campaign-local") {
                out.push(format!("{} {cmdline}", e.file_name().to_string_lossy()));
            }
        }
    }
    out
}

fn check_output(stdout: &str, dir: &Path, store: &Path, report_dir: &Path, tests: usize) {
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.contains("/select-only/") || l.contains("/tpcb-like/"))
        .collect();
    assert_eq!(rows.len(), tests, "summary table:\n{stdout}");
    assert!(
        rows.iter().all(|r| r.trim_end().ends_with("ok")),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!("results stored in {}", store.display())),
        "{stdout}"
    );
    assert!(
        store.exists() || dir.join(store).exists(),
        "store file missing"
    );
    let report_line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("report: "))
        .unwrap_or_else(|| panic!("no report path in:\n{stdout}"));
    let report = if Path::new(report_line).is_absolute() {
        Path::new(report_line).to_path_buf()
    } else {
        dir.join(report_line)
    };
    assert!(report.starts_with(report_dir) || report.starts_with(dir.join(report_dir)));
    assert!(report.is_file(), "report {} missing", report.display());
}

/// Held by each test that runs `pgsurge quickstart`: their throwaway servers have the
/// same target name, so one would take the other's for a server left running.
pub(crate) static ONE_QUICKSTART: std::sync::Mutex<()> = std::sync::Mutex::new(());

#[test]
fn quickstart_short_then_default_leaves_nothing_running() {
    let _one = ONE_QUICKSTART.lock().unwrap_or_else(|p| p.into_inner());
    assert!(
        quickstart_postgres().is_empty(),
        "a quickstart server is already running"
    );
    let dir = pgsurge_testkit::scratch_dir("quickstart");

    // Short variant: 2 clients counts × 2 scripts, one round of 2 s tests, scale 1.
    let store = dir.path().join("short.db");
    let report_dir = dir.path().join("short-report");
    let out = pgsurge()
        .args([
            "quickstart",
            "--duration",
            "2",
            "--clients",
            "1,2",
            "--repeats",
            "1",
            "--scale",
            "1",
            "--store",
        ])
        .arg(&store)
        .arg("--report-dir")
        .arg(&report_dir)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    assert!(
        stderr.contains("[4/4]"),
        "progress shown on stderr:\n{stderr}"
    );
    check_output(&stdout, dir.path(), &store, &report_dir, 4);
    assert!(
        quickstart_postgres().is_empty(),
        "left running: {:?}",
        quickstart_postgres()
    );

    // The default path, with the default store file and report directory.
    let started = Instant::now();
    let out = pgsurge()
        .arg("quickstart")
        .env_remove("PGSURGE_STORE")
        .current_dir(dir.path())
        .output()
        .unwrap();
    let elapsed = started.elapsed();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    check_output(
        &stdout,
        dir.path(),
        Path::new("pgsurge-results.db"),
        Path::new("pgsurge-report"),
        24,
    );
    assert!(stdout.contains("/s10/"), "scale 10: {stdout}");
    assert!(
        elapsed < Duration::from_secs(180),
        "quickstart took {elapsed:?}"
    );
    assert!(
        quickstart_postgres().is_empty(),
        "left running: {:?}",
        quickstart_postgres()
    );
}
