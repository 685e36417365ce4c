//! `pgsurge replay --store[=LOCATION] [--set NAME]`: a replay kept as a run of an ad-hoc
//! set — its result columns (statements, their rate, the replayed latency, the lag),
//! the merged latency histogram, the whole fidelity report and the log's digest as
//! facts — so `results show`, `report` and `compare` find it like any other run.

use pgsurge_plan::{replay::workload_name, replay_record};
use pgsurge_replay::report::ReplayReport;
use pgsurge_store::{default_location, run_status, RunRecord, Store, TargetRecord};

use crate::adhoc::{adhoc_set, next_seq, DEFAULT_SET};

/// Stores `report`; returns the line the command prints (where it went).
/// `command_line` must hold no password; `target` names the server replayed onto.
pub fn store_replay(
    location: Option<&str>,
    set: Option<&str>,
    target: &str,
    command_line: &str,
    report: &ReplayReport,
) -> Result<String, String> {
    let location = location.map(str::to_owned).unwrap_or_else(default_location);
    let shown = pgsurge_store::redact_location(&location);
    let mut store = Store::open(&location).map_err(|e| format!("{shown}: {e}"))?;
    let name = set.unwrap_or(DEFAULT_SET);
    let set_id = adhoc_set(&mut store, name)?;
    let target_id = store
        .upsert_target(&TargetRecord {
            set_id,
            name: target.to_owned(),
            kind: "conninfo".into(),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
    let seq = next_seq(&mut store, set_id)?;
    let start = report.replay.start_time_unix_us as f64 / 1e6;
    let run = RunRecord {
        set_id,
        target_id: Some(target_id),
        test_key: format!("replay@{}#{seq}", pgsurge_store::epoch_to_rfc3339(start)),
        seq: Some(seq),
        repeat_no: 1,
        status: run_status::OK.into(),
        script: Some(replay_name(report)),
        scripts: Some(replay_record::scripts_json(report)),
        options: Some(serde_json::json!({ "replay": report.settings })),
        command_line: Some(pgsurge_store::redact_text(command_line)),
        ..Default::default()
    };
    let write = replay_record::record(report, run);
    let run_id = store.write_run(&write).map_err(|e| e.to_string())?;
    Ok(format!(
        "pgsurge: stored as run {run_id} in set {set_id} (\"{name}\") of {shown}"
    ))
}

/// `replay:FILE` (the first log's name) with its pace.
fn replay_name(report: &ReplayReport) -> String {
    let file = report
        .logs
        .first()
        .map(|l| {
            std::path::Path::new(&l.path)
                .file_name()
                .map(|f| f.to_string_lossy().into_owned())
                .unwrap_or_else(|| l.path.clone())
        })
        .unwrap_or_default();
    workload_name(&file, report.settings.max, report.settings.speed)
}
