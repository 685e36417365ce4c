//! A pack applied to a run, the one way `pgsurge bench --workload` and campaigns take
//! from a pack to a [`RunSpec`]: its scripts with their weights, its parameters as
//! variable defaults, its mix, its scripts' keying and think times ([`apply`]); its
//! metrics read around the run ([`snapshot_at`], [`record_metrics`]); and the command
//! line a stored run of it keeps ([`command_line`]).

use pgsurge_engine::{Mix, Pauses, RunScript, RunSpec};
use pgsurge_results::RunResult;
use pgsurge_wire::{ConnConfig, Connection};

use crate::error::WorkloadError;
use crate::metrics::{self, MetricValue, RunShape, Snapshot};
use crate::pack::Pack;

/// What a pack gives a run, checked before the run is built: its scripts, the run's
/// variables, its mix and its scripts' pauses.
#[derive(Debug, Clone)]
pub struct PackRun {
    scripts: Vec<RunScript>,
    variables: Vec<(String, String)>,
    mix: Mix,
    pauses: Option<Vec<Pauses>>,
}

impl PackRun {
    /// `pack` as a run with the variables `given` (`-D`, `[run] defines`) and the mix
    /// `mix` (`--mix`, or `--mix=` in a campaign's `extra_args`) takes it:
    ///
    /// * its scripts in manifest order with their weights;
    /// * its parameters as variable defaults: a variable given wins;
    /// * the mix given, else the pack's;
    /// * the keying and think times (with `think_times = 1` among the variables),
    ///   which belong to the pack's scripts.
    ///
    /// A parameter value the pack cannot use is refused.
    pub fn new(
        pack: &Pack,
        given: &[(String, String)],
        mix: Option<Mix>,
    ) -> Result<PackRun, WorkloadError> {
        let scripts = pack
            .manifest
            .scripts
            .iter()
            .map(|s| {
                let desc = pack.script_desc(&s.file);
                RunScript::parse(&desc, pack.file(&s.file), s.weight).map_err(|e| {
                    WorkloadError::Script {
                        file: desc.clone(),
                        message: e.to_string(),
                    }
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        let mut variables: Vec<(String, String)> = pack
            .parameters()
            .into_iter()
            .filter(|(name, _)| !given.iter().any(|(n, _)| n == name))
            .collect();
        variables.extend_from_slice(given);
        let us = |secs: f64| (secs * 1e6).round() as i64;
        let pauses = pack.pauses(&variables)?.map(|times| {
            times
                .into_iter()
                .map(|(keying, think)| Pauses {
                    keying_us: us(keying),
                    think_mean_us: us(think),
                })
                .collect()
        });
        Ok(PackRun {
            scripts,
            variables,
            mix: mix.unwrap_or(pack.manifest.mix),
            pauses,
        })
    }

    /// Puts it into `spec`, whose variables are replaced by the run's (the given
    /// ones the run was made with, after the pack's defaults). The pack's scripts
    /// follow the spec's own (a bench run may hold `-f`/`-b` scripts beside the
    /// pack's). The keying and think times are matched to the pack's scripts, not to
    /// positions in the run: the spec's other scripts do not pause.
    pub fn apply_to(self, spec: &mut RunSpec) {
        let own = spec.scripts.len();
        spec.scripts.extend(self.scripts);
        spec.variables = self.variables;
        spec.mix = self.mix;
        if let Some(pauses) = self.pauses {
            spec.pauses.resize(own, Pauses::default());
            spec.pauses.extend(pauses);
        }
    }
}

/// Applies `pack` to `spec` with the spec's variables as the given ones and `mix`
/// (see [`PackRun::new`] and [`PackRun::apply_to`]).
pub fn apply(pack: &Pack, spec: &mut RunSpec, mix: Option<Mix>) -> Result<(), WorkloadError> {
    PackRun::new(pack, &spec.variables, mix)?.apply_to(spec);
    Ok(())
}

/// Reads every metric of `pack` on a connection of its own to `conn`, closed after.
pub fn snapshot_at(pack: &Pack, conn: &ConnConfig) -> Result<Snapshot, WorkloadError> {
    let mut c = Connection::connect(conn).map_err(|e| WorkloadError::Connect(e.to_string()))?;
    let snap = metrics::snapshot(pack, &mut c);
    c.close();
    snap
}

/// The pack's metrics over a finished run of `spec` (the change between `before` and
/// `after`, and each script's 90th percentile against its limit), put into `result`'s
/// `workload_metrics` and returned for the report's lines.
pub fn record_metrics(
    pack: &Pack,
    before: &Snapshot,
    after: &Snapshot,
    spec: &RunSpec,
    result: &mut RunResult,
) -> Vec<MetricValue> {
    let shape = RunShape {
        duration_s: result.bench_duration_us as f64 / 1e6,
        scale: result.scale,
        think_times: !spec.pauses.is_empty(),
    };
    let mut values = metrics::metric_values(pack, before, after, &shape);
    let latencies: Vec<(&str, &pgsurge_results::LatencySummary)> = result
        .scripts
        .iter()
        .map(|s| (s.name.as_str(), &s.stats.latency))
        .collect();
    values.extend(metrics::latency_limits(pack, &latencies));
    result.workload_metrics = values
        .iter()
        .map(|v| pgsurge_results::WorkloadMetric {
            name: v.name.clone(),
            value: v.value,
            unit: v.unit.to_string(),
            description: v.description.clone(),
        })
        .collect();
    values
}

/// The command line stored with a run of `pack` (given as `arg`): `pgsurge bench
/// --workload=ARG`, `--mix=random` when the run overrode the pack's deck, then the
/// run's options except what the pack itself gives (its scripts, its parameters at
/// their defaults, its own mix).
pub fn command_line(pack: &Pack, arg: &str, spec: &RunSpec, dbname: &str) -> String {
    spec.command_line_as(
        "pgsurge bench",
        &command_lead(pack, arg, spec.mix),
        |a| !pack.is_own_arg(a),
        dbname,
    )
}

/// The words that start a pack's stored command line.
fn command_lead(pack: &Pack, arg: &str, mix: Mix) -> Vec<String> {
    let mut lead = vec![format!("--workload={arg}")];
    if mix == Mix::Random && pack.manifest.mix == Mix::Deck {
        lead.push("--mix=random".into());
    }
    lead
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> RunSpec {
        RunSpec::new(
            ConnConfig::parse("host=/nonexistent dbname=x").unwrap(),
            Vec::new(),
        )
    }

    #[test]
    fn a_stored_pack_run_names_a_mix_other_than_the_packs() {
        let tpcc = Pack::resolve("tpcc").unwrap();
        let ycsb = Pack::resolve("ycsb-a").unwrap();
        assert_eq!(command_lead(&tpcc, "tpcc", Mix::Deck), ["--workload=tpcc"]);
        assert_eq!(
            command_lead(&tpcc, "tpcc", Mix::Random),
            ["--workload=tpcc", "--mix=random"]
        );
        assert_eq!(
            command_lead(&ycsb, "ycsb-a", Mix::Random),
            ["--workload=ycsb-a"]
        );
        // The deck the pack deals from anyway is not repeated; another pack's is.
        assert!(tpcc.is_own_arg("--mix=deck"));
        assert!(!ycsb.is_own_arg("--mix=deck"));
    }

    #[test]
    fn the_packs_pauses_belong_to_its_scripts_whatever_runs_beside_them() {
        let tpcc = Pack::resolve("tpcc").unwrap();
        let mut s = spec();
        s.scripts
            .push(RunScript::builtin("select-only", 1).unwrap());
        s.variables.push(("think_times".into(), "1".into()));
        apply(&tpcc, &mut s, None).unwrap();
        assert_eq!(s.scripts.len(), 1 + tpcc.manifest.scripts.len());
        assert_eq!(s.pauses.len(), s.scripts.len());
        // The script given beside the pack does not pause; New-Order keys for 18 s
        // and thinks for 12 s on average (TPC-C's clause 5.2.5.7).
        assert_eq!(s.pauses[0], Pauses::default());
        let new_order = s
            .scripts
            .iter()
            .position(|r| r.desc == "tpcc/new_order.sql")
            .unwrap();
        assert_eq!(s.pauses[new_order].keying_us, 18_000_000);
        assert_eq!(s.pauses[new_order].think_mean_us, 12_000_000);
        assert_eq!(s.validate(), Ok(()));
    }

    #[test]
    fn given_variables_and_mix_win_over_the_packs() {
        let tpcc = Pack::resolve("tpcc").unwrap();
        let mut s = spec();
        apply(&tpcc, &mut s, None).unwrap();
        assert_eq!(s.mix, Mix::Deck);
        assert!(s.pauses.is_empty());
        let (name, default) = tpcc.parameters().remove(0);
        let mut s = spec();
        s.variables.push((name.clone(), "override".into()));
        apply(&tpcc, &mut s, Some(Mix::Random)).unwrap();
        assert_eq!(s.mix, Mix::Random);
        let given: Vec<&str> = s
            .variables
            .iter()
            .filter(|(n, _)| *n == name)
            .map(|(_, v)| v.as_str())
            .collect();
        assert_eq!(given, ["override"], "default {default}");
        let mut s = spec();
        s.variables.push(("think_times".into(), "yes".into()));
        let e = apply(&tpcc, &mut s, None).unwrap_err();
        assert!(e.to_string().contains("parameter think_times"), "{e}");
    }
}
