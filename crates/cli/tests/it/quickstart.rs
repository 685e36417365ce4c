//! `pgsurge quickstart`: a throwaway server, init, the select-only/tpcb-like matrix,
//! a summary table, results in a store file, the report's path, and no server left
//! running. A short variant, then the default store, report directory, scale and client
//! counts with one round of 1-second tests (the default durations and rounds are
//! checked in the help text).

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

fn pgsurge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pgsurge"))
}

/// A temporary directory of the test's own for quickstart's throwaway server (its
/// `TMPDIR`), so that looking for a server left running finds only this test's, whatever
/// else runs beside it. The server user (`postgres`, when the tests run as root) must
/// be able to pass through the scratch directory to reach it.
pub(crate) fn server_tmp(dir: &Path) -> PathBuf {
    std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o711)).unwrap();
    let tmp = dir.join("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    std::fs::set_permissions(&tmp, std::fs::Permissions::from_mode(0o1777)).unwrap();
    tmp
}

/// PIDs and command lines of postgres processes whose data directory is under `tmp`.
pub(crate) fn quickstart_postgres(tmp: &Path) -> Vec<String> {
    let tmp = tmp.to_string_lossy();
    let mut out = Vec::new();
    if let Ok(entries) = std::fs::read_dir("/proc") {
        for e in entries.flatten() {
            let cmdline = std::fs::read(e.path().join("cmdline")).unwrap_or_default();
            let cmdline = String::from_utf8_lossy(&cmdline).replace('\0', " ");
            if cmdline.contains("postgres") && cmdline.contains(&*tmp) {
                out.push(format!("{} {cmdline}", e.file_name().to_string_lossy()));
            }
        }
    }
    out
}

/// Checks quickstart's output: one summary line per cell (`cells`), each with its
/// `repeats` and none failed, the store and the report.
fn check_output(
    stdout: &str,
    dir: &Path,
    store: &Path,
    report_dir: &Path,
    cells: usize,
    repeats: usize,
) {
    let rows: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with("select-only s=") || l.starts_with("tpcb-like s="))
        .collect();
    assert_eq!(rows.len(), cells, "summary table:\n{stdout}");
    for r in &rows {
        let words: Vec<&str> = r.split_whitespace().collect();
        // …  repeats  median  min–max,  range  %  p99  failed
        let n = words.len();
        assert!(n >= 8, "{r}");
        assert_eq!(words[n - 1], "0", "a failed repeat: {stdout}");
        assert_eq!(words[n - 7], repeats.to_string(), "{r}");
        assert!(words[n - 5].contains('–'), "no spread in {r}");
        assert!(words[n - 6].parse::<f64>().is_ok_and(|t| t > 0.0), "{r}");
    }
    assert!(
        !stdout.contains("/select-only/"),
        "one line per run:\n{stdout}"
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

#[test]
fn quickstart_short_then_default_leaves_nothing_running() {
    let dir = pgsurge_testkit::scratch_dir("quickstart");
    let tmp = server_tmp(dir.path());

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
        .env("TMPDIR", &tmp)
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
    check_output(&stdout, dir.path(), &store, &report_dir, 4, 1);
    assert!(
        quickstart_postgres(&tmp).is_empty(),
        "left running: {:?}",
        quickstart_postgres(&tmp)
    );

    // The default store file, report directory, scale and client counts; one round of
    // 1-second tests keeps it short.
    let out = pgsurge()
        .args(["quickstart", "--duration", "1", "--repeats", "1"])
        .env_remove("PGSURGE_STORE")
        .env("TMPDIR", &tmp)
        .current_dir(dir.path())
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "stdout:\n{stdout}\nstderr:\n{stderr}");
    check_output(
        &stdout,
        dir.path(),
        Path::new("pgsurge-results.db"),
        Path::new("pgsurge-report"),
        8,
        1,
    );
    assert!(stdout.contains(" s=10 "), "scale 10: {stdout}");
    for clients in [" c=1 ", " c=2 ", " c=4 ", " c=8 "] {
        assert!(stdout.contains(clients), "{clients}: {stdout}");
    }
    assert!(
        quickstart_postgres(&tmp).is_empty(),
        "left running: {:?}",
        quickstart_postgres(&tmp)
    );

    // The defaults of a first run: 4-second tests, three rounds.
    let out = pgsurge().args(["quickstart", "--help"]).output().unwrap();
    let help = String::from_utf8_lossy(&out.stdout);
    for default in [
        "Seconds per test [default: 4]",
        "[default: 3]",
        "Scale factor of `-i` [default: 10]",
        "Client counts, comma-separated [default: 1,2,4,8]",
    ] {
        assert!(help.contains(default), "{default}:\n{help}");
    }
}
