//! A replay of PostgreSQL logs as one workload of a campaign's matrix
//! (`scripts = [{ replay = "prod.csv", speed = 2 }]`; the workload as the campaign file
//! names it is `pgsurge_plan::replay`): a test that replays the log onto the target
//! (every session as the target's user, on its database) and stores its report as
//! `pgsurge_plan::replay_record` makes it a run (as `pgsurge replay --store` does). The target's data is initialized again before each
//! test of a replay, as the campaign's `[init]` says, since a replay changes it; the
//! `before_test` hook restores data of the user's own.

use pgsurge_engine::StopFlag;
use pgsurge_replay::report::ReplayReport;
use pgsurge_store::RunWrite;

use crate::error::{CampaignError, Result};
use pgsurge_plan::replay::ReplayWorkload;
use pgsurge_plan::replay_record::{record, scripts_json};

/// Replays `workload` onto `conn`.
pub fn replay(
    workload: &ReplayWorkload,
    conn: &pgsurge_wire::ConnConfig,
    stop: &StopFlag,
) -> Result<ReplayReport> {
    pgsurge_engine::replay::replay(&workload.spec(conn), stop)
        .map_err(|e| CampaignError::Other(e.to_string()))
}

/// A campaign's test of a replay workload, onto `conn` (the target's benchmark
/// database): the replay, then its report into `w` (whose run record holds the test's
/// identity already).
pub fn run_test(
    workload: &ReplayWorkload,
    conn: &pgsurge_wire::ConnConfig,
    stop: &StopFlag,
    w: &mut RunWrite,
) -> Result<()> {
    let report = replay(workload, conn, stop)?;
    let recorded = record(&report, w.run.clone());
    w.run = recorded.run;
    w.run.scripts = Some(scripts_json(&report));
    w.run.command_line = Some(format!(
        "pgsurge replay{} --speed={} -d {} {}",
        if workload.max { " --max" } else { "" },
        workload.speed,
        conn.dbname(),
        workload.log.display()
    ));
    w.histograms = recorded.histograms;
    w.facts.extend(recorded.facts);
    Ok(())
}
