//! The common start of the generators: `--start-at` or `--start-in`.

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::*;

/// `--start-at`: RFC 3339 or Unix epoch seconds, read as every command reads it
/// ([`pgsurge_generators::start::parse_start_at`]), in the future, as RFC 3339 UTC.
pub(super) fn start_at(arg: &str, now_unix_us: i64) -> Result<(String, i64), KubeError> {
    use pgsurge_generators::start::{parse_start_at, StartAtError};
    let invalid =
        |e: &dyn std::fmt::Display| KubeError::Invalid(format!("invalid --start-at: {e}"));
    let at_us = parse_start_at(arg, now_unix_us).map_err(|e| match e {
        StartAtError::InThePast { .. } => KubeError::Invalid(format!(
            "--start-at \"{arg}\" is not in the future: give a time after the pods can have \
             started and connected, or --start-in"
        )),
        e @ StartAtError::Invalid(_) => invalid(&e),
    })?;
    let at_ns = i128::from(at_us) * 1000;
    let secs = at_us.div_euclid(1_000_000);
    Ok((rfc3339(at_ns).ok_or_else(|| invalid(&arg))?, secs))
}

/// `--start-in`: now plus the lead time (read as every command reads it,
/// [`pgsurge_generators::start::StartIn`]), rounded up to a whole second.
pub(super) fn start_in(arg: &str, now_unix_us: i64) -> Result<(String, i64), KubeError> {
    let lead: pgsurge_generators::start::StartIn = arg
        .parse()
        .map_err(|e| KubeError::Invalid(format!("invalid --start-in: {e}")))?;
    let secs = lead.seconds() as i64;
    let at_s = (now_unix_us + secs * 1_000_000).div_euclid(1_000_000) + 1;
    let text = rfc3339(i128::from(at_s) * 1_000_000_000)
        .ok_or_else(|| KubeError::Invalid(format!("invalid --start-in \"{arg}\"")))?;
    Ok((text, at_s))
}

pub(super) fn rfc3339(unix_ns: i128) -> Option<String> {
    OffsetDateTime::from_unix_timestamp_nanos(unix_ns)
        .ok()?
        .format(&Rfc3339)
        .ok()
}
