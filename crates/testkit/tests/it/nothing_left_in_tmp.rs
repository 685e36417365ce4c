//! Tests leave nothing in the temporary directory: the integration tests of the crates
//! whose tests write files and start servers there (script, wire, results) run with
//! `TMPDIR` set to a fresh empty directory, which must be empty once they have ended.
//!
//! The test binaries are the ones `cargo test --workspace` builds (asked of cargo with
//! `--no-run`, so after a workspace build nothing is built again).

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// The crates (directories under `crates/`) whose integration tests run with their own
/// `TMPDIR`.
const CRATES: &[&str] = &["results", "script", "wire"];

/// How long servers' watchdogs get to remove their directories after a test process
/// has ended.
const CLEANUP_GRACE: Duration = Duration::from_secs(30);

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The `it` test binary of each of [`CRATES`] and its manifest directory, from
/// `cargo test --workspace --no-run --test it --message-format=json`.
fn test_binaries() -> Vec<(String, PathBuf, PathBuf)> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let mut cmd = Command::new(cargo);
    // Without the variables cargo sets for this test process (`CARGO_PKG_NAME`,
    // `CARGO_MANIFEST_DIR`, …): build scripts that watch one of them would see it
    // changed and build their crate again.
    for (k, _) in std::env::vars_os() {
        let k = k.to_string_lossy();
        if is_set_by_cargo_for_tests(&k) {
            cmd.env_remove(&*k);
        }
    }
    cmd.current_dir(workspace()).args([
        "test",
        "--workspace",
        "--no-run",
        "--test",
        "it",
        "--message-format=json",
    ]);
    // The same profile as this test's own build.
    let exe = std::env::current_exe().expect("the test's own path");
    if exe.components().any(|c| c.as_os_str() == "release") {
        cmd.arg("--release");
    }
    let out = cmd.output().expect("running cargo");
    assert!(
        out.status.success(),
        "cargo test --no-run failed:\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut found = Vec::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else {
            continue;
        };
        let (Some(exe), Some(manifest)) =
            (msg["executable"].as_str(), msg["manifest_path"].as_str())
        else {
            continue;
        };
        let dir = Path::new(manifest)
            .parent()
            .expect("a manifest's directory");
        let Some(name) = dir.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if CRATES.contains(&name) && msg["target"]["name"] == "it" && msg["profile"]["test"] == true
        {
            found.push((name.to_string(), PathBuf::from(exe), dir.to_path_buf()));
        }
    }
    found.sort();
    let names: Vec<&str> = found.iter().map(|(n, _, _)| n.as_str()).collect();
    assert_eq!(names, CRATES, "the test binaries cargo reported");
    found
}

/// Whether `name` is one of the variables cargo sets for the test processes it runs
/// (as opposed to the user's configuration, `CARGO_HOME`, `CARGO_TARGET_DIR`, …).
fn is_set_by_cargo_for_tests(name: &str) -> bool {
    ["CARGO_PKG_", "CARGO_MANIFEST_", "CARGO_CFG_"]
        .iter()
        .any(|p| name.starts_with(p))
        || [
            "CARGO_CRATE_NAME",
            "CARGO_BIN_NAME",
            "CARGO_PRIMARY_PACKAGE",
            "CARGO_TARGET_TMPDIR",
            "CARGO_RUSTC_CURRENT_DIR",
            "OUT_DIR",
        ]
        .contains(&name)
}

/// The entries of `dir`, once the directory is empty or [`CLEANUP_GRACE`] has passed.
fn entries_after_cleanup(dir: &Path) -> Vec<String> {
    let deadline = Instant::now() + CLEANUP_GRACE;
    loop {
        let mut names: Vec<String> = std::fs::read_dir(dir)
            .expect("reading the temporary directory")
            .map(|e| {
                e.expect("a directory entry")
                    .file_name()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        if names.is_empty() || Instant::now() > deadline {
            names.sort();
            return names;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
}

#[test]
fn the_tests_that_wrote_there_leave_the_temporary_directory_empty() {
    for (name, exe, dir) in test_binaries() {
        // Short: the servers' socket paths are made under it.
        let tmp = pgsurge_testkit::scratch_dir("tmpdir");
        let out = Command::new(&exe)
            .current_dir(&dir)
            .env("TMPDIR", tmp.path())
            .env("CARGO_MANIFEST_DIR", &dir)
            .env_remove(pgsurge_testkit::KEEP_TEST_FILES)
            .output()
            .expect("running a test binary");
        assert!(
            out.status.success(),
            "{name}: {} failed:\n{}\n{}",
            exe.display(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let left = entries_after_cleanup(tmp.path());
        assert!(
            left.is_empty(),
            "{name}: its tests left in TMPDIR={}: {left:?}",
            tmp.display()
        );
    }
}
