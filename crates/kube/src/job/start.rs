//! The common start of the generators: `--start-at` or `--start-in`.

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::*;

/// `--start-at`: RFC 3339 or Unix epoch seconds (as `bench --start-at` reads it), in
/// the future, as RFC 3339 UTC.
pub(super) fn start_at(arg: &str, now_unix_us: i64) -> Result<(String, i64), KubeError> {
    let s = arg.trim();
    let invalid = || {
        KubeError::Invalid(format!(
            "invalid --start-at \"{arg}\": expected an RFC 3339 time such as \
             2026-11-23T22:30:00Z or Unix epoch seconds such as 1795473000"
        ))
    };
    let at_ns: i128 = if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = s.parse().map_err(|_| invalid())?;
        if !(secs.is_finite() && secs < 9.0e12) {
            return Err(invalid());
        }
        (secs * 1e9).round() as i128
    } else {
        OffsetDateTime::parse(s, &Rfc3339)
            .map_err(|_| invalid())?
            .unix_timestamp_nanos()
    };
    if at_ns <= i128::from(now_unix_us) * 1000 {
        return Err(KubeError::Invalid(format!(
            "--start-at \"{arg}\" is not in the future: give a time after the pods can have \
             started and connected, or --start-in"
        )));
    }
    let secs = i64::try_from(at_ns.div_euclid(1_000_000_000)).map_err(|_| invalid())?;
    Ok((rfc3339(at_ns).ok_or_else(invalid)?, secs))
}

/// `--start-in`: now plus the lead time, rounded up to a whole second.
pub(super) fn start_in(arg: &str, now_unix_us: i64) -> Result<(String, i64), KubeError> {
    let invalid = || {
        KubeError::Invalid(format!(
            "invalid --start-in \"{arg}\": expected a duration such as 90s, 2m, 1h or seconds"
        ))
    };
    let s = arg.trim();
    let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => s.split_at(i),
        None => (s, "s"),
    };
    let n: i64 = digits.parse().map_err(|_| invalid())?;
    let secs = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        _ => None,
    }
    .filter(|&s| (1..=7 * 24 * 3600).contains(&s))
    .ok_or_else(invalid)?;
    let at_s = (now_unix_us + secs * 1_000_000).div_euclid(1_000_000) + 1;
    Ok((
        rfc3339(i128::from(at_s) * 1_000_000_000).ok_or_else(invalid)?,
        at_s,
    ))
}

pub(super) fn rfc3339(unix_ns: i128) -> Option<String> {
    OffsetDateTime::from_unix_timestamp_nanos(unix_ns)
        .ok()?
        .format(&Rfc3339)
        .ok()
}
