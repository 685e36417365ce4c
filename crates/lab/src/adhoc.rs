//! `pgsurge bench --store[=LOCATION] [--set NAME]`: one ad-hoc run into a results
//! store, with what a campaign's test keeps of the client side — the result columns,
//! whole-run and per-script histograms, the per-second series with their histograms —
//! so `results show`, `report` and `compare` treat it like any other run. Server-side
//! sampling, counters and the environment manifest are a campaign's and are not taken.

use pgsurge_results::{IntervalSample, LatencyHistogram, RunResult};
use pgsurge_store::{
    default_location, epoch_to_rfc3339, now_rfc3339, run_status, set_kind, set_status, RunFilter,
    RunRecord, RunWrite, SetRecord, Store, TargetRecord,
};

use crate::convert;

/// The set ad-hoc runs go to without `--set`.
pub const DEFAULT_SET: &str = "adhoc";

/// Marks the sets `bench --store` creates (there is no campaign file to hash).
const ADHOC_SPEC_HASH: &str = "bench --store";

/// Where and how `bench --store` stores a run (the binary fills it from the
/// command line; this crate does not read pgbench options).
#[derive(Debug, Clone, Copy)]
pub struct AdhocRun<'a> {
    /// Store location; `None`: the default store.
    pub location: Option<&'a str>,
    /// Set name; `None`: [`DEFAULT_SET`].
    pub set: Option<&'a str>,
    /// The database benchmarked: the target's name in the set.
    pub dbname: &'a str,
    /// The run as a pgbench command line (connection options only, no password).
    pub command_line: &'a str,
}

/// Stores the run; returns the line `bench` prints (where it went). The set is
/// created on first use and reused afterwards; each run gets a new test key.
pub fn store_bench_run(
    request: &AdhocRun<'_>,
    result: &RunResult,
    samples: &[(IntervalSample, LatencyHistogram)],
) -> Result<String, String> {
    let location = request
        .location
        .map(str::to_owned)
        .unwrap_or_else(default_location);
    let shown = pgsurge_store::redact_location(&location);
    let mut store = Store::open(&location).map_err(|e| format!("{shown}: {e}"))?;
    let name = request.set.unwrap_or(DEFAULT_SET);
    let set_id = match store
        .find_set(set_kind::ADHOC, name, ADHOC_SPEC_HASH)
        .map_err(|e| e.to_string())?
    {
        Some(set) => set.id,
        None => store
            .create_set(&SetRecord {
                name: name.to_owned(),
                kind: set_kind::ADHOC.into(),
                description: Some("runs stored by pgsurge bench --store".into()),
                spec_hash: Some(ADHOC_SPEC_HASH.into()),
                status: set_status::COMPLETE.into(),
                created_at: now_rfc3339(),
                ..Default::default()
            })
            .map_err(|e| e.to_string())?,
    };
    let target_id = store
        .upsert_target(&TargetRecord {
            set_id,
            name: request.dbname.to_owned(),
            kind: "conninfo".into(),
            server_version: result.server_version.clone(),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
    let seq = store
        .list_runs(&RunFilter {
            set_id: Some(set_id),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?
        .len() as i64
        + 1;
    let write = run_write(set_id, target_id, seq, request, result, samples);
    let run_id = store.write_run(&write).map_err(|e| e.to_string())?;
    Ok(format!(
        "pgsurge: stored as run {run_id} in set {set_id} (\"{name}\") of {shown}"
    ))
}

fn run_write(
    set_id: i64,
    target_id: i64,
    seq: i64,
    request: &AdhocRun<'_>,
    result: &RunResult,
    samples: &[(IntervalSample, LatencyHistogram)],
) -> RunWrite {
    let o = &result.options;
    let start = result.start_time_unix_us as f64 / 1e6;
    let end = result.end_time_unix_us as f64 / 1e6;
    let mut run = RunRecord {
        set_id,
        target_id: Some(target_id),
        // Unique within the set: the start time, then the position.
        test_key: format!("bench@{}#{seq}", epoch_to_rfc3339(start)),
        seq: Some(seq),
        repeat_no: 1,
        status: if result.aborted {
            run_status::ABORTED.into()
        } else {
            run_status::OK.into()
        },
        started_at: Some(epoch_to_rfc3339(start)),
        finished_at: Some(epoch_to_rfc3339(end)),
        start_epoch: Some(start),
        end_epoch: Some(end),
        script: Some(result.transaction_type.clone()),
        command_line: Some(request.command_line.to_owned()),
        seed: o.random_seed.map(|s| s.to_string()),
        scale: Some(result.scale),
        clients: Some(i64::from(o.clients)),
        threads: Some(i64::from(o.threads)),
        rate: o.rate_tps,
        latency_limit_ms: o.latency_limit_us.map(|us| us as f64 / 1000.0),
        duration_s: o.duration_s.map(f64::from),
        transactions_per_client: o.transactions_per_client.map(i64::from),
        query_mode: Some(o.query_mode.name().to_owned()),
        server_version: result.server_version.clone(),
        ..Default::default()
    };
    convert::fill_run(&mut run, result);
    let mut write = RunWrite {
        run,
        histograms: convert::histograms(result),
        ..Default::default()
    };
    for (sample, histogram) in samples {
        let interval = convert::interval(sample, false, 0.0);
        write
            .interval_histograms
            .extend(convert::interval_histogram(&interval, histogram));
        write.intervals.push(interval);
    }
    write
}
