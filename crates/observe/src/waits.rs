//! Active sessions by wait event, beside every test: `pg_stat_activity` is read on a
//! monitoring connection every [`SAMPLE_EVERY`] (the benchmark database's active
//! sessions, the sampler's own excluded), counted per `wait_event_type:wait_event`
//! (`CPU` for an active session without a wait event), and each second becomes one
//! sample per event: the mean number of sessions in it over that second (see
//! [`pgsurge_store::activity`] for the names). Started and stopped with the other
//! samplers ([`crate::sampler::Sampler`]), on its own thread and connection so the
//! sub-second cadence does not depend on `[sampling] interval`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use pgsurge_store::activity::wait_metric;
use pgsurge_store::{now_epoch, MetricSample};

use pgsurge_wire::ConnConfig;

use crate::latest::Latest;
use crate::sql_session::{literal, Pg};

/// How often `pg_stat_activity` is read.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(100);

/// How often a lost monitoring connection is opened again.
const RECONNECT_EVERY: Duration = Duration::from_secs(1);

/// The query of one sample: (wait_event_type, wait_event, backends) of the active
/// backends of database `db`, the sampler's own connection excluded. Its comment keeps it out of the
/// top statements when the monitoring connection is on the benchmark database.
pub fn activity_sql(db: &str) -> String {
    format!(
        "SELECT /* pgsurge:waits */ wait_event_type, wait_event, count(*) FROM pg_stat_activity \
         WHERE datname = {} AND state = 'active' AND pid <> pg_backend_pid() GROUP BY 1, 2",
        literal(db)
    )
}

/// Sessions per wait metric from the rows of [`activity_sql`].
pub fn counts(rows: &[Vec<Option<String>>]) -> Vec<(String, f64)> {
    let mut out: BTreeMap<String, f64> = BTreeMap::new();
    for r in rows {
        let get = |i: usize| r.get(i).cloned().flatten();
        let Some(n) = get(2).and_then(|n| n.parse::<f64>().ok()) else {
            continue;
        };
        *out.entry(wait_metric(get(0).as_deref(), get(1).as_deref()))
            .or_default() += n;
    }
    out.into_iter().collect()
}

/// Per-second means of the samples. Seconds count from the first sample; a second's
/// value is stamped at its end (the last, partial second at its last sample), like the
/// other samplers' rates.
#[derive(Debug, Default)]
pub struct PerSecond {
    start: Option<f64>,
    windows: Vec<Window>,
    seen: BTreeSet<String>,
}

#[derive(Debug)]
struct Window {
    index: u64,
    sums: BTreeMap<String, f64>,
    samples: u32,
    last_ts: f64,
}

impl PerSecond {
    /// Adds one sample taken at `ts` (epoch seconds): sessions per metric; a metric
    /// absent from `counts` had none.
    pub fn push(&mut self, ts: f64, counts: &[(String, f64)]) {
        let start = *self.start.get_or_insert(ts);
        let index = ((ts - start).max(0.0)).floor() as u64;
        if self.windows.last().is_none_or(|w| w.index != index) {
            self.windows.push(Window {
                index,
                sums: BTreeMap::new(),
                samples: 0,
                last_ts: ts,
            });
        }
        let Some(w) = self.windows.last_mut() else {
            return;
        };
        w.samples += 1;
        w.last_ts = ts;
        for (metric, n) in counts {
            *w.sums.entry(metric.clone()).or_default() += n;
            self.seen.insert(metric.clone());
        }
    }

    /// The means of the last second that has ended (the one before the second under
    /// way), per event seen so far, once: `None` until a second ends, and again until
    /// the next one does.
    fn ended_second(&mut self, told: &mut usize) -> Option<Vec<MetricSample>> {
        let n = self.windows.len();
        if n < 2 || *told >= n - 1 {
            return None;
        }
        *told = n - 1;
        let (start, w) = (self.start?, &self.windows[n - 2]);
        let ts = start + (w.index + 1) as f64;
        Some(
            self.seen
                .iter()
                .map(|metric| MetricSample {
                    ts,
                    metric: metric.clone(),
                    value: w.sums.get(metric).copied().unwrap_or(0.0) / f64::from(w.samples),
                })
                .collect(),
        )
    }

    /// One sample per second and per event seen during the test (0 for a second
    /// without it), in time order.
    pub fn finish(self) -> Vec<MetricSample> {
        let Some(start) = self.start else {
            return Vec::new();
        };
        let last = self.windows.len().saturating_sub(1);
        let mut out = Vec::with_capacity(self.windows.len() * self.seen.len());
        for (k, w) in self.windows.iter().enumerate() {
            let ts = if k == last {
                w.last_ts
            } else {
                start + (w.index + 1) as f64
            };
            for metric in &self.seen {
                out.push(MetricSample {
                    ts,
                    metric: metric.clone(),
                    value: w.sums.get(metric).copied().unwrap_or(0.0) / f64::from(w.samples),
                });
            }
        }
        out
    }
}

