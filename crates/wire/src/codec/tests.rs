//! Decoder tests: every message kind pgbench meets, fed whole and split at every
//! byte boundary; encoders checked against the protocol layout.

use super::*;
use bytes::{Buf, BufMut, BytesMut};

fn msg(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut v = vec![tag];
    v.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    v.extend_from_slice(body);
    v
}

/// A realistic server response to an extended-protocol select, plus extras.
fn stream() -> Vec<u8> {
    let mut s = Vec::new();
    s.extend(msg(b'1', b""));
    s.extend(msg(b'2', b""));
    // RowDescription: one column "abalance".
    let mut rd = vec![0, 1];
    rd.extend_from_slice(b"abalance\0");
    rd.extend_from_slice(&[0; 18]);
    s.extend(msg(b'T', &rd));
    // DataRow: "42", NULL, "".
    let mut dr = vec![0, 3];
    dr.extend_from_slice(&2i32.to_be_bytes());
    dr.extend_from_slice(b"42");
    dr.extend_from_slice(&(-1i32).to_be_bytes());
    dr.extend_from_slice(&0i32.to_be_bytes());
    s.extend(msg(b'D', &dr));
    s.extend(msg(b'C', b"SELECT 1\0"));
    s.extend(msg(b'N', b"SNOTICE\0VNOTICE\0C00000\0Mhello\0\0"));
    s.extend(msg(b'S', b"application_name\0pgbench\0"));
    s.extend(msg(
        b'E',
        b"SERROR\0VERROR\0C40001\0Mcould not serialize access due to concurrent update\0\0",
    ));
    s.extend(msg(b'Z', b"E"));
    s
}

#[derive(Debug, PartialEq)]
enum Seen {
    ParseComplete,
    BindComplete,
    Columns(Vec<String>),
    Row(Vec<Option<Vec<u8>>>),
    Complete(String),
    Notice(String),
    Param(String, String),
    Error(String, String),
    Ready(TransactionStatus),
}

fn seen(m: &BackendMessage<'_>) -> Seen {
    match m {
        BackendMessage::ParseComplete => Seen::ParseComplete,
        BackendMessage::BindComplete => Seen::BindComplete,
        BackendMessage::RowDescription(d) => Seen::Columns(d.names().map(String::from).collect()),
        BackendMessage::DataRow(r) => {
            Seen::Row(r.values().map(|v| v.map(<[u8]>::to_vec)).collect())
        }
        BackendMessage::CommandComplete(t) => Seen::Complete(t.to_string()),
        BackendMessage::NoticeResponse(f) => Seen::Notice(f.to_db_error().message),
        BackendMessage::ParameterStatus { name, value } => {
            Seen::Param(name.to_string(), value.to_string())
        }
        BackendMessage::ErrorResponse(f) => {
            Seen::Error(f.code().to_string(), f.to_db_error().message)
        }
        BackendMessage::ReadyForQuery(s) => Seen::Ready(*s),
        other => panic!("unexpected {other:?}"),
    }
}

fn expected() -> Vec<Seen> {
    vec![
        Seen::ParseComplete,
        Seen::BindComplete,
        Seen::Columns(vec!["abalance".into()]),
        Seen::Row(vec![Some(b"42".to_vec()), None, Some(vec![])]),
        Seen::Complete("SELECT 1".into()),
        Seen::Notice("hello".into()),
        Seen::Param("application_name".into(), "pgbench".into()),
        Seen::Error(
            "40001".into(),
            "could not serialize access due to concurrent update".into(),
        ),
        Seen::Ready(TransactionStatus::InError),
    ]
}

fn drain(buf: &mut BytesMut, out: &mut Vec<Seen>) {
    while let Some((m, len)) = decode(buf).expect("valid stream") {
        out.push(seen(&m));
        buf.advance(len);
    }
}

#[test]
fn decodes_whole_stream() {
    let mut buf = BytesMut::from(&stream()[..]);
    let mut out = Vec::new();
    drain(&mut buf, &mut out);
    assert_eq!(out, expected());
    assert!(buf.is_empty());
}

