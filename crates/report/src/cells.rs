//! Groups a store's runs into matrix cells: one cell is one combination of target,
//! workload, scale, clients, rate and query mode; its repeats are the samples that the
//! charts summarize (median, min–max band) and that `compare` tests.
//!
//! Percentiles of a cell are exact over all its repeats: the runs' HDR histograms are
//! merged and queried, not averaged. Owns no rendering.

use pgsurge_analysis::describe;
use pgsurge_analysis::precision::CellPrecision;
use pgsurge_analysis::validity::Evidence;
use pgsurge_results::failure::AcknowledgedCommits;
use pgsurge_store::validity::ValidityFacts;
use pgsurge_store::{facts, histogram, Run, Store, StoreError};
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};

/// The identity of a matrix cell, without the target.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub struct CellKey {
    /// Workload display name ("tpcb-like", "select-only@9+tpcb-like@1", …).
    pub script: String,
    /// Scale factor (0 when unknown).
    pub scale: i64,
    /// Clients.
    pub clients: i64,
    /// Target rate in milli-tps (integer so the key orders and hashes); 0 = unthrottled.
    pub rate_milli: i64,
    /// Query mode.
    pub query_mode: String,
    /// The campaign's other matrix dimensions, when it sweeps them: `j<threads>` and
    /// `name=value` per swept setting (empty otherwise).
    #[serde(skip_serializing_if = "String::is_empty")]
    pub extra: String,
}

/// `j4 shared_buffers=1GB` from a run's options (`threads_dimension`, `settings`).
fn extra_dimensions(options: Option<&serde_json::Value>) -> String {
    let Some(o) = options else {
        return String::new();
    };
    let mut parts = Vec::new();
    if let Some(j) = o.get("threads_dimension").and_then(|v| v.as_i64()) {
        parts.push(format!("j{j}"));
    }
    if let Some(settings) = o.get("settings").and_then(|v| v.as_object()) {
        for (name, value) in settings {
            let value = value
                .as_str()
                .map(str::to_string)
                .unwrap_or_else(|| value.to_string());
            parts.push(format!("{name}={value}"));
        }
    }
    parts.join(" ")
}

impl CellKey {
    /// The key of a run.
    pub fn of(run: &Run) -> CellKey {
        let r = &run.record;
        CellKey {
            script: r
                .script
                .as_deref()
                .map(builtin_name)
                .unwrap_or_else(|| "?".into()),
            scale: r.scale.unwrap_or(0),
            clients: r.clients.unwrap_or(0),
            rate_milli: r.rate.map(|x| (x * 1000.0).round() as i64).unwrap_or(0),
            query_mode: r.query_mode.clone().unwrap_or_else(|| "simple".into()),
            extra: extra_dimensions(r.options.as_ref()),
        }
    }

    /// Target rate in tps, None when unthrottled.
    pub fn rate(&self) -> Option<f64> {
        (self.rate_milli > 0).then(|| self.rate_milli as f64 / 1000.0)
    }

    /// Short label, e.g. `tpcb-like s=10 c=8 R=500 prepared`. A dimension compared
    /// along (see [`CellKey::along`]) is left out.
    pub fn label(&self) -> String {
        let number = |n: i64| {
            if n == ANY_NUMBER {
                ANY.to_string()
            } else {
                n.to_string()
            }
        };
        let (scale, clients) = (number(self.scale), number(self.clients));
        let mut s = if self.script == ANY {
            format!("s={scale} c={clients}")
        } else {
            format!("{} s={scale} c={clients}", self.script)
        };
        if self.rate_milli == ANY_NUMBER {
            s.push_str(" R=*");
        } else if let Some(r) = self.rate() {
            s.push_str(&format!(" R={}", trim_float(r)));
        }
        if self.query_mode != "simple" && self.query_mode != ANY {
            s.push(' ');
            s.push_str(&self.query_mode);
        }
        if !self.extra.is_empty() {
            s.push(' ');
            s.push_str(&self.extra);
        }
        s
    }

