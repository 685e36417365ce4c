//! `pgsurge replay` on logs it cannot read as they are: a file cut short, a line cut short
//! with the next entry glued to it, formats mixed,
//! a prefix without session ids, bytes that are not UTF-8, a parameter list that does
//! not fit its statement. Each is an error naming the file and line, or, with
//! `--skip-unreadable`, a counted skip; `--check` reads without connecting anywhere.
//! The bounds on what a log can make a replay hold (an entry's length, the fingerprints
//! counted apart) are lowered through their environment variables, so a small log
//! reaches them.

use std::path::Path;
use std::process::Command;

use serde_json::Value;

fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_pgsurge")
}

const PREFIX: &str = "2026-11-28 18:00:00.100 UTC|alice|shop|65.a|";

fn line(rest: &str) -> String {
    format!("{PREFIX}{rest}\n")
}

/// A small good stderr log: one session, a simple query and an execute.
fn good_log() -> String {
    [
        line("LOG:  connection authorized: user=alice database=shop"),
        line("LOG:  statement: select 1"),
        line("LOG:  execute <unnamed>: select $1::int + $2"),
        line("DETAIL:  parameters: $1 = '1', $2 = '2'"),
        line(
            "LOG:  disconnection: session time: 0:00:00.002 user=alice database=shop host=[local]",
        ),
    ]
    .concat()
}

fn check(args: &[&str]) -> (i32, String, String) {
    check_with(&[], args)
}

/// `pgsurge replay --check ARGS` with the environment variables `env` set.
fn check_with(env: &[(&str, &str)], args: &[&str]) -> (i32, String, String) {
    let out = Command::new(bin())
        .envs(env.iter().copied())
        .arg("replay")
        .arg("--check")
        .args(args)
        .output()
        .expect("run pgsurge replay");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn write(dir: &Path, name: &str, bytes: &[u8]) -> String {
    let p = dir.join(name);
    std::fs::write(&p, bytes).expect("write log");
    p.to_string_lossy().into_owned()
}

/// `--check --skip-unreadable --json -` on `log`: the report.
fn skipped_report(log: &str, extra: &[&str]) -> Value {
    let mut args = vec!["--skip-unreadable", "--json", "-"];
    args.extend_from_slice(extra);
    args.push(log);
    let (code, stdout, stderr) = check(&args);
    assert_eq!(code, 0, "{stderr}");
    serde_json::from_str(&stdout).expect("a JSON report on stdout")
}

#[test]
fn replay_check_reads_a_good_log() {
    let dir = pgsurge_testkit::scratch_dir("replay-input");
    let log = write(dir.path(), "good.log", good_log().as_bytes());
    let (code, stdout, stderr) = check(&[&log]);
    assert_eq!(code, 0, "{stderr}");
    assert!(
        stdout.contains("read: 1 sessions, 2 statements (1 extended-protocol executions)"),
        "{stdout}"
    );
}

#[test]
fn replay_input_cut_short_is_an_error_or_a_counted_skip() {
    let dir = pgsurge_testkit::scratch_dir("replay-input");
    let mut text = good_log();
    text.push_str(&line("LOG:  statement: select 'cut")[..60]);
    let log = write(dir.path(), "cut.log", text.as_bytes());
    let (code, _, stderr) = check(&[&log]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!("{log}:6: line cut short")),
        "{stderr}"
    );
    let r = skipped_report(&log, &[]);
    assert_eq!(r["read"]["skipped"], 1, "{r}");
    assert_eq!(r["read"]["statements"], 2, "{r}");
}

#[test]
fn replay_input_mixed_formats_name_the_foreign_lines() {
    let dir = pgsurge_testkit::scratch_dir("replay-input");
    let csv = "2026-11-28 18:00:00.200 UTC,\"alice\",\"shop\",12,\"[local]\",65.a,3,\"SELECT\",2026-11-28 18:00:00 UTC,3/1,0,LOG,00000,\"statement: select 2\",,,,,,,,,\"psql\",\"client backend\",,0\n";
    let mut text = good_log();
    text.insert_str(0, csv);
    let log = write(dir.path(), "mixed.log", text.as_bytes());
    // The file starts as csvlog: its stderr lines are the foreign ones.
    let (code, _, stderr) = check(&[&log]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!("{log}:2:")) && stderr.contains("csvlog"),
        "{stderr}"
    );
    let (code, _, stderr) = check(&["--format", "stderr", &log]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!("{log}:1: does not start with the log_line_prefix")),
        "{stderr}"
    );
    let r = skipped_report(&log, &["--format", "stderr"]);
    assert_eq!(r["read"]["skipped"], 1, "{r}");
    assert_eq!(r["read"]["statements"], 2, "{r}");
    // A jsonlog line inside a stderr log.
    let mut text = good_log();
    text.push_str("{\"timestamp\":\"2026-11-28 18:00:01.000 UTC\",\"session_id\":\"65.b\",\"error_severity\":\"LOG\",\"message\":\"statement: select 3\"}\n");
    let log = write(dir.path(), "json-inside.log", text.as_bytes());
    let (code, _, stderr) = check(&[&log]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!("{log}:6: does not start")),
        "{stderr}"
    );
}

