//! PostgreSQL-`printf`-compatible number formatting.
//!
//! pgbench prints through PostgreSQL's own `snprintf`, which spells non-finite
//! values `NaN`, `Infinity` and `-Infinity` (never glibc's `nan`/`-nan`/`inf`) and
//! pads them to the field width like any other conversion. Everything here
//! implements [`std::fmt::Display`] so that formatting writes straight into the
//! destination without allocating (the `-l` writers use it per transaction).

use std::fmt;

/// `%W.Pf` of a double, PostgreSQL style: `Fixed(v, prec)` is `%.{prec}f`,
/// [`Fixed::width`] adds a right-aligned minimum field width.
#[derive(Debug, Clone, Copy)]
pub struct Fixed {
    value: f64,
    precision: usize,
    width: usize,
}

impl Fixed {
    /// `%.{precision}f` of `value`.
    pub fn new(value: f64, precision: usize) -> Self {
        Fixed {
            value,
            precision,
            width: 0,
        }
    }

    /// Same with a minimum field width (right-aligned, space padded), as in `%11.3f`.
    pub fn width(mut self, width: usize) -> Self {
        self.width = width;
        self
    }
}

impl fmt::Display for Fixed {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (w, p, v) = (self.width, self.precision, self.value);
        if v.is_nan() {
            // PostgreSQL prints NaN without a sign and without precision digits.
            write!(f, "{:>w$}", "NaN")
        } else if v.is_infinite() {
            write!(f, "{:>w$}", if v > 0.0 { "Infinity" } else { "-Infinity" })
        } else {
            write!(f, "{v:>w$.p$}")
        }
    }
}

/// `%.3f`.
pub fn f3(v: f64) -> Fixed {
    Fixed::new(v, 3)
}

/// `%.1f`.
pub fn f1(v: f64) -> Fixed {
    Fixed::new(v, 1)
}

/// `%f` (six decimals).
pub fn f6(v: f64) -> Fixed {
    Fixed::new(v, 6)
}

/// `%.0f`.
pub fn f0(v: f64) -> Fixed {
    Fixed::new(v, 0)
}

/// A percentile rank as a label: `50`, `99.9`, `99.99` (shortest round-trip form).
#[derive(Debug, Clone, Copy)]
pub struct PercentileLabel(pub f64);

impl fmt::Display for PercentileLabel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "p{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn non_finite_values_use_postgres_spelling() {
        assert_eq!(f3(f64::NAN).to_string(), "NaN");
        let zero = std::hint::black_box(0.0f64);
        assert_eq!(f3(zero / zero).to_string(), "NaN");
        assert_eq!(f6(1.0 / 0.0).to_string(), "Infinity");
        assert_eq!(f6(-1.0 / 0.0).to_string(), "-Infinity");
        assert_eq!(Fixed::new(f64::NAN, 3).width(11).to_string(), "        NaN");
    }

    #[test]
    fn fixed_matches_c_printf() {
        assert_eq!(f3(6.2034).to_string(), "6.203");
        assert_eq!(f1(66.666_666).to_string(), "66.7");
        assert_eq!(f6(254.675_107_3).to_string(), "254.675107");
        assert_eq!(Fixed::new(0.004, 3).width(11).to_string(), "      0.004");
        assert_eq!(f0(12062.4).to_string(), "12062");
        // C rounds the exact binary value half to even, as Rust does.
        assert_eq!(f0(2.5).to_string(), "2");
        assert_eq!(f0(3.5).to_string(), "4");
        assert_eq!(f0(0.5).to_string(), "0");
        assert_eq!(f3(1.0005).to_string(), "1.000"); // 1.0005 is below ...05 in binary
        assert_eq!(f3(-0.0).to_string(), "-0.000");
    }

    #[test]
    fn percentile_labels() {
        assert_eq!(PercentileLabel(50.0).to_string(), "p50");
        assert_eq!(PercentileLabel(99.9).to_string(), "p99.9");
    }
}