    /// The key with the dimensions compared along replaced by [`ANY`] (text) or
    /// [`ANY_NUMBER`] (scale, clients, rate), so cells that differ only there match.
    pub fn along(mut self, along: Along) -> CellKey {
        if along.script {
            self.script = ANY.into();
        }
        if along.query_mode {
            self.query_mode = ANY.into();
        }
        if along.scale {
            self.scale = ANY_NUMBER;
        }
        if along.clients {
            self.clients = ANY_NUMBER;
        }
        if along.rate {
            self.rate_milli = ANY_NUMBER;
        }
        self
    }
}

/// The key dimensions a comparison is made along (left out of the matched cell).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Along {
    /// Workload.
    pub script: bool,
    /// Query mode.
    pub query_mode: bool,
    /// Scale factor.
    pub scale: bool,
    /// Clients.
    pub clients: bool,
    /// Target rate.
    pub rate: bool,
}

/// Placeholder of a numeric key dimension (scale, clients, rate) that a comparison is
/// made along.
pub const ANY_NUMBER: i64 = -1;

/// Placeholder of a key dimension that a comparison is made along.
pub const ANY: &str = "*";

/// The campaign name of a workload: pgbench's report names its built-in scripts
/// `<builtin: select only>`, `<builtin: TPC-B (sort of)>`, `<builtin: simple update>`;
/// imported runs carry those, campaigns `select-only`, `tpcb-like`, `simple-update`.
/// Other names are kept as they are.
pub fn builtin_name(script: &str) -> String {
    let s = script.trim();
    let Some(inner) = s
        .strip_prefix("<builtin:")
        .and_then(|r| r.strip_suffix('>'))
    else {
        return s.to_string();
    };
    match inner.trim().to_ascii_lowercase().as_str() {
        "select only" => "select-only".into(),
        "tpc-b (sort of)" => "tpcb-like".into(),
        "simple update" => "simple-update".into(),
        other => other.replace(' ', "-"),
    }
}

/// `12.0` → `12`, `12.5` → `12.5`.
pub fn trim_float(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v}")
    }
}

/// Summary of one cell on one target.
#[derive(Debug, Clone, Serialize)]
pub struct Cell {
    /// Set id.
    pub set_id: i64,
    /// Target name ("" when the runs have none).
    pub target: String,
    /// The matrix cell (target-independent key) these figures belong to.
    pub key: CellKey,
    /// Run ids of the successful repeats.
    pub run_ids: Vec<i64>,
    /// TPS of each successful repeat.
    pub tps: Vec<f64>,
    /// p99 latency (ms) of each successful repeat that has one.
    pub p99_ms: Vec<f64>,
    /// Average latency (ms) of each successful repeat that has one.
    pub latency_mean_ms: Vec<f64>,
    /// Median TPS.
    pub tps_median: f64,
    /// Lowest TPS among repeats.
    pub tps_min: f64,
    /// Highest TPS among repeats.
    pub tps_max: f64,
    /// Exact percentiles over all repeats (merged histograms), ms; from per-run
    /// medians of the stored percentiles when no histogram was stored.
    pub latency_ms: Percentiles,
    /// Mean schedule lag, median over repeats (ms), for rate runs.
    pub lag_mean_ms: Option<f64>,
    /// Failed or aborted repeats.
    pub failed: usize,
    /// Successful repeats in which the client was the bottleneck (fact `client_bound`):
    /// their figures measure the client, not the server.
    pub client_bound: usize,
    /// A workload pack's metrics (NOPM…) over the successful repeats, in the pack's
    /// order; empty for pgbench scripts.
    pub workload_metrics: Vec<CellMetric>,
    /// Per-transaction costs (server CPU µs, WAL bytes…) over the successful repeats
    /// that measured them, in `pgsurge_results::COST_KINDS` order.
    pub txn_costs: Vec<CellMetric>,
    /// `[repeats] until`: the precision the campaign stored for the cell when it stopped
    /// repeating it (fact `repeats_until`); None when it asked for none.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repeats_until: Option<CellPrecision>,
    /// Acknowledged commits lost over the successful repeats that checked theirs after
    /// their faults (`check_commits`); None when none did.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<AcknowledgedCommits>,
    /// Each successful repeat: when and in which round it ran, its figures and what its
    /// stored data says about its validity (for pairing rounds and stating validity).
    #[serde(skip)]
    pub samples: Vec<RunSample>,
}

