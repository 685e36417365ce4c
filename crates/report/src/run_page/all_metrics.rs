//! "All sampled metrics": every sampled metric, one chart per family and unit (the
//! family and unit from the store's metric descriptions, else from the name), the
//! metrics zero throughout named in one line.

use super::cpu::cpu_state_style;
use super::flushed::{is_flushed_counter_rate, Drawn};
use super::waits::wait_style;
use crate::charts::{chart_div, ChartMaker};
use crate::charts::{Dash, Series};
use crate::html::escape;
use pgsurge_store::activity;
use pgsurge_store::MetricInfo;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// Unit of a metric: from `metrics_info` when stored, else from its name's suffix.
pub(crate) fn metric_unit(name: &str, info: &BTreeMap<String, MetricInfo>) -> String {
    if let Some(i) = info.get(name) {
        if !i.unit.is_empty() {
            return i.unit.clone();
        }
    }
    let rate = name.ends_with("_per_s");
    let base = name.trim_end_matches("_per_s");
    let unit = if base.ends_with("_pct") {
        "%"
    } else if base.ends_with("_mbps") {
        "MB/s"
    } else if base.ends_with("_mb") {
        "MB"
    } else if base.ends_with("_ms") {
        "ms"
    } else if base.ends_with("_bytes") || base.ends_with(".bytes") {
        "bytes"
    } else {
        "count"
    };
    match (rate, unit) {
        (true, "count") => "1/s".into(),
        (true, u) => format!("{u}/s"),
        (false, u) => u.into(),
    }
}

/// Family (chart) of a metric: its stored category, else its name up to the last dot.
pub(super) fn metric_family(name: &str, info: &BTreeMap<String, MetricInfo>) -> String {
    match info.get(name) {
        Some(i) if !i.category.is_empty() => i.category.clone(),
        _ => name.rsplit_once('.').map(|(c, _)| c).unwrap_or(name).into(),
    }
}

/// Every sampled metric: one chart per family and unit. When server and client share a
/// host (`shared`), its CPU is drawn once (`os.cpu`, not again as `client.cpu`); a CPU
/// state keeps the colour and dash it has on the CPU charts above.
pub(super) fn all_metrics_section(
    version_num: Option<i64>,
    names: &BTreeSet<&str>,
    shared: bool,
    drawn: &Drawn<'_>,
    info: &BTreeMap<String, MetricInfo>,
    mk: ChartMaker<'_>,
    n: &mut usize,
) -> String {
    let points = &drawn.points;
    let mut body = String::new();
    let mut families: BTreeMap<(String, String), Vec<&str>> = BTreeMap::new();
    for name in names {
        if shared && name.starts_with("client.cpu.") {
            continue;
        }
        families
            .entry((metric_family(name, info), metric_unit(name, info)))
            .or_default()
            .push(name);
    }
    // A family whose every sample is zero draws nothing worth a chart: one line names them.
    let is_zero = |name: &&str| points[*name].iter().all(|p| !p.1.is_finite() || p.1 == 0.0);
    let mut all_zero: Vec<&str> = Vec::new();
    families.retain(|_, members| {
        if members.iter().all(is_zero) {
            all_zero.extend(members.iter());
            false
        } else {
            true
        }
    });
    if !families.is_empty() || !all_zero.is_empty() {
        body.push_str("<h2>All sampled metrics</h2>");
        if !all_zero.is_empty() {
            let _ = write!(
                body,
                "<p class=\"muted\">Zero throughout the test (not drawn): {}.</p>",
                escape(&all_zero.join(", "))
            );
        }
        body.push_str("<div class=\"charts\">");
        for ((family, unit), members) in &families {
            let series: Vec<Series> = members
                .iter()
                .enumerate()
                .map(|(k, name)| {
                    // A wait event is spelled and coloured as in "where the time goes".
                    if let Some(label) = activity::wait_label(name) {
                        let mut s = Series::line(&label, points[name].clone());
                        let (colour, dash) = wait_style(&label, version_num);
                        (s.color, s.dash) = (Some(colour), dash);
                        return s;
                    }
                    let short = name
                        .strip_prefix(family.as_str())
                        .map(|s| s.trim_start_matches('.'))
                        .filter(|s| !s.is_empty())
                        .unwrap_or(name);
                    let mut s = Series::line(short, points[name].clone());
                    s.dash = Dash::nth(k / 8);
                    if let Some((colour, dash)) = cpu_state_style(name) {
                        (s.color, s.dash) = (Some(colour), dash);
                    }
                    s
                })
                .collect();
            let note = if let Some(m) = members.iter().find(|m| is_flushed_counter_rate(m)) {
                format!("rates of {}", drawn.flush_note(m))
            } else {
                String::new()
            };
            body.push_str(&chart_div(
                &mk(&format!("{family} ({unit})"), unit, series, note),
                n,
            ));
        }
        body.push_str("</div>");
    }

    body
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units_come_from_the_names() {
        let none = BTreeMap::new();
        assert_eq!(metric_unit("pg.db.size_bytes", &none), "bytes");
        assert_eq!(metric_unit("pg.wal.lsn_bytes_per_s", &none), "bytes/s");
        assert_eq!(metric_unit("pg.db.xact_commit_per_s", &none), "1/s");
        assert_eq!(metric_unit("os.disk.vda.await_ms", &none), "ms");
        assert_eq!(metric_unit("os.disk.vda.write_mbps", &none), "MB/s");
        assert_eq!(metric_unit("os.ctxt_per_s", &none), "1/s");
    }
}
