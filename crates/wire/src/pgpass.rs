//! Password file lookup (`~/.pgpass` / `PGPASSFILE`), as libpq's `passwordFromFile`.
//!
//! Owns: the permission check (group/world access → warning on stderr, file
//! ignored), line matching with `*` wildcards and backslash escapes, and libpq's
//! "localhost" substitution for the default socket directory.

use std::io::Write;
use std::path::Path;

use crate::conninfo::default_socket_dir;

/// Looks up a password; warnings go to `warn` (stderr in production).
pub(crate) fn lookup(
    file: &Path,
    host: &str,
    port: &str,
    dbname: &str,
    user: &str,
    warn: &mut dyn Write,
) -> Option<String> {
    // Like libpq: the socket directory used when no host is given counts as localhost.
    let host = if host.is_empty() || host == default_socket_dir() {
        "localhost"
    } else {
        host
    };
    let port = if port.is_empty() { "5432" } else { port };
    let meta = std::fs::metadata(file).ok()?;
    if !meta.is_file() {
        let _ = writeln!(
            warn,
            "WARNING: password file \"{}\" is not a plain file",
            file.display()
        );
        return None;
    }
    {
        use std::os::unix::fs::PermissionsExt;
        if meta.permissions().mode() & 0o077 != 0 {
            let _ = writeln!(
                warn,
                "WARNING: password file \"{}\" has group or world access; permissions should be u=rw (0600) or less",
                file.display()
            );
            return None;
        }
    }
    let text = std::fs::read(file).ok()?;
    let text = String::from_utf8_lossy(&text);
    lookup_in_text(&text, host, port, dbname, user)
}

pub(crate) fn lookup_in_text(
    text: &str,
    host: &str,
    port: &str,
    dbname: &str,
    user: &str,
) -> Option<String> {
    for line in text.lines() {
        let line = line.strip_suffix('\r').unwrap_or(line);
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        let mut rest = line;
        let mut ok = true;
        for token in [host, port, dbname, user] {
            match match_field(rest, token) {
                Some(r) => rest = r,
                None => {
                    ok = false;
                    break;
                }
            }
        }
        if !ok {
            continue;
        }
        // The password runs to the end of the line or an unescaped ':'.
        let mut pw = String::new();
        let mut chars = rest.chars();
        while let Some(c) = chars.next() {
            match c {
                ':' => break,
                '\\' => match chars.next() {
                    Some(n) => pw.push(n),
                    None => pw.push('\\'),
                },
                c => pw.push(c),
            }
        }
        return Some(pw);
    }
    None
}

/// Matches one `field:` at the start of `line` against `token`; returns the rest.
fn match_field<'a>(line: &'a str, token: &str) -> Option<&'a str> {
    if let Some(rest) = line.strip_prefix("*:") {
        return Some(rest);
    }
    let mut tok = token.chars();
    let mut it = line.char_indices();
    while let Some((i, mut c)) = it.next() {
        if c == '\\' {
            match it.next() {
                Some((_, n)) => c = n,
                None => return None,
            }
            if tok.next() != Some(c) {
                return None;
            }
            continue;
        }
        if c == ':' {
            return if tok.next().is_none() {
                Some(&line[i + 1..])
            } else {
                None
            };
        }
        if tok.next() != Some(c) {
            return None;
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# comment\n\
        otherhost:5432:*:*:nope\n\
        localhost:5432:db1:alice:pw1\n\
        *:*:db\\:colon:*:pw\\:with\\\\escapes\n\
        *:5433:*:bob:bobpw:ignored\n\
        *:*:*:*:fallback\n";

    #[test]
    fn matching_rules() {
        let l = |h, p, d, u| lookup_in_text(FILE, h, p, d, u);
        assert_eq!(
            l("localhost", "5432", "db1", "alice").as_deref(),
            Some("pw1")
        );
        assert_eq!(
            l("x", "1", "db:colon", "u").as_deref(),
            Some("pw:with\\escapes")
        );
        assert_eq!(l("x", "5433", "d", "bob").as_deref(), Some("bobpw"));
        assert_eq!(l("otherhost", "5432", "d", "u").as_deref(), Some("nope"));
        assert_eq!(
            l("localhost", "5432", "db2", "alice").as_deref(),
            Some("fallback")
        );
        assert_eq!(lookup_in_text("h:1:d:u:p\n", "h", "1", "d", "v"), None);
        assert_eq!(lookup_in_text("h:1:d\n", "h", "1", "d", "u"), None);
    }

    #[test]
    fn permission_check_warns_and_ignores() {
        use std::os::unix::fs::PermissionsExt;
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("pgpass");
        std::fs::write(&f, "*:*:*:*:secret\n").expect("write");
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o644)).expect("chmod");
        let mut warn = Vec::new();
        assert_eq!(lookup(&f, "", "", "d", "u", &mut warn), None);
        assert_eq!(
            String::from_utf8_lossy(&warn),
            format!(
                "WARNING: password file \"{}\" has group or world access; permissions should be u=rw (0600) or less\n",
                f.display()
            )
        );
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let mut warn = Vec::new();
        assert_eq!(
            lookup(&f, "", "", "d", "u", &mut warn).as_deref(),
            Some("secret")
        );
        assert!(warn.is_empty());
        // Missing file: silently nothing.
        assert_eq!(
            lookup(&dir.path().join("none"), "", "", "d", "u", &mut warn),
            None
        );
        assert!(warn.is_empty());
        // A directory: warned about.
        assert_eq!(lookup(dir.path(), "", "", "d", "u", &mut warn), None);
        assert!(String::from_utf8_lossy(&warn).contains("is not a plain file"));
    }

    #[test]
    fn default_socket_dir_counts_as_localhost() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("pgpass");
        std::fs::write(&f, "localhost:5432:d:u:local\n").expect("write");
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&f, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        let mut warn = Vec::new();
        assert_eq!(
            lookup(&f, default_socket_dir(), "5432", "d", "u", &mut warn).as_deref(),
            Some("local")
        );
        assert_eq!(
            lookup(&f, "/elsewhere/sockets", "5432", "d", "u", &mut warn),
            None
        );
    }
}
