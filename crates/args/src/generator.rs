//! pgsurge's options for one load generator of a distributed run:
//! `--start-at`, `--generator-name`, `--generator-index`, `--generator-count`.
//! Owns their parsing and validation only; the engine waits for the start instant
//! and the results record the identity. None of them changes pgbench's behaviour
//! when absent.

use std::time::{SystemTime, UNIX_EPOCH};

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Who this generator is among the generators of one distributed run, and when its
/// clients start (the engine's type, carried into the `RunSpec` as is).
pub use pgsurge_engine::GeneratorOptions;

/// The wall clock now, in Unix epoch µs.
pub fn now_unix_us() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_micros() as i64)
        .unwrap_or(0)
}

/// Why a `--start-at` value was refused.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum StartAtError {
    /// Neither RFC 3339 nor epoch seconds.
    #[error("invalid start time \"{0}\": expected an RFC 3339 time such as 2026-11-23T22:30:00Z or Unix epoch seconds such as 1795473000")]
    Invalid(String),
    /// The instant has already passed.
    #[error("start time \"{given}\" is {ago_s:.3} s in the past; give a time after the generators have connected")]
    InThePast {
        /// The option value as given.
        given: String,
        /// How far in the past, in seconds.
        ago_s: f64,
    },
}

/// Parses a `--start-at` value — RFC 3339 (`2026-11-23T22:30:00Z`,
/// `2026-11-23T23:30:00.250+01:00`) or Unix epoch seconds (`1795473000`, fractions
/// allowed) — into epoch µs, refusing an instant not after `now_us`.
pub fn parse_start_at(arg: &str, now_us: i64) -> Result<i64, StartAtError> {
    let at = parse_instant(arg).ok_or_else(|| StartAtError::Invalid(arg.to_string()))?;
    if at <= now_us {
        return Err(StartAtError::InThePast {
            given: arg.to_string(),
            ago_s: (now_us - at) as f64 / 1e6,
        });
    }
    Ok(at)
}

fn parse_instant(arg: &str) -> Option<i64> {
    let s = arg.trim();
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        let secs: f64 = s.parse().ok()?;
        // Beyond year ~2^53 µs the value is meaningless; refuse rather than saturate.
        return (secs.is_finite() && secs < 9.0e12).then(|| (secs * 1e6).round() as i64);
    }
    let t = OffsetDateTime::parse(s, &Rfc3339).ok()?;
    i64::try_from(t.unix_timestamp_nanos() / 1000).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: i64 = 1_795_000_000_000_000; // 2026-11-18

    #[test]
    fn rfc3339_and_epoch_seconds() {
        assert_eq!(
            parse_start_at("2026-11-23T22:30:00Z", NOW),
            Ok(1_795_473_000_000_000)
        );
        assert_eq!(
            parse_start_at("2026-11-23T23:30:00.25+01:00", NOW),
            Ok(1_795_473_000_250_000)
        );
        assert_eq!(parse_start_at("1795473000", NOW), Ok(1_795_473_000_000_000));
        assert_eq!(
            parse_start_at("1795473000.5", NOW),
            Ok(1_795_473_000_500_000)
        );
    }

    #[test]
    fn garbage_and_past_are_refused() {
        for bad in [
            "",
            "soon",
            "2026-11-23 22:30",
            "12:00",
            "-5",
            "1.2.3",
            "2026-13-01T00:00:00Z",
        ] {
            assert!(
                matches!(parse_start_at(bad, NOW), Err(StartAtError::Invalid(_))),
                "{bad:?}"
            );
        }
        let e = parse_start_at("1794999999", NOW).unwrap_err();
        assert_eq!(
            e.to_string(),
            "start time \"1794999999\" is 1.000 s in the past; give a time after the generators have connected"
        );
    }
}
