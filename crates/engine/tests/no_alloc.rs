//! The client's hot path does not allocate in steady state: the real client machine,
//! script host (variables, PRNG, `\set` evaluation), recorder and thread streams run the
//! built-in scripts against a fake server that answers every request, and a counting
//! global allocator watches thousands of transactions after a warm-up.
//!
//! A test binary of its own: the global allocator is process-wide.

use std::sync::Arc;

use pgsurge_engine::client::{Client, ClientIo, ThreadCtx, Wait};
use pgsurge_engine::clock::{Now, RunClock};
use pgsurge_engine::driver::ThreadStreams;
use pgsurge_engine::plan::build_plan;
use pgsurge_engine::recorder::ThreadRecorder;
use pgsurge_engine::script_host::ClientScript;
use pgsurge_engine::stderr::StderrDiag;
use pgsurge_engine::{QueryMode, RunLimit, RunScript, RunSpec};
use pgsurge_results::stats::{StatsConfig, ThreadStats};
use pgsurge_script::{SeedStreams, Variables};
use pgsurge_testkit::{allocations, CountingAllocator};
use pgsurge_wire::ConnConfig;

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

fn msg(out: &mut Vec<u8>, tag: u8, body: &[u8]) {
    out.push(tag);
    out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(body);
}

/// A server that answers whatever the client sent: ParseComplete, BindComplete, NoData,
/// CommandComplete per Execute or Query, ReadyForQuery per Sync or Query. The
/// transaction status follows BEGIN/END so the script ends idle, as on a real server.
struct FakeServer {
    in_tx: bool,
    /// Statement texts by prepared name, learned from Parse.
    texts: Vec<(Vec<u8>, Vec<u8>)>,
    /// Text of the statement bound last.
    bound: Vec<u8>,
    reply: Vec<u8>,
}

impl FakeServer {
    fn new() -> Self {
        FakeServer {
            in_tx: false,
            texts: Vec::new(),
            bound: Vec::with_capacity(256),
            reply: Vec::with_capacity(4096),
        }
    }

    fn status(&mut self, sql: &[u8]) {
        let s = sql.trim_ascii_start();
        if s.len() >= 5 && s[..5].eq_ignore_ascii_case(b"begin") {
            self.in_tx = true;
        } else if s.len() >= 3 && s[..3].eq_ignore_ascii_case(b"end") {
            self.in_tx = false;
        }
    }

    fn ready(&mut self) {
        let st = if self.in_tx { b'T' } else { b'I' };
        msg(&mut self.reply, b'Z', &[st]);
    }

    fn answer(&mut self, mut req: &[u8], inbuf: &mut bytes::BytesMut) {
        self.reply.clear();
        while req.len() >= 5 {
            let tag = req[0];
            let len = u32::from_be_bytes([req[1], req[2], req[3], req[4]]) as usize;
            let body = &req[5..1 + len];
            req = &req[1 + len..];
            let cstr = |b: &[u8]| -> usize { b.iter().position(|&c| c == 0).unwrap_or(b.len()) };
            match tag {
                b'P' => {
                    let n = cstr(body);
                    let name = &body[..n];
                    let rest = &body[n + 1..];
                    let text = &rest[..cstr(rest)];
                    if !self.texts.iter().any(|(k, _)| k == name) {
                        self.texts.push((name.to_vec(), text.to_vec()));
                    }
                    self.bound.clear();
                    self.bound.extend_from_slice(text);
                    msg(&mut self.reply, b'1', b"");
                }
                b'B' => {
                    let p = cstr(body);
                    let rest = &body[p + 1..];
                    let name = &rest[..cstr(rest)];
                    if !name.is_empty() {
                        if let Some((_, t)) = self.texts.iter().find(|(k, _)| k == name) {
                            self.bound.clear();
                            self.bound.extend_from_slice(t);
                        }
                    }
                    msg(&mut self.reply, b'2', b"");
                }
                b'D' => msg(&mut self.reply, b'n', b""),
                b'E' => {
                    let sql = std::mem::take(&mut self.bound);
                    self.status(&sql);
                    self.bound = sql;
                    msg(&mut self.reply, b'C', b"UPDATE 1\0");
                }
                b'S' => self.ready(),
                b'Q' => {
                    let sql = &body[..cstr(body)];
                    self.status(sql);
                    msg(&mut self.reply, b'C', b"UPDATE 1\0");
                    self.ready();
                }
                other => panic!("unexpected frontend message {:?}", other as char),
            }
        }
        inbuf.extend_from_slice(&self.reply);
    }
}

