//! A replay allocates nothing per statement once under way. A synthetic log of N
//! statements and one of 10·N, in each of the three formats, are read twice, and a
//! counting global allocator shows that the longer log costs no more allocations than
//! the shorter one but for fewer than N/100:
//!
//! * on one thread, deterministically: the log readers and the assembler, each
//!   statement encoded and its answer read by its session's protocol machine, and
//!   handed back to the assembler a fixed number of events later;
//! * through the reader thread's own code ([`read`]: events dealt in batches, batches
//!   and statements taken back) feeding a stand-in driver thread that plays each
//!   statement the same way and hands everything back through the driver's
//!   [`Returns`]. The reader allocates buffers until as many statements are away from
//!   it as can be at once (bounded by the channels: [`AWAY`]); how many that is
//!   depends on the threads' scheduling, so its bound adds them.
//!
//! A test binary of its own: the global allocator is process-wide.

use std::collections::{HashMap, VecDeque};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver};
use std::sync::{Arc, OnceLock};

use pgsurge_engine::clock::RunClock;
use pgsurge_engine::replay::reader::{read, ReaderCtx, Returns, BATCH};
use pgsurge_engine::StopFlag;
use pgsurge_replay::events::Event;
use pgsurge_replay::limits::Limits;
use pgsurge_replay::log::{LogFiles, LogFormat, DEFAULT_PREFIX};
use pgsurge_replay::machine::SessionMachine;
use pgsurge_replay::sessions::Assembler;
use pgsurge_replay::Pacing;
use pgsurge_testkit::{allocations, scratch_dir, CountingAllocator, ScratchDir};

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// Statements of the shorter log; the longer one has ten times as many.
const N: usize = 10_000;

/// Sessions of the synthetic logs.
const SESSIONS: usize = 16;

/// One logged message: its session, its text and its detail.
struct Line<'a> {
    session: usize,
    ms: usize,
    message: &'a str,
    detail: Option<&'a str>,
}

fn time(ms: usize) -> String {
    let s = ms / 1000;
    format!(
        "2026-11-28 {:02}:{:02}:{:02}.{:03} UTC",
        18 + s / 3600,
        s / 60 % 60,
        s % 60,
        ms % 1000
    )
}

