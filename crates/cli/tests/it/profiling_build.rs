//! Finding a patch's cost in the profiles: PostgreSQL built from the release tarball
//! with two patches, one that spends CPU time in a function of its own on every
//! simple-protocol query and one that sleeps a millisecond in another, built for
//! profiling (`server build --profiling`: frame pointers and debug symbols, in a cache
//! entry of its own), against the same tarball as released (the patch test's cached
//! build) in one campaign with `[profile]`, off-CPU view on. `compare --explain` names
//! the burning function first on the CPU and the sleep first off it (the function the
//! frame-pointer walk charges it to: see `SLEEPERS`), and the differential flame graph,
//! opened in headless Chromium, shows the burner grown. The profiling build's stacks
//! reach `main` through the functions' callers; the released build's profiles say
//! their stacks are cut short.

use std::path::{Path, PathBuf};

use pgsurge_results::profile::ProfileKind;

use super::patch_ab::{ok, pgsurge, CONFIGURE_ARGS};

/// The function the CPU-burning patch adds.
const BURNER: &str = "burn_cpu_for_profile";
/// The function the sleeping patch adds, which calls `pg_usleep`. A frame-pointer walk
/// from the C library's `nanosleep` (which keeps no frame pointer) skips the frame of
/// its caller, `pg_usleep`, and the compiler makes the call a tail call, so the wait
/// may land on the query's own function: any of the three is the sleep's.
const SLEEPERS: [&str; 3] = ["sleep_for_profile", "pg_usleep", "exec_simple_query"];

fn chromium_dom(page: &Path) -> String {
    pgsurge_testkit::chromium::open_file(&["--dump-dom"], page).stdout
}

fn campaign_file(dir: &Path, tarball: &Path, patches: &[PathBuf], profiling: bool) -> PathBuf {
    let configure = format!("{CONFIGURE_ARGS:?}");
    let file = dir.join(format!("burn-{profiling}.toml"));
    std::fs::write(
        &file,
        format!(
            r#"
[campaign]
name = "burn"

[[target]]
name = "base"
source = "{tarball}"
configure = {configure}

[[target]]
name = "patched"
source = "{tarball}"
patches = {patches:?}
configure = {configure}
profiling = {profiling}

[matrix]
scales = [1]
clients = [2]
scripts = ["select-only"]
repeats = 3

[run]
duration = 2
query_mode = "simple"

[profile]
frequency = 999
off_cpu = true
"#,
            tarball = tarball.display(),
            patches = patches
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>(),
        ),
    )
    .unwrap();
    file
}

