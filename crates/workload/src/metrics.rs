//! A pack's metrics: numbers read on the server before and after a run (NOPM from
//! `sum(d_next_o_id)`), reported as their change per minute, per second or per run.

use pgsurge_wire::Connection;

use crate::error::WorkloadError;
use crate::manifest::MetricPer;
use crate::pack::Pack;

/// Every metric's value at one moment, in manifest order.
#[derive(Debug, Clone, PartialEq)]
pub struct Snapshot(pub Vec<f64>);

/// Reads every metric of `pack` on `conn`.
pub fn snapshot(pack: &Pack, conn: &mut Connection) -> Result<Snapshot, WorkloadError> {
    let mut v = Vec::new();
    for m in &pack.manifest.metrics {
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

/// The metrics of a run of `duration_s` seconds between two snapshots.
pub fn metric_values(
    pack: &Pack,
    before: &Snapshot,
    after: &Snapshot,
    duration_s: f64,
) -> Vec<MetricValue> {
    pack.manifest
        .metrics
        .iter()
        .zip(before.0.iter().zip(&after.0))
        .map(|(m, (b, a))| {
            let delta = a - b;
            let (value, unit) = match m.per {
                MetricPer::Run => (delta, "in the run"),
                MetricPer::Second if duration_s > 0.0 => (delta / duration_s, "per second"),
                MetricPer::Minute if duration_s > 0.0 => (delta * 60.0 / duration_s, "per minute"),
                MetricPer::Second => (0.0, "per second"),
                MetricPer::Minute => (0.0, "per minute"),
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
        if v.description.is_empty() {
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
