//! Connection service file (`pg_service.conf`), as libpq's `parseServiceInfo`.
//!
//! Owns: finding the service name (`service` keyword, else `PGSERVICE`), the file
//! search order (`PGSERVICEFILE` or `~/.pg_service.conf`, then
//! `PGSYSCONFDIR/pg_service.conf`, Debian's default sysconfdir
//! `/etc/postgresql-common`), and filling unset keywords from the service's section.

use std::path::{Path, PathBuf};

use crate::keywords::{is_keyword, Settings};
use crate::ConfigError;

/// Debian's libpq `SYSCONFDIR`.
const DEFAULT_SYSCONFDIR: &str = "/etc/postgresql-common";

/// Fills unset keywords of `settings` from the named service, if one is named.
pub(crate) fn apply_service(
    settings: &mut Settings,
    env: &impl Fn(&str) -> Option<String>,
) -> Result<(), ConfigError> {
    let service = match settings.get("service") {
        Some(s) if !s.is_empty() => s.clone(),
        _ => match env("PGSERVICE") {
            Some(s) if !s.is_empty() => s,
            _ => return Ok(()),
        },
    };
    // PostgreSQL 18's `servicefile` keyword wins over PGSERVICEFILE.
    let explicit = settings
        .get("servicefile")
        .filter(|f| !f.is_empty())
        .cloned()
        .or_else(|| env("PGSERVICEFILE"));
    let user_file = match explicit {
        Some(f) => Some(PathBuf::from(f)),
        None => env("HOME").map(|h| Path::new(&h).join(".pg_service.conf")),
    };
    if let Some(f) = user_file {
        if f.exists() && apply_from_file(&f, &service, settings)? {
            return Ok(());
        }
    }
    let sysconf = env("PGSYSCONFDIR").unwrap_or_else(|| DEFAULT_SYSCONFDIR.to_string());
    let f = Path::new(&sysconf).join("pg_service.conf");
    if f.exists() && apply_from_file(&f, &service, settings)? {
        return Ok(());
    }
    Err(ConfigError(format!(
        "definition of service \"{service}\" not found"
    )))
}

/// Reads `file`; returns whether the service section was found.
fn apply_from_file(
    file: &Path,
    service: &str,
    settings: &mut Settings,
) -> Result<bool, ConfigError> {
    let text = std::fs::read(file).map_err(|e| {
        ConfigError(format!(
            "service file \"{}\" not found: {e}",
            file.display()
        ))
    })?;
    let text = String::from_utf8_lossy(&text);
    apply_from_text(&text, &file.display().to_string(), service, settings)
}

pub(crate) fn apply_from_text(
    text: &str,
    file_name: &str,
    service: &str,
    settings: &mut Settings,
) -> Result<bool, ConfigError> {
    let mut in_group = false;
    let mut found = false;
    for (n, raw) in text.lines().enumerate() {
        let lineno = n + 1;
        let line = raw.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix('[') {
            if found {
                // The next section ends the one we wanted.
                break;
            }
            let name = rest.strip_suffix(']').unwrap_or(rest);
            in_group = name == service;
            found = in_group;
            continue;
        }
        if !in_group {
            continue;
        }
        let syntax = || {
            ConfigError(format!(
                "syntax error in service file \"{file_name}\", line {lineno}"
            ))
        };
        let (key, val) = line.split_once('=').ok_or_else(syntax)?;
        if key == "service" || key == "servicefile" {
            return Err(ConfigError(format!(
                "nested \"{key}\" specifications not supported in service file \"{file_name}\", line {lineno}"
            )));
        }
        if !is_keyword(key) {
            return Err(syntax());
        }
        settings
            .entry(key.to_string())
            .or_insert_with(|| val.to_string());
    }
    Ok(found)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FILE: &str = "# comment\n[other]\nhost=h0\n\n[mydb]\nhost=somehost\nport=5433\n  user=admin  \ndbname=x\n[later]\nport=1\n";

    #[test]
    fn fills_only_unset_keywords() {
        let mut s = Settings::new();
        s.insert("dbname".into(), "explicit".into());
        assert!(apply_from_text(FILE, "f", "mydb", &mut s).expect("parse"));
        assert_eq!(s.get("host").map(String::as_str), Some("somehost"));
        assert_eq!(s.get("port").map(String::as_str), Some("5433"));
        assert_eq!(s.get("user").map(String::as_str), Some("admin"));
        assert_eq!(s.get("dbname").map(String::as_str), Some("explicit"));
    }

    #[test]
    fn missing_section_and_bad_lines() {
        let mut s = Settings::new();
        assert!(!apply_from_text(FILE, "f", "nope", &mut s).expect("parse"));
        assert!(s.is_empty());
        let e = apply_from_text("[a]\nbogus\n", "f", "a", &mut s).expect_err("syntax");
        assert_eq!(e.to_string(), "syntax error in service file \"f\", line 2");
        let e = apply_from_text("[a]\nservice=b\n", "f", "a", &mut s).expect_err("nested");
        assert!(e.to_string().contains("nested"), "{e}");
        let e = apply_from_text("[a]\nnokeyword=1\n", "f", "a", &mut s).expect_err("kw");
        assert_eq!(e.to_string(), "syntax error in service file \"f\", line 2");
    }

    #[test]
    fn search_order_user_file_then_sysconf() {
        let dir = tempfile::tempdir().expect("tempdir");
        let user = dir.path().join("user.conf");
        std::fs::write(&user, "[s1]\nhost=fromuser\n").expect("write");
        let sys = dir.path().join("sys");
        std::fs::create_dir(&sys).expect("mkdir");
        std::fs::write(sys.join("pg_service.conf"), "[s2]\nhost=fromsys\n").expect("write");
        let env = |k: &str| match k {
            "PGSERVICEFILE" => Some(user.display().to_string()),
            "PGSYSCONFDIR" => Some(sys.display().to_string()),
            _ => None,
        };
        for (svc, host) in [("s1", "fromuser"), ("s2", "fromsys")] {
            let mut s = Settings::new();
            s.insert("service".into(), svc.into());
            apply_service(&mut s, &env).expect("found");
            assert_eq!(s.get("host").map(String::as_str), Some(host));
        }
        let mut s = Settings::new();
        s.insert("service".into(), "s3".into());
        let e = apply_service(&mut s, &env).expect_err("missing");
        assert_eq!(e.to_string(), "definition of service \"s3\" not found");
        // The servicefile keyword (PostgreSQL 18) wins over PGSERVICEFILE.
        let other = dir.path().join("other.conf");
        std::fs::write(&other, "[s1]\nhost=fromkeyword\n").expect("write");
        let mut s = Settings::new();
        s.insert("service".into(), "s1".into());
        s.insert("servicefile".into(), other.display().to_string());
        apply_service(&mut s, &env).expect("found");
        assert_eq!(s.get("host").map(String::as_str), Some("fromkeyword"));
    }
}
