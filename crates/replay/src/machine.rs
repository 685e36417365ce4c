//! One replayed session's side of the protocol, without I/O: a logged statement →
//! the messages that send it (a simple `Query`; for an execute `Parse` once per
//! prepared statement and session, then `Bind`/`Execute`/`Sync`), and the server's
//! answer → how the statement ended. Result rows are read past, never kept. A
//! `COPY … FROM STDIN` is answered with `CopyFail` (a log holds no COPY data).

use std::collections::HashMap;
use std::sync::Arc;

use pgsurge_wire::codec::{self, append, BackendMessage};
use pgsurge_wire::TransactionStatus;

use crate::events::Request;

/// How a replayed statement ended.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Reply {
    /// The first error's SQLSTATE and message.
    pub error: Option<(String, String)>,
}

/// The answer is not the protocol.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the server's answer is not the protocol: {0}")]
pub struct ProtocolError(pub String);

/// One session's protocol state.
#[derive(Debug, Default)]
pub struct SessionMachine {
    /// The replay's own name of each prepared statement text of the session it drives.
    prepared: HashMap<Arc<str>, Box<[u8]>>,
    /// A named statement whose `Parse` is in the request under way.
    parsing: Option<(Arc<str>, Box<[u8]>)>,
    error: Option<(String, String)>,
    status: Option<TransactionStatus>,
}

impl SessionMachine {
    /// A session that has sent nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Whether the session's last answer left it inside a transaction block.
    pub fn in_transaction(&self) -> bool {
        matches!(
            self.status,
            Some(TransactionStatus::InTransaction | TransactionStatus::InError)
        )
    }

    /// Appends the messages of `request` to `out`.
    pub fn encode(&mut self, request: &Request, out: &mut Vec<u8>) {
        self.error = None;
        match request {
            Request::Simple(sql) => append::query(out, sql.as_bytes()),
            Request::Execute { name, sql, params } => {
                let stmt: &[u8] = match name {
                    None => {
                        append::parse(out, b"", sql.as_bytes());
                        b""
                    }
                    Some(_) => {
                        if !self.prepared.contains_key(sql) {
                            let own = format!("r{}", self.prepared.len())
                                .into_bytes()
                                .into_boxed_slice();
                            append::parse(out, &own, sql.as_bytes());
                            self.parsing = Some((Arc::clone(sql), own));
                        }
                        match &self.parsing {
                            Some((text, own)) if Arc::ptr_eq(text, sql) || **text == **sql => own,
                            _ => &self.prepared[sql],
                        }
                    }
                };
                let mut bind = append::BindWriter::new(out, stmt, params.len() as u16);
                for p in params.iter() {
                    match p {
                        Some(v) => bind.param(v.as_bytes()),
                        None => bind.null(),
                    }
                }
                bind.finish();
                append::describe_execute_sync(out);
            }
        }
    }

    /// Reads the answer in `input`: the bytes used, and the reply once the whole answer
    /// (up to ReadyForQuery) is there. Messages the server expects back (a `CopyFail`)
    /// are appended to `out`.
    pub fn read(
        &mut self,
        input: &[u8],
        out: &mut Vec<u8>,
    ) -> Result<(usize, Option<Reply>), ProtocolError> {
        let mut used = 0;
        loop {
            let decoded =
                codec::decode(&input[used..]).map_err(|e| ProtocolError(e.to_string()))?;
            let Some((msg, len)) = decoded else {
                return Ok((used, None));
            };
            used += len;
            match msg {
                BackendMessage::ErrorResponse(f) if self.error.is_none() => {
                    let message = f
                        .field(b'M')
                        .map(|m| String::from_utf8_lossy(m).into_owned())
                        .unwrap_or_default();
                    self.error = Some((f.code().to_string(), message));
                }
                BackendMessage::ParseComplete => {
                    if let Some((text, own)) = self.parsing.take() {
                        self.prepared.insert(text, own);
                    }
                }
                BackendMessage::CopyInResponse(_) => {
                    let w = append::MessageWriter::new(out, b'f');
                    let mut w = w;
                    w.body()
                        .extend_from_slice(b"a replayed log holds no COPY data\0");
                    w.finish();
                }
                BackendMessage::ReadyForQuery(status) => {
                    self.status = Some(status);
                    self.parsing = None;
                    return Ok((
                        used,
                        Some(Reply {
                            error: self.error.take(),
                        }),
                    ));
                }
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut v = vec![tag];
        v.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        v.extend_from_slice(body);
        v
    }

    #[test]
    fn a_named_statement_is_parsed_once_per_session() {
        let mut m = SessionMachine::new();
        let sql: Arc<str> = Arc::from("select $1");
        let req = Request::Execute {
            name: Some(Arc::from("P_1")),
            sql: Arc::clone(&sql),
            params: [Some("1")].into_iter().collect(),
        };
        let mut out = Vec::new();
        m.encode(&req, &mut out);
        assert_eq!(out[0], b'P');
        let mut answer = msg(b'1', b"");
        answer.extend(msg(b'2', b""));
        answer.extend(msg(b'C', b"SELECT 1\0"));
        answer.extend(msg(b'Z', b"I"));
        // Byte by byte: no reply before the end.
        let mut reply = None;
        let mut start = 0;
        for end in 1..=answer.len() {
            let (used, r) = m.read(&answer[start..end], &mut Vec::new()).unwrap();
            start += used;
            if r.is_some() {
                assert_eq!(end, answer.len());
                reply = r;
            }
        }
        assert_eq!(reply, Some(Reply { error: None }));
        out.clear();
        m.encode(&req, &mut out);
        assert_eq!(out[0], b'B', "no second Parse");
    }

    #[test]
    fn errors_and_copy_are_answered() {
        let mut m = SessionMachine::new();
        let mut out = Vec::new();
        m.encode(&Request::Simple("copy t from stdin".into()), &mut out);
        let mut answer = msg(b'G', b"\0\0\0");
        answer.extend(msg(b'E', b"SERROR\0C57014\0Mno\0\0"));
        answer.extend(msg(b'Z', b"T"));
        out.clear();
        let (used, r) = m.read(&answer, &mut out).unwrap();
        assert_eq!(used, answer.len());
        assert_eq!(out[0], b'f');
        assert_eq!(r.unwrap().error, Some(("57014".into(), "no".into())));
        assert!(m.in_transaction());
        assert!(m.read(&[b'Z', 0, 0, 0, 1], &mut out).is_err());
    }
}