#[test]
fn patches_burning_cpu_and_sleeping_are_named_first_by_compare_explain_on_a_profiling_build() {
    let Some(tarball) = pgsurge_testkit::postgres_tarball() else {
        return;
    };
    if pgsurge_testkit::command_path("perf").is_none() {
        return;
    }
    let _heavy = pgsurge_testkit::one_heavy_test_at_a_time();
    let cache = pgsurge_testkit::build_cache_dir();
    std::fs::create_dir_all(&cache).unwrap();
    let dir = pgsurge_testkit::scratch_dir("profiling-build");
    let data = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data");
    let patches = [
        data.join("burn-cpu-simple-query.patch"),
        data.join("sleep-simple-query.patch"),
    ];

    // The campaign builds the patched target for profiling (or finds it cached); the
    // same target without `profiling` is another build, which it would have to make.
    let profiled = campaign_file(dir.path(), &tarball, &patches, true);
    let store = dir.path().join("r.db");
    let out = pgsurge(&cache)
        .args(["campaign", "run", "--quiet", "--store"])
        .arg(&store)
        .arg(&profiled)
        .output()
        .unwrap();
    ok(&out, "campaign run");
    let plan = |file: &Path| {
        ok(
            &pgsurge(&cache)
                .args(["campaign", "plan"])
                .arg(file)
                .output()
                .unwrap(),
            "campaign plan",
        )
    };
    let with = plan(&profiled);
    assert!(with.contains("target \"patched\": cached build"), "{with}");
    let without = plan(&campaign_file(dir.path(), &tarball, &patches, false));
    assert!(
        without.contains("target \"patched\": will be built"),
        "{without}"
    );

    // `server build --profiling` with the same inputs is that build, from the cache.
    let out = pgsurge(&cache)
        .args(["server", "build", "--profiling", "--source"])
        .arg(&tarball)
        .args(
            patches
                .iter()
                .flat_map(|p| [Path::new("--patch"), p.as_path()]),
        )
        .args(CONFIGURE_ARGS.map(|c| format!("--configure={c}")))
        .output()
        .unwrap();
    let bin = PathBuf::from(ok(&out, "server build --profiling").lines().last().unwrap());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("cached build") && !err.contains("compiling"),
        "{err}"
    );
    let info: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(bin.parent().unwrap().parent().unwrap().join("build.json"))
            .unwrap(),
    )
    .unwrap();
    assert_eq!(info["profiling"], true, "{info:#}");

    // The build records that it is for profiling; `server builds` says so.
    let builds = ok(
        &pgsurge(&cache).args(["server", "builds"]).output().unwrap(),
        "server builds",
    );
    assert!(
        builds.contains("(for profiling: -fno-omit-frame-pointer -g)"),
        "{builds}"
    );

    // compare --explain: the burning patch's function first on the CPU, the sleeping
    // one's first off it, the self time of each grown.
    let out = pgsurge(&cache)
        .args([
            "compare",
            "target:base",
            "target:patched",
            "--explain",
            "--format",
            "json",
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&ok(&out, "compare --explain")).unwrap();
    let cell = &doc["cells"][0];
    let server = cell["explanations"]
        .as_array()
        .and_then(|e| e.iter().find(|x| x["kind"] == "server-cpu"))
        .unwrap_or_else(|| panic!("no server-cpu explanation: {cell:#}"));
    let first = &server["functions"][0];
    assert_eq!(first["function"], BURNER, "{server:#}");
    assert!(
        first["self_us"]["change"].as_f64().unwrap() > 0.0,
        "{first:#}"
    );
    let off_cpu = cell["explanations"]
        .as_array()
        .and_then(|e| e.iter().find(|x| x["kind"] == "server-offcpu"))
        .unwrap_or_else(|| panic!("no server-offcpu explanation: {cell:#}"));
    let first = &off_cpu["functions"][0];
    assert!(
        SLEEPERS.contains(&first["function"].as_str().unwrap_or("")),
        "the sleep is not first off the CPU: {off_cpu:#}"
    );
    // Every simple query sleeps a millisecond: its wait per transaction grows by about
    // 1000 µs (a tenth of that leaves room for events perf drops on a busy machine),
    // from next to nothing in the base.
    let waited = &first["self_us"];
    assert!(waited["change"].as_f64().unwrap() > 100.0, "{first:#}");
    assert!(waited["a"].as_f64().unwrap() < 50.0, "{first:#}");

    // The patched build's stacks are whole: the function under its callers, down to
    // main, and no note that they are cut short.
    let mut s = pgsurge_store::Store::open(store.to_str().unwrap()).unwrap();
    let runs = s.list_runs(&Default::default()).unwrap();
    let targets = s.targets(runs[0].record.set_id).unwrap();
    let patched = targets
        .iter()
        .find(|t| t.record.name == "patched")
        .unwrap()
        .id;
    let (patched, base): (Vec<_>, Vec<_>) = runs
        .iter()
        .partition(|r| r.record.target_id == Some(patched));
    let patched: Vec<i64> = patched.iter().map(|r| r.id).collect();
    assert_eq!(patched.len(), 3);
    // The base is built as released (-O2, no frame pointers): each of its profiles
    // says its stacks are cut short.
    assert_eq!(base.len(), 3);
    let profiles = |s: &mut pgsurge_store::Store, id: i64, kind: ProfileKind| {
        s.profiles(id)
            .unwrap()
            .iter()
            .map(|r| pgsurge_store::profile::decode(r).unwrap())
            .find(|p| p.kind == kind)
            .unwrap_or_else(|| panic!("run {id}: no {kind:?} profile"))
    };
    for run in base {
        let p = profiles(&mut s, run.id, ProfileKind::ServerCpu);
        assert!(
            p.notes.iter().any(|n| n.starts_with("stacks cut short")),
            "{:?}",
            p.notes
        );
    }
    for id in patched {
        let p = profiles(&mut s, id, ProfileKind::ServerCpu);
        // Built with debug symbols: no note of frames without them either.
        assert!(
            !p.notes
                .iter()
                .any(|n| n.contains("cut short") || n.starts_with("frames without symbols")),
            "{:?}",
            p.notes
        );
        let through = format!("PostgresMain;exec_simple_query;{BURNER}");
        assert!(
            p.stacks
                .keys()
                .any(|k| k.contains(&through) && k.split(';').any(|f| f == "main")),
            "no stack through {through} from main: {:?}",
            p.stacks.keys().take(10).collect::<Vec<_>>()
        );
        // Off the CPU: the sleep's stacks, from main through the query's function to
        // the kernel's nanosleep.
        let p = profiles(&mut s, id, ProfileKind::ServerOffCpu);
        let through = "PostgresMain;exec_simple_query;";
        assert!(
            p.stacks.keys().any(|k| k.contains(through)
                && k.contains("nanosleep")
                && k.split(';').any(|f| f == "main")),
            "no off-CPU stack from main through {through} to nanosleep: {:?}",
            p.stacks.keys().take(10).collect::<Vec<_>>()
        );
    }
    drop(s);

    // The differential flame graph: the function's frame grew.
    let diffs = dir.path().join("diffs");
    let out = pgsurge(&cache)
        .args(["compare", "target:base", "target:patched", "--store"])
        .arg(&store)
        .arg(format!("--profile-diff={}", diffs.display()))
        .output()
        .unwrap();
    ok(&out, "compare --profile-diff");
    let svg = std::fs::read_dir(&diffs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("-server-cpu.svg"))
        .expect("a differential graph of the server's profiles");
    let dom = chromium_dom(&svg);
    let grown = regex::Regex::new(&format!(
        r"<title>{BURNER} \([\d,]+ samples, [\d.]+%; \+([\d.]+)%\)</title>"
    ))
    .unwrap();
    let change: f64 = grown
        .captures(&dom)
        .unwrap_or_else(|| panic!("no grown {BURNER} frame in {}", svg.display()))[1]
        .parse()
        .unwrap();
    assert!(change > 0.0, "{change}");
}
