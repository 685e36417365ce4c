//! State-machine tests: the client runs against a fake clock (plain integers), scripted
//! server bytes and fake script/rng/recorder implementations. Nothing sleeps and nothing
//! touches the network.

use pgsurge_script::VarName;
use std::collections::HashMap;

use crate::client::*;
use crate::clock::Now;
use crate::plan::*;
use crate::sqltext::{to_param_sql, SqlTemplate};
use crate::throttle::ThrottleSchedule;

// ---------- fakes ----------

#[derive(Default)]
struct FakeHost {
    vars: HashMap<String, String>,
    /// Per (script, cmd): what exec_meta returns.
    metas: HashMap<(usize, usize), Result<MetaValue, MetaFailure>>,
    saves: u32,
    restores: u32,
}

impl ScriptHost for FakeHost {
    fn write_var(&mut self, name: &VarName, out: &mut Vec<u8>) -> bool {
        match self.vars.get(name.as_str()) {
            Some(v) => {
                out.extend_from_slice(v.as_bytes());
                true
            }
            None => false,
        }
    }
    fn exec_meta(&mut self, script: usize, cmd: usize) -> Result<MetaValue, MetaFailure> {
        self.metas
            .get(&(script, cmd))
            .cloned()
            .unwrap_or(Ok(MetaValue::Done))
    }
    fn store_var(&mut self, name: &str, value: &[u8], _aset: bool) -> Result<(), String> {
        if name.contains('?') {
            return Err(format!("gset: invalid variable name: \"{name}\""));
        }
        self.vars.insert(
            name.to_string(),
            String::from_utf8_lossy(value).into_owned(),
        );
        Ok(())
    }
    fn save_random_state(&mut self) {
        self.saves += 1;
    }
    fn restore_random_state(&mut self) {
        self.restores += 1;
    }
}

struct FakeRng {
    u: f64,
    choices: Vec<i64>,
}

impl ThreadRng for FakeRng {
    fn choose(&mut self, _total: i64) -> i64 {
        if self.choices.is_empty() {
            0
        } else {
            self.choices.remove(0)
        }
    }
    fn throttle_double(&mut self) -> f64 {
        self.u
    }
}

#[derive(Default)]
struct Rec {
    txns: Vec<TxnEnd>,
    cmd_lat: Vec<(usize, usize, i64)>,
    failures: Vec<(usize, usize)>,
    retries: Vec<(usize, usize)>,
}

impl Recorder for Rec {
    fn txn(&mut self, t: &TxnEnd) {
        self.txns.push(*t);
    }
    fn command_latency(&mut self, s: usize, c: usize, us: i64) {
        self.cmd_lat.push((s, c, us));
    }
    fn command_failure(&mut self, s: usize, c: usize) {
        self.failures.push((s, c));
    }
    fn command_retry(&mut self, s: usize, c: usize) {
        self.retries.push((s, c));
    }
}

#[derive(Default)]
struct Diag {
    errors: Vec<String>,
    infos: Vec<String>,
}

impl Diagnostics for Diag {
    fn error(&mut self, m: &str) {
        self.errors.push(m.to_string());
    }
    fn info(&mut self, m: &str) {
        self.infos.push(m.to_string());
    }
    fn debug_enabled(&self) -> bool {
        false
    }
    fn debug(&mut self, _m: &str) {}
    fn notice(&mut self, _t: &str) {}
}

// ---------- server bytes ----------

fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    v.extend_from_slice(body);
    v
}
fn ready(st: u8) -> Vec<u8> {
    msg(b'Z', &[st])
}
fn complete(tag: &str) -> Vec<u8> {
    let mut b = tag.as_bytes().to_vec();
    b.push(0);
    msg(b'C', &b)
}
fn error(code: &str, text: &str) -> Vec<u8> {
    let b = format!("SERROR\0C{code}\0M{text}\0\0");
    msg(b'E', b.as_bytes())
}
fn row_desc(names: &[&str]) -> Vec<u8> {
    let mut b = (names.len() as u16).to_be_bytes().to_vec();
    for n in names {
        b.extend_from_slice(n.as_bytes());
        b.push(0);
        b.extend_from_slice(&[0; 18]);
    }
    msg(b'T', &b)
}
fn data_row(vals: &[&str]) -> Vec<u8> {
    let mut b = (vals.len() as u16).to_be_bytes().to_vec();
    for v in vals {
        b.extend_from_slice(&(v.len() as u32).to_be_bytes());
        b.extend_from_slice(v.as_bytes());
    }
    msg(b'D', &b)
}

/// The tags of the frontend messages in `out`.
fn tags(out: &[u8]) -> String {
    let mut s = String::new();
    let mut rest = out;
    while let Some(used) = pgsurge_wire::codec::peek_len(rest).filter(|&n| n <= rest.len()) {
        s.push(rest[0] as char);
        rest = &rest[used..];
    }
    s
}

// ---------- plan helpers ----------

