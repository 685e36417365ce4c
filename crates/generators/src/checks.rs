//! What makes several result documents the generators of one run, checked before
//! the merge adds anything up:
//!
//! 1. each document agrees with itself: its counts with its sums and histograms, its
//!    scripts with its transaction type and its totals, its end with its start;
//! 2. no run is given twice (identical documents, or the same generator section);
//! 3. the generator indexes are those of one run: one `--generator-count`, each index
//!    once and below the count, none missing, and either every input numbered or none;
//! 4. the runs overlapped: the start skew (latest actual start minus earliest) is at
//!    most the shortest run's duration plus [`START_SKEW_TOLERANCE_US`], so every
//!    generator started before any other had finished.
//!
//! Time arithmetic is done in `i128`, so no document's times can overflow it.

use hdrhistogram::Histogram;
use pgsurge_results::{LatencySummary, RunResult, TxnSummary};

use crate::histograms;
use crate::MergeError;

/// How far the start skew may exceed the shortest generator's run (µs): generators
/// on different hosts read different clocks, and a generator's clients start a moment
/// after its `--start-at`.
pub const START_SKEW_TOLERANCE_US: i64 = 50_000;

/// When a generator's clients started: the recorded actual start, else the run start
/// plus the initial connection time (pgbench's benchmark start).
pub fn actual_start(r: &RunResult) -> i128 {
    match &r.generator {
        Some(g) => i128::from(g.actual_start_unix_us),
        None => i128::from(r.start_time_unix_us) + i128::from(r.initial_connection_us),
    }
}

fn inconsistent(label: &str, what: String) -> MergeError {
    MergeError::Inconsistent {
        label: label.to_string(),
        what,
    }
}

/// Decodes one of `label`'s histograms (`what` names it), naming both when it cannot
/// be read.
pub fn decode_in(label: &str, what: &str, encoded: &str) -> Result<Histogram<u64>, MergeError> {
    histograms::decode(encoded).map_err(|e| match e {
        MergeError::Histogram(msg) => inconsistent(label, format!("{what} cannot be read: {msg}")),
        other => other,
    })
}

/// The counts of one [`TxnSummary`] agree with each other and with its histograms.
fn check_txn(t: &TxnSummary, label: &str, what: &str) -> Result<(), MergeError> {
    let bad = |msg: String| inconsistent(label, format!("{what} {msg}"));
    if t.checked_total_cnt().is_none() {
        return Err(bad(format!(
            "count {} successful, {} skipped and {} failed transactions: more than {} together",
            t.transactions,
            t.skipped,
            t.failures,
            u64::MAX
        )));
    }
    let kinds = t
        .serialization_failures
        .checked_add(t.deadlock_failures)
        .and_then(|s| s.checked_add(t.other_sql_failures))
        .and_then(|s| s.checked_add(t.connection_lost_failures))
        .and_then(|s| s.checked_add(t.read_only_failures))
        .and_then(|s| s.checked_add(t.cancelled_failures));
    if kinds != Some(t.failures) {
        return Err(bad(format!(
            "count {} failures but {} serialization, {} deadlock, {} other, {} connection lost, \
             {} read-only and {} cancelled",
            t.failures,
            t.serialization_failures,
            t.deadlock_failures,
            t.other_sql_failures,
            t.connection_lost_failures,
            t.read_only_failures,
            t.cancelled_failures
        )));
    }
    check_latency(&t.latency, t.transactions, label, what, "latency", &bad)?;
    if t.lag.sums_us.count > t.transactions {
        return Err(bad(format!(
            "count {} transactions but a schedule lag for {}",
            t.transactions, t.lag.sums_us.count
        )));
    }
    check_latency(
        &t.lag,
        t.lag.sums_us.count,
        label,
        what,
        "schedule lag",
        &bad,
    )
}

/// A latency summary holds `n` values in its histogram (when it has one) and in its sums.
fn check_latency(
    l: &LatencySummary,
    n: u64,
    label: &str,
    what: &str,
    name: &str,
    bad: &dyn Fn(String) -> MergeError,
) -> Result<(), MergeError> {
    if let Some(enc) = &l.histogram {
        let len = decode_in(label, &format!("the {name} histogram of {what}"), enc)?.len();
        if len != n {
            return Err(bad(format!(
                "count {n} transactions but their {name} histogram holds {len}"
            )));
        }
    }
    if l.sums_us.count != n {
        return Err(bad(format!(
            "count {n} transactions but their {name} sums count {}",
            l.sums_us.count
        )));
    }
    Ok(())
}