#[test]
fn decodes_split_at_every_boundary() {
    let s = stream();
    for cut in 0..=s.len() {
        let mut buf = BytesMut::new();
        let mut out = Vec::new();
        buf.extend_from_slice(&s[..cut]);
        drain(&mut buf, &mut out);
        buf.extend_from_slice(&s[cut..]);
        drain(&mut buf, &mut out);
        assert_eq!(out, expected(), "cut at {cut}");
        assert!(buf.is_empty());
    }
}

#[test]
fn decodes_byte_by_byte() {
    let s = stream();
    let mut buf = BytesMut::new();
    let mut out = Vec::new();
    for b in s {
        buf.put_u8(b);
        drain(&mut buf, &mut out);
    }
    assert_eq!(out, expected());
}

#[test]
fn rejects_corrupt_input() {
    // Length word below 4.
    assert!(decode(&[b'Z', 0, 0, 0, 3, b'I']).is_err());
    // DataRow claims more bytes than present.
    let mut dr = vec![0, 1];
    dr.extend_from_slice(&10i32.to_be_bytes());
    dr.extend_from_slice(b"ab");
    assert!(decode(&msg(b'D', &dr)).is_err());
    // Unterminated command tag.
    assert!(decode(&msg(b'C', b"SELECT 1")).is_err());
    // ErrorResponse without the final NUL.
    assert!(decode(&msg(b'E', b"SERROR\0")).is_err());
    // ReadyForQuery without status.
    assert!(decode(&msg(b'Z', b"")).is_err());
    // Incomplete header: need more bytes, not an error.
    assert_eq!(decode(&[b'Z', 0, 0]).expect("ok"), None);
}

#[test]
fn error_fields_to_db_error() {
    let body = b"SERROR\0VERROR\0C42P01\0Mrelation \"x\" does not exist\0P15\0Fparse_relation.c\0L1392\0Rparser\0\0";
    let m = msg(b'E', body);
    let (parsed, len) = decode(&m).expect("ok").expect("whole");
    assert_eq!(len, m.len());
    let BackendMessage::ErrorResponse(f) = parsed else {
        panic!("not an error: {parsed:?}")
    };
    let e = f.to_db_error();
    assert_eq!(e.code, "42P01");
    assert_eq!(e.position, Some(15));
    assert_eq!(e.line, Some(1392));
    assert_eq!(
        e.pq_message(),
        "ERROR:  relation \"x\" does not exist at character 15\n"
    );
}

#[test]
fn encoders_produce_protocol_layout() {
    let mut buf = BytesMut::new();
    bind("", "P_0", [Some(&b"7"[..]), None], &mut buf).expect("bind");
    let mut expect = vec![b'B'];
    let mut body = Vec::new();
    body.extend_from_slice(b"\0P_0\0");
    body.extend_from_slice(&0u16.to_be_bytes()); // no param formats: all text
    body.extend_from_slice(&2u16.to_be_bytes());
    body.extend_from_slice(&1i32.to_be_bytes());
    body.extend_from_slice(b"7");
    body.extend_from_slice(&(-1i32).to_be_bytes());
    body.extend_from_slice(&1u16.to_be_bytes()); // one result format, as libpq sends:
    body.extend_from_slice(&0u16.to_be_bytes()); // text
    expect.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    expect.extend_from_slice(&body);
    assert_eq!(&buf[..], &expect[..]);

    buf.clear();
    parse("P_1", "select $1", &mut buf).expect("parse");
    describe_portal("", &mut buf).expect("describe");
    execute("", 0, &mut buf).expect("execute");
    sync(&mut buf);
    let tags: Vec<u8> = {
        let mut v = Vec::new();
        let mut b = &buf[..];
        while !b.is_empty() {
            v.push(b[0]);
            let len = u32::from_be_bytes([b[1], b[2], b[3], b[4]]) as usize;
            b = &b[1 + len..];
        }
        v
    };
    assert_eq!(tags, b"PDES");
    // Parse body: name, query, zero parameter types.
    assert_eq!(&buf[5..5 + 4], b"P_1\0");
    assert!(
        query("a\0b", &mut buf).is_err(),
        "NUL in SQL must be refused"
    );
}

