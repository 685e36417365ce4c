//! The C library number conversions pgbench relies on, with their exact edge cases:
//! `strtol` (base 10), `option_parse_int`, `atoi`, `atof`/`strtod`, and
//! `sscanf("%lu%c")` for the random seed. Pure functions on bytes.

/// `isspace` in the C locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Result of `strtol(s, &end, 10)` on a 64-bit `long`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Strtol {
    /// The value, clamped to `i64` range on overflow.
    pub value: i64,
    /// Bytes consumed (0 when no digits were found: `end == s`).
    pub end: usize,
    /// `errno == ERANGE`.
    pub overflow: bool,
}

/// `strtol(s, &end, 10)`: leading C whitespace, an optional sign, decimal digits.
pub fn strtol(s: &[u8]) -> Strtol {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    let digits_start = i;
    // Accumulate as a negative number so i64::MIN is representable.
    let mut acc: i64 = 0;
    let mut overflow = false;
    while i < s.len() && s[i].is_ascii_digit() {
        let d = i64::from(s[i] - b'0');
        if !overflow {
            match acc.checked_mul(10).and_then(|v| v.checked_sub(d)) {
                Some(v) => acc = v,
                None => overflow = true,
            }
        }
        i += 1;
    }
    if i == digits_start {
        return Strtol {
            value: 0,
            end: 0,
            overflow: false,
        };
    }
    let value = if overflow {
        if negative {
            i64::MIN
        } else {
            i64::MAX
        }
    } else if negative {
        acc
    } else {
        match acc.checked_neg() {
            Some(v) => v,
            None => {
                overflow = true;
                i64::MAX
            }
        }
    };
    Strtol {
        value,
        end: i,
        overflow,
    }
}

/// Why `option_parse_int` rejected a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IntOptionError {
    /// Trailing junk or no digits followed by non-space: `invalid value "…" for option …`.
    Invalid,
    /// Out of range or overflow (an empty or all-space value is 0): `… must be in range …`.
    Range,
}

/// PostgreSQL's `option_parse_int`: `strtoint` (strtol narrowed to int, ERANGE when it
/// does not fit), trailing whitespace allowed, then the range check.
pub fn option_parse_int(s: &[u8], min: i32, max: i32) -> Result<i32, IntOptionError> {
    let r = strtol(s);
    let mut end = r.end;
    while end < s.len() && is_c_space(s[end]) {
        end += 1;
    }
    if end != s.len() {
        return Err(IntOptionError::Invalid);
    }
    let fits = i32::try_from(r.value).ok();
    match fits {
        Some(v) if !r.overflow && v >= min && v <= max => Ok(v),
        _ => Err(IntOptionError::Range),
    }
}

/// glibc `atoi`: `(int) strtol(s, NULL, 10)`, truncating to 32 bits like the cast does.
pub fn atoi(s: &[u8]) -> i32 {
    strtol(s).value as i32
}

/// `atof`/`strtod` in the C locale, ignoring where the number ends: leading
/// whitespace, sign, decimal or hexadecimal (`0x…p…`) significand with optional
/// exponent, `inf`/`infinity`/`nan`/`nan(…)`; 0.0 when nothing converts.
pub fn atof(s: &[u8]) -> f64 {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    let rest = &s[i..];
    let magnitude = parse_unsigned_float(rest);
    if negative {
        -magnitude
    } else {
        magnitude
    }
}

fn starts_with_ci(s: &[u8], word: &[u8]) -> bool {
    s.len() >= word.len() && s[..word.len()].eq_ignore_ascii_case(word)
}

