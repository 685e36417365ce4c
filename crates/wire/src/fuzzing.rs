//! The bodies of the fuzz targets over this crate (`fuzz/fuzz_targets/decode.rs` and
//! `conninfo.rs`), kept in the library so inputs found by the fuzzer replay as ordinary
//! tests (`tests/fuzz_replay.rs`).

use crate::codec::{decode, BackendMessage};
use crate::redact::{passwords, redact_with};
use crate::ConnConfig;

/// Decodes `data` as a stream of backend messages and walks every row, description and
/// error. Must never panic.
#[doc(hidden)]
pub fn decode_one(data: &[u8]) {
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
}

/// Parses `data` as a conninfo string or URI. Must never panic, and the text shown
/// after redaction must not give the password back: parsed again, it yields the mask
/// (or no password), never the original one.
#[doc(hidden)]
pub fn conninfo_one(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let env = |k: &str| (k == "HOME").then(|| "/nonexistent".to_string());
    let Ok(config) = ConnConfig::parse_with_env(text, &env) else {
        return;
    };
    let Some(pw) = config.password() else {
        return;
    };
    let shown = redact_with(text, &passwords(text));
    if let Ok(again) = ConnConfig::parse_with_env(&shown, &env) {
        let leaked = again.password() == Some(pw) && !crate::redact::MASK.contains(pw);
        assert!(
            !leaked,
            "password {pw:?} of {text:?} survives redaction as {shown:?}"
        );
    }
}
