//! `postgresql://` / `postgres://` URIs (libpq's `conninfo_uri_parse_options`).
//!
//! Owns: user info, comma-separated host lists (IPv6 in brackets), ports, the
//! database path, query parameters, and percent-decoding, with libpq's error texts.

use crate::keywords::is_keyword;
use crate::ConfigError;

fn err(s: String) -> ConfigError {
    ConfigError(s)
}

/// Percent-decodes a URI component (libpq's `conninfo_uri_decode`): every `%` must
/// start two hex digits, and `%00` is refused, with libpq's errors; the decoding is
/// the `percent-encoding` crate's.
pub(crate) fn decode(s: &str) -> Result<String, ConfigError> {
    let b = s.as_bytes();
    for (i, _) in s.match_indices('%') {
        let hex = |k: usize| b.get(k).is_some_and(u8::is_ascii_hexdigit);
        if !(hex(i + 1) && hex(i + 2)) {
            return Err(err(format!("invalid percent-encoded token: \"{s}\"")));
        }
        if &s[i + 1..i + 3] == "00" {
            return Err(err(format!(
                "forbidden value %00 in percent-encoded value: \"{s}\""
            )));
        }
    }
    Ok(percent_encoding::percent_decode_str(s)
        .decode_utf8_lossy()
        .into_owned())
}

/// Parses a URI into keyword/value pairs. It mirrors libpq's `conninfo_uri_parse_options`
/// part by part (scheme, user info, hosts and ports, database, query), so that a
/// malformed URI gets libpq's error at the same place.
pub(crate) fn parse_uri(uri: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let prefix = if uri.starts_with("postgresql://") {
        "postgresql://".len()
    } else if uri.starts_with("postgres://") {
        "postgres://".len()
    } else {
        return Err(err(format!("invalid URI: \"{uri}\"")));
    };
    let mut out: Vec<(String, String)> = Vec::new();
    let rest = &uri[prefix..];
    let b = rest.as_bytes();

    // User info: everything up to '@' if an '@' comes before the first '/' or '?'.
    let mut pos = 0;
    if let Some(at) = rest.find(['@', '/', '?']) {
        if b[at] == b'@' {
            let userinfo = &rest[..at];
            let (user, password) = match userinfo.find(':') {
                Some(c) => (&userinfo[..c], Some(&userinfo[c + 1..])),
                None => (userinfo, None),
            };
            if !user.is_empty() {
                out.push(("user".into(), decode(user)?));
            }
            if let Some(p) = password {
                if !p.is_empty() {
                    out.push(("password".into(), decode(p)?));
                }
            }
            pos = at + 1;
        }
    }

    // Hosts and ports, comma-separated.
    let mut hosts: Vec<String> = Vec::new();
    let mut ports: Vec<String> = Vec::new();
    let mut any_host = false;
    let mut any_port = false;
    loop {
        let host;
        if b.get(pos) == Some(&b'[') {
            let start = pos + 1;
            let Some(close) = rest[start..].find(']') else {
                return Err(err(format!(
                    "end of string reached when looking for matching \"]\" in IPv6 host address in URI: \"{uri}\""
                )));
            };
            if close == 0 {
                return Err(err(format!(
                    "IPv6 host address may not be empty in URI: \"{uri}\""
                )));
            }
            host = &rest[start..start + close];
            pos = start + close + 1;
            if let Some(&c) = b.get(pos) {
                if !matches!(c, b':' | b'/' | b'?' | b',') {
                    return Err(err(format!(
                        "unexpected character \"{}\" at position {} in URI (expected \":\" or \"/\"): \"{uri}\"",
                        c as char,
                        prefix + pos + 1
                    )));
                }
            }
        } else {
            let start = pos;
            while pos < b.len() && !matches!(b[pos], b':' | b'/' | b'?' | b',') {
                pos += 1;
            }
            host = &rest[start..pos];
        }
        if !host.is_empty() {
            any_host = true;
        }
        hosts.push(decode(host)?);
        let mut port = "";
        if b.get(pos) == Some(&b':') {
            let start = pos + 1;
            pos = start;
            while pos < b.len() && !matches!(b[pos], b'/' | b'?' | b',') {
                pos += 1;
            }
            port = &rest[start..pos];
        }
        if !port.is_empty() {
            any_port = true;
        }
        ports.push(decode(port)?);
        if b.get(pos) == Some(&b',') {
            pos += 1;
            continue;
        }
        break;
    }
    if any_host {
        out.push(("host".into(), hosts.join(",")));
    }
    if any_port {
        out.push(("port".into(), ports.join(",")));
    }

    // Database name.
    if b.get(pos) == Some(&b'/') {
        let start = pos + 1;
        pos = start;
        while pos < b.len() && b[pos] != b'?' {
            pos += 1;
        }
        let db = &rest[start..pos];
        if !db.is_empty() {
            out.push(("dbname".into(), decode(db)?));
        }
    }

    // Query parameters.
    if b.get(pos) == Some(&b'?') {
        for param in rest[pos + 1..].split('&') {
            if param.is_empty() {
                continue;
            }
            let mut parts = param.splitn(2, '=');
            let key = parts.next().unwrap_or("");
            let Some(value) = parts.next() else {
                return Err(err(format!(
                    "missing key/value separator \"=\" in URI query parameter: \"{param}\""
                )));
            };
            if value.contains('=') {
                return Err(err(format!(
                    "extra key/value separator \"=\" in URI query parameter: \"{param}\""
                )));
            }
            let mut key = decode(key)?;
            let mut value = decode(value)?;
            // JDBC-style "ssl=true" means sslmode=require.
            if key == "ssl" && value == "true" {
                key = "sslmode".into();
                value = "require".into();
            }
            if !is_keyword(&key) {
                return Err(err(format!("invalid URI query parameter: \"{key}\"")));
            }
            out.retain(|(k, _)| *k != key);
            out.push((key, value));
        }
    } else if pos < b.len() {
        return Err(err(format!(
            "unexpected character \"{}\" at position {} in URI (expected \":\" or \"/\"): \"{uri}\"",
            b[pos] as char,
            prefix + pos + 1
        )));
    }
    Ok(out)
}
