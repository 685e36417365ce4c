//! How the rates of counters that backends publish in batches are drawn: a moving
//! average without the first and last samples when the test is long enough, else each
//! sample as a step over the interval it covers, and the note their charts carry.

use std::collections::{BTreeMap, BTreeSet};

/// Whether a metric is the rate of a counter that backends publish to the cumulative
/// statistics system in batches, about once a second while busy (and when they exit),
/// rather than as it happens: `pg_stat_database` (`pg.db.*`), `pg_stat_io`
/// (`pg.io.*`) and `pg_stat_wal` (`pg.wal.*`, but not the WAL position, which is read
/// as it is).
pub(crate) fn is_flushed_counter_rate(name: &str) -> bool {
    name.ends_with("_per_s")
        && (name.starts_with("pg.db.") || name.starts_with("pg.io.") || name.starts_with("pg.wal."))
        && !name.starts_with("pg.wal.lsn_bytes")
}

/// Width of the moving average drawn for counters published in batches.
pub(crate) const FLUSH_SMOOTHING_S: f64 = 3.0;

/// What the charts of batch-published counters say about how they are drawn.
pub(crate) const FLUSH_NOTE: &str = "PostgreSQL counters that backends publish about once a \
     second: drawn as a 3-second moving average, the first and last samples (a partial \
     batch, and what the backends publish as the test ends) left out; the tables give the \
     exact totals";

/// A rate sampled from counters published in batches, as it can honestly be drawn: a
/// centred moving average over [`FLUSH_SMOOTHING_S`], without the first and last
/// samples. A gap (NaN) stays a gap.
pub(crate) fn smooth_flushed(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let finite: Vec<usize> = (0..points.len())
        .filter(|&i| points[i].0.is_finite() && points[i].1.is_finite())
        .collect();
    let (Some(&first), Some(&last)) = (finite.first(), finite.last()) else {
        return Vec::new();
    };
    let half = FLUSH_SMOOTHING_S / 2.0;
    points
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != first && *i != last)
        .map(|(_, &(x, v))| {
            if !x.is_finite() || !v.is_finite() {
                return (x, v);
            }
            let near: Vec<f64> = finite
                .iter()
                .filter(|&&j| j != first && j != last && (points[j].0 - x).abs() <= half + 1e-9)
                .map(|&j| points[j].1)
                .collect();
            (x, near.iter().sum::<f64>() / near.len() as f64)
        })
        .collect()
}

/// What the charts of batch-published counters say when the test was too short for
/// the moving average.
pub(crate) const FLUSH_NOTE_SHORT: &str = "PostgreSQL counters that backends publish about \
     once a second: this test is too short for a 3-second moving average, so each sample \
     is drawn over the interval it covers, and a single second swings between zero and \
     twice the rate; the tables give the exact totals";

/// The least number of points a moving average must leave to be drawn instead of the
/// samples: fewer would draw a short test as one flat stretch of its middle.
pub(super) const MIN_SMOOTHED_POINTS: usize = 4;

/// A sampled rate drawn as steps: each sample's value over the interval it covers,
/// from the previous sample (the first one's interval as long as the usual spacing),
/// so the line spans the whole sampled time. A gap (NaN) stays a gap.
pub(crate) fn as_steps(points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut steps: Vec<f64> = points
        .windows(2)
        .map(|w| w[1].0 - w[0].0)
        .filter(|d| d.is_finite() && *d > 0.0)
        .collect();
    steps.sort_by(f64::total_cmp);
    let usual = steps.get(steps.len() / 2).copied().unwrap_or(1.0);
    let mut out = Vec::with_capacity(points.len() * 2);
    let mut prev: Option<f64> = None;
    for &(x, v) in points {
        if !x.is_finite() || !v.is_finite() {
            out.push((f64::NAN, f64::NAN));
            prev = None;
            continue;
        }
        let from = prev.unwrap_or(x - usual).max(0.0);
        out.push((from, v));
        out.push((x, v));
        prev = Some(x);
    }
    out
}

/// The points as drawn, and the batch-published counters drawn as sampled: those
/// counters' rates smoothed ([`smooth_flushed`]) when the test is long enough to
/// leave [`MIN_SMOOTHED_POINTS`], else as steps ([`as_steps`]); the other metrics as
/// sampled.
pub(crate) fn drawn_points<'a>(points: &BTreeMap<&'a str, Vec<(f64, f64)>>) -> Drawn<'a> {
    let mut as_sampled = BTreeSet::new();
    let drawn = points
        .iter()
        .map(|(name, pts)| {
            let drawn = if is_flushed_counter_rate(name) {
                let smoothed = smooth_flushed(pts);
                if smoothed.iter().filter(|p| p.1.is_finite()).count() >= MIN_SMOOTHED_POINTS {
                    smoothed
                } else {
                    as_sampled.insert(*name);
                    as_steps(pts)
                }
            } else {
                pts.clone()
            };
            (*name, drawn)
        })
        .collect();
    Drawn {
        points: drawn,
        as_sampled,
    }
}