/// Runs `-b <builtin> -M <mode>` for `warmup` then `measured` transactions; returns the
/// allocations counted during the measured ones.
fn allocations_in_steady_state(builtin: &str, mode: &str, per_command: bool) -> u64 {
    let conn = ConnConfig::parse("host=/nonexistent dbname=x").expect("conninfo");
    let mut spec = RunSpec::new(conn, vec![RunScript::builtin(builtin, 1).expect("builtin")]);
    spec.query_mode = QueryMode::parse(mode).expect("query mode");
    spec.limit = RunLimit::Transactions(1_000_000);
    spec.random_seed = 7;
    spec.output.per_command = per_command;
    let scripts = Arc::new(spec.scripts.iter().map(|s| s.script.clone()).collect());
    let plan = build_plan(&spec).expect("plan");
    let seeds = SeedStreams::new(7, 1, 1);
    let mut vars = Variables::new();
    vars.set_int("option", "scale", 10).expect("scale");
    let host = ClientScript::new(Arc::clone(&scripts), vars, seeds.clients[0]);
    let mut client = Client::new(0, host);
    let mut io = ClientIo::default();
    client.connected(&mut io);
    let config = StatsConfig {
        detailed: false,
        throttled: false,
        latency_limit_us: None,
        histograms: false,
        per_command,
        script_commands: plan.scripts.iter().map(|s| s.commands.len()).collect(),
    };
    let clock = RunClock::new();
    let mut rec = ThreadRecorder::new(ThreadStats::new(&config), None, clock);
    let ts = &seeds.threads[0];
    let mut streams = ThreadStreams {
        choose: ts.choose,
        throttle: ts.throttle,
    };
    let mut diag = StderrDiag::new(false);
    let mut server = FakeServer::new();
    let mut txns = 0u64;
    let mut now = 0i64;
    let mut counted_from = None;
    let (warmup, measured) = (200u64, 5000u64);
    while txns < warmup + measured {
        if txns >= warmup && counted_from.is_none() {
            counted_from = Some(allocations());
        }
        let mut ctx = ThreadCtx {
            plan: &plan,
            rng: &mut streams,
            schedule: None,
            end_us: 0,
            timer_exceeded: false,
            rec: &mut rec,
            diag: &mut diag,
            debug: false,
        };
        now += 10;
        let wait = client.advance(&mut ctx, &mut io, &mut Now::fixed(now));
        txns = client.count() as u64;
        match wait {
            Wait::Read => {
                assert!(!io.out.is_empty(), "waiting for input with nothing sent");
                server.answer(&io.out, &mut io.inbuf);
                io.out.clear();
            }
            Wait::Yield => {}
            other => panic!("unexpected wait {other:?} after {txns} transactions"),
        }
    }
    assert_eq!(client.count() as u64, warmup + measured);
    assert!(!client.is_aborted());
    allocations() - counted_from.expect("warm-up reached")
}

#[test]
fn tpcb_like_transactions_do_not_allocate_in_any_query_mode() {
    for mode in ["simple", "extended", "prepared"] {
        let n = allocations_in_steady_state("tpcb-like", mode, false);
        assert_eq!(n, 0, "-M {mode}: {n} allocations in 5000 transactions");
    }
}

#[test]
fn select_only_with_per_command_latencies_does_not_allocate() {
    let n = allocations_in_steady_state("select-only", "prepared", true);
    assert_eq!(n, 0, "{n} allocations in 5000 transactions");
}

/// The counter sees allocations at all (the test could fail).
#[test]
fn the_counting_allocator_counts() {
    let before = allocations();
    let v: Vec<u8> = Vec::with_capacity(std::hint::black_box(64));
    std::hint::black_box(&v);
    assert!(allocations() > before);
}
