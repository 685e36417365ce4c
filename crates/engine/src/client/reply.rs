//! Reading a command's answer: framing backend messages, keeping the result boundaries
//! libpq would report (one result per CommandComplete/EmptyQuery/Error), the row count
//! and the last row of the current result for `\gset`/`\aset`, and turning errors into
//! pgbench's classification and libpq's message text. Decoding and the text are
//! `pgsurge-wire`'s; this module only decides what the machine sees. Reuses its buffers
//! across commands; allocates only when an error or notice is formatted.

use pgsurge_wire::codec::{self, BackendMessage, ErrorFields, ProtocolError};
use pgsurge_wire::TransactionStatus;

use crate::client::{Diagnostics, ErrorStatus};

/// Writes the text libpq remembered for the command whose answer is being read (see
/// `Client::query_text`) and says whether there is one. Called only for an error or
/// notice with a statement position, the one case where the text shows.
pub(crate) type QueryText<'q> = dyn FnMut(&mut Vec<u8>) -> bool + 'q;

/// One classified backend message: a byte or two, returned in registers (an error's
/// text waits in [`ReplyState::error_text`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Reply {
    /// A result ended successfully (CommandComplete / EmptyQueryResponse).
    ResultDone,
    /// An ErrorResponse, classified as pgbench does by its SQLSTATE.
    Error(ErrorStatus),
    /// CopyIn/CopyOut/CopyBoth response (pgbench aborts).
    Copy,
    /// ReadyForQuery with the transaction status.
    Ready(TransactionStatus),
    /// Anything else (ParseComplete, BindComplete, rows, …).
    Other,
}

/// Result tracking for the command being read (in declaration order, `repr(C)`: the
/// counters read per statement before the buffers used only by `\gset`/`\aset`).
#[derive(Debug, Default)]
#[repr(C)]
pub(crate) struct ReplyState {
    /// Index of the result being read (pgbench's `qrynum`).
    pub qrynum: u32,
    /// At least one result ended.
    pub any_result: bool,
    /// Capture rows for `\gset`/`\aset`.
    pub capture: bool,
    cur_tuples: bool,
    /// The last ended result returned tuples (had a RowDescription).
    pub last_had_tuples: bool,
    cur_ntuples: u64,
    /// Its number of rows.
    pub last_ntuples: u64,
    /// A result with a row description and no row ended since the client last
    /// cleared this (at the start of each transaction run on a standby).
    pub empty_result: bool,
    cap_ntuples: u64,
    /// Behind a pointer: with hundreds of clients, buffers inside the client would widen
    /// what each statement brings into cache.
    cap: Box<Captured>,
}

