//! Script parsing: how text is split into commands, what each command records, and the
//! `-r` display text, checked against pgbench's observed behaviour.

use pgsurge_script::{
    parse_script, Command, MetaKind, QueryMode, SleepAmount, SleepUnit, SqlMeta, BUILTINS,
};

fn sql(c: &Command) -> &pgsurge_script::SqlCommand {
    match c {
        Command::Sql(s) => s,
        Command::Meta(m) => panic!("expected SQL, got {:?}", m.kind),
    }
}

#[test]
fn tpcb_like_first_lines_match_report() {
    let s = parse_script(BUILTINS[0].desc, BUILTINS[0].script).unwrap();
    let lines: Vec<&str> = s.commands.iter().map(Command::first_line).collect();
    assert_eq!(
        lines,
        [
            "\\set aid random(1, 100000 * :scale)",
            "\\set bid random(1, 1 * :scale)",
            "\\set tid random(1, 10 * :scale)",
            "\\set delta random(-5000, 5000)",
            "BEGIN;",
            "UPDATE pgbench_accounts SET abalance = abalance + :delta WHERE aid = :aid;",
            "SELECT abalance FROM pgbench_accounts WHERE aid = :aid;",
            "UPDATE pgbench_tellers SET tbalance = tbalance + :delta WHERE tid = :tid;",
            "UPDATE pgbench_branches SET bbalance = bbalance + :delta WHERE bid = :bid;",
            "INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) VALUES (:tid, :bid, :aid, :delta, CURRENT_TIMESTAMP);",
            "END;",
        ]
    );
    let lines: Vec<usize> = s.commands.iter().map(Command::line).collect();
    assert_eq!(lines, (1..=11).collect::<Vec<_>>());
    for b in BUILTINS {
        assert!(parse_script(b.desc, b.script).is_ok(), "{}", b.name);
    }
}

#[test]
fn multi_line_sql_keeps_comments_inside() {
    // spec/observed/exp6: v2.sql
    let text = "-- leading comment\nSELECT\n  1 AS one, -- trailing comment\n  /* block ; comment */ 'semi;colon' AS s,\n  $$dollar ; quoted$$ AS d;\nSELECT 2\n";
    let s = parse_script("v2.sql", text).unwrap();
    assert_eq!(s.commands.len(), 2);
    let a = sql(&s.commands[0]);
    assert_eq!(
        a.source,
        "SELECT\n  1 AS one, -- trailing comment\n  /* block ; comment */ 'semi;colon' AS s,\n  $$dollar ; quoted$$ AS d;"
    );
    assert_eq!(a.first_line, "SELECT");
    assert_eq!(a.line, 2);
    let b = sql(&s.commands[1]);
    assert_eq!(b.first_line, "SELECT 2");
    assert_eq!(b.source, "SELECT 2\n");
}

#[test]
fn gset_and_compound_queries() {
    let text =
        "SELECT 1 AS one \\gset\nSELECT 1 \\; SELECT 2 AS two \\aset p_\n\\set r debug(:one)\n";
    let s = parse_script("v1.sql", text).unwrap();
    assert_eq!(s.commands.len(), 3);
    let a = sql(&s.commands[0]);
    assert_eq!(a.first_line, "SELECT 1 AS one ");
    assert_eq!(
        a.meta,
        SqlMeta::Gset {
            prefix: String::new()
        }
    );
    let b = sql(&s.commands[1]);
    assert_eq!(b.source, "SELECT 1 ; SELECT 2 AS two ");
    assert_eq!(
        b.meta,
        SqlMeta::Aset {
            prefix: "p_".into()
        }
    );
}

#[test]
fn gset_errors_name_preceding_meta_command() {
    let e = parse_script("g.sql", "\\set i +1\n\\gset\n").unwrap_err();
    assert_eq!(
        e.render(),
        "pgbench: error: g.sql:2: \\gset must follow an SQL command (\\set i +1)\n"
    );
    let e = parse_script("g.sql", "SELECT 1 AS i \\gset\n\\aset\n").unwrap_err();
    assert_eq!(
        e.render(),
        "pgbench: error: g.sql:2: \\gset must follow an SQL command\n"
    );
}

