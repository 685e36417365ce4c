//! Log entries → [`Event`]s: sessions found by their id, statements with their bound
//! parameters and fingerprints, how statements ended (an `ERROR:` after a statement,
//! a client's cancel), and the logged side of the fidelity report (per fingerprint:
//! statements, errors, durations). Streams: it keeps one small record per live session,
//! never the statements themselves.
//!
//! Rules read from how PostgreSQL logs (`log_statement = all`):
//! * a statement line is written when the statement starts; its `duration:` line (with
//!   `log_min_duration_statement = 0`) when it ends in success;
//! * an `ERROR:` belongs to the session's last statement when its `STATEMENT:` is that
//!   statement's text (or says nothing); otherwise it is a statement that failed before
//!   it could be logged (a syntax error), replayed as a simple query that fails too;
//! * a session seen before its `connection authorized:` line (a log that starts in the
//!   middle of it) starts at its first line, as the user and database of its prefix;
//! * a `FATAL:` or `disconnection:` ends the session;
//! * a session whose end the log does not show (`log_disconnections` off, a log cut
//!   while it ran, a backend that crashed) ends at the first line that proves it had
//!   ended: a line of another process with its pid (a pid names one process at a
//!   time; the pid is `%p`, or the session id's part after its dot), or the server's
//!   restart ([`ServerState`]); these ends are counted apart ([`ReadCounts`]). So
//!   what is kept is bounded by the backends alive at once, not by the log's length;
//! * the log's end ends the others.
//!
//! Nothing is allocated per statement once the buffers are warm: a simple query's text
//! and an execution's parameters are copied into buffers of statements already sent
//! ([`Assembler::recycle`]), a prepared statement's name and text are shared by all its
//! executions in a session and an unnamed execution's text by all executions of that
//! text, and each shared text is scanned once.

use std::collections::HashMap;
use std::collections::VecDeque;
use std::sync::Arc;

use crate::events::{Connect, Event, LoggedEnd, Outcome, Request, SessionNo, Statement};
use crate::fidelity::Counts;
use crate::fingerprint::{Fingerprints, FpId};
use crate::limits::Limits;
use crate::log::message::{
    classify, is_client_cancel, server_state, Measured, Message, ServerState,
};
use crate::log::params::{check_count, parse_parameters_into, Params};
use crate::log::{LogEntry, Position, Severity, Unreadable};
use crate::spec::Share;
use crate::sqlscan::{scan, Scan};

/// Distinct texts of unnamed executions kept shared; beyond, the table starts again.
const SHARED_TEXTS: usize = 4096;

/// Longest buffer kept for a later statement (a rare huge text is not kept).
const SPARE_CAPACITY: usize = 64 * 1024;

/// The last statement of a live session.
#[derive(Debug, Clone, Copy)]
struct Last {
    seq: u64,
    fp: FpId,
    time_us: i64,
    /// Shape hash of its text (to match an `ERROR:`'s `STATEMENT:`).
    text_hash: u64,
    /// Its end is known (a duration, an error): later lines are not about it.
    settled: bool,
}

/// A session between its start and its end.
#[derive(Debug)]
struct Live {
    no: SessionNo,
    /// This generator plays it (see [`Share`]).
    own: bool,
    last: Option<Last>,
    /// Durations of the parse and bind steps before the next execute (µs).
    steps_us: i64,
    last_time_us: i64,
    /// Its backend's process id, when the log tells it.
    pid: Option<u32>,
    /// The session's prepared statements by name.
    names: HashMap<Box<str>, Named>,
}

/// A prepared statement of a session: its name and text as the events carry them
/// (shared), and the text's scan.
#[derive(Debug)]
struct Named {
    name: Arc<str>,
    sql: Arc<str>,
    scan: Scan,
}