/// The last row captured for `\gset`/`\aset` and its column names, and the text of the
/// last error.
#[derive(Debug, Default)]
struct Captured {
    /// The last ErrorResponse as `PQerrorMessage` renders it, without the trailing newline
    /// (pgbench's logging drops it).
    error: String,
    /// Its SQLSTATE.
    code: [u8; 5],
    names: Vec<u8>,
    name_ends: Vec<usize>,
    row: Vec<u8>,
    /// (start, end) of each value in `row`; `usize::MAX` start = NULL.
    row_vals: Vec<(usize, usize)>,
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
        self.empty_result |= self.cur_tuples && self.cur_ntuples == 0;
        self.last_had_tuples = self.cur_tuples;
        self.last_ntuples = self.cur_ntuples;
        self.cur_tuples = false;
        self.cur_ntuples = 0;
        self.qrynum += 1;
        self.any_result = true;
    }

    /// The text of the last [`Reply::Error`].
    pub fn error_text(&self) -> &str {
        &self.cap.error
    }

    /// The SQLSTATE of the last [`Reply::Error`].
    pub fn error_code(&self) -> &[u8; 5] {
        &self.cap.code
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
        let cap = &*self.cap;
        cap.name_ends.iter().enumerate().map(move |(i, &end)| {
            let name = &cap.names[start..end];
            start = end;
            let val = cap.row_vals.get(i).and_then(|&(s, e)| {
                if s == usize::MAX {
                    None
                } else {
                    Some(&cap.row[s..e])
                }
            });
            (name, val)
        })
    }

    /// The messages of a plain answer (BindComplete, RowDescription and DataRow when
    /// nothing is captured, CommandComplete, ReadyForQuery …), classified straight from
    /// the header: `None` for anything else, or an incomplete or odd message, which
    /// [`ReplyState::next`] then decodes (and reports) in full. Same replies, same
    /// checks of row messages, without building a decoded message.
    #[inline(always)]
    pub fn next_plain(&mut self, data: &[u8]) -> Option<(Reply, usize)> {
        let header = data.get(..5)?;
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        if len < 4 || data.len() <= len {
            return None;
        }
        let body = &data[5..len + 1];
        let reply = match header[0] {
            b'1' | b'2' | b'3' | b'n' => Reply::Other,
            // libpq reads the tag up to its NUL and does not look further.
            b'C' if body.last() == Some(&0) => Reply::ResultDone,
            b'Z' if len == 5 => Reply::Ready(TransactionStatus::from_byte(body[0])),
            b'T' if !self.capture && codec::row_message_ok(b'T', body) => {
                self.cur_tuples = true;
                self.cur_ntuples = 0;
                Reply::Other
            }
            b'D' if !self.capture && codec::row_message_ok(b'D', body) => {
                self.cur_ntuples += 1;
                Reply::Other
            }
            _ => return None,
        };
        Some((reply, len + 1))
    }

    /// Consumes the plain messages at the start of `data` ([`ReplyState::next_plain`])
    /// up to the first one the machine acts on, a result's end or ReadyForQuery: returns
    /// it, if one came, and the bytes used. The others (BindComplete, rows, …) are
    /// consumed without being returned: every reader ignores [`Reply::Other`].
    #[inline]
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    pub fn next_plain_significant(&mut self, data: &[u8]) -> (Option<Reply>, usize) {
        let mut used = 0;
        while let Some((reply, n)) = self.next_plain(&data[used..]) {
            used += n;
            if reply != Reply::Other {
                return (Some(reply), used);
            }
        }
        (None, used)
    }

    /// Decodes the next message of `data`: `Ok(None)` when incomplete, else the reply and
    /// the bytes it used. `query` supplies the command's text for error positions.
    pub fn next(
        &mut self,
        data: &[u8],
        diag: &mut dyn Diagnostics,
        query: &mut QueryText<'_>,
    ) -> Result<Option<(Reply, usize)>, ProtocolError> {
        let Some((msg, used)) = codec::decode(data)? else {
            return Ok(None);
        };
        let reply = match msg {
            BackendMessage::RowDescription(desc) => {
                self.cur_tuples = true;
                self.cur_ntuples = 0;
                if self.capture {
                    self.cap_ntuples = 0;
                    let cap = &mut *self.cap;
                    cap.names.clear();
                    cap.name_ends.clear();
                    for n in desc.name_bytes() {
                        cap.names.extend_from_slice(n);
                        cap.name_ends.push(cap.names.len());
                    }
                }
                Reply::Other
            }
            BackendMessage::DataRow(row) => {
                self.cur_ntuples += 1;
                if self.capture {
                    self.cap_ntuples = self.cur_ntuples;
                    let cap = &mut *self.cap;
                    cap.row.clear();
                    cap.row_vals.clear();
                    for v in row.values() {
                        match v {
                            None => cap.row_vals.push((usize::MAX, 0)),
                            Some(b) => {
                                let s = cap.row.len();
                                cap.row.extend_from_slice(b);
                                cap.row_vals.push((s, cap.row.len()));
                            }
                        }
                    }
                }
                Reply::Other
            }
            BackendMessage::CommandComplete(_) | BackendMessage::EmptyQueryResponse => {
                Reply::ResultDone
            }
            BackendMessage::ErrorResponse(f) => {
                let status = match f.code() {
                    "40001" => ErrorStatus::Serialization,
                    "40P01" => ErrorStatus::Deadlock,
                    _ => ErrorStatus::Other,
                };
                let mut text = with_query(&f, query, ErrorFields::pq_error_text);
                if text.ends_with('\n') {
                    text.pop();
                }
                self.cap.error = text;
                let code = f.code().as_bytes();
                self.cap.code = [0; 5];
                let n = code.len().min(5);
                self.cap.code[..n].copy_from_slice(&code[..n]);
                Reply::Error(status)
            }
            BackendMessage::NoticeResponse(f) => {
                diag.notice(&with_query(&f, query, ErrorFields::pq_notice_text));
                Reply::Other
            }
            BackendMessage::CopyInResponse(_)
            | BackendMessage::CopyOutResponse(_)
            | BackendMessage::CopyBothResponse(_) => Reply::Copy,
            BackendMessage::ReadyForQuery(status) => Reply::Ready(status),
            _ => Reply::Other,
        };
        Ok(Some((reply, used)))
    }
}