/// The samples as the charts draw them.
pub(crate) struct Drawn<'a> {
    /// The points of each metric.
    pub points: BTreeMap<&'a str, Vec<(f64, f64)>>,
    /// The batch-published counters drawn as sampled (the test too short to smooth).
    pub as_sampled: BTreeSet<&'a str>,
}

impl Drawn<'_> {
    /// The note of the batch-published counter `name`, as it was drawn.
    pub(super) fn flush_note(&self, name: &str) -> &'static str {
        flush_note(self.as_sampled.contains(name))
    }
}

/// The note of a chart of batch-published counters, as they were drawn.
pub(super) fn flush_note(as_sampled: bool) -> &'static str {
    if as_sampled {
        FLUSH_NOTE_SHORT
    } else {
        FLUSH_NOTE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn batch_published_counters_are_drawn_as_a_moving_average_without_their_ends() {
        assert!(is_flushed_counter_rate("pg.db.xact_commit_per_s"));
        assert!(is_flushed_counter_rate("pg.wal.bytes_per_s"));
        assert!(!is_flushed_counter_rate("pg.wal.lsn_bytes_per_s"));
        assert!(!is_flushed_counter_rate("pg.db.size_bytes"));
        assert!(!is_flushed_counter_rate("os.cpu.user_pct"));
        // A steady 100/s published in batches: nothing in the first second, two
        // seconds' worth every other second, and a burst when the backends exit.
        let sampled = [
            (1.0, 0.0),
            (2.0, 200.0),
            (3.0, 0.0),
            (4.0, 200.0),
            (5.0, 0.0),
            (6.0, 200.0),
            (7.0, 0.0),
            (8.0, 300.0),
        ];
        let drawn = smooth_flushed(&sampled);
        let xs: Vec<f64> = drawn.iter().map(|p| p.0).collect();
        assert_eq!(xs, [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]);
        // Inside, each point is the mean of its neighbours within 1.5 s (the ends
        // left out): at most a third away from the steady rate, where the samples
        // swing from 0 to twice of it.
        for (x, v) in &drawn[1..drawn.len() - 1] {
            assert!((v - 100.0).abs() <= 100.0 / 3.0 + 1e-9, "{x}: {v}");
        }
        // A gap stays a gap.
        let gap = smooth_flushed(&[
            (1.0, 1.0),
            (2.0, 5.0),
            (f64::NAN, f64::NAN),
            (4.0, 5.0),
            (5.0, 9.0),
        ]);
        assert_eq!(gap.len(), 3);
        assert!(gap[1].0.is_nan());
        assert_eq!((gap[0].1, gap[2].1), (5.0, 5.0));
        assert!(smooth_flushed(&[]).is_empty());
    }

    #[test]
    fn a_short_test_s_server_counters_are_drawn_over_the_whole_test() {
        // Four samples of a 4-second test: a 3-second average would leave its middle
        // as one flat stretch; drawn as steps, each sample covers its own second.
        let short = vec![(1.0, 0.0), (2.0, 1800.0), (3.0, 200.0), (4.0, 1600.0)];
        let points: BTreeMap<&str, Vec<(f64, f64)>> = [
            ("pg.db.xact_commit_per_s", short),
            ("os.cpu.user_pct", vec![(1.0, 5.0)]),
        ]
        .into_iter()
        .collect();
        let drawn = drawn_points(&points);
        assert!(drawn.as_sampled.contains("pg.db.xact_commit_per_s"));
        let commits = &drawn.points["pg.db.xact_commit_per_s"];
        assert_eq!(commits.first(), Some(&(0.0, 0.0)));
        assert_eq!(commits.last(), Some(&(4.0, 1600.0)));
        assert_eq!(commits.len(), 8, "{commits:?}");
        assert_eq!(
            drawn.flush_note("pg.db.xact_commit_per_s"),
            FLUSH_NOTE_SHORT
        );
        assert_eq!(drawn.points["os.cpu.user_pct"], [(1.0, 5.0)]);
        // A long test keeps the moving average.
        let long: Vec<(f64, f64)> = (1..=20).map(|i| (f64::from(i), 100.0)).collect();
        let points: BTreeMap<&str, Vec<(f64, f64)>> =
            [("pg.db.xact_commit_per_s", long)].into_iter().collect();
        let drawn = drawn_points(&points);
        assert!(drawn.as_sampled.is_empty());
        assert_eq!(drawn.points["pg.db.xact_commit_per_s"].len(), 18);
        assert_eq!(drawn.flush_note("pg.db.xact_commit_per_s"), FLUSH_NOTE);
    }
}