/// Samples until `stop` is raised, putting each second's means into `latest` as the
/// second ends; returns the per-second samples and the problems met (each once).
pub fn sample_loop(
    config: &ConnConfig,
    db: &str,
    stop: &AtomicBool,
    latest: &Latest,
) -> (Vec<MetricSample>, Vec<String>) {
    let sql = activity_sql(db);
    let mut errors: Vec<String> = Vec::new();
    let mut note = |e: String| {
        if !errors.contains(&e) {
            errors.push(e);
        }
    };
    let mut seconds = PerSecond::default();
    let mut told = 0;
    let mut conn: Option<Pg> = None;
    let mut last_connect: Option<Instant> = None;
    let mut next = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        if conn.is_none() && last_connect.is_none_or(|t| t.elapsed() >= RECONNECT_EVERY) {
            last_connect = Some(Instant::now());
            match Pg::connect(config) {
                Ok(c) => conn = Some(c),
                Err(e) => note(e.to_string()),
            }
        }
        if let Some(c) = conn.as_mut() {
            let ts = now_epoch();
            match c.rows(&sql) {
                Ok(rows) => {
                    seconds.push(ts, &counts(&rows));
                    if let Some(ended) = seconds.ended_second(&mut told) {
                        latest.put(&ended);
                    }
                }
                Err(e) => {
                    note(e.to_string());
                    conn = None;
                }
            }
        }
        next += SAMPLE_EVERY;
        let now = Instant::now();
        while next < now {
            // A slow query: skip the ticks it overran rather than sampling in a burst.
            next += SAMPLE_EVERY;
        }
        while !stop.load(Ordering::SeqCst) {
            let now = Instant::now();
            if now >= next {
                break;
            }
            std::thread::sleep((next - now).min(Duration::from_millis(25)));
        }
    }
    (seconds.finish(), errors)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(t: Option<&str>, e: Option<&str>, n: &str) -> Vec<Option<String>> {
        vec![t.map(String::from), e.map(String::from), Some(n.into())]
    }

    #[test]
    fn rows_become_counts_per_metric() {
        let c = counts(&[
            row(Some("Timeout"), Some("PgSleep"), "3"),
            row(None, None, "1"),
            row(Some("Lock"), Some("transactionid"), "x"),
        ]);
        assert_eq!(
            c,
            vec![
                ("pg.wait.CPU".to_string(), 1.0),
                ("pg.wait.Timeout.PgSleep".to_string(), 3.0)
            ]
        );
    }

    #[test]
    fn seconds_average_their_samples_with_zeros_for_absent_events() {
        let mut s = PerSecond::default();
        let sleep = |n: f64| vec![("pg.wait.Timeout.PgSleep".to_string(), n)];
        // Second 0: 4, 4, 2 sessions sleeping (mean 10/3); nothing else.
        s.push(100.0, &sleep(4.0));
        s.push(100.4, &sleep(4.0));
        s.push(100.8, &sleep(2.0));
        // Second 1: one sample without sessions, one with a lock wait.
        s.push(101.2, &[]);
        s.push(101.6, &[("pg.wait.Lock.tuple".to_string(), 2.0)]);
        // Second 3 (second 2 missing: the query failed), partial.
        s.push(103.1, &sleep(1.0));
        let out = s.finish();
        let get = |ts: f64, m: &str| {
            out.iter()
                .find(|x| x.ts == ts && x.metric == m)
                .map(|x| x.value)
        };
        assert_eq!(out.len(), 3 * 2);
        assert!((get(101.0, "pg.wait.Timeout.PgSleep").unwrap() - 10.0 / 3.0).abs() < 1e-12);
        assert_eq!(get(101.0, "pg.wait.Lock.tuple"), Some(0.0));
        assert_eq!(get(102.0, "pg.wait.Timeout.PgSleep"), Some(0.0));
        assert_eq!(get(102.0, "pg.wait.Lock.tuple"), Some(1.0));
        assert_eq!(get(103.1, "pg.wait.Timeout.PgSleep"), Some(1.0));
        assert!(out.windows(2).all(|w| w[0].ts <= w[1].ts));
        assert!(PerSecond::default().finish().is_empty());
    }

    /// A second's means are told once, when the next second begins.
    #[test]
    fn a_second_is_told_once_it_has_ended() {
        let mut s = PerSecond::default();
        let mut told = 0;
        let sleep = |n: f64| vec![("pg.wait.Timeout.PgSleep".to_string(), n)];
        s.push(100.0, &sleep(4.0));
        s.push(100.5, &sleep(2.0));
        assert!(s.ended_second(&mut told).is_none());
        s.push(101.1, &sleep(1.0));
        let ended = s.ended_second(&mut told).unwrap();
        assert_eq!(ended.len(), 1);
        assert_eq!((ended[0].ts, ended[0].value), (101.0, 3.0));
        assert!(s.ended_second(&mut told).is_none());
    }
}
