//! The hooks the runner calls: `set_start` once per invocation, `before_test` and
//! `after_test` around each test, with their environment and the warning of a hook that
//! left processes running (running a hook is `crate::hooks`).

use pgsurge_events::store_writer::HOOK_LEFTOVER;
use pgsurge_events::{Emitter, Event};
use pgsurge_store::{now_rfc3339, WarningRecord};

use super::state::RunCtx;
use crate::error::{CampaignError, Result};
use crate::hooks;
use crate::matrix::TestPlan;
use crate::spec::Campaign;
use crate::target::LiveTarget;

/// The warning stored with a test whose hook left processes running.
pub(super) fn hook_warning(o: &hooks::HookOutcome) -> Option<WarningRecord> {
    o.leftover_warning().map(|message| WarningRecord {
        code: HOOK_LEFTOVER.into(),
        message,
        created_at: now_rfc3339(),
        ..Default::default()
    })
}

/// The environment of a hook: the set, and the test and its target when there is one.
pub(super) fn hook_env(
    set_id: i64,
    test: Option<(&TestPlan, &LiveTarget, &str)>,
) -> Vec<(String, String)> {
    let mut env = vec![("PGSURGE_SET_ID".to_string(), set_id.to_string())];
    let Some((plan, target, workload)) = test else {
        return env;
    };
    let mut put = |k: &str, v: String| env.push((k.to_string(), v));
    put("PGSURGE_TEST_KEY", plan.key.clone());
    put("PGSURGE_TARGET", target.name.clone());
    put("PGSURGE_SCALE", plan.scale.to_string());
    put("PGSURGE_CLIENTS", plan.clients.to_string());
    put("PGSURGE_REPEAT", plan.repeat.to_string());
    put("PGSURGE_SCRIPT", workload.to_string());
    // Where the server is, without its password (a hook uses ~/.pgpass for that): the
    // test's server, whatever the launching shell's PG* variables say.
    let cfg = &target.conn;
    // Every host of a multi-host string (a primary and its standbys), as libpq takes them.
    let hosts: Vec<&str> = cfg.hosts().iter().map(|h| h.display_host()).collect();
    put("PGHOST", hosts.join(","));
    if let Some(attrs) = cfg.get("target_session_attrs") {
        put("PGTARGETSESSIONATTRS", attrs.to_string());
    }
    if let Some(addr) = cfg.hosts().first().and_then(|h| h.hostaddr.clone()) {
        put("PGHOSTADDR", addr);
    }
    put("PGPORT", cfg.port());
    put("PGDATABASE", cfg.dbname().to_string());
    put("PGUSER", cfg.user().to_string());
    if let Some(c) = &target.cluster {
        put("PGDATA", c.data_dir().display().to_string());
    }
    if let Some(bin) = &target.bin_dir {
        put("PGSURGE_BIN_DIR", bin.clone());
    }
    env
}

/// Runs the `set_start` hook once per invocation, and tells so (the store keeps the
/// warning of processes it left running); its facts go with every test it preceded.
pub(super) fn run_set_start_hook(
    campaign: &Campaign,
    events: &mut Emitter<'_>,
    ctx: &mut RunCtx<'_>,
) -> Result<Vec<pgsurge_store::FactRecord>> {
    if let Some(facts) = &ctx.set_start_facts {
        return Ok(facts.clone());
    }
    let spec = &campaign.spec;
    let mut facts = Vec::new();
    if let Some(cmd) = &spec.hooks.set_start {
        let what = "running the set_start hook";
        events.emit(Event::Doing { test: None, what })?;
        let secrets: Vec<String> = spec
            .targets
            .iter()
            .filter_map(|t| t.conninfo.as_deref())
            .flat_map(pgsurge_wire::redact::passwords)
            .collect();
        let o = hooks::run_hook_masking(
            "set_start",
            cmd,
            &hook_env(ctx.set_id, None),
            spec.hooks.timeout(),
            &secrets,
        );
        let (failure, leftover) = ((!o.ok()).then(|| o.failure()), o.leftover_warning());
        events.emit(Event::HookRan {
            hook: "set_start",
            test: None,
            failure: failure.as_deref(),
            leftover: leftover.as_deref(),
        })?;
        if !o.ok() {
            return Err(CampaignError::Other(o.failure()));
        }
        facts = o.facts();
    }
    ctx.set_start_facts = Some(facts.clone());
    Ok(facts)
}

/// A hook of one test, with the target's password masked in what it prints.
pub(super) fn run_test_hook(
    name: &'static str,
    cmd: &str,
    env: &[(String, String)],
    campaign: &Campaign,
    target: &LiveTarget,
) -> hooks::HookOutcome {
    let secrets = pgsurge_wire::redact::passwords(&target.conninfo);
    hooks::run_hook_masking(name, cmd, env, campaign.spec.hooks.timeout(), &secrets)
}
