//! The off-CPU view end to end: one campaign with `[profile] off_cpu = true` runs two
//! scripts on a server of its own, alike but for a server-side `pg_sleep` in one
//! branch of the second. `compare --explain` of the two names the sleep's path as what
//! grew off the CPU (the function that waited) and the differential off-CPU flame graph
//! shows `pg_sleep` grown; the stored off-CPU profiles of the plain script hold no
//! `pg_sleep`, and the report draws each test's off-CPU flame graph.

use std::path::Path;
use std::process::{Command, Output};

use pgsurge_results::profile::ProfileKind;
use pgsurge_server::testing::{TestServer, TestServerOptions};

fn pgsurge() -> Command {
    Command::new(env!("CARGO_BIN_EXE_pgsurge"))
}

fn ok(out: &Output, what: &str) -> String {
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    assert!(
        out.status.success(),
        "{what}: {}\n{}{}",
        out.status,
        text(&out.stdout),
        text(&out.stderr)
    );
    text(&out.stdout)
}

/// A script with a branch of work chosen at random; `work` is the first branch's
/// statement.
fn script(dir: &Path, name: &str, work: &str) {
    std::fs::write(
        dir.join(name),
        format!("\\set r random(1, 2)\n\\if :r = 1\n{work}\n\\else\nSELECT 2;\n\\endif\n"),
    )
    .unwrap();
}