fn sql(text: &str, mode: QueryMode) -> CommandPlan {
    let form = match mode {
        QueryMode::Simple => SqlForm::Simple(SqlTemplate::new(text)),
        _ => SqlForm::Params(to_param_sql(text).unwrap()),
    };
    CommandPlan {
        first_line: text.to_string(),
        kind: CommandKind::Sql(SqlPlan::new(
            form,
            (mode == QueryMode::Prepared).then(|| "P_0".into()),
            None,
        )),
    }
}
fn meta(tag: MetaTag, name: &str) -> CommandPlan {
    CommandPlan {
        first_line: format!("\\{name}"),
        kind: CommandKind::Meta {
            tag,
            name: name.into(),
            trace: format!("\\{name}").into(),
        },
    }
}
fn plan(commands: Vec<CommandPlan>, config: MachineConfig) -> Plan {
    Plan::new(
        vec![ScriptPlan {
            desc: "test.sql".into(),
            weight: 1,
            commands,
            keying_us: 0,
            think_mean_us: 0,
        }],
        config,
    )
}

struct World {
    rng: FakeRng,
    sched: Option<ThrottleSchedule>,
    rec: Rec,
    diag: Diag,
    io: ClientIo,
    timer_exceeded: bool,
    end_us: i64,
}

impl World {
    fn new() -> Self {
        let io = ClientIo {
            connected: true,
            ..Default::default()
        };
        World {
            rng: FakeRng {
                u: 0.5,
                choices: vec![],
            },
            sched: None,
            rec: Rec::default(),
            diag: Diag::default(),
            io,
            timer_exceeded: false,
            end_us: 0,
        }
    }
    fn step(&mut self, c: &mut Client<FakeHost>, p: &Plan, now: i64) -> Wait {
        let debug = self.diag.debug_enabled();
        let mut ctx = ThreadCtx {
            plan: p,
            rng: &mut self.rng,
            schedule: self.sched.as_mut(),
            end_us: self.end_us,
            timer_exceeded: self.timer_exceeded,
            rec: &mut self.rec,
            diag: &mut self.diag,
            debug,
        };
        c.advance(&mut ctx, &mut self.io, &mut Now::fixed(now))
    }
    fn feed(&mut self, parts: &[Vec<u8>]) {
        for p in parts {
            self.io.inbuf.extend_from_slice(p);
        }
    }
    fn take_out(&mut self) -> Vec<u8> {
        std::mem::take(&mut self.io.out)
    }
}

fn new_client() -> Client<FakeHost> {
    let mut host = FakeHost::default();
    host.vars.insert("a".into(), "5".into());
    let mut c = Client::new(0, host);
    let mut io = ClientIo::default();
    c.connected(&mut io);
    c
}

// ---------- tests ----------

#[test]
fn simple_mode_sends_one_query_and_counts_latency_from_fake_clock() {
    let p = plan(
        vec![sql("SELECT :a", QueryMode::Simple)],
        MachineConfig {
            nxacts: 2,
            per_command: true,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 1_000), Wait::Read);
    let out = w.take_out();
    assert_eq!(out, b"Q\0\0\0\x0dSELECT 5\0");
    // Partial answer: still waiting.
    w.feed(&[complete("SELECT 1")]);
    assert_eq!(w.step(&mut c, &p, 1_200), Wait::Read);
    w.feed(&[ready(b'I')]);
    // The transaction ends and the next one is sent in the same call, at the same time.
    assert_eq!(w.step(&mut c, &p, 1_700), Wait::Read);
    assert_eq!(w.rec.txns.len(), 1);
    assert_eq!(w.rec.txns[0].latency_us, 700);
    assert_eq!(w.rec.txns[0].txn_no, 1);
    assert_eq!(w.rec.cmd_lat, vec![(0, 0, 700)]);
    assert_eq!(w.take_out(), b"Q\0\0\0\x0dSELECT 5\0");
    w.feed(&[complete("SELECT 1"), ready(b'I')]);
    assert_eq!(w.step(&mut c, &p, 2_500), Wait::Done);
    assert_eq!(c.state(), ClientState::Finished);
    assert_eq!(c.count(), 2);
}

