//! A pack's metrics: numbers read on the server before and after a run (NOPM from
//! `sum(d_next_o_id)`), reported as their change per minute, per second or per run.

use pgsurge_wire::Connection;

use crate::error::WorkloadError;
use crate::manifest::{Metric, MetricPer};
use crate::pack::Pack;

/// Every metric's value at one moment, in manifest order.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot(pub Vec<f64>);

/// Reads every metric of `pack` on `conn`.
pub fn snapshot(pack: &Pack, conn: &mut Connection) -> Result<Snapshot, WorkloadError> {
    let mut v = Vec::new();
    for m in &pack.manifest.metrics {
        if m.of.is_some() {
            // Derived from another metric's change: nothing to read.
            v.push(0.0);
            continue;
        }
        let fail = |message: String| WorkloadError::Sql {
            file: format!("metric \"{}\"", m.name),
            message,
        };
        let results = conn
            .simple_query(&m.query)
            .map_err(|e| fail(e.to_string().trim_end().to_string()))?;
        let text = results
            .last()
            .and_then(|r| r.get(0, 0))
            .ok_or_else(|| fail("the query returned no value".into()))?;
        let x: f64 = text
            .trim()
            .parse()
            .map_err(|_| fail(format!("the query returned \"{text}\", not a number")))?;
        v.push(x);
    }
    Ok(Snapshot(v))
}

/// One metric of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricValue {
    /// Its name.
    pub name: String,
    /// What it counts.
    pub description: String,
    /// Its value (per minute, per second or per run).
    pub value: f64,
    /// The unit the value is in (`per minute`, `per second`, `in the run`).
    pub unit: &'static str,
}

/// The unit of a derived metric: a percentage of its ceiling.
pub const PERCENT: &str = "%";

/// What a run was, as far as its pack's metrics care.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunShape {
    /// The run's length in seconds.
    pub duration_s: f64,
    /// The database's scale (the ceiling of a derived metric is per unit of it).
    pub scale: i64,
    /// Whether the clients paused for the keying and think times.
    pub think_times: bool,
}

impl Metric {
    /// Whether the metric means something in a run of this shape (one that needs the
    /// keying and think times is left out of a run without them).
    fn applies(&self, run: &RunShape) -> bool {
        !self.with_think_times || run.think_times
    }
}

