//! "Where the time goes": the test's active sessions by wait event (table and chart)
//! and its top statements, and the one colour and line each wait event has on every
//! chart.

use crate::charts::{chart_div, ChartMaker};
use crate::charts::{Dash, Series};
use crate::html::{escape, num, table};
use pgsurge_store::activity::{self, Statements};
use pgsurge_store::LoadedRun;
use std::collections::BTreeMap;
use std::fmt::Write;

/// The palette colour and line of a wait event (`Type:Event`, or `CPU`) of a server of
/// `version_num`, the same on every chart and page, whatever the version calls it
/// (`IO:WalSync` on 17 and later has the colour of `IO:WALSync`): the common events
/// have a colour of their own and a solid line; the others a colour derived from the
/// name and a dashed line, so that one never looks like a common one.
pub(super) fn wait_style(label: &str, version_num: Option<i64>) -> (usize, Dash) {
    const KNOWN: [&str; 8] = [
        "CPU",
        "IO:WALSync",
        "Lock:transactionid",
        "Client:ClientRead",
        "LWLock:WALWrite",
        "IO:DataFileRead",
        "Lock:tuple",
        "LWLock:BufferContent",
    ];
    let label = activity::wait_label_before_17(label, version_num);
    match KNOWN.iter().position(|k| *k == label) {
        Some(i) => (i, Dash::Solid),
        None => {
            // FNV-1a: stable across runs and builds, unlike the standard hasher.
            let h = label.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
                (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
            });
            ((h % KNOWN.len() as u64) as usize, Dash::Dashed)
        }
    }
}

/// Wait events drawn on the page's chart (the rest are in the table).
pub(super) const WAIT_SERIES: usize = 6;

/// "Where the time goes": the test's active sessions by wait event (table and chart,
/// from the `pg.wait.*` samples) and its top statements (from `pg_stat_statements`,
/// stored as facts); each says so when it was not recorded.
pub(super) fn where_time_goes(
    run: &LoadedRun,
    points: &BTreeMap<&str, Vec<(f64, f64)>>,
    mk: ChartMaker<'_>,
    n: &mut usize,
) -> String {
    let mut body = String::from("<h2>Where the time goes</h2><h3>Wait events</h3>");
    let shares = activity::wait_shares(&run.metrics);
    if shares.is_empty() {
        body.push_str(
            "<p class=\"muted\">No wait events were sampled for this test (PostgreSQL \
             sampling off, no active session seen, or recorded before wait sampling).</p>",
        );
    } else {
        body.push_str(
            "<p class=\"muted\">Active sessions of the benchmark database by \
             <code>wait_event_type:wait_event</code>, from <code>pg_stat_activity</code> \
             sampled several times a second; CPU = active without a wait event (running, or \
             waiting for a CPU). Share = part of all active session time.</p>",
        );
        let rows: Vec<Vec<String>> = shares
            .iter()
            .map(|w| {
                vec![
                    escape(&w.label),
                    num(w.mean_sessions, 2),
                    num(w.session_s, 1),
                    format!("{} %", num(w.share_pct, 1)),
                ]
            })
            .collect();
        body.push_str(&table(
            &[
                "wait event",
                "mean active sessions",
                "session-seconds",
                "share of active time",
            ]
            .map(String::from),
            &rows,
        ));
        let series: Vec<Series> = shares
            .iter()
            .take(WAIT_SERIES)
            .filter_map(|w| {
                let mut s = Series::line(&w.label, points.get(w.metric.as_str())?.clone());
                let (colour, dash) = wait_style(&w.label, run.run.record.server_version_num);
                (s.color, s.dash) = (Some(colour), dash);
                Some(s)
            })
            .collect();
        let note = if shares.len() > WAIT_SERIES {
            format!(
                "the {WAIT_SERIES} largest of {} wait events; mean over each second",
                shares.len()
            )
        } else {
            "mean over each second".to_string()
        };
        body.push_str("<div class=\"charts\">");
        body.push_str(&chart_div(
            &mk("Active sessions by wait event", "sessions", series, note),
            n,
        ));
        body.push_str("</div>");
    }
    body.push_str("<h3>Top statements</h3>");
    match activity::statements(&run.facts) {
        Statements::NotRecorded => body.push_str(
            "<p class=\"muted\">Statement statistics were not recorded for this test.</p>",
        ),
        Statements::None(why) => {
            let _ = write!(
                body,
                "<p class=\"muted\">No statement statistics: {}.</p>",
                escape(&why)
            );
        }
        Statements::Top { source, top } => {
            let _ = write!(
                body,
                "<p class=\"muted\">The benchmark database's statements with the most \
                 execution time during the test (deltas of {}).</p>",
                escape(&source)
            );
            let rows: Vec<Vec<String>> = top
                .iter()
                .map(|t| {
                    vec![
                        format!("<code>{}</code>", escape(&t.query)),
                        t.calls.to_string(),
                        num(t.total_ms, 1),
                        num(t.mean_ms, 3),
                        t.rows.to_string(),
                        t.share_pct
                            .map(|p| format!("{} %", num(p, 1)))
                            .unwrap_or_else(|| "–".into()),
                    ]
                })
                .collect();
            if rows.is_empty() {
                body.push_str("<p class=\"muted\">No statement ran during the test.</p>");
            } else {
                body.push_str(&table(
                    &[
                        "query",
                        "calls",
                        "total ms",
                        "mean ms",
                        "rows",
                        "share of time",
                    ]
                    .map(String::from),
                    &rows,
                ));
            }
        }
    }
    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_wal_flush_has_one_colour_whatever_the_version_calls_it() {
        assert_eq!(
            wait_style("IO:WalSync", Some(180001)),
            wait_style("IO:WALSync", Some(150001))
        );
        assert_eq!(wait_style("IO:WALSync", Some(150001)), (1, Dash::Solid));
    }
}