fn parse_unsigned_float(s: &[u8]) -> f64 {
    if starts_with_ci(s, b"inf") {
        return f64::INFINITY;
    }
    if starts_with_ci(s, b"nan") {
        return f64::NAN;
    }
    if s.len() >= 2 && s[0] == b'0' && (s[1] == b'x' || s[1] == b'X') {
        if let Some(v) = parse_hex_float(&s[2..]) {
            return v;
        }
        // "0x" without hex digits converts just the "0".
        return 0.0;
    }
    // Decimal: digits [. digits] [e [sign] digits], at least one significand digit.
    let mut i = 0;
    let mut text = String::new();
    let mut digits = 0;
    while i < s.len() && s[i].is_ascii_digit() {
        text.push(s[i] as char);
        i += 1;
        digits += 1;
    }
    if i < s.len() && s[i] == b'.' {
        text.push('.');
        i += 1;
        while i < s.len() && s[i].is_ascii_digit() {
            text.push(s[i] as char);
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return 0.0;
    }
    if i < s.len() && (s[i] == b'e' || s[i] == b'E') {
        let mut j = i + 1;
        let mut exp = String::from("e");
        if j < s.len() && (s[j] == b'+' || s[j] == b'-') {
            exp.push(s[j] as char);
            j += 1;
        }
        let exp_digits_start = j;
        while j < s.len() && s[j].is_ascii_digit() {
            exp.push(s[j] as char);
            j += 1;
        }
        if j > exp_digits_start {
            text.push_str(&exp);
        }
    }
    if text.ends_with('.') {
        text.push('0');
    }
    if text.starts_with('.') {
        text.insert(0, '0');
    }
    text.parse::<f64>().unwrap_or(0.0)
}

/// Hex significand after "0x": hexdigits [. hexdigits] [p [sign] digits].
fn parse_hex_float(s: &[u8]) -> Option<f64> {
    let mut i = 0;
    let mut mantissa: f64 = 0.0;
    let mut exp: i64 = 0;
    let mut digits = 0;
    while i < s.len() && s[i].is_ascii_hexdigit() {
        mantissa = mantissa * 16.0 + f64::from(hex_val(s[i]));
        i += 1;
        digits += 1;
    }
    if i < s.len() && s[i] == b'.' {
        i += 1;
        while i < s.len() && s[i].is_ascii_hexdigit() {
            mantissa = mantissa * 16.0 + f64::from(hex_val(s[i]));
            exp -= 4;
            i += 1;
            digits += 1;
        }
    }
    if digits == 0 {
        return None;
    }
    if i < s.len() && (s[i] == b'p' || s[i] == b'P') {
        let r = strtol(&s[i + 1..]);
        // strtol would also accept leading spaces, strtod does not.
        let exp_ok = s.get(i + 1).is_some_and(|&b| !is_c_space(b));
        if r.end > 0 && exp_ok {
            exp = exp.saturating_add(r.value.clamp(-100_000, 100_000));
        }
    }
    let exp = i32::try_from(exp.clamp(-100_000, 100_000)).unwrap_or(0);
    Some(mantissa * 2f64.powi(exp))
}

fn hex_val(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

/// `sscanf(s, "%lu%c", &v, &c) == 1`: optional leading whitespace and sign (a minus
/// wraps modulo 2^64, overflow saturates), digits, and nothing after them — not even
/// whitespace. `None` when that does not hold.
pub fn scan_u64_whole(s: &[u8]) -> Option<u64> {
    let mut i = 0;
    while i < s.len() && is_c_space(s[i]) {
        i += 1;
    }
    let mut negative = false;
    if i < s.len() && (s[i] == b'+' || s[i] == b'-') {
        negative = s[i] == b'-';
        i += 1;
    }
    let start = i;
    let mut acc: u64 = 0;
    let mut overflow = false;
    while i < s.len() && s[i].is_ascii_digit() {
        match acc
            .checked_mul(10)
            .and_then(|v| v.checked_add(u64::from(s[i] - b'0')))
        {
            Some(v) => acc = v,
            None => overflow = true,
        }
        i += 1;
    }
    if i == start || i != s.len() {
        return None;
    }
    if overflow {
        return Some(u64::MAX);
    }
    Some(if negative { acc.wrapping_neg() } else { acc })
}

/// pgbench's `parseScriptWeight` on the part after the last `@`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightError {
    /// `invalid weight specification: @…` (no digits, junk, or strtol overflow).
    Invalid,
    /// `weight specification out of range (0 .. 2147483647): N`.
    Range(i64),
}

/// Parses a weight suffix (the text after `@`): strtol base 10, all consumed.
pub fn parse_weight(s: &[u8]) -> Result<u32, WeightError> {
    let r = strtol(s);
    if r.overflow || r.end == 0 || r.end != s.len() {
        return Err(WeightError::Invalid);
    }
    if r.value < 0 || r.value > i64::from(i32::MAX) {
        return Err(WeightError::Range(r.value));
    }
    Ok(r.value as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn option_parse_int_cases() {
        let p = |s: &str| option_parse_int(s.as_bytes(), 1, i32::MAX);
        assert_eq!(p("10"), Ok(10));
        assert_eq!(p("  +7 \t"), Ok(7));
        assert_eq!(p("abc"), Err(IntOptionError::Invalid));
        assert_eq!(p("10x"), Err(IntOptionError::Invalid));
        assert_eq!(p("-"), Err(IntOptionError::Invalid));
        assert_eq!(p("0x10"), Err(IntOptionError::Invalid));
        assert_eq!(p(""), Err(IntOptionError::Range));
        assert_eq!(p("   "), Err(IntOptionError::Range));
        assert_eq!(p("0"), Err(IntOptionError::Range));
        assert_eq!(p("-5"), Err(IntOptionError::Range));
        assert_eq!(p("2147483648"), Err(IntOptionError::Range));
        assert_eq!(p("99999999999999999999999"), Err(IntOptionError::Range));
        assert_eq!(p("2147483647"), Ok(i32::MAX));
        assert_eq!(
            option_parse_int(b"0", 0, i32::MAX),
            Ok(0),
            "--partitions accepts 0"
        );
    }

    #[test]
    fn atoi_truncates_like_a_c_cast() {
        assert_eq!(atoi(b"5"), 5);
        assert_eq!(atoi(b"abc"), 0);
        assert_eq!(atoi(b" -3x"), -3);
        assert_eq!(atoi(b"4294967296"), 0);
        assert_eq!(atoi(b"3000000000"), -1_294_967_296);
        assert_eq!(atoi(b"99999999999999999999"), -1, "LONG_MAX cast to int");
    }

    #[test]
    fn atof_cases() {
        assert_eq!(atof(b"1.5"), 1.5);
        assert_eq!(atof(b"  -2e3xyz"), -2000.0);
        assert_eq!(atof(b".5"), 0.5);
        assert_eq!(atof(b"5."), 5.0);
        assert_eq!(atof(b"abc"), 0.0);
        assert_eq!(atof(b"1e"), 1.0);
        assert_eq!(atof(b"1e+"), 1.0);
        assert_eq!(atof(b"0x10"), 16.0);
        assert_eq!(atof(b"0x1p3"), 8.0);
        assert_eq!(atof(b"0x.8"), 0.5);
        assert_eq!(atof(b"0xg"), 0.0);
        assert_eq!(atof(b"INF"), f64::INFINITY);
        assert_eq!(atof(b"-infinity"), f64::NEG_INFINITY);
        assert!(atof(b"nan").is_nan());
        assert_eq!(atof(b"1e999"), f64::INFINITY);
        assert_eq!(atof(b""), 0.0);
    }

    #[test]
    fn seed_scan_cases() {
        assert_eq!(scan_u64_whole(b"5432"), Some(5432));
        assert_eq!(scan_u64_whole(b" 5"), Some(5));
        assert_eq!(scan_u64_whole(b"5 "), None);
        assert_eq!(scan_u64_whole(b"-1"), Some(u64::MAX));
        assert_eq!(scan_u64_whole(b"+3"), Some(3));
        assert_eq!(scan_u64_whole(b"99999999999999999999999"), Some(u64::MAX));
        assert_eq!(scan_u64_whole(b""), None);
        assert_eq!(scan_u64_whole(b"abc"), None);
        assert_eq!(scan_u64_whole(b"0x10"), None);
    }

    #[test]
    fn weight_cases() {
        assert_eq!(parse_weight(b"3"), Ok(3));
        assert_eq!(parse_weight(b" 3"), Ok(3));
        assert_eq!(parse_weight(b"0"), Ok(0));
        assert_eq!(parse_weight(b""), Err(WeightError::Invalid));
        assert_eq!(parse_weight(b"x"), Err(WeightError::Invalid));
        assert_eq!(parse_weight(b"3 "), Err(WeightError::Invalid));
        assert_eq!(parse_weight(b"-2"), Err(WeightError::Range(-2)));
        assert_eq!(
            parse_weight(b"3000000000"),
            Err(WeightError::Range(3_000_000_000))
        );
        assert_eq!(
            parse_weight(b"99999999999999999999"),
            Err(WeightError::Invalid)
        );
    }
}
