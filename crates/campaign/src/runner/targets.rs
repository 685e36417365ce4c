//! A target's life in a campaign: started (or restarted for a swept setting, or replaced
//! by `fresh_cluster`), recorded with the set, its existing server held, its data loaded
//! at a test's scale, and stopped.

use std::time::Duration;

use pgsurge_engine::StopFlag;
use pgsurge_events::{Emitter, Event};
use pgsurge_observe::hostmetrics::HostSource;
use pgsurge_store::{ServerRecord, TargetRecord};

use super::state::{LoopState, RunCtx, Sink, TestAt};
use super::storing::{failed_write, failed_write_unstarted, settings_label};
use crate::error::Result;
use crate::pinning::Pinning;
use crate::spec::Campaign;
use crate::target::LiveTarget;
use crate::target_lock::holder_label;
use crate::{target, target_lock};

/// The `servers` row of a target's host, from its manifest (which describes the server
/// host from the target's metrics source). None when the server host is not known:
/// the client's machine is never recorded as the server's.
pub fn server_record(manifest: &serde_json::Value) -> Option<ServerRecord> {
    let hostname = manifest["hostname"].as_str()?.to_string();
    let mut details = manifest.clone();
    if let Some(o) = details.as_object_mut() {
        o.remove("server");
        o.remove("client");
    }
    Some(ServerRecord {
        name: hostname.clone(),
        hostname: Some(hostname),
        cpu_model: manifest["cpu"]["model"].as_str().map(str::to_string),
        cpu_count: manifest["cpu"]["count"].as_i64(),
        memory_bytes: manifest["memory_bytes"].as_i64(),
        kernel: manifest["kernel"].as_str().map(str::to_string),
        os_release: manifest["os_release"].as_str().map(str::to_string),
        details: Some(details),
    })
}

/// Seconds per scale unit an initialization is first assumed to take (then measured).
pub(super) const INIT_S_PER_SCALE: f64 = 0.5;

/// Takes a started target out of its slot and stops its server when it is a throwaway
/// one (dropping it would too; this stops it now, before what comes next), and tells so.
pub(super) fn stop_target(slot: &mut Option<LiveTarget>, events: &mut Emitter<'_>) -> Result<()> {
    if let Some(t) = slot.take() {
        if let Some(c) = &t.cluster {
            c.stop();
        }
        for r in &t.replicas {
            r.stop();
        }
        events.emit(Event::TargetStopped { target: &t.name })?;
    }
    Ok(())
}