#[test]
fn replay_input_without_session_ids_is_refused() {
    let dir = pgsurge_testkit::scratch_dir("replay-input");
    let text = "2026-11-28 18:00:00.100 UTC|alice|shop|LOG:  statement: select 1\n";
    let log = write(dir.path(), "nosession.log", text.as_bytes());
    let (code, _, stderr) = check(&["--log-line-prefix", "%m|%u|%d|", &log]);
    assert_eq!(code, 1);
    assert!(stderr.contains("has no session id (%c)"), "{stderr}");
    assert!(
        stderr.contains("log_line_prefix = '%m|%u|%d|%c|'"),
        "{stderr}"
    );
    // Read with the default prefix, the line does not match it.
    let (code, _, stderr) = check(&[&log]);
    assert_eq!(code, 1);
    assert!(stderr.contains(&format!("{log}:1:")), "{stderr}");
}

#[test]
fn replay_input_not_utf8_names_the_byte() {
    let dir = pgsurge_testkit::scratch_dir("replay-input");
    let mut bytes = good_log().into_bytes();
    bytes.extend_from_slice(PREFIX.as_bytes());
    bytes.extend_from_slice(b"LOG:  statement: select 'caf\xe9'\n");
    bytes.extend_from_slice(line("LOG:  statement: select 4").as_bytes());
    let log = write(dir.path(), "latin1.log", &bytes);
    let (code, _, stderr) = check(&[&log]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!("{log}:6: line is not UTF-8 (byte 0xe9")),
        "{stderr}"
    );
    let r = skipped_report(&log, &[]);
    assert_eq!(r["read"]["skipped"], 1, "{r}");
    assert_eq!(r["read"]["statements"], 3, "{r}");
}

#[test]
fn replay_input_parameters_that_do_not_fit_are_refused() {
    let dir = pgsurge_testkit::scratch_dir("replay-input");
    let mut text = good_log();
    text.push_str(&line(
        "LOG:  execute P_1: update t set a = $1 where id = $2",
    ));
    text.push_str(&line("DETAIL:  parameters: $1 = '5'"));
    text.push_str(&line("LOG:  execute P_2: select $1"));
    text.push_str(&line("DETAIL:  parameters: $1 = '5', $3 = '6'"));
    let log = write(dir.path(), "params.log", text.as_bytes());
    let (code, _, stderr) = check(&[&log]);
    assert_eq!(code, 1);
    assert!(
        stderr.contains(&format!(
            "{log}:6: the statement refers to $2 but the log binds 1 parameter"
        )),
        "{stderr}"
    );
    let r = skipped_report(&log, &[]);
    assert_eq!(r["read"]["skipped"], 2, "{r}");
    let examples = r["read"]["skipped_examples"].to_string();
    assert!(examples.contains("expected \\\"$2 = \\\""), "{examples}");
}

#[test]
fn replay_input_a_line_cut_short_with_the_next_entry_glued_is_a_skip_and_that_entry() {
    let dir = pgsurge_testkit::scratch_dir("replay-input");
    // The second statement's line ends inside its WHERE clause, and the execute's line
    // follows on the same line.
    let cut = format!("{PREFIX}LOG:  statement: select * from t where");
    let mut text = good_log();
    let at = text
        .find(&format!("{PREFIX}LOG:  execute"))
        .expect("the execute");
    text.insert_str(at, &cut);
    let log = write(dir.path(), "glued.log", text.as_bytes());
    let (code, _, stderr) = check(&[&log]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains(&format!("{log}:3: ")) && stderr.contains("cut short"),
        "{stderr}"
    );
    let r = skipped_report(&log, &[]);
    assert_eq!(r["read"]["skipped"], 1, "{r}");
    assert_eq!(r["read"]["statements"], 2, "{r}");
    assert_eq!(r["read"]["executes"], 1, "the glued execute is read: {r}");
}