fn quoted_csv(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

fn json_str(s: &str) -> String {
    let escaped = s
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n");
    format!("\"{escaped}\"")
}

fn write_line(out: &mut String, format: LogFormat, l: &Line<'_>) {
    let t = time(l.ms);
    let sid = format!("6565a1b2.{:x}", 0x100 + l.session);
    match format {
        LogFormat::Stderr => {
            // A statement's later lines are continued with a tab.
            let message = l.message.replace('\n', "\n\t");
            writeln!(out, "{t}|alice|shop|{sid}|LOG:  {message}").unwrap();
            if let Some(d) = l.detail {
                writeln!(out, "{t}|alice|shop|{sid}|DETAIL:  {d}").unwrap();
            }
        }
        LogFormat::Csvlog => {
            writeln!(
                out,
                "{t},\"alice\",\"shop\",{},\"[local]\",{sid},1,\"SELECT\",{t},3/1,0,LOG,00000,{},{},,,,,,,,\"psql\",\"client backend\",,0",
                100 + l.session,
                quoted_csv(l.message),
                l.detail.map(quoted_csv).unwrap_or_default()
            )
            .unwrap();
        }
        LogFormat::Jsonlog => {
            let mut o = format!(
                "{{\"timestamp\":\"{t}\",\"user\":\"alice\",\"dbname\":\"shop\",\"pid\":{},\"session_id\":\"{sid}\",\"error_severity\":\"LOG\",\"message\":{}",
                100 + l.session,
                json_str(l.message)
            );
            if let Some(d) = l.detail {
                write!(o, ",\"detail\":{}", json_str(d)).unwrap();
            }
            writeln!(out, "{o}}}").unwrap();
        }
    }
}

/// A log of `statements` statements over [`SESSIONS`] sessions: simple queries with
/// changing constants (one of two lines, but in jsonlog), executions of a named prepared statement and
/// of the unnamed one with their parameters, and a `duration:` line after each.
fn synthetic_log(dir: &Path, format: LogFormat, statements: usize, stem: &str) -> PathBuf {
    // A jsonlog text with a line break is escaped, and unescaping it takes a copy: the
    // jsonlog statements stay on one line.
    let break_ = if format == LogFormat::Jsonlog {
        " "
    } else {
        "\n"
    };
    let mut out = String::new();
    let mut line = |session, ms, message: &str, detail: Option<&str>| {
        let l = Line {
            session,
            ms,
            message,
            detail,
        };
        write_line(&mut out, format, &l);
    };
    for s in 0..SESSIONS {
        line(
            s,
            0,
            "connection authorized: user=alice database=shop",
            None,
        );
    }
    for i in 0..statements {
        let (s, ms) = (i % SESSIONS, 1 + i / 100);
        match i % 4 {
            0 => line(
                s,
                ms,
                &format!("statement: SELECT abalance FROM pgbench_accounts WHERE aid = {};", i * 7919 % 100_000),
                None,
            ),
            1 => line(
                s,
                ms,
                &format!(
                    "statement: UPDATE pgbench_tellers SET tbalance = tbalance + {}{break_}WHERE tid = {};",
                    i % 5000,
                    i % 10
                ),
                None,
            ),
            2 => line(
                s,
                ms,
                "execute P_1: UPDATE pgbench_accounts SET abalance = abalance + $1 WHERE aid = $2",
                Some(&format!(
                    "parameters: $1 = '{}', $2 = '{}'",
                    i % 5000,
                    i * 31 % 100_000
                )),
            ),
            _ => line(
                s,
                ms,
                "execute <unnamed>: SELECT $1::text || $2",
                Some(&format!("parameters: $1 = 'it''s {i}', $2 = NULL")),
            ),
        }
        line(s, ms, "duration: 0.042 ms", None);
    }
    for s in 0..SESSIONS {
        line(
            s,
            1 + statements / 100,
            "disconnection: session time: 0:00:01.000 user=alice database=shop host=[local]",
            None,
        );
    }
    let ext = match format {
        LogFormat::Stderr => "log",
        LogFormat::Csvlog => "csv",
        LogFormat::Jsonlog => "json",
    };
    let path = dir.join(format!("{stem}.{ext}"));
    std::fs::write(&path, out).unwrap();
    path
}

/// The answer a server gives to the messages in `out`: ParseComplete when they parse
/// a statement, then CommandComplete and ReadyForQuery.
fn answer(out: &[u8], reply: &mut Vec<u8>) {
    let msg = |reply: &mut Vec<u8>, tag: u8, body: &[u8]| {
        reply.push(tag);
        reply.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        reply.extend_from_slice(body);
    };
    reply.clear();
    if out.first() == Some(&b'P') {
        msg(reply, b'1', b"");
    }
    msg(reply, b'C', b"SELECT 1\0");
    msg(reply, b'Z', b"I");
}

/// Plays `ev` as a driver does once the server answered: the statement's messages are
/// encoded and its answer read by its session's protocol machine.
fn play(
    machines: &mut HashMap<u32, SessionMachine>,
    ev: &Event,
    out: &mut Vec<u8>,
    reply: &mut Vec<u8>,
) -> bool {
    let Event::Statement(st) = ev else {
        return false;
    };
    let m = machines.entry(st.session).or_default();
    m.encode(&st.request, out);
    assert!(!out.is_empty(), "statement {} encoded to nothing", st.seq);
    answer(out, reply);
    out.clear();
    let (used, r) = m.read(reply, out).unwrap();
    assert_eq!((used, r.map(|r| r.error)), (reply.len(), Some(None)));
    true
}

/// Stands in for a driver thread: plays each statement and hands everything back as
/// the driver does. Its allocations, and the statements it played.
fn stand_in_driver(events: Receiver<Vec<Event>>, mut returns: Returns) -> (u64, u64) {
    let before = allocations();
    let mut machines = HashMap::new();
    let (mut out, mut reply) = (Vec::with_capacity(4096), Vec::with_capacity(256));
    let mut played = 0u64;
    while let Ok(mut batch) = events.recv() {
        for ev in batch.drain(..) {
            played += u64::from(play(&mut machines, &ev, &mut out, &mut reply));
            returns.played(ev);
        }
        returns.emptied(batch);
    }
    (allocations() - before, played)
}

/// Reads `log` on this thread through the log readers and the assembler, playing each
/// statement and handing it back a fixed number of events later: allocations, and the
/// statements played.
fn assemble(log: &Path) -> (u64, u64) {
    let mut files = LogFiles::open(&[log.to_path_buf()], None, DEFAULT_PREFIX).unwrap();
    let mut asm = Assembler::new();
    let mut machines = HashMap::new();
    let (mut out, mut reply) = (Vec::with_capacity(4096), Vec::with_capacity(256));
    let mut under_way = VecDeque::with_capacity(IN_FLIGHT + 1);
    let mut played = 0u64;
    let before = allocations();
    while let Some(entry) = files.next() {
        let e = entry.unwrap();
        asm.push(&e).unwrap();
        files.recycle(e);
        while let Some(ev) = asm.pop() {
            played += u64::from(play(&mut machines, &ev, &mut out, &mut reply));
            under_way.push_back(ev);
            if under_way.len() > IN_FLIGHT {
                asm.recycle(under_way.pop_front().unwrap());
            }
        }
    }
    (allocations() - before, played)
}

/// Events played but not handed back yet in [`assemble`].
const IN_FLIGHT: usize = 300;

/// Reads `log` through the replay's reader thread (here: this thread) into a
/// stand-in driver: the reader's allocations, the driver's, and the statements played.
fn read_through(log: &Path) -> (u64, u64, u64) {
    let files = LogFiles::open(&[log.to_path_buf()], None, DEFAULT_PREFIX).unwrap();
    let (returns_tx, returns_rx) = sync_channel(256);
    let (tx, rx) = sync_channel(CHANNEL_BATCHES);
    let returns = Returns::new(returns_tx);
    let driver = std::thread::spawn(move || stand_in_driver(rx, returns));
    let (ready, _ready_rx) = sync_channel(1);
    let ctx = ReaderCtx {
        files,
        paths: Arc::from(vec![log.to_path_buf()]),
        skip_unreadable: false,
        pacing: Pacing::Max { speed: 1.0 },
        share: None,
        limits: Limits::default(),
        senders: vec![tx],
        returns: returns_rx,
        clock: RunClock::new(),
        start: Arc::new(OnceLock::new()),
        ready,
        stop: StopFlag::new(),
        halt: StopFlag::new(),
    };
    let before = allocations();
    let end = read(ctx);
    let reader = allocations() - before;
    assert!(end.unreadable.is_none(), "{:?}", end.unreadable);
    assert_eq!(end.skipped, 0);
    let (driver, played) = driver.join().unwrap();
    (reader, driver, played)
}

/// Batches queued for the stand-in driver.
const CHANNEL_BATCHES: usize = 1;

/// The most allocations of statement buffers the reader can make before as many
/// statements are away from it as can be at once in [`read_through`]: the batch being
/// filled, those queued, the one being played, the one the driver fills with played
/// statements, and those sent back since the reader last took them (as many as the
/// driver took meanwhile); each statement holds one buffer (a text, or a parameter
/// list of two), grown at most twice by longer texts. How many of these the reader
/// makes depends on how the threads were scheduled, not on the log's length.
const AWAY: u64 = ((2 * CHANNEL_BATCHES + 4) * BATCH * 4) as u64;

fn logs(format: LogFormat) -> (ScratchDir, PathBuf, PathBuf) {
    let dir = scratch_dir("replay-no-alloc");
    let short = synthetic_log(dir.path(), format, N, "short");
    let long = synthetic_log(dir.path(), format, 10 * N, "long");
    (dir, short, long)
}

/// The log readers and the assembler, on one thread: deterministic.
fn check_assembled(format: LogFormat) {
    let (_dir, short, long) = logs(format);
    let (a_n, played_n) = assemble(&short);
    let (a_10n, played_10n) = assemble(&long);
    assert_eq!(
        (played_n, played_10n),
        (N as u64, 10 * N as u64),
        "{format}: statements played"
    );
    assert!(
        a_10n.saturating_sub(a_n) < (N / 100) as u64,
        "{format}: reading allocates per statement\n{a_n} allocations for {N} statements, {a_10n} for {}",
        10 * N
    );
}

/// The reader thread's code and a driver's way back, on two threads: bounded by
/// what can be away from the reader at once.
fn check_threaded(format: LogFormat) {
    let (_dir, short, long) = logs(format);
    let (reader_n, driver_n, played_n) = read_through(&short);
    let (reader_10n, driver_10n, played_10n) = read_through(&long);
    assert_eq!(
        (played_n, played_10n),
        (N as u64, 10 * N as u64),
        "{format}: statements played"
    );
    let bound = (N / 100) as u64;
    assert!(
        reader_10n.saturating_sub(reader_n) < bound + AWAY,
        "{format}: the reader thread allocates per statement\n{reader_n} allocations for {N} statements, {reader_10n} for {}",
        10 * N
    );
    assert!(
        driver_10n.saturating_sub(driver_n) < bound,
        "{format}: playing statements allocates per statement\n{driver_n} allocations for {N} statements, {driver_10n} for {}",
        10 * N
    );
}

#[test]
fn reading_a_stderr_log_allocates_nothing_per_statement() {
    check_assembled(LogFormat::Stderr);
    check_threaded(LogFormat::Stderr);
}

#[test]
fn reading_a_csvlog_allocates_nothing_per_statement() {
    check_assembled(LogFormat::Csvlog);
    check_threaded(LogFormat::Csvlog);
}

#[test]
fn reading_a_jsonlog_allocates_nothing_per_statement() {
    check_assembled(LogFormat::Jsonlog);
    check_threaded(LogFormat::Jsonlog);
}
