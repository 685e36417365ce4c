//! Owns the C printf number formats pgbench output depends on, as PostgreSQL's own
//! `snprintf` renders them: `%.15g` for doubles in variables and `debug()`, and `%f`
//! in error messages, with `NaN`, `Infinity` and `-Infinity` for non-finite values.

use std::fmt::Write as _;

/// Appends `x` formatted like PostgreSQL's `printf("%.15g", x)`.
pub fn format_double(x: f64, out: &mut String) {
    format_g(x, 15, out)
}

/// Appends `x` formatted like PostgreSQL's `printf("%.<precision>g", x)`.
pub fn format_g(x: f64, precision: usize, out: &mut String) {
    if non_finite(x, out) {
        return;
    }
    let p = precision.clamp(1, 17);
    if x == 0.0 {
        out.push_str(if x.is_sign_negative() { "-0" } else { "0" });
        return;
    }
    // Round to p significant digits first: the exponent after rounding decides the style.
    // Formatting goes through a stack buffer so that doubles render without allocating.
    let mut sci = StackBuf::new();
    let _ = write!(sci, "{:.*e}", p - 1, x);
    let sci = sci.as_str();
    let (mantissa, exp) = sci.split_once('e').unwrap_or((sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    if exp < -4 || exp >= p as i32 {
        out.push_str(strip_zeros(mantissa));
        out.push('e');
        out.push(if exp < 0 { '-' } else { '+' });
        let _ = write!(out, "{:02}", exp.unsigned_abs());
    } else {
        let decimals = (p as i32 - 1 - exp).max(0) as usize;
        let mut fixed = StackBuf::new();
        let _ = write!(fixed, "{:.*}", decimals, x);
        out.push_str(strip_zeros(fixed.as_str()));
    }
}

/// A small fixed-capacity text buffer (`%g` output never exceeds it for precisions up
/// to 17: at most 17 digits, a sign, a point, zeros below 1e-4 and an exponent).
struct StackBuf {
    buf: [u8; 64],
    len: usize,
}

impl StackBuf {
    fn new() -> StackBuf {
        StackBuf {
            buf: [0; 64],
            len: 0,
        }
    }

    fn as_str(&self) -> &str {
        // only whole `str`s are ever copied in, so this cannot fail
        std::str::from_utf8(&self.buf[..self.len]).unwrap_or("")
    }
}

impl std::fmt::Write for StackBuf {
    fn write_str(&mut self, s: &str) -> std::fmt::Result {
        let end = self.len + s.len();
        if end > self.buf.len() {
            return Err(std::fmt::Error);
        }
        self.buf[self.len..end].copy_from_slice(s.as_bytes());
        self.len = end;
        Ok(())
    }
}

/// Appends `x` formatted like PostgreSQL's `printf("%f", x)`.
pub fn format_f(x: f64, out: &mut String) {
    if non_finite(x, out) {
        return;
    }
    let _ = write!(out, "{x:.6}");
}

/// `%f` as a new string (for error messages).
pub(crate) fn f6(x: f64) -> String {
    let mut s = String::new();
    format_f(x, &mut s);
    s
}

fn non_finite(x: f64, out: &mut String) -> bool {
    if x.is_nan() {
        out.push_str("NaN");
    } else if x.is_infinite() {
        out.push_str(if x > 0.0 { "Infinity" } else { "-Infinity" });
    } else {
        return false;
    }
    true
}

/// `%g` drops trailing zeros of the fraction and a trailing decimal point.
fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn g(x: f64) -> String {
        let mut s = String::new();
        format_double(x, &mut s);
        s
    }

    #[test]
    fn g15_matches_c_printf() {
        assert_eq!(g(1.0 / 3.0), "0.333333333333333");
        assert_eq!(g(12345678901234567.0), "1.23456789012346e+16");
        assert_eq!(g(2.5), "2.5");
        assert_eq!(g(1024.0), "1024");
        assert_eq!(g(-0.125), "-0.125");
        assert_eq!(g(-0.00032), "-0.00032");
        assert_eq!(g(0.0001), "0.0001");
        assert_eq!(g(0.00001), "1e-05");
        assert_eq!(g(1e15), "1e+15");
        assert_eq!(g(999999999999999.0), "999999999999999");
        assert_eq!(g(8.507059173023462e37), "8.50705917302346e+37");
        assert_eq!(g(f64::NAN), "NaN");
        assert_eq!(g(f64::INFINITY), "Infinity");
        assert_eq!(g(f64::NEG_INFINITY), "-Infinity");
        assert_eq!(g(0.0), "0");
        assert_eq!(g(-0.0), "-0");
        assert_eq!(g(std::f64::consts::PI), "3.14159265358979");
        assert_eq!(g(1e300), "1e+300");
        assert_eq!(g(5e-324), "4.94065645841247e-324");
    }

    #[test]
    fn f_matches_c_printf() {
        assert_eq!(f6(2.0), "2.000000");
        assert_eq!(f6(-1.5), "-1.500000");
        assert_eq!(f6(f64::NAN), "NaN");
        assert_eq!(f6(1e20), "100000000000000000000.000000");
    }
}