/// Counters of what was read.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadCounts {
    /// Log entries read.
    pub entries: u64,
    /// Sessions found.
    pub sessions: u64,
    /// Statements found.
    pub statements: u64,
    /// Of which extended-protocol executions.
    pub executes: u64,
    /// Statements the log shows cancelled by their client.
    pub cancels: u64,
    /// Statements the log shows failed (cancels included).
    pub errors: u64,
    /// Statements whose duration the log has (`log_min_duration_statement = 0`).
    pub durations: u64,
    /// Sessions without a logged end, ended where another process had their pid.
    pub ended_pid_reused: u64,
    /// Sessions without a logged end, ended where the server restarted (or shut down).
    pub ended_restart: u64,
}

/// Why a session without a logged end is known to have ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Proof {
    /// Another process had its pid.
    PidReused,
    /// The server restarted.
    Restart,
}

/// Log entries in, events out.
#[derive(Debug)]
pub struct Assembler {
    fingerprints: Fingerprints,
    logged: Counts,
    live: HashMap<String, Live>,
    /// The live session of each pid the log told.
    by_pid: HashMap<u32, String>,
    /// The pid of the entry being taken.
    entry_pid: Option<u32>,
    /// Recovery ended on a new timeline: the next "ready to accept connections" is a
    /// promotion's, which sessions live through.
    promoting: bool,
    next_session: SessionNo,
    next_seq: u64,
    origin_us: Option<i64>,
    out: VecDeque<Event>,
    counts: ReadCounts,
    share: Option<Share>,
    /// Unnamed executions' texts, shared, with their scans.
    texts: HashMap<Arc<str>, Scan>,
    /// Buffers of statements sent, to be filled again.
    spare_sql: Vec<String>,
    spare_params: Vec<Params>,
}

impl Default for Assembler {
    fn default() -> Self {
        Self::new()
    }
}

impl Assembler {
    /// Nothing read yet.
    pub fn new() -> Self {
        Assembler {
            fingerprints: Fingerprints::new(),
            logged: Counts::default(),
            live: HashMap::new(),
            by_pid: HashMap::new(),
            entry_pid: None,
            promoting: false,
            next_session: 0,
            next_seq: 0,
            origin_us: None,
            out: VecDeque::new(),
            counts: ReadCounts::default(),
            share: None,
            texts: HashMap::new(),
            spare_sql: Vec::new(),
            spare_params: Vec::new(),
        }
    }

    /// Reads for one generator of several: events, counts and the logged side are
    /// those of its sessions only (statements keep their place in the whole log's
    /// order, and fingerprints are found for every statement).
    pub fn with_share(share: Option<Share>) -> Self {
        Assembler {
            share,
            ..Self::new()
        }
    }

    /// Bounds its fingerprints by `limits` (before anything is read).
    pub fn with_limits(mut self, limits: &Limits) -> Self {
        self.fingerprints = Fingerprints::with_limits(limits.fingerprints, limits.shapes);
        self
    }

    /// The next event ready, in log order.
    pub fn pop(&mut self) -> Option<Event> {
        self.out.pop_front()
    }

    /// Takes back an event that was played (or dropped): a statement's buffers are
    /// filled again by a later statement. The buffers kept are never more than the
    /// statements that were under way at once.
    pub fn recycle(&mut self, ev: Event) {
        if let Event::Statement(st) = ev {
            self.recycle_request(st.request);
        }
    }

    fn recycle_request(&mut self, r: Request) {
        match r {
            Request::Simple(t) if t.capacity() <= SPARE_CAPACITY => self.spare_sql.push(t),
            Request::Execute { params, .. } => self.spare_params.push(params),
            Request::Simple(_) => {}
        }
    }

    /// `sql` in a buffer of a statement sent before, if there is one.
    fn text(&mut self, sql: &str) -> String {
        let mut t = self.spare_sql.pop().unwrap_or_default();
        t.clear();
        t.push_str(sql);
        t
    }

    /// What was read so far.
    pub fn counts(&self) -> &ReadCounts {
        &self.counts
    }

    /// The logged side of the fidelity report.
    pub fn logged(&self) -> &Counts {
        &self.logged
    }

    /// The fingerprints so far.
    pub fn fingerprints(&self) -> &Fingerprints {
        &self.fingerprints
    }

    /// Ends reading: the logged counts and the fingerprints.
    pub fn into_parts(self) -> (Counts, Fingerprints, ReadCounts) {
        (self.logged, self.fingerprints, self.counts)
    }

