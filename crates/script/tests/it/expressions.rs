//! The expression corpus (`data/expressions.txt`, 300+ lines touching every operator,
//! function and edge case) evaluated in-process must give exactly what pgbench prints
//! through `debug()`: the recorded results in `data/expressions.expected` (no server
//! needed), and, when `/usr/bin/pgbench` is present, a live run against the test
//! fixture server. `PGSURGE_REGEN_EXPR=1` rewrites the recorded file from pgbench.

use pgsurge_script::{
    eval, parse_script, Command, EvalCtx, MetaKind, SeedStreams, Value, Variables,
};

const SEED: u64 = 5432;
const DEFINES: &[(&str, &str)] = &[
    ("foo", "-10.1"),
    ("bla", "false"),
    ("i", "+3"),
    ("n", "null"),
    ("t", "t"),
    ("f", "of"),
    ("d", "1.0"),
    ("s", "bla"),
    ("big", "99999999999999999999"),
    ("maxint", "9223372036854775807"),
    ("minint", "-9223372036854775808"),
];

fn corpus() -> Vec<String> {
    include_str!("../data/expressions.txt")
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| {
            if l.starts_with('\\') {
                l.to_string()
            } else {
                format!("\\set e debug({l})")
            }
        })
        .collect()
}

/// Result of one line: debug values joined by " | ", then "ERROR <msg>" if it failed.
type LineResult = String;

/// One run over `lines` from the start: per-line results up to and including the first
/// failing line, and whether it stopped on a failure.
fn run_in_process(lines: &[String]) -> (Vec<LineResult>, bool) {
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    let script = parse_script("expr.sql", &text).expect("corpus parses");
    let streams = SeedStreams::new(SEED, 1, 1);
    let mut prng = streams.clients[0];
    let mut vars = Variables::new();
    for (k, v) in DEFINES {
        vars.set_string("option", k, v).unwrap();
    }
    vars.set_int("set", "scale", 1).unwrap();
    vars.set_int("set", "client_id", 0).unwrap();
    vars.set_int("set", "default_seed", streams.default_seed)
        .unwrap();
    vars.set_int("set", "random_seed", streams.random_seed())
        .unwrap();
    let mut results = Vec::new();
    for (k, cmd) in script.commands.iter().enumerate() {
        let Command::Meta(m) = cmd else {
            panic!("corpus has only \\set lines")
        };
        let MetaKind::Set { var, expr } = &m.kind else {
            panic!("only \\set")
        };
        let mut debug_out: Vec<String> = Vec::new();
        let mut sink = |line: &str| {
            let value = line.split_once(": ").map_or(line, |(_, v)| v);
            debug_out.push(value.to_string());
        };
        let mut ctx = EvalCtx {
            vars: &mut vars,
            prng: &mut prng,
            debug: &mut sink,
            script: 0,
            command: k,
        };
        let r = eval(expr, &mut ctx);
        match r {
            Ok(v) => {
                if let Err(e) = vars.set_value("set", var, v) {
                    debug_out.push(format!("ERROR {e}"));
                    results.push(debug_out.join(" | "));
                    return (results, true);
                }
                results.push(debug_out.join(" | "));
            }
            Err(e) => {
                debug_out.push(format!("ERROR {}", e.message().unwrap_or("")));
                results.push(debug_out.join(" | "));
                return (results, true);
            }
        }
    }
    let _ = Value::Null;
    (results, false)
}

/// Runs the corpus in consecutive runs, restarting after each failing line.
fn run_all(mut run: impl FnMut(&[String]) -> (Vec<LineResult>, bool)) -> Vec<LineResult> {
    let lines = corpus();
    let mut out = Vec::new();
    let mut start = 0;
    while start < lines.len() {
        let (res, _failed) = run(&lines[start..]);
        assert!(
            !res.is_empty(),
            "no progress at line {start}: {}",
            lines[start]
        );
        start += res.len();
        out.extend(res);
    }
    out
}

