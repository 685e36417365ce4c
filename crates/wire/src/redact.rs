//! Redaction of secrets in text that leaves the process: conninfo strings, URIs, store
//! URLs, campaign specs, error messages, log lines.
//!
//! [`redact`] is the one function to call on any such text. It masks, wherever they
//! appear in the text:
//!
//! * the value of every `key=value` pair whose key ends in `password` (any case:
//!   `password`, `sslpassword`, `PGPASSWORD`), in every libpq conninfo syntax: spaces
//!   around `=`, single-quoted values with spaces and `\'` escapes, backslash escapes in
//!   unquoted values, and also a double-quoted value (TOML, shell) and the JSON form
//!   `"password": "…"`;
//! * in `postgres://` / `postgresql://` URIs, the password of the user info
//!   (`postgres://u:secret@h`) and the value of every query parameter whose
//!   percent-decoded name ends in `password` (`?password=x`, `?pass%77ord=x`);
//! * in any other URL, the password of its user info (`https://u:secret@host/…` in a
//!   server setting such as `restore_command`); and a user info's password wherever a
//!   `://` appears, even glued to other text (`-dpostgresql://u:secret@h`, a short
//!   option cluster that makes the URI another option's value).
//!
//! The mask is [`MASK`]; everything else is kept, so a redacted conninfo still says
//! where it points. Redacting twice gives the same text.
//!
//! For messages that may quote a password out of its context (a parser's "invalid
//! percent-encoded token: \"…\""), [`passwords`] lists the secrets of a connection
//! string (raw, unescaped and percent-decoded) and [`redact_with`] masks them too.
//!
//! ```
//! use pgsurge_wire::redact::redact;
//! assert_eq!(redact("host=h password = 'Sp ace' user=u"), "host=h password = '********' user=u");
//! assert_eq!(redact("postgres://u:pw@h/db?password=x"), "postgres://u:********@h/db?password=********");
//! ```

/// What a secret is replaced with.
pub const MASK: &str = "********";

const URI_PREFIXES: [&str; 2] = ["postgresql://", "postgres://"];

/// Returns `text` with every password masked (see the module documentation).
pub fn redact(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for (start, end) in secret_ranges(text) {
        out.push_str(&text[at..start]);
        out.push_str(MASK);
        at = end;
    }
    out.push_str(&text[at..]);
    out
}

/// The byte ranges of every secret in `text`, sorted and merged. Text is read both
/// ways it may be meant: as free text (a URI ends at white space, keywords after it
/// are scanned) and, when the whole text is a URI, as libpq reads a connection URI
/// (white space included); a byte that is secret in either reading is masked.
fn secret_ranges(text: &str) -> Vec<(usize, usize)> {
    let mut ranges = Vec::new();
    let base = text.as_ptr() as usize;
    for whole_uri in [false, true] {
        if whole_uri && !starts_with_uri(text) {
            continue;
        }
        scan(text, whole_uri, &mut |Secret(s)| {
            let start = s.as_ptr() as usize - base;
            ranges.push((start, start + s.len()));
        });
    }
    url_userinfo(text, &mut |Secret(s)| {
        let start = s.as_ptr() as usize - base;
        ranges.push((start, start + s.len()));
    });
    ranges.sort_unstable();
    let mut merged: Vec<(usize, usize)> = Vec::with_capacity(ranges.len());
    for (start, end) in ranges {
        match merged.last_mut() {
            Some(last) if start <= last.1 => last.1 = last.1.max(end),
            _ => merged.push((start, end)),
        }
    }
    merged
}

fn starts_with_uri(text: &str) -> bool {
    let skip = text.len() - text.trim_start().len();
    uri_prefix_at(text, skip).is_some()
}

/// [`redact`], then also masks every occurrence of the given secrets (e.g. from
/// [`passwords`]) anywhere in the text. Secrets shorter than 3 characters are not
/// searched for (masking every "a" would destroy the message).
pub fn redact_with(text: &str, secrets: &[String]) -> String {
    let mut out = redact(text);
    let mut secrets: Vec<&String> = secrets.iter().filter(|s| s.chars().count() >= 3).collect();
    // Longest first, so a secret that contains another is masked whole.
    secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
    for s in secrets {
        if out.contains(s.as_str()) {
            out = out.replace(s.as_str(), MASK);
        }
    }
    out
}

