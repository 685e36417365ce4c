//! `[hygiene] fresh_cluster`: with `test`, every test of a throwaway target gets a new
//! cluster and freshly loaded data (each stored test says it initialized); with `never`,
//! the second test reuses the first one's data. `drop_caches` drops the page cache
//! before each test as root, and says so when it cannot.

use crate::campaigns::{pgsurge, Campaign};

/// The `init:` part of each stored test's line in `results show`.
fn inits(fresh: &str, drop_caches: bool) -> (Vec<String>, String) {
    let dir = pgsurge_testkit::scratch_dir("fresh-cluster");
    let c = Campaign::write(
        dir.path(),
        &format!(
            r#"
[campaign]
name = "fresh"
[[target]]
name = "fresh"
[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]
repeats = 2
[run]
duration = 1
[hygiene]
fresh_cluster = "{fresh}"
drop_caches = {drop_caches}
"#
        ),
    );
    let said = c.run_ok(&["--quiet"]);
    let show = pgsurge()
        .args(["results", "show", "fresh", "--store", &c.store])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&show.stdout).into_owned();
    assert!(
        show.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&show.stderr)
    );
    let inits = text
        .lines()
        .filter_map(|l| l.split("; init: ").nth(1))
        .map(|rest| rest.split(" (").next().unwrap_or("").to_string())
        .collect();
    (inits, text + &said)
}

#[test]
fn a_fresh_cluster_per_test_loads_the_data_again_and_never_reuses_it() {
    let (fresh, _) = inits("test", false);
    assert_eq!(fresh, ["initialized", "initialized"]);
    let (kept, _) = inits("never", false);
    assert_eq!(kept, ["initialized", "reused"]);
}

#[test]
fn drop_caches_drops_the_page_cache_as_root_and_warns_otherwise() {
    let (_, text) = inits("never", true);
    let warned = text.contains("the OS page cache was not dropped");
    assert_eq!(warned, !pgsurge_testkit::is_root(), "{text}");
}