    /// The log's first time (µs since the epoch), once an entry was read.
    pub fn origin_us(&self) -> Option<i64> {
        self.origin_us
    }

    fn offset(&mut self, time_us: i64) -> i64 {
        time_us - *self.origin_us.get_or_insert(time_us)
    }

    /// Takes one entry; `Err` when it cannot be used (the events of the entries before
    /// it stay good).
    pub fn push(&mut self, e: &LogEntry) -> Result<(), Unreadable> {
        self.counts.entries += 1;
        if e.severity == Some(Severity::Log) {
            // A server's line is no session's: the same text from a live session is a
            // client's own (`RAISE LOG`).
            let of_live = |s: &str| self.live.contains_key(s);
            match server_state(&e.message) {
                Some(state) if !e.session.as_deref().is_some_and(of_live) => {
                    self.server(state, e.time_us);
                    return Ok(());
                }
                _ => {}
            }
        }
        self.entry_pid = e.pid.or_else(|| e.session.as_deref().and_then(session_pid));
        if let Some(pid) = self.entry_pid {
            self.pid_seen(pid, e.session.as_deref(), e.time_us);
        }
        let Some(session) = e.session.as_deref() else {
            return Ok(());
        };
        let Some(severity) = e.severity else {
            return Ok(());
        };
        if severity.is_error() {
            self.error(session, e);
            if severity != Severity::Error {
                self.end(session, e.time_us);
            }
            return Ok(());
        }
        if severity != Severity::Log {
            return Ok(());
        }
        match classify(&e.message) {
            Message::Connect { user, database } => {
                if !self.live.contains_key(session) {
                    let user = e.user.as_deref().or(user);
                    let database = e.database.as_deref().or(database);
                    self.start(session, e.time_us, user, database);
                }
            }
            Message::Disconnect => {
                self.end(session, e.time_us);
            }
            Message::Simple(sql) => {
                let r = Request::Simple(self.text(sql));
                self.statement(e, e.time_us, r, scan(sql), None)?;
            }
            Message::Execute { name, sql } => {
                let (r, scanned) = self.execute(e, name, sql)?;
                self.statement(e, e.time_us, r, scanned, None)?;
            }
            Message::Duration { us, of } => self.duration(e, us, of)?,
            Message::BadDuration => {
                return Err(Unreadable {
                    at: e.at,
                    reason: "a duration that is not a number of milliseconds PostgreSQL writes (from 0 to 10^12)".into(),
                })
            }
            Message::Other => {}
        }
        Ok(())
    }

    /// Starts session `id`.
    fn start(&mut self, id: &str, time_us: i64, user: Option<&str>, database: Option<&str>) {
        let no = self.next_session;
        self.next_session += 1;
        let own = self.share.is_none_or(|s| s.has(no));
        let offset_us = self.offset(time_us);
        self.live.insert(
            id.to_string(),
            Live {
                no,
                own,
                last: None,
                steps_us: 0,
                last_time_us: time_us,
                pid: self.entry_pid,
                names: HashMap::new(),
            },
        );
        if let Some(pid) = self.entry_pid {
            self.by_pid.insert(pid, id.to_string());
        }
        if !own {
            return;
        }
        self.counts.sessions += 1;
        self.out.push_back(Event::Connect(Connect {
            session: no,
            offset_us,
            user: user.map(Arc::from),
            database: database.map(Arc::from),
        }));
    }

    /// Ends session `id`, if it is live; whether it was one of this generator's.
    fn end(&mut self, id: &str, time_us: i64) -> bool {
        let Some(live) = self.live.remove(id) else {
            return false;
        };
        if let Some(pid) = live.pid {
            if self.by_pid.get(&pid).is_some_and(|s| s == id) {
                self.by_pid.remove(&pid);
            }
        }
        if live.own {
            let offset_us = self.offset(time_us.max(live.last_time_us));
            self.out.push_back(Event::Disconnect {
                session: live.no,
                offset_us,
            });
        }
        live.own
    }

