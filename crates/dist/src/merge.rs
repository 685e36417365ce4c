//! The exact merge of many generators' [`RunResult`]s into the result of their
//! union: counts summed, exact sums combined, latency histograms added bucket by
//! bucket (percentiles come from the merged histogram), per-script and per-command
//! figures merged the same way, per-second series aligned on the wall clock, and tps
//! over the common window. Refuses results of different workloads. Pure data in,
//! data out: reading files and printing live in `merge_cli.rs`.

use hdrhistogram::Histogram;
use pgsurge_results::progress_counters::{IntervalSample, Percentile};
use pgsurge_results::{
    CommandResult, LatencySummary, MergedGenerator, RunResult, ScriptResult, SimpleStats,
    TxnSummary, DEFAULT_PERCENTILES, SCHEMA_VERSION,
};

use crate::histograms;
use crate::MergeError;

/// One generator's line under the merged report.
#[derive(Debug, Clone, PartialEq)]
pub struct GeneratorLine {
    /// Name (`--generator-name`, else host name, else the source's label).
    pub name: String,
    /// Host name, when recorded.
    pub host: Option<String>,
    /// `--generator-index`/`--generator-count`, when recorded.
    pub index: Option<(u32, Option<u32>)>,
    /// Clients of this generator.
    pub clients: u32,
    /// Successful transactions.
    pub transactions: u64,
    /// Its own tps (its transactions over its own benchmark duration).
    pub tps: f64,
    /// Actual start (Unix epoch µs).
    pub start_unix_us: i64,
    /// End (Unix epoch µs).
    pub end_unix_us: i64,
}

impl GeneratorLine {
    /// Its entry in the merged document's `generators` list.
    pub fn to_document(&self) -> MergedGenerator {
        MergedGenerator {
            name: self.name.clone(),
            host: self.host.clone(),
            index: self.index.map(|(i, _)| i),
            count: self.index.and_then(|(_, n)| n),
            clients: self.clients,
            transactions: self.transactions,
            tps: self.tps,
            actual_start_unix_us: self.start_unix_us,
            end_unix_us: self.end_unix_us,
        }
    }
}

/// The merged result and what the merge learned about the generators.
#[derive(Debug, Clone)]
pub struct MergedRun {
    /// The union as one result (no `generator` section, a `generators` list;
    /// `random_seed` absent).
    pub result: RunResult,
    /// One line per input, in input order.
    pub generators: Vec<GeneratorLine>,
    /// Latest actual start minus earliest (µs).
    pub start_skew_us: i64,
    /// The common window: earliest actual start .. latest end (Unix epoch µs).
    pub window_unix_us: (i64, i64),
}

/// When a generator's clients started: the recorded actual start, else the run
/// start plus the initial connection time (pgbench's benchmark start).
fn actual_start(r: &RunResult) -> i64 {
    r.generator
        .as_ref()
        .map(|g| g.actual_start_unix_us)
        .unwrap_or(r.start_time_unix_us + r.initial_connection_us)
}

/// Refuses to merge runs of different workloads: what must be equal for the union
/// to be one run. `labels` name the inputs in error messages.
fn check_same_workload(results: &[RunResult], labels: &[String]) -> Result<(), MergeError> {
    let first = &results[0];
    for (r, label) in results.iter().zip(labels).skip(1) {
        let differ = |what: &str, a: String, b: String| MergeError::DifferentWorkloads {
            what: what.to_string(),
            first: format!("{} in {}", a, labels[0]),
            other: format!("{} in {}", b, label),
        };
        macro_rules! same {
            ($what:expr, $get:expr) => {
                let (a, b) = ($get(first), $get(r));
                if a != b {
                    return Err(differ($what, format!("{a:?}"), format!("{b:?}")));
                }
            };
        }
        same!("scaling factor", |x: &RunResult| x.scale);
        same!("transaction type", |x: &RunResult| x
            .transaction_type
            .clone());
        same!("scripts", |x: &RunResult| x
            .scripts
            .iter()
            .map(|s| (s.name.clone(), s.weight, s.text.clone()))
            .collect::<Vec<_>>());
        same!("query mode", |x: &RunResult| x.options.query_mode);
        same!("partitions", |x: &RunResult| (
            x.partitions,
            x.partition_method.clone()
        ));
        same!("duration (-T)", |x: &RunResult| x.options.duration_s);
        same!("transactions per client (-t)", |x: &RunResult| x
            .options
            .transactions_per_client);
        same!("maximum number of tries", |x: &RunResult| x
            .options
            .max_tries);
        same!("latency limit (-L)", |x: &RunResult| x
            .options
            .latency_limit_us);
        same!("throttling (-R given)", |x: &RunResult| x
            .options
            .rate_tps
            .is_some());
        same!("new connection per transaction (-C)", |x: &RunResult| x
            .options
            .connect_per_transaction);
        same!("JSON schema version", |x: &RunResult| x.schema_version);
    }
    Ok(())
}

