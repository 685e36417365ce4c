//! Checks of the options: no password in the manifest, names Kubernetes accepts,
//! environment variables, quantities.

use super::*;

/// Refuses every argument that carries a password (conninfo `password=`, URI user
/// info, `?password=`), as `pgsurge_wire::redact` finds them.
pub fn refuse_passwords(a: &KubePlan) -> Result<(), KubeError> {
    let flags = [
        ("--host", &a.host),
        ("--port", &a.port),
        ("--dbname", &a.dbname),
        ("--user", &a.user),
    ];
    let named = flags
        .iter()
        .filter_map(|(what, v)| v.as_ref().map(|v| (what.to_string(), v)));
    let env = a.env.iter().map(|v| ("--env".to_string(), v));
    let bench = a.bench.iter().map(|v| ("bench option".to_string(), v));
    for (what, v) in named.chain(env).chain(bench) {
        if !pgsurge_wire::redact::passwords(v).is_empty() {
            return Err(KubeError::Password {
                what,
                shown: pgsurge_wire::redact::redact(v),
            });
        }
    }
    Ok(())
}

/// The longest Job name a Job of `generators` pods may have: each pod's host name is
/// NAME-INDEX, which must be a DNS label (63 characters) too.
pub fn max_job_name_len(generators: u32) -> usize {
    let digits = (generators.max(1) - 1).to_string().len();
    63 - 1 - digits
}

/// `text` made into a DNS label of at most `max` characters: lower-cased, every run of
/// other characters turned into one `-`, no `-` at either end; `None` when nothing of
/// it is left.
pub fn dns_label_from(text: &str, max: usize) -> Option<String> {
    let mut out = String::new();
    for c in text.chars() {
        let c = c.to_ascii_lowercase();
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            out.push(c);
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(max);
    let out = out.trim_end_matches('-').to_string();
    (!out.is_empty()).then_some(out)
}

pub(super) fn check_names(a: &KubePlan) -> Result<(), KubeError> {
    let room = max_job_name_len(a.generators);
    if !is_dns_label(&a.name, room) {
        return Err(KubeError::Invalid(format!(
            "--name \"{}\" is not a Job name Kubernetes takes: lower-case letters, digits and \
             '-', starting and ending with a letter or digit, at most {room} characters (with \
             '-' and the index, each pod's host name must fit in 63)",
            a.name
        )));
    }
    if let Some(ns) = &a.namespace {
        if !is_dns_label(ns, 63) {
            return Err(KubeError::Invalid(format!(
                "--namespace \"{ns}\" is not a namespace name: lower-case letters, digits and \
                 '-', starting and ending with a letter or digit, at most 63 characters"
            )));
        }
    }
    match (&a.secret, &a.secret_key) {
        (None, Some(_)) => {
            return Err(KubeError::Invalid(
                "--conninfo-secret-key needs --conninfo-secret".into(),
            ))
        }
        (Some(s), _) if !is_dns_subdomain(s) => {
            return Err(KubeError::Invalid(format!(
                "--conninfo-secret \"{s}\" is not a Secret name: lower-case letters, digits, \
                 '-' and '.', starting and ending with a letter or digit, at most 253 characters"
            )))
        }
        _ => {}
    }
    if let Some(k) = &a.secret_key {
        let ok = |c: char| c.is_ascii_alphanumeric() || "-._".contains(c);
        if k.is_empty() || k.len() > 253 || !k.chars().all(ok) {
            return Err(KubeError::Invalid(format!(
                "--conninfo-secret-key \"{k}\" is not a Secret key: letters, digits, '-', '_' \
                 and '.', at most 253 characters"
            )));
        }
    }
    for e in &a.env {
        check_env(e)?;
    }
    if a.image.is_empty() || a.image.chars().any(char::is_whitespace) {
        return Err(KubeError::Invalid(format!(
            "--image \"{}\" is not an image reference",
            a.image
        )));
    }
    Ok(())
}

/// Variables the Job sets itself, which `--env` may not set.
pub(super) const SET_BY_THE_JOB: &[(&str, &str)] = &[
    (INDEX_ENV, "the Job sets it from the completion index"),
    (POD_NAME_ENV, "the Job sets it from the pod's name"),
    (
        "PGPASSWORD",
        "the password only comes from the Secret: --conninfo-secret",
    ),
    ("PGHOST", "use --host"),
    ("PGPORT", "use --port"),
    ("PGDATABASE", "use --dbname"),
    ("PGUSER", "use --user"),
];

/// One `--env NAME=VALUE`: a C identifier as name, not one the Job sets.
pub fn check_env(e: &str) -> Result<(), KubeError> {
    let Some((name, _)) = e.split_once('=') else {
        return Err(KubeError::Invalid(format!(
            "--env \"{e}\": expected NAME=VALUE"
        )));
    };
    let ident = name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
    if !ident {
        return Err(KubeError::Invalid(format!(
            "--env \"{name}\" is not a variable name: letters, digits and '_', not starting \
             with a digit"
        )));
    }
    if let Some((_, why)) = SET_BY_THE_JOB.iter().find(|(n, _)| *n == name) {
        return Err(KubeError::Invalid(format!("--env {name}: {why}")));
    }
    Ok(())
}

/// True when `s` is a DNS-1123 label of at most `max` characters (the names of Jobs,
/// namespaces and pods' host names): lower-case letters, digits and `-`, starting and
/// ending with a letter or digit.
pub fn is_dns_label(s: &str, max: usize) -> bool {
    let b = s.as_bytes();
    let edge = |c: &u8| c.is_ascii_lowercase() || c.is_ascii_digit();
    !b.is_empty()
        && b.len() <= max
        && b.first().is_some_and(edge)
        && b.last().is_some_and(edge)
        && b.iter().all(|c| edge(c) || *c == b'-')
}

/// True when `s` is a DNS-1123 subdomain (the names of Secrets): dot-separated labels,
/// at most 253 characters.
pub fn is_dns_subdomain(s: &str) -> bool {
    s.len() <= 253 && s.split('.').all(|part| is_dns_label(part, 63))
}

/// A Kubernetes quantity, positive: `<number><suffix>` with suffix one of the binary
/// SI (`Ki`…`Ei`), decimal SI (`m`, ``, `k`, `M`…`E`) or an exponent (`e3`, `E-2`).
pub fn is_quantity(q: &str) -> bool {
    let end = q
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(q.len());
    let (number, suffix) = q.split_at(end);
    let number_ok = match number.split_once('.') {
        None => !number.is_empty(),
        Some((int, frac)) => (!int.is_empty() || !frac.is_empty()) && !frac.contains('.'),
    };
    let suffix_ok = matches!(
        suffix,
        "" | "Ki" | "Mi" | "Gi" | "Ti" | "Pi" | "Ei" | "m" | "k" | "M" | "G" | "T" | "P" | "E"
    ) || suffix.strip_prefix(['e', 'E']).is_some_and(|exp| {
        let digits = exp.strip_prefix(['+', '-']).unwrap_or(exp);
        !digits.is_empty() && digits.chars().all(|c| c.is_ascii_digit())
    });
    number_ok && suffix_ok && number.chars().any(|c| c.is_ascii_digit() && c != '0')
}