    /// A line of process `pid` (of `session`, if it is one): a live session of another
    /// process with that pid had ended by then.
    fn pid_seen(&mut self, pid: u32, session: Option<&str>, time_us: i64) {
        let Some(earlier) = self.by_pid.get(&pid) else {
            return;
        };
        if session == Some(earlier.as_str()) {
            return;
        }
        if let Some(earlier) = self.by_pid.remove(&pid) {
            self.end_unlogged(&earlier, time_us, Proof::PidReused);
        }
    }

    /// Ends session `id`, whose end the log does not show, at `time_us`, where `proof`
    /// shows it had ended.
    fn end_unlogged(&mut self, id: &str, time_us: i64, proof: Proof) {
        if self.end(id, time_us) {
            match proof {
                Proof::PidReused => self.counts.ended_pid_reused += 1,
                Proof::Restart => self.counts.ended_restart += 1,
            }
        }
    }

    /// A postmaster's line about every session.
    fn server(&mut self, state: ServerState, time_us: i64) {
        match state {
            ServerState::NewTimeline => self.promoting = true,
            // A promoted standby's sessions go on.
            ServerState::Ready if std::mem::take(&mut self.promoting) => {}
            ServerState::Ready | ServerState::Restarted => {
                self.promoting = false;
                self.end_all(|_| time_us, Some(Proof::Restart));
            }
        }
    }

    /// Ends every live session, in the order they started, at the time `at` gives
    /// (from its last line's time), counted as ended by `proof` when there is one.
    fn end_all(&mut self, at: impl Fn(i64) -> i64, proof: Option<Proof>) {
        let mut ending: Vec<(SessionNo, String, i64)> = self
            .live
            .iter()
            .map(|(id, l)| (l.no, id.clone(), at(l.last_time_us)))
            .collect();
        ending.sort_unstable();
        for (_, id, t) in ending {
            match proof {
                Some(p) => self.end_unlogged(&id, t, p),
                None => {
                    self.end(&id, t);
                }
            }
        }
        self.by_pid.clear();
    }

    /// Ends every session still live (the log ended), each after its last line.
    pub fn finish(&mut self) {
        self.end_all(|last| last, None);
    }

    /// The live session of entry `e`, started now if the log did not show its start.
    fn live_of(&mut self, e: &LogEntry) -> &mut Live {
        let id = e.session.as_deref().unwrap_or_default();
        if !self.live.contains_key(id) {
            self.start(id, e.time_us, e.user.as_deref(), e.database.as_deref());
        }
        self.live.get_mut(id).expect("started above")
    }

    /// The request of `execute NAME: SQL` with the parameters of its detail, and the
    /// statement's scan.
    fn execute(
        &mut self,
        e: &LogEntry,
        name: Option<&str>,
        sql: &str,
    ) -> Result<(Request, Scan), Unreadable> {
        let id = e.session.as_deref().unwrap_or_default();
        let known = match name {
            Some(n) => self
                .live
                .get(id)
                .and_then(|l| l.names.get(n))
                .filter(|p| *p.sql == *sql)
                .map(|p| (Some(Arc::clone(&p.name)), Arc::clone(&p.sql), p.scan)),
            None => self
                .texts
                .get_key_value(sql)
                .map(|(t, s)| (None, Arc::clone(t), *s)),
        };
        if known.is_none() {
            no_nul(e, "statement", sql)?;
        }
        let scanned = known.as_ref().map_or_else(|| scan(sql), |k| k.2);
        let mut params = self.spare_params.pop().unwrap_or_default();
        params.clear();
        let read = match e.detail.as_deref() {
            Some(d) if d.starts_with("parameters: ") => parse_parameters_into(d, &mut params),
            _ => Ok(()),
        }
        .and_then(|()| check_count(params.len(), scanned.max_param));
        let checked = match read {
            Err(p) => Err(Unreadable {
                at: e.at,
                reason: p.0,
            }),
            Ok(()) => params
                .iter()
                .flatten()
                .try_for_each(|p| no_nul(e, "parameter", p)),
        };
        if let Err(u) = checked {
            self.spare_params.push(params);
            return Err(u);
        }
        let (name, sql) = match known {
            Some((name, sql, _)) => (name, sql),
            None => self.share_text(e, name, sql, scanned),
        };
        Ok((Request::Execute { name, sql, params }, scanned))
    }

