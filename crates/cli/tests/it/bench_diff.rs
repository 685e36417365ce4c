//! Differential report structure: for a set of option combinations, `pgsurge bench` and
//! the machine's `/usr/bin/pgbench` (15.x) run against the same database and must print
//! the same lines in the same order once numbers are masked. The only accepted
//! differences are the documented 15 → 18 ones: the banner (pgsurge names the server
//! version, as pgbench 18 does against another server) and the per-script
//! `N transactions` line that pgbench 18 split in two. `-l` log lines are compared the
//! same way.

use std::path::Path;
use std::process::Command;

use pgsurge_server::testing::TestServer;
use regex::Regex;

use pgsurge_testkit::PGBENCH;

fn run(
    srv: &TestServer,
    program: &str,
    pre: &[&str],
    args: &[&str],
    cwd: &Path,
) -> (String, String, i32) {
    let mut c = Command::new(program);
    c.args(pre).args(args).current_dir(cwd);
    for (k, v) in srv.env() {
        c.env(k, v);
    }
    let out = c.output().expect("run");
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        out.status.code().unwrap_or(-1),
    )
}

/// Numbers → `N`, runs of blanks → one space; repeated identical lines (progress) kept once.
fn mask(text: &str) -> Vec<String> {
    let num = Regex::new(r"-?\d+(\.\d+)?(e[-+]\d+)?|NaN").expect("regex");
    let ws = Regex::new(r"[ \t]+").expect("regex");
    let mut out: Vec<String> = Vec::new();
    for line in text.lines() {
        let l = ws
            .replace_all(&num.replace_all(line, "N"), " ")
            .trim_end()
            .to_string();
        if out.last() != Some(&l) {
            out.push(l);
        }
    }
    out
}

/// pgbench 18's per-script lines folded back into 15's single line, banner dropped.
fn normalize_18(lines: Vec<String>) -> Vec<String> {
    let mut out = Vec::new();
    let mut it = lines.into_iter().skip(1).peekable();
    while let Some(l) = it.next() {
        if l == " - N transactions (N% of total)"
            && it.peek().map(String::as_str)
                == Some(" - number of transactions actually processed: N (tps = N)")
        {
            it.next();
            out.push(" - N transactions (N% of total, tps = N)".to_string());
            continue;
        }
        out.push(l);
    }
    out
}

fn pgbench_available() -> bool {
    pgsurge_testkit::reference_pgbench().is_some()
}

#[test]
fn bench_report_structure_matches_pgbench() {
    if !pgbench_available() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("diff");
    let dir = pgsurge_testkit::scratch_dir("bench-diff");
    let (_, err, code) = run(srv, PGBENCH, &[], &["-i", "-s", "1", "-q", &db], dir.path());
    assert_eq!(code, 0, "{err}");
    let combos: &[&[&str]] = &[
        &["-t", "10"],
        &["-n", "-t", "10", "-c", "2", "-j", "2", "-r"],
        &["-n", "-t", "10", "-M", "extended", "-S"],
        &["-n", "-t", "10", "-M", "prepared", "-N", "-r"],
        &["-n", "-t", "5", "-C", "-S"],
        &["-n", "-t", "10", "-C", "-M", "prepared", "-r"],
        &["-n", "-t", "20", "-R", "500"],
        &["-n", "-t", "20", "-R", "2000", "-L", "1"],
        &["-n", "-t", "10", "-L", "50", "-r"],
        &["-n", "-T", "2", "-P", "1", "-c", "2"],
        &[
            "-n",
            "-T",
            "2",
            "-P",
            "1",
            "-R",
            "300",
            "-L",
            "20",
            "--max-tries=3",
        ],
        &["-n", "-t", "10", "--max-tries=3", "-r"],
        &["-n", "-t", "10", "--max-tries=2", "--failures-detailed"],
        &[
            "-n",
            "-t",
            "12",
            "-b",
            "simple-update@2",
            "-b",
            "select-only@1",
            "-r",
        ],
        &[
            "-n",
            "-t",
            "12",
            "-b",
            "tpcb@1",
            "-b",
            "select@1",
            "--max-tries=2",
            "--failures-detailed",
            "-r",
        ],
        &[
            "-n",
            "-t",
            "12",
            "-b",
            "simple-update@1",
            "-b",
            "select-only@1",
            "-R",
            "400",
            // The limit's lines print whatever it is; a limit far above the schedule's
            // lag keeps every script's latency lines (a script whose every transaction
            // was skipped on a loaded machine has none, in either tool).
            "-L",
            "1000",
            "-M",
            "extended",
        ],
        &["-n", "-t", "10", "-v", "-S", "-c", "3", "-j", "2"],
    ];
    let mut failures = Vec::new();
    for args in combos {
        // Same seed: both tools choose the same scripts (bit-exact PRNG streams). With -L
        // on a loaded machine, which lines appear depends on timing (a script whose every
        // transaction was skipped has no latency lines), so a mismatch is run again.
        let timing = args.contains(&"-L");
        let mut attempt_failures = Vec::new();
        for _ in 0..if timing { 3 } else { 1 } {
            attempt_failures = compare_once(srv, args, &db, dir.path());
            if attempt_failures.is_empty() {
                break;
            }
        }
        failures.extend(attempt_failures);
    }
    assert!(combos.len() >= 12);
    assert!(
        failures.is_empty(),
        "{} of {} combinations differ:\n{}",
        failures.len(),
        combos.len(),
        failures.join("\n\n")
    );
}

