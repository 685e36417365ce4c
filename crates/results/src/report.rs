//! The final text report (stdout), line for line as pgbench 18 prints it after
//! the version banner (spec §7.1, §7.2), rendered from a [`RunResult`]. pgbench
//! 17's layout is available for comparisons with recorded 17 transcripts.
//! pgsurge's own additions (`--percentiles` lines, the interruption line) are
//! printed only when asked for or when they apply.

use std::io::{self, Write};

use crate::pgfmt::{f1, f3, f6, Fixed, PercentileLabel};
use crate::result::{LatencySummary, RunResult, ScriptResult, TxnSummary};
use crate::simple::SimpleStats;

/// Which pgbench release's report layout to reproduce.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PgCompat {
    /// pgbench 17: `failed` line even with nothing done, old per-script lines,
    /// two spaces before `-r` command text.
    Pg17,
    /// pgbench 18 (the reference).
    #[default]
    Pg18,
}

/// Rendering choices for [`write_pgbench_report`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ReportOptions {
    /// `-r`: per-command latencies, failures (and retries).
    pub per_command: bool,
    /// `--failures-detailed`: serialization/deadlock lines.
    pub failures_detailed: bool,
    /// `--reconnect`: the lines of the failures it survives (connection lost,
    /// read-only, cancelled).
    pub reconnect: bool,
    /// `--percentiles`: ranks to add as extra lines (empty: none, pgbench output).
    pub percentiles: Vec<f64>,
    /// Layout to reproduce.
    pub compat: PgCompat,
}

impl ReportOptions {
    /// The choices implied by the run's own options.
    pub fn from_result(r: &RunResult) -> Self {
        ReportOptions {
            per_command: r.options.report_per_command,
            failures_detailed: r.options.failures_detailed,
            reconnect: r.options.reconnect,
            percentiles: r.options.percentiles.clone(),
            compat: PgCompat::Pg18,
        }
    }
}

fn pct(part: u64, whole: u64) -> Fixed {
    f3(100.0 * part as f64 / whole as f64)
}

/// pgbench's `printSimpleStats`: average and stddev lines when anything was measured.
fn simple_stats(out: &mut dyn Write, prefix: &str, s: &SimpleStats) -> io::Result<()> {
    if s.count > 0 {
        let mean = s.sum / s.count as f64;
        let stddev = (s.sum2 / s.count as f64 - mean * mean).sqrt();
        writeln!(out, "{prefix} average = {} ms", f3(0.001 * mean))?;
        writeln!(out, "{prefix} stddev = {} ms", f3(0.001 * stddev))?;
    }
    Ok(())
}

/// Opt-in percentile lines (`latency p99 = 1.234 ms`).
fn percentile_lines(
    out: &mut dyn Write,
    prefix: &str,
    lat: &LatencySummary,
    ranks: &[f64],
) -> io::Result<()> {
    if lat.sums_us.count == 0 && lat.percentiles.is_empty() {
        return Ok(());
    }
    for &p in ranks {
        if let Some(v) = lat.percentile(p) {
            writeln!(out, "{prefix} {} = {} ms", PercentileLabel(p), f3(v))?;
        }
    }
    Ok(())
}

fn failure_lines(
    out: &mut dyn Write,
    prefix: &str,
    s: &TxnSummary,
    total: u64,
    detailed: bool,
    reconnect: bool,
) -> io::Result<()> {
    writeln!(
        out,
        "{prefix}number of failed transactions: {} ({}%)",
        s.failures,
        pct(s.failures, total)
    )?;
    if detailed {
        writeln!(
            out,
            "{prefix}number of serialization failures: {} ({}%)",
            s.serialization_failures,
            pct(s.serialization_failures, total)
        )?;
        writeln!(
            out,
            "{prefix}number of deadlock failures: {} ({}%)",
            s.deadlock_failures,
            pct(s.deadlock_failures, total)
        )?;
    }
    if reconnect {
        for (what, n) in [
            ("connection-lost", s.connection_lost_failures),
            ("read-only", s.read_only_failures),
            ("cancelled", s.cancelled_failures),
        ] {
            writeln!(
                out,
                "{prefix}number of {what} failures: {n} ({}%)",
                pct(n, total)
            )?;
        }
    }
    Ok(())
}

fn retry_lines(out: &mut dyn Write, prefix: &str, s: &TxnSummary, total: u64) -> io::Result<()> {
    writeln!(
        out,
        "{prefix}number of transactions retried: {} ({}%)",
        s.retried,
        pct(s.retried, total)
    )?;
    writeln!(out, "{prefix}total number of retries: {}", s.retries)
}