/// Starts the test's target when it is not running, or restarts a throwaway one for
/// the next value of a swept setting. False when the test was stored as failed
/// (the server refused the setting's value).
pub(super) fn start_target(
    campaign: &Campaign,
    at: &TestAt<'_>,
    live: &mut [Option<LiveTarget>],
    state: &mut LoopState,
    sink: &mut Sink<'_, '_>,
) -> Result<bool> {
    let spec = &campaign.spec;
    let plan = at.plan;
    let level = campaign.level_of(plan.repeat);
    let replaced = live[plan.target]
        .as_ref()
        .filter(|t| t.cluster.is_some())
        .is_some_and(|t| pgsurge_plan::restarts::replaced(campaign, &running(t), plan));
    if replaced {
        // A new throwaway server: a new data directory, initdb, the data loaded again.
        stop_target(&mut live[plan.target], sink.events)?;
    }
    if live[plan.target].is_some() {
        return Ok(true);
    }
    let tspec = &spec.targets[plan.target];
    let (pinning, relayed) = (Pinning::of(&spec.pinning)?, campaign.relays_replication());
    let build = campaign.build_of(&tspec.name, level.0);
    let asked = std::time::Instant::now();
    sink.doing(at, &format!("starting target \"{}\"", tspec.name))?;
    let swept = tspec.is_throwaway() && !plan.settings.is_empty();
    let refused = swept
        .then(|| state.not_started.get(&(plan.target, plan.settings.clone())))
        .flatten();
    if let Some(why) = refused {
        // The server refused these values already: their other tests fail alike.
        let write = failed_write_unstarted(sink.events.store(), sink.set_id, tspec, plan, why)?;
        sink.fail(at, write, true)?;
        return Ok(false);
    }
    let mut live_target = if swept {
        let mut with = tspec.clone();
        for (name, value) in &plan.settings {
            with.settings
                .insert(name.clone(), toml::Value::String(value.clone()));
        }
        match target::start(&with, &spec.run.database, (build, relayed), &pinning) {
            Ok(mut t) => {
                t.swept_settings = plan.settings.clone();
                t
            }
            Err(e) => {
                // A swept value the server rejects (`shared_buffers = "banana"`) fails
                // the tests of that value, with the server's message; the campaign goes
                // on with the others.
                let why = format!(
                    "target \"{}\" did not start with {}: {e}",
                    tspec.name,
                    settings_label(&plan.settings)
                );
                let store = sink.events.store();
                let write = failed_write_unstarted(store, sink.set_id, tspec, plan, &why)?;
                sink.fail(at, write, true)?;
                state
                    .not_started
                    .insert((plan.target, plan.settings.clone()), why);
                return Ok(false);
            }
        }
    } else {
        target::start(tspec, &spec.run.database, (build, relayed), &pinning)?
    };
    live_target.level = level;
    if tspec.is_throwaway() {
        let took = asked.elapsed().as_secs_f64();
        (live_target.facts).push(pgsurge_store::FactRecord::new(
            pgsurge_store::facts::START_SECONDS,
            format!("{took:.2}"),
        ));
    }
    record_started_target(tspec, &mut live_target, sink)?;
    live[plan.target] = Some(live_target);
    Ok(true)
}

/// What [`pgsurge_plan::restarts::replaced`] decides a running server's replacement by.
fn running(t: &LiveTarget) -> pgsurge_plan::restarts::Running<'_> {
    pgsurge_plan::restarts::Running {
        settings: &t.swept_settings,
        level: t.level,
        faulted: t.faulted,
        tests_done: t.tests_done,
        scale: t.current_data.as_ref().map(|d| d.scale),
    }
}

/// Stores the target (and its server) with the set, and tells it started: where its
/// host metrics come from, its warnings.
pub(super) fn record_started_target(
    tspec: &crate::spec::TargetSpec,
    live_target: &mut LiveTarget,
    sink: &mut Sink<'_, '_>,
) -> Result<()> {
    let store = sink.events.store();
    let server_id = match server_record(&live_target.manifest) {
        Some(r) => Some(store.upsert_server(&r)?),
        None => None,
    };
    live_target.target_id = store.upsert_target(&TargetRecord {
        set_id: sink.set_id,
        name: live_target.name.clone(),
        server_id,
        kind: if tspec.is_throwaway() {
            "throwaway"
        } else {
            "conninfo"
        }
        .into(),
        conninfo: Some(live_target.conninfo.clone()),
        bin_dir: live_target.bin_dir.clone(),
        server_version: Some(live_target.server_version.clone()),
        server_version_num: Some(i64::from(live_target.version_num)),
        settings: Some(serde_json::Value::Object(
            tspec
                .settings_text()
                .into_iter()
                .map(|(k, v)| (k, serde_json::Value::String(v)))
                .collect(),
        )),
    })?;
    let host_metrics = match &live_target.host_source {
        HostSource::None(why) => format!("{} ({why})", live_target.host_source.name()),
        source => source.name().to_string(),
    };
    let warnings: Vec<String> = live_target
        .warnings
        .iter()
        .map(|(_, w)| w.clone())
        .collect();
    sink.events.emit(Event::TargetStarted {
        target: &live_target.name,
        settings: &settings_label(&live_target.swept_settings),
        host_metrics: &host_metrics,
        warnings: &warnings,
    })?;
    Ok(())
}