/// Merges latency summaries: exact sums combined, histograms added. The merged
/// histogram is absent when any part that measured something carried none (a
/// percentile of part of the data would be wrong).
fn merge_latency(parts: &[&LatencySummary], ranks: &[f64]) -> Result<LatencySummary, MergeError> {
    let mut sums = SimpleStats::default();
    let mut hist: Option<Histogram<u64>> = None;
    let mut complete = true;
    for p in parts {
        sums.merge(&p.sums_us);
        match &p.histogram {
            Some(enc) => histograms::add(&mut hist, &histograms::decode(enc)?)?,
            None if p.sums_us.count > 0 => complete = false,
            None => {}
        }
    }
    let hist = hist.filter(|h| complete && !h.is_empty());
    Ok(summary_from(sums, hist.as_ref(), ranks))
}

fn summary_from(s: SimpleStats, hist: Option<&Histogram<u64>>, ranks: &[f64]) -> LatencySummary {
    let finite = |v: f64| v.is_finite().then_some(v);
    let measured = s.count > 0;
    LatencySummary {
        sums_us: s,
        mean_ms: s.mean().and_then(|m| finite(m / 1000.0)),
        stddev_ms: s.stddev().and_then(|m| finite(m / 1000.0)),
        min_ms: measured.then_some(s.min / 1000.0),
        max_ms: measured.then_some(s.max / 1000.0),
        percentiles: hist.map(|h| percentiles(h, ranks)).unwrap_or_default(),
        histogram: hist.and_then(histograms::encode),
    }
}

fn percentiles(h: &Histogram<u64>, ranks: &[f64]) -> Vec<Percentile> {
    ranks
        .iter()
        .map(|&p| Percentile {
            percentile: p,
            latency_ms: h.value_at_percentile(p.clamp(0.0, 100.0)) as f64 / 1000.0,
        })
        .collect()
}

fn merge_txn(parts: &[&TxnSummary], ranks: &[f64]) -> Result<TxnSummary, MergeError> {
    let sum = |f: fn(&TxnSummary) -> u64| parts.iter().map(|p| f(p)).sum::<u64>();
    let lat: Vec<&LatencySummary> = parts.iter().map(|p| &p.latency).collect();
    let lag: Vec<&LatencySummary> = parts.iter().map(|p| &p.lag).collect();
    Ok(TxnSummary {
        transactions: sum(|p| p.transactions),
        skipped: sum(|p| p.skipped),
        failures: sum(|p| p.failures),
        serialization_failures: sum(|p| p.serialization_failures),
        deadlock_failures: sum(|p| p.deadlock_failures),
        other_sql_failures: sum(|p| p.other_sql_failures),
        retried: sum(|p| p.retried),
        retries: sum(|p| p.retries),
        late: sum(|p| p.late),
        latency: merge_latency(&lat, ranks)?,
        lag: merge_latency(&lag, ranks)?,
    })
}

