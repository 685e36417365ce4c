//! Runs a campaign: finds or creates its set in the store, skips the tests already
//! stored (resume), starts the targets it still needs, runs the remaining tests in the
//! planned order with a progress bar, stores each test in one transaction as soon as it
//! ends (failed tests too, with their error), and stops the throwaway servers.

use std::collections::BTreeSet;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pgsurge_engine::StopFlag;
use pgsurge_store::{
    now_rfc3339, run_status, set_kind, set_status, ServerRecord, SetRecord, Store, TargetRecord,
};

use crate::error::{LabError, Result};
use crate::execute::{run_test, Interrupted, TestSetup};
use crate::matrix::{expand, Matrix, TestPlan};
use crate::spec::{Campaign, Limit};
use crate::target::{self, LiveTarget};

/// How to run a campaign.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Start a new set even if one with the same identity exists.
    pub new_set: bool,
    /// Run again the tests stored as failed.
    pub retry_failed: bool,
    /// No progress bar and no per-test lines.
    pub quiet: bool,
    /// Set kind to record (default: campaign).
    pub kind: Option<String>,
}

/// What a campaign invocation did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// The set.
    pub set_id: i64,
    /// Tests in the matrix.
    pub planned: usize,
    /// Tests already stored when this invocation started.
    pub already_stored: usize,
    /// Tests run and stored now with status ok.
    pub ok: usize,
    /// Tests run and stored now as failed.
    pub failed: usize,
    /// Tests still missing (interrupted).
    pub remaining: usize,
    /// Warnings raised now.
    pub warnings: Vec<String>,
    /// Run ids stored now, in order.
    pub run_ids: Vec<i64>,
}

/// Seconds a test is expected to take besides its run (hygiene, snapshots).
const OVERHEAD_S: u64 = 3;

fn planned_seconds(c: &Campaign) -> u64 {
    match c.limit() {
        Limit::Duration(d) => u64::from(d) + c.warmup_s().round() as u64 + OVERHEAD_S,
        Limit::Transactions(_) => 10,
    }
}

/// Runs (or resumes) `campaign` into `store`. `stop` is raised by Ctrl-C: the test in
/// hand is abandoned (not stored) and the set stays resumable.
pub fn run_campaign(
    campaign: &Campaign,
    store: &mut Store,
    opts: &RunOptions,
    stop: &StopFlag,
) -> Result<Outcome> {
    let matrix = expand(campaign).map_err(LabError::Other)?;
    let spec = &campaign.spec;
    let kind = opts
        .kind
        .clone()
        .unwrap_or_else(|| set_kind::CAMPAIGN.into());
    let hash = campaign.identity_hash();
    let existing = if opts.new_set {
        None
    } else {
        store.find_set(&kind, &spec.campaign.name, &hash)?
    };
    let set_id = match existing {
        Some(s) => s.id,
        None => store.create_set(&SetRecord {
            name: spec.campaign.name.clone(),
            kind: kind.clone(),
            description: spec.campaign.description.clone(),
            spec_hash: Some(hash),
            spec: Some(campaign.text.clone()),
            planned_tests: Some(matrix.tests.len() as i64),
            status: set_status::RUNNING.into(),
            created_at: now_rfc3339(),
            finished_at: None,
        })?,
    };
    store.set_planned_tests(set_id, matrix.tests.len() as i64)?;
    store.set_set_status(set_id, set_status::RUNNING, None)?;
    let stored = store.stored_tests(set_id)?;
    let done: BTreeSet<String> = stored
        .iter()
        .filter(|(_, st)| !(opts.retry_failed && st == run_status::FAILED))
        .map(|(k, _)| k.clone())
        .collect();
    let todo: Vec<&TestPlan> = matrix
        .tests
        .iter()
        .filter(|t| !done.contains(&t.key))
        .collect();
    let mut out = Outcome {
        set_id,
        planned: matrix.tests.len(),
        already_stored: matrix.tests.len() - todo.len(),
        ..Default::default()
    };
    if todo.is_empty() {
        store.set_set_status(set_id, set_status::COMPLETE, Some(&now_rfc3339()))?;
        return Ok(out);
    }

    let pb = progress_bar(campaign, &matrix, &todo, opts.quiet);
    let mut live: Vec<Option<LiveTarget>> = (0..spec.targets.len()).map(|_| None).collect();
    let result = run_tests(
        campaign, store, &matrix, &todo, &mut live, set_id, &pb, stop, &mut out, opts.quiet,
    );
    pb.finish_and_clear();
    // Stop throwaway servers now (Drop does it too, on every path).
    for t in live.iter_mut() {
        if let Some(t) = t.take() {
            if let Some(c) = &t.cluster {
                c.stop();
            }
        }
    }
    result?;
    out.remaining = todo.len() - out.ok - out.failed;
    let status = if out.remaining == 0 {
        set_status::COMPLETE
    } else {
        set_status::INCOMPLETE
    };
    store.set_set_status(
        set_id,
        status,
        (out.remaining == 0).then(now_rfc3339).as_deref(),
    )?;
    Ok(out)
}

