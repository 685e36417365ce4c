//! Testing a patch, start to finish: PostgreSQL built from a release tarball twice
//! (as released, and with a patch that makes every simple-protocol query wait 100 ms),
//! a campaign over both, and `compare` calling the patched server slower with the
//! table of each side's repeats. Also: a patch that does not apply stops the build
//! before anything is compiled, and the same inputs again are a cache hit.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Fewer libraries to need, less to compile; the server is the same for these tests.
/// The profiling test builds its base with the same arguments, so it finds this
/// test's build in the cache.
pub(crate) const CONFIGURE_ARGS: [&str; 3] =
    ["--without-icu", "--without-readline", "--without-zlib"];

/// `pgsurge` with the build cache `cache`.
pub(crate) fn pgsurge(cache: &Path) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.env("PGSURGE_CACHE_DIR", cache);
    c
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The stdout of a command that must have succeeded; its outputs in the message if not.
pub(crate) fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: {}\n{}{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data")
        .join(name)
}

fn build(cache: &Path, tarball: &Path, patches: &[&Path]) -> Output {
    let mut cmd = pgsurge(cache);
    cmd.args(["server", "build", "--source"]).arg(tarball);
    for p in patches {
        cmd.arg("--patch").arg(p);
    }
    for c in CONFIGURE_ARGS {
        cmd.arg(format!("--configure={c}"));
    }
    cmd.output().unwrap()
}

