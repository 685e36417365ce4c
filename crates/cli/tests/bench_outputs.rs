//! Every output `bench` was asked for is written whole or the run fails: `--json`,
//! `--hdr-log` and `-l` logs into a directory that does not exist, or onto a full
//! filesystem (a tiny tmpfs the test mounts), end with a message and exit status 1, and
//! leave no file (and no temporary file) behind.

use std::path::Path;
use std::process::Command;

use pgsurge_server::testing::TestServer;

fn bench(srv: &TestServer, args: &[&str]) -> (String, i32) {
    let out = srv
        .apply_env(&mut Command::new(env!("CARGO_BIN_EXE_pgsurge")))
        .arg("bench")
        .args(args)
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

fn initialized(srv: &TestServer, name: &str) -> String {
    let db = srv.create_database(name);
    let (err, code) = bench(srv, &["-i", "-s", "1", "-q", &db]);
    assert_eq!(code, 0, "{err}");
    db
}

fn files_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

#[test]
fn outputs_into_a_missing_directory_fail_the_run() {
    let srv = TestServer::shared();
    let db = initialized(srv, "outputs_missing");
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("no-such-dir/r.json");
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-t",
            "50",
            &format!("--json={}", json.display()),
            &db,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&json.display().to_string()), "{err}");
    let hlog = dir.path().join("no-such-dir/r.hlog");
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-t",
            "50",
            &format!("--hdr-log={}", hlog.display()),
            &db,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(err.contains(&hlog.display().to_string()), "{err}");
    assert!(files_in(dir.path()).is_empty());
}

/// A tmpfs of two pages mounted on a fresh directory, unmounted on drop.
struct TinyFs(tempfile::TempDir);

impl TinyFs {
    fn mount() -> Option<TinyFs> {
        let dir = tempfile::tempdir().unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", "size=8k", "tmpfs"])
            .arg(dir.path())
            .status()
            .is_ok_and(|s| s.success());
        ok.then_some(TinyFs(dir))
    }
}

impl Drop for TinyFs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.0.path()).status();
    }
}

#[test]
fn outputs_onto_a_full_filesystem_fail_the_run_and_leave_nothing() {
    let Some(fs) = TinyFs::mount() else {
        // Mounting needs root (CI runs as root).
        pgsurge_testkit::missing_reference("mount -t tmpfs failed (not root?)");
        return;
    };
    let srv = TestServer::shared();
    let db = initialized(srv, "outputs_full");
    // Fill it: no page left for anything written.
    std::fs::write(fs.0.path().join("filler"), vec![b'x'; 8192]).unwrap();
    let json = fs.0.path().join("r.json");
    let hlog = fs.0.path().join("r.hlog");
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-T",
            "2",
            &format!("--json={}", json.display()),
            &format!("--hdr-log={}", hlog.display()),
            &db,
        ],
    );
    assert_eq!(code, 1, "{err}");
    for path in [&json, &hlog] {
        assert!(
            err.contains(&format!("{}", path.display())) && err.contains("No space left on device"),
            "{err}"
        );
    }
    assert_eq!(files_in(fs.0.path()), vec!["filler".to_string()]);
    // `-l` logs too: the first failed write gives the thread's log up.
    let prefix = fs.0.path().join("pgbench_log");
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-T",
            "2",
            "-j",
            "2",
            "-c",
            "2",
            "-l",
            &format!("--log-prefix={}", prefix.display()),
            &db,
        ],
    );
    assert_eq!(code, 1, "{err}");
    assert!(
        err.contains("could not write to log file") && err.contains("No space left on device"),
        "{err}"
    );
    assert_eq!(files_in(fs.0.path()), vec!["filler".to_string()]);
}

#[test]
fn transaction_logs_appear_whole_after_the_run() {
    let srv = TestServer::shared();
    let db = initialized(srv, "outputs_logs");
    let dir = tempfile::tempdir().unwrap();
    let prefix = dir.path().join("pgbench_log");
    let (err, code) = bench(
        srv,
        &[
            "-n",
            "-S",
            "-t",
            "100",
            "-c",
            "2",
            "-j",
            "2",
            "-l",
            &format!("--log-prefix={}", prefix.display()),
            &db,
        ],
    );
    assert_eq!(code, 0, "{err}");
    let mut names = files_in(dir.path());
    names.sort();
    assert_eq!(names.len(), 2, "{names:?}");
    assert!(
        names.iter().all(|n| n.starts_with("pgbench_log.")),
        "{names:?}"
    );
    let lines: usize = names
        .iter()
        .map(|n| {
            std::fs::read_to_string(dir.path().join(n))
                .unwrap()
                .lines()
                .count()
        })
        .sum();
    assert_eq!(lines, 200);
}
