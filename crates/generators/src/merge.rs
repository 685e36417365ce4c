//! The exact merge of many generators' [`RunResult`]s into the result of their
//! union: counts summed, exact sums combined, latency histograms added bucket by
//! bucket (percentiles come from the merged histogram), per-script and per-command
//! figures merged the same way, per-second series aligned on the wall clock, and tps
//! over the common window. Refuses results of different workloads, and inputs that
//! cannot be one run ([`crate::checks`]); every count is added with checked
//! arithmetic, so a sum that does not fit is refused rather than wrapped. Pure data
//! in, data out: reading files and printing live in `merge_cli.rs`.

use hdrhistogram::Histogram;
use pgsurge_results::percentile::latency_percentiles;
use pgsurge_results::progress_counters::IntervalSample;
use pgsurge_results::{
    CommandResult, LatencySummary, MergedGenerator, RunResult, ScriptResult, SimpleStats,
    TxnSummary, DEFAULT_PERCENTILES, SCHEMA_VERSION,
};

use crate::checks::{self, actual_start};
use crate::histograms;
use crate::MergeError;

/// Checked sums over the inputs, whose labels name them when a sum overflows.
struct Sums {
    inputs: String,
}

impl Sums {
    fn overflow(&self, what: &str, limit: impl ToString) -> MergeError {
        MergeError::Overflow {
            what: what.to_string(),
            inputs: self.inputs.clone(),
            limit: limit.to_string(),
        }
    }

    fn u64(&self, what: &str, values: impl IntoIterator<Item = u64>) -> Result<u64, MergeError> {
        values
            .into_iter()
            .try_fold(0u64, u64::checked_add)
            .ok_or_else(|| self.overflow(what, u64::MAX))
    }

    fn u32(&self, what: &str, values: impl IntoIterator<Item = u32>) -> Result<u32, MergeError> {
        let sum = self.u64(what, values.into_iter().map(u64::from))?;
        u32::try_from(sum).map_err(|_| self.overflow(what, u32::MAX))
    }

    fn stats(
        &self,
        what: &str,
        into: &mut SimpleStats,
        part: &SimpleStats,
    ) -> Result<(), MergeError> {
        let merged = into
            .checked_merge(part)
            .ok_or_else(|| self.overflow(&format!("{what} counts"), u64::MAX))?;
        // Sums of real latencies stay far below f64's range; infinite ones would not
        // even be written back as a document.
        if !(merged.sum.is_finite() && merged.sum2.is_finite()) {
            return Err(self.overflow(&format!("{what} sums (µs)"), f64::MAX));
        }
        *into = merged;
        Ok(())
    }