#[test]
fn a_patch_that_slows_simple_queries_is_built_measured_and_called_slower() {
    let Some(tarball) = pgsurge_testkit::postgres_tarball() else {
        return;
    };
    let _heavy = pgsurge_testkit::one_heavy_test_at_a_time();
    let cache = pgsurge_testkit::build_cache_dir();
    std::fs::create_dir_all(&cache).unwrap();
    let dir = pgsurge_testkit::scratch_dir("patch-ab");
    let slow = data("slow-simple-query.patch");

    // A patch whose context is not in the source: named with its file, nothing built.
    let bad = dir.path().join("stale-context.patch");
    std::fs::write(
        &bad,
        std::fs::read_to_string(&slow).unwrap().replace(
            "TRACE_POSTGRESQL_QUERY_START",
            "TRACE_POSTGRESQL_QUERY_BEGIN",
        ),
    )
    .unwrap();
    let out = build(&cache, &tarball, &[&bad]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("stale-context.patch does not apply")
            && err.contains("src/backend/tcop/postgres.c")
            && err.contains("nothing was built"),
        "{err}"
    );
    assert!(!err.contains("configuring"), "{err}");
    assert!(out.stdout.is_empty());

    // The campaign builds both targets (or finds them in the cache) before its first test.
    let file = dir.path().join("patch-ab.toml");
    let configure = r#"["--without-icu", "--without-readline", "--without-zlib"]"#;
    std::fs::write(
        &file,
        format!(
            r#"
[campaign]
name = "patch-ab"

[[target]]
name = "base"
source = "{tarball}"
configure = {configure}

[[target]]
name = "patched"
source = "{tarball}"
patches = ["{slow}"]
configure = {configure}

[matrix]
scales = [1]
clients = [2]
scripts = ["select-only"]
repeats = 5

[run]
duration = 1
query_mode = "simple"
"#,
            tarball = tarball.display(),
            slow = slow.display(),
        ),
    )
    .unwrap();
    let store = dir.path().join("r.db");
    let out = pgsurge(&cache)
        .args(["campaign", "run", "--quiet", "--store"])
        .arg(&store)
        .arg(&file)
        .output()
        .unwrap();
    ok(&out, "campaign run");

    // Both builds are in the cache now: plan says so, and building again compiles nothing.
    let plan = ok(
        &pgsurge(&cache)
            .args(["campaign", "plan"])
            .arg(&file)
            .output()
            .unwrap(),
        "campaign plan",
    );
    assert!(plan.contains("target \"base\": cached build"), "{plan}");
    assert!(
        plan.contains("target \"patched\": cached build")
            && plan.contains("+ slow-simple-query.patch"),
        "{plan}"
    );
    let out = build(&cache, &tarball, &[&slow]);
    let bin = ok(&out, "cached build");
    let bin = PathBuf::from(bin.lines().last().unwrap());
    let log = bin.parent().unwrap().parent().unwrap().join("build.log");
    let log_time = std::fs::metadata(&log).unwrap().modified().unwrap();
    let out = build(&cache, &tarball, &[&slow]);
    let err = text(&out.stderr);
    assert_eq!(
        text(&out.stdout).lines().last(),
        Some(bin.to_str().unwrap())
    );
    assert!(
        err.contains("cached build") && !err.contains("compiling"),
        "{err}"
    );
    assert_eq!(
        std::fs::metadata(&log).unwrap().modified().unwrap(),
        log_time
    );
    assert!(bin.join("postgres").is_file());

    // compare: patched is slower, with n, mean, median, min, max and stddev per side.
    let out = pgsurge(&cache)
        .args([
            "compare",
            "target:base",
            "target:patched",
            "--format",
            "json",
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&ok(&out, "compare json")).unwrap();
    let cell = &doc["cells"][0];
    assert_eq!(cell["tps"]["verdict"], "slower", "{cell:#}");
    for side in ["a", "b"] {
        let s = &cell["repeats"]["tps"][side];
        assert_eq!(s["n"], 5, "{cell:#}");
        let (min, max) = (s["min"].as_f64().unwrap(), s["max"].as_f64().unwrap());
        let (mean, median) = (s["mean"].as_f64().unwrap(), s["median"].as_f64().unwrap());
        assert!(
            min <= median && median <= max && min <= mean && mean <= max,
            "{s}"
        );
        assert!(s["stddev"].as_f64().is_some(), "{s}");
        assert!(
            cell["repeats"]["latency_avg_ms"][side]["mean"]
                .as_f64()
                .unwrap()
                > 0.0
        );
    }
    // Every patched query waits 100 ms: its average latency is at least that.
    assert!(
        cell["repeats"]["latency_avg_ms"]["b"]["min"]
            .as_f64()
            .unwrap()
            >= 100.0,
        "{cell:#}"
    );
    let md = ok(
        &pgsurge(&cache)
            .args([
                "compare",
                "target:base",
                "target:patched",
                "--format",
                "markdown",
                "--store",
            ])
            .arg(&store)
            .output()
            .unwrap(),
        "compare markdown",
    );
    // The comparison (its header, rule and cell), then each side's repeats (header,
    // rule, A, B); the per-transaction costs follow.
    let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert!(rows.len() >= 7, "{md}");
    assert!(
        rows[0].contains("| change [95% CI] | p | verdict |") && rows[2].contains("| slower |"),
        "{md}"
    );
    assert!(
        rows[3].contains("| side | n | mean | median | min | max | stddev |"),
        "{md}"
    );
    assert!(rows[6].contains("| B | 5 |"), "{md}");

    // Every stored test says what its server was built from; the patched ones name
    // the patch and its hash.
    let out = pgsurge(&cache)
        .args(["results", "show", "patch-ab", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let show = ok(&out, "results show");
    let built: Vec<&str> = show
        .lines()
        .filter(|l| l.contains("; built from tarball "))
        .collect();
    assert_eq!(
        built.iter().map(|l| runs_named(l)).sum::<usize>(),
        10,
        "{show}"
    );
    let patched: usize = built
        .iter()
        .filter(|l| l.contains(" + slow-simple-query.patch ("))
        .map(|l| runs_named(l))
        .sum();
    assert_eq!(patched, 5, "{show}");
    assert!(!show.contains("NOT FOR TIMING"), "{show}");
}

/// How many runs a detail line of `results show` speaks for: `run 7 (…): …` is one,
/// `runs 3, 6-7, 10: …` four.
fn runs_named(line: &str) -> usize {
    let head = line.trim_start();
    if let Some(rest) = head.strip_prefix("runs ") {
        let list = rest.split(':').next().unwrap_or("");
        list.split(',')
            .map(|part| match part.trim().split_once('-') {
                Some((a, b)) => b.parse::<usize>().unwrap() - a.parse::<usize>().unwrap() + 1,
                None => 1,
            })
            .sum()
    } else {
        usize::from(head.starts_with("run "))
    }
}
