//! The server's host read through the server: `pg_read_file` of its `/proc` files
//! (superuser or `pg_read_server_files`), and its manifest from them.

use serde_json::{json, Value};

use super::{data_dir_entry, parse_meminfo, HostReading};
use crate::sql_session::{literal, Pg};

/// SQL reading `paths` in one row (NULL for a file that is missing).
fn read_files_sql(paths: &[&str]) -> String {
    let cols: Vec<String> = paths
        .iter()
        .map(|p| {
            // sysctl files refuse large reads (ENOMEM); the others are seq files.
            let len = if p.starts_with("/proc/sys/") {
                4096
            } else {
                1 << 20
            };
            format!("pg_read_file({}, 0, {len}, true)", literal(p))
        })
        .collect();
    format!("SELECT {}", cols.join(", "))
}

/// Reads `paths` on the server's host through `pg`.
pub fn read_server_files(pg: &mut Pg, paths: &[&str]) -> Result<Vec<Option<String>>, String> {
    let rows = pg.rows(&read_files_sql(paths)).map_err(|e| e.to_string())?;
    Ok(rows.into_iter().next().unwrap_or_default())
}

/// True when the role of `pg` may read server files (superuser or member of
/// `pg_read_server_files`, PostgreSQL 11+) and `/proc/stat` is readable that way.
pub fn can_read_server_files(pg: &mut Pg) -> bool {
    let privileged = pg
        .value(
            "SELECT r.rolsuper OR (current_setting('server_version_num')::int >= 110000 \
             AND pg_has_role(current_user, 'pg_read_server_files', 'MEMBER')) \
             FROM pg_roles r WHERE r.rolname = current_user",
        )
        .ok()
        .flatten()
        .as_deref()
        == Some("t");
    privileged
        && read_server_files(pg, &["/proc/stat"])
            .ok()
            .and_then(|v| v.into_iter().next().flatten())
            .is_some_and(|t| t.contains("cpu "))
}

/// Host manifest of the server's host read through `pg_read_file`.
pub fn manifest_via_server(pg: &mut Pg, data_dir: Option<&str>) -> Value {
    let files = [
        "/proc/sys/kernel/hostname",
        "/proc/sys/kernel/osrelease",
        "/proc/version",
        "/proc/cpuinfo",
        "/proc/meminfo",
        "/proc/mounts",
        "/etc/os-release",
    ];
    let t = match read_server_files(pg, &files) {
        Ok(t) => t,
        Err(e) => return json!({ "error": e }),
    };
    let get = |i: usize| t.get(i).cloned().flatten();
    let trimmed = |i: usize| get(i).map(|s| s.trim().to_string());
    let cpuinfo = get(3).unwrap_or_default();
    let model = cpuinfo.lines().find_map(|l| {
        let (k, v) = l.split_once(':')?;
        (k.trim() == "model name").then(|| v.trim().to_string())
    });
    let count = cpuinfo
        .lines()
        .filter(|l| l.split(':').next().map(str::trim) == Some("processor"))
        .count();
    let mut r = HostReading::default();
    parse_meminfo(&get(4).unwrap_or_default(), &mut r);
    let os_release = get(6).and_then(|t| {
        t.lines().find_map(|l| {
            l.strip_prefix("PRETTY_NAME=")
                .map(|v| v.trim_matches('"').to_string())
        })
    });
    json!({
        "hostname": trimmed(0),
        "kernel": trimmed(1),
        "kernel_version": trimmed(2),
        "os_release": os_release,
        "cpu": {"model": model, "count": (count > 0).then_some(count)},
        "memory_bytes": r.mem.get("total").map(|v| *v as u64),
        "data_directory": data_dir_entry(get(5).as_deref(), data_dir),
    })
}