#[test]
fn meta_commands() {
    let text = "\\SET x 1 + \\\n  2\n\\sleep 10ms\n\\sleep :d us\n\\sleep 3\n\\setshell v echo :x\n\\shell true\n\\if :x\n\\elif 0\n\\else\n\\endif\n\\startpipeline\n\\syncpipeline\n\\endpipeline\n";
    let s = parse_script("m.sql", text).unwrap();
    let metas: Vec<_> = s
        .commands
        .iter()
        .map(|c| match c {
            Command::Meta(m) => m,
            _ => panic!(),
        })
        .collect();
    assert_eq!(metas[0].argv, ["SET", "x"]);
    assert_eq!(metas[0].first_line, "\\SET x 1 + \\\n  2");
    assert_eq!(metas[0].line, 1);
    match &metas[1].kind {
        MetaKind::Sleep(sp) => {
            assert_eq!(sp.amount, SleepAmount::Literal(10));
            assert_eq!(sp.unit, SleepUnit::Millis);
        }
        k => panic!("{k:?}"),
    }
    // pgbench keeps the glued word and adds the unit as a third word
    assert_eq!(metas[1].argv, ["sleep", "10ms", "ms"]);
    assert_eq!(metas[1].line, 3);
    match &metas[2].kind {
        MetaKind::Sleep(sp) => {
            assert_eq!(sp.amount, SleepAmount::Variable("d".into()));
            assert_eq!(sp.unit, SleepUnit::Micros);
        }
        k => panic!("{k:?}"),
    }
    match &metas[3].kind {
        MetaKind::Sleep(sp) => assert_eq!(sp.unit, SleepUnit::Seconds),
        k => panic!("{k:?}"),
    }
    match &metas[4].kind {
        MetaKind::SetShell { var, words } => {
            assert_eq!(var, "v");
            assert_eq!(words, &["echo", ":x"]);
        }
        k => panic!("{k:?}"),
    }
    assert!(matches!(metas[5].kind, MetaKind::Shell { .. }));
    assert!(matches!(metas[6].kind, MetaKind::If(_)));
    assert!(matches!(metas[7].kind, MetaKind::Elif(_)));
    assert!(matches!(metas[8].kind, MetaKind::Else));
    assert!(matches!(metas[9].kind, MetaKind::EndIf));
    assert!(matches!(metas[10].kind, MetaKind::StartPipeline));
    assert!(matches!(metas[11].kind, MetaKind::SyncPipeline));
    assert!(matches!(metas[12].kind, MetaKind::EndPipeline));
}

#[test]
fn statement_without_semicolon_before_meta_and_at_end() {
    let s = parse_script("x.sql", "SELECT 1\n\\set a 1\nSELECT 2").unwrap();
    assert_eq!(s.commands.len(), 3);
    assert_eq!(sql(&s.commands[0]).source, "SELECT 1\n");
    assert_eq!(sql(&s.commands[2]).source, "SELECT 2");
}

#[test]
fn first_line_is_truncated_to_127_bytes() {
    let long = format!("SELECT '{}';", "x".repeat(300));
    let s = parse_script("x.sql", &long).unwrap();
    assert_eq!(sql(&s.commands[0]).first_line.len(), 127);
}

#[test]
fn prepare_per_mode() {
    let mut s = parse_script("x.sql", "SELECT :a, :b::int, ':a';\n").unwrap();
    s.prepare(QueryMode::Extended).unwrap();
    let c = sql(&s.commands[0]);
    assert_eq!(c.sql, "SELECT $1, $2::int, '$3';");
    assert_eq!(
        c.params.iter().map(|p| &**p).collect::<Vec<_>>(),
        ["a", "b", "a"]
    );
    s.prepare(QueryMode::Simple).unwrap();
    let c = sql(&s.commands[0]);
    assert_eq!(c.sql, "SELECT :a, :b::int, ':a';");
    assert!(c.params.is_empty());
}

#[test]
fn backslash_alone_is_ignored() {
    let s = parse_script("x.sql", "\\\nSELECT 1;\n").unwrap();
    assert_eq!(s.commands.len(), 1);
}

#[test]
fn begin_atomic_function_is_one_command() {
    let text = "CREATE OR REPLACE FUNCTION f() RETURNS int LANGUAGE sql\nBEGIN ATOMIC\n  SELECT 1;\n  SELECT 2;\nEND;\nSELECT f();\n";
    let s = parse_script("x.sql", text).unwrap();
    assert_eq!(s.commands.len(), 2);
    assert!(sql(&s.commands[0]).source.ends_with("END;"));
}