/// One successful repeat of a cell.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSample {
    /// Run id.
    pub run_id: i64,
    /// Its set.
    pub set_id: i64,
    /// Its repeat number: the round of the campaign it ran in.
    pub repeat: i64,
    /// When it started (epoch seconds; its position in the plan when not stored).
    pub start: f64,
    /// Its throughput.
    pub tps: Option<f64>,
    /// Its p99 latency, ms.
    pub p99_ms: Option<f64>,
    /// The server start it ran in (fact `server_start`), when stored.
    pub server_start: Option<String>,
    /// Its layout build and what each level of its repeats cost, from its facts.
    pub levels: SampleLevels,
    /// What its stored data says about it (`runs` = 1).
    pub evidence: Evidence,
}

/// A repeat's layout build (`[repeats] builds`) and the wall time of each level it
/// ran at, from its facts: what `compare` estimates the builds level and the cost of
/// repeating each level from.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SampleLevels {
    /// The build's cache key (fact `build_key`).
    pub build_key: Option<String>,
    /// The layout build's seed (fact `build_layout_seed`).
    pub layout_seed: Option<u64>,
    /// SHA-256 of the build's `postgres` (fact `build_postgres_sha256`).
    pub postgres_sha256: Option<String>,
    /// Seconds the build took (fact `build_seconds`).
    pub build_seconds: Option<f64>,
    /// Seconds its server took to start (fact `start_seconds`).
    pub start_seconds: Option<f64>,
    /// Seconds this repeat spent loading the data (fact `init_duration_s`), when it did.
    pub init_seconds: Option<f64>,
    /// Its own wall time, from its start to its end.
    pub run_seconds: Option<f64>,
}

impl SampleLevels {
    /// Reads one of the facts it holds; false when `name` is not one of them.
    fn add(&mut self, name: &str, value: &str) -> bool {
        let number = || value.parse::<f64>().ok();
        match name {
            facts::BUILD_KEY => self.build_key = Some(value.to_string()),
            facts::BUILD_LAYOUT_SEED => self.layout_seed = value.parse().ok(),
            facts::BUILD_POSTGRES_SHA256 => self.postgres_sha256 = Some(value.to_string()),
            facts::BUILD_SECONDS => self.build_seconds = number(),
            facts::START_SECONDS => self.start_seconds = number(),
            facts::INIT_DURATION_S => self.init_seconds = number(),
            _ => return false,
        }
        true
    }
}

/// The stored facts of a cell's runs: what they say about validity, and the facts a
/// cell reads besides.
#[derive(Default)]
struct FactFlags {
    validity: ValidityFacts,
    repeats_until: BTreeMap<i64, CellPrecision>,
    server_start: BTreeMap<i64, String>,
    levels: BTreeMap<i64, SampleLevels>,
}

impl FactFlags {
    fn sample(&self, run: &Run) -> RunSample {
        let r = &run.record;
        RunSample {
            run_id: run.id,
            set_id: r.set_id,
            repeat: r.repeat_no,
            start: r
                .start_epoch
                .or(r.seq.map(|s| s as f64))
                .unwrap_or(run.id as f64),
            tps: r.tps,
            p99_ms: r.latency_p99_ms,
            server_start: self.server_start.get(&run.id).cloned(),
            levels: SampleLevels {
                run_seconds: r.end_epoch.zip(r.start_epoch).map(|(e, s)| e - s),
                ..self.levels.get(&run.id).cloned().unwrap_or_default()
            },
            evidence: self.validity.evidence(run),
        }
    }
}

/// One workload pack metric of a cell: its value in each successful repeat that has it.
#[derive(Debug, Clone, Serialize)]
pub struct CellMetric {
    /// The pack's name for it (`NOPM`).
    pub name: String,
    /// `per minute`, `per second` or `in the run`.
    pub unit: String,
    /// What it counts.
    pub description: String,
    /// One value per repeat.
    pub values: Vec<f64>,
}