fn merge_scripts(results: &[RunResult], ranks: &[f64]) -> Result<Vec<ScriptResult>, MergeError> {
    let first = &results[0];
    first
        .scripts
        .iter()
        .enumerate()
        .map(|(i, s0)| {
            let stats: Vec<&TxnSummary> = results.iter().map(|r| &r.scripts[i].stats).collect();
            let commands = s0
                .commands
                .iter()
                .enumerate()
                .map(|(j, c0)| {
                    let cs: Vec<Option<&CommandResult>> = results
                        .iter()
                        .map(|r| r.scripts[i].commands.get(j))
                        .collect();
                    let lat: Vec<&LatencySummary> =
                        cs.iter().flatten().map(|c| &c.latency).collect();
                    Ok(CommandResult {
                        index: j,
                        first_line: c0.first_line.clone(),
                        latency: merge_latency(&lat, ranks)?,
                        failures: cs.iter().flatten().map(|c| c.failures).sum(),
                        retries: cs.iter().flatten().map(|c| c.retries).sum(),
                    })
                })
                .collect::<Result<Vec<_>, MergeError>>()?;
            Ok(ScriptResult {
                name: s0.name.clone(),
                weight: s0.weight,
                text: s0.text.clone(),
                stats: merge_txn(&stats, ranks)?,
                commands,
            })
        })
        .collect()
}

/// Aligns the generators' interval series on the wall clock (each interval keyed by
/// its end, in periods since the epoch) and merges each period: counts summed,
/// mean and standard deviation pooled exactly from the parts' counts, means and
/// deviations, histograms added.
pub fn merge_intervals(
    results: &[RunResult],
    ranks: &[f64],
) -> Result<Vec<IntervalSample>, MergeError> {
    let period = results
        .iter()
        .flat_map(|r| r.intervals.first())
        .map(|i| i.duration_s.round().max(1.0))
        .next()
        .unwrap_or(1.0);
    let key = |i: &IntervalSample| (i.epoch_s / period).round() as i64;
    let mut by_key: std::collections::BTreeMap<i64, Vec<&IntervalSample>> = Default::default();
    for r in results {
        for i in &r.intervals {
            by_key.entry(key(i)).or_default().push(i);
        }
    }
    let origin = results.iter().map(actual_start).min().unwrap_or_default() as f64 / 1e6;
    by_key
        .into_values()
        .map(|parts| {
            let n: u64 = parts.iter().map(|p| p.transactions).sum();
            let nf = n as f64;
            let weighted = |f: fn(&IntervalSample) -> f64| {
                if n == 0 {
                    0.0
                } else {
                    parts
                        .iter()
                        .map(|p| p.transactions as f64 * f(p))
                        .sum::<f64>()
                        / nf
                }
            };
            let mean = weighted(|p| p.latency_ms);
            // Pooled variance: E[x²] of the union minus its mean squared.
            let ex2 = weighted(|p| p.stddev_ms * p.stddev_ms + p.latency_ms * p.latency_ms);
            let mut hist = None;
            let mut complete = true;
            for p in &parts {
                match &p.histogram {
                    Some(e) => histograms::add(&mut hist, &histograms::decode(e)?)?,
                    None if p.transactions > 0 => complete = false,
                    None => {}
                }
            }
            let hist = hist.filter(|_| complete);
            let epoch_s = parts.iter().map(|p| p.epoch_s).fold(f64::MIN, f64::max);
            let duration_s = parts.iter().map(|p| p.duration_s).fold(0.0, f64::max);
            Ok(IntervalSample {
                elapsed_s: epoch_s - origin,
                epoch_s,
                duration_s,
                transactions: n,
                failures: parts.iter().map(|p| p.failures).sum(),
                skipped: parts.iter().map(|p| p.skipped).sum(),
                retried: parts.iter().map(|p| p.retried).sum(),
                retries: parts.iter().map(|p| p.retries).sum(),
                tps: parts.iter().map(|p| p.tps).sum(),
                latency_ms: mean,
                stddev_ms: (ex2 - mean * mean).max(0.0).sqrt(),
                lag_ms: weighted(|p| p.lag_ms),
                percentiles: match (&hist, ranks.is_empty()) {
                    (Some(h), false) if !h.is_empty() => percentiles(h, ranks),
                    _ => Vec::new(),
                },
                histogram: hist.as_ref().and_then(histograms::encode),
            })
        })
        .collect()
}

