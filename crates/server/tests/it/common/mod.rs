//! Helpers shared by the server crate's integration tests.
#![allow(dead_code)]

use std::path::Path;

/// Processes whose parent is `pid` (from /proc).
pub fn children_of(pid: i32) -> Vec<i32> {
    let mut out = Vec::new();
    for e in std::fs::read_dir("/proc").unwrap().flatten() {
        let Some(p) = e.file_name().to_str().and_then(|s| s.parse::<i32>().ok()) else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{p}/stat")) else {
            continue;
        };
        let Some((_, rest)) = stat.rsplit_once(") ") else {
            continue;
        };
        let fields: Vec<&str> = rest.split_whitespace().collect();
        if fields.get(1).and_then(|s| s.parse::<i32>().ok()) == Some(pid) && fields[0] != "Z" {
            out.push(p);
        }
    }
    out
}

/// Real uid of a process.
pub fn uid_of(pid: i32) -> u32 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("Uid:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

/// Runs psql with a conninfo and returns trimmed stdout; panics with stderr on failure.
pub fn psql(bin_dir: &Path, conninfo: &str, sql: &str) -> String {
    let psql = bin_dir.join("psql");
    let out = std::process::Command::new(psql)
        .args([
            "-X",
            "-At",
            "-v",
            "ON_ERROR_STOP=1",
            "-d",
            conninfo,
            "-c",
            sql,
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "psql failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// Waits until `pid` is gone (up to `secs`), returns whether it is.
pub fn wait_gone(pid: i32, secs: u64) -> bool {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(secs);
    while std::time::Instant::now() < deadline {
        if !pgsurge_server::is_alive(pid) {
            return true;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    !pgsurge_server::is_alive(pid)
}

/// A temporary directory the server's user can enter (tempfile makes them 0700, and
/// as root the server runs as `postgres`).
pub fn reachable_tempdir() -> pgsurge_testkit::ScratchDir {
    use std::os::unix::fs::PermissionsExt;
    let dir = pgsurge_testkit::scratch_dir("common");
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    dir
}