/// One document agrees with itself (see the module documentation).
pub fn check_document(r: &RunResult, label: &str) -> Result<(), MergeError> {
    let start = actual_start(r);
    let end = i128::from(r.end_time_unix_us);
    if end < start {
        return Err(inconsistent(
            label,
            format!(
                "it ends ({} µs since the epoch) before its clients started ({start})",
                r.end_time_unix_us
            ),
        ));
    }
    if i64::try_from(end - start).is_err() {
        return Err(inconsistent(
            label,
            format!("its start ({start}) and end ({end}) are out of range"),
        ));
    }
    if let Some(g) = &r.generator {
        if let Some(n) = g.count {
            if g.index.is_some_and(|i| i >= n) || n == 0 {
                return Err(MergeError::IndexOutOfRange {
                    label: label.to_string(),
                    index: g.index,
                    count: n,
                });
            }
        }
    }
    check_counts(r, label)
}

/// The counts of one document agree with its sums and histograms, and its scripts
/// with its transaction type and its totals.
pub fn check_counts(r: &RunResult, label: &str) -> Result<(), MergeError> {
    check_txn(&r.totals, label, "its totals")?;
    match r.scripts.as_slice() {
        [] => return Err(inconsistent(label, "it lists no script".into())),
        [one] if one.name != r.transaction_type => {
            return Err(inconsistent(
                label,
                format!(
                    "its transaction type is {:?} but its one script is {:?}",
                    r.transaction_type, one.name
                ),
            ))
        }
        [_, _, ..] if r.transaction_type != "multiple scripts" => {
            return Err(inconsistent(
                label,
                format!(
                    "its transaction type is {:?} but it runs {} scripts",
                    r.transaction_type,
                    r.scripts.len()
                ),
            ))
        }
        _ => {}
    }
    for s in &r.scripts {
        check_txn(&s.stats, label, &format!("its script {:?}", s.name))?;
        for c in &s.commands {
            let what = format!("its script {:?} command {}", s.name, c.index + 1);
            let bad = |msg: String| inconsistent(label, format!("{what} {msg}"));
            check_latency(
                &c.latency,
                c.latency.sums_us.count,
                label,
                &what,
                "latency",
                &bad,
            )?;
        }
    }
    if let [one] = r.scripts.as_slice() {
        // A run of one script counts every transaction in both, with one histogram.
        let (s, t) = (&one.stats, &r.totals);
        let same = (s.transactions, s.skipped, s.failures)
            == (t.transactions, t.skipped, t.failures)
            && s.latency.histogram == t.latency.histogram
            && s.lag.histogram == t.lag.histogram;
        if !same {
            return Err(inconsistent(
                label,
                format!(
                    "its one script {:?} has other figures than its totals ({} and {} \
                     transactions{}): a run of one script counts the same transactions in both",
                    one.name,
                    s.transactions,
                    t.transactions,
                    if s.latency.histogram != t.latency.histogram {
                        ", different latency histograms"
                    } else {
                        ""
                    }
                ),
            ));
        }
    } else {
        check_scripts_add_up(r, label)?;
    }
    Ok(())
}

/// Several scripts: their counts add up to the totals, and so do their histograms
/// when every one has a histogram.
fn check_scripts_add_up(r: &RunResult, label: &str) -> Result<(), MergeError> {
    let sum = |f: fn(&TxnSummary) -> u64| {
        r.scripts
            .iter()
            .try_fold(0u64, |a, s| a.checked_add(f(&s.stats)))
    };
    for (name, f) in [
        (
            "successful",
            (|t: &TxnSummary| t.transactions) as fn(&TxnSummary) -> u64,
        ),
        ("skipped", |t| t.skipped),
        ("failed", |t| t.failures),
    ] {
        let total = f(&r.totals);
        if sum(f) != Some(total) {
            return Err(inconsistent(
                label,
                format!("its scripts' {name} transactions do not add up to its totals' {total}"),
            ));
        }
    }
    let Some(total_hist) = &r.totals.latency.histogram else {
        return Ok(());
    };
    let mut parts = Vec::new();
    for s in &r.scripts {
        match &s.stats.latency.histogram {
            Some(enc) => parts.push(enc),
            None if s.stats.transactions > 0 => return Ok(()),
            None => {}
        }
    }
    let mut sum: Option<Histogram<u64>> = None;
    for enc in parts {
        // Each was read and counted by `check_txn` already.
        histograms::add(&mut sum, &histograms::decode(enc)?)?;
    }
    let total = histograms::decode(total_hist)?;
    let sum_buckets = sum.as_ref().map(histograms::buckets).unwrap_or_default();
    if sum_buckets != histograms::buckets(&total) {
        return Err(inconsistent(
            label,
            "the latency histograms of its scripts do not add up to its totals' histogram".into(),
        ));
    }
    Ok(())
}