/// Write the final report exactly as pgbench prints it (everything after the
/// `pgbench (…)` banner), plus opt-in pgsurge lines.
pub fn write_pgbench_report(
    r: &RunResult,
    opts: &ReportOptions,
    out: &mut dyn Write,
) -> io::Result<()> {
    let options = &r.options;
    let totals = &r.totals;
    let failures = totals.failures;
    let total_cnt = totals.total_cnt();
    let bench_duration = r.bench_duration_us as f64 / 1e6;
    let throttled = options.rate_tps.is_some();
    let limited = options.latency_limit_us.is_some();
    let pg17 = opts.compat == PgCompat::Pg17;

    writeln!(out, "transaction type: {}", r.transaction_type)?;
    writeln!(out, "scaling factor: {}", r.scale)?;
    if let Some(m) = &r.partition_method {
        writeln!(out, "partition method: {m}\npartitions: {}", r.partitions)?;
    }
    writeln!(out, "query mode: {}", options.query_mode.name())?;
    writeln!(out, "number of clients: {}", options.clients)?;
    writeln!(out, "number of threads: {}", options.threads)?;
    if options.max_tries != 0 {
        writeln!(out, "maximum number of tries: {}", options.max_tries)?;
    }
    match options.duration_s {
        None => {
            let nxacts = i64::from(options.transactions_per_client.unwrap_or(0));
            writeln!(out, "number of transactions per client: {nxacts}")?;
            writeln!(
                out,
                "number of transactions actually processed: {}/{}",
                totals.transactions,
                nxacts * i64::from(options.clients)
            )?;
        }
        Some(d) => {
            writeln!(out, "duration: {d} s")?;
            writeln!(
                out,
                "number of transactions actually processed: {}",
                totals.transactions
            )?;
        }
    }

    // Nothing else is meaningful when every transaction aborted (pgbench 18
    // stops before the failed line; 17 stops after the retry lines).
    if !pg17 && total_cnt == 0 {
        return interrupted_line(r, out);
    }
    failure_lines(
        out,
        "",
        totals,
        total_cnt,
        opts.failures_detailed,
        opts.reconnect,
    )?;
    if options.max_tries != 1 {
        retry_lines(out, "", totals, total_cnt)?;
    }
    if pg17 && totals.transactions + totals.skipped == 0 {
        return interrupted_line(r, out);
    }
    if throttled && limited {
        writeln!(
            out,
            "number of transactions skipped: {} ({}%)",
            totals.skipped,
            pct(totals.skipped, total_cnt)
        )?;
    }
    if let Some(limit) = options.latency_limit_us {
        let late_pct = if totals.transactions > 0 {
            100.0 * totals.late as f64 / totals.transactions as f64
        } else {
            0.0
        };
        writeln!(
            out,
            "number of transactions above the {} ms latency limit: {}/{} ({}%)",
            f1(limit as f64 / 1000.0),
            totals.late,
            totals.transactions,
            f3(late_pct)
        )?;
    }
    if throttled || options.progress_s.is_some() || limited {
        simple_stats(out, "latency", &totals.latency.sums_us)?;
    } else {
        // No measured latencies: pgbench derives the average from the run time.
        let avg =
            0.001 * r.bench_duration_us as f64 * f64::from(options.clients) / total_cnt as f64;
        let suffix = if failures > 0 {
            " (including failures)"
        } else {
            ""
        };
        writeln!(out, "latency average = {} ms{suffix}", f3(avg))?;
    }
    percentile_lines(out, "latency", &totals.latency, &opts.percentiles)?;
    if throttled {
        writeln!(
            out,
            "rate limit schedule lag: avg {} (max {}) ms",
            f3(0.001 * totals.lag.sums_us.sum / totals.transactions as f64),
            f3(0.001 * totals.lag.sums_us.max)
        )?;
    }
    if options.connect_per_transaction {
        writeln!(
            out,
            "average connection time = {} ms",
            f3(0.001 * r.connection_total_us as f64 / (totals.transactions + failures) as f64)
        )?;
        writeln!(out, "tps = {} (including reconnection times)", f6(r.tps))?;
    } else {
        writeln!(
            out,
            "initial connection time = {} ms",
            f3(0.001 * r.initial_connection_us as f64)
        )?;
        writeln!(out, "tps = {} (without initial connection time)", f6(r.tps))?;
    }

    let per_script = r.scripts.len() > 1;
    if per_script || opts.per_command {
        let total_weight: u64 = r.scripts.iter().map(|s| u64::from(s.weight)).sum();
        for (i, s) in r.scripts.iter().enumerate() {
            if per_script {
                script_section(r, opts, i, s, total_weight, total_cnt, bench_duration, out)?;
            }
            if opts.per_command {
                command_section(r, opts, s, per_script, out)?;
            }
        }
    }
    interrupted_line(r, out)
}

