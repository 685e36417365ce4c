//! The campaign file as kept with its set (`sets.spec`): the text as written, its
//! `${VAR}` references kept, every password masked. A pure function of the loaded
//! [`Campaign`], so the runner stores it and the fuzz targets check it alike.

use pgsurge_wire::redact::redact;

use crate::spec::Campaign;

/// The campaign as stored with its set (`sets.spec`): the file's text as written, its
/// `${VAR}` references kept (never the values they took from the environment), with
/// every password masked (conninfo strings, URIs, `…password = "…"` keys).
pub fn stored_spec(campaign: &Campaign) -> String {
    use toml_edit::visit_mut::{self, VisitMut};
    use toml_edit::{Formatted, Item, KeyMut, Value};

    /// Masks string values (each read as TOML decoded it, and written back encoded,
    /// so a mask never cuts a quote or an escape) and every value of a key that names
    /// a password.
    struct Mask;
    impl VisitMut for Mask {
        fn visit_table_like_kv_mut(&mut self, key: KeyMut<'_>, node: &mut Item) {
            if key.get().to_ascii_lowercase().ends_with("password") {
                if let Some(v) = node.as_value_mut() {
                    let decor = v.decor().clone();
                    *v = Value::from(pgsurge_wire::redact::MASK);
                    *v.decor_mut() = decor;
                    return;
                }
            }
            visit_mut::visit_table_like_kv_mut(self, key, node);
        }
        fn visit_string_mut(&mut self, node: &mut Formatted<String>) {
            let masked = redact(node.value());
            if masked != *node.value() {
                let decor = node.decor().clone();
                *node = Formatted::new(masked);
                *node.decor_mut() = decor;
            }
        }
    }
    let masked = match campaign.text.parse::<toml_edit::DocumentMut>() {
        Ok(mut doc) => {
            Mask.visit_document_mut(&mut doc);
            redact_comments(&doc.to_string())
        }
        Err(_) => String::new(),
    };
    if toml::from_str::<toml::Value>(&masked).is_ok() {
        return masked;
    }
    // Not expected (the text parsed as TOML): the whole text masked as free text.
    redact(&campaign.text)
}

/// `text` (valid TOML) with every comment masked as free text; strings are skipped,
/// so a `#` in a value is not taken for a comment, and no line break is touched.
fn redact_comments(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let (mut i, mut copied) = (0, 0);
    while i < b.len() {
        match b[i] {
            b'#' => {
                let end = text[i..].find('\n').map_or(text.len(), |n| i + n);
                out.push_str(&text[copied..i]);
                out.push_str(&redact(&text[i..end]));
                (i, copied) = (end, end);
            }
            q @ (b'"' | b'\'') => {
                let triple = b[i..].starts_with(&[q, q, q]);
                i += if triple { 3 } else { 1 };
                while i < b.len() {
                    if q == b'"' && b[i] == b'\\' {
                        i += 2;
                    } else if triple && b[i..].starts_with(&[q, q, q]) {
                        // Up to two more quotes may close a multi-line string: `"""a""""`.
                        i += 3;
                        while i < b.len() && b[i] == q {
                            i += 1;
                        }
                        break;
                    } else if !triple && (b[i] == q || b[i] == b'\n') {
                        i += 1;
                        break;
                    } else {
                        i += 1;
                    }
                }
            }
            _ => i += 1,
        }
    }
    out.push_str(&text[copied.min(text.len())..]);
    out
}

/// Whether a stored `spec_hash` belongs to the campaign file identity `base`
/// ([`crate::spec::Campaign::identity_hash`]): the same file, whatever the bytes of its
/// inputs (`<base> inputs <digest>`).
pub fn same_file(spec_hash: &str, base: &str) -> bool {
    spec_hash == base
        || spec_hash
            .strip_prefix(base)
            .is_some_and(|rest| rest.starts_with(" inputs "))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_spec_has_no_password_and_parses_back() {
        let text = r#"
[campaign]
name = "t"
[[target]]
name = "a"
conninfo = "host=h password = 'Sp ace' dbname=x"
[[target]]
name = "b"
conninfo = "postgresql://u:pw1@h/db?password=pw2"
[matrix]
scales = [1]
clients = [1]
scripts = ["select-only"]
[run.defines]
dsn = "host=x password=pw3"
"#;
        let c = Campaign::parse(text, "t.toml", std::path::Path::new(".")).unwrap();
        let stored = stored_spec(&c);
        for secret in ["Sp ace", "Sp", "ace'", "pw1", "pw2", "pw3"] {
            assert!(!stored.contains(secret), "{secret} in {stored}");
        }
        let back = Campaign::parse(&stored, "stored", std::path::Path::new(".")).unwrap();
        assert_eq!(back.spec.targets.len(), 2);
        assert_eq!(
            back.spec.targets[0].conninfo.as_deref(),
            Some("host=h password = '********' dbname=x")
        );
        assert_eq!(back.spec.matrix, c.spec.matrix);
    }

    #[test]
    fn stored_spec_is_the_file_as_written_without_the_environment() {
        let text = "# comment kept\n[campaign]\nname = \"t\"\n[[target]]\nname = \"a\"\nconninfo = \"${DSN}\"\n[matrix]\nscales = [1]\nclients = [1]\n[hooks]\nbefore_test = \"psql -p ${PGPORT} -c 'select 1'\"\n";
        let env = |k: &str| (k == "DSN").then(|| "host=db9 password=Env-Secret-1".to_string());
        let c = Campaign::parse_with_env(text, "t.toml", std::path::Path::new("."), &env).unwrap();
        assert_eq!(
            c.spec.targets[0].conninfo.as_deref(),
            Some("host=db9 password=Env-Secret-1")
        );
        let stored = stored_spec(&c);
        assert_eq!(stored, text);
        assert!(!stored.contains("Env-Secret-1") && !stored.contains("db9"));
    }

    #[test]
    fn stored_spec_masks_passwords_in_comments_and_keeps_the_layout() {
        let text = "[campaign]\nname = \"t # not a comment\" # old: host=h password=Comment-Pw\n[[target]]\nname = \"a\"\n# conninfo = 'postgresql://u:Uri-Pw@h/db'\nconninfo = \"\"\"host=h\npassword='Multi Pw' dbname=x\"\"\"\n[matrix]\nscales = [1]\nclients = [1]\n[run.defines]\nsslpassword = 42\n";
        let c = Campaign::parse(text, "t.toml", std::path::Path::new(".")).unwrap();
        let stored = stored_spec(&c);
        for secret in ["Comment-Pw", "Uri-Pw", "Multi", "42"] {
            assert!(!stored.contains(secret), "{secret} in {stored}");
        }
        assert!(
            stored.contains("# old: host=h password=********\n"),
            "{stored}"
        );
        assert!(
            stored.contains("# conninfo = 'postgresql://u:********@h/db'\n"),
            "{stored}"
        );
        let back = Campaign::parse(&stored, "stored", std::path::Path::new(".")).unwrap();
        assert_eq!(back.spec.campaign.name, c.spec.campaign.name);
        assert_eq!(
            back.spec.run.defines.get("sslpassword"),
            Some(&toml::Value::String("********".into()))
        );
    }
}
