//! The verdicts of finished cells, as they become known: the second target of the plan
//! against the first (what `compare` takes without sides), once every repeat of a cell
//! has ended on both, judged by `pgsurge_analysis::verdict::judge` with its default
//! margin, paired by repeat as `compare` pairs rounds. No figure is judged here.

use pgsurge_analysis::verdict::{judge, Margin, Samples};
use pgsurge_store::run_status;
use serde::Serialize;

use crate::state::TestRow;

/// A finished cell's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct CellVerdict {
    /// The cell (the key without its target and its repeat).
    pub cell: String,
    /// Side A: the plan's first target.
    pub a: String,
    /// Side B: its second.
    pub b: String,
    /// The TPS verdict (`faster`, `slower`, `no-difference`, `inconclusive`).
    pub tps: String,
    /// B's TPS against A's, as a relative change (0.05: +5 %).
    pub tps_change: Option<f64>,
    /// Its 95 % interval.
    pub tps_interval: Option<(f64, f64)>,
    /// The p99 latency verdict (lower is better), when both sides have one.
    pub p99: Option<String>,
}

/// The verdict of each cell whose repeats have all ended on both of the plan's first
/// two targets, in plan order.
pub fn of_tests(tests: &[TestRow]) -> Vec<CellVerdict> {
    let mut targets: Vec<&str> = Vec::new();
    for t in tests {
        if !targets.contains(&t.target.as_str()) {
            targets.push(&t.target);
        }
    }
    let [a, b, ..] = targets[..] else {
        return Vec::new();
    };
    let mut cells: Vec<&str> = Vec::new();
    for t in tests {
        if !cells.contains(&t.cell.as_str()) {
            cells.push(&t.cell);
        }
    }
    cells
        .into_iter()
        .filter_map(|cell| {
            let side = |target: &str| -> Vec<&TestRow> {
                tests
                    .iter()
                    .filter(|t| t.cell == cell && t.target == target)
                    .collect()
            };
            cell_verdict(cell, (a, &side(a)), (b, &side(b)))
        })
        .collect()
}

/// One cell's verdict, once both sides have run and every repeat of each has ended.
fn cell_verdict(
    cell: &str,
    (a, side_a): (&str, &[&TestRow]),
    (b, side_b): (&str, &[&TestRow]),
) -> Option<CellVerdict> {
    let ended = |t: &&TestRow| t.status == run_status::OK || t.status == run_status::FAILED;
    if side_a.is_empty() || side_b.is_empty() || !side_a.iter().chain(side_b).all(ended) {
        return None;
    }
    let values = |side: &[&TestRow], of: fn(&TestRow) -> Option<f64>| -> Vec<(u32, f64)> {
        side.iter()
            .filter(|t| t.status == run_status::OK)
            .filter_map(|t| Some((t.repeat, of(t)?)))
            .collect()
    };
    let judged = |of: fn(&TestRow) -> Option<f64>, higher_is_better: bool| {
        let (va, vb) = (values(side_a, of), values(side_b, of));
        let rounds: Vec<(f64, f64)> = va
            .iter()
            .filter_map(|(r, x)| vb.iter().find(|(rb, _)| rb == r).map(|(_, y)| (*x, *y)))
            .collect();
        let (a, b): (Vec<f64>, Vec<f64>) = (
            va.iter().map(|v| v.1).collect(),
            vb.iter().map(|v| v.1).collect(),
        );
        (!a.is_empty() && !b.is_empty()).then(|| {
            let samples = Samples {
                a: &a,
                b: &b,
                rounds: &rounds,
                higher_is_better,
            };
            judge(samples, Margin::default())
        })
    };
    let tps = judged(|t| t.tps, true)?;
    let p99 = judged(|t| t.latency_p99_ms, false);
    Some(CellVerdict {
        cell: cell.to_string(),
        a: a.to_string(),
        b: b.to_string(),
        tps: tps.verdict.name().to_string(),
        tps_change: tps.change,
        tps_interval: tps.low.zip(tps.high),
        p99: p99.map(|j| j.verdict.name().to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(target: &str, repeat: u32, status: &str, tps: f64) -> TestRow {
        TestRow {
            key: format!("{target}/s1/select-only/c1/r-/{repeat}"),
            status: status.into(),
            planned_s: 10,
            target: target.into(),
            cell: "s1/select-only/c1/r-".into(),
            repeat,
            tps: Some(tps),
            latency_mean_ms: Some(1.0),
            latency_p99_ms: Some(2.0),
            error: None,
        }
    }

    /// A cell is judged once every repeat on both targets has ended: B twice as fast
    /// in each of three rounds is `faster`.
    #[test]
    fn a_cell_is_judged_once_both_sides_have_ended() {
        let mut tests = vec![
            row("a", 1, "ok", 100.0),
            row("b", 1, "ok", 200.0),
            row("a", 2, "ok", 101.0),
            row("b", 2, "ok", 203.0),
            row("a", 3, "ok", 99.0),
            row("b", 3, "running", 0.0),
        ];
        assert!(of_tests(&tests).is_empty());
        tests[5] = row("b", 3, "ok", 199.0);
        let v = of_tests(&tests);
        assert_eq!(v.len(), 1);
        assert_eq!((v[0].a.as_str(), v[0].b.as_str()), ("a", "b"));
        assert_eq!(v[0].tps, "faster");
        assert!(v[0].tps_change.unwrap() > 0.9, "{v:?}");
        // One target alone has nothing to be compared with.
        assert!(of_tests(&tests[..1]).is_empty());
    }
}
