//! Runner tests against a scripted fake session and a fake clock.

use std::cell::Cell;
use std::sync::atomic::AtomicBool;

use crate::progress::Clock;
use crate::runner::{run_steps, InitContext};
use crate::session::{CopyFailure, Fill, InitSession, SessionError};
use crate::spec::{InitSpec, PartitionMethod};
use crate::InitError;

/// Advances 10.001 ms on every reading (never landing on whole seconds).
struct StepClock(Cell<i64>);

impl Clock for StepClock {
    fn now_micros(&self) -> i64 {
        let t = self.0.get() + 10_001;
        self.0.set(t);
        t
    }
}

#[derive(Default)]
struct FakeSession {
    version: i32,
    log: Vec<String>,
    copied: Vec<(String, Vec<u8>, usize)>,
    fail_on: Option<(String, String)>,
    copy_end_error: Option<String>,
    notices: Vec<String>,
    relkind: &'static str,
}

impl FakeSession {
    fn new() -> Self {
        FakeSession {
            version: 180000,
            relkind: "r",
            ..Default::default()
        }
    }

    fn check(&mut self, sql: &str) -> Result<(), SessionError> {
        self.log.push(sql.to_owned());
        match &self.fail_on {
            Some((prefix, msg)) if sql.starts_with(prefix.as_str()) => Err(SessionError {
                message: msg.clone(),
            }),
            _ => Ok(()),
        }
    }
}

impl InitSession for FakeSession {
    fn server_version_num(&self) -> i32 {
        self.version
    }

    fn execute(&mut self, sql: &str) -> Result<(), SessionError> {
        if sql.starts_with("drop table") {
            self.notices
                .push("NOTICE:  table \"pgbench_accounts\" does not exist, skipping\n".into());
        }
        self.check(sql)
    }

    fn query_value(&mut self, sql: &str, param: &str) -> Result<Option<String>, SessionError> {
        self.check(&format!("{sql} [{param}]"))?;
        Ok(Some(self.relkind.to_owned()))
    }

    fn copy_in(
        &mut self,
        sql: &str,
        fill: &mut dyn FnMut(&mut Vec<u8>) -> Fill,
    ) -> Result<(), CopyFailure> {
        self.check(sql).map_err(CopyFailure::Start)?;
        let mut all = Vec::new();
        let mut chunks = 0;
        loop {
            let mut buf = Vec::new();
            let r = fill(&mut buf);
            assert!(buf.len() < 512 * 1024, "chunk too big: {}", buf.len());
            all.extend_from_slice(&buf);
            chunks += 1;
            if r == Fill::Done {
                break;
            }
        }
        self.copied.push((sql.to_owned(), all, chunks));
        match &self.copy_end_error {
            Some(m) => Err(CopyFailure::End(SessionError { message: m.clone() })),
            None => Ok(()),
        }
    }

    fn take_notices(&mut self) -> Vec<String> {
        std::mem::take(&mut self.notices)
    }
}

fn run(session: &mut FakeSession, spec: &InitSpec) -> (Result<(), InitError>, String) {
    let clock = StepClock(Cell::new(0));
    let ctx = InitContext {
        clock: &clock,
        stderr_is_tty: false,
        cancel: None,
    };
    let mut err = Vec::new();
    let r = run_steps(session, spec, &mut err, &ctx);
    (r, String::from_utf8(err).expect("utf8"))
}

