//! `[hygiene]` before a test: the history emptied, VACUUM ANALYZE, CHECKPOINT, statistics
//! reset, the OS page cache dropped; a step the role or the host does not allow is
//! skipped and said as a warning of the test.

use pgsurge_observe::{pgstats, Pg};
use pgsurge_store::RunWrite;

use crate::error::Result;
use crate::execute::{warning, TestSetup};
use crate::target::LiveTarget;

/// `[hygiene]` before a test: the history emptied, VACUUM ANALYZE, CHECKPOINT (said
/// when the role may not), statistics reset.
pub(crate) fn before_test(
    s: &TestSetup<'_>,
    target: &LiveTarget,
    pg: &mut Pg,
    w: &mut RunWrite,
) -> Result<()> {
    let plan = s.plan;
    let hygiene = &s.campaign.spec.hygiene;
    // pgbench's history table is pgbench's; a workload pack's tables, or a replay's,
    // are all vacuumed.
    let pack = s.workload.pack.is_some() || s.workload.replay.is_some();
    if hygiene.truncate_history && !pack {
        pg.exec("TRUNCATE pgbench_history")?;
    }
    if hygiene.vacuum {
        pg.exec(if pack {
            "VACUUM ANALYZE"
        } else {
            "VACUUM ANALYZE pgbench_branches, pgbench_tellers, pgbench_accounts, pgbench_history"
        })?;
    }
    if hygiene.checkpoint {
        // CHECKPOINT needs a superuser (or, from PostgreSQL 15, pg_checkpoint): a role
        // without it still benchmarks, with the skipped step said.
        let allowed = pg.value(
            "SELECT rolsuper OR EXISTS (SELECT 1 FROM pg_roles c \
             WHERE c.rolname = 'pg_checkpoint' AND pg_has_role(current_user, c.oid, 'MEMBER')) \
             FROM pg_roles WHERE rolname = current_user",
        )?;
        if allowed.as_deref() == Some("t") {
            pg.exec("CHECKPOINT")?;
        } else {
            w.warnings.push(warning(
                "checkpoint_skipped",
                format!(
                    "test {}: CHECKPOINT skipped before the test: role \"{}\" may not run it \
                     (it needs superuser or pg_checkpoint), so buffers dirtied by earlier \
                     tests may be written during this one",
                    plan.key,
                    pg.value("SELECT current_user")?.unwrap_or_default()
                ),
            ));
        }
    }
    if hygiene.resets_stats(target.cluster.is_some()) {
        pg.exec(&pgstats::reset_sql(target.version_num))?;
    }
    if hygiene.drop_caches {
        if let Err(why) = drop_os_caches() {
            w.warnings.push(warning(
                "drop_caches_skipped",
                format!(
                    "test {}: the OS page cache was not dropped before the test: {why}",
                    plan.key
                ),
            ));
        }
    }
    Ok(())
}

/// `sync`, then `echo 3 > /proc/sys/vm/drop_caches`: the next test reads from disk.
fn drop_os_caches() -> std::result::Result<(), String> {
    if !rustix::process::geteuid().is_root() {
        return Err("dropping it needs root".into());
    }
    rustix::fs::sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
        .map_err(|e| format!("/proc/sys/vm/drop_caches: {e}"))
}
