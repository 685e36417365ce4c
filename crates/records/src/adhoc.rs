//! `pgsurge bench --store[=LOCATION] [--set NAME]`: one ad-hoc run into a results
//! store, with what a campaign's test keeps of the client side — the result columns,
//! whole-run and per-script histograms, the per-second series with their histograms —
//! so `results show`, `report` and `compare` treat it like any other run. Server-side
//! sampling, counters and the environment manifest are a campaign's and are not taken.

use pgsurge_results::{IntervalSample, LatencyHistogram, RunResult};
use pgsurge_store::{
    convert, default_location, epoch_to_rfc3339, now_rfc3339, run_status, set_kind, set_status,
    RunFilter, RunRecord, RunWrite, SetRecord, Store, TargetRecord, GROUP_SPEC_HASH,
};

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
    /// `--group`: the distributed run this generator belongs to (a set of kind
    /// `group`, one run per generator index).
    pub group: Option<&'a str>,
    /// The database benchmarked: the target's name in the set.
    pub dbname: &'a str,
    /// The run as a pgbench command line (connection options only, no password).
    pub command_line: &'a str,
}

/// Checks, changing nothing, that the store at `location` (`None`: the default store)
/// can take a run — called before the benchmark, so a store that cannot take it (a
/// newer schema, another program's database, a missing directory, an unreachable
/// server) fails at once. Returns the one-line reason.
pub fn check_store(location: Option<&str>) -> Result<(), String> {
    let location = location.map(str::to_owned).unwrap_or_else(default_location);
    Store::check_writable(&location).map_err(|e| e.to_string())
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
    if let Some(group) = request.group {
        return store_generator_run(&mut store, &shown, group, request, result, samples);
    }
    let name = request.set.unwrap_or(DEFAULT_SET);
    let set_id = adhoc_set(&mut store, name)?;
    let target_id = store
        .upsert_target(&TargetRecord {
            set_id,
            name: request.dbname.to_owned(),
            kind: "conninfo".into(),
            server_version: result.server_version.clone(),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
    let seq = next_seq(&mut store, set_id)?;
    let write = run_write(set_id, target_id, seq, request, result, samples);
    let run_id = store.write_run(&write).map_err(|e| e.to_string())?;
    Ok(format!(
        "pgsurge: stored as run {run_id} in set {set_id} (\"{name}\") of {shown}"
    ))
}

/// The ad-hoc set named `name`, created on first use.
pub(crate) fn adhoc_set(store: &mut Store, name: &str) -> Result<i64, String> {
    match store
        .find_set(set_kind::ADHOC, name, ADHOC_SPEC_HASH)
        .map_err(|e| e.to_string())?
    {
        Some(set) => Ok(set.id),
        None => store
            .create_set(&SetRecord {
                name: name.to_owned(),
                kind: set_kind::ADHOC.into(),
                description: Some(
                    "runs stored by pgsurge bench --store or pgsurge replay --store".into(),
                ),
                spec_hash: Some(ADHOC_SPEC_HASH.into()),
                status: set_status::COMPLETE.into(),
                created_at: now_rfc3339(),
                ..Default::default()
            })
            .map_err(|e| e.to_string()),
    }
}

/// The position of the next run of set `set_id` (from 1).
pub(crate) fn next_seq(store: &mut Store, set_id: i64) -> Result<i64, String> {
    Ok(store
        .list_runs(&RunFilter {
            set_id: Some(set_id),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?
        .len() as i64
        + 1)
}

/// `bench --store --group NAME`: the run as generator `index` of the group's set,
/// created by whichever generator comes first (in one exclusive transaction, so
/// generators finishing together share it). A second run with the same index is
/// refused by the store (a group holds each generator once), and so is a generator
/// whose `--generator-count` is not the group's.
fn store_generator_run(
    store: &mut Store,
    shown: &str,
    group: &str,
    request: &AdhocRun<'_>,
    result: &RunResult,
    samples: &[(IntervalSample, LatencyHistogram)],
) -> Result<String, String> {
    let generator = result
        .generator
        .as_ref()
        .ok_or("--group needs the generator options (--generator-index, --generator-count)")?;
    let (Some(index), Some(count)) = (generator.index, generator.count) else {
        return Err("--group needs --generator-index and --generator-count".into());
    };
    let (set_id, target_id) = store
        .find_or_create_set_with_target(
            &SetRecord {
                name: group.to_owned(),
                kind: set_kind::GROUP.into(),
                description: Some(format!(
                    "distributed run of {count} generators stored by pgsurge bench --group"
                )),
                spec_hash: Some(GROUP_SPEC_HASH.into()),
                planned_tests: Some(i64::from(count)),
                status: set_status::RUNNING.into(),
                created_at: now_rfc3339(),
                ..Default::default()
            },
            &TargetRecord {
                name: request.dbname.to_owned(),
                kind: "conninfo".into(),
                server_version: result.server_version.clone(),
                ..Default::default()
            },
        )
        .map_err(|e| e.to_string())?;
    // One group is one run: every generator gives the same --generator-count, the
    // one the group was created with.
    let planned = store
        .set(set_id)
        .map_err(|e| e.to_string())?
        .record
        .planned_tests;
    if let Some(n) = planned.filter(|&n| n != i64::from(count)) {
        return Err(format!(
            "group \"{group}\" is a run of {n} generators (--generator-count {n}); \
             this is generator {index} of {count}"
        ));
    }
    let mut write = run_write(
        set_id,
        target_id,
        i64::from(index) + 1,
        request,
        result,
        samples,
    );
    write.run.test_key = pgsurge_store::generator_test_key(index, count);
    let run_id = store.write_run(&write).map_err(|e| match e {
        pgsurge_store::StoreError::DuplicateTest { .. } => format!(
            "group \"{group}\" already holds generator {index} of {count} (each index once)"
        ),
        other => other.to_string(),
    })?;
    Ok(format!(
        "pgsurge: stored as run {run_id}, generator {index} of {count} in group \"{group}\" (set {set_id}) of {shown}"
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
        profiles: convert::profiles(result),
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