/// The secrets found in `text` (a conninfo string, URI or any text [`redact`] would
/// mask): each as written, with escapes removed, and percent-decoded.
pub fn passwords(text: &str) -> Vec<String> {
    let mut raw = Vec::new();
    for whole_uri in [false, true] {
        if whole_uri && !starts_with_uri(text) {
            continue;
        }
        scan(text, whole_uri, &mut |Secret(s)| {
            if !raw.iter().any(|r: &String| r == s) {
                raw.push(s.to_string());
            }
        });
    }
    url_userinfo(text, &mut |Secret(s)| {
        if !raw.iter().any(|r: &String| r == s) {
            raw.push(s.to_string());
        }
    });
    let mut out = Vec::new();
    for r in raw {
        for v in [unescape(&r), percent_decode(&r)] {
            if !out.contains(&v) {
                out.push(v);
            }
        }
        if !out.contains(&r) {
            out.push(r);
        }
    }
    out
}

/// A secret found by [`scan`]: a slice of the scanned text.
struct Secret<'a>(&'a str);

fn is_ident(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn uri_prefix_at(text: &str, i: usize) -> Option<usize> {
    let rest = &text.as_bytes()[i..];
    URI_PREFIXES
        .iter()
        .find(|p| rest.len() >= p.len() && rest[..p.len()].eq_ignore_ascii_case(p.as_bytes()))
        .map(|p| p.len())
}

/// Calls `emit` with each secret of `text`, in order. `whole_uri`: the text is one
/// connection URI to its end (else a URI inside text ends at white space).
fn scan<'a>(text: &'a str, whole_uri: bool, emit: &mut dyn FnMut(Secret<'a>)) {
    let b = text.as_bytes();
    let mut i = 0;
    while i < b.len() {
        let boundary = i == 0 || !is_ident(b[i - 1]);
        if !boundary {
            i += 1;
            continue;
        }
        if let Some(plen) = uri_prefix_at(text, i) {
            let to_space = |from: usize| {
                b[from..]
                    .iter()
                    .position(|c| c.is_ascii_whitespace())
                    .map_or(b.len(), |p| from + p)
            };
            // A text that is a URI (a connection string, as stored and shown) is one
            // URI to its end, white space included, as the parser reads it; a URI
            // inside other text ends at white space.
            let whole = whole_uri && text[..i].trim().is_empty();
            let mut end = if whole { b.len() } else { to_space(i) };
            // The parser takes everything up to an '@' that comes before the first '/'
            // or '?' as user info, white space and control characters included: so
            // does the mask (a password with a space must not be cut in two).
            // Only when that user info holds a password (a ':'): otherwise the words
            // after the white space are scanned as text (they may hold a keyword).
            if let Some(at) = text[i + plen..].find(['@', '/', '?']).map(|p| i + plen + p) {
                if b[at] == b'@' && at > end && text[i + plen..at].contains(':') {
                    end = to_space(at);
                }
            }
            scan_uri(&text[i..end], plen, emit);
            i = end;
            continue;
        }
        if is_ident(b[i]) {
            let id_end = b[i..]
                .iter()
                .position(|c| !is_ident(*c))
                .map_or(b.len(), |p| i + p);
            let ident = &text[i..id_end];
            if ident.to_ascii_lowercase().ends_with("password") {
                if let Some((vs, ve)) = keyword_value(b, i, id_end) {
                    emit(Secret(&text[vs..ve]));
                    i = ve;
                    continue;
                }
            }
            i = id_end;
            continue;
        }
        i += 1;
    }
}

/// Calls `emit` with the password of every URL user info in `text`: after each `://`
/// (whatever comes before it, any scheme), the authority up to `/`, `?`, `#` or white
/// space; when it holds an `@`, what lies between the first `:` and the last `@`.
fn url_userinfo<'a>(text: &'a str, emit: &mut dyn FnMut(Secret<'a>)) {
    let b = text.as_bytes();
    let mut from = 0;
    while let Some(p) = text[from..].find("://") {
        let start = from + p + 3;
        let end = b[start..]
            .iter()
            .position(|c| matches!(c, b'/' | b'?' | b'#') || c.is_ascii_whitespace())
            .map_or(b.len(), |q| start + q);
        let authority = &b[start..end];
        if let Some(at) = authority.iter().rposition(|c| *c == b'@') {
            if let Some(colon) = authority[..at].iter().position(|c| *c == b':') {
                if at > colon + 1 {
                    emit(Secret(&text[start + colon + 1..start + at]));
                }
            }
        }
        from = start;
    }
}

/// For a keyword at `start..id_end`, the byte range of its secret value (inside the
/// quotes when quoted), if a non-empty value follows `=` (or `:` after a JSON key).
/// Conninfo white space (see `conninfo::is_conninfo_space`), on bytes.
fn is_space(b: u8) -> bool {
    crate::conninfo::is_conninfo_space(char::from(b))
}

fn keyword_value(b: &[u8], start: usize, id_end: usize) -> Option<(usize, usize)> {
    let mut j = id_end;
    let json_key = start > 0 && b[start - 1] == b'"' && b.get(j) == Some(&b'"');
    if json_key {
        j += 1;
    }
    while j < b.len() && is_space(b[j]) {
        j += 1;
    }
    match b.get(j) {
        Some(b'=') => {}
        Some(b':') if json_key => {}
        _ => return None,
    }
    j += 1;
    while j < b.len() && is_space(b[j]) {
        j += 1;
    }
    let quote = match b.get(j) {
        Some(q @ (b'\'' | b'"')) => Some(*q),
        Some(_) => None,
        None => return None,
    };
    // Where the value ends read as a bare conninfo word (libpq quotes with ' only: in
    // a conninfo string a " is part of the password).
    let bare_end = b[j..]
        .iter()
        .position(|&c| is_space(c))
        .map_or(b.len(), |p| j + p);
    if let Some(q) = quote {
        let vs = j + 1;
        let mut k = vs;
        while k < b.len() && b[k] != q {
            k += if b[k] == b'\\' { 2 } else { 1 };
        }
        let closed = k < b.len();
        // A " in a conninfo string is part of a bare word (libpq quotes with ' only):
        // when the quoted reading does not fit — no closing quote, nothing inside, or
        // the word going on after it (`password="a"b`) — the whole word is the secret.
        let delimited = matches!(b.get(k + 1), Some(b',' | b'}' | b']'));
        let word_goes_on = bare_end > k + 1 && !delimited;
        if q == b'"' && !json_key && (!closed || k == vs || word_goes_on) {
            return (bare_end > j).then_some((j, bare_end));
        }
        // Quoted (TOML, JSON, libpq's '). An unterminated quote hides the rest of the
        // text (libpq refuses the string, but it may be quoted in a message); an empty
        // '' is an empty password.
        let ve = k.min(b.len());
        return (ve > vs).then_some((vs, ve));
    }
    let vs = j;
    let mut k = vs;
    while k < b.len() && !is_space(b[k]) {
        k += if b[k] == b'\\' { 2 } else { 1 };
    }
    let ve = k.min(b.len());
    (ve > vs).then_some((vs, ve))
}

/// Redacts one URI (no whitespace inside): the user info's password and the values of
/// password query parameters.
fn scan_uri<'a>(uri: &'a str, plen: usize, emit: &mut dyn FnMut(Secret<'a>)) {
    let b = uri.as_bytes();
    let query_at = b[plen..].iter().position(|c| *c == b'?').map(|p| plen + p);
    // The parser takes user info only from before the first '/' or '?'.
    let authority_end = b[plen..]
        .iter()
        .position(|c| *c == b'/' || *c == b'?')
        .map_or(b.len(), |p| plen + p);
    // User info: up to the last '@' of the authority (an unencoded '@' in a password
    // is masked with it).
    if let Some(at) = b[plen..authority_end].iter().rposition(|c| *c == b'@') {
        let at = plen + at;
        if let Some(colon) = b[plen..at].iter().position(|c| *c == b':') {
            let colon = plen + colon;
            if at > colon + 1 {
                emit(Secret(&uri[colon + 1..at]));
            }
        }
    }
    let Some(q) = query_at else {
        return;
    };
    let mut k = q + 1;
    while k <= b.len() {
        let end = b[k..]
            .iter()
            .position(|c| *c == b'&')
            .map_or(b.len(), |p| k + p);
        let param = &uri[k..end];
        match param.split_once('=') {
            Some((key, value))
                if !value.is_empty()
                    && percent_decode(key)
                        .to_ascii_lowercase()
                        .ends_with("password") =>
            {
                let vs = k + key.len() + 1;
                emit(Secret(&uri[vs..end]));
            }
            _ => {}
        }
        if end >= b.len() {
            break;
        }
        k = end + 1;
    }
}

fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            if let Some(n) = chars.next() {
                out.push(n);
            }
        } else {
            out.push(c);
        }
    }
    out
}