/// Random bytes (a fixed xorshift stream) must decode to messages or errors, never
/// panic, and every decoded row must be iterable.
#[test]
fn random_input_never_panics() {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let tags = b"RKSZTDCIEN123nstGHWdcAv?";
    for _ in 0..20_000 {
        let len = (next() % 40) as usize;
        let mut body: Vec<u8> = (0..len).map(|_| next() as u8).collect();
        if next() % 3 == 0 {
            body.iter_mut().for_each(|b| *b %= 4);
        }
        let tag = tags[(next() % tags.len() as u64) as usize];
        let m = msg(tag, &body);
        if let Ok(Some((parsed, used))) = decode(&m) {
            assert_eq!(used, m.len());
            match parsed {
                BackendMessage::DataRow(r) => assert_eq!(r.values().count(), r.len()),
                BackendMessage::RowDescription(d) => assert_eq!(d.names().count(), d.len()),
                BackendMessage::ErrorResponse(f) | BackendMessage::NoticeResponse(f) => {
                    let _ = f.to_db_error().pq_message_with_query(Some("select 1"));
                }
                _ => {}
            }
        }
    }
}

fn fields_of(m: &[u8]) -> ErrorFields<'_> {
    match decode(m).expect("ok").expect("whole").0 {
        BackendMessage::ErrorResponse(f) | BackendMessage::NoticeResponse(f) => f,
        other => panic!("not an error or notice: {other:?}"),
    }
}

/// The borrowed path renders what the owned `DbError` path renders, and the query text
/// decides between the `LINE n:` excerpt and ` at character N`.
#[test]
fn error_text_from_borrowed_fields() {
    let m = msg(
        b'E',
        b"SERROR\0VERROR\0C42703\0Mcolumn \"nosuch\" does not exist\0P8\0HPerhaps you meant \"x\".\0\0",
    );
    let f = fields_of(&m);
    assert!(f.has_position());
    let with_query = f.pq_error_text(Some("select nosuch from t"));
    assert_eq!(
        with_query,
        "ERROR:  column \"nosuch\" does not exist\nLINE 1: select nosuch from t\n               ^\nHINT:  Perhaps you meant \"x\".\n"
    );
    assert_eq!(
        with_query,
        f.to_db_error()
            .pq_message_with_query(Some("select nosuch from t"))
    );
    assert_eq!(
        f.pq_error_text(None),
        "ERROR:  column \"nosuch\" does not exist at character 8\nHINT:  Perhaps you meant \"x\".\n"
    );
}

/// An internal position is shown on the internal query, whatever the statement text;
/// CONTEXT is printed for errors and left out of notices, as libpq's default
/// `PQSHOW_CONTEXT_ERRORS` does.
#[test]
fn internal_query_excerpt_and_context_only_for_errors() {
    let body = b"SERROR\0C42703\0Mcolumn \"nosuch\" does not exist\0p8\0qSELECT nosuch\0WPL/pgSQL function inline_code_block line 1 at PERFORM\0\0";
    let m = msg(b'E', body);
    let expect = "ERROR:  column \"nosuch\" does not exist\nLINE 1: SELECT nosuch\n               ^\nQUERY:  SELECT nosuch\nCONTEXT:  PL/pgSQL function inline_code_block line 1 at PERFORM\n";
    assert_eq!(fields_of(&m).pq_error_text(Some("do $$...$$")), expect);
    assert_eq!(fields_of(&m).pq_error_text(None), expect);
    let n = msg(
        b'N',
        b"SNOTICE\0C00000\0Mhello\0WPL/pgSQL function inline_code_block line 1 at RAISE\0\0",
    );
    assert_eq!(fields_of(&n).pq_notice_text(None), "NOTICE:  hello\n");
    assert!(!fields_of(&n).has_position());
}

/// Column names that are not UTF-8 (a LATIN1 client encoding) still decode.
#[test]
fn row_description_with_non_utf8_name() {
    let mut rd = vec![0, 1];
    rd.extend_from_slice(b"caf\xe9\0");
    rd.extend_from_slice(&[0; 18]);
    let m = msg(b'T', &rd);
    let BackendMessage::RowDescription(d) = decode(&m).expect("ok").expect("whole").0 else {
        panic!("not a row description")
    };
    assert_eq!(d.name_bytes().collect::<Vec<_>>(), vec![&b"caf\xe9"[..]]);
    assert_eq!(d.names().collect::<Vec<_>>(), vec![""]);
}
