//! Shared helpers of the init integration tests: running the machine's pgbench
//! and our `initialize` against the fixture server, and fingerprinting what
//! they left in a database.

#![allow(dead_code)]

use std::process::Command;
use std::sync::atomic::AtomicBool;

use pgsurge_init::{
    initialize_parallel, initialize_with, Clock, InitContext, InitError, InitSpec, MonotonicClock,
};
use pgsurge_server::testing::TestServer;
use pgsurge_wire::{ConnConfig, Connection};

pub use pgsurge_testkit::PGBENCH;

/// Whether the reference pgbench exists (else skipped, or failed under CI).
pub fn have_pgbench() -> bool {
    pgsurge_testkit::reference_pgbench().is_some()
}

/// pgbench's major version number (`pgbench (PostgreSQL) 15.18` → 15).
pub fn pgbench_major() -> u32 {
    let out = Command::new(PGBENCH)
        .arg("--version")
        .output()
        .expect("run pgbench --version");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.split_whitespace()
        .last()
        .and_then(|v| v.split('.').next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("cannot read pgbench version from {text:?}"))
}

/// Output of one init run.
pub struct InitRun {
    pub ok: bool,
    pub exit_code: i32,
    /// Everything printed to stderr (for ours: messages + rendered error).
    pub stderr: String,
}