impl CellMetric {
    /// A rate (per minute or per second): higher is more work done, so it is compared
    /// as tps is. A count over the run is not (it depends on the run's length).
    pub fn is_throughput(&self) -> bool {
        matches!(self.unit.as_str(), "per minute" | "per second")
    }
}

/// The workload pack metrics of `runs`, gathered per name in the order they first
/// appear.
fn cell_metrics(runs: &[&Run]) -> Vec<CellMetric> {
    let mut out: Vec<CellMetric> = Vec::new();
    for run in runs {
        for m in run.workload_metrics() {
            if !m.value.is_finite() {
                continue;
            }
            match out.iter_mut().find(|c| c.name == m.name) {
                Some(c) => c.values.push(m.value),
                None => out.push(CellMetric {
                    name: m.name,
                    unit: m.unit,
                    description: m.description,
                    values: vec![m.value],
                }),
            }
        }
    }
    out
}

/// The per-transaction costs of `runs`, gathered per cost (a finite value per repeat).
fn cell_costs(runs: &[&Run]) -> Vec<CellMetric> {
    let mut out: Vec<CellMetric> = pgsurge_results::COST_KINDS
        .iter()
        .map(|k| CellMetric {
            name: k.name.to_string(),
            unit: k.unit.to_string(),
            description: k.description.to_string(),
            values: Vec::new(),
        })
        .collect();
    for costs in runs.iter().filter_map(|r| r.txn_costs()) {
        for c in costs.costs.iter().filter(|c| c.per_txn.is_finite()) {
            if let Some(m) = out.iter_mut().find(|m| m.name == c.name) {
                m.values.push(c.per_txn);
            }
        }
    }
    out.retain(|m| !m.values.is_empty());
    out
}

/// The stored facts of the sets of `runs` that bear on validity, by run.
fn fact_flags(store: &mut Store, runs: &[Run]) -> Result<FactFlags, StoreError> {
    let sets: BTreeSet<i64> = runs.iter().map(|r| r.record.set_id).collect();
    let mut out = FactFlags::default();
    for set in sets {
        for (run_id, fact) in store.set_facts(set)? {
            if out.validity.add(run_id, &fact) {
                continue;
            }
            match (fact.name.as_str(), &fact.value) {
                (facts::REPEATS_UNTIL, Some(v)) => {
                    if let Ok(p) = serde_json::from_str(v) {
                        out.repeats_until.insert(run_id, p);
                    }
                }
                (facts::SERVER_START, Some(v)) => {
                    out.server_start.insert(run_id, v.clone());
                }
                (name, Some(v)) => {
                    out.levels.entry(run_id).or_default().add(name, v);
                }
                _ => {}
            }
        }
    }
    Ok(out)
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Clone, Copy, Default, Serialize)]
pub struct Percentiles {
    /// 50th.
    pub p50: f64,
    /// 90th.
    pub p90: f64,
    /// 99th.
    pub p99: f64,
}

/// Groups the runs of `runs` (any mix of sets and targets) into cells, ordered by set,
/// target, workload, scale, clients, rate, mode. `target_names` maps target ids to names.
pub fn build_cells(
    store: &mut Store,
    runs: &[Run],
    target_names: &BTreeMap<i64, String>,
) -> Result<Vec<Cell>, StoreError> {
    let mut groups: BTreeMap<(i64, String, CellKey), Vec<&Run>> = BTreeMap::new();
    for run in runs {
        let target = run
            .record
            .target_id
            .and_then(|id| target_names.get(&id).cloned())
            .unwrap_or_default();
        groups
            .entry((run.record.set_id, target, CellKey::of(run)))
            .or_default()
            .push(run);
    }
    let flags = fact_flags(store, runs)?;
    let mut cells = Vec::with_capacity(groups.len());
    for ((set_id, target, key), members) in groups {
        let ok: Vec<&Run> = members.iter().copied().filter(|r| is_ok(r)).collect();
        let failed = members.len() - ok.len();
        let tps: Vec<f64> = ok.iter().filter_map(|r| r.record.tps).collect();
        let p99_ms: Vec<f64> = ok.iter().filter_map(|r| r.record.latency_p99_ms).collect();
        let latency_mean_ms: Vec<f64> =
            ok.iter().filter_map(|r| r.record.latency_mean_ms).collect();
        let run_ids: Vec<i64> = ok.iter().map(|r| r.id).collect();
        let latency_ms = cell_percentiles(store, &ok)?;
        let lags: Vec<f64> = ok.iter().filter_map(|r| r.record.lag_mean_ms).collect();
        cells.push(Cell {
            set_id,
            target,
            key,
            run_ids,
            tps_median: describe::median(&tps),
            tps_min: describe::min(&tps),
            tps_max: describe::max(&tps),
            tps,
            p99_ms,
            latency_mean_ms,
            latency_ms,
            lag_mean_ms: (!lags.is_empty()).then(|| describe::median(&lags)),
            failed,
            client_bound: ok
                .iter()
                .filter(|r| flags.validity.client_bound(r.id))
                .count(),
            workload_metrics: cell_metrics(&ok),
            samples: ok.iter().map(|r| flags.sample(r)).collect(),
            txn_costs: cell_costs(&ok),
            repeats_until: ok
                .iter()
                .find_map(|r| flags.repeats_until.get(&r.id).copied()),
            acknowledged: AcknowledgedCommits::over(
                ok.iter().filter_map(|r| r.record.result_json.as_ref()),
            ),
        });
    }
    Ok(cells)
}