/// Renders `f` with `render`, fetching the query text only when the position needs it
/// (libpq keeps the text with the result only then, too).
fn with_query<'m>(
    f: &ErrorFields<'m>,
    query: &mut QueryText<'_>,
    render: fn(&ErrorFields<'m>, Option<&str>) -> String,
) -> String {
    if !f.has_position() {
        return render(f, None);
    }
    let mut text = Vec::new();
    if query(&mut text) {
        render(f, Some(&String::from_utf8_lossy(&text)))
    } else {
        render(f, None)
    }
}

/// The commands whose answers are still to come, in the order they were sent, with the
/// Syncs that close each group: prepares sent before a command or a pipeline, and a
/// pipeline's commands. It tells which command an error answers when several are in
/// flight, as libpq's command queue does. Outside those cases it is empty. Keeps its
/// allocation across transactions.
#[derive(Debug, Default)]
pub(crate) struct InFlight {
    /// Command indices and [`InFlight::SYNC`] marks.
    entries: Vec<u32>,
    /// The first entry not answered yet.
    head: usize,
}

impl InFlight {
    const SYNC: u32 = u32::MAX;

    /// Forgets everything (new connection).
    pub fn clear(&mut self) {
        self.entries.clear();
        self.head = 0;
    }

    /// Command `cmd` of the current script was sent.
    pub fn command(&mut self, cmd: usize) {
        self.entries.push(cmd as u32);
    }

    /// A Sync was sent.
    pub fn sync(&mut self) {
        self.entries.push(Self::SYNC);
    }

    /// The command whose answer is being read, if any.
    pub fn front(&self) -> Option<usize> {
        match self.entries.get(self.head) {
            Some(&e) if e != Self::SYNC => Some(e as usize),
            _ => None,
        }
    }

    /// The front command's result ended (successfully or with its error).
    pub fn result_done(&mut self) {
        if self.front().is_some() {
            self.head += 1;
        }
    }

    /// A ReadyForQuery answered the next Sync: the commands before it are done, including
    /// those the server skipped after an error.
    pub fn synced(&mut self) {
        while let Some(&e) = self.entries.get(self.head) {
            self.head += 1;
            if e == Self::SYNC {
                break;
            }
        }
        if self.head >= self.entries.len() {
            self.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::InFlight;

    #[test]
    fn in_flight_follows_results_and_syncs() {
        let mut f = InFlight::default();
        assert_eq!(f.front(), None);
        // Two prepares, each with its Sync.
        f.command(3);
        f.sync();
        f.command(5);
        f.sync();
        assert_eq!(f.front(), Some(3));
        f.synced();
        assert_eq!(f.front(), Some(5));
        f.synced();
        assert_eq!(f.front(), None);
        // A pipeline of three commands; the second fails, the third is skipped.
        f.command(1);
        f.command(2);
        f.command(4);
        f.sync();
        f.command(6);
        f.sync();
        f.result_done();
        assert_eq!(f.front(), Some(2));
        f.result_done();
        f.synced();
        assert_eq!(f.front(), Some(6));
        f.result_done();
        assert_eq!(f.front(), None);
        f.result_done(); // at a Sync mark: stays there
        f.synced();
        assert!(f.entries.is_empty());
    }
}
