//! Differential tests of the script language between the machine's pgbench
//! (`/usr/bin/pgbench`, 15.x on Debian) and `pgsurge bench`, on one throwaway cluster:
//!
//! * the expression corpus of the script crate (`crates/script/tests/data/expressions.txt`,
//!   300+ expressions over every operator and function and their edge cases), run with
//!   the same `--random-seed` in both tools: identical `debug()` lines and error lines
//!   on stderr, identical exit status;
//! * seeded multi-client runs (`-c 3 -j 3`, two weighted scripts drawing random numbers):
//!   identical values per client;
//! * the invalid-script corpus (`crates/script/tests/data/invalid_scripts.txt`):
//!   identical error text and exit status;
//! * SQL failing at run time in each query mode (syntax errors, unknown columns on a
//!   later line, long lines, PL/pgSQL errors, pipelines, a re-planned prepared statement):
//!   identical server error text as libpq renders it, identical exit status.
//!
//! Skipped (with a message) when `/usr/bin/pgbench` is missing.

use pgsurge_server::testing::TestServer;
use std::collections::BTreeMap;
use std::path::Path;
use std::process::{Command, Output};

use pgsurge_testkit::{ScratchDir, PGBENCH};
const SEED: &str = "5432";
const DEFINES: &[&str] = &[
    "foo=-10.1",
    "bla=false",
    "i=+3",
    "n=null",
    "t=t",
    "f=of",
    "d=1.0",
    "s=bla",
    "big=99999999999999999999",
    "maxint=9223372036854775807",
    "minint=-9223372036854775808",
];

fn have_pgbench() -> bool {
    pgsurge_testkit::reference_pgbench().is_some()
}

fn workdir(tag: &str) -> ScratchDir {
    pgsurge_testkit::scratch_dir(&format!("script-diff-{tag}"))
}

/// Runs one tool (`None` = pgbench, `Some(bin)` = `pgsurge bench`) in `dir`.
fn run(tool: Option<&str>, srv: &TestServer, dir: &Path, args: &[String]) -> Output {
    let mut cmd = match tool {
        None => Command::new(PGBENCH),
        Some(bin) => {
            let mut c = Command::new(bin);
            c.arg("bench");
            c
        }
    };
    srv.apply_env(&mut cmd);
    cmd.current_dir(dir).args(args).output().unwrap()
}

/// stderr lines that are the same in pgbench 15 and 18 for these runs.
fn comparable_stderr(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .map(str::to_string)
        .collect()
}

