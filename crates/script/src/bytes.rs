//! Script files are bytes, not UTF-8: pgbench sends whatever a script holds (LATIN1 text,
//! bytes the server will reject) and stops reading at the first NUL. The parser works on
//! `str`, so a script file is decoded into a lossless text form here and the engine turns
//! SQL back into the exact file bytes before sending it.
//!
//! The text form maps each byte that is not part of valid UTF-8 to one character of the
//! last 128 code points of plane 16 (private use, U+10FF80 + byte − 0x80). Valid UTF-8
//! passes through unchanged, except a character that is itself in that range: its four
//! bytes are escaped one by one, so [`script_bytes`] always gives back the file's bytes.
//! Every escape character is non-ASCII, so the lexer treats an escaped byte as it treats
//! any byte ≥ 0x80 (part of an identifier or a variable name, never a delimiter).

use std::borrow::Cow;

const BASE: u32 = 0x10_FF80;

fn escape(byte: u8) -> char {
    debug_assert!(byte >= 0x80);
    char::from_u32(BASE + u32::from(byte - 0x80)).expect("plane 16 code point")
}

fn unescape(c: char) -> Option<u8> {
    let v = u32::from(c);
    (v >= BASE).then(|| (v - BASE + 0x80) as u8)
}

/// Encoded, an escape character is `F4 8F BE xx` or `F4 8F BF xx`.
fn may_hold_escapes(bytes: &[u8]) -> bool {
    bytes
        .windows(3)
        .any(|w| w[0] == 0xF4 && w[1] == 0x8F && (w[2] == 0xBE || w[2] == 0xBF))
}

/// The text form of a script file's bytes, cut at the first NUL as pgbench cuts it.
pub fn script_text(bytes: &[u8]) -> Cow<'_, str> {
    let bytes = match bytes.iter().position(|&b| b == 0) {
        Some(nul) => &bytes[..nul],
        None => bytes,
    };
    if let Ok(text) = std::str::from_utf8(bytes) {
        if !may_hold_escapes(bytes) {
            return Cow::Borrowed(text);
        }
    }
    let mut out = String::with_capacity(bytes.len() + 16);
    for chunk in bytes.utf8_chunks() {
        for c in chunk.valid().chars() {
            if unescape(c).is_some() {
                let mut buf = [0u8; 4];
                out.extend(c.encode_utf8(&mut buf).bytes().map(escape));
            } else {
                out.push(c);
            }
        }
        out.extend(chunk.invalid().iter().copied().map(escape));
    }
    Cow::Owned(out)
}

/// The bytes a piece of script text stands for (the inverse of [`script_text`]).
pub fn script_bytes(text: &str) -> Cow<'_, [u8]> {
    if !may_hold_escapes(text.as_bytes()) {
        return Cow::Borrowed(text.as_bytes());
    }
    let mut out = Vec::with_capacity(text.len());
    for c in text.chars() {
        match unescape(c) {
            Some(b) => out.push(b),
            None => {
                let mut buf = [0u8; 4];
                out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            }
        }
    }
    Cow::Owned(out)
}

/// Script text for a terminal or a report: the original bytes, with those that are not
/// UTF-8 shown as U+FFFD.
pub fn script_display(text: &str) -> Cow<'_, str> {
    match script_bytes(text) {
        Cow::Borrowed(_) => Cow::Borrowed(text),
        Cow::Owned(bytes) => Cow::Owned(String::from_utf8_lossy(&bytes).into_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_without_escapes_is_borrowed() {
        let t = script_text("SELECT 'é';\n".as_bytes());
        assert!(matches!(t, Cow::Borrowed(_)));
        assert!(matches!(script_bytes(&t), Cow::Borrowed(_)));
    }

    #[test]
    fn every_byte_string_round_trips() {
        let cases: Vec<Vec<u8>> = vec![
            b"SELECT '\xff\xfe';".to_vec(),
            b"SELECT '\xe9t\xe9';".to_vec(),
            "x \u{10FF80} \u{10FFFF} y".as_bytes().to_vec(),
            b"\xf4\x8f\xbe".to_vec(),
            b"\xc3".to_vec(),
            (0x01..=0xFFu8).collect(),
        ];
        for bytes in cases {
            let text = script_text(&bytes);
            assert_eq!(&*script_bytes(&text), &bytes[..], "{bytes:?}");
        }
    }

    #[test]
    fn escapes_are_never_ascii_and_stop_at_nul() {
        let text = script_text(b"a\xff:b\xfe\0SELECT 1/0;");
        assert!(text.chars().filter(|c| !c.is_ascii()).count() == 2);
        assert_eq!(&*script_bytes(&text), b"a\xff:b\xfe");
    }

    #[test]
    fn display_replaces_bytes_that_are_not_utf8() {
        let text = script_text(b"SELECT '\xff', '\xc3\xa9';");
        assert_eq!(script_display(&text), "SELECT '\u{FFFD}', 'é';");
    }
}