    /// The name and text that the executions of a statement not seen before share.
    fn share_text(
        &mut self,
        e: &LogEntry,
        name: Option<&str>,
        sql: &str,
        scanned: Scan,
    ) -> (Option<Arc<str>>, Arc<str>) {
        match name {
            Some(n) => {
                let named = Named {
                    name: Arc::from(n),
                    sql: Arc::from(sql),
                    scan: scanned,
                };
                let shared = (Some(Arc::clone(&named.name)), Arc::clone(&named.sql));
                self.live_of(e).names.insert(n.into(), named);
                shared
            }
            None => {
                if self.texts.len() >= SHARED_TEXTS {
                    self.texts.clear();
                }
                let text: Arc<str> = Arc::from(sql);
                self.texts.insert(Arc::clone(&text), scanned);
                (None, text)
            }
        }
    }

    /// A statement of `e`'s session that started at `start_us`; `duration_us` when the
    /// line that logged it also timed it.
    fn statement(
        &mut self,
        e: &LogEntry,
        start_us: i64,
        request: Request,
        scanned: Scan,
        duration_us: Option<i64>,
    ) -> Result<(), Unreadable> {
        // An execution's text was checked when it was first seen.
        if let Request::Simple(sql) = &request {
            no_nul(e, "statement", sql)?;
        }
        let fp = self.fingerprints.of(request.sql(), &scanned);
        let seq = self.next_seq;
        self.next_seq += 1;
        let offset_us = self.offset(start_us);
        let live = self.live_of(e);
        let own = live.own;
        let steps = std::mem::take(&mut live.steps_us);
        live.last = Some(Last {
            seq,
            fp,
            time_us: start_us,
            text_hash: scanned.shape,
            settled: duration_us.is_some(),
        });
        live.last_time_us = live.last_time_us.max(e.time_us);
        let session = live.no;
        if !own {
            self.recycle_request(request);
            return Ok(());
        }
        self.counts.statements += 1;
        if matches!(request, Request::Execute { .. }) {
            self.counts.executes += 1;
        }
        let c = self.logged.of(fp);
        c.record(false, duration_us.map(|d| d.saturating_add(steps)));
        if duration_us.is_some() {
            self.counts.durations += 1;
        }
        self.out.push_back(Event::Statement(Statement {
            seq,
            session,
            offset_us,
            fingerprint: fp,
            request,
            at: e.at,
        }));
        Ok(())
    }

    /// A `duration:` line.
    fn duration(&mut self, e: &LogEntry, us: i64, of: Measured<'_>) -> Result<(), Unreadable> {
        match of {
            Measured::Last => {
                let live = self.live_of(e);
                live.last_time_us = live.last_time_us.max(e.time_us);
                let steps = std::mem::take(&mut live.steps_us);
                let own = live.own;
                if let Some(last) = live.last.as_mut().filter(|l| !l.settled) {
                    last.settled = true;
                    let fp = last.fp;
                    if !own {
                        return Ok(());
                    }
                    self.logged.of(fp).record_latency(us.saturating_add(steps));
                    self.counts.durations += 1;
                }
                Ok(())
            }
            Measured::Step => {
                let live = self.live_of(e);
                live.steps_us = live.steps_us.saturating_add(us);
                Ok(())
            }
            Measured::Simple(sql) => {
                let r = Request::Simple(self.text(sql));
                self.statement(e, e.time_us - us, r, scan(sql), Some(us))
            }
            Measured::Execute { name, sql } => {
                let (r, scanned) = self.execute(e, name, sql)?;
                self.statement(e, e.time_us - us, r, scanned, Some(us))
            }
        }
    }

