//! [`InitSession`] for `pgsurge_wire::Connection`.
//!
//! Maps the wire crate's blocking helpers onto what the runner needs and turns
//! its errors into libpq's texts (`PQerrorMessage`, with the `LINE n:` excerpt
//! when the server gave a position). Notices are collected through the
//! connection's notice handler while `-i` runs.

use std::borrow::BorrowMut;
use std::io;
use std::sync::{Arc, Mutex};

use pgsurge_wire::{Connection, QueryError};

use crate::session::{Canceller, CopyFailure, Fill, InitSession, SessionError};

/// A wire connection with its notices captured for the runner: borrowed
/// (`&mut Connection`, the caller's initialization connection) or owned (a
/// worker connection of a parallel initialization).
pub struct WireSession<C: BorrowMut<Connection>> {
    conn: C,
    notices: Arc<Mutex<Vec<String>>>,
}

impl<C: BorrowMut<Connection>> WireSession<C> {
    /// Wraps `conn`, routing its notices to [`InitSession::take_notices`].
    /// When dropped, the connection's notice handler prints to stderr again
    /// (libpq's default behaviour).
    pub fn new(mut conn: C) -> Self {
        let notices = Arc::new(Mutex::new(Vec::new()));
        let sink = Arc::clone(&notices);
        conn.borrow_mut().set_notice_handler(Box::new(move |n| {
            if let Ok(mut list) = sink.lock() {
                list.push(n.pq_message());
            }
        }));
        WireSession { conn, notices }
    }
}

impl<C: BorrowMut<Connection>> Drop for WireSession<C> {
    fn drop(&mut self) {
        self.conn
            .borrow_mut()
            .set_notice_handler(Box::new(|n| eprint!("{}", n.pq_message())));
    }
}

/// libpq's `PQerrorMessage` after `sql` failed.
fn session_error(e: &QueryError, sql: &str) -> SessionError {
    let message = match e {
        QueryError::Db(db) => db.pq_message_with_query(Some(sql)),
        other => other.pq_message(),
    };
    SessionError { message }
}

impl<C: BorrowMut<Connection>> InitSession for WireSession<C> {
    fn server_version_num(&self) -> i32 {
        self.conn.borrow().server_version_num()
    }

    fn execute(&mut self, sql: &str) -> Result<(), SessionError> {
        self.conn
            .borrow_mut()
            .execute(sql)
            .map_err(|e| session_error(&e, sql))
    }

    fn query_value(&mut self, sql: &str, param: &str) -> Result<Option<String>, SessionError> {
        let results = self
            .conn
            .borrow_mut()
            .query_params(sql, &[Some(param)])
            .map_err(|e| session_error(&e, sql))?;
        Ok(results.first().and_then(|r| r.get(0, 0)).map(str::to_owned))
    }

    fn copy_in(
        &mut self,
        sql: &str,
        fill: &mut dyn FnMut(&mut Vec<u8>) -> Fill,
    ) -> Result<(), CopyFailure> {
        let mut started = false;
        let result = self
            .conn
            .borrow_mut()
            .copy_in(sql, |buf: &mut Vec<u8>| -> io::Result<bool> {
                started = true;
                Ok(fill(buf) == Fill::More)
            });
        match result {
            Ok(_) => Ok(()),
            Err(e) => {
                let err = session_error(&e, sql);
                Err(match (&e, started) {
                    (_, false) => CopyFailure::Start(err),
                    (QueryError::ConnectionLost { .. }, true) => CopyFailure::Send(err),
                    (_, true) => CopyFailure::End(err),
                })
            }
        }
    }

    fn take_notices(&mut self) -> Vec<String> {
        match self.notices.lock() {
            Ok(mut list) => std::mem::take(&mut *list),
            Err(_) => Vec::new(),
        }
    }

    fn canceller(&self) -> Option<Canceller> {
        let token = self.conn.borrow().cancel_token();
        Some(Box::new(move || {
            // A request that cannot be sent changes nothing: the caller stops
            // generating rows and fails the step anyway.
            let _ = token.cancel();
        }))
    }
}
