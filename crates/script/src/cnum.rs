//! Owns C-compatible number parsing used by pgbench: `strtoint64` (base 10, strict),
//! `strtod` (full string, with glibc's acceptance of white space, `inf`, `nan`, hex
//! floats), `atoi` and `strtol` prefixes.

use crate::vars::{is_c_space, VarError};

/// pgbench's `strtoint64(str, errorOK = false)`.
pub(crate) fn strtoint64(s: &str) -> Result<i64, VarError> {
    let (v, end, overflow) = strtol_prefix(s);
    if overflow {
        return Err(VarError::IntOutOfRange(s.to_string()));
    }
    if end == 0 || end != s.len() {
        return Err(VarError::InvalidInt(s.to_string()));
    }
    Ok(v)
}

/// C `strtol(s, &end, 10)` on int64: value (saturated), end offset (0 when no digits),
/// and whether it overflowed.
pub(crate) fn strtol_prefix(s: &str) -> (i64, usize, bool) {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_c_space(b[i]) {
        i += 1;
    }
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let digits_start = i;
    let mut acc: i128 = 0;
    let mut overflow = false;
    while i < b.len() && b[i].is_ascii_digit() {
        if !overflow {
            acc = acc * 10 + i128::from(b[i] - b'0');
            if acc > i128::from(i64::MAX) + 1 {
                overflow = true;
            }
        }
        i += 1;
    }
    if i == digits_start {
        return (0, 0, false);
    }
    let signed = if neg { -acc } else { acc };
    if overflow || signed > i128::from(i64::MAX) || signed < i128::from(i64::MIN) {
        let v = if neg { i64::MIN } else { i64::MAX };
        return (v, i, true);
    }
    (signed as i64, i, false)
}

/// C `atoi`: `(int) strtol(s, NULL, 10)` as glibc computes it (truncating to 32 bits).
pub(crate) fn atoi(s: &str) -> i32 {
    strtol_prefix(s).0 as i32
}

/// C `strtod` over the whole string: `None` on syntax error, trailing junk or `ERANGE`.
pub(crate) fn strtod_full(s: &str) -> Option<f64> {
    let (v, end, erange) = strtod_prefix(s)?;
    if erange || end != s.len() {
        return None;
    }
    Some(v)
}

/// C `strtod` prefix: value, end offset, and whether glibc would set `ERANGE`.
pub(crate) fn strtod_prefix(s: &str) -> Option<(f64, usize, bool)> {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_c_space(b[i]) {
        i += 1;
    }
    let start_sign = i;
    let neg = match b.get(i) {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let rest = &s[i..];
    let lower: String = rest
        .chars()
        .take(8)
        .collect::<String>()
        .to_ascii_lowercase();
    let sign = if neg { -1.0 } else { 1.0 };
    if lower.starts_with("infinity") {
        return Some((sign * f64::INFINITY, i + 8, false));
    }
    if lower.starts_with("inf") {
        return Some((sign * f64::INFINITY, i + 3, false));
    }
    if lower.starts_with("nan") {
        let mut end = i + 3;
        // glibc accepts nan(chars)
        if b.get(end) == Some(&b'(') {
            let mut j = end + 1;
            while j < b.len() && (b[j].is_ascii_alphanumeric() || b[j] == b'_') {
                j += 1;
            }
            if b.get(j) == Some(&b')') {
                end = j + 1;
            }
        }
        return Some((f64::NAN.copysign(sign), end, false));
    }
    if lower.starts_with("0x") {
        return hex_float(s, i + 2, sign).or(Some((0.0 * sign, i + 1, false)));
    }
    // decimal: digits [. digits] [e[+-]digits]
    let mut j = i;
    let mut mant_digits = 0;
    let mut nonzero = false;
    while j < b.len() && b[j].is_ascii_digit() {
        nonzero |= b[j] != b'0';
        j += 1;
        mant_digits += 1;
    }
    if j < b.len() && b[j] == b'.' {
        j += 1;
        while j < b.len() && b[j].is_ascii_digit() {
            nonzero |= b[j] != b'0';
            j += 1;
            mant_digits += 1;
        }
    }
    if mant_digits == 0 {
        return None;
    }
    if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
        let mut k = j + 1;
        if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
            k += 1;
        }
        let exp_start = k;
        while k < b.len() && b[k].is_ascii_digit() {
            k += 1;
        }
        if k > exp_start {
            j = k;
        }
    }
    let text = &s[start_sign..j];
    let v: f64 = text.trim_start_matches('+').parse().ok()?;
    let erange = v.is_infinite() || (nonzero && (v == 0.0 || v.abs() < f64::MIN_POSITIVE));
    Some((v, j, erange))
}

fn hex_float(s: &str, start: usize, sign: f64) -> Option<(f64, usize, bool)> {
    let b = s.as_bytes();
    let mut j = start;
    let mut mant: f64 = 0.0;
    let mut digits = 0;
    let mut exp: i64 = 0;
    while j < b.len() && b[j].is_ascii_hexdigit() {
        mant = mant * 16.0 + f64::from((b[j] as char).to_digit(16)?);
        j += 1;
        digits += 1;
    }
    if j < b.len() && b[j] == b'.' {
        j += 1;
        while j < b.len() && b[j].is_ascii_hexdigit() {
            mant = mant * 16.0 + f64::from((b[j] as char).to_digit(16)?);
            exp -= 4;
            j += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if j < b.len() && (b[j] == b'p' || b[j] == b'P') {
        let (e, end, _) = strtol_prefix(&s[j + 1..]);
        let sign_ok = !s[j + 1..].starts_with(|c: char| is_c_space(c as u8));
        if end > 0 && sign_ok {
            exp = exp.saturating_add(e);
            j += 1 + end;
        }
    }
    let v = sign * mant * 2f64.powi(exp.clamp(-2000, 2000) as i32);
    let erange = v.is_infinite() || (mant != 0.0 && v.abs() < f64::MIN_POSITIVE);
    Some((v, j, erange))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strtod_like_glibc() {
        assert_eq!(strtod_full("1.5"), Some(1.5));
        assert_eq!(strtod_full(" -2.5e1"), Some(-25.0));
        assert_eq!(strtod_full("1e"), None);
        assert_eq!(strtod_full("1e400"), None);
        assert_eq!(strtod_full("1e-400"), None);
        assert_eq!(strtod_full("0x10"), Some(16.0));
        assert_eq!(strtod_full("-Infinity"), Some(f64::NEG_INFINITY));
        assert!(strtod_full("nan").is_some_and(f64::is_nan));
        assert_eq!(strtod_full("abc"), None);
        assert_eq!(strtod_full(".5"), Some(0.5));
        assert_eq!(strtod_full("5."), Some(5.0));
        assert_eq!(strtod_full("."), None);
        assert_eq!(strtod_full("1.5 "), None);
    }

    #[test]
    fn atoi_like_glibc() {
        assert_eq!(atoi("10ms"), 10);
        assert_eq!(atoi("  -3"), -3);
        assert_eq!(atoi("abc"), 0);
        assert_eq!(atoi("9999999999"), 1410065407);
    }
}
