//! Invalid scripts: each case of `data/invalid_scripts.txt` must be rejected, and when
//! the machine has a real pgbench the stderr text (and exit status 1) must be identical.
//! Syntax errors are reported before pgbench connects, so no server is needed.

use pgsurge_script::parse_script;
use std::path::Path;
use std::process::Command;

fn cases() -> Vec<(String, String)> {
    let text = include_str!("../data/invalid_scripts.txt");
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("=== ") {
            out.push((name.to_string(), String::new()));
        } else if let Some((_, body)) = out.last_mut() {
            body.push_str(line);
            body.push('\n');
        }
    }
    for (name, body) in &mut out {
        if name.ends_with("-noeol") {
            body.pop();
        }
        if name.contains("crlf") {
            *body = body.replace('\n', "\r\n");
        }
    }
    out
}

#[test]
fn every_case_is_rejected() {
    let cases = cases();
    assert!(cases.len() >= 60, "corpus has {} cases", cases.len());
    for (name, body) in &cases {
        let file = format!("{name}.sql");
        assert!(parse_script(&file, body).is_err(), "{name} was accepted");
    }
}

/// Messages observed from pgbench 17 (spec/observed/exp5.txt).
#[test]
fn observed_pg17_messages() {
    let expect: &[(&str, &str)] = &[
        ("e1-set-trailing-plus", "pgbench: error: e1.sql:1: syntax error in command \"set\"\n\\set i 1 +\n          ^ error found here\n"),
        ("e2-second-line", "pgbench: error: e2.sql:2: syntax error in command \"set\"\n\\set x (1 + \n            ^ error found here\n"),
        ("e3-sleep-unit", "pgbench: error: e3.sql:1: unrecognized time unit, must be us, ms or s (weeks) in command \"sleep\"\n\\sleep 10 weeks\n          ^ error found here\n"),
        ("e4-sleep-time", "pgbench: error: e4.sql:1: invalid sleep time, must be an integer (abc) in command \"sleep\"\n\\sleep abc\n       ^ error found here\n"),
        ("e5-unknown-function", "pgbench: error: e5.sql:1: unexpected function name (noSuchFn) in command \"set\"\n\\set i noSuchFn(3)\n              ^ error found here\n"),
        ("e6-invalid-command", "pgbench: error: e6.sql:1: invalid command in command \"nosuch\"\n\\nosuch a b\n"),
        ("e7-bigint-overflow", "pgbench: error: e7.sql:1: bigint constant overflow (100000000000000000000) in command \"set\"\n\\set i 100000000000000000000\n                           ^ error found here\n"),
        ("e8-unexpected-char", "pgbench: error: e8.sql:1: unexpected character ($) in command \"set\"\n\\set i 1 $ 2\n         ^ error found here\n"),
        ("e9-if-without-endif", "pgbench: error: condition error in script \"e9.sql\" command 2: \\if without matching \\endif\n"),
        ("e10-endif-without-if", "pgbench: error: condition error in script \"e10.sql\" command 1: \\endif without matching \\if\n"),
        ("e11-gset-first", "pgbench: error: e11.sql:1: \\gset must follow an SQL command\n"),
        ("e12-setshell-missing", "pgbench: error: e12.sql:1: missing argument in command \"setshell\"\n\\setshell x\n"),
        ("e13-shell-missing", "pgbench: error: e13.sql:1: missing command in command \"shell\"\n\\shell\n"),
        ("e14-else-argument", "pgbench: error: e14.sql:2: unexpected argument in command \"else\"\n\\else x\n"),
        ("e15-least-no-args", "pgbench: error: e15.sql:1: at least one argument expected (least) in command \"set\"\n\\set i least()\n             ^ error found here\n"),
        ("e16-sleep-too-many", "pgbench: error: e16.sql:1: too many arguments in command \"sleep\"\n\\sleep 1 2 3\n           ^ error found here\n"),
        ("e17-empty", "pgbench: error: empty command list for script \"e17.sql\"\n"),
        ("e18-gset-too-many", "pgbench: error: e18.sql:1: too many arguments in command \"gset\"\n\\gset a b\n"),
        ("e19-set-missing", "pgbench: error: e19.sql:1: missing argument in command \"set\"\n"),
        ("e20-case-without-end", "pgbench: error: e20.sql:1: syntax error in command \"set\"\n\\set i CASE WHEN 1 THEN 2\n                         ^ error found here\n"),
        ("string-literal", "pgbench: error: v1.sql:1: unexpected character (') in command \"set\"\n\\set s 'x'\n         ^ error found here\n"),
    ];
    let cases = cases();
    for (name, want) in expect {
        let body = &cases.iter().find(|(n, _)| n == name).expect(name).1;
        // the observed runs used files named e1.sql … e20.sql (v1.sql for the literal)
        let file = match name.split('-').next() {
            Some(e) if e.starts_with('e') && e[1..].chars().all(|c| c.is_ascii_digit()) => {
                format!("{e}.sql")
            }
            _ => "v1.sql".to_string(),
        };
        let got = parse_script(&file, body).expect_err(name).render();
        assert_eq!(&got, want, "case {name}");
    }
}

/// Differential check against the machine's pgbench (15.x on Debian), when present.
#[test]
fn same_stderr_as_real_pgbench() {
    let Some(pgbench) = pgsurge_testkit::reference_pgbench().map(Path::new) else {
        return;
    };
    let dir = pgsurge_testkit::scratch_dir("invalid");
    let mut mismatches = Vec::new();
    for (name, body) in cases() {
        let file = format!("{name}.sql");
        std::fs::write(dir.join(&file), &body).unwrap();
        let out = Command::new(pgbench)
            .current_dir(&dir)
            // never reach a server: a valid script would fail to connect instead
            .env("PGHOST", "/nonexistent-socket-dir")
            .args(["-n", "-t", "1", "-f", &file])
            .output()
            .unwrap();
        let theirs = String::from_utf8_lossy(&out.stderr).to_string();
        let ours = parse_script(&file, &body).map_or_else(|e| e.render(), |_| "(accepted)".into());
        // \syncpipeline exists since pgbench 17; older ones call it an invalid command
        let pg15_gap = theirs.contains("invalid command in command \"syncpipeline\"");
        if !pg15_gap && (out.status.code() != Some(1) || theirs != ours) {
            mismatches.push(format!(
                "--- {name}\npgbench ({:?}):\n{theirs}ours:\n{ours}",
                out.status.code()
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} mismatches:\n{}",
        mismatches.len(),
        mismatches.join("\n")
    );
}