/// The metrics of a run between two snapshots, those that apply to it (a metric that
/// needs the keying and think times, or is derived from one that does, is left out of
/// a run without them), in manifest order.
pub fn metric_values(
    pack: &Pack,
    before: &Snapshot,
    after: &Snapshot,
    run: &RunShape,
) -> Vec<MetricValue> {
    let RunShape {
        duration_s, scale, ..
    } = *run;
    let metrics = &pack.manifest.metrics;
    let measured: Vec<(f64, &'static str)> = metrics
        .iter()
        .zip(before.0.iter().zip(&after.0))
        .map(|(m, (b, a))| {
            let delta = a - b;
            match m.per {
                MetricPer::Run => (delta, "in the run"),
                MetricPer::Second if duration_s > 0.0 => (delta / duration_s, "per second"),
                MetricPer::Minute if duration_s > 0.0 => (delta * 60.0 / duration_s, "per minute"),
                MetricPer::Second => (0.0, "per second"),
                MetricPer::Minute => (0.0, "per minute"),
            }
        })
        .collect();
    let base_applies = |m: &Metric| match &m.of {
        Some(of) => metrics
            .iter()
            .find(|b| &b.name == of)
            .is_none_or(|b| b.applies(run)),
        None => true,
    };
    metrics
        .iter()
        .zip(&measured)
        .filter(|(m, _)| m.applies(run) && base_applies(m))
        .map(|(m, &(value, unit))| {
            let (value, unit) = match (&m.of, m.ceiling_per_unit) {
                (Some(of), Some(per_unit)) => {
                    let base = metrics
                        .iter()
                        .zip(&measured)
                        .find(|(b, _)| &b.name == of)
                        .map_or(0.0, |(_, &(v, _))| v);
                    let ceiling = per_unit * scale as f64;
                    let pct = if ceiling > 0.0 {
                        base / ceiling * 100.0
                    } else {
                        0.0
                    };
                    (pct, PERCENT)
                }
                _ => (value, unit),
            };
            MetricValue {
                name: m.name.clone(),
                description: m.description.clone(),
                value,
                unit,
            }
        })
        .collect()
}

/// Each script's 90th percentile latency against its `p90_limit_s`, from the run's
/// per-script summaries (`result_scripts`: each script's description and latency),
/// for the scripts of `pack` that have a limit and ran.
pub fn latency_limits(
    pack: &Pack,
    result_scripts: &[(&str, &pgsurge_results::LatencySummary)],
) -> Vec<MetricValue> {
    pack.manifest
        .scripts
        .iter()
        .filter_map(|s| {
            let limit_s = s.p90_limit_s?;
            let desc = pack.script_desc(&s.file);
            let (_, latency) = result_scripts.iter().find(|(d, _)| *d == desc)?;
            let p90_ms = latency.percentile(90.0)?;
            let name = s.name.clone().unwrap_or_else(|| s.file.clone());
            let verdict = if p90_ms <= limit_s * 1000.0 {
                "within"
            } else {
                "ABOVE the limit"
            };
            Some(MetricValue {
                name: format!("{name} 90th percentile"),
                description: format!("latency; the limit is {} s: {verdict}", limit_s),
                value: p90_ms,
                unit: "ms",
            })
        })
        .collect()
}

/// The report's lines for the metrics: `NOPM = 1234.5 (per minute; New-Order …)`.
pub fn render(values: &[MetricValue]) -> String {
    let mut s = String::new();
    for v in values {
        let number = if v.value.fract() == 0.0 && v.value.abs() < 1e15 {
            format!("{}", v.value as i64)
        } else {
            format!("{:.1}", v.value)
        };
        if v.unit == PERCENT {
            s.push_str(&format!("{} = {number} %", v.name));
            if !v.description.is_empty() {
                s.push_str(&format!(" ({})", v.description));
            }
            s.push('\n');
        } else if v.description.is_empty() {
            s.push_str(&format!("{} = {number} ({})\n", v.name, v.unit));
        } else {
            s.push_str(&format!(
                "{} = {number} ({}; {})\n",
                v.name, v.unit, v.description
            ));
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn efficiency_is_tpmc_over_its_ceiling_per_warehouse() {
        let p = Pack::resolve("tpcc").unwrap();
        let names: Vec<&str> = p.manifest.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["NOPM", "tpmC", "New-Order rollbacks", "efficiency"]);
        // 257.2 New-Orders in 120 s: 128.6 per minute, on 20 warehouses of 12.86.
        let before = Snapshot(vec![1000.0, 1000.0, 5.0, 0.0]);
        let after = Snapshot(vec![1257.2, 1257.2, 7.0, 0.0]);
        let shape = RunShape {
            duration_s: 120.0,
            scale: 20,
            think_times: true,
        };
        let v = metric_values(&p, &before, &after, &shape);
        assert!((v[1].value - 128.6).abs() < 1e-9, "{v:?}");
        assert!((v[3].value - 50.0).abs() < 1e-9, "{v:?}");
        assert_eq!(v[3].unit, PERCENT);
        let text = render(&v);
        let line = text
            .lines()
            .find(|l| l.starts_with("efficiency = "))
            .unwrap();
        assert!(
            line.starts_with("efficiency = 50")
                && line.ends_with(
                    " % (tpmC over the 12.86 × warehouses a TPC-C run at full think times can reach)"
                ),
            "{text}"
        );
        assert!(text.contains("tpmC = 128.6 (per minute; "), "{text}");
    }

    #[test]
    fn tpmc_and_efficiency_are_left_out_without_think_times() {
        let p = Pack::resolve("tpcc").unwrap();
        let before = Snapshot(vec![1000.0, 1000.0, 5.0, 0.0]);
        let after = Snapshot(vec![61000.0, 61000.0, 7.0, 0.0]);
        let shape = RunShape {
            duration_s: 60.0,
            scale: 1,
            think_times: false,
        };
        let v = metric_values(&p, &before, &after, &shape);
        let names: Vec<&str> = v.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["NOPM", "New-Order rollbacks"]);
        assert_eq!(v[0].value, 60000.0);
        let text = render(&v);
        assert!(!text.contains("tpmC") && !text.contains('%'), "{text}");
    }
}