/// A run whose numbers count (imported pgbench results count too).
pub fn is_ok(run: &Run) -> bool {
    matches!(run.record.status.as_str(), "ok" | "imported")
}

fn cell_percentiles(store: &mut Store, runs: &[&Run]) -> Result<Percentiles, StoreError> {
    let ids: Vec<i64> = runs.iter().map(|r| r.id).collect();
    if !ids.is_empty() {
        let records = store.histograms(&ids)?;
        if let Some(h) = histogram::merged(&records, "latency", -1)? {
            if !h.is_empty() {
                // Histograms record microseconds.
                let q = |rank: f64| pgsurge_results::percentile::latency_ms_at(&h, rank);
                return Ok(Percentiles {
                    p50: q(50.0),
                    p90: q(90.0),
                    p99: q(99.0),
                });
            }
        }
    }
    let med = |f: fn(&Run) -> Option<f64>| {
        let v: Vec<f64> = runs.iter().filter_map(|r| f(r)).collect();
        describe::median(&v)
    };
    Ok(Percentiles {
        p50: med(|r| r.record.latency_p50_ms),
        p90: med(|r| r.record.latency_p90_ms),
        p99: med(|r| r.record.latency_p99_ms),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn imported_builtin_names_map_to_campaign_names() {
        assert_eq!(builtin_name("<builtin: select only>"), "select-only");
        assert_eq!(builtin_name("<builtin: TPC-B (sort of)>"), "tpcb-like");
        assert_eq!(builtin_name("<builtin: simple update>"), "simple-update");
        assert_eq!(builtin_name("select-only"), "select-only");
        assert_eq!(builtin_name("my.sql"), "my.sql");
        let k = CellKey {
            script: "tpcb-like".into(),
            scale: 1,
            clients: 2,
            rate_milli: 0,
            query_mode: "prepared".into(),
            extra: String::new(),
        };
        assert_eq!(k.label(), "tpcb-like s=1 c=2 prepared");
        let swept = CellKey {
            extra: extra_dimensions(Some(&serde_json::json!({
                "threads_dimension": 4, "settings": {"shared_buffers": "1GB"}
            }))),
            ..k.clone()
        };
        assert_eq!(
            swept.label(),
            "tpcb-like s=1 c=2 prepared j4 shared_buffers=1GB"
        );
        assert_ne!(swept, k);
        let mode = Along {
            query_mode: true,
            ..Along::default()
        };
        assert_eq!(k.clone().along(mode).label(), "tpcb-like s=1 c=2");
        let script = Along {
            script: true,
            ..Along::default()
        };
        assert_eq!(k.clone().along(script).label(), "s=1 c=2 prepared");
        let numbers = Along {
            clients: true,
            scale: true,
            rate: true,
            ..Along::default()
        };
        assert_eq!(k.along(numbers).label(), "tpcb-like s=* c=* R=* prepared");
    }
}