/// Runs pgbench and pgsurge once with `args` and returns the differences found.
fn compare_once(srv: &TestServer, args: &[&str], db: &str, dir: &Path) -> Vec<String> {
    let mut failures = Vec::new();
    {
        let mut full: Vec<&str> = args.to_vec();
        full.push("--random-seed=5");
        full.push(db);
        let (po, pe, pc) = run(srv, PGBENCH, &[], &full, dir);
        let (so, se, sc) = run(srv, env!("CARGO_BIN_EXE_pgsurge"), &["bench"], &full, dir);
        if pc != sc {
            failures.push(format!("{args:?}: exit {pc} vs {sc}\n{pe}\n{se}"));
            return failures;
        }
        let (p, s) = (
            mask(&po).into_iter().skip(1).collect::<Vec<_>>(),
            normalize_18(mask(&so)),
        );
        if p != s {
            failures.push(format!(
                "{args:?} stdout:\npgbench:\n{}\npgsurge:\n{}",
                p.join("\n"),
                s.join("\n")
            ));
        }
        let (p, s) = (mask(&pe), mask(&se));
        if p != s {
            failures.push(format!(
                "{args:?} stderr:\npgbench:\n{}\npgsurge:\n{}",
                p.join("\n"),
                s.join("\n")
            ));
        }
    }
    failures
}

fn log_lines(dir: &Path, prefix: &str) -> Vec<String> {
    let mut lines = Vec::new();
    for e in std::fs::read_dir(dir).expect("read dir").flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.starts_with(prefix) {
            let text = std::fs::read_to_string(e.path()).expect("read log");
            lines.extend(mask(&text));
        }
    }
    lines.sort();
    lines.dedup();
    lines
}

#[test]
fn bench_log_formats_match_pgbench() {
    if !pgbench_available() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("difflog");
    let dir = pgsurge_testkit::scratch_dir("bench-diff");
    let (_, err, code) = run(srv, PGBENCH, &[], &["-i", "-s", "1", "-q", &db], dir.path());
    assert_eq!(code, 0, "{err}");
    let cases: &[&[&str]] = &[
        &["-n", "-t", "20", "-l", "-S"],
        &["-n", "-t", "20", "-l", "-R", "1000", "--max-tries=2"],
        &["-n", "-t", "30", "-l", "-R", "3000", "-L", "1", "-S"],
        &["-n", "-T", "2", "-l", "--aggregate-interval=1", "-S"],
    ];
    for (i, args) in cases.iter().enumerate() {
        let mut full: Vec<&str> = args.to_vec();
        let pp = format!("--log-prefix=p{i}");
        let sp = format!("--log-prefix=s{i}");
        full.push(&db);
        let mut a = full.clone();
        a.push(&pp);
        let mut b = full.clone();
        b.push(&sp);
        let (_, pe, pc) = run(srv, PGBENCH, &[], &a, dir.path());
        let (_, se, sc) = run(
            srv,
            env!("CARGO_BIN_EXE_pgsurge"),
            &["bench"],
            &b,
            dir.path(),
        );
        assert_eq!((pc, sc), (0, 0), "{pe}\n{se}");
        let (p, s) = (
            log_lines(dir.path(), &format!("p{i}")),
            log_lines(dir.path(), &format!("s{i}")),
        );
        assert!(!s.is_empty(), "no pgsurge log for {args:?}");
        // Every line shape pgsurge writes must be one pgbench writes. Skips depend on
        // timing, so a skipped line is checked against pgbench's documented shape
        // (`client txn skipped script sec usec lag`).
        for l in &s {
            if l.contains("skipped") {
                assert_eq!(l, "N N skipped N N N N", "{args:?}");
                continue;
            }
            assert!(
                p.contains(l),
                "{args:?}: pgsurge log line shape {l:?} not in pgbench's {p:?}"
            );
        }
    }
}
