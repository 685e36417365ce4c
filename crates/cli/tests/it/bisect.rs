//! `pgsurge bisect` over a small history made from PostgreSQL's release tarball — base,
//! a harmless change, a change that makes every simple-protocol query wait 100 ms,
//! another harmless change — names the slowing commit. Killed after some steps, it
//! resumes without measuring those steps again.
//!
//! The measured script sleeps in the server (`pg_sleep(0.1)`), so a transaction's time
//! is set by sleeps — 100 ms before the slowing commit, 200 ms from it on — rather than
//! by a share of the CPU, and it leaves the cores to the other tests. A busy machine
//! adds milliseconds to each transaction (up to ten and more when every core is taken:
//! too much for sleeps of one or two milliseconds), which moves the tps of a harmless
//! commit by far less than the threshold, and the slowing commit's by far more.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

fn git(repo: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .arg("-C")
        .arg(repo)
        .args([
            "-c",
            "user.name=pgsurge",
            "-c",
            "user.email=pgsurge@localhost",
        ])
        // Fixed dates make the same history the same commits on every run, so a machine
        // that ran this test before finds their builds in the test build cache.
        .env("GIT_AUTHOR_DATE", "2025-01-01T00:00:00Z")
        .env("GIT_COMMITTER_DATE", "2025-01-01T00:00:00Z")
        .args(args)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn commit_all(repo: &Path, message: &str) -> String {
    git(repo, &["add", "-A"]);
    git(repo, &["commit", "-q", "-m", message]);
    git(repo, &["rev-parse", "HEAD"])
}

fn append(path: &Path, text: &str) {
    let mut s = std::fs::read_to_string(path).unwrap_or_default();
    s.push_str(text);
    std::fs::write(path, s).unwrap();
}

#[test]
fn bisect_names_the_slowing_commit_and_resumes_after_a_kill() {
    let Some(tarball) = pgsurge_testkit::postgres_tarball() else {
        return;
    };
    let _heavy = pgsurge_testkit::one_heavy_test_at_a_time();
    let cache = pgsurge_testkit::build_cache_dir();
    let dir = pgsurge_testkit::scratch_dir("bisect");
    let repo = dir.path().join("postgresql");
    std::fs::create_dir_all(&repo).unwrap();
    let tar = Command::new("tar")
        .arg("-xf")
        .arg(&tarball)
        .arg("-C")
        .arg(&repo)
        .arg("--strip-components=1")
        .status()
        .unwrap();
    assert!(tar.success());
    git(&repo, &["init", "-q"]);
    commit_all(&repo, "base");
    append(&repo.join("COPYRIGHT"), "\n");
    commit_all(&repo, "harmless one");
    let patch = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/slow-simple-query.patch");
    git(&repo, &["apply", patch.to_str().unwrap()]);
    let slow = commit_all(&repo, "wait 100 ms in every simple query");
    append(&repo.join("COPYRIGHT"), "\n");
    commit_all(&repo, "harmless two");

    std::fs::write(dir.path().join("sleep.sql"), "SELECT pg_sleep(0.1);\n").unwrap();
    let file = dir.path().join("bisect.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[campaign]
name = "bisect-simple"
[[target]]
name = "pg"
source = "{}"
configure = ["--without-icu", "--without-readline", "--without-zlib"]
[matrix]
scales = [1]
clients = [10]
scripts = [{{ file = "sleep.sql" }}]
repeats = 3
[run]
duration = 1
query_mode = "simple"
"#,
            repo.display()
        ),
    )
    .unwrap();
    let store = dir.path().join("bisect.db");
    let bisect = || {
        let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
        c.env("PGSURGE_CACHE_DIR", &cache)
            .args([
                "bisect",
                "--good",
                "HEAD~3",
                "--bad",
                "HEAD",
                "--threshold",
                "25",
                "--store",
            ])
            .arg(&store)
            .arg(&file);
        c
    };

    // The slowing commit halves the tps; a threshold of 25 % keeps both the slowing
    // and the harmless commits far from it, on a busy machine too.
    // Killed once the bad end and the middle commit are decided.
    let mut child = bisect()
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut first_lines = Vec::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        let decided = line.contains("wait 100 ms in every simple query:");
        first_lines.push(line);
        if decided {
            break;
        }
    }
    child.kill().unwrap();
    let _ = child.wait();
    assert!(
        first_lines
            .iter()
            .any(|l| l.contains("harmless two:") && l.ends_with("→ regressed")),
        "{first_lines:#?}"
    );

    let out = bisect().output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The steps decided before the kill come from the store; the rest is measured.
    for step in [
        "good ",
        "harmless two:",
        "wait 100 ms in every simple query:",
    ] {
        let line = text
            .lines()
            .find(|l| l.contains(step))
            .unwrap_or_else(|| panic!("{text}"));
        assert!(line.contains("from the store"), "{line}\n{text}");
    }
    // The step the kill interrupted is measured now, and found fine.
    let last_step: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("harmless one:"))
        .collect();
    assert!(!last_step[0].contains("from the store"), "{text}");
    assert!(last_step.last().unwrap().ends_with("→ fine"), "{text}");
    assert_eq!(
        text.lines().last(),
        Some(format!("first bad commit: {slow} wait 100 ms in every simple query").as_str()),
        "{text}"
    );
    // One set for the bisect; nothing measured twice: every measurement (a target
    // `pg @ COMMIT`) holds its three runs, the one the kill interrupted included, and
    // the four commits each have one.
    let export = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args(["results", "export", "--format", "json", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&export.stdout).unwrap();
    let runs = doc["runs"].as_array().unwrap();
    let sets: std::collections::BTreeSet<i64> =
        runs.iter().map(|r| r["set_id"].as_i64().unwrap()).collect();
    assert_eq!(sets.len(), 1, "{sets:?}\n{text}");
    let mut per_measurement = std::collections::BTreeMap::<String, usize>::new();
    for run in runs {
        let target = run["target"].as_str().unwrap().to_string();
        assert!(target.starts_with("pg @ "), "{target}");
        *per_measurement.entry(target).or_default() += 1;
    }
    assert!(per_measurement.len() >= 4, "{per_measurement:?}\n{text}");
    assert!(
        per_measurement.values().all(|&n| n == 3),
        "{per_measurement:?}\n{text}"
    );
}
