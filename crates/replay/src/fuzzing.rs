//! The bodies of the fuzz targets over reading logs (`fuzz/fuzz_targets/replay_log.rs`,
//! `replay_sql.rs` and `replay_sessions.rs`), kept in the library so inputs found by the
//! fuzzer replay as ordinary tests (`crates/records/tests/it/fuzz_replay.rs`).

use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::check::check;
use crate::events::{Event, Request};
use crate::fingerprint::Fingerprints;
use crate::limits::Limits;
use crate::log::params::parse_parameters;
use crate::log::{LogEntry, Position, Severity, DEFAULT_PREFIX};
use crate::machine::SessionMachine;
use crate::report::ReplayReport;
use crate::sessions::Assembler;
use crate::spec::{ReplaySpec, Share};
use crate::sqlscan::scan;

/// The `log_line_prefix` values a fuzzed stderr log is read with (bits 2-3 of the
/// input's first byte).
const PREFIXES: [&str; 4] = [
    DEFAULT_PREFIX,
    "%m [%p] %q%u@%d %c ",
    "%n|%c|%e|%u|%d|",
    "%m [%p]: [%l-1] user=%u,db=%d,client=%h,session=%c ",
];

/// The bounds a fuzzed log is read with when bit 6 of its first byte is set.
pub const SMALL_LIMITS: Limits = Limits {
    entry_bytes: 256,
    fingerprints: 4,
    shapes: 8,
};

/// A fuzzed log file's name (two bits of its first byte): the name is the first thing
/// format detection looks at.
const NAMES: [&str; 4] = [
    "postgresql.log",
    "postgresql.csv",
    "postgresql.json",
    "postgresql-Mon",
];

/// Files a fuzzed log is written to, removed when dropped (a panic included).
struct TempLogs {
    dir: PathBuf,
    paths: Vec<PathBuf>,
    texts: Vec<Vec<u8>>,
}

