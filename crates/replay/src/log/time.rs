//! Timestamps as PostgreSQL writes them in logs (`%m`, `%t`, `%n`, csvlog's `log_time`,
//! jsonlog's `timestamp`) → µs since the Unix epoch. A numeric zone (`+03`, `-0430`) is
//! applied; a zone abbreviation (`UTC`, `CET`) is not looked up: the log's entries share
//! it, and a replay needs only the differences between them.

/// Days from 1970-01-01 to the civil date (proleptic Gregorian).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// The latest time a log can hold: the last second of year 9999, as dates have four
/// digits (seconds since the epoch). Times stay far enough from `i64`'s ends, in µs,
/// that differences between them cannot overflow.
const LAST_SECOND: i64 = 253_402_300_799;

/// A run of ASCII digits as a number; `None` when empty, not digits, or too large.
fn digits(s: &[u8]) -> Option<i64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    s.iter().try_fold(0i64, |n, d| {
        n.checked_mul(10)?.checked_add(i64::from(d - b'0'))
    })
}

/// Reads `YYYY-MM-DD HH:MM:SS[.ffffff]` at the start of `s`: the time in µs (as if
/// UTC) and the bytes it took.
fn date_time(s: &[u8]) -> Option<(i64, usize)> {
    if s.len() < 19
        || s[4] != b'-'
        || s[7] != b'-'
        || s[10] != b' '
        || s[13] != b':'
        || s[16] != b':'
    {
        return None;
    }
    let (y, mo, d) = (digits(&s[0..4])?, digits(&s[5..7])?, digits(&s[8..10])?);
    let (h, mi, sec) = (
        digits(&s[11..13])?,
        digits(&s[14..16])?,
        digits(&s[17..19])?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut us = ((days_from_civil(y, mo, d) * 24 + h) * 60 + mi) * 60 + sec;
    us *= 1_000_000;
    let mut len = 19;
    if s.get(19) == Some(&b'.') {
        let frac_len = s[20..].iter().take_while(|b| b.is_ascii_digit()).count();
        let frac = &s[20..20 + frac_len];
        if frac.is_empty() || frac.len() > 9 {
            return None;
        }
        let mut f = digits(frac)?;
        for _ in frac.len()..6 {
            f *= 10;
        }
        for _ in 6..frac.len() {
            f /= 10;
        }
        us += f;
        len += 1 + frac.len();
    }
    Some((us, len))
}

/// A numeric zone (`+03`, `-04:30`, `+0530`) in seconds east of UTC.
fn numeric_zone(z: &str) -> Option<i64> {
    let (sign, rest) = match z.as_bytes().first()? {
        b'+' => (1, &z[1..]),
        b'-' => (-1, &z[1..]),
        _ => return None,
    };
    // `+HH:MM` is read as `+HHMM`.
    let mut packed = [0u8; 4];
    let mut n = 0;
    for b in rest.bytes().filter(|b| *b != b':') {
        *packed.get_mut(n)? = b;
        n += 1;
    }
    let (h, m) = match n {
        1 | 2 => (digits(&packed[..n])?, 0),
        4 => (digits(&packed[..2])?, digits(&packed[2..4])?),
        _ => return None,
    };
    Some(sign * (h * 3600 + m * 60))
}

/// A timestamp `%m`/`%t` with its zone: the time and the bytes it took (the zone
/// included, when one follows after a space).
pub fn parse_timestamp(s: &str) -> Option<(i64, usize)> {
    let (mut us, mut len) = date_time(s.as_bytes())?;
    if let Some(rest) = s[len..].strip_prefix(' ') {
        let zone_len = rest.find([' ', '|', ']', ',', '\t']).unwrap_or(rest.len());
        let zone = &rest[..zone_len];
        if !zone.is_empty()
            && zone
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "+-:".contains(c))
        {
            if let Some(east) = numeric_zone(zone) {
                us -= east * 1_000_000;
            }
            len += 1 + zone_len;
        }
    }
    Some((us, len))
}

/// `%n`: seconds since the epoch with milliseconds (`1700000000.123`), and its length;
/// `None` past year 9999.
pub fn parse_epoch(s: &str) -> Option<(i64, usize)> {
    let int_len = s.bytes().take_while(u8::is_ascii_digit).count();
    let secs = digits(&s.as_bytes()[..int_len]).filter(|&s| s <= LAST_SECOND)?;
    let mut us = secs * 1_000_000;
    let mut len = int_len;
    if s.as_bytes().get(int_len) == Some(&b'.') {
        let frac_len = s[int_len + 1..]
            .bytes()
            .take_while(u8::is_ascii_digit)
            .count();
        let frac = &s.as_bytes()[int_len + 1..int_len + 1 + frac_len.min(6)];
        let mut f = digits(frac).unwrap_or(0);
        for _ in frac.len()..6 {
            f *= 10;
        }
        us += f;
        len += 1 + frac_len;
    }
    Some((us, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_milliseconds_and_zones() {
        let (a, n) = parse_timestamp("2026-11-28 18:00:00.123 UTC|x").unwrap();
        assert_eq!(n, 27);
        assert_eq!(a, 1_795_888_800_123_000);
        let (b, _) = parse_timestamp("2026-11-28 21:00:00.123 +03").unwrap();
        assert_eq!(a, b);
        let (c, n) = parse_timestamp("2026-11-28 18:00:01 CET [12]").unwrap();
        assert_eq!(n, 23);
        assert_eq!(c - (a - 123_000), 1_000_000);
        assert_eq!(parse_timestamp("2026-13-28 18:00:00"), None);
        assert_eq!(parse_timestamp("yesterday"), None);
    }

    #[test]
    fn reads_epoch_seconds() {
        assert_eq!(
            parse_epoch("1700000000.123|"),
            Some((1_700_000_000_123_000, 14))
        );
        assert_eq!(parse_epoch("x"), None);
        assert_eq!(parse_epoch("99999999999999999999.5|"), None);
        assert_eq!(parse_epoch("253402300800|"), None);
    }
}