#[test]
fn default_steps_statements_and_messages() {
    let mut s = FakeSession::new();
    let spec = InitSpec {
        scale: 2,
        ..InitSpec::default()
    };
    let (r, err) = run(&mut s, &spec);
    r.expect("init succeeds");
    let lines: Vec<&str> = err.lines().collect();
    assert_eq!(lines[0], "dropping old tables...");
    assert_eq!(
        lines[1],
        "NOTICE:  table \"pgbench_accounts\" does not exist, skipping"
    );
    assert_eq!(lines[2], "creating tables...");
    assert_eq!(lines[3], "generating data (client-side)...");
    assert!(
        lines[4].starts_with("100000 of 200000 tuples (50%) of pgbench_accounts done (elapsed "),
        "{}",
        lines[4]
    );
    assert!(
        lines[5].starts_with("200000 of 200000 tuples (100%) of pgbench_accounts done (elapsed "),
        "{}",
        lines[5]
    );
    assert!(lines[5].ends_with(", remaining 0.00 s)"));
    assert_eq!(lines[6], "vacuuming...");
    assert_eq!(lines[7], "creating primary keys...");
    assert!(lines[8].starts_with("done in "), "{}", lines[8]);
    assert!(
        lines[8].contains("(drop tables 0.01 s, create tables 0.01 s, client-side generate "),
        "{}",
        lines[8]
    );
    assert!(
        lines[8].ends_with(", vacuum 0.01 s, primary keys 0.01 s)."),
        "{}",
        lines[8]
    );
    assert_eq!(lines.len(), 9);

    let copies: Vec<&str> = s
        .log
        .iter()
        .filter(|q| q.starts_with("copy"))
        .map(String::as_str)
        .collect();
    assert_eq!(
        copies,
        vec![
            "copy pgbench_branches from stdin with (freeze on)",
            "copy pgbench_tellers from stdin with (freeze on)",
            "copy pgbench_accounts from stdin with (freeze on)",
        ]
    );
    let (_, accounts, chunks) = &s.copied[2];
    assert!(*chunks > 1, "accounts data is streamed in several chunks");
    assert!(accounts.starts_with(b"1\t1\t0\t\n2\t1\t0\t\n"));
    assert!(accounts.ends_with(b"200000\t2\t0\t\n\\.\n"));
    assert_eq!(s.copied[0].1, b"1\t0\t\\N\n2\t0\t\\N\n\\.\n");
    let begin = s.log.iter().position(|q| q == "begin").expect("begin");
    assert!(s.log[begin + 1].starts_with("truncate table pgbench_accounts"));
    assert_eq!(
        s.log
            .iter()
            .filter(|q| q.starts_with("vacuum analyze"))
            .count(),
        4
    );
}

#[test]
fn done_line_total_is_the_sum_of_steps() {
    let mut s = FakeSession::new();
    let spec = InitSpec {
        steps: "d t  v".into(),
        ..InitSpec::default()
    };
    let (r, err) = run(&mut s, &spec);
    r.expect("ok");
    // Each step reads the clock twice: 10 ms apiece, spaces cost nothing.
    assert!(
        err.ends_with(
            "done in 0.03 s (drop tables 0.01 s, create tables 0.01 s, vacuum 0.01 s).\n"
        ),
        "{err}"
    );
}

#[test]
fn no_freeze_before_14_and_for_partitioned_parents() {
    let mut s = FakeSession {
        version: 130000,
        ..FakeSession::new()
    };
    run(
        &mut s,
        &InitSpec {
            steps: "g".into(),
            ..InitSpec::default()
        },
    )
    .0
    .expect("ok");
    assert!(
        s.log
            .iter()
            .all(|q| !q.contains("freeze") && !q.contains("relkind")),
        "{:?}",
        s.log
    );

    let mut s = FakeSession {
        relkind: "p",
        ..FakeSession::new()
    };
    let spec = InitSpec {
        steps: "g".into(),
        partitions: 2,
        ..InitSpec::default()
    };
    run(&mut s, &spec).0.expect("ok");
    assert!(
        s.log
            .contains(&"copy pgbench_accounts from stdin".to_owned()),
        "{:?}",
        s.log
    );
    assert!(s.log.iter().any(|q| q.ends_with("[pgbench_accounts]")));
}

#[test]
fn partitions_message_and_statements() {
    let mut s = FakeSession::new();
    let spec = InitSpec {
        steps: "t".into(),
        partitions: 3,
        partition_method: PartitionMethod::Hash,
        ..InitSpec::default()
    };
    let (r, err) = run(&mut s, &spec);
    r.expect("ok");
    assert!(
        err.starts_with("creating tables...\ncreating 3 partitions...\ndone in "),
        "{err}"
    );
    assert_eq!(s.log.len(), 7);
    assert!(s.log[6].contains("modulus 3, remainder 2"));
}

#[test]
fn server_side_generation_runs_three_inserts_in_one_transaction() {
    let mut s = FakeSession::new();
    let (r, err) = run(
        &mut s,
        &InitSpec {
            steps: "G".into(),
            ..InitSpec::default()
        },
    );
    r.expect("ok");
    assert!(
        err.starts_with("generating data (server-side)...\ndone in "),
        "{err}"
    );
    assert_eq!(s.log[0], "begin");
    assert!(s.log[2].starts_with("insert into pgbench_branches"));
    assert!(s.log[4].starts_with("insert into pgbench_accounts"));
    assert_eq!(s.log[5], "commit");
}