/// For an existing server: holds its lock (lost with a restarted server, or never
/// taken while it was down) and checks the swept settings a session can change.
/// False when the test was stored as failed.
pub(super) fn hold_existing_server(
    campaign: &Campaign,
    at: &TestAt<'_>,
    target: &mut LiveTarget,
    ctx: &mut RunCtx<'_>,
    sink: &mut Sink<'_, '_>,
) -> Result<bool> {
    let plan = at.plan;
    if campaign.spec.targets[plan.target].conninfo.is_none() {
        return Ok(true);
    }
    let holder = holder_label(&campaign.spec.campaign.name);
    let lock = &mut ctx.locks[plan.target];
    let ready = target_lock::hold(lock, &target.conn, &target.name, &holder)
        .and_then(|()| target::check_session_settings(target, &plan.settings));
    match ready {
        Ok(()) => Ok(true),
        Err(busy) => {
            let write = failed_write(sink.set_id, target, plan, &busy);
            sink.fail(at, write, true)?;
            Ok(false)
        }
    }
}

/// How loading a test's scale went.
pub(super) enum Loaded {
    /// Loaded now, or earlier in this invocation: the facts to store with the test.
    Facts(Vec<pgsurge_store::FactRecord>),
    /// The load failed; the test is stored as failed.
    Failed,
    /// Ctrl-C during the load.
    Stopped,
}

/// Loads the test's data (pgbench's tables, or its workload pack's) at its scale unless
/// the target holds it already from an earlier test.
pub(super) fn load_scale(
    campaign: &Campaign,
    at: &TestAt<'_>,
    workload: &crate::matrix::Workload,
    target: &mut LiveTarget,
    state: &mut LoopState,
    stop: &StopFlag,
    sink: &mut Sink<'_, '_>,
) -> Result<Loaded> {
    let plan = at.plan;
    let init = campaign.spec.init.for_scale(plan.scale);
    let wanted = workload.dataset(plan.scale);
    if !pgsurge_plan::reloads::checks(target.current_data.as_ref(), &wanted) {
        return Ok(Loaded::Facts(
            target::InitOutcome {
                performed: false,
                reason: format!(
                    "scale {} was prepared for an earlier test of this invocation",
                    plan.scale
                ),
                duration_s: None,
                method: match &wanted.pack {
                    Some(_) => "workload".into(),
                    None => init.method.clone().unwrap_or_else(|| "client".into()),
                },
            }
            .facts(),
        ));
    }
    if workload.replay.is_some() && target.data_changed.is_none() {
        // The log was written against the data as it was loaded, not as an earlier
        // invocation's tests left it.
        target.data_changed = Some("a replay starts from the data as [init] loads it".into());
    }
    let eta = state.secs_per_scale * f64::from(plan.scale);
    let label = format!(
        "[{}/{}] initializing scale {} on \"{}\"",
        at.n, at.of, plan.scale, target.name
    );
    let what = format!("{label}: init ETA {eta:.0} s");
    sink.events.emit(Event::Doing {
        test: None,
        what: &what,
    })?;
    // What the load says is told; a store error while it runs ends the campaign after it.
    let mut told = Ok(());
    let mut announce = |line: &str| {
        if let (Ok(()), Err(e)) = (&told, sink.events.say(line)) {
            told = Err(e);
        }
    };
    let show = |_: Duration| {};
    let prepared = match &workload.pack {
        Some(p) => target::prepare_pack(
            target,
            &p.pack,
            plan.scale,
            campaign.spec.campaign.seed,
            &init,
            &mut announce,
            &show,
        ),
        None => target::prepare_scale(target, plan.scale, &init, &mut announce, &show),
    };
    told?;
    match prepared {
        Ok(o) => {
            if let Some(d) = o.duration_s {
                state.secs_per_scale = (d / f64::from(plan.scale)).max(0.01);
            }
            Ok(Loaded::Facts(o.facts()))
        }
        Err(_) if stop.is_raised() => Ok(Loaded::Stopped),
        Err(e) => {
            let write = failed_write(sink.set_id, target, plan, &e.to_string());
            // A target given up on was said once already.
            sink.fail(at, write, !state.down[plan.target])?;
            Ok(Loaded::Failed)
        }
    }
}