/// Percent-decodes a URI part (`%40` is `@`); invalid escapes stay as written.
fn percent_decode(s: &str) -> String {
    percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn url_user_info_is_masked_in_any_scheme_and_glued_to_other_text() {
        for (text, want) in [
            (
                "curl -s https://backup:s3cret@store.example/wal/%f -o %p",
                "curl -s https://backup:********@store.example/wal/%f -o %p",
            ),
            (
                "-dpostgresql://u:PW1@db/x",
                "-dpostgresql://u:********@db/x",
            ),
            ("-Sdpostgres://u:PW2@db", "-Sdpostgres://u:********@db"),
            ("ostgresql://u:PW3@db/x", "ostgresql://u:********@db/x"),
            // No user info, or no password in it: nothing to mask.
            ("http://host:8080/a@b", "http://host:8080/a@b"),
            ("s3://bucket@region/x", "s3://bucket@region/x"),
        ] {
            assert_eq!(redact(text), want, "{text}");
        }
        assert!(passwords("-dpostgresql://u:PW1@db/x").contains(&"PW1".to_string()));
        assert!(passwords("x https://a:b%40c@h/").contains(&"b@c".to_string()));
    }

    /// (input, expected) for every way libpq (and the places pgsurge prints them) can
    /// carry a password.
    const CASES: &[(&str, &str)] = &[
        // conninfo key=value
        (
            "host=h password=secret dbname=d",
            "host=h password=******** dbname=d",
        ),
        ("password=secret", "password=********"),
        (
            "host=h password = secret user=u",
            "host=h password = ******** user=u",
        ),
        ("host=h password= secret", "host=h password= ********"),
        ("host=h password =secret", "host=h password =********"),
        (
            "host=h\tpassword\t=\tsecret",
            "host=h\tpassword\t=\t********",
        ),
        ("password='Sp ace' host=h", "password='********' host=h"),
        ("password = 'Sp ace'", "password = '********'"),
        (
            r"password='it\'s a secret' user=u",
            "password='********' user=u",
        ),
        (
            r"password='ends with \\' user=u",
            "password='********' user=u",
        ),
        (r"password=back\ slash user=u", "password=******** user=u"),
        ("password=''", "password=''"),
        ("sslpassword=keypass host=h", "sslpassword=******** host=h"),
        ("PASSWORD=upper", "PASSWORD=********"),
        ("PGPASSWORD=env psql", "PGPASSWORD=******** psql"),
        ("password='unterminated secret", "password='********"),
        // not a password keyword
        ("host=h passwordless=1", "host=h passwordless=1"),
        (
            "password authentication failed for user \"u\"",
            "password authentication failed for user \"u\"",
        ),
        ("user=password host=h", "user=password host=h"),
        // URIs
        ("postgres://u:pw@h/db", "postgres://u:********@h/db"),
        (
            "postgresql://u:pw@h:5432/db",
            "postgresql://u:********@h:5432/db",
        ),
        ("POSTGRESQL://u:pw@h/db", "POSTGRESQL://u:********@h/db"),
        ("postgresql://u@h/db", "postgresql://u@h/db"),
        ("postgresql://u:@h/db", "postgresql://u:@h/db"),
        ("postgresql://h/db", "postgresql://h/db"),
        (
            "postgresql://u:p%40ss%20w@h/db",
            "postgresql://u:********@h/db",
        ),
        ("postgresql://u:p@ss@h/db", "postgresql://u:********@h/db"),
        (
            "postgresql://u:pw@h1:5432,h2:5433/db",
            "postgresql://u:********@h1:5432,h2:5433/db",
        ),
        (
            "postgresql://h/db?password=x",
            "postgresql://h/db?password=********",
        ),
        (
            "postgresql://h/db?sslmode=require&password=x&user=u",
            "postgresql://h/db?sslmode=require&password=********&user=u",
        ),
        (
            "postgresql://h/db?pass%77ord=x",
            "postgresql://h/db?pass%77ord=********",
        ),
        (
            "postgresql://h/db?sslpassword=k",
            "postgresql://h/db?sslpassword=********",
        ),
        (
            "postgresql://h/db?user=a@b&password=x",
            "postgresql://h/db?user=a@b&password=********",
        ),
        (
            "postgresql://u:pw@h/db?password=x#frag",
            "postgresql://u:********@h/db?password=********",
        ),
        // URIs and conninfo inside messages
        (
            "cannot open results store \"postgres://u:pw@h/db\": refused",
            "cannot open results store \"postgres://u:********@h/db\": refused",
        ),
        (
            "connection string \"host=h password='a b' dbname=x\": bad",
            "connection string \"host=h password='********' dbname=x\": bad",
        ),
        (
            "store postgres://u:pw@h/db, set 3",
            "store postgres://u:********@h/db, set 3",
        ),
        // TOML / JSON forms
        (
            "conninfo = \"host=h password=secret\"",
            "conninfo = \"host=h password=********",
        ),
        ("password = \"toml secret\"", "password = \"********\""),
        (
            "{\"password\": \"json secret\", \"a\": 1}",
            "{\"password\": \"********\", \"a\": 1}",
        ),
        // non-ASCII around and inside
        (
            "hôte=é password=пароль dbname=ü",
            "hôte=é password=******** dbname=ü",
        ),
        ("postgresql://ü:пароль@h/db", "postgresql://ü:********@h/db"),
        ("", ""),
        // user info with white space, as the URI parser reads it (found by fuzzing)
        (
            "postgresql://u:pa ss\rword@h/db",
            "postgresql://u:********@h/db",
        ),
        (
            "see postgresql://u:a b@h and more",
            "see postgresql://u:********@h and more",
        ),
        ("postgresql://h:5 then a/b@c", "postgresql://h:5 then a/b@c"),
        // any C isspace between the keyword, '=' and the value (found by fuzzing)
        (
            "password=\n\x0bsecret host=h",
            "password=\n\x0b******** host=h",
        ),
        (
            "password\r\n=\x0csecret\x0bhost=h",
            "password\r\n=\x0c********\x0bhost=h",
        ),
        // a whole-text URI with white space before its query (found by fuzzing)
        (
            "postgresql://h:\t2716/b?&password=\t",
            "postgresql://h:\t2716/b?&password=********",
        ),
        // a URI without a password before a keyword password (found by fuzzing)
        (
            "x postgresql://u a password=sec@r",
            "x postgresql://u a password=********",
        ),
        // '#' is no fragment in a libpq URI: part of the value (found by fuzzing)
        (
            "postgresql://h/d?password=#x&a=b",
            "postgresql://h/d?password=********&a=b",
        ),
        // " is not a conninfo quote: part of a bare value (found by fuzzing)
        ("host=h password=\"", "host=h password=********"),
        ("password=\"ab cd", "password=******** cd"),
        ("password=\"\"\" x", "password=******** x"),
        ("password=\"a\"b c", "password=******** c"),
    ];

    #[test]
    fn every_syntax_is_redacted() {
        for (input, want) in CASES {
            assert_eq!(redact(input), *want, "input: {input}");
            // idempotent
            assert_eq!(redact(want), *want, "twice: {input}");
        }
    }

    #[test]
    fn redacted_conninfo_still_parses_the_same_way_except_the_password() {
        for s in [
            "host=h password = 'Sp ace' user=u dbname=d",
            "postgresql://u:p%40ss@h:5/d?password=x&sslmode=disable",
            "postgresql://u:pa ss@h:5/d",
        ] {
            let before = crate::conninfo::parse_conninfo_or_uri(s).unwrap();
            let after = crate::conninfo::parse_conninfo_or_uri(&redact(s)).unwrap();
            assert_eq!(before.len(), after.len());
            for ((k1, v1), (k2, v2)) in before.iter().zip(&after) {
                assert_eq!(k1, k2);
                if k1 == "password" {
                    assert_eq!(v2, MASK);
                    assert_ne!(v1, MASK);
                } else {
                    assert_eq!(v1, v2);
                }
            }
        }
    }

    #[test]
    fn secrets_are_listed_raw_unescaped_and_decoded() {
        let p = passwords(r"postgresql://u:p%40ss@h/d?password=q%20r password='it\'s'");
        for want in ["p%40ss", "p@ss", "q%20r", "q r", r"it\'s", "it's"] {
            assert!(p.iter().any(|s| s == want), "{want} missing in {p:?}");
        }
        let msg = "invalid percent-encoded token: \"p@ss\" (it's)";
        let out = redact_with(msg, &p);
        assert!(!out.contains("p@ss") && !out.contains("it's"), "{out}");
    }
}