fn interrupted_line(r: &RunResult, out: &mut dyn Write) -> io::Result<()> {
    if r.interrupted {
        writeln!(
            out,
            "run interrupted: results cover only the transactions finished before the interruption"
        )?;
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn script_section(
    r: &RunResult,
    opts: &ReportOptions,
    i: usize,
    s: &ScriptResult,
    total_weight: u64,
    total_cnt: u64,
    bench_duration: f64,
    out: &mut dyn Write,
) -> io::Result<()> {
    let o = &r.options;
    let st = &s.stats;
    let script_total = st.total_cnt();
    writeln!(out, "SQL script {}: {}", i + 1, s.name)?;
    writeln!(
        out,
        " - weight: {} (targets {}% of total)",
        s.weight,
        f1(100.0 * f64::from(s.weight) / total_weight as f64)
    )?;
    let sections = |out: &mut dyn Write| -> io::Result<()> {
        failure_lines(
            out,
            " - ",
            st,
            script_total,
            opts.failures_detailed,
            opts.reconnect,
        )?;
        if o.max_tries != 1 {
            retry_lines(out, " - ", st, script_total)?;
        }
        Ok(())
    };
    if opts.compat == PgCompat::Pg17 {
        writeln!(
            out,
            " - {} transactions ({}% of total, tps = {})",
            st.transactions,
            f1(100.0 * st.transactions as f64 / r.totals.transactions as f64),
            f6(st.transactions as f64 / bench_duration)
        )?;
        sections(out)?;
        if o.rate_tps.is_some() && o.latency_limit_us.is_some() && script_total > 0 {
            writeln!(
                out,
                " - number of transactions skipped: {} ({}%)",
                st.skipped,
                pct(st.skipped, script_total)
            )?;
        }
    } else {
        writeln!(
            out,
            " - {} transactions ({}% of total)",
            script_total,
            f1(100.0 * script_total as f64 / total_cnt as f64)
        )?;
        if script_total > 0 {
            writeln!(
                out,
                " - number of transactions actually processed: {} (tps = {})",
                st.transactions,
                f6(st.transactions as f64 / bench_duration)
            )?;
            sections(out)?;
            if o.rate_tps.is_some() && o.latency_limit_us.is_some() {
                writeln!(
                    out,
                    " - number of transactions skipped: {} ({}%)",
                    st.skipped,
                    pct(st.skipped, script_total)
                )?;
            }
        }
    }
    simple_stats(out, " - latency", &st.latency.sums_us)?;
    percentile_lines(out, " - latency", &st.latency, &opts.percentiles)
}

fn command_section(
    r: &RunResult,
    opts: &ReportOptions,
    s: &ScriptResult,
    per_script: bool,
    out: &mut dyn Write,
) -> io::Result<()> {
    let retries = r.options.max_tries != 1;
    let prefix = if per_script { " - " } else { "" };
    let sep = if opts.compat == PgCompat::Pg17 {
        "  "
    } else {
        " "
    };
    writeln!(
        out,
        "{prefix}statement latencies in milliseconds{}:",
        if retries {
            ", failures and retries"
        } else {
            " and failures"
        }
    )?;
    for c in &s.commands {
        let l = &c.latency.sums_us;
        let avg = if l.count > 0 {
            0.001 * l.sum / l.count as f64
        } else {
            0.0
        };
        write!(
            out,
            "   {}  {:>10}",
            Fixed::new(avg, 3).width(11),
            c.failures
        )?;
        if retries {
            write!(out, "{sep}{:>10}", c.retries)?;
        }
        writeln!(out, "{sep}{}", c.first_line)?;
    }
    if !opts.percentiles.is_empty() {
        write!(
            out,
            "{prefix}statement latency percentiles in milliseconds ("
        )?;
        for (k, &p) in opts.percentiles.iter().enumerate() {
            write!(
                out,
                "{}{}",
                if k > 0 { " " } else { "" },
                PercentileLabel(p)
            )?;
        }
        writeln!(out, "):")?;
        for c in &s.commands {
            write!(out, "  ")?;
            for &p in &opts.percentiles {
                let v = c.latency.percentile(p).unwrap_or(0.0);
                write!(out, " {}", Fixed::new(v, 3).width(11))?;
            }
            writeln!(out, " {}", c.first_line)?;
        }
    }
    Ok(())
}