fn progress_bar(c: &Campaign, _m: &Matrix, todo: &[&TestPlan], quiet: bool) -> ProgressBar {
    let per_test = planned_seconds(c);
    let pb = ProgressBar::new(per_test * todo.len() as u64);
    if quiet {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    } else {
        pb.set_draw_target(ProgressDrawTarget::stderr());
    }
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta_precise}\n  {msg}",
    ) {
        pb.set_style(style);
    }
    pb.enable_steady_tick(Duration::from_millis(250));
    pb
}

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
const INIT_S_PER_SCALE: f64 = 0.5;

fn say(pb: &ProgressBar, quiet: bool, line: &str) {
    if quiet {
        return;
    }
    if pb.is_hidden() {
        eprintln!("{line}");
    } else {
        pb.println(line);
    }
}

#[allow(clippy::too_many_arguments)]
fn run_tests(
    campaign: &Campaign,
    store: &mut Store,
    matrix: &Matrix,
    todo: &[&TestPlan],
    live: &mut [Option<LiveTarget>],
    set_id: i64,
    pb: &ProgressBar,
    stop: &StopFlag,
    out: &mut Outcome,
    quiet: bool,
) -> Result<()> {
    let spec = &campaign.spec;
    let per_test = planned_seconds(campaign);
    let mut secs_per_scale = INIT_S_PER_SCALE;
    for (i, plan) in todo.iter().enumerate() {
        if stop.is_raised() {
            break;
        }
        let base = per_test * i as u64;
        pb.set_position(base);
        pb.set_message(format!(
            "[{}/{}] {} (starting)",
            i + 1,
            todo.len(),
            plan.key
        ));
        if live[plan.target].is_none() {
            let tspec = &spec.targets[plan.target];
            pb.set_message(format!("starting target \"{}\"", tspec.name));
            let mut t = target::start(tspec, &spec.run.database)?;
            let server_id = match server_record(&t.manifest) {
                Some(r) => Some(store.upsert_server(&r)?),
                None => None,
            };
            say(
                pb,
                quiet,
                &format!(
                    "target \"{}\": server host metrics from {}{}",
                    t.name,
                    t.host_source.name(),
                    match &t.host_source {
                        crate::hostmetrics::HostSource::None(why) => format!(" ({why})"),
                        _ => String::new(),
                    }
                ),
            );
            for w in &t.warnings {
                say(pb, quiet, &format!("warning: {w}"));
            }
            t.target_id = store.upsert_target(&TargetRecord {
                set_id,
                name: t.name.clone(),
                server_id,
                kind: if tspec.is_throwaway() {
                    "throwaway"
                } else {
                    "conninfo"
                }
                .into(),
                conninfo: Some(strip_password(&t.conninfo)),
                bin_dir: t.bin_dir.clone(),
                server_version: Some(t.server_version.clone()),
                server_version_num: Some(i64::from(t.version_num)),
                settings: Some(serde_json::Value::Object(
                    tspec
                        .settings_text()
                        .into_iter()
                        .map(|(k, v)| (k, serde_json::Value::String(v)))
                        .collect(),
                )),
            })?;
            live[plan.target] = Some(t);
        }
        let Some(target) = live[plan.target].as_mut() else {
            continue;
        };
        let init = spec.init.for_scale(plan.scale);
        let mut init_facts = target::InitOutcome {
            performed: false,
            reason: format!(
                "scale {} was prepared for an earlier test of this invocation",
                plan.scale
            ),
            duration_s: None,
            method: init.method.clone().unwrap_or_else(|| "client".into()),
        }
        .facts();
        if target.current_scale != Some(plan.scale) {
            let eta = secs_per_scale * f64::from(plan.scale);
            let label = format!(
                "[{}/{}] initializing scale {} on \"{}\"",
                i + 1,
                todo.len(),
                plan.scale,
                target.name
            );
            let show = |elapsed: Duration| {
                let e = elapsed.as_secs_f64();
                pb.set_message(format!(
                    "{label}: {e:.0} s, init ETA {:.0} s",
                    (eta - e).max(0.0)
                ));
            };
            let mut announce = |line: &str| say(pb, quiet, line);
            match target::prepare_scale(target, plan.scale, &init, &mut announce, &show) {
                Ok(o) => {
                    if let Some(d) = o.duration_s {
                        secs_per_scale = (d / f64::from(plan.scale)).max(0.01);
                    }
                    init_facts = o.facts();
                }
                Err(e) => {
                    if stop.is_raised() {
                        break;
                    }
                    let write = failed_write(set_id, target, plan, &e.to_string());
                    let run_id = store.write_run_replacing(&write)?;
                    out.run_ids.push(run_id);
                    out.failed += 1;
                    say(
                        pb,
                        quiet,
                        &format!("[{}/{}] {}: FAILED: {e}", i + 1, todo.len(), plan.key),
                    );
                    continue;
                }
            }
        }
        let setup = TestSetup {
            campaign,
            plan,
            workload: &matrix.workloads[plan.workload],
            set_id,
        };
        let n = todo.len();
        let key = plan.key.clone();
        let mut ticks = 0u64;
        let mut on_interval = |iv: &pgsurge_results::IntervalSample| {
            ticks += 1;
            pb.set_position((base + ticks).min(base + per_test));
            pb.set_message(format!(
                "[{}/{n}] {key}: {:.0} tps, {:.2} ms",
                i + 1,
                iv.tps,
                iv.latency_ms
            ));
        };
        let mut write = match run_test(&setup, target, stop, &mut on_interval) {
            Ok(w) => w,
            Err(Interrupted::Stopped) => break,
        };
        write.facts.extend(init_facts);
        write.facts.extend(target.facts.iter().cloned());
        for w in &target.warnings {
            write.warnings.push(pgsurge_store::WarningRecord {
                code: "data_dir_in_memory".into(),
                message: w.clone(),
                created_at: now_rfc3339(),
                ..Default::default()
            });
        }
        let failed = write.run.status == run_status::FAILED;
        let run_id = store.write_run_replacing(&write)?;
        out.run_ids.push(run_id);
        for w in &write.warnings {
            if w.code != "sampler" {
                say(pb, quiet, &format!("warning: {}", w.message));
            }
            out.warnings.push(w.message.clone());
        }
        if failed {
            out.failed += 1;
            say(
                pb,
                quiet,
                &format!(
                    "[{}/{n}] {}: FAILED: {}",
                    i + 1,
                    plan.key,
                    write.run.error.as_deref().unwrap_or("")
                ),
            );
        } else {
            out.ok += 1;
            say(
                pb,
                quiet,
                &format!(
                    "[{}/{n}] {}: {:.1} tps, latency avg {:.3} ms, p99 {:.3} ms",
                    i + 1,
                    plan.key,
                    write.run.tps.unwrap_or(0.0),
                    write.run.latency_mean_ms.unwrap_or(0.0),
                    write.run.latency_p99_ms.unwrap_or(0.0)
                ),
            );
        }
    }
    Ok(())
}

