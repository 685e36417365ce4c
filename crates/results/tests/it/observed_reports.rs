//! Reproduce real pgbench 17/18 final reports byte for byte.
//!
//! Each file under `tests/data/observed/` is a recorded run (spec
//! `observed/exp*.txt`): the command line, then stdout. The test takes the run
//! *options* from the command line and the *measured numbers* (counts, sums
//! recovered from the printed means, the benchmark duration recovered from the
//! printed tps) from the report, builds a `RunResult`, renders it, and compares
//! the whole text. Which lines appear, their order, every percentage, the
//! duration-based average and the tps are computed by the renderer.

use std::collections::HashMap;
use std::path::Path;

use pgsurge_results::pgfmt::{f3, f6};
use pgsurge_results::{
    write_pgbench_report, CommandResult, LatencySummary, PgCompat, QueryMode, ReportOptions,
    RunOptions, RunResult, ScriptResult, SimpleStats, TxnSummary,
};

struct Cmd {
    opts: RunOptions,
    weights: Vec<u32>,
}

fn parse_cmd(line: &str) -> Cmd {
    let toks: Vec<&str> = line
        .trim_start_matches("$ pgbench")
        .split_whitespace()
        .collect();
    let mut o = RunOptions {
        clients: 1,
        threads: 1,
        max_tries: 1,
        ..Default::default()
    };
    let mut weights = Vec::new();
    let mut i = 0;
    let next = |i: &mut usize| {
        *i += 1;
        toks[*i]
    };
    let weight = |s: &str| {
        s.rsplit_once('@')
            .map_or(1, |(_, w)| w.parse().expect("weight"))
    };
    while i < toks.len() {
        let t = toks[i];
        let (key, val) = t.split_once('=').unwrap_or((t, ""));
        match key {
            "-c" => o.clients = next(&mut i).parse().expect("-c"),
            "-j" => o.threads = next(&mut i).parse().expect("-j"),
            "-t" => o.transactions_per_client = Some(next(&mut i).parse().expect("-t")),
            "-T" => o.duration_s = Some(next(&mut i).parse().expect("-T")),
            "-R" => o.rate_tps = Some(next(&mut i).parse().expect("-R")),
            "-L" => {
                let ms: f64 = next(&mut i).parse().expect("-L");
                o.latency_limit_us = Some((ms * 1000.0) as i64);
            }
            "-P" => o.progress_s = Some(next(&mut i).parse().expect("-P")),
            "-M" => {
                o.query_mode = match next(&mut i) {
                    "extended" => QueryMode::Extended,
                    "prepared" => QueryMode::Prepared,
                    _ => QueryMode::Simple,
                }
            }
            "-r" => o.report_per_command = true,
            "-C" => o.connect_per_transaction = true,
            "-l" => o.log = true,
            "-S" | "-N" => weights.push(1),
            "-b" | "-f" => weights.push(weight(next(&mut i))),
            "-s" | "-d" => {
                next(&mut i);
            }
            "--max-tries" => o.max_tries = val.parse().expect("--max-tries"),
            "--failures-detailed" => o.failures_detailed = true,
            "--progress-timestamp" => o.progress_timestamp = true,
            "--aggregate-interval" => o.aggregate_interval_s = Some(val.parse().expect("agg")),
            "--sampling-rate" => o.sampling_rate = Some(val.parse().expect("rate")),
            _ => {} // -n, -v, --log-prefix, --random-seed, --verbose-errors, ...
        }
        i += 1;
    }
    if weights.is_empty() {
        weights.push(1);
    }
    o.threads = o.threads.min(o.clients);
    if o.duration_s.is_none() && o.transactions_per_client.is_none() {
        o.transactions_per_client = Some(10);
    }
    Cmd { opts: o, weights }
}

/// Leading integer of `s` ("15 (37.500%)" → 15).
fn int(s: &str) -> u64 {
    s.split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("no integer in {s:?}"))
}

