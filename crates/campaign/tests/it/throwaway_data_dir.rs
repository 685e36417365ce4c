//! A throwaway server's data directory can be chosen per target; one in memory
//! (tmpfs) is named in the manifest, warned about and flagged on every test.

use std::path::{Path, PathBuf};

use pgsurge_campaign::{run_campaign, Campaign, RunOptions};
use pgsurge_engine::StopFlag;
use pgsurge_store::{RunFilter, Store};

struct RemoveDir(PathBuf);

impl Drop for RemoveDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn a_tmpfs_data_directory_is_warned_about_and_flagged() {
    let shm = Path::new("/dev/shm");
    let fstype = std::fs::read_to_string("/proc/mounts")
        .unwrap()
        .lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split_whitespace().collect();
            (f.get(1) == Some(&"/dev/shm")).then(|| f[2].to_string())
        });
    assert_eq!(
        fstype.as_deref(),
        Some("tmpfs"),
        "this test needs /dev/shm on tmpfs"
    );
    let root = shm.join(format!("pgsurge-tmpfs-{}", std::process::id()));
    let _guard = RemoveDir(root.clone());
    let data = root.join("data");
    let text = format!(
        r#"
[campaign]
name = "tmpfs"

[[target]]
name = "inmem"
data_dir = "{}"

[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]

[run]
duration = 1
"#,
        data.display()
    );
    let c = Campaign::parse(&text, "tmpfs.toml", Path::new(".")).unwrap();
    let dir = pgsurge_testkit::scratch_dir("throwaway-data-dir");
    let mut store = Store::open(dir.path().join("r.db").to_str().unwrap()).unwrap();
    let quiet = RunOptions {
        quiet: true,
        ..Default::default()
    };
    let out = run_campaign(&c, &mut store, &quiet, &StopFlag::new()).unwrap();
    assert_eq!((out.ok, out.failed), (1, 0), "{out:?}");
    assert!(
        data.join("PG_VERSION").exists(),
        "the cluster lives in the given directory"
    );
    assert!(
        out.warnings
            .iter()
            .any(|w| w.contains("tmpfs") && w.contains("no real I/O")),
        "{:?}",
        out.warnings
    );
    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(out.set_id),
            ..Default::default()
        })
        .unwrap();
    let l = store.load_run(runs[0].id).unwrap();
    let fact = |n: &str| {
        l.facts
            .iter()
            .find(|f| f.name == n)
            .and_then(|f| f.value.clone())
    };
    assert_eq!(fact("data_dir_fstype").as_deref(), Some("tmpfs"));
    assert_eq!(fact("data_dir_in_memory").as_deref(), Some("true"));
    assert_eq!(fact("server_host_metrics_source").as_deref(), Some("local"));
    assert!(l.warnings.iter().any(|w| w.code == "data_dir_in_memory"));
    let env = l.environment.unwrap();
    assert_eq!(env["data_directory"]["fstype"], "tmpfs");
    assert_eq!(env["data_directory"]["in_memory"], true);

    // The default (a temporary directory) is flagged exactly when it is in memory.
    let text = text.replace(&format!("data_dir = \"{}\"\n", data.display()), "");
    let c = Campaign::parse(
        &text.replace("\"tmpfs\"", "\"tmp\""),
        "tmp.toml",
        Path::new("."),
    )
    .unwrap();
    let out = run_campaign(&c, &mut store, &quiet, &StopFlag::new()).unwrap();
    let runs = store
        .list_runs(&RunFilter {
            set_id: Some(out.set_id),
            ..Default::default()
        })
        .unwrap();
    let l = store.load_run(runs[0].id).unwrap();
    let fs = l.environment.unwrap()["data_directory"]["fstype"]
        .as_str()
        .unwrap()
        .to_string();
    let flagged = l.facts.iter().any(|f| f.name == "data_dir_in_memory");
    assert_eq!(flagged, fs == "tmpfs" || fs == "ramfs", "{fs}");
}