/// Runs `pgbench -i ARGS DB` as `user` (default superuser).
pub fn run_pgbench(srv: &TestServer, db: &str, user: Option<&str>, args: &[&str]) -> InitRun {
    let mut cmd = Command::new(PGBENCH);
    srv.apply_env(&mut cmd);
    if let Some(u) = user {
        cmd.env("PGUSER", u);
    }
    cmd.arg("-i").args(args).arg(db);
    let out = cmd.output().expect("run pgbench");
    InitRun {
        ok: out.status.success(),
        exit_code: out.status.code().unwrap_or(-1),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// Connects to `db` as `user` (default superuser) with the wire crate.
pub fn connect(srv: &TestServer, db: &str, user: Option<&str>) -> Connection {
    let mut conninfo = srv.conninfo(db);
    if let Some(u) = user {
        conninfo.push_str(&format!(" user={u}"));
    }
    let cfg = ConnConfig::parse(&conninfo).expect("valid conninfo");
    Connection::connect(&cfg).unwrap_or_else(|e| panic!("connect to {db}: {e}"))
}

/// Runs our `initialize` with `spec` as pgbench's main would: messages to
/// stderr, on failure the rendered error and exit status 1.
pub fn run_ours(srv: &TestServer, db: &str, user: Option<&str>, spec: &InitSpec) -> InitRun {
    run_ours_timed(srv, db, user, spec, &MonotonicClock::new())
}

/// [`run_ours`] with `--init-jobs=jobs`: worker connections opened like the
/// first one.
pub fn run_ours_jobs(srv: &TestServer, db: &str, spec: &InitSpec, jobs: usize) -> InitRun {
    let mut conn = connect(srv, db, None);
    let mut err = Vec::new();
    let cancel = AtomicBool::new(false);
    let clock = MonotonicClock::new();
    let ctx = InitContext {
        clock: &clock,
        stderr_is_tty: false,
        cancel: Some(&cancel),
    };
    let open = || Ok::<_, String>(connect(srv, db, None));
    let result = initialize_parallel(&mut conn, spec, Some((jobs, &open)), &mut err, &ctx);
    conn.close();
    finish_run(err, result)
}

fn finish_run(err: Vec<u8>, result: Result<(), InitError>) -> InitRun {
    let mut stderr = String::from_utf8(err).expect("stderr is UTF-8");
    let (ok, exit_code) = match &result {
        Ok(()) => (true, 0),
        Err(e) => {
            stderr.push_str(&e.render());
            (false, InitError::exit_code(e))
        }
    };
    InitRun {
        ok,
        exit_code,
        stderr,
    }
}

/// [`run_ours`] with a given clock.
pub fn run_ours_timed(
    srv: &TestServer,
    db: &str,
    user: Option<&str>,
    spec: &InitSpec,
    clock: &dyn Clock,
) -> InitRun {
    let mut conn = connect(srv, db, user);
    let mut err = Vec::new();
    let cancel = AtomicBool::new(false);
    let ctx = InitContext {
        clock,
        stderr_is_tty: false,
        cancel: Some(&cancel),
    };
    let result = initialize_with(&mut conn, spec, &mut err, &ctx);
    conn.close();
    finish_run(err, result)
}

/// Everything about the pgbench tables of `db` that must not depend on who
/// initialized it: relations (kind, persistence, options, tablespace,
/// partition bounds and keys, pages after vacuum), columns, constraints,
/// indexes, and an ordered checksum of every table's and partition's rows.
pub fn fingerprint(srv: &TestServer, db: &str) -> Vec<(String, String)> {
    let pgbench_rels = "select oid from pg_class where relnamespace = 'public'::regnamespace and relname like 'pgbench%'";
    let queries = [
        (
            "relations",
            format!(
                "select c.relname, c.relkind, c.relpersistence, \
                 coalesce(array_to_string(c.reloptions, ','), '-'), coalesce(t.spcname, '-'), \
                 coalesce(pg_get_expr(c.relpartbound, c.oid), '-'), \
                 case when c.relkind = 'p' then pg_get_partkeydef(c.oid) else '-' end, \
                 case when c.relkind in ('r', 'i') then c.relpages::text else '-' end \
                 from pg_class c left join pg_tablespace t on t.oid = c.reltablespace \
                 where c.oid in ({pgbench_rels}) order by 1"
            ),
        ),
        (
            "columns",
            format!(
                "select attrelid::regclass::text, attnum, attname, format_type(atttypid, atttypmod), \
                 attnotnull, coalesce(pg_get_expr(d.adbin, d.adrelid), '-') \
                 from pg_attribute a left join pg_attrdef d on d.adrelid = a.attrelid and d.adnum = a.attnum \
                 where attrelid in ({pgbench_rels}) and attnum > 0 and not attisdropped order by 1, 2"
            ),
        ),
        (
            "constraints",
            "select conrelid::regclass::text, conname, contype, pg_get_constraintdef(oid) \
             from pg_constraint where connamespace = 'public'::regnamespace order by 1, 2"
                .to_owned(),
        ),
        (
            "indexes",
            "select tablename, indexname, indexdef, coalesce(tablespace, '-') \
             from pg_indexes where schemaname = 'public' order by 1, 2"
                .to_owned(),
        ),
    ];
    let mut out: Vec<(String, String)> = queries
        .iter()
        .map(|(name, sql)| ((*name).to_owned(), srv.psql(db, sql)))
        .collect();
    let tables = srv.psql(
        db,
        "select relname from pg_class where relnamespace = 'public'::regnamespace \
         and relname like 'pgbench%' and relkind in ('r', 'p') order by 1",
    );
    for table in tables.lines() {
        let order = match table {
            t if t.starts_with("pgbench_accounts") => "aid",
            "pgbench_branches" => "bid",
            "pgbench_tellers" => "tid",
            _ => "tid, bid, aid, delta, mtime",
        };
        let sql = format!(
            "select count(*), coalesce(md5(string_agg(t::text, ',' order by {order})), 'empty'), \
             count(*) filter (where filler is null) from {table} t"
        );
        out.push((format!("contents of {table}"), srv.psql(db, &sql)));
    }
    out
}

/// Compares two fingerprints item by item with a readable failure.
pub fn assert_same_fingerprint(case: &str, theirs: &[(String, String)], ours: &[(String, String)]) {
    assert!(
        theirs
            .iter()
            .any(|(k, v)| k == "contents of pgbench_accounts" && !v.is_empty()),
        "{case}: pgbench left no pgbench_accounts table: {theirs:?}"
    );
    let names = |f: &[(String, String)]| f.iter().map(|(k, _)| k.clone()).collect::<Vec<_>>();
    assert_eq!(
        names(theirs),
        names(ours),
        "{case}: different sets of tables"
    );
    for ((item, a), (_, b)) in theirs.iter().zip(ours) {
        assert_eq!(a, b, "{case}: {item} differ (left: pgbench, right: ours)");
    }
}

/// Masks what legitimately differs between runs (timings) and between
/// pgbench 15 and 18 (the table name in progress lines), keeping row counts.
pub fn message_structure(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .map(|line| {
            let mut masked = String::with_capacity(line.len());
            let bytes = line.as_bytes();
            let mut i = 0;
            while i < bytes.len() {
                // A decimal number with two fraction digits is a time.
                if bytes[i].is_ascii_digit() {
                    let start = i;
                    while i < bytes.len() && bytes[i].is_ascii_digit() {
                        i += 1;
                    }
                    if bytes.get(i) == Some(&b'.')
                        && bytes.get(i + 1).is_some_and(u8::is_ascii_digit)
                        && bytes.get(i + 2).is_some_and(u8::is_ascii_digit)
                    {
                        masked.push_str("T.TT");
                        i += 3;
                    } else {
                        masked.push_str(&line[start..i]);
                    }
                } else {
                    masked.push(bytes[i] as char);
                    i += 1;
                }
            }
            // pgbench <= 16 names no table in progress lines.
            for table in ["pgbench_accounts", "pgbench_branches", "pgbench_tellers"] {
                masked = masked.replace(&format!("%) of {table} done"), "%) done");
            }
            masked
        })
        .collect()
}
