//! What the tests of stores written through the store's API share: a campaign set, a
//! throwaway target in it, a finished select-only run as a campaign stores it (one
//! repeat of a cell of 8 clients among others), and
//! `pgsurge` run without a server (on a store).

use std::process::Command;

use pgsurge_store::{RunRecord, SetRecord, Store, TargetRecord};

/// A complete campaign set named `name`, created at `created_at` (RFC 3339).
pub fn campaign_set(store: &mut Store, name: &str, created_at: &str) -> i64 {
    store
        .create_set(&SetRecord {
            name: name.into(),
            kind: "campaign".into(),
            status: "complete".into(),
            created_at: created_at.into(),
            ..Default::default()
        })
        .unwrap()
}

/// A throwaway target named `name` of set `set_id`.
pub fn throwaway_target(store: &mut Store, set_id: i64, name: &str) -> i64 {
    store
        .upsert_target(&TargetRecord {
            set_id,
            name: name.into(),
            kind: "throwaway".into(),
            ..Default::default()
        })
        .unwrap()
}

/// A 60-s select-only run at scale 1 that ended well, with `clients` clients at `tps`
/// (its latency as the clients and the rate imply), repeat `repeat` of test `key`.
pub fn select_only_run(
    set_id: i64,
    target_id: i64,
    key: String,
    repeat: i64,
    start_epoch: f64,
    clients: i64,
    tps: f64,
) -> RunRecord {
    RunRecord {
        set_id,
        target_id: Some(target_id),
        test_key: key,
        repeat_no: repeat,
        status: "ok".into(),
        start_epoch: Some(start_epoch),
        script: Some("select-only".into()),
        scale: Some(1),
        clients: Some(clients),
        threads: Some(1),
        duration_s: Some(60.0),
        query_mode: Some("simple".into()),
        tps: Some(tps),
        transactions: Some((tps * 60.0) as i64),
        failures: Some(0),
        latency_mean_ms: Some(1000.0 * clients as f64 / tps),
        ..Default::default()
    }
}

/// Repeat `repeat` of target `target`'s select-only cell with 8 clients at `tps`, as
/// [`select_only_run`] stores it, its start 100 s after the repeat before.
pub fn repeat_run(set_id: i64, target_id: i64, target: &str, repeat: i64, tps: f64) -> RunRecord {
    select_only_run(
        set_id,
        target_id,
        format!("{target}/s1/select-only/c8/r-/{repeat}"),
        repeat,
        1_790_000_000.0 + (repeat * 100) as f64,
        8,
        tps,
    )
}

/// Runs `pgsurge ARGS`: its exit status, stdout and stderr.
pub fn pgsurge(args: &[&str]) -> (i32, String, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_pgsurge"))
        .args(args)
        .output()
        .unwrap();
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}
