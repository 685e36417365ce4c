//! SQL splitting compared with the real pgbench: for scripts full of quoting, comments,
//! dollar quotes, parentheses and `BEGIN ATOMIC` bodies, the statements pgbench sends
//! (its `--debug` "sending" lines, simple mode) are exactly the SQL commands
//! [`parse_script`] produces.

use pgsurge_script::{parse_script, substitute_simple, Command, Variables};

const CASES: &[&str] = &[
    "SELECT 1;SELECT 2;\n",
    "SELECT 'a;b' AS x; SELECT E'a\\';b' AS y;\n",
    "SELECT $$a;b$$; SELECT $q$ $$ ; $q$;\n",
    "SELECT /* a /* b; */ c; */ 1;\n",
    "SELECT (1\n;\n);\n",
    "SELECT 1 -- c;\n+ 1;\n",
    "SELECT \"a;b\" FROM (SELECT 1 AS \"a;b\") s;\n",
    "CREATE FUNCTION pg_temp.f() RETURNS int LANGUAGE sql\nBEGIN ATOMIC\n  SELECT 1;\n  SELECT CASE WHEN true THEN 2 END;\nEND;\nSELECT pg_temp.f();\n",
    "SELECT 1 \\; SELECT 2;\n",
    "SELECT U&'a;b', B'01', X'1f', N'x;y';\n",
    "  -- leading comment\n\n   SELECT 3",
    "SELECT ':a;' ;\n",
    "SELECT 1 AS one \\gset\nSELECT :one + 1;\n",
    "SELECT 'it''s;' AS q;\n",
    "SELECT 1 \\set x 2\n;\n",
    "/* c */ SELECT 5;\n",
    "SELECT $1$ FROM (SELECT 1) AS t($1$);\n",
];

#[test]
fn same_statements_as_real_pgbench() {
    if pgsurge_testkit::reference_pgbench().is_none() {
        return;
    }
    let srv = pgsurge_server::testing::TestServer::shared();
    let db = srv.create_database("splitdiff");
    let dir = pgsurge_testkit::scratch_dir("split");
    let mut failures = Vec::new();
    for (k, text) in CASES.iter().enumerate() {
        let file = dir.join(format!("s{k}.sql"));
        std::fs::write(&file, text).unwrap();
        let mut cmd = std::process::Command::new("/usr/bin/pgbench");
        srv.apply_env(&mut cmd);
        // pgbench 15: -d is --debug
        let out = cmd
            .args(["-n", "-t", "1", "-d", "-f"])
            .arg(&file)
            .arg(&db)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr).to_string();
        let mut theirs = Vec::new();
        for chunk in stderr.split("pgbench: client 0 sending ").skip(1) {
            let end = chunk.find("\npgbench: ").unwrap_or(chunk.len());
            theirs.push(chunk[..end].to_string());
        }
        let script = parse_script("s.sql", text).unwrap();
        let mut vars = Variables::new();
        vars.set_string("gset", "one", "1").unwrap();
        let ours: Vec<String> = script
            .commands
            .iter()
            .filter_map(|c| match c {
                Command::Sql(s) => {
                    let mut o = String::new();
                    substitute_simple(&s.sql, &mut vars, &mut o);
                    Some(o)
                }
                _ => None,
            })
            .collect();
        // a trailing newline of the last statement is not visible in pgbench's log line
        let norm = |v: &[String]| {
            v.iter()
                .map(|s| s.trim_end_matches('\n').to_string())
                .collect::<Vec<_>>()
        };
        // (a statement the server rejects ends the run; what was sent still counts)
        if theirs.is_empty() || norm(&theirs) != norm(&ours) {
            failures.push(format!(
                "case {k} {text:?}\npgbench: {theirs:?}\nours:    {ours:?}\n{stderr}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
