//! Reading a command's answer: framing backend messages, keeping the result boundaries
//! libpq would report (one result per CommandComplete/EmptyQuery/Error), the row count
//! and the last row of the current result for `\gset`/`\aset`, and turning errors into
//! pgbench's classification and libpq's message text. Reuses its buffers across
//! commands; allocates only when an error or notice is formatted.

use crate::client::{Diagnostics, ErrorStatus};
use crate::errtext;
use crate::proto::{self, ProtocolError};

/// One classified backend message.
#[derive(Debug)]
pub(crate) enum Reply {
    /// A result ended successfully (CommandComplete / EmptyQueryResponse).
    ResultDone,
    /// An ErrorResponse.
    Error {
        /// pgbench's classification of the SQLSTATE.
        status: ErrorStatus,
        /// The message as `PQerrorMessage` renders it, without the trailing newline.
        text: String,
    },
    /// CopyIn/CopyOut/CopyBoth response (pgbench aborts).
    Copy,
    /// ReadyForQuery with the transaction status byte.
    Ready(u8),
    /// Anything else (ParseComplete, BindComplete, rows, …).
    Other,
}

/// Result tracking for the command being read.
#[derive(Debug, Default)]
pub(crate) struct ReplyState {
    /// Index of the result being read (pgbench's `qrynum`).
    pub qrynum: u32,
    /// At least one result ended.
    pub any_result: bool,
    /// Capture rows for `\gset`/`\aset`.
    pub capture: bool,
    cur_tuples: bool,
    cur_ntuples: u64,
    /// The last ended result returned tuples (had a RowDescription).
    pub last_had_tuples: bool,
    /// Its number of rows.
    pub last_ntuples: u64,
    names: Vec<u8>,
    name_ends: Vec<usize>,
    row: Vec<u8>,
    /// (start, end) of each value in `row`; `usize::MAX` start = NULL.
    row_vals: Vec<(usize, usize)>,
    cap_ntuples: u64,
}

impl ReplyState {
    /// Starts reading the answer to a new command.
    pub fn reset(&mut self) {
        self.qrynum = 0;
        self.any_result = false;
        self.capture = false;
        self.cur_tuples = false;
        self.cur_ntuples = 0;
        self.last_had_tuples = false;
        self.last_ntuples = 0;
        self.cap_ntuples = 0;
    }

    /// Closes the current result.
    pub fn end_result(&mut self) {
        self.last_had_tuples = self.cur_tuples;
        self.last_ntuples = self.cur_ntuples;
        self.cur_tuples = false;
        self.cur_ntuples = 0;
        self.qrynum += 1;
        self.any_result = true;
    }

    /// Rows captured in the most recent result that had a row description.
    pub fn captured_rows(&self) -> u64 {
        self.cap_ntuples
    }

    /// Kept for the machine's capture check: true when rows were captured.
    pub fn cur_had_tuples_or_last(&self) -> bool {
        self.cap_ntuples > 0
    }

    /// (column name, value) pairs of the last captured row.
    pub fn captured(&self) -> impl Iterator<Item = (&[u8], Option<&[u8]>)> {
        let mut start = 0;
        self.name_ends.iter().enumerate().map(move |(i, &end)| {
            let name = &self.names[start..end];
            start = end;
            let val = self.row_vals.get(i).and_then(|&(s, e)| {
                if s == usize::MAX {
                    None
                } else {
                    Some(&self.row[s..e])
                }
            });
            (name, val)
        })
    }

    /// Frames the next message of `data`: `Ok(None)` when incomplete, else the reply and
    /// the bytes it used.
    pub fn next(
        &mut self,
        data: &[u8],
        diag: &mut dyn Diagnostics,
    ) -> Result<Option<(Reply, usize)>, ProtocolError> {
        let Some((tag, body, used)) = proto::frame(data)? else {
            return Ok(None);
        };
        let reply = match tag {
            b'T' => {
                self.cur_tuples = true;
                self.cur_ntuples = 0;
                if self.capture {
                    self.cap_ntuples = 0;
                    self.names.clear();
                    self.name_ends.clear();
                    for n in proto::row_description_names(body) {
                        self.names.extend_from_slice(n);
                        self.name_ends.push(self.names.len());
                    }
                }
                Reply::Other
            }
            b'D' => {
                self.cur_ntuples += 1;
                if self.capture {
                    self.cap_ntuples = self.cur_ntuples;
                    self.row.clear();
                    self.row_vals.clear();
                    for v in proto::data_row_values(body) {
                        match v {
                            None => self.row_vals.push((usize::MAX, 0)),
                            Some(b) => {
                                let s = self.row.len();
                                self.row.extend_from_slice(b);
                                self.row_vals.push((s, self.row.len()));
                            }
                        }
                    }
                }
                Reply::Other
            }
            b'C' | b'I' => Reply::ResultDone,
            b'E' => {
                let f = proto::error_fields(body);
                let status = match f.code {
                    "40001" => ErrorStatus::Serialization,
                    "40P01" => ErrorStatus::Deadlock,
                    _ => ErrorStatus::Other,
                };
                Reply::Error {
                    status,
                    text: errtext::pq_message(&f),
                }
            }
            b'N' => {
                let f = proto::error_fields(body);
                let mut text = errtext::pq_message(&f);
                text.push('\n');
                diag.notice(&text);
                Reply::Other
            }
            b'G' | b'H' | b'W' => Reply::Copy,
            b'Z' => Reply::Ready(body.first().copied().unwrap_or(0)),
            _ => Reply::Other,
        };
        Ok(Some((reply, used)))
    }
}
