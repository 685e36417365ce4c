//! What a failure cost a test, on its page: the outage (the stretch without an
//! acknowledged commit at the first lost connection, or the longest; the summary says
//! which) marked on every time chart, the standbys' lag charted in
//! bytes and in time, and the failure-cost figures of its result in the summary table
//! (outage, recovery, failed transactions by class, acknowledged commits lost, the
//! faults as applied).

use std::collections::BTreeMap;

use pgsurge_results::failure::{FailureCost, OutageAnchor, OutageWindow};
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
    let mut rows = cost
        .outage
        .as_ref()
        .map(|o| outage_rows(o, t0))
        .unwrap_or_default();
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

/// The summary rows of an outage: its length and place, which stretch it is (the one
/// at the first lost connection, through the failover's moment by a server's log when
/// it was found so, or the longest), and the recovery after it.
fn outage_rows(o: &OutageWindow, t0: f64) -> Vec<(String, String)> {
    let at = |us: i64| num(us as f64 / 1e6 - t0, 3);
    let mut rows = vec![(
        "outage (no commit)".to_string(),
        format!(
            "{} s, from {} s to {} s",
            num(o.seconds, 3),
            at(o.last_commit_before_unix_us),
            at(o.first_commit_after_unix_us)
        ),
    )];
    let which = match (o.anchor, o.connection_lost_unix_us) {
        (Some(OutageAnchor::FirstConnectionLost), Some(lost)) => Some(format!(
            "the stretch at the first lost connection ({} s)",
            at(lost)
        )),
        (Some(OutageAnchor::FirstConnectionLost), None) => {
            Some("the stretch at the first lost connection".to_string())
        }
        (Some(OutageAnchor::FirstFault), _) => {
            Some("the longest stretch from the first fault on (no connection was lost)".to_string())
        }
        (Some(OutageAnchor::Longest), _) => Some("the longest stretch of the run".to_string()),
        (None, _) => None,
    };
    let which = match (which, o.failover_unix_us) {
        (Some(w), Some(moment)) => Some(format!(
            "{w}, through the failover at {} s by the server's log",
            at(moment)
        )),
        (which, _) => which,
    };
    rows.extend(which.map(|w| ("outage taken as".to_string(), w)));
    if let Some(tps) = o.steady_tps {
        let back = o.recovery_s.map_or("not within the run".to_string(), |r| {
            format!("{} s", num(r, 3))
        });
        rows.push((
            "back to 90 % of the tps before it".to_string(),
            format!("{back} (tps before it {})", num(tps, 1)),
        ));
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn window(anchor: Option<OutageAnchor>, lost: Option<i64>) -> OutageWindow {
        OutageWindow {
            last_commit_before_unix_us: 103_000_000,
            first_commit_after_unix_us: 103_300_000,
            seconds: 0.3,
            steady_tps: Some(100.0),
            recovery_s: Some(0.3),
            anchor,
            connection_lost_unix_us: lost,
            failover_unix_us: None,
        }
    }

    fn taken_as(o: &OutageWindow) -> Option<String> {
        outage_rows(o, 100.0)
            .into_iter()
            .find(|(k, _)| k == "outage taken as")
            .map(|(_, v)| v)
    }

    #[test]
    fn the_outage_rows_say_which_stretch_it_is() {
        let lost = window(Some(OutageAnchor::FirstConnectionLost), Some(103_004_000));
        let rows = outage_rows(&lost, 100.0);
        assert_eq!(rows[0].1, "0.300 s, from 3.000 s to 3.300 s", "{rows:?}");
        assert_eq!(
            taken_as(&lost).as_deref(),
            Some("the stretch at the first lost connection (3.004 s)")
        );
        let fault = window(Some(OutageAnchor::FirstFault), None);
        assert!(taken_as(&fault)
            .unwrap()
            .starts_with("the longest stretch from the first fault on"));
        let longest = window(Some(OutageAnchor::Longest), None);
        assert_eq!(
            taken_as(&longest).as_deref(),
            Some("the longest stretch of the run")
        );
        let through = OutageWindow {
            failover_unix_us: Some(103_152_000),
            ..lost
        };
        assert_eq!(
            taken_as(&through).as_deref(),
            Some(
                "the stretch at the first lost connection (3.004 s), through the failover \
                 at 3.152 s by the server's log"
            )
        );
        // A result stored before outages said which stretch they were.
        assert_eq!(taken_as(&window(None, None)), None);
    }
}