#[test]
fn replay_input_an_entry_past_the_limit_is_an_error_or_a_counted_skip() {
    let dir = pgsurge_testkit::scratch_dir("replay-input");
    let env = [("PGSURGE_REPLAY_ENTRY_LIMIT", "4096")];
    let long = format!("select '{}'", "x".repeat(20_000));
    let mut text = good_log();
    text.insert_str(0, &line(&format!("LOG:  statement: {long}")));
    let stderr_log = write(dir.path(), "long.log", text.as_bytes());
    let csv_line = |sql: &str| {
        format!("2026-11-28 18:00:00.200 UTC,\"alice\",\"shop\",12,\"[local]\",65.a,3,\"SELECT\",2026-11-28 18:00:00 UTC,3/1,0,LOG,00000,\"statement: {sql}\",,,,,,,,,\"psql\",\"client backend\",,0\n")
    };
    let csv = [
        csv_line("select 1"),
        csv_line(&long.replace('x', "x\n")),
        csv_line("select 2"),
    ]
    .concat();
    let csv_log = write(dir.path(), "long.csv", csv.as_bytes());
    for (log, at) in [(&stderr_log, 1), (&csv_log, 2)] {
        let (code, _, stderr) = check_with(&env, &[log]);
        assert_eq!(code, 1, "{stderr}");
        assert!(
            stderr.contains(&format!("{log}:{at}: ")) && stderr.contains("longer than 4096 bytes"),
            "{stderr}"
        );
        let mut args = vec!["--skip-unreadable", "--json", "-"];
        args.push(log);
        let (code, stdout, stderr) = check_with(&env, &args);
        assert_eq!(code, 0, "{stderr}");
        let r: Value = serde_json::from_str(&stdout).expect("a JSON report on stdout");
        assert_eq!(r["read"]["skipped"], 1, "{r}");
        assert_eq!(
            r["read"]["statements"], 2,
            "the statements around it are read: {r}"
        );
    }
    // Without the lowered bound the same logs are read whole.
    let (code, _, stderr) = check(&[&stderr_log]);
    assert_eq!(code, 0, "{stderr}");
}

#[test]
fn replay_check_counts_fingerprints_past_the_limit_in_one_row() {
    let dir = pgsurge_testkit::scratch_dir("replay-input");
    let mut text = good_log();
    for (i, column) in ["a", "b", "c", "d", "e", "f"].iter().enumerate() {
        for _ in 0..=i {
            text.push_str(&line(&format!("LOG:  statement: select {column} from t")));
        }
    }
    let log = write(dir.path(), "shapes.log", text.as_bytes());
    let env = [("PGSURGE_REPLAY_FINGERPRINT_LIMIT", "4")];
    let (code, stdout, stderr) = check_with(&env, &["--json", "-", &log]);
    assert_eq!(code, 0, "{stderr}");
    let r: Value = serde_json::from_str(&stdout).expect("a JSON report on stdout");
    assert_eq!(r["read"]["fingerprint_limit"], 4, "{r}");
    crate::replay_roundtrip::assert_schema(&r);
    let rows = r["fingerprints"].as_array().expect("rows");
    assert_eq!(rows.len(), 5, "four fingerprints and the other row: {r}");
    let other: Vec<&Value> = rows
        .iter()
        .filter(|f| f["fingerprint"] == "other")
        .collect();
    assert_eq!(other.len(), 1, "{r}");
    // select 1, the execute, a, b are counted apart; c, d, e and f (3+4+5+6) together.
    assert_eq!(other[0]["logged"]["statements"], 18, "{r}");
    let (code, stdout, _) = check_with(&env, &[&log]);
    assert_eq!(code, 0);
    assert!(
        stdout.contains("fingerprints: more than 4 in the log") && stdout.contains("other "),
        "{stdout}"
    );
    let (_, stdout, _) = check(&["--json", "-", &log]);
    let r: Value = serde_json::from_str(&stdout).expect("a JSON report on stdout");
    assert!(r["read"].get("fingerprint_limit").is_none(), "{r}");
    assert_eq!(r["fingerprints"].as_array().map(Vec::len), Some(8), "{r}");
}