    /// An `ERROR:`/`FATAL:` of session `id`.
    fn error(&mut self, id: &str, e: &LogEntry) {
        let Some(live) = self.live.get_mut(id) else {
            // A connection that failed before it was a session (authentication).
            return;
        };
        live.last_time_us = live.last_time_us.max(e.time_us);
        let statement = e.statement.as_deref().filter(|s| !s.is_empty());
        let open = live.last.filter(|l| !l.settled);
        let belongs = match (open, statement) {
            (Some(_), None) => true,
            (Some(l), Some(text)) => scan(text).shape == l.text_hash,
            (None, _) => false,
        };
        let sqlstate = e
            .sqlstate
            .as_deref()
            .and_then(|s| <[u8; 5]>::try_from(s.as_bytes()).ok());
        let kind = if is_client_cancel(&e.message) {
            LoggedEnd::Cancelled {
                after_us: open.map_or(0, |l| e.time_us - l.time_us).max(0),
            }
        } else {
            LoggedEnd::Failed { sqlstate }
        };
        if belongs {
            let own = live.own;
            let last = live.last.as_mut().expect("open statement");
            last.settled = true;
            let (session, seq, fp) = (live.no, last.seq, last.fp);
            if own {
                self.settle_failed(session, seq, fp, kind);
            }
            return;
        }
        // A statement that failed before it was logged (its text did not parse, or a
        // parameter did not bind): replayed as a simple query.
        if let (Some(text), Severity::Error) = (statement, e.severity.unwrap_or(Severity::Error)) {
            let entry = LogEntry {
                statement: None,
                ..e.clone()
            };
            let r = Request::Simple(self.text(text));
            if self
                .statement(&entry, e.time_us, r, scan(text), None)
                .is_ok()
            {
                if let Some(live) = self.live.get_mut(id) {
                    let own = live.own;
                    if let Some(last) = live.last.as_mut() {
                        last.settled = true;
                        let (session, seq, fp) = (live.no, last.seq, last.fp);
                        if own {
                            self.settle_failed(session, seq, fp, kind);
                        }
                    }
                }
            }
        }
    }

    fn settle_failed(&mut self, session: SessionNo, seq: u64, fp: FpId, kind: LoggedEnd) {
        self.logged.of(fp).errors += 1;
        self.counts.errors += 1;
        if matches!(kind, LoggedEnd::Cancelled { .. }) {
            self.counts.cancels += 1;
        }
        self.out
            .push_back(Event::Outcome(Outcome { session, seq, kind }));
    }
}

/// The process id in a session id (`%c`: the process's start time and its pid, in
/// hex, joined by a dot).
fn session_pid(session: &str) -> Option<u32> {
    let (_, pid) = session.split_once('.')?;
    u32::from_str_radix(pid, 16).ok()
}

/// Refuses a statement's text or parameter holding a NUL byte: PostgreSQL's text never
/// does, and the protocol ends a statement's text at one.
fn no_nul(e: &LogEntry, what: &str, text: &str) -> Result<(), Unreadable> {
    match text.find('\0') {
        None => Ok(()),
        Some(i) => Err(Unreadable {
            at: e.at,
            reason: format!(
                "the {what} holds a NUL byte (at byte {}): no text PostgreSQL logs does",
                i + 1
            ),
        }),
    }
}