fn corpus_lines() -> Vec<String> {
    include_str!("../../../script/tests/data/expressions.txt")
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

/// The command index a run aborted in, from `client 0 aborted in command K (...)`.
fn aborted_at(stderr: &[String]) -> Option<usize> {
    stderr.iter().find_map(|l| {
        let rest = l.strip_prefix("pgbench: error: client 0 aborted in command ")?;
        rest.split(' ').next()?.parse().ok()
    })
}

#[test]
fn expression_corpus_same_stderr() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("scriptdiff");
    let dir = workdir("expr");
    let bin = env!("CARGO_BIN_EXE_pgsurge");
    let lines = corpus_lines();
    assert!(lines.len() >= 200);
    let mut start = 0;
    let mut runs = 0;
    let mut diffs = Vec::new();
    while start < lines.len() {
        let text: String = lines[start..].iter().map(|l| format!("{l}\n")).collect();
        std::fs::write(dir.join("expr.sql"), text).unwrap();
        let mut args: Vec<String> = ["-n", "-t", "1", "--random-seed", SEED, "-f", "expr.sql"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        for d in DEFINES {
            args.push("-D".into());
            args.push(d.to_string());
        }
        args.push(db.clone());
        let theirs = run(None, srv, &dir, &args);
        let ours = run(Some(bin), srv, &dir, &args);
        let (t, o) = (comparable_stderr(&theirs), comparable_stderr(&ours));
        if t != o || theirs.status.code() != ours.status.code() {
            diffs.push(format!(
                "run starting at corpus line {start} ({}):\npgbench ({:?}):\n{}\npgsurge ({:?}):\n{}",
                lines[start],
                theirs.status.code(),
                t.join("\n"),
                ours.status.code(),
                o.join("\n")
            ));
        }
        runs += 1;
        start += match aborted_at(&t) {
            Some(k) => k + 1,
            None => lines.len(),
        };
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(runs > 10, "the corpus exercises many failing expressions");
    assert!(
        diffs.is_empty(),
        "{} of {runs} runs differ:\n{}",
        diffs.len(),
        diffs.join("\n\n")
    );
}

const SCRIPT_A: &str = "\\set r debug(:client_id * 10000000 + random(1, 1000000))\n\
\\set g debug(:client_id * 10000000 + random_gaussian(1, 1000, 2.5))\n\
\\set h debug(:client_id * 10000000 + abs(hash(:client_id)) % 1000000)\n\
\\set p debug(:client_id * 10000000 + permute(:client_id, 100))\n\
\\set z debug(:client_id * 10000000 + random_zipfian(1, 1000, 1.5))\n";
const SCRIPT_B: &str =
    "\\set e debug(:client_id * 10000000 + 5000000 + random_exponential(1, 1000, 3))\n\
\\set s debug(:client_id * 10000000 + 5000000 + :default_seed % 1000)\n";

/// Per client (the high digits of each value), the values printed in order; robust to
/// how threads interleave their stderr writes.
fn values_per_client(out: &Output) -> BTreeMap<i64, Vec<i64>> {
    let stderr = String::from_utf8_lossy(&out.stderr);
    let mut m: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for piece in stderr.split("int ").skip(1) {
        let digits: String = piece
            .chars()
            .take_while(|c| c.is_ascii_digit() || *c == '-')
            .collect();
        if let Ok(v) = digits.parse::<i64>() {
            m.entry(v / 10_000_000).or_default().push(v);
        }
    }
    m
}

#[test]
fn seeded_multi_client_runs_same_values() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("scriptdiffc3");
    let dir = workdir("seeded");
    std::fs::write(dir.join("a.sql"), SCRIPT_A).unwrap();
    std::fs::write(dir.join("b.sql"), SCRIPT_B).unwrap();
    let bin = env!("CARGO_BIN_EXE_pgsurge");
    for seed in ["5432", "1", "18446744073709551615"] {
        let args: Vec<String> = [
            "-n", "-c", "3", "-j", "3", "-t", "6", "-f", "a.sql@1", "-f", "b.sql@2",
        ]
        .iter()
        .map(|s| s.to_string())
        .chain([format!("--random-seed={seed}"), db.clone()])
        .collect();
        let theirs = run(None, srv, &dir, &args);
        let ours = run(Some(bin), srv, &dir, &args);
        assert_eq!(
            theirs.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&theirs.stderr)
        );
        assert_eq!(
            ours.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&ours.stderr)
        );
        let t = values_per_client(&theirs);
        assert!(t.values().map(Vec::len).sum::<usize>() > 0);
        assert_eq!(t, values_per_client(&ours), "seed {seed}");
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn invalid_scripts_same_error_and_status() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("scriptdiffbad");
    let dir = workdir("invalid");
    let bin = env!("CARGO_BIN_EXE_pgsurge");
    let text = include_str!("../../../script/tests/data/invalid_scripts.txt");
    let mut cases: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("=== ") {
            cases.push((name.to_string(), String::new()));
        } else if let Some((_, body)) = cases.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    assert!(cases.len() >= 60);
    let mut diffs = Vec::new();
    for (name, mut body) in cases {
        if name.ends_with("-noeol") {
            body.pop();
        }
        if name.contains("crlf") {
            body = body.replace('\n', "\r\n");
        }
        let file = format!("{name}.sql");
        std::fs::write(dir.join(&file), &body).unwrap();
        let args: Vec<String> = vec![
            "-n".into(),
            "-t".into(),
            "1".into(),
            "-f".into(),
            file,
            db.clone(),
        ];
        let theirs = run(None, srv, &dir, &args);
        let ours = run(Some(bin), srv, &dir, &args);
        let t = String::from_utf8_lossy(&theirs.stderr).to_string();
        let o = String::from_utf8_lossy(&ours.stderr).to_string();
        // \syncpipeline exists since pgbench 17: pgbench 15 calls it an invalid command
        if t.contains("invalid command in command \"syncpipeline\"") {
            continue;
        }
        if t != o || theirs.status.code() != ours.status.code() {
            diffs.push(format!(
                "--- {name}\npgbench ({:?}):\n{t}pgsurge ({:?}):\n{o}",
                theirs.status.code(),
                ours.status.code()
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        diffs.is_empty(),
        "{} cases differ:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// Meta commands at run time and `\\gset`/`\\aset`: same stderr (debug values, error
/// and abort lines) and exit status.
const RUNTIME_CASES: &[(&str, &str)] = &[
    ("div0", "\\set x 1/0\n"),
    ("undefined", "\\set x :undefinedvar\n"),
    ("setshell-nan", "\\setshell x echo notanumber\n"),
    ("shell-false", "\\shell false\n"),
    ("sleep-undefined", "\\sleep :undefinedvar\n"),
    ("sleep-bad-var", "SELECT 'abc' AS v \\gset\n\\sleep :v\n"),
    ("gset-bad-name", "SELECT 1 AS \"bad name!\" \\gset\n"),
    ("gset-default-name", "SELECT 1 \\gset\n"),
    ("gset-no-row", "SELECT WHERE false \\gset\n"),
    ("gset-two-rows", "SELECT generate_series(1, 2) AS a \\gset\n"),
    ("sleep-var", "\\set x 5\n\\sleep :x us\n\\set y debug(:x)\n"),
    ("setshell-ok", "\\setshell n echo 42\n\\set y debug(:n + 1)\n"),
    ("shell-args", "\\set a 3\n\\shell true :a ::a\n\\set y debug(:a)\n"),
    ("gset-prefix", "SELECT 1 AS a, 2.5 AS b, NULL AS c \\gset p_\n\\set y debug(:p_a + :p_b)\n\\set z debug(:p_c)\n"),
    ("aset", "SELECT 1 AS a \\; SELECT WHERE false \\; SELECT 3 AS a, 't' AS t \\aset\n\\set y debug(:a)\n\\set z debug(:t)\n"),
    ("if-chain", "\\if false\n\\set x debug(1)\n\\elif true\n\\set x debug(2)\n\\else\n\\set x debug(3)\n\\endif\n\\set x debug(4)\n"),
    ("if-nested-false", "\\if 0\n\\if 1\n\\set x debug(1)\n\\else\n\\set x debug(2)\n\\endif\n\\elif 1.5\n\\set x debug(3)\n\\endif\n"),
    ("if-taken-skips-elif", "\\if true\n\\set x debug(1)\n\\elif 1/0\n\\set x debug(2)\n\\else\n\\set x debug(3)\n\\endif\n"),
    ("if-eval-error", "\\if :nosuch\n\\endif\n"),
    ("set-invalid-name", "\\set 1x 5\n"),
    ("gset-double-text", "SELECT 0.1::float8 * 3 AS d \\gset\n\\set y debug(:d)\n"),
    ("substitution", "\\set a 5\n\\set d 1.0 / 3\nSELECT :a::int + 1 AS s, :d::float8 AS dd \\gset\n\\set y debug(:s)\n\\set z debug(:dd)\n"),
];

#[test]
fn runtime_meta_commands_same_stderr() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("scriptdiffrt");
    let dir = workdir("runtime");
    let bin = env!("CARGO_BIN_EXE_pgsurge");
    let mut diffs = Vec::new();
    for (name, body) in RUNTIME_CASES {
        let file = format!("{name}.sql");
        std::fs::write(dir.join(&file), body).unwrap();
        let args: Vec<String> = ["-n", "-t", "2", "--random-seed", SEED, "-f", &file, &db]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let theirs = run(None, srv, &dir, &args);
        let ours = run(Some(bin), srv, &dir, &args);
        let t = comparable_stderr(&theirs);
        let o: Vec<String> = comparable_stderr(&ours).into_iter().collect();
        if t != o || theirs.status.code() != ours.status.code() {
            diffs.push(format!(
                "--- {name}\npgbench ({:?}):\n{}\npgsurge ({:?}):\n{}",
                theirs.status.code(),
                t.join("\n"),
                ours.status.code(),
                o.join("\n")
            ));
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        diffs.is_empty(),
        "{} cases differ:\n{}",
        diffs.len(),
        diffs.join("\n")
    );
}

/// SQL that fails at run time: the server's error as `PQerrorMessage` renders it (the
/// `LINE n:` excerpt and caret when libpq knows the query text, ` at character N` when
/// it does not, DETAIL/HINT/QUERY/CONTEXT lines), notices without CONTEXT, in every query
/// mode. `(name, setup SQL run before each tool, script, -t)`.
const SQL_ERROR_CASES: &[(&str, &str, &str, &str)] = &[
    // Simple mode sends `12345`, extended/prepared `$1`: the caret moves with the text.
    ("syntax-position", "", "\\set x 12345\nselect :x as n,, 2;\n", "1"),
    (
        "column-on-line-2",
        "",
        "select 1 as a,\n       nosuch as b\n  from generate_series(1, 2);\n",
        "1",
    ),
    (
        "long-line-middle",
        "",
        "select 1 as aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, 2 as bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb, nosuch, 3 as cccccccccccccccccccccccccccccccccccccccc, 4 as dddddddddddddddddddddddddddd;\n",
        "1",
    ),
    (
        "long-line-start",
        "",
        "select nosuch, 1 as aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa, 2 as bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb;\n",
        "1",
    ),
    (
        "hint-with-position",
        "",
        "select abalanc from (select 1 as abalance) t;\n",
        "1",
    ),
    ("division-by-zero", "", "\\set z 0\nselect 1 / :z;\n", "1"),
    (
        "plpgsql-context",
        "",
        "do $$ begin perform 1 / 0; end $$;\n",
        "1",
    ),
    (
        "plpgsql-internal-position",
        "",
        "do $$\nbegin\n  perform nosuch_col;\nend\n$$;\n",
        "1",
    ),
    (
        "detail-hint-context",
        "",
        "do $$ begin raise exception 'custom failure' using detail = 'the detail', hint = 'the hint'; end $$;\n",
        "1",
    ),
    (
        "notice-without-context",
        "",
        "do $$ begin raise notice 'hello %', 42; end $$;\n",
        "1",
    ),
    (
        "compound-second-fails",
        "",
        "select 1 \\; select nosuch;\n",
        "1",
    ),
    // The second execution re-analyses the statement after the table changed: prepared
    // mode has no query text then, so libpq prints `at character N`.
    (
        "replanned-statement",
        "drop table if exists sqlerr_replan; create table sqlerr_replan(a int);",
        "select a from sqlerr_replan;\ndrop table sqlerr_replan;\ncreate table sqlerr_replan(b int);\n",
        "2",
    ),
    (
        "pipeline-column",
        "",
        "\\startpipeline\nselect 1;\nselect nosuch;\nselect 3;\n\\endpipeline\n",
        "1",
    ),
    (
        "pipeline-division-by-zero",
        "",
        "\\set z 0\n\\startpipeline\nselect 1;\nselect 1 / :z;\n\\endpipeline\n",
        "1",
    ),
];

#[test]
fn sql_errors_same_stderr_in_every_query_mode() {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let db = srv.create_database("scriptdiffsqlerr");
    let dir = workdir("sqlerr");
    let bin = env!("CARGO_BIN_EXE_pgsurge");
    let mut diffs = Vec::new();
    let mut with_excerpt = 0;
    for (name, setup, body, txns) in SQL_ERROR_CASES {
        let file = format!("{name}.sql");
        std::fs::write(dir.join(&file), body).unwrap();
        for mode in ["simple", "extended", "prepared"] {
            let args: Vec<String> = ["-n", "-t", txns, "-M", mode, "-f", &file, &db]
                .iter()
                .map(|s| s.to_string())
                .collect();
            let mut outs = Vec::new();
            for tool in [None, Some(bin)] {
                if !setup.is_empty() {
                    srv.psql(&db, setup);
                }
                outs.push(run(tool, srv, &dir, &args));
            }
            let (t, o) = (comparable_stderr(&outs[0]), comparable_stderr(&outs[1]));
            with_excerpt += t.iter().filter(|l| l.starts_with("LINE ")).count();
            if t != o || outs[0].status.code() != outs[1].status.code() {
                diffs.push(format!(
                    "--- {name} -M {mode}\npgbench ({:?}):\n{}\npgsurge ({:?}):\n{}",
                    outs[0].status.code(),
                    t.join("\n"),
                    outs[1].status.code(),
                    o.join("\n")
                ));
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
    assert!(
        with_excerpt >= 15,
        "the cases must exercise libpq's LINE excerpt (saw {with_excerpt})"
    );
    assert!(
        diffs.is_empty(),
        "{} runs differ:\n{}",
        diffs.len(),
        diffs.join("\n\n")
    );
}