/// First number of `s` ("6.203 ms" → 6.203).
fn num(s: &str) -> f64 {
    s.split_whitespace()
        .next()
        .and_then(|d| d.parse().ok())
        .unwrap_or_else(|| panic!("no number in {s:?}"))
}

/// Sums that print back as `mean_ms` / `stddev_ms` for `count` values.
fn sums(count: u64, mean_ms: f64, stddev_ms: Option<f64>) -> SimpleStats {
    let (m, s) = (mean_ms * 1000.0, stddev_ms.unwrap_or(0.0) * 1000.0);
    let n = count as f64;
    SimpleStats {
        count,
        min: m,
        max: m,
        sum: m * n,
        sum2: (s * s + m * m) * n,
    }
}

fn latency(s: SimpleStats) -> LatencySummary {
    LatencySummary {
        sums_us: s,
        ..Default::default()
    }
}

/// The `key: value` / `key = value` lines of a report section.
fn fields<'a>(lines: &[&'a str], prefix: &str) -> HashMap<String, &'a str> {
    let mut m = HashMap::new();
    for l in lines {
        let Some(l) = l.strip_prefix(prefix) else {
            continue;
        };
        let cut = [": ", " = "]
            .iter()
            .filter_map(|sep| l.find(sep).map(|p| (p, sep.len())))
            .min();
        if let Some((p, n)) = cut {
            m.insert(l[..p].to_string(), &l[p + n..]);
        }
    }
    m
}

fn summary(f: &HashMap<String, &str>, measured: bool, throttled: bool) -> TxnSummary {
    let get = |k: &str| f.get(k).copied();
    let transactions = get("number of transactions actually processed").map_or(0, int);
    let failures = get("number of failed transactions").map_or(0, int);
    let deadlock = get("number of deadlock failures").map_or(0, int);
    let mut t = TxnSummary {
        transactions,
        failures,
        serialization_failures: failures - deadlock,
        deadlock_failures: deadlock,
        retried: get("number of transactions retried").map_or(0, int),
        retries: get("total number of retries").map_or(0, int),
        skipped: get("number of transactions skipped").map_or(0, int),
        ..Default::default()
    };
    if measured {
        if let Some(avg) = get("latency average") {
            t.latency = latency(sums(transactions, num(avg), get("latency stddev").map(num)));
        }
    }
    if throttled {
        if let Some(lag) = get("rate limit schedule lag") {
            // "avg 0.859 (max 2.261) ms"
            let w: Vec<&str> = lag.split_whitespace().collect();
            let mut s = sums(transactions, num(w[1]), None);
            s.max = num(w[3].trim_start_matches('(').trim_end_matches(')')) * 1000.0;
            t.lag = latency(s);
        }
    }
    t
}

/// Parse per-command lines (`   avg  failures [retries] first_line`).
fn commands(lines: &[&str], retries: bool, pg17: bool) -> Vec<CommandResult> {
    let sep = if pg17 { "  " } else { " " };
    lines
        .iter()
        .enumerate()
        .map(|(index, l)| {
            let nfields = if retries { 3 } else { 2 };
            let mut rest = l.trim_start();
            let mut vals = Vec::new();
            for _ in 0..nfields {
                let end = rest.find(' ').expect("field");
                vals.push(&rest[..end]);
                rest = rest[end..].trim_start_matches(' ');
            }
            // The text is everything after the last numeric field and its separator.
            let text_at = l.len() - rest.len();
            assert_eq!(&l[text_at - sep.len()..text_at], sep, "separator in {l:?}");
            let avg: f64 = vals[0].parse().expect("avg");
            CommandResult {
                index,
                first_line: rest.to_string(),
                latency: latency(sums(1, avg, None)),
                failures: vals[1].parse().expect("failures"),
                retries: if retries {
                    vals[2].parse().expect("retries")
                } else {
                    0
                },
            }
        })
        .collect()
}

fn is_command_line(l: &str) -> bool {
    l.starts_with("   ") && !l.starts_with("    - ")
}