#[test]
fn a_server_side_sleep_is_named_by_the_off_cpu_view_as_what_grew() {
    if pgsurge_testkit::command_path("perf").is_none() {
        return;
    }
    if !pgsurge_testkit::is_root() {
        pgsurge_testkit::missing_prerequisite(
            "the off-CPU view reads scheduler tracepoints, which needs root",
        );
        return;
    }
    let srv = TestServer::start(TestServerOptions::default());
    let db = srv.create_database("offcpu");
    let dir = pgsurge_testkit::scratch_dir("off-cpu-profile");
    script(dir.path(), "plain.sql", "SELECT 1;");
    script(dir.path(), "sleepy.sql", "SELECT pg_sleep(0.002);");
    let file = dir.path().join("c.toml");
    std::fs::write(
        &file,
        format!(
            r#"
[campaign]
name = "offcpu"
[[target]]
name = "t"
conninfo = "{}"
[matrix]
scales = [1]
clients = [2]
scripts = [
    {{ name = "plain", mix = [{{ file = "plain.sql" }}] }},
    {{ name = "sleepy", mix = [{{ file = "sleepy.sql" }}] }},
]
repeats = 2
[run]
duration = 2
[hygiene]
vacuum = false
checkpoint = false
[profile]
processes = "server"
off_cpu = true
"#,
            srv.conninfo(&db)
        ),
    )
    .unwrap();
    let store = dir.path().join("r.db");
    ok(
        &pgsurge()
            .args(["campaign", "run", "--quiet", "--store"])
            .arg(&store)
            .arg(&file)
            .output()
            .unwrap(),
        "campaign run",
    );

    // Every test stored an off-CPU profile; the plain script's never waited in pg_sleep.
    let mut s = pgsurge_store::Store::open(store.to_str().unwrap()).unwrap();
    let runs = s.list_runs(&Default::default()).unwrap();
    assert_eq!(runs.len(), 4);
    for run in &runs {
        let off_cpu = s
            .profiles(run.id)
            .unwrap()
            .iter()
            .map(|r| pgsurge_store::profile::decode(r).unwrap())
            .find(|p| p.kind == ProfileKind::ServerOffCpu)
            .unwrap_or_else(|| panic!("no off-CPU profile stored with run {}", run.id));
        assert!(off_cpu.total() > 0, "run {}: no time off the CPU", run.id);
        let sleeps = off_cpu.inclusive_counts().contains_key("pg_sleep");
        let sleepy = run
            .record
            .script
            .as_deref()
            .unwrap_or("")
            .contains("sleepy");
        assert_eq!(sleeps, sleepy, "run {}: {:?}", run.id, run.record.script);
    }
    drop(s);

    let out = pgsurge()
        .args([
            "compare",
            "script:plain",
            "script:sleepy",
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
    let off_cpu = cell["explanations"]
        .as_array()
        .and_then(|e| e.iter().find(|x| x["kind"] == "server-offcpu"))
        .unwrap_or_else(|| panic!("no server-offcpu explanation: {cell:#}"));
    let functions = off_cpu["functions"].as_array().unwrap();
    let first = &functions[0];
    assert!(
        ["pg_sleep", "WaitLatch", "pg_usleep"].contains(&first["function"].as_str().unwrap()),
        "the sleep's path is not first: {off_cpu:#}"
    );
    assert!(
        first["self_us"]["change"].as_f64().unwrap() > 0.0,
        "{first:#}"
    );
    // The function that waited is the sleep's: its time per transaction is about the
    // sleep's (half the transactions sleep 2 ms: 1000 µs); a tenth of that leaves room
    // for events perf drops on a busy machine.
    let waited = &first["self_us"];
    assert_eq!(waited["a"].as_f64(), Some(0.0), "{first:#}");
    assert!(waited["change"].as_f64().unwrap() > 100.0, "{first:#}");

    // The differential off-CPU flame graph shows the time under pg_sleep grown: a
    // differential graph colours the innermost frames (where the process left the
    // CPU), and the grown ones lie within pg_sleep's box.
    let diffs = dir.path().join("diffs");
    ok(
        &pgsurge()
            .args(["compare", "script:plain", "script:sleepy", "--store"])
            .arg(&store)
            .arg(format!("--profile-diff={}", diffs.display()))
            .output()
            .unwrap(),
        "compare --profile-diff",
    );
    let svg = std::fs::read_dir(&diffs)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("-server-offcpu.svg"))
        .expect("a differential graph of the off-CPU profiles");
    let svg = std::fs::read_to_string(&svg).unwrap();
    let frame = regex::Regex::new(
        r#"<title>(\S+) \([\d,]+ us, ([\d.]+)%; ([+-]?[\d.]+)%\)</title><rect [^>]*fg:x="(\d+)" fg:w="(\d+)""#,
    )
    .unwrap();
    let frames: Vec<(String, f64, f64, u64, u64)> = frame
        .captures_iter(&svg)
        .map(|c| {
            (
                c[1].to_string(),
                c[2].parse().unwrap(),
                c[3].parse().unwrap(),
                c[4].parse().unwrap(),
                c[5].parse().unwrap(),
            )
        })
        .collect();
    let (_, share, _, x, w) = frames
        .iter()
        .find(|f| f.0 == "pg_sleep")
        .expect("a pg_sleep frame in the off-CPU differential graph")
        .clone();
    let grown_within: f64 = frames
        .iter()
        .filter(|f| f.2 > 0.0 && f.3 >= x && f.3 + f.4 <= x + w)
        .map(|f| f.2)
        .sum();
    assert!(
        grown_within > share / 2.0,
        "pg_sleep holds {share} % of B's time, {grown_within} % of it grown"
    );

    // The text form says it too.
    let out = pgsurge()
        .args([
            "compare",
            "script:plain",
            "script:sleepy",
            "--explain",
            "--store",
        ])
        .arg(&store)
        .output()
        .unwrap();
    let text = ok(&out, "compare --explain (text)");
    assert!(text.contains("server off-CPU"), "{text}");

    // The report draws each test's off-CPU flame graph, the sleep in the sleepy ones.
    let report = dir.path().join("report");
    ok(
        &pgsurge()
            .args(["report", "--store"])
            .arg(&store)
            .arg("-o")
            .arg(&report)
            .output()
            .unwrap(),
        "report",
    );
    let graphs: Vec<String> = std::fs::read_dir(&report)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.to_string_lossy().ends_with("-server-offcpu.svg"))
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    assert!(graphs.len() >= 4, "{} off-CPU graphs", graphs.len());
    assert!(graphs.iter().any(|g| g.contains("pg_sleep")));
}