/// No run is given twice: identical documents, or one generator section twice (the
/// same generator, started at the same microsecond on the same clock).
pub fn check_distinct(results: &[RunResult], labels: &[String]) -> Result<(), MergeError> {
    // The JSON text, so that values read as NaN (`null`) compare equal too.
    let texts: Vec<String> = results
        .iter()
        .map(|r| serde_json::to_string(r).unwrap_or_default())
        .collect();
    for i in 0..results.len() {
        for j in i + 1..results.len() {
            let why = if texts[i] == texts[j] {
                "identical documents".to_string()
            } else {
                match (&results[i].generator, &results[j].generator) {
                    (Some(a), Some(b)) if a == b => format!(
                        "one generator section: generator {:?} on host {:?}, started at {} µs \
                         since the epoch",
                        a.name, a.host, a.actual_start_unix_us
                    ),
                    _ => continue,
                }
            };
            return Err(MergeError::SameRun {
                first: labels[i].clone(),
                other: labels[j].clone(),
                why,
            });
        }
    }
    Ok(())
}

/// `label is generator I of N` (or `label is one of N generators`).
fn describe(label: &str, index: Option<u32>, count: u32) -> String {
    match index {
        Some(i) => format!("{label} is generator {i} of {count}"),
        None => format!("{label} is one of {count} generators"),
    }
}

/// The generator indexes and counts are those of one run, complete.
pub fn check_generators(results: &[RunResult], labels: &[String]) -> Result<(), MergeError> {
    let ids: Vec<(Option<u32>, Option<u32>)> = results
        .iter()
        .map(|r| {
            r.generator
                .as_ref()
                .map_or((None, None), |g| (g.index, g.count))
        })
        .collect();
    let mut count: Option<(usize, u32)> = None;
    for (k, &(index, c)) in ids.iter().enumerate() {
        let Some(c) = c else { continue };
        match count {
            None => count = Some((k, c)),
            Some((f, n)) if n != c => {
                return Err(MergeError::DifferentCounts {
                    first: describe(&labels[f], ids[f].0, n),
                    other: describe(&labels[k], index, c),
                })
            }
            Some(_) => {}
        }
    }
    let with = ids.iter().position(|(i, _)| i.is_some());
    let without = ids.iter().position(|(i, _)| i.is_none());
    if let (Some(w), Some(wo)) = (with, without) {
        return Err(MergeError::MixedIndexes {
            with: labels[w].clone(),
            without: labels[wo].clone(),
        });
    }
    for i in 0..ids.len() {
        for j in i + 1..ids.len() {
            if let (Some(a), Some(b)) = (ids[i].0, ids[j].0) {
                if a == b {
                    return Err(MergeError::DuplicateIndex {
                        index: a,
                        first: labels[i].clone(),
                        other: labels[j].clone(),
                    });
                }
            }
        }
    }
    if let Some((_, n)) = count {
        if results.len() != n as usize {
            let given: Vec<u32> = ids.iter().filter_map(|(i, _)| *i).collect();
            return Err(MergeError::Incomplete {
                count: n,
                given: labels.to_vec(),
                missing: if given.is_empty() {
                    Vec::new()
                } else {
                    (0..n).filter(|i| !given.contains(i)).collect()
                },
            });
        }
    }
    Ok(())
}

/// The runs overlapped: the start skew is at most the shortest run's duration plus
/// [`START_SKEW_TOLERANCE_US`] (so every generator started before any other had
/// finished).
pub fn check_overlap(results: &[RunResult], labels: &[String]) -> Result<(), MergeError> {
    let spans: Vec<(i128, i128)> = results
        .iter()
        .map(|r| {
            let s = actual_start(r);
            (s, i128::from(r.end_time_unix_us) - s)
        })
        .collect();
    let pick = |better: fn(&(i128, i128), &(i128, i128)) -> bool| {
        (0..spans.len())
            .reduce(|a, b| if better(&spans[b], &spans[a]) { b } else { a })
            .unwrap_or(0)
    };
    let early = pick(|x, y| x.0 < y.0);
    let late = pick(|x, y| x.0 > y.0);
    let short = pick(|x, y| x.1 < y.1);
    let skew = spans[late].0 - spans[early].0;
    let shortest = spans[short].1;
    if skew > shortest + i128::from(START_SKEW_TOLERANCE_US) {
        return Err(MergeError::NotConcurrent {
            early: labels[early].clone(),
            late: labels[late].clone(),
            skew_us: skew,
            short: labels[short].clone(),
            shortest_us: shortest,
        });
    }
    Ok(())
}