impl TempLogs {
    /// Writes each `(name bits, contents)` to a file of its own.
    fn write(files: &[(u8, &[u8])]) -> TempLogs {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        let dir = std::env::temp_dir().join(format!(
            "pgsurge-fuzz-replay-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).expect("a temporary directory");
        let mut logs = TempLogs {
            dir,
            paths: Vec::new(),
            texts: Vec::new(),
        };
        for (i, (bits, text)) in files.iter().enumerate() {
            let name = NAMES[usize::from(bits & 3)];
            let path = logs.dir.join(format!("{i}-{name}"));
            std::fs::write(&path, text).expect("a temporary log file");
            logs.paths.push(path);
            logs.texts.push(text.to_vec());
        }
        logs
    }
}

impl Drop for TempLogs {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Reads `data` as log files the way `pgsurge replay --check` reads them (format found
/// from each file's name and first line), once stopping at the first unreadable line
/// and once skipping them. The input's first byte chooses the first file's name (bits
/// 0-1), the stderr prefix (bits 2-3), whether NUL bytes separate several files (bit
/// 5; each further file's first byte chooses its name) and whether the reading is bounded
/// by [`SMALL_LIMITS`] (bit 6), so entries past the bound and the fingerprints' `other`
/// row are reached by small inputs. Must never panic, and:
/// * an unreadable line is named as `file:line:` with a line the file has;
/// * skipping reads every file to its end, skips at least one line exactly when the
///   first read stopped, quotes that line first, and otherwise reads the same;
/// * the report survives its JSON form.
#[doc(hidden)]
pub fn log_one(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let mut files = vec![(head, rest)];
    if head & 0x20 != 0 {
        files = rest
            .splitn(4, |&b| b == 0)
            .enumerate()
            .map(|(i, part)| match (i, part.split_first()) {
                (0, _) => (head, part),
                (_, Some((&bits, text))) => (bits, text),
                (_, None) => (0, part),
            })
            .collect();
    }
    let logs = TempLogs::write(&files);
    let mut spec = ReplaySpec::new(logs.paths.clone());
    spec.log_line_prefix = PREFIXES[usize::from(head >> 2) % PREFIXES.len()].to_string();
    if head & 0x40 != 0 {
        spec.limits = SMALL_LIMITS;
    }
    let first = check(&spec);
    spec.skip_unreadable = true;
    let skipping = check(&spec).unwrap_or_else(|e| panic!("--skip-unreadable ended the read: {e}"));
    assert!(
        skipping.logs.iter().all(|l| l.sha256.is_some()),
        "a file was not read to its end: {:?}",
        skipping.logs
    );
    match first {
        Ok(report) => {
            assert_eq!(skipping.read, report.read, "skipping changed a clean read");
            assert_eq!(skipping.fingerprints, report.fingerprints);
        }
        Err(text) => {
            names_a_line(&text, &logs);
            assert!(
                skipping.read.skipped >= 1,
                "stopped at {text:?} but nothing was skipped"
            );
            assert_eq!(
                skipping.read.skipped_examples.first(),
                Some(&text),
                "the line a read stops at is the first one skipping skips"
            );
        }
    }
    for example in &skipping.read.skipped_examples {
        names_a_line(example, &logs);
    }
    let json = skipping.to_json();
    let back: ReplayReport = serde_json::from_str(&json)
        .unwrap_or_else(|e| panic!("the report's JSON does not read back: {e}\n{json}"));
    assert_eq!(back, skipping, "the report changed through its JSON");
}

/// Asserts that `text` starts with `file:line: ` for one of `logs`' files and a line
/// that file has.
fn names_a_line(text: &str, logs: &TempLogs) {
    let found = logs.paths.iter().zip(&logs.texts).find_map(|(p, bytes)| {
        let rest = text.strip_prefix(&format!("{}:", p.display()))?;
        let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
        let line: u64 = rest[..digits].parse().ok()?;
        rest[digits..].starts_with(": ").then_some((line, bytes))
    });
    let Some((line, bytes)) = found else {
        panic!("an unreadable line without its file and line: {text:?}");
    };
    // csvlog counts a lone CR as a line end too
    let breaks = bytes.iter().filter(|&&b| b == b'\n' || b == b'\r').count();
    assert!(
        line >= 1 && line <= breaks as u64 + 1,
        "{text:?}: line {line} of a file of {breaks} line breaks"
    );
}

/// `$1 = 'v', $2 = NULL…` as `log_statement` writes a parameter list.
fn parameter_list<S: AsRef<str>>(values: &[Option<S>]) -> String {
    let mut out = String::from("parameters: ");
    for (i, v) in values.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(&format!("${} = ", i + 1));
        let Some(v) = v else {
            out.push_str("NULL");
            continue;
        };
        // the log doubles a value's quotes and nothing else (backslashes stay single)
        out.push('\'');
        for ch in v.as_ref().chars() {
            out.push(ch);
            if ch == '\'' {
                out.push(ch);
            }
        }
        out.push('\'');
    }
    out
}

/// An entry of session `s1` at `time_us`.
fn entry(line: u64, time_us: i64, severity: Severity, message: String) -> LogEntry {
    LogEntry {
        at: Position { file: 0, line },
        time_us,
        session: Some("s1".into()),
        user: Some("u".into()),
        database: Some("d".into()),
        severity: Some(severity),
        message,
        ..LogEntry::default()
    }
}

/// Takes `data` as a statement's text, then after its last NUL the `DETAIL:` of its
/// execution.
/// Must never panic, and: scans and fingerprints are stable; a parameter list read and
/// written again reads the same; a list that fits the statement's `$n` is taken and one
/// with a value too many is refused; whatever the reader takes is sent as well-formed
/// protocol messages.
#[doc(hidden)]
pub fn sql_one(data: &[u8]) {
    let (sql, detail) = match data.iter().rposition(|&b| b == 0) {
        Some(i) => (&data[..i], Some(&data[i + 1..])),
        None => (data, None),
    };
    let sql = String::from_utf8_lossy(sql).into_owned();
    let detail = detail.map(|d| String::from_utf8_lossy(d).into_owned());
    let scanned = scan(&sql);
    assert_eq!(scan(&sql), scanned, "scanning is not deterministic");
    let mut fps = Fingerprints::new();
    assert_eq!(fps.of(&sql, &scanned), fps.of(&sql, &scanned));
    if let Some(Ok(values)) = detail.as_deref().map(parse_parameters) {
        let again = parameter_list(&values);
        assert_eq!(
            parse_parameters(&again).as_ref(),
            Ok(&values),
            "{again:?} does not read back"
        );
    }
    let mut asm = Assembler::new();
    let connect = "connection authorized: user=u database=d".to_string();
    let _ = asm.push(&entry(1, 0, Severity::Log, connect));
    let execute = format!("execute <unnamed>: {sql}");
    let mut given = entry(2, 10, Severity::Log, execute.clone());
    given.detail = detail;
    let _ = asm.push(&given);
    let _ = asm.push(&entry(3, 20, Severity::Log, format!("statement: {sql}")));
    let mut failed = entry(4, 30, Severity::Error, "syntax error".into());
    failed.statement = Some(sql.clone());
    let _ = asm.push(&failed);
    let _ = asm.push(&entry(
        5,
        40,
        Severity::Log,
        format!("duration: 1.5 ms  {execute}"),
    ));
    if scanned.max_param <= 1000 {
        let values: Vec<Option<String>> = (1..=scanned.max_param)
            .map(|i| (i % 3 != 0).then(|| format!("v'{i}")))
            .collect();
        let mut fits = entry(6, 50, Severity::Log, execute.clone());
        fits.detail = (!values.is_empty()).then(|| parameter_list(&values));
        let taken = asm.push(&fits);
        if !sql.contains('\0') {
            taken.unwrap_or_else(|u| panic!("a list that fits {sql:?} is refused: {}", u.reason));
        }
        let mut too_many = entry(7, 60, Severity::Log, execute);
        let mut more = values.clone();
        more.push(Some("extra".into()));
        too_many.detail = Some(parameter_list(&more));
        assert!(
            asm.push(&too_many).is_err(),
            "a value too many for {sql:?} is taken"
        );
    }
    asm.finish();
    let mut machine = SessionMachine::new();
    while let Some(ev) = asm.pop() {
        if let Event::Statement(st) = ev {
            if let Request::Execute { params, .. } = &st.request {
                assert_eq!(params.len(), scan(st.request.sql()).max_param);
            }
            sends_well_formed(&mut machine, &st.request);
        }
    }
}

/// Encodes `request` and checks the frontend messages: each frame's length is its
/// own, a statement's text holds no NUL (it would end the text early), a `Bind`
/// carries the count of values it sends.
fn sends_well_formed(machine: &mut SessionMachine, request: &Request) {
    let mut out = Vec::new();
    machine.encode(request, &mut out);
    let mut rest = &out[..];
    while !rest.is_empty() {
        assert!(rest.len() >= 5, "a frame cut short: {out:?}");
        let len = u32::from_be_bytes([rest[1], rest[2], rest[3], rest[4]]) as usize;
        assert!(len >= 4 && len < rest.len(), "a frame's length is wrong");
        let (tag, body) = (rest[0], &rest[5..1 + len]);
        let nuls = body.iter().filter(|&&b| b == 0).count();
        match tag {
            b'Q' => assert_eq!(nuls, 1, "a Query whose text holds a NUL"),
            b'P' => assert!(
                body.len() >= 2 && body[..body.len() - 2].iter().filter(|&&b| b == 0).count() == 2,
                "a Parse whose text holds a NUL"
            ),
            b'B' => {
                let Request::Execute { params, .. } = request else {
                    panic!("a Bind for a simple query");
                };
                let name_end = 1 + body[1..].iter().position(|&b| b == 0).expect("a name");
                let count = u16::from_be_bytes([body[name_end + 3], body[name_end + 4]]);
                assert_eq!(usize::from(count), params.len(), "a Bind's count is wrong");
            }
            _ => {}
        }
        rest = &rest[1 + len..];
    }
}

/// The statements the session fuzz target logs.
const SQL: [&str; 8] = [
    "select 1",
    "select $1",
    "update t set x = $1 where id = $2",
    "begin",
    "commit",
    "selec 1",
    "copy t from stdin",
    "select 'it''s' || $1",
];

/// One entry of the session fuzz target, from three bytes.
fn fuzzed_entry(i: usize, b: [u8; 3], time_us: &mut i64) -> LogEntry {
    let session = match b[0] & 7 {
        7 => None,
        s => Some(format!("s{}", s % 4)),
    };
    let severity = [
        Severity::Log,
        Severity::Log,
        Severity::Log,
        Severity::Error,
        Severity::Fatal,
        Severity::Warning,
        Severity::Debug,
        Severity::Panic,
    ][usize::from(b[0] >> 3 & 7)];
    let sql = SQL[usize::from(b[2] >> 5)];
    let named = format!("execute P_{}: {sql}", b[2] & 3);
    let unnamed = format!("execute <unnamed>: {sql}");
    let ms = f64::from(b[2]) / 8.0;
    let message = match b[1] % 12 {
        0 => "connection authorized: user=u database=d".to_string(),
        1 => "disconnection: session time: 0:00:00.010 user=u database=d".into(),
        2 => format!("statement: {sql}"),
        3 => named,
        4 => unnamed,
        5 => format!("duration: {ms} ms"),
        6 => format!("duration: {ms} ms  statement: {sql}"),
        7 => format!("duration: {ms} ms  {named}"),
        8 => format!("duration: {ms} ms  parse <unnamed>: {sql}"),
        9 => "canceling statement due to user request".into(),
        10 => "division by zero".into(),
        _ => match b[2] & 3 {
            0 => "database system is ready to accept connections".into(),
            1 => "selected new timeline ID: 2".into(),
            _ => "checkpoint starting: time".into(),
        },
    };
    let wanted = scan(sql).max_param + usize::from(b[1] >> 7);
    let values: Vec<Option<String>> = (0..wanted).map(|k| Some(k.to_string())).collect();
    let detail = (matches!(b[1] % 12, 3 | 4 | 7) && wanted > 0).then(|| parameter_list(&values));
    let statement = match b[1] >> 4 & 3 {
        0 => None,
        1 => Some(sql.to_string()),
        2 => Some(SQL[usize::from(b[0] >> 6)].to_string()),
        _ => Some(String::new()),
    };
    *time_us += match b[2] {
        255 => -1_000_000,
        t => i64::from(t) * 100,
    };
    LogEntry {
        at: Position {
            file: 0,
            line: i as u64 + 1,
        },
        time_us: *time_us,
        session,
        // Pids shared across the sessions: a line of one ends another of its pid.
        pid: (b[2] & 0x10 != 0).then_some(u32::from(b[0] >> 1 & 3)),
        user: Some("u".into()),
        database: Some("d".into()),
        severity: Some(severity),
        sqlstate: (b[1] & 0x40 != 0).then(|| "22012".into()),
        message,
        detail,
        statement,
    }
}

/// What one reading of the fuzzed entries gave.
struct Read {
    events: Vec<Event>,
    statements: u64,
    sessions: u64,
    errors: u64,
}

fn read_entries(entries: &[LogEntry], share: Option<Share>) -> Read {
    let mut asm = Assembler::with_share(share);
    let mut events = Vec::new();
    for e in entries {
        let _ = asm.push(e);
        events.extend(std::iter::from_fn(|| asm.pop()));
    }
    asm.finish();
    events.extend(std::iter::from_fn(|| asm.pop()));
    let c = asm.counts();
    Read {
        statements: c.statements,
        sessions: c.sessions,
        errors: c.errors,
        events,
    }
}

/// Drives the session assembler with entries made from `data` (three bytes each:
/// session, severity, message, parameters, statement, time, a pid shared across
/// sessions; restarts and promotions among the messages) and every statement it
/// gives through a session's protocol machine. Must never panic, and: each session
/// connects once, acts only while connected and disconnects once; statements keep the
/// log's order; an outcome names a statement its session sent; the counts are the
/// events'; two generators' shares together are the whole log, each session in one.
#[doc(hidden)]
pub fn sessions_one(data: &[u8]) {
    let mut time_us = 1_800_000_000_000_000i64;
    let entries: Vec<LogEntry> = data
        .chunks_exact(3)
        .take(2000)
        .enumerate()
        .map(|(i, c)| fuzzed_entry(i, [c[0], c[1], c[2]], &mut time_us))
        .collect();
    let whole = read_entries(&entries, None);
    let mut live = HashSet::new();
    let mut ended = HashSet::new();
    let mut sent: HashMap<u64, u32> = HashMap::new();
    let mut settled = HashSet::new();
    let mut last_seq = None;
    let mut machines: HashMap<u32, SessionMachine> = HashMap::new();
    for ev in &whole.events {
        let s = ev.session();
        match ev {
            Event::Connect(_) => {
                assert!(
                    !ended.contains(&s) && live.insert(s),
                    "session {s} connects twice"
                );
            }
            Event::Disconnect { .. } => {
                assert!(live.remove(&s), "session {s} ends without being live");
                ended.insert(s);
            }
            Event::Statement(st) => {
                assert!(live.contains(&s), "session {s} sends while not connected");
                assert!(last_seq < Some(st.seq), "statements out of the log's order");
                last_seq = Some(st.seq);
                sent.insert(st.seq, s);
                sends_well_formed(machines.entry(s).or_default(), &st.request);
            }
            Event::Outcome(o) => {
                assert_eq!(
                    sent.get(&o.seq),
                    Some(&s),
                    "an outcome of another session's statement"
                );
                assert!(settled.insert(o.seq), "two outcomes of one statement");
            }
        }
    }
    assert!(
        live.is_empty(),
        "sessions still live after the end: {live:?}"
    );
    let count = |r: &Read, f: fn(&Event) -> bool| r.events.iter().filter(|e| f(e)).count() as u64;
    assert_eq!(
        whole.statements,
        count(&whole, |e| matches!(e, Event::Statement(_)))
    );
    assert_eq!(
        whole.sessions,
        count(&whole, |e| matches!(e, Event::Connect(_)))
    );
    assert_eq!(
        whole.errors,
        count(&whole, |e| matches!(e, Event::Outcome(_)))
    );
    let mut together: Vec<&Event> = Vec::new();
    let shares: Vec<Read> = (0..2)
        .map(|index| read_entries(&entries, Some(Share { index, count: 2 })))
        .collect();
    for r in &shares {
        together.extend(&r.events);
    }
    let key = |e: &Event| match e {
        Event::Connect(_) => (e.session(), 0u8, 0),
        Event::Statement(s) => (e.session(), 1, s.seq),
        Event::Outcome(o) => (e.session(), 2, o.seq),
        Event::Disconnect { .. } => (e.session(), 3, 0),
    };
    let mut a: Vec<_> = whole.events.iter().map(key).collect();
    let mut b: Vec<_> = together.into_iter().map(key).collect();
    a.sort_unstable();
    b.sort_unstable();
    assert_eq!(a, b, "two generators' shares are not the whole log");
    assert_eq!(
        whole.statements,
        shares.iter().map(|r| r.statements).sum::<u64>()
    );
}