#[test]
fn prepared_mode_prepares_once_per_connection_then_binds() {
    let p = plan(
        vec![sql("SELECT :a, :nosuch", QueryMode::Prepared)],
        MachineConfig {
            mode: QueryMode::Prepared,
            nxacts: 2,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    assert_eq!(tags(&w.take_out()), "PS");
    w.feed(&[msg(b'1', b""), ready(b'I')]);
    assert_eq!(w.step(&mut c, &p, 10), Wait::Read);
    let out = w.take_out();
    assert_eq!(tags(&out), "BDES");
    // :nosuch is undefined -> NULL parameter (-1 length).
    assert!(out.windows(4).any(|x| x == [0xff, 0xff, 0xff, 0xff]));
    w.feed(&[
        msg(b'2', b""),
        row_desc(&["x"]),
        data_row(&["5"]),
        complete("SELECT 1"),
        ready(b'I'),
    ]);
    assert_eq!(w.step(&mut c, &p, 20), Wait::Read);
    assert_eq!(
        tags(&w.take_out()),
        "BDES",
        "second transaction must not re-prepare"
    );
}

#[test]
fn extended_mode_sends_unnamed_parse_bind_describe_execute_sync() {
    let p = plan(
        vec![sql("SELECT :a", QueryMode::Extended)],
        MachineConfig {
            mode: QueryMode::Extended,
            nxacts: 1,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    assert_eq!(tags(&w.take_out()), "PBDES");
}

#[test]
fn throttle_waits_for_schedule_and_records_lag() {
    let p = plan(
        vec![sql("SELECT 1", QueryMode::Simple)],
        MachineConfig {
            nxacts: 1,
            throttle: true,
            ..Default::default()
        },
    );
    let mut w = World::new();
    w.sched = Some(ThrottleSchedule::new(1000.0, 1, 0)); // mean 1000 us
    let mut c = new_client();
    // u = 0.5 -> first slot at 693 us.
    assert_eq!(w.step(&mut c, &p, 100), Wait::Until(693));
    assert_eq!(w.step(&mut c, &p, 500), Wait::Until(693));
    // Woken late: 900 us -> lag 207.
    assert_eq!(w.step(&mut c, &p, 900), Wait::Read);
    w.take_out();
    w.feed(&[complete("SELECT 1"), ready(b'I')]);
    assert_eq!(w.step(&mut c, &p, 1_400), Wait::Done);
    let t = w.rec.txns[0];
    assert_eq!((t.lag_us, t.latency_us), (207, 707));
}

#[test]
fn late_slots_are_skipped_under_latency_limit() {
    let p = plan(
        vec![sql("SELECT 1", QueryMode::Simple)],
        MachineConfig {
            nxacts: 3,
            throttle: true,
            latency_limit_us: 1_000,
            ..Default::default()
        },
    );
    let mut w = World::new();
    w.sched = Some(ThrottleSchedule::new(1000.0, 1, 0));
    let mut c = new_client();
    // now = 3 ms: slots 693 and 1386 are older than now - 1 ms -> skipped; 2079 runs.
    assert_eq!(w.step(&mut c, &p, 3_000), Wait::Read);
    let skipped: Vec<_> = w.rec.txns.iter().map(|t| (t.status, t.txn_no)).collect();
    assert_eq!(
        skipped,
        vec![(TxnStatus::Skipped, 1), (TxnStatus::Skipped, 2)]
    );
    w.take_out();
    w.feed(&[complete("SELECT 1"), ready(b'I')]);
    assert_eq!(
        w.step(&mut c, &p, 3_100),
        Wait::Done,
        "-t 3 reached by 2 skips + 1 run"
    );
    assert_eq!(w.rec.txns[2].status, TxnStatus::Success);
    assert_eq!(w.rec.txns[2].lag_us, 3_000 - 2_079);
}

#[test]
fn serialization_error_in_block_rolls_back_and_retries_then_fails() {
    let p = plan(
        vec![
            sql("BEGIN", QueryMode::Simple),
            sql("UPDATE t SET v = v + 1", QueryMode::Simple),
            sql("END", QueryMode::Simple),
        ],
        MachineConfig {
            nxacts: 1,
            max_tries: 2,
            verbose_errors: true,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    for attempt in 0..2 {
        assert_eq!(w.step(&mut c, &p, 10), Wait::Read);
        w.take_out();
        w.feed(&[complete("BEGIN"), ready(b'T')]);
        assert_eq!(w.step(&mut c, &p, 20), Wait::Read);
        w.take_out();
        w.feed(&[error("40001", "could not serialize access"), ready(b'E')]);
        // The machine sends ROLLBACK (simple protocol) and waits for it.
        assert_eq!(w.step(&mut c, &p, 30), Wait::Read);
        assert_eq!(w.take_out(), b"Q\0\0\0\x0dROLLBACK\0", "attempt {attempt}");
        w.feed(&[complete("ROLLBACK"), ready(b'I')]);
    }
    assert_eq!(w.step(&mut c, &p, 40), Wait::Done);
    assert_eq!(w.rec.retries, vec![(0, 1)]);
    assert_eq!(w.rec.failures, vec![(0, 1)]);
    assert_eq!(c.host.restores, 1, "PRNG restored once, for the one retry");
    let t = w.rec.txns[0];
    assert_eq!((t.status, t.tries), (TxnStatus::Serialization, 2));
    assert!(w.diag.infos[0].starts_with(
        "client 0 got an error in command 1 (SQL) of script 0; ERROR:  could not serialize access"
    ));
    assert_eq!(
        w.diag.infos[1],
        "client 0 repeats the transaction after the error (try 1/2)"
    );
    assert_eq!(
        w.diag.infos[3],
        "client 0 ends the failed transaction (try 2/2)"
    );
    assert!(!c.is_aborted());
}

#[test]
fn latency_limit_ends_retries() {
    let p = plan(
        vec![sql("SELECT 1", QueryMode::Simple)],
        MachineConfig {
            nxacts: 1,
            max_tries: 0,
            latency_limit_us: 1_000,
            verbose_errors: true,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    w.take_out();
    w.feed(&[error("40P01", "deadlock detected"), ready(b'I')]);
    // 2 ms after the start: over the 1 ms limit -> no retry.
    assert_eq!(w.step(&mut c, &p, 2_000), Wait::Done);
    assert_eq!(w.rec.txns[0].status, TxnStatus::Deadlock);
    assert!(w.rec.retries.is_empty());
    assert_eq!(
        w.diag.infos.last().unwrap(),
        "client 0 ends the failed transaction (try 1, 200.000% of the maximum time of tries was used)"
    );
}

#[test]
fn other_sql_error_aborts_client_with_pgbench_message() {
    let p = plan(
        vec![sql("SELECT nosuch", QueryMode::Simple)],
        MachineConfig::default(),
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    w.feed(&[
        error("42703", "column \"nosuch\" does not exist"),
        ready(b'I'),
    ]);
    assert_eq!(w.step(&mut c, &p, 5), Wait::Done);
    assert!(c.is_aborted());
    assert_eq!(
        w.diag.errors,
        vec!["client 0 script 0 aborted in command 0 query 0: ERROR:  column \"nosuch\" does not exist"]
    );
    assert!(
        w.rec.txns.is_empty(),
        "aborted transactions are not counted"
    );
}

#[test]
fn timer_during_transaction_lets_it_finish_then_stops() {
    let p = plan(
        vec![sql("SELECT 1", QueryMode::Simple)],
        MachineConfig {
            nxacts: 0,
            timed: true,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    w.take_out();
    w.timer_exceeded = true; // Ctrl-C or -T while the query runs
    assert_eq!(
        w.step(&mut c, &p, 10),
        Wait::Read,
        "in-flight transaction is not abandoned"
    );
    w.feed(&[complete("SELECT 1"), ready(b'I')]);
    assert_eq!(w.step(&mut c, &p, 20), Wait::Done);
    assert_eq!(w.rec.txns.len(), 1);
    assert_eq!(c.state(), ClientState::Finished);
    assert!(!c.is_aborted());
}

#[test]
fn gset_stores_columns_and_rejects_wrong_row_count() {
    let mut cmd = sql("SELECT 1 AS one", QueryMode::Simple);
    if let CommandKind::Sql(s) = &mut cmd.kind {
        s.capture = Some(Capture {
            prefix: "p_".into(),
            all: false,
        });
    }
    let p = plan(
        vec![cmd],
        MachineConfig {
            nxacts: 2,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    w.feed(&[
        row_desc(&["one"]),
        data_row(&["1"]),
        complete("SELECT 1"),
        ready(b'I'),
    ]);
    assert_eq!(w.step(&mut c, &p, 1), Wait::Read);
    assert_eq!(c.host.vars.get("p_one").map(String::as_str), Some("1"));
    w.feed(&[row_desc(&["one"]), complete("SELECT 0"), ready(b'I')]);
    assert_eq!(w.step(&mut c, &p, 3), Wait::Done);
    assert!(c.is_aborted());
    assert_eq!(
        w.diag.errors,
        vec!["client 0 script 0 command 0 query 0: expected one row, got 0"]
    );
}

#[test]
fn pipeline_sends_everything_then_one_sync_and_reads_all_results() {
    let p = plan(
        vec![
            meta(MetaTag::StartPipeline, "startpipeline"),
            sql("SELECT 1", QueryMode::Extended),
            sql("SELECT 2", QueryMode::Extended),
            meta(MetaTag::SyncPipeline, "syncpipeline"),
            sql("SELECT 3", QueryMode::Extended),
            meta(MetaTag::EndPipeline, "endpipeline"),
        ],
        MachineConfig {
            mode: QueryMode::Extended,
            nxacts: 1,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    assert_eq!(tags(&w.take_out()), "PBDEPBDESPBDES");
    let result = |v: &str| {
        vec![
            msg(b'1', b""),
            msg(b'2', b""),
            row_desc(&["x"]),
            data_row(&[v]),
            complete("SELECT 1"),
        ]
    };
    let mut bytes = result("1");
    bytes.extend(result("2"));
    bytes.push(ready(b'I'));
    w.feed(&bytes);
    assert_eq!(
        w.step(&mut c, &p, 1),
        Wait::Read,
        "second sync still pending"
    );
    let mut bytes = result("3");
    bytes.push(ready(b'I'));
    w.feed(&bytes);
    assert_eq!(w.step(&mut c, &p, 2), Wait::Done);
    assert_eq!(w.rec.txns.len(), 1);
    assert!(!c.is_aborted());
}

#[test]
fn pipeline_restrictions_abort_like_pgbench() {
    let p = plan(
        vec![meta(MetaTag::StartPipeline, "startpipeline")],
        MachineConfig::default(),
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Done);
    assert_eq!(w.diag.errors, vec!["client 0 aborted in command 0 (startpipeline) of script 0; cannot use pipeline mode with the simple query protocol"]);

    let p = plan(
        vec![meta(MetaTag::StartPipeline, "startpipeline")],
        MachineConfig {
            mode: QueryMode::Extended,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Done);
    assert_eq!(
        w.diag.errors,
        vec!["client 0 aborted: end of script reached with pipeline open"]
    );
}

#[test]
fn meta_failure_prints_cause_then_abort_line() {
    let p = plan(vec![meta(MetaTag::Set, "set")], MachineConfig::default());
    let mut w = World::new();
    let mut c = new_client();
    c.host.metas.insert(
        (0, 0),
        Err(MetaFailure {
            causes: vec!["division by zero".into()],
            summary: "evaluation of meta-command failed",
        }),
    );
    assert_eq!(w.step(&mut c, &p, 0), Wait::Done);
    assert_eq!(
        w.diag.errors,
        vec![
            "division by zero",
            "client 0 aborted in command 0 (set) of script 0; evaluation of meta-command failed"
        ]
    );
}

#[test]
fn sleep_and_conditionals_follow_the_fake_clock() {
    let p = plan(
        vec![
            meta(MetaTag::If, "if"),
            meta(MetaTag::Sleep, "sleep"),
            meta(MetaTag::Else, "else"),
            sql("SELECT 1", QueryMode::Simple),
            meta(MetaTag::Endif, "endif"),
        ],
        MachineConfig {
            nxacts: 1,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    c.host.metas.insert((0, 0), Ok(MetaValue::Truth(true)));
    c.host.metas.insert((0, 1), Ok(MetaValue::SleepUs(5_000)));
    assert_eq!(w.step(&mut c, &p, 100), Wait::Until(5_100));
    assert_eq!(
        w.step(&mut c, &p, 5_100),
        Wait::Done,
        "else branch skipped, no SQL sent"
    );
    assert!(w.io.out.is_empty());
    assert_eq!(w.rec.txns[0].latency_us, 5_000);
}

#[test]
fn connection_loss_while_waiting_aborts_the_client() {
    let p = plan(
        vec![sql("SELECT 1", QueryMode::Simple)],
        MachineConfig::default(),
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    c.connection_lost(&mut w.io);
    assert_eq!(w.step(&mut c, &p, 1), Wait::Done);
    assert!(c.is_aborted());
    assert_eq!(
        w.diag.errors,
        vec!["client 0 aborted in command 0 (SQL) of script 0; perhaps the backend died while processing"]
    );
}

#[test]
fn connect_per_transaction_asks_driver_to_connect_and_disconnect() {
    let p = plan(
        vec![sql("SELECT 1", QueryMode::Simple)],
        MachineConfig {
            nxacts: 2,
            connect_per_txn: true,
            ..Default::default()
        },
    );
    let mut w = World::new();
    w.io.connected = false;
    let mut c = Client::new(0, FakeHost::default());
    assert_eq!(w.step(&mut c, &p, 0), Wait::Connect);
    c.connected(&mut w.io);
    assert_eq!(w.step(&mut c, &p, 1), Wait::Read);
    w.feed(&[complete("SELECT 1"), ready(b'I')]);
    assert_eq!(w.step(&mut c, &p, 2), Wait::Disconnect);
    w.io.connected = false;
    assert_eq!(w.step(&mut c, &p, 3), Wait::Connect);
}

#[test]
fn weighted_script_choice_uses_thread_stream() {
    let mut p = plan(
        vec![sql("SELECT 1", QueryMode::Simple)],
        MachineConfig {
            nxacts: 1,
            ..Default::default()
        },
    );
    p.scripts.push(ScriptPlan {
        desc: "b".into(),
        weight: 3,
        commands: vec![sql("SELECT 2", QueryMode::Simple)],
        keying_us: 0,
        think_mean_us: 0,
    });
    p.total_weight = 4;
    let mut w = World::new();
    w.rng.choices = vec![2]; // 2 - 1 >= 0, 1 - 3 < 0 -> script 1
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    assert_eq!(w.take_out(), b"Q\0\0\0\x0dSELECT 2\0");
}

// ---------- query text under errors (libpq's errQuery rule) ----------

fn error_at(code: &str, text: &str, position: usize) -> Vec<u8> {
    let b = format!("SERROR\0C{code}\0M{text}\0P{position}\0\0");
    msg(b'E', b.as_bytes())
}

/// Runs one transaction of `commands` in `mode`, answering the first wait with `reply`
/// (after a ParseComplete+ReadyForQuery for a prepare, in prepared mode), and returns the
/// error lines.
fn errors_after(mode: QueryMode, text: &str, reply: Vec<Vec<u8>>) -> Vec<String> {
    let p = plan(
        vec![sql(text, mode)],
        MachineConfig {
            mode,
            nxacts: 1,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    if mode == QueryMode::Prepared {
        w.feed(&[msg(b'1', b""), ready(b'I')]);
        assert_eq!(w.step(&mut c, &p, 1), Wait::Read);
    }
    w.feed(&reply);
    assert_eq!(w.step(&mut c, &p, 2), Wait::Done);
    assert!(c.is_aborted());
    w.diag.errors
}

#[test]
fn error_position_shows_the_text_libpq_remembered_per_mode() {
    let reply = || {
        vec![
            error_at("42703", "column \"nosuch\" does not exist", 10),
            ready(b'I'),
        ]
    };
    let head =
        "client 0 script 0 aborted in command 0 query 0: ERROR:  column \"nosuch\" does not exist";
    // Simple: the text with variables substituted (PQsendQuery).
    assert_eq!(
        errors_after(QueryMode::Simple, "SELECT :a, nosuch", reply()),
        vec![format!(
            "{head}\nLINE 1: SELECT 5, nosuch\n                 ^"
        )]
    );
    // Extended: the `$n` text (PQsendQueryParams).
    assert_eq!(
        errors_after(QueryMode::Extended, "SELECT :a,nosuch", reply()),
        vec![format!(
            "{head}\nLINE 1: SELECT $1,nosuch\n                 ^"
        )]
    );
    // Prepared: PQsendQueryPrepared keeps no text, so the position is printed as a number.
    assert_eq!(
        errors_after(QueryMode::Prepared, "SELECT :a,nosuch", reply()),
        vec![format!("{head} at character 10")]
    );
}

#[test]
fn prepare_error_shows_the_prepared_text() {
    let p = plan(
        vec![sql("SELECT :a,\n  nosuch", QueryMode::Prepared)],
        MachineConfig {
            mode: QueryMode::Prepared,
            nxacts: 1,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    w.feed(&[
        error_at("42703", "column \"nosuch\" does not exist", 14),
        ready(b'I'),
    ]);
    assert_eq!(w.step(&mut c, &p, 1), Wait::Read);
    assert_eq!(
        w.diag.errors,
        vec!["ERROR:  column \"nosuch\" does not exist\nLINE 2:   nosuch\n          ^"]
    );
}

#[test]
fn pipeline_error_shows_the_failing_commands_text() {
    let p = plan(
        vec![
            meta(MetaTag::StartPipeline, "startpipeline"),
            sql("SELECT 1", QueryMode::Extended),
            sql("SELECT nosuch", QueryMode::Extended),
            sql("SELECT 3", QueryMode::Extended),
            meta(MetaTag::EndPipeline, "endpipeline"),
        ],
        MachineConfig {
            mode: QueryMode::Extended,
            nxacts: 1,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    w.feed(&[
        msg(b'1', b""),
        msg(b'2', b""),
        row_desc(&["x"]),
        data_row(&["1"]),
        complete("SELECT 1"),
        error_at("42703", "column \"nosuch\" does not exist", 8),
        ready(b'I'),
    ]);
    assert_eq!(w.step(&mut c, &p, 1), Wait::Done);
    assert_eq!(
        w.diag.errors,
        vec!["client 0 script 0 aborted in command 4 query 0: ERROR:  column \"nosuch\" does not exist\nLINE 1: SELECT nosuch\n               ^"]
    );
}

/// After a `\syncpipeline`, libpq hands out the sync result and the next command's
/// result without a NULL between them, so pgbench numbers that command's error query 1.
#[test]
fn pipeline_error_after_a_sync_is_query_1() {
    let p = plan(
        vec![
            meta(MetaTag::StartPipeline, "startpipeline"),
            sql("SELECT 1", QueryMode::Extended),
            meta(MetaTag::SyncPipeline, "syncpipeline"),
            sql("SELECT nosuch", QueryMode::Extended),
            meta(MetaTag::EndPipeline, "endpipeline"),
        ],
        MachineConfig {
            mode: QueryMode::Extended,
            nxacts: 1,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    w.feed(&[
        msg(b'1', b""),
        msg(b'2', b""),
        msg(b'n', b""),
        complete("SELECT 1"),
        ready(b'T'),
        error_at("42703", "column \"nosuch\" does not exist", 8),
        ready(b'I'),
    ]);
    assert_eq!(w.step(&mut c, &p, 1), Wait::Done);
    assert_eq!(
        w.diag.errors,
        vec!["client 0 script 0 aborted in command 4 query 1: ERROR:  column \"nosuch\" does not exist\nLINE 1: SELECT nosuch\n               ^"]
    );
}

/// Simple mode shows the text as sent even when an `\aset` of the same command changed a
/// substituted variable before the failing statement.
#[test]
fn aset_error_shows_the_text_as_sent() {
    let mut cmd = sql("SELECT 7 AS a ; SELECT :a, nosuch", QueryMode::Simple);
    if let CommandKind::Sql(s) = &mut cmd.kind {
        s.capture = Some(Capture {
            prefix: String::new(),
            all: true,
        });
    }
    let p = plan(vec![cmd], MachineConfig::default());
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Read);
    w.feed(&[
        row_desc(&["a"]),
        data_row(&["7"]),
        complete("SELECT 1"),
        error_at("42703", "column \"nosuch\" does not exist", 27),
        ready(b'I'),
    ]);
    assert_eq!(w.step(&mut c, &p, 1), Wait::Done);
    assert_eq!(c.host.vars["a"], "7", "the \\aset ran before the error");
    assert_eq!(
        w.diag.errors,
        vec!["client 0 script 0 aborted in command 0 query 1: ERROR:  column \"nosuch\" does not exist\nLINE 1: SELECT 7 AS a ; SELECT 5, nosuch\n                                  ^"]
    );
}

/// The header-only reader gives the replies and lengths the full decoder gives for the
/// messages of a plain answer, and leaves everything else (captures, errors, broken
/// rows, incomplete input) to it.
#[test]
fn plain_replies_match_the_full_decoder() {
    use super::reply::ReplyState;
    let plain = [
        msg(b'1', b""),
        msg(b'2', b""),
        msg(b'3', b""),
        msg(b'n', b""),
        row_desc(&["aid", "abalance"]),
        data_row(&["1", "-5"]),
        complete("SELECT 1"),
        complete("UPDATE 1"),
        ready(b'I'),
        ready(b'T'),
        ready(b'E'),
    ];
    for m in &plain {
        let (mut a, mut b) = (ReplyState::default(), ReplyState::default());
        let fast = a.next_plain(m).expect("a plain message");
        let mut diag = Diag::default();
        let full = b
            .next(m, &mut diag, &mut |_: &mut Vec<u8>| false)
            .unwrap()
            .unwrap();
        assert_eq!((fast.0, fast.1), (full.0, full.1), "{m:?}");
        assert_eq!(fast.1, m.len());
        assert_eq!(a.captured_rows(), b.captured_rows());
    }
    let mut s = ReplyState::default();
    // Incomplete: the header says more than there is.
    let c = complete("SELECT 1");
    assert!(s.next_plain(&c[..c.len() - 1]).is_none());
    assert!(s.next_plain(&c[..3]).is_none());
    // A DataRow whose value runs past its end goes to the full decoder (which rejects it).
    assert!(s
        .next_plain(&msg(b'D', &[0, 1, 0, 0, 0, 9, b'x']))
        .is_none());
    // Errors, notices and captured rows are not plain.
    assert!(s
        .next_plain(&msg(b'E', b"SERROR\0C22012\0Mdivision by zero\0\0"))
        .is_none());
    s.capture = true;
    assert!(s.next_plain(&data_row(&["1"])).is_none());
    assert!(s.next_plain(&row_desc(&["x"])).is_none());
}

/// The plain messages before a result's end are consumed in one call, which returns
/// only the replies the machine acts on, with the bytes used up to them.
#[test]
fn plain_messages_are_consumed_up_to_the_next_significant_reply() {
    use super::reply::{Reply, ReplyState};
    let answer = [
        msg(b'2', b""),
        row_desc(&["abalance"]),
        data_row(&["0"]),
        complete("SELECT 1"),
        ready(b'I'),
    ];
    let bytes: Vec<u8> = answer.concat();
    let upto_complete: usize = answer[..4].iter().map(Vec::len).sum();
    let mut s = ReplyState::default();
    let (r, used) = s.next_plain_significant(&bytes);
    assert_eq!(r, Some(Reply::ResultDone));
    assert_eq!(used, upto_complete);
    assert_eq!(s.captured_rows(), 0);
    s.end_result();
    assert_eq!(s.last_ntuples, 1, "the row was counted on the way");
    let (r, used) = s.next_plain_significant(&bytes[upto_complete..]);
    assert!(matches!(r, Some(Reply::Ready(_))), "{r:?}");
    assert_eq!(used, answer[4].len());
    // An incomplete message after plain ones: those are consumed, nothing is returned.
    let cut = answer[0].len() + answer[1].len() + 3;
    let (r, used) = ReplyState::default().next_plain_significant(&bytes[..cut]);
    assert!(r.is_none());
    assert_eq!(used, answer[0].len() + answer[1].len());
    // Something not plain (an error) stops it the same way.
    let mut with_error = answer[0].clone();
    with_error.extend(msg(b'E', b"SERROR\0C22012\0Mdivision by zero\0\0"));
    let (r, used) = ReplyState::default().next_plain_significant(&with_error);
    assert!(r.is_none());
    assert_eq!(used, answer[0].len());
}

/// A client goes on to its next transaction in the same call, but one whose script
/// never waits (no SQL) gives the thread back after a bounded number of them.
#[test]
fn a_script_without_sql_yields_after_a_bounded_number_of_transactions() {
    let p = plan(
        vec![meta(MetaTag::Set, "set")],
        MachineConfig {
            nxacts: 100,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = new_client();
    assert_eq!(w.step(&mut c, &p, 0), Wait::Yield);
    assert_eq!(c.count(), i64::from(super::MAX_IMMEDIATE_TXNS));
    assert_eq!(w.step(&mut c, &p, 5), Wait::Yield);
    assert_eq!(c.count(), 2 * i64::from(super::MAX_IMMEDIATE_TXNS));
    assert!(w.take_out().is_empty());
}

#[test]
fn prepared_set_inline_and_beyond() {
    let mut p = PreparedSet::default();
    let cases = [
        (0, 0),
        (0, 31),
        (1, 31),
        (2, 0),
        (3, 31),
        (3, 32),
        (4, 0),
        (9, 200),
    ];
    for &(s, c) in &cases {
        assert!(!p.contains(s, c), "{s} {c}");
        p.insert(s, c);
        assert!(p.contains(s, c), "{s} {c}");
    }
    // neighbours are not set by their neighbours
    for (s, c) in [
        (0, 1),
        (1, 0),
        (1, 30),
        (2, 1),
        (2, 31),
        (3, 30),
        (4, 1),
        (9, 199),
        (10, 0),
    ] {
        assert!(!p.contains(s, c), "{s} {c}");
    }
    assert!(
        p.more.as_ref().is_some_and(|m| m.len() > 4),
        "commands beyond the inline bits use the table"
    );
    p.clear();
    assert!(cases.iter().all(|&(s, c)| !p.contains(s, c)));
}

fn paced_plan(keying_us: i64, think_mean_us: i64, config: MachineConfig) -> Plan {
    let mut p = plan(vec![sql("SELECT 1", QueryMode::Simple)], config);
    p.scripts[0].keying_us = keying_us;
    p.scripts[0].think_mean_us = think_mean_us;
    p
}

fn paced_client(weights: &[i64], deck: bool) -> Client<FakeHost> {
    new_client().with_pacing(Pacing::new(pgsurge_script::Prng::seed(1), weights, deck))
}

#[test]
fn keying_and_think_times_pause_the_client_outside_the_latency() {
    let p = paced_plan(
        5_000,
        1_000,
        MachineConfig {
            nxacts: 2,
            ..Default::default()
        },
    );
    let mut w = World::new();
    let mut c = paced_client(&[1], false);
    // Keying first: nothing is sent until it is over.
    assert_eq!(w.step(&mut c, &p, 0), Wait::Until(5_000));
    assert_eq!(c.state(), ClientState::Keying);
    assert!(w.take_out().is_empty());
    assert_eq!(w.step(&mut c, &p, 4_999), Wait::Until(5_000));
    assert_eq!(w.step(&mut c, &p, 5_000), Wait::Read);
    assert_eq!(w.take_out(), b"Q\0\0\0\x0dSELECT 1\0");
    w.feed(&[complete("SELECT 1"), ready(b'I')]);
    // The transaction took 300 µs; then the think time, then the next keying.
    let think_end = match w.step(&mut c, &p, 5_300) {
        Wait::Until(t) => t,
        other => panic!("{other:?}"),
    };
    assert_eq!(c.state(), ClientState::Think);
    assert!((5_300..=5_300 + 10_000).contains(&think_end), "{think_end}");
    assert_eq!(w.rec.txns.len(), 1);
    assert_eq!(w.rec.txns[0].latency_us, 300);
    assert_eq!(
        w.step(&mut c, &p, think_end),
        Wait::Until(think_end + 5_000)
    );
    assert_eq!(w.step(&mut c, &p, think_end + 5_000), Wait::Read);
    w.feed(&[complete("SELECT 1"), ready(b'I')]);
    // The last transaction is followed by no think time.
    assert_eq!(w.step(&mut c, &p, think_end + 5_100), Wait::Done);
    assert_eq!(w.rec.txns[1].latency_us, 100);
}

#[test]
fn the_end_of_the_run_ends_a_pause_at_once() {
    let p = paced_plan(
        100_000_000,
        100_000_000,
        MachineConfig {
            timed: true,
            nxacts: 0,
            ..Default::default()
        },
    );
    for state in [ClientState::Keying, ClientState::Think] {
        let mut w = World::new();
        let mut c = paced_client(&[1], false);
        assert!(matches!(w.step(&mut c, &p, 0), Wait::Until(_)));
        if state == ClientState::Think {
            w.step(&mut c, &p, 100_000_000);
            w.feed(&[complete("SELECT 1"), ready(b'I')]);
            assert!(matches!(w.step(&mut c, &p, 100_000_100), Wait::Until(_)));
        }
        assert_eq!(c.state(), state);
        w.timer_exceeded = true;
        assert_eq!(w.step(&mut c, &p, 100_000_200), Wait::Done);
        assert_eq!(c.state(), ClientState::Finished);
    }
}

#[test]
fn a_deck_deals_the_scripts_in_exact_proportion() {
    let mut p = plan(
        vec![sql("SELECT 1", QueryMode::Simple)],
        MachineConfig {
            nxacts: 30,
            mix: crate::spec::Mix::Deck,
            ..Default::default()
        },
    );
    p.scripts[0].weight = 2;
    p.scripts.push(ScriptPlan {
        desc: "b".into(),
        weight: 1,
        commands: vec![sql("SELECT 2", QueryMode::Simple)],
        keying_us: 0,
        think_mean_us: 0,
    });
    p.total_weight = 3;
    let mut w = World::new();
    // The thread's stream is never asked: every choice comes from the deck.
    w.rng.choices = vec![99; 1];
    let mut c = paced_client(&[2, 1], true);
    let mut now = 0;
    while w.step(&mut c, &p, now) != Wait::Done {
        w.take_out();
        w.feed(&[complete("SELECT 1"), ready(b'I')]);
        now += 10;
    }
    assert_eq!(w.rng.choices, vec![99]);
    let scripts: Vec<usize> = w.rec.txns.iter().map(|t| t.script).collect();
    assert_eq!(scripts.len(), 30);
    for deck in scripts.chunks(3) {
        assert_eq!(deck.iter().filter(|&&s| s == 0).count(), 2, "{scripts:?}");
    }
}