/// A failed test that never ran (its target could not be prepared).
fn failed_write(
    set_id: i64,
    target: &LiveTarget,
    plan: &TestPlan,
    error: &str,
) -> pgsurge_store::RunWrite {
    let now = pgsurge_store::now_epoch();
    pgsurge_store::RunWrite {
        run: pgsurge_store::RunRecord {
            set_id,
            target_id: Some(target.target_id),
            test_key: plan.key.clone(),
            seq: Some(plan.seq as i64),
            repeat_no: i64::from(plan.repeat),
            status: run_status::FAILED.into(),
            error: Some(error.to_string()),
            started_at: Some(pgsurge_store::epoch_to_rfc3339(now)),
            start_epoch: Some(now),
            scale: Some(i64::from(plan.scale)),
            clients: Some(i64::from(plan.clients)),
            ..Default::default()
        },
        environment: Some(target.manifest.clone()),
        facts: target.facts.clone(),
        ..Default::default()
    }
}

/// Removes `password=...` / `:password@` from a connection string before storing it.
pub fn strip_password(conninfo: &str) -> String {
    if let Some(rest) = conninfo.split_once("://") {
        if let Some((auth, host)) = rest.1.split_once('@') {
            let user = auth.split(':').next().unwrap_or("");
            return format!("{}://{user}@{host}", rest.0);
        }
        return conninfo.to_string();
    }
    conninfo
        .split_whitespace()
        .filter(|kv| !kv.starts_with("password="))
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn passwords_are_not_stored() {
        assert_eq!(
            strip_password("host=x password=secret dbname=y"),
            "host=x dbname=y"
        );
        assert_eq!(
            strip_password("postgresql://u:pw@h:5/db"),
            "postgresql://u@h:5/db"
        );
        assert_eq!(strip_password("postgresql://h/db"), "postgresql://h/db");
    }
}
