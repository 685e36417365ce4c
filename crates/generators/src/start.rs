//! When the generators of a distributed run start, read the same way by every command
//! that takes it: `--start-at` (an instant: RFC 3339 or Unix epoch seconds) by `bench`,
//! `dist ssh` and `kube job`; `--start-in` (a lead time: `90s`, `2m`, `1h` or plain
//! seconds) by `dist local`, `dist ssh` and `kube job`.

use std::time::{SystemTime, UNIX_EPOCH};

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

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

/// The longest `--start-in`: a week.
pub const MAX_START_IN_S: u64 = 7 * 24 * 3600;

/// A `--start-in` lead time in whole seconds: `90s`, `2m`, `1h`, or a number of
/// seconds; at least 1 s and at most a week.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StartIn(pub u64);

impl StartIn {
    /// The lead time in seconds.
    pub fn seconds(self) -> u64 {
        self.0
    }
}

impl std::fmt::Display for StartIn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}s", self.0)
    }
}

impl std::str::FromStr for StartIn {
    type Err = String;

    fn from_str(arg: &str) -> Result<StartIn, String> {
        let invalid = || {
            format!(
                "invalid start delay \"{arg}\": expected a duration such as 90s, 2m or 1h, \
                 or seconds, from 1 s to a week"
            )
        };
        let s = arg.trim();
        let (digits, unit) = match s.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
            Some((i, _)) => s.split_at(i),
            None => (s, "s"),
        };
        let n: u64 = digits.parse().map_err(|_| invalid())?;
        match unit {
            "s" => Some(n),
            "m" => n.checked_mul(60),
            "h" => n.checked_mul(3600),
            _ => None,
        }
        .filter(|s| (1..=MAX_START_IN_S).contains(s))
        .map(StartIn)
        .ok_or_else(invalid)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn start_in_takes_units_and_plain_seconds() {
        for (arg, secs) in [
            ("90s", 90),
            ("2m", 120),
            ("1h", 3600),
            ("45", 45),
            (" 3 ", 3),
        ] {
            assert_eq!(arg.parse::<StartIn>(), Ok(StartIn(secs)), "{arg}");
        }
        for bad in [
            "",
            "0",
            "0s",
            "-5",
            "1.5m",
            "2d",
            "m",
            "8h0",
            "169h",
            "99999999999999999999",
        ] {
            let e = bad.parse::<StartIn>().unwrap_err();
            assert!(e.contains("expected a duration such as 90s"), "{bad}: {e}");
        }
    }

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
