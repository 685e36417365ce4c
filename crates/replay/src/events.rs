//! What a log becomes for a replay: a stream of [`Event`]s in log order — a session
//! connects, runs a statement, learns how a statement ended in the log, disconnects.
//! Times are offsets (µs) from the log's first entry. Owns these types only.
//!
//! A statement's buffers (a simple query's text, an execution's parameter list) are
//! handed back to the reader once the statement was sent
//! ([`crate::sessions::Assembler::recycle`]) and refilled for later statements.

use std::sync::Arc;

use crate::fingerprint::FpId;
use crate::log::params::Params;
use crate::log::Position;

/// A session of the log, numbered from 0 in the order the log shows them.
pub type SessionNo = u32;

/// One thing a session does, or learns, in the log.
#[derive(Debug, Clone, PartialEq)]
pub enum Event {
    /// The session starts.
    Connect(Connect),
    /// The session sends a statement.
    Statement(Statement),
    /// How the session's last statement ended in the log, when not in success.
    Outcome(Outcome),
    /// The session ends.
    Disconnect {
        /// Which.
        session: SessionNo,
        /// When, µs from the log's start.
        offset_us: i64,
    },
}

impl Event {
    /// Its time in the log (µs from the log's start; an outcome has none: 0).
    pub fn offset_us(&self) -> i64 {
        match self {
            Event::Connect(c) => c.offset_us,
            Event::Statement(s) => s.offset_us,
            Event::Disconnect { offset_us, .. } => *offset_us,
            Event::Outcome(_) => 0,
        }
    }

    /// The session the event belongs to.
    pub fn session(&self) -> SessionNo {
        match self {
            Event::Connect(c) => c.session,
            Event::Statement(s) => s.session,
            Event::Outcome(o) => o.session,
            Event::Disconnect { session, .. } => *session,
        }
    }
}

/// A session's start.
#[derive(Debug, Clone, PartialEq)]
pub struct Connect {
    /// Which.
    pub session: SessionNo,
    /// When, µs from the log's start.
    pub offset_us: i64,
    /// The logged user, when the log has it.
    pub user: Option<Arc<str>>,
    /// The logged database, when the log has it.
    pub database: Option<Arc<str>>,
}

/// A statement as the log recorded it.
#[derive(Debug, Clone, PartialEq)]
pub struct Statement {
    /// Its place among all the log's statements (0-based, log order).
    pub seq: u64,
    /// Its session.
    pub session: SessionNo,
    /// When it started, µs from the log's start.
    pub offset_us: i64,
    /// Its fingerprint.
    pub fingerprint: FpId,
    /// What is sent.
    pub request: Request,
    /// Where the log has it.
    pub at: Position,
}

/// What a statement sends.
#[derive(Debug, Clone, PartialEq)]
pub enum Request {
    /// A simple query (`statement: …`).
    Simple(String),
    /// An extended-protocol execution (`execute …:` with `DETAIL: parameters: …`).
    Execute {
        /// The prepared statement's name in the log (`None`: the unnamed statement,
        /// parsed with each execution); one text per name and session is shared.
        name: Option<Arc<str>>,
        /// The statement.
        sql: Arc<str>,
        /// Bound values as text.
        params: Params,
    },
}

impl Request {
    /// The statement's text.
    pub fn sql(&self) -> &str {
        match self {
            Request::Simple(s) => s,
            Request::Execute { sql, .. } => sql,
        }
    }
}

/// How a statement ended in the log, other than in success.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Its session.
    pub session: SessionNo,
    /// The statement.
    pub seq: u64,
    /// How.
    pub kind: LoggedEnd,
}

/// A logged statement's unsuccessful end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LoggedEnd {
    /// It failed (`ERROR:`), with the SQLSTATE when the log has it.
    Failed {
        /// SQLSTATE.
        sqlstate: Option<[u8; 5]>,
    },
    /// Its client cancelled it this long after it started.
    Cancelled {
        /// µs from its start to the cancel.
        after_us: i64,
    },
}