#[test]
fn failed_statement_stops_the_run_with_query_failed() {
    let mut s = FakeSession {
        fail_on: Some((
            "create table pgbench_history".into(),
            "ERROR:  tablespace \"nope\" does not exist\n".into(),
        )),
        ..FakeSession::new()
    };
    let spec = InitSpec {
        tablespace: Some("nope".into()),
        ..InitSpec::default()
    };
    let (r, err) = run(&mut s, &spec);
    let e = r.expect_err("must fail");
    assert_eq!(
        e.render(),
        "pgbench: error: query failed: ERROR:  tablespace \"nope\" does not exist\n\
         pgbench: detail: Query was: create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22)) tablespace \"nope\"\n"
    );
    assert!(!err.contains("done in"));
    assert!(err.ends_with("creating tables...\n"));
}

#[test]
fn unknown_step_fails_when_reached() {
    let mut s = FakeSession::new();
    let (r, err) = run(
        &mut s,
        &InitSpec {
            steps: "dx".into(),
            ..InitSpec::default()
        },
    );
    assert_eq!(r, Err(InitError::UnknownStep('x')));
    assert!(err.starts_with("dropping old tables..."));
}

#[test]
fn copy_failures_map_to_pgbench_messages() {
    let mut s = FakeSession {
        fail_on: Some((
            "copy pgbench_branches".into(),
            "ERROR:  permission denied for table pgbench_branches\n".into(),
        )),
        ..FakeSession::new()
    };
    let (r, _) = run(
        &mut s,
        &InitSpec {
            steps: "g".into(),
            ..InitSpec::default()
        },
    );
    assert_eq!(
        r.expect_err("fails").render(),
        "pgbench: error: unexpected copy in result: ERROR:  permission denied for table pgbench_branches\n"
    );

    let mut s = FakeSession {
        copy_end_error: Some("ERROR:  disk full\n".into()),
        ..FakeSession::new()
    };
    let (r, _) = run(
        &mut s,
        &InitSpec {
            steps: "g".into(),
            ..InitSpec::default()
        },
    );
    assert_eq!(
        r.expect_err("fails").render(),
        "ERROR:  disk full\npgbench: error: PQendcopy failed\n"
    );
}

#[test]
fn cancel_stops_generation_and_fails() {
    let mut s = FakeSession::new();
    let clock = StepClock(Cell::new(0));
    let flag = AtomicBool::new(true);
    let ctx = InitContext {
        clock: &clock,
        stderr_is_tty: false,
        cancel: Some(&flag),
    };
    let mut err = Vec::new();
    let spec = InitSpec {
        steps: "g".into(),
        scale: 5,
        ..InitSpec::default()
    };
    // Raised before anything ran: not even the transaction starts.
    let r = run_steps(&mut s, &spec, &mut err, &ctx);
    assert!(
        matches!(&r, Err(InitError::QueryFailed { sql, message })
            if sql == "begin" && message.contains("canceling statement due to user request")),
        "{r:?}"
    );
    assert!(s.log.is_empty(), "{:?}", s.log);
    assert!(s.copied.is_empty());
}

#[test]
fn quiet_mode_prints_only_the_final_line_when_fast() {
    let mut s = FakeSession::new();
    let spec = InitSpec {
        steps: "g".into(),
        scale: 3,
        quiet: true,
        ..InitSpec::default()
    };
    let (r, err) = run(&mut s, &spec);
    r.expect("ok");
    let progress: Vec<&str> = err.lines().filter(|l| l.contains("tuples")).collect();
    // The fake clock advances ~10 ms per reading, one reading per 100 rows:
    // ~30 s for the accounts table, so a line every 5 s and one at the end.
    assert!(progress
        .last()
        .expect("a line")
        .starts_with("300000 of 300000 tuples (100%) of pgbench_accounts"));
    assert!(
        progress.iter().all(|l| l.contains("pgbench_accounts")),
        "{progress:?}"
    );
    assert_eq!(progress.len(), 6, "{progress:?}");
    assert!(
        progress[0].starts_with("50000 of 300000 tuples (16%)"),
        "{progress:?}"
    );
}

#[test]
fn only_spaces_runs_nothing_and_prints_an_empty_summary() {
    let mut s = FakeSession::new();
    let (r, err) = run(
        &mut s,
        &InitSpec {
            steps: "  ".into(),
            ..InitSpec::default()
        },
    );
    r.expect("ok");
    assert_eq!(err, "done in 0.00 s ().\n");
    assert!(s.log.is_empty());
}
