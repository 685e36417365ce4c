//! What a failure cost a test, on its page: the outage (the longest stretch without an
//! acknowledged commit) marked on every time chart, the standbys' lag charted in
//! bytes and in time, and the failure-cost figures of its result in the summary table
//! (outage, recovery, failed transactions by class, acknowledged commits lost, the
//! faults as applied).

use std::collections::BTreeMap;

use pgsurge_results::failure::FailureCost;
use pgsurge_store::LoadedRun;

use crate::charts::ChartMaker;
use crate::charts::Series;
use crate::html::num;

/// The run's failure cost as stored in its result document.
fn stored(run: &LoadedRun) -> Option<FailureCost> {
    FailureCost::of_result(run.run.record.result_json.as_ref()?)
}

/// The outage as an x range of the test's time charts (seconds since the measured
/// start `t0`, an epoch second), with its legend label.
pub(crate) fn outage_range(run: &LoadedRun, t0: f64) -> Option<(f64, f64, String)> {
    let o = stored(run)?.outage?;
    let at = |us: i64| us as f64 / 1e6 - t0;
    Some((
        at(o.last_commit_before_unix_us),
        at(o.first_commit_after_unix_us),
        format!("outage: no commit for {} s", num(o.seconds, 3)),
    ))
}

/// The standbys' lag as stored (sampled on the primary every second of the run), drawn
/// by `mk` in a row of two charts, one line per standby: WAL not replayed in bytes, and
/// `replay_lag` in seconds (a second without a figure breaks the line). Nothing when no
/// lag was stored.
pub(crate) fn lag_section(run: &LoadedRun, mk: ChartMaker<'_>, n: &mut usize) -> String {
    let lag = stored(run).map(|c| c.lag).unwrap_or_default();
    if lag.is_empty() {
        return String::new();
    }
    let mut bytes: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    let mut seconds: BTreeMap<&str, Vec<(f64, f64)>> = BTreeMap::new();
    for s in &lag {
        let replica = s.replica.as_str();
        bytes
            .entry(replica)
            .or_default()
            .push((s.t_s, s.bytes as f64));
        let time = s.seconds.unwrap_or(f64::NAN);
        seconds.entry(replica).or_default().push((s.t_s, time));
    }
    let series = |by: BTreeMap<&str, Vec<(f64, f64)>>| -> Vec<Series> {
        by.into_iter().map(|(r, p)| Series::line(r, p)).collect()
    };
    let note = "read on the primary every second of the run (pg_stat_replication)";
    let charts = [
        mk(
            "Replica lag in bytes",
            "WAL not replayed (bytes)",
            series(bytes),
            format!("{note}: pg_current_wal_lsn() less replay_lsn"),
        ),
        mk(
            "Replica lag in time",
            "replay_lag (s)",
            series(seconds),
            format!("{note}: replay_lag, absent while nothing was replayed recently"),
        ),
    ];
    let mut body = String::from("<div class=\"charts\">");
    for chart in &charts {
        body.push_str(&crate::charts::chart_div(chart, n));
    }
    body.push_str("</div>");
    body
}

/// The summary rows of the failure cost; none for a run without one.
pub(crate) fn summary_rows(run: &LoadedRun, t0: f64) -> Vec<(String, String)> {
    let Some(cost) = stored(run) else {
        return Vec::new();
    };
    let mut rows = Vec::new();
    if let Some(o) = &cost.outage {
        let at = |us: i64| num(us as f64 / 1e6 - t0, 3);
        rows.push((
            "outage (no commit)".to_string(),
            format!(
                "{} s, from {} s to {} s",
                num(o.seconds, 3),
                at(o.last_commit_before_unix_us),
                at(o.first_commit_after_unix_us)
            ),
        ));
        if let Some(tps) = o.steady_tps {
            let back = o.recovery_s.map_or("not within the run".to_string(), |r| {
                format!("{} s", num(r, 3))
            });
            rows.push((
                "back to 90 % of the tps before it".to_string(),
                format!("{back} (tps before it {})", num(tps, 1)),
            ));
        }
    }
    let totals = run
        .run
        .record
        .result_json
        .as_ref()
        .and_then(|d| d.get("totals"));
    let classes: Vec<String> = ["connection_lost", "read_only", "cancelled"]
        .iter()
        .filter_map(|class| {
            let n = totals?.get(format!("{class}_failures"))?.as_u64()?;
            Some(format!("{} {n}", class.replace('_', "-")))
        })
        .collect();
    if !classes.is_empty() {
        rows.push(("failed by class".to_string(), classes.join(", ")));
    }
    let acknowledged = match cost.acknowledged() {
        Some(a) => Some(a.text()),
        None => (cost.acknowledged_error.as_ref()).map(|e| format!("not checked: {e}")),
    };
    rows.extend(acknowledged.map(|a| ("acknowledged commits lost".to_string(), a)));
    if !cost.faults.is_empty() {
        let faults: Vec<String> = cost
            .faults
            .iter()
            .map(|f| {
                let error = f.error.as_ref().map(|e| format!(" (failed: {e})"));
                format!(
                    "{} at {} s{}",
                    f.action,
                    num(f.at_s, 1),
                    error.unwrap_or_default()
                )
            })
            .collect();
        rows.push(("faults".to_string(), faults.join("; ")));
    }
    rows
}
