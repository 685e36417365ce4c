//! Backend message decoder: arbitrary bytes must decode to messages or errors,
//! never panic, and every decoded row/description/error must be walkable.
#![no_main]

use libfuzzer_sys::fuzz_target;
use pgsurge_wire::codec::{decode, BackendMessage};

fuzz_target!(|data: &[u8]| {
    let mut buf = data;
    while let Ok(Some((msg, len))) = decode(buf) {
        match msg {
            BackendMessage::DataRow(r) => {
                let _ = r.values().count();
            }
            BackendMessage::RowDescription(d) => {
                let _ = d.names().count();
            }
            BackendMessage::ErrorResponse(f) | BackendMessage::NoticeResponse(f) => {
                let _ = f
                    .to_db_error()
                    .pq_message_with_query(Some("select 1\nfrom t"));
            }
            _ => {}
        }
        buf = &buf[len..];
    }
});