    /// Adds a histogram into `into`, refusing counts that do not fit together.
    fn histogram(
        &self,
        what: &str,
        into: &mut Option<Histogram<u64>>,
        part: &Histogram<u64>,
    ) -> Result<(), MergeError> {
        if let Some(h) = into {
            if h.len().checked_add(part.len()).is_none() {
                return Err(self.overflow(what, u64::MAX));
            }
        }
        histograms::add(into, part)
    }
}

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
fn merge_latency(
    sums_of: &Sums,
    what: &str,
    parts: &[&LatencySummary],
    ranks: &[f64],
) -> Result<LatencySummary, MergeError> {
    let mut sums = SimpleStats::default();
    let mut hist: Option<Histogram<u64>> = None;
    let mut complete = true;
    for p in parts {
        sums_of.stats(what, &mut sums, &p.sums_us)?;
        match &p.histogram {
            Some(enc) => sums_of.histogram(
                &format!("{what} histogram counts"),
                &mut hist,
                &histograms::decode(enc)?,
            )?,
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
        percentiles: hist
            .map(|h| latency_percentiles(h, ranks))
            .unwrap_or_default(),
        histogram: hist.and_then(histograms::encode),
    }
}

fn merge_txn(
    sums: &Sums,
    what: &str,
    parts: &[&TxnSummary],
    ranks: &[f64],
) -> Result<TxnSummary, MergeError> {
    let named = |name: &str| {
        if what.is_empty() {
            name.to_string()
        } else {
            format!("{what} {name}")
        }
    };
    let sum =
        |name: &str, f: fn(&TxnSummary) -> u64| sums.u64(&named(name), parts.iter().map(|p| f(p)));
    let lat: Vec<&LatencySummary> = parts.iter().map(|p| &p.latency).collect();
    let lag: Vec<&LatencySummary> = parts.iter().map(|p| &p.lag).collect();
    let t = TxnSummary {
        transactions: sum("transactions", |p| p.transactions)?,
        skipped: sum("skipped transactions", |p| p.skipped)?,
        failures: sum("failures", |p| p.failures)?,
        serialization_failures: sum("serialization failures", |p| p.serialization_failures)?,
        deadlock_failures: sum("deadlock failures", |p| p.deadlock_failures)?,
        other_sql_failures: sum("other failures", |p| p.other_sql_failures)?,
        connection_lost_failures: sum("connection lost failures", |p| p.connection_lost_failures)?,
        read_only_failures: sum("read-only failures", |p| p.read_only_failures)?,
        cancelled_failures: sum("cancelled failures", |p| p.cancelled_failures)?,
        retried: sum("retried transactions", |p| p.retried)?,
        retries: sum("retries", |p| p.retries)?,
        late: sum("late transactions", |p| p.late)?,
        latency: merge_latency(sums, &named("latency"), &lat, ranks)?,
        lag: merge_latency(sums, &named("schedule lag"), &lag, ranks)?,
    };
    if t.checked_total_cnt().is_none() {
        return Err(sums.overflow(
            &named("successful, skipped and failed transactions"),
            u64::MAX,
        ));
    }
    Ok(t)
}

fn merge_scripts(
    sums: &Sums,
    results: &[RunResult],
    ranks: &[f64],
) -> Result<Vec<ScriptResult>, MergeError> {
    let first = &results[0];
    first
        .scripts
        .iter()
        .enumerate()
        .map(|(i, s0)| {
            // Every input has the same scripts (`check_same_workload`).
            let all: Vec<&ScriptResult> = results.iter().filter_map(|r| r.scripts.get(i)).collect();
            let stats: Vec<&TxnSummary> = all.iter().map(|s| &s.stats).collect();
            let what = format!("script {}", i + 1);
            let commands = s0
                .commands
                .iter()
                .enumerate()
                .map(|(j, c0)| {
                    let cs: Vec<&CommandResult> =
                        all.iter().filter_map(|s| s.commands.get(j)).collect();
                    let lat: Vec<&LatencySummary> = cs.iter().map(|c| &c.latency).collect();
                    let what = format!("{what} command {}", j + 1);
                    Ok(CommandResult {
                        index: j,
                        first_line: c0.first_line.clone(),
                        latency: merge_latency(sums, &format!("{what} latency"), &lat, ranks)?,
                        failures: sums
                            .u64(&format!("{what} failures"), cs.iter().map(|c| c.failures))?,
                        retries: sums
                            .u64(&format!("{what} retries"), cs.iter().map(|c| c.retries))?,
                    })
                })
                .collect::<Result<Vec<_>, MergeError>>()?;
            Ok(ScriptResult {
                name: s0.name.clone(),
                weight: s0.weight,
                text: s0.text.clone(),
                stats: merge_txn(sums, &what, &stats, ranks)?,
                commands,
            })
        })
        .collect()
}

/// Aligns the generators' interval series on the wall clock (each interval keyed by
/// its end, in periods since the epoch) and merges each period: counts summed,
/// mean and standard deviation pooled exactly from the parts' counts, means and
/// deviations, histograms added.
fn merge_intervals(
    sums: &Sums,
    results: &[RunResult],
    labels: &[String],
    ranks: &[f64],
) -> Result<Vec<IntervalSample>, MergeError> {
    let period = results
        .iter()
        .flat_map(|r| r.intervals.first())
        .map(|i| i.duration_s.round().max(1.0))
        .next()
        .unwrap_or(1.0);
    let key = |i: &IntervalSample| (i.epoch_s / period).round() as i64;
    // Each period's samples, with the input each comes from.
    type Part<'a> = (&'a IntervalSample, &'a str);
    let mut by_key: std::collections::BTreeMap<i64, Vec<Part<'_>>> = Default::default();
    for (r, label) in results.iter().zip(labels) {
        for i in &r.intervals {
            by_key.entry(key(i)).or_default().push((i, label));
        }
    }
    let origin = results.iter().map(actual_start).min().unwrap_or_default() as f64 / 1e6;
    by_key
        .into_values()
        .map(|parts| {
            let at = parts.first().map_or(0.0, |p| p.0.epoch_s);
            let sum = |name: &str, f: fn(&IntervalSample) -> u64| {
                sums.u64(
                    &format!("per-second {name} at {at} s since the epoch"),
                    parts.iter().map(|p| f(p.0)),
                )
            };
            let n = sum("transactions", |p| p.transactions)?;
            let nf = n as f64;
            let weighted = |f: fn(&IntervalSample) -> f64| {
                if n == 0 {
                    0.0
                } else {
                    parts
                        .iter()
                        .map(|p| p.0.transactions as f64 * f(p.0))
                        .sum::<f64>()
                        / nf
                }
            };
            let mean = weighted(|p| p.latency_ms);
            // Pooled variance: E[x²] of the union minus its mean squared.
            let ex2 = weighted(|p| p.stddev_ms * p.stddev_ms + p.latency_ms * p.latency_ms);
            let mut hist = None;
            let mut complete = true;
            for (p, label) in &parts {
                match &p.histogram {
                    Some(e) => {
                        let what = format!(
                            "its per-second histogram at {} s since the epoch",
                            p.epoch_s
                        );
                        sums.histogram(
                            &format!("per-second histogram counts at {at} s since the epoch"),
                            &mut hist,
                            &checks::decode_in(label, &what, e)?,
                        )?
                    }
                    None if p.transactions > 0 => complete = false,
                    None => {}
                }
            }
            let hist = hist.filter(|_| complete);
            let epoch_s = parts.iter().map(|p| p.0.epoch_s).fold(f64::MIN, f64::max);
            let duration_s = parts.iter().map(|p| p.0.duration_s).fold(0.0, f64::max);
            Ok(IntervalSample {
                elapsed_s: epoch_s - origin,
                epoch_s,
                duration_s,
                transactions: n,
                failures: sum("failures", |p| p.failures)?,
                skipped: sum("skipped transactions", |p| p.skipped)?,
                retried: sum("retried transactions", |p| p.retried)?,
                retries: sum("retries", |p| p.retries)?,
                tps: parts.iter().map(|p| p.0.tps).sum(),
                latency_ms: mean,
                stddev_ms: (ex2 - mean * mean).max(0.0).sqrt(),
                lag_ms: weighted(|p| p.lag_ms),
                percentiles: match (&hist, ranks.is_empty()) {
                    (Some(h), false) if !h.is_empty() => latency_percentiles(h, ranks),
                    _ => Vec::new(),
                },
                histogram: hist.as_ref().and_then(histograms::encode),
            })
        })
        .collect()
}

/// Merges `results` (labelled for error messages, e.g. by file name) into one, after
/// checking that they can be one run ([`crate::checks`]).
pub fn merge(results: &[RunResult], labels: &[String]) -> Result<MergedRun, MergeError> {
    if results.is_empty() {
        return Err(MergeError::Nothing);
    }
    let labels: Vec<String> = (0..results.len())
        .map(|i| {
            labels
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("input {}", i + 1))
        })
        .collect();
    let labels = labels.as_slice();
    for (r, label) in results.iter().zip(labels) {
        if r.schema_version != SCHEMA_VERSION {
            return Err(MergeError::SchemaVersion {
                label: label.clone(),
                found: r.schema_version,
            });
        }
    }
    for (r, label) in results.iter().zip(labels) {
        checks::check_document(r, label)?;
    }
    checks::check_distinct(results, labels)?;
    checks::check_generators(results, labels)?;
    check_same_workload(results, labels)?;
    checks::check_overlap(results, labels)?;
    let sums = Sums {
        inputs: labels.join(", "),
    };
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

    // `check_document` keeps every start and end within `i64`.
    let out_of_range = || MergeError::Inconsistent {
        label: sums.inputs.clone(),
        what: "their start and end times are out of range".into(),
    };
    let starts: Vec<i64> = results
        .iter()
        .map(|r| i64::try_from(actual_start(r)).map_err(|_| out_of_range()))
        .collect::<Result<_, _>>()?;
    let ends: Vec<i64> = results.iter().map(|r| r.end_time_unix_us).collect();
    let window = (
        starts.iter().copied().min().unwrap_or_default(),
        ends.iter().copied().max().unwrap_or_default(),
    );
    let skew = starts
        .iter()
        .copied()
        .max()
        .unwrap_or_default()
        .checked_sub(window.0)
        .ok_or_else(out_of_range)?;
    let bench_duration_us = window.1.checked_sub(window.0).ok_or_else(out_of_range)?;
    let totals: Vec<&TxnSummary> = results.iter().map(|r| &r.totals).collect();
    let totals = merge_txn(&sums, "", &totals, &ranks)?;
    let mut options = first.options.clone();
    options.clients = sums.u32("clients", results.iter().map(|r| r.options.clients))?;
    options.threads = sums.u32("threads", results.iter().map(|r| r.options.threads))?;
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
    let result = RunResult {
        schema_version: SCHEMA_VERSION,
        pgsurge_version: first.pgsurge_version.clone(),
        server_version: first.server_version.clone(),
        start_time_unix_us: results
            .iter()
            .map(|r| r.start_time_unix_us)
            .min()
            .unwrap_or_default(),
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
        connection_total_us: sums.u64(
            "connection times",
            results.iter().map(|r| r.connection_total_us),
        )?,
        tps: totals.transactions as f64 / (bench_duration_us as f64 / 1e6),
        scripts: merge_scripts(&sums, results, &ranks)?,
        intervals: merge_intervals(&sums, results, labels, &first_ranks_for_intervals(results))?,
        totals,
        generator: None,
        generators: generators.iter().map(GeneratorLine::to_document).collect(),
        // Each generator read the server's metrics over its own run: not additive.
        workload_metrics: Vec::new(),
        // Costs, failure costs, output errors and the steady state (judged by the
        // caller from the merged series) are each process's own.
        ..Default::default()
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
