//! What a comparison could have seen: the smallest change detectable at its number of
//! repeats and measured spread, and how many repeats that spread needs to see a given
//! change.
//!
//! Both use the usual sample-size rule of a two-sided test at 5 % with 80 % power: a
//! true change of `δ` (on the log scale) is found four times in five when
//! `δ ≥ (t₀.₉₇₅ + t₀.₈₀) · SE`, with `SE` the standard error of the difference of the
//! logarithms. The spread is the one measured, taken as the truth: with few repeats it
//! is itself uncertain, so both figures are estimates, not promises.

use crate::interval::t_quantile;

/// Power the detectable change is stated at.
pub const POWER: f64 = 0.8;

/// The most repeats [`repeats_needed`] looks for.
pub const MAX_REPEATS: usize = 10_000;

/// The smallest relative change (0.02 = 2 %) that a comparison with standard error
/// `se_log` (of the difference of logarithms) and `df` degrees of freedom detects with
/// [`POWER`] at 95 % confidence; None when `df` is not positive.
pub fn detectable_change(se_log: f64, df: f64) -> Option<f64> {
    let q = t_quantile(df, 0.975)? + t_quantile(df, POWER)?;
    Some((q * se_log).exp() - 1.0)
}

/// How the repeats of a comparison are arranged.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Design {
    /// Independent repeats on each side, `sd_log` the standard deviation of the
    /// logarithms within a side (pooled).
    Independent {
        /// Pooled standard deviation of the logarithms of one side's repeats.
        sd_log: f64,
    },
    /// Rounds measuring both sides, `sd_log` the standard deviation of the per-round
    /// log ratios.
    Paired {
        /// Standard deviation of `ln(b / a)` over rounds.
        sd_log: f64,
    },
}

/// The smallest number of repeats per side (or of rounds, for [`Design::Paired`]) with
/// which the measured spread detects a change of `change` (0.02 = 2 %) with [`POWER`];
/// None when even [`MAX_REPEATS`] would not (or the inputs make no sense).
pub fn repeats_needed(design: Design, change: f64) -> Option<usize> {
    if change.is_nan() || change <= 0.0 {
        return None;
    }
    let target = (1.0 + change).ln();
    let (sd, paired) = match design {
        Design::Independent { sd_log } => (sd_log, false),
        Design::Paired { sd_log } => (sd_log, true),
    };
    if !sd.is_finite() || sd < 0.0 {
        return None;
    }
    if sd == 0.0 {
        return Some(2);
    }
    (2..=MAX_REPEATS).find(|&n| {
        let nf = n as f64;
        let (se, df) = if paired {
            (sd / nf.sqrt(), nf - 1.0)
        } else {
            (sd * (2.0 / nf).sqrt(), 2.0 * nf - 2.0)
        };
        match (t_quantile(df, 0.975), t_quantile(df, POWER)) {
            (Some(a), Some(b)) => (a + b) * se <= target,
            _ => false,
        }
    })
}

#[cfg(test)]
mod tests {
    //! Reference values: `tests/data/reference.py`, section `power` (SciPy's t
    //! quantiles).
    use super::*;

    #[test]
    fn detectable_change_matches_the_t_quantiles() {
        let d = detectable_change(0.01, 4.0).unwrap();
        assert!((d - 0.03787369562).abs() < 1e-10, "{d}");
        assert!(detectable_change(0.01, 0.0).is_none());
    }

    #[test]
    fn repeats_needed_grow_with_the_spread() {
        let n = repeats_needed(Design::Independent { sd_log: 0.02 }, 0.02).unwrap();
        assert_eq!(n, 18);
        let paired = repeats_needed(Design::Paired { sd_log: 0.02 }, 0.02).unwrap();
        assert_eq!(paired, 11);
        assert_eq!(
            repeats_needed(Design::Paired { sd_log: 0.0 }, 0.02),
            Some(2)
        );
        assert_eq!(
            repeats_needed(Design::Independent { sd_log: 5.0 }, 0.001),
            None
        );
        assert_eq!(
            repeats_needed(Design::Independent { sd_log: 0.1 }, 0.0),
            None
        );
    }
}