/// Where an entry is, as `file:line` with the files' names.
pub fn describe(at: Position, files: &[std::path::PathBuf]) -> String {
    match files.get(at.file as usize) {
        Some(p) => format!("{}:{}", p.display(), at.line),
        None => format!("line {}", at.line),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::log::{read_entries, LogFormat, Prefix, DEFAULT_PREFIX};

    /// Reads `text` in `format` (stderr lines with `prefix`): the events, and the
    /// assembler's live sessions after each entry.
    fn read(format: LogFormat, prefix: &str, text: &str) -> (Vec<Event>, Assembler, Vec<usize>) {
        let prefix = Prefix::parse(prefix).unwrap();
        let mut asm = Assembler::new();
        let mut events = Vec::new();
        let mut live = Vec::new();
        for e in read_entries(text.as_bytes(), format, &prefix, 1 << 20) {
            asm.push(&e.unwrap()).unwrap();
            live.push(asm.live.len());
            events.extend(std::iter::from_fn(|| asm.pop()));
        }
        asm.finish();
        events.extend(std::iter::from_fn(|| asm.pop()));
        (events, asm, live)
    }

    /// The (session, offset in ms) of each disconnection.
    fn ends(events: &[Event]) -> Vec<(SessionNo, i64)> {
        events
            .iter()
            .filter_map(|e| match e {
                Event::Disconnect { session, offset_us } => Some((*session, offset_us / 1000)),
                _ => None,
            })
            .collect()
    }

    fn stderr_line(ms: u32, session: &str, message: &str) -> String {
        format!(
            "2026-11-28 18:00:{:02}.{:03} UTC|u|d|{session}|LOG:  {message}\n",
            ms / 1000,
            ms % 1000
        )
    }

    #[test]
    fn a_reused_pid_ends_the_earlier_session_of_that_pid() {
        // Sessions 65.a and 66.a are both pid 10; 65.b is pid 11. No disconnections.
        let log = [
            stderr_line(0, "65.a", "connection authorized: user=u database=d"),
            stderr_line(100, "65.a", "execute P_1: select 1"),
            stderr_line(200, "65.b", "connection authorized: user=u database=d"),
            stderr_line(300, "65.b", "statement: select 2"),
            stderr_line(900, "66.a", "connection received: host=[local]"),
            stderr_line(950, "66.a", "connection authorized: user=u database=d"),
            stderr_line(990, "66.a", "statement: select 3"),
        ]
        .concat();
        let (events, asm, live) = read(LogFormat::Stderr, DEFAULT_PREFIX, &log);
        // Session 0 ends at the line of another process with its pid; sessions 1 and
        // 2 at the log's end, after their last line.
        assert_eq!(ends(&events), vec![(0, 900), (1, 300), (2, 990)]);
        assert_eq!(live, vec![1, 1, 2, 2, 1, 2, 2]);
        let c = asm.counts();
        assert_eq!((c.sessions, c.ended_pid_reused, c.ended_restart), (3, 1, 0));
        // Its prepared statement went with it.
        assert!(asm.live.values().all(|l| l.names.is_empty()));
    }

    #[test]
    fn sessions_without_logged_ends_are_bounded_by_the_pids_alive_at_once() {
        let mut log = String::new();
        for n in 0..2000u32 {
            let session = format!("{:x}.{:x}", 0x6560_0000 + n, 100 + n % 8);
            log += &stderr_line(n * 10, &session, "connection authorized: user=u database=d");
            log += &stderr_line(n * 10 + 1, &session, &format!("execute P_{n}: select {n}"));
            log += &stderr_line(n * 10 + 2, &session, "statement: select 1");
        }
        let (events, asm, live) = read(LogFormat::Stderr, DEFAULT_PREFIX, &log);
        assert!(live.iter().all(|&n| n <= 8), "{:?}", live.iter().max());
        assert!(asm.by_pid.is_empty() && asm.live.is_empty());
        assert_eq!(asm.counts().ended_pid_reused, 2000 - 8);
        assert_eq!(ends(&events).len(), 2000);
    }

    #[test]
    fn a_logged_disconnection_is_not_counted_as_inferred() {
        let log = [
            stderr_line(0, "65.a", "connection authorized: user=u database=d"),
            stderr_line(
                10,
                "65.a",
                "disconnection: session time: 0:00:00.010 user=u database=d",
            ),
            stderr_line(20, "66.a", "connection authorized: user=u database=d"),
        ]
        .concat();
        let (events, asm, _) = read(LogFormat::Stderr, DEFAULT_PREFIX, &log);
        assert_eq!(ends(&events), vec![(0, 10), (1, 20)]);
        assert_eq!(asm.counts().ended_pid_reused, 0);
    }

    #[test]
    fn a_line_of_a_process_that_is_no_session_ends_the_session_of_its_pid() {
        // With %q, an autovacuum worker's line has no session id, only its pid.
        let prefix = "%m [%p] %q%u@%d %c ";
        let log = "2026-11-28 18:00:00.000 UTC [42] u@d 65.2a LOG:  statement: begin\n\
2026-11-28 18:00:01.000 UTC [43] u@d 65.2b LOG:  statement: select 1\n\
2026-11-28 18:00:02.000 UTC [42] LOG:  automatic vacuum of table \"d.public.t\"\n\
2026-11-28 18:00:03.000 UTC [43] u@d 65.2b LOG:  statement: select 2\n";
        let (events, asm, _) = read(LogFormat::Stderr, prefix, log);
        assert_eq!(ends(&events), vec![(0, 2000), (1, 3000)]);
        assert_eq!(asm.counts().ended_pid_reused, 1);
    }

    fn csv_line(ms: u32, pid: u32, session: &str, message: &str) -> String {
        format!(
            "2026-11-28 18:00:{:02}.{:03} UTC,\"u\",\"d\",{pid},\"[local]\",{session},1,\"\",2026-11-28 18:00:00 UTC,3/1,0,LOG,00000,\"{message}\",,,,,,,,,\"psql\",\"client backend\",,0\n",
            ms / 1000,
            ms % 1000
        )
    }

    #[test]
    fn a_server_restart_ends_every_session_but_a_promotion_does_not() {
        let connect = "connection authorized: user=u database=d";
        let log = [
            csv_line(0, 10, "65.a", connect),
            csv_line(100, 11, "65.b", connect),
            csv_line(200, 11, "65.b", "statement: select 1"),
            csv_line(300, 1, "60.1", "selected new timeline ID: 2"),
            csv_line(
                400,
                1,
                "60.1",
                "database system is ready to accept connections",
            ),
            csv_line(500, 11, "65.b", "statement: select 2"),
            csv_line(
                600,
                1,
                "60.1",
                "all server processes terminated; reinitializing",
            ),
            csv_line(
                700,
                1,
                "60.1",
                "database system is ready to accept connections",
            ),
            csv_line(800, 12, "70.c", connect),
            csv_line(
                900,
                2,
                "71.2",
                "starting PostgreSQL 18.1 on x86_64-pc-linux-gnu",
            ),
        ]
        .concat();
        let (events, asm, live) = read(LogFormat::Csvlog, DEFAULT_PREFIX, &log);
        assert_eq!(ends(&events), vec![(0, 600), (1, 600), (2, 900)]);
        // The same text from a session (RAISE LOG) is its own message.
        let raised = [
            csv_line(0, 10, "65.a", connect),
            csv_line(100, 10, "65.a", "database system is shut down"),
        ]
        .concat();
        let (raised, raised_asm, raised_live) = read(LogFormat::Csvlog, DEFAULT_PREFIX, &raised);
        assert_eq!(
            ends(&raised),
            vec![(0, 0)],
            "ended by the log's end, not by the line"
        );
        assert_eq!(raised_live, vec![1, 1]);
        assert_eq!(raised_asm.counts().ended_restart, 0);
        assert_eq!(live, vec![1, 2, 2, 2, 2, 2, 0, 0, 1, 0]);
        let c = asm.counts();
        assert_eq!((c.ended_restart, c.ended_pid_reused), (3, 0));
    }

    #[test]
    fn jsonlog_pids_end_sessions_whatever_their_ids() {
        let line = |ms: u32, pid: u32, session: &str, message: &str| {
            format!(
                "{{\"timestamp\":\"2026-11-28 18:00:00.{ms:03} UTC\",\"user\":\"u\",\"dbname\":\"d\",\"pid\":{pid},\"session_id\":\"{session}\",\"error_severity\":\"LOG\",\"message\":\"{message}\"}}\n"
            )
        };
        let log = [
            line(0, 7, "first", "statement: select 1"),
            line(10, 8, "second", "statement: select 1"),
            line(20, 7, "third", "statement: select 1"),
            line(30, 8, "second", "statement: select 2"),
        ]
        .concat();
        let (events, asm, _) = read(LogFormat::Jsonlog, DEFAULT_PREFIX, &log);
        assert_eq!(ends(&events), vec![(0, 20), (1, 30), (2, 20)]);
        assert_eq!(asm.counts().ended_pid_reused, 1);
    }
}