/// Merges `results` (labelled for error messages, e.g. by file name) into one.
pub fn merge(results: &[RunResult], labels: &[String]) -> Result<MergedRun, MergeError> {
    if results.is_empty() {
        return Err(MergeError::Nothing);
    }
    for (r, label) in results.iter().zip(labels) {
        if r.schema_version != SCHEMA_VERSION {
            return Err(MergeError::SchemaVersion {
                label: label.clone(),
                found: r.schema_version,
            });
        }
    }
    check_same_workload(results, labels)?;
    let first = &results[0];
    let mut user_ranks: Vec<f64> = Vec::new();
    for r in results {
        for &p in &r.options.percentiles {
            if !user_ranks.contains(&p) {
                user_ranks.push(p);
            }
        }
    }
    user_ranks.sort_by(f64::total_cmp);
    let mut ranks: Vec<f64> = DEFAULT_PERCENTILES.to_vec();
    for &p in &user_ranks {
        if !ranks.contains(&p) {
            ranks.push(p);
        }
    }
    ranks.sort_by(f64::total_cmp);

    let starts: Vec<i64> = results.iter().map(actual_start).collect();
    let ends: Vec<i64> = results.iter().map(|r| r.end_time_unix_us).collect();
    let window = (
        *starts.iter().min().expect("not empty"),
        *ends.iter().max().expect("not empty"),
    );
    let skew = starts.iter().max().expect("not empty") - window.0;
    let totals: Vec<&TxnSummary> = results.iter().map(|r| &r.totals).collect();
    let totals = merge_txn(&totals, &ranks)?;
    let mut options = first.options.clone();
    options.clients = results.iter().map(|r| r.options.clients).sum();
    options.threads = results.iter().map(|r| r.options.threads).sum();
    options.rate_tps = first
        .options
        .rate_tps
        .map(|_| results.iter().filter_map(|r| r.options.rate_tps).sum());
    options.percentiles = user_ranks;
    options.random_seed = None;
    let generators = results
        .iter()
        .zip(labels)
        .zip(&starts)
        .map(|((r, label), &start)| GeneratorLine {
            name: r
                .generator
                .as_ref()
                .map(|g| g.name.clone())
                .unwrap_or_else(|| label.clone()),
            host: r.generator.as_ref().map(|g| g.host.clone()),
            index: r
                .generator
                .as_ref()
                .and_then(|g| g.index.map(|i| (i, g.count))),
            clients: r.options.clients,
            transactions: r.totals.transactions,
            tps: r.tps,
            start_unix_us: start,
            end_unix_us: r.end_time_unix_us,
        })
        .collect::<Vec<GeneratorLine>>();
    let bench_duration_us = window.1 - window.0;
    let result = RunResult {
        schema_version: SCHEMA_VERSION,
        pgsurge_version: first.pgsurge_version.clone(),
        server_version: first.server_version.clone(),
        start_time_unix_us: results
            .iter()
            .map(|r| r.start_time_unix_us)
            .min()
            .expect("not empty"),
        end_time_unix_us: window.1,
        interrupted: results.iter().any(|r| r.interrupted),
        aborted: results.iter().any(|r| r.aborted),
        transaction_type: first.transaction_type.clone(),
        scale: first.scale,
        partition_method: first.partition_method.clone(),
        partitions: first.partitions,
        options,
        bench_duration_us,
        initial_connection_us: results
            .iter()
            .map(|r| r.initial_connection_us)
            .max()
            .unwrap_or(0),
        connection_total_us: results.iter().map(|r| r.connection_total_us).sum(),
        tps: totals.transactions as f64 / (bench_duration_us as f64 / 1e6),
        scripts: merge_scripts(results, &ranks)?,
        intervals: merge_intervals(results, &first_ranks_for_intervals(results))?,
        totals,
        generator: None,
        generators: generators.iter().map(GeneratorLine::to_document).collect(),
        output_errors: Vec::new(),
    };
    Ok(MergedRun {
        result,
        generators,
        start_skew_us: skew,
        window_unix_us: window,
    })
}

/// Interval percentiles exist only where a run asked for them (`--percentiles`).
fn first_ranks_for_intervals(results: &[RunResult]) -> Vec<f64> {
    results
        .iter()
        .find(|r| !r.options.percentiles.is_empty())
        .map(|r| r.options.percentiles.clone())
        .unwrap_or_default()
}