/// Build the RunResult for one recorded run.
fn rebuild(cmd: &Cmd, report: &[&str], pg17: bool) -> RunResult {
    let o = &cmd.opts;
    let measured = o.rate_tps.is_some() || o.progress_s.is_some() || o.latency_limit_us.is_some();
    let throttled = o.rate_tps.is_some();
    let script_at: Vec<usize> = (0..report.len())
        .filter(|&i| report[i].starts_with("SQL script "))
        .collect();
    let head_end = script_at
        .first()
        .copied()
        .or_else(|| {
            report
                .iter()
                .position(|l| l.starts_with("statement latencies"))
        })
        .unwrap_or(report.len());
    let head = fields(&report[..head_end], "");
    let totals = summary(&head, measured, throttled);
    let retries = o.max_tries != 1;

    let mut scripts = Vec::new();
    if script_at.is_empty() {
        let cmds: Vec<&str> = report[head_end..]
            .iter()
            .copied()
            .filter(|l| is_command_line(l))
            .collect();
        scripts.push(ScriptResult {
            name: head["transaction type"].to_string(),
            weight: cmd.weights[0],
            commands: commands(&cmds, retries, pg17),
            ..Default::default()
        });
    } else {
        for (k, &start) in script_at.iter().enumerate() {
            let end = script_at.get(k + 1).copied().unwrap_or(report.len());
            let block = &report[start..end];
            let name = block[0].split_once(": ").expect("script name").1;
            let f = fields(block, " - ");
            let mut st = summary(&f, true, throttled);
            // " - 17 transactions (85.0% of total)" / PG17 "(…, tps = …)"
            let head_line = block
                .iter()
                .find(|l| {
                    !l.contains("weight")
                        && (l.ends_with("of total)") || l.contains("of total, tps"))
                })
                .expect("transactions line");
            let n = int(head_line.trim_start_matches(" - "));
            if pg17 {
                st.transactions = n;
            } else {
                st.transactions = f
                    .get("number of transactions actually processed")
                    .map_or(0, |v| int(v));
                st.skipped = n - st.transactions - st.failures;
            }
            if let Some(avg) = f.get("latency average") {
                st.latency = latency(sums(
                    st.transactions,
                    num(avg),
                    f.get("latency stddev").map(|v| num(v)),
                ));
            }
            let cmds: Vec<&str> = block
                .iter()
                .copied()
                .filter(|l| is_command_line(l))
                .collect();
            scripts.push(ScriptResult {
                name: name.to_string(),
                weight: cmd.weights[k],
                stats: st,
                commands: commands(&cmds, retries, pg17),
                ..Default::default()
            });
        }
    }

    let mut r = RunResult {
        transaction_type: head["transaction type"].to_string(),
        scale: int(head["scaling factor"]) as i64,
        partition_method: head.get("partition method").map(|s| s.to_string()),
        partitions: head.get("partitions").map_or(0, |p| int(p) as u32),
        options: o.clone(),
        totals,
        scripts,
        ..Default::default()
    };
    if let Some(c) = head.get("initial connection time") {
        r.initial_connection_us = (num(c) * 1000.0).round() as i64;
    }
    if let Some(c) = head.get("average connection time") {
        let n = r.totals.transactions + r.totals.failures;
        r.connection_total_us = (num(c) * 1000.0 * n as f64).round() as u64;
    }
    late_count(&mut r, &head);
    if let Some(tps) = head.get("tps") {
        let tps_str = tps.split(' ').next().expect("tps value");
        let avg = (!measured).then(|| head.get("latency average").map(|a| num(a)));
        r.bench_duration_us = find_duration(&r, tps_str, avg.flatten());
        r.tps = r.totals.transactions as f64 / (r.bench_duration_us as f64 / 1e6);
    }
    r
}

fn late_count(r: &mut RunResult, head: &HashMap<String, &str>) {
    if let Some((_, v)) = head
        .iter()
        .find(|(k, _)| k.starts_with("number of transactions above the"))
    {
        r.totals.late = int(v);
    }
}

