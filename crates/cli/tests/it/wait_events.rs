//! Wait events as each server version spells them: one campaign with a WAL-bound test
//! (eight clients of short update transactions, every commit flushed) on PostgreSQL 15
//! (installed) and on PostgreSQL 18 built from the release tarball (the same build as
//! the patch test's base, from the test build cache), then the report. On 15 the WAL
//! flush is `IO:WALSync`, on 18 `IO:WalSync`: both test pages must name it as the WAL
//! flush that set the pace, neither as data file I/O, and draw it in the same colour.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The same configure arguments as the patch test's builds: one cached build serves both.
const CONFIGURE: &str = r#"["--without-icu", "--without-readline", "--without-zlib"]"#;

fn pgsurge(cache: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.env("PGSURGE_CACHE_DIR", cache);
    c
}

fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\n{}{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The hints of a test page ("What limited this run?"), one per item of their list.
fn hints_of(page: &str) -> Vec<&str> {
    let at = page
        .find("<ul class=\"hints\">")
        .unwrap_or_else(|| panic!("no hints: {page}"));
    let list = &page[at..];
    let list = &list[..list.find("</ul>").unwrap()];
    list.split("<li>")
        .skip(1)
        .map(|h| h.trim_end_matches("</li>"))
        .collect()
}

/// The stroke colour of the series named `label` in the wait events chart's legend.
fn legend_colour<'a>(page: &'a str, label: &str) -> &'a str {
    let end = page
        .find(&format!("</svg>{label}</li>"))
        .unwrap_or_else(|| panic!("{label} not in a legend"));
    let start = page[..end].rfind("<li>").unwrap();
    let item = &page[start..end];
    let at = item.find("stroke=\"").unwrap() + 8;
    &item[at..at + item[at..].find('"').unwrap()]
}

#[test]
fn the_wal_flush_is_named_as_such_on_postgresql_15_and_18() {
    let Some(tarball) = pgsurge_testkit::postgres_tarball() else {
        return;
    };
    let _heavy = pgsurge_testkit::one_heavy_test_at_a_time();
    let cache = pgsurge_testkit::build_cache_dir();
    std::fs::create_dir_all(&cache).unwrap();
    let dir = pgsurge_testkit::scratch_dir("wait-events");
    let file = dir.path().join("wal.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[campaign]
name = "wal-bound"

[[target]]
name = "pg15"
pg_version = "15"

[[target]]
name = "pg18"
source = "{tarball}"
configure = {CONFIGURE}

[matrix]
scales = [1]
clients = [8]
scripts = ["simple-update"]

[run]
duration = 3
"#,
            tarball = tarball.display()
        ),
    )
    .unwrap();
    let store = dir.path().join("r.db");
    ok(
        &pgsurge(&cache)
            .args(["campaign", "run", "--quiet", "--store"])
            .arg(&store)
            .arg(&file)
            .output()
            .unwrap(),
        "campaign run",
    );
    let report = dir.path().join("report");
    ok(
        &pgsurge(&cache)
            .args(["report", "--store"])
            .arg(&store)
            .arg("-o")
            .arg(&report)
            .output()
            .unwrap(),
        "report",
    );
    let pages: Vec<(PathBuf, String)> = std::fs::read_dir(&report)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with("run-"))
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap();
            (p, text)
        })
        .collect();
    assert_eq!(pages.len(), 2, "{pages:?}");
    let page_of = |target: &str| {
        pages
            .iter()
            .find(|(_, t)| {
                t.contains(&format!(
                    "<td class=\"l\">target</td><td class=\"l\">{target}</td>"
                ))
            })
            .map(|(_, t)| t.as_str())
            .unwrap_or_else(|| panic!("no page of {target}"))
    };
    let mut colours = Vec::new();
    for (target, server, sync, other) in [
        ("pg15", "15.", "IO:WALSync", "IO:WalSync"),
        ("pg18", "18.", "IO:WalSync", "IO:WALSync"),
    ] {
        let page = page_of(target);
        assert!(
            page.contains(&format!(
                "<td class=\"l\">server</td><td class=\"l\">{server}"
            )),
            "{target}: not a PostgreSQL {server} server"
        );
        // The server spells it so: the sampled wait events hold this version's name.
        assert!(
            page.contains(&format!("<td class=\"l\">{sync}</td>")),
            "{target}: {sync} not among the wait events"
        );
        assert!(!page.contains(&format!(">{other}<")), "{target}: {other}");
        let hints = hints_of(page);
        let wal: Vec<&&str> = hints
            .iter()
            .filter(|h| h.starts_with("commits waited for the WAL to reach the disk"))
            .collect();
        assert_eq!(wal.len(), 1, "{target}: {hints:#?}");
        assert!(wal[0].contains(&format!("{sync} ")), "{target}: {hints:#?}");
        for h in hints.iter().filter(|h| h.contains("data file I/O")) {
            assert!(
                !h.contains("IO:W"),
                "{target}: WAL read as data file I/O: {h}"
            );
        }
        colours.push(legend_colour(page, sync).to_string());
    }
    assert_eq!(
        colours[0], colours[1],
        "the WAL flush has one colour whatever the version calls it"
    );
}