fn expected_path() -> &'static str {
    concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/expressions.expected"
    )
}

fn render(results: &[LineResult]) -> String {
    corpus()
        .iter()
        .zip(results)
        .map(|(l, r)| format!("{l}\t=> {r}\n"))
        .collect()
}

#[test]
fn corpus_is_large_enough() {
    assert!(corpus().len() >= 200);
}

#[test]
fn matches_recorded_pgbench_results() {
    let Ok(expected) = std::fs::read_to_string(expected_path()) else {
        panic!(
            "missing {}; run with PGSURGE_REGEN_EXPR=1 and /usr/bin/pgbench",
            expected_path()
        );
    };
    let ours = render(&run_all(run_in_process));
    let mut diffs = Vec::new();
    for (a, b) in expected.lines().zip(ours.lines()) {
        if a != b {
            diffs.push(format!("pgbench: {a}\nours:    {b}"));
        }
    }
    assert_eq!(expected.lines().count(), ours.lines().count(), "line count");
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

fn run_pgbench(
    lines: &[String],
    srv: &pgsurge_server::testing::TestServer,
    db: &str,
) -> (Vec<LineResult>, bool) {
    let dir = pgsurge_testkit::scratch_dir("expr");
    let file = dir.join("expr.sql");
    let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
    std::fs::write(&file, text).unwrap();
    let mut cmd = std::process::Command::new("/usr/bin/pgbench");
    srv.apply_env(&mut cmd);
    cmd.args(["-n", "-t", "1", "--random-seed", &SEED.to_string(), "-f"])
        .arg(&file)
        // positional: pgbench 15 reads -d as --debug
        .arg(db);
    for (k, v) in DEFINES {
        cmd.arg("-D").arg(format!("{k}={v}"));
    }
    let out = cmd.output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut results: Vec<Vec<String>> = vec![Vec::new(); lines.len()];
    let mut pending_error: Option<String> = None;
    for l in stderr.lines() {
        if let Some(rest) = l.strip_prefix("debug(script=0,command=") {
            let (n, value) = rest.split_once("): ").unwrap();
            let n: usize = n.parse().unwrap();
            results[n - 1].push(value.to_string());
        } else if let Some(rest) = l.strip_prefix("pgbench: error: client 0 aborted in command ") {
            let k: usize = rest.split(' ').next().unwrap().parse().unwrap();
            let msg = pending_error.take().unwrap_or_default();
            results[k].push(format!("ERROR {msg}"));
            let res = results[..=k].iter().map(|v| v.join(" | ")).collect();
            return (res, true);
        } else if let Some(msg) = l.strip_prefix("pgbench: error: ") {
            if !msg.starts_with("Run was aborted") {
                pending_error = Some(msg.to_string());
            }
        } else if l.starts_with("pgbench: setting random seed") || l.starts_with("pgbench (") {
        } else if !l.is_empty() {
            panic!("unexpected pgbench output: {l}\n{stderr}");
        }
    }
    assert!(out.status.success(), "pgbench failed: {stderr}");
    (results.iter().map(|v| v.join(" | ")).collect(), false)
}

#[test]
fn same_values_as_real_pgbench() {
    if pgsurge_testkit::reference_pgbench().is_none() {
        return;
    }
    let srv = pgsurge_server::testing::TestServer::shared();
    let db = srv.create_database("exprdiff");
    let theirs = run_all(|lines| run_pgbench(lines, srv, &db));
    let rendered = render(&theirs);
    if std::env::var_os("PGSURGE_REGEN_EXPR").is_some() {
        std::fs::write(expected_path(), &rendered).unwrap();
    }
    let ours = render(&run_all(run_in_process));
    let diffs: Vec<String> = rendered
        .lines()
        .zip(ours.lines())
        .filter(|(a, b)| a != b)
        .map(|(a, b)| format!("pgbench: {a}\nours:    {b}"))
        .collect();
    assert!(
        diffs.is_empty(),
        "{} differences:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}