/// The whole-µs benchmark duration that prints as `tps_str` (and as the
/// duration-based latency average, when that is printed).
fn find_duration(r: &RunResult, tps_str: &str, avg_ms: Option<f64>) -> i64 {
    let cnt = r.totals.transactions as f64;
    let tps: f64 = tps_str.parse().expect("tps");
    let est = (cnt * 1e6 / tps).round() as i64;
    let total_cnt = r.totals.total_cnt() as f64;
    (est - 5..=est + 5)
        .find(|&d| {
            let ok_tps = f6(cnt / (d as f64 / 1e6)).to_string() == tps_str;
            let ok_avg = match avg_ms {
                None => true,
                Some(a) => {
                    f3(0.001 * d as f64 * f64::from(r.options.clients) / total_cnt).to_string()
                        == f3(a).to_string()
                }
            };
            ok_tps && ok_avg
        })
        .unwrap_or_else(|| panic!("no duration near {est} µs prints tps {tps_str}"))
}

fn check(name: &str) {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("tests/data/observed/{name}.report"));
    let text = std::fs::read_to_string(&path).expect("observed transcript");
    let mut lines = text.lines();
    let cmd = parse_cmd(lines.next().expect("command line"));
    let banner = lines.next().expect("banner");
    let pg17 = banner.starts_with("pgbench (17");
    let report: Vec<&str> = lines.collect();
    let r = rebuild(&cmd, &report, pg17);
    let opts = ReportOptions {
        compat: if pg17 { PgCompat::Pg17 } else { PgCompat::Pg18 },
        ..ReportOptions::from_result(&r)
    };
    let mut out = Vec::new();
    write_pgbench_report(&r, &opts, &mut out).expect("render");
    let got = String::from_utf8(out).expect("utf8");
    let want: String = report.iter().map(|l| format!("{l}\n")).collect();
    assert_eq!(got, want, "report of {name} differs");
}

macro_rules! observed {
    ($($test:ident => $name:literal,)*) => {
        $( #[test] fn $test() { check($name); } )*
    };
}

observed! {
    pg18_per_command_r18 => "r18",
    pg18_multiple_scripts_with_retries => "multi18",
    pg18_all_aborted_stops_after_processed => "r1-18",
    pg18_multiple_scripts_all_aborted => "multi18-abort",
    pg18_serialization_failures_detailed => "ser18",
    pg17_default => "default",
    pg17_per_command_two_threads => "default-c2j2-r",
    pg17_duration_with_progress => "T2-P1",
    pg17_progress_timestamp => "progress-ts",
    pg17_rate => "rate",
    pg17_rate_and_latency_limit_skips => "rate-L",
    pg17_max_tries_failures_detailed => "max-tries",
    pg17_unlimited_tries => "max-tries0",
    pg17_multiple_scripts => "multi",
    pg17_multiple_scripts_rate_limit_detailed => "multi-fd",
    pg17_connect_per_transaction => "C",
    pg17_extended_mode => "S-extended",
    pg17_no_vacuum => "N-no-vacuum",
    pg17_log => "log",
    pg17_log_rate_limit_skips => "log-rate-L",
    pg17_aggregate => "agg",
    pg17_aggregate_rate_limit_tries => "agg2",
    pg17_log_rate_tries => "log-rate-tries",
    pg17_sampling => "sampling",
    pg17_serialization_one_try => "ser-1try",
    pg17_serialization_three_tries => "ser-3tries",
    pg17_verbose_errors_latency_limit => "ser-verbose",
    pg17_client_abort_partial => "abort",
    pg17_server_version_mismatch_partitions => "vmismatch",
    pg17_partitioned_scale2 => "run-part",
    pg17_aborted_nan_percent => "firstline",
    pg17_progress_rate_limit_retries => "prog",
    pg17_progress_two_threads => "prog-j",
}
