//! What the runner stores besides a test's result: the record of a test that failed
//! before it ran, passwords masked (the campaign file as kept with its set is
//! `pgsurge_plan::stored`'s).

use std::collections::BTreeMap;

use pgsurge_store::{run_status, Store, TargetRecord};

use crate::error::Result;
use crate::matrix::TestPlan;
use crate::target::LiveTarget;

/// `shared_buffers=1GB, work_mem=4MB`.
pub(super) fn settings_label(settings: &[(String, String)]) -> String {
    settings
        .iter()
        .map(|(n, v)| format!("{n}={v}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// A failed test whose throwaway target did not start: stored against the target's
/// row (created bare when the target never started in this set).
pub(super) fn failed_write_unstarted(
    store: &mut Store,
    set_id: i64,
    tspec: &crate::spec::TargetSpec,
    plan: &TestPlan,
    error: &str,
) -> Result<pgsurge_store::RunWrite> {
    let existing = store
        .targets(set_id)?
        .into_iter()
        .find(|t| t.record.name == tspec.name)
        .map(|t| t.id);
    let target_id = match existing {
        Some(id) => id,
        None => store.upsert_target(&TargetRecord {
            set_id,
            name: tspec.name.clone(),
            server_id: None,
            kind: "throwaway".into(),
            conninfo: None,
            bin_dir: None,
            server_version: None,
            server_version_num: None,
            settings: Some(serde_json::Value::Object(
                tspec
                    .settings_text()
                    .into_iter()
                    .map(|(k, v)| (k, serde_json::Value::String(v)))
                    .collect(),
            )),
        })?,
    };
    Ok(failed_record(set_id, target_id, &tspec.name, plan, error))
}

/// A failed test that never ran (its target could not be prepared).
pub(super) fn failed_write(
    set_id: i64,
    target: &LiveTarget,
    plan: &TestPlan,
    error: &str,
) -> pgsurge_store::RunWrite {
    let mut w = failed_record(set_id, target.target_id, &target.name, plan, error);
    w.environment = Some(target.manifest.clone());
    w.facts = target.facts.clone();
    w
}

/// The record of a test that failed before it ran.
pub(super) fn failed_record(
    set_id: i64,
    target_id: i64,
    target_name: &str,
    plan: &TestPlan,
    error: &str,
) -> pgsurge_store::RunWrite {
    let now = pgsurge_store::now_epoch();
    pgsurge_store::RunWrite {
        run: pgsurge_store::RunRecord {
            set_id,
            target_id: Some(target_id),
            test_key: plan.key.clone(),
            seq: Some(plan.seq as i64),
            repeat_no: i64::from(plan.repeat),
            status: run_status::FAILED.into(),
            error: Some(error.to_string()),
            started_at: Some(pgsurge_store::epoch_to_rfc3339(now)),
            start_epoch: Some(now),
            scale: Some(i64::from(plan.scale)),
            clients: Some(i64::from(plan.clients)),
            // The cell's swept dimensions, so the failure shows in its cell.
            query_mode: plan.query_mode.clone(),
            threads: plan.threads.map(|j| i64::from(j.min(plan.clients))),
            options: Some(serde_json::json!({
                "target": target_name,
                "settings": plan.settings.iter().cloned().collect::<BTreeMap<_, _>>(),
                "threads_dimension": plan.threads,
            })),
            ..Default::default()
        },
        ..Default::default()
    }
}
