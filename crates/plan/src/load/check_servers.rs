//! Checking where a campaign's tests run: its `[[target]]`s (and their standbys),
//! `[pinning]`, `[distributed]` generators and `[[fault]]`s.

use super::in_range;
use crate::spec::{limits, Campaign, DistributedSection, InitMode, ScriptSpec, SpecError};

impl Campaign {
    pub(super) fn validate_targets(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        if spec.targets.is_empty() {
            return Err(self.invalid("target", "at least one [[target]] is needed"));
        }
        let mut names = std::collections::BTreeSet::new();
        for (i, t) in spec.targets.iter().enumerate() {
            let key = format!("target[{i}]");
            // A name is shown on one line of the plan, the report and compare's
            // selectors: it needs a visible character, and no line break or '/'.
            if t.name.trim().is_empty()
                || t.name.contains('/')
                || t.name.chars().any(char::is_control)
            {
                return Err(self.invalid(
                    &format!("{key}.name"),
                    format!(
                        "{:?}: a name needs a character that is not blank, and no '/', \
                         newline or other control character",
                        t.name
                    ),
                ));
            }
            if !names.insert(t.name.clone()) {
                return Err(self.invalid(
                    &format!("{key}.name"),
                    format!("\"{}\" is used twice", t.name),
                ));
            }
            if t.conninfo.is_some()
                && (t.pg_bin.is_some() || t.pg_version.is_some() || !t.settings.is_empty())
            {
                return Err(self.invalid(
                    &key,
                    "give either conninfo (an existing server) or pg_bin/pg_version/settings (a throwaway server), not both",
                ));
            }
            if t.pg_bin.is_some() && t.pg_version.is_some() {
                return Err(self.invalid(&key, "give pg_bin or pg_version, not both"));
            }
            if t.source.is_some() && (t.pg_bin.is_some() || t.pg_version.is_some()) {
                return Err(self.invalid(
                    &format!("{key}.source"),
                    "give source (a build) or pg_bin/pg_version (installed binaries), not both",
                ));
            }
            if t.source.is_some() && t.conninfo.is_some() {
                return Err(self.invalid(
                    &format!("{key}.source"),
                    "source builds a throwaway server; an existing server (conninfo) has its own binaries",
                ));
            }
            if t.source.is_none() {
                for (k, given) in [
                    ("ref", t.git_ref.is_some()),
                    ("patches", !t.patches.is_empty()),
                    ("configure", !t.configure.is_empty()),
                    ("profiling", t.profiling),
                ] {
                    if given {
                        return Err(self.invalid(
                            &format!("{key}.{k}"),
                            format!("{k} is for a target built from source: add source = \"PATH\""),
                        ));
                    }
                }
            }
            if t.conninfo.is_some() && t.data_dir.is_some() {
                return Err(self.invalid(
                    &format!("{key}.data_dir"),
                    "data_dir is for throwaway servers; an existing server keeps its own",
                ));
            }
            self.validate_replicas(&key, t)?;
            if let Some(i) = t.init.as_deref().filter(|i| InitMode::parse(i).is_none()) {
                return Err(self.invalid(
                    &format!("{key}.init"),
                    format!("\"{i}\" is not an init mode (always, if-needed or never)"),
                ));
            }
            if let Some(h) = t
                .host_metrics
                .as_deref()
                .filter(|h| !["auto", "local", "node_exporter", "pg_read_file", "none"].contains(h))
            {
                return Err(self.invalid(
                    &format!("{key}.host_metrics"),
                    format!("\"{h}\" is not a source (auto, local, node_exporter, pg_read_file or none)"),
                ));
            }
            if let Some(u) = t
                .node_exporter_url()
                .filter(|u| !u.starts_with("http://") && !u.starts_with("https://"))
            {
                return Err(self.invalid(
                    &format!("{key}.node_exporter"),
                    format!(
                        "\"{}\" is not an http:// or https:// URL (e.g. http://db1:9100/metrics)",
                        pgsurge_wire::redact::redact(u)
                    ),
                ));
            }
            if t.node_exporter_ca.is_some() && t.node_exporter_url().is_none() {
                return Err(self.invalid(
                    &format!("{key}.node_exporter_ca"),
                    "is the CA of the node_exporter URL, which the target does not give",
                ));
            }
            if let Some(ca) = &t.node_exporter_ca {
                if let Err(e) = std::fs::metadata(ca) {
                    return Err(self.invalid(
                        &format!("{key}.node_exporter_ca"),
                        format!("cannot read {}: {e}", ca.display()),
                    ));
                }
            }
            if t.host_metrics.as_deref() == Some("node_exporter") && t.node_exporter_url().is_none()
            {
                return Err(self.invalid(
                    &format!("{key}.host_metrics"),
                    "node_exporter needs the target's node_exporter URL",
                ));
            }
        }
        Ok(())
    }

    /// The `[[target]]` tables: names, and one kind of server each with its keys.
    /// A target's `replicas` and `replication`: a throwaway server's, bounded, and a
    /// known mode only with replicas.
    fn validate_replicas(&self, key: &str, t: &crate::spec::TargetSpec) -> Result<(), SpecError> {
        if t.replicas > 0 && t.conninfo.is_some() {
            return Err(self.invalid(
                &format!("{key}.replicas"),
                "replicas are started with a throwaway server; an existing server (conninfo) has its own",
            ));
        }
        // The count, and the memory the standbys' shared buffers would take beside the
        // primary's, as the topology's start would check them (ports of a throwaway
        // target are chosen free when it starts), with each value a matrix sweeps.
        let builder = pgsurge_server::ClusterBuilder::new().settings(t.settings_text());
        let swept = self.spec.matrix.settings.get("shared_buffers");
        let cells: Vec<Option<String>> = match swept {
            Some(values) => values
                .iter()
                .map(|v| Some(crate::spec::setting_text(v)))
                .collect(),
            None => vec![None],
        };
        for cell in cells {
            let (b, with) = match &cell {
                Some(v) => (
                    builder.clone().setting("shared_buffers", v),
                    format!(" (with matrix.settings.shared_buffers = \"{v}\")"),
                ),
                None => (builder.clone(), String::new()),
            };
            if let Err(e) = pgsurge_server::check_topology(&b, t.replicas as usize) {
                return Err(self.invalid(&format!("{key}.replicas"), format!("{e}{with}")));
            }
        }
        if let Some(r) = t.replication.as_deref() {
            if r != "sync" && r != "async" {
                return Err(self.invalid(
                    &format!("{key}.replication"),
                    format!("\"{r}\" is not a replication mode (async or sync)"),
                ));
            }
            if t.replicas == 0 {
                return Err(self.invalid(
                    &format!("{key}.replication"),
                    "is the mode of the target's replicas: add replicas = N",
                ));
            }
        }
        Ok(())
    }

    /// `[pinning]`: CPU lists of online CPUs; server pinning needs throwaway servers.
    pub(super) fn validate_pinning(&self) -> Result<(), SpecError> {
        let p = &self.spec.pinning;
        for (key, list) in [("pinning.server", &p.server), ("pinning.client", &p.client)] {
            if let Some(text) = list {
                pgsurge_affinity::CpuList::parse(text)
                    .and_then(|l| l.check_online())
                    .map_err(|e| self.invalid(key, e.to_string()))?;
            }
        }
        if p.server.is_some() {
            if let Some(t) = self.spec.targets.iter().find(|t| !t.is_throwaway()) {
                return Err(self.invalid(
                    "pinning.server",
                    format!(
                        "pins throwaway servers only; target \"{}\" is an existing server \
                         (pin it where it runs, e.g. with taskset or systemd's CPUAffinity)",
                        t.name
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn validate_distributed(&self, d: &DistributedSection) -> Result<(), SpecError> {
        let spec = &self.spec;
        if let Some(i) = spec
            .matrix
            .scripts
            .iter()
            .position(|s| matches!(s, ScriptSpec::Part(p) if p.workload.is_some()))
        {
            return Err(self.invalid(
                &format!("matrix.scripts[{i}]"),
                "workload packs run on one load generator: remove [distributed] to run them",
            ));
        }
        if let Some(i) = spec
            .matrix
            .scripts
            .iter()
            .position(|s| matches!(s, ScriptSpec::Part(p) if p.replay.is_some()))
        {
            return Err(self.invalid(
                &format!("matrix.scripts[{i}]"),
                "a replay runs on one load generator in a campaign (pgsurge dist splits one outside campaigns): remove [distributed] to run it",
            ));
        }
        let ssh_keys = !d.hosts.is_empty()
            || !d.ssh_options.is_empty()
            || d.ssh_config.is_some()
            || d.remote_pgsurge.is_some();
        match d.launcher.as_str() {
            "local" | "kube" if ssh_keys => {
                return Err(self.invalid(
                    "distributed.hosts",
                    "hosts, ssh_options, ssh_config and remote_pgsurge go with launcher = \"ssh\"",
                ));
            }
            "local" | "ssh" if d.kube.is_some() => {
                return Err(self.invalid(
                    "distributed.kube",
                    "[distributed.kube] goes with launcher = \"kube\"",
                ));
            }
            "local" => {}
            "ssh" if d.hosts.is_empty() => {
                return Err(self.invalid("distributed.hosts", "launcher = \"ssh\" needs hosts"));
            }
            "ssh" if d.generators != 0 && d.generators as usize != d.hosts.len() => {
                return Err(self.invalid(
                    "distributed.generators",
                    "with ssh there is one generator per host: leave generators out",
                ));
            }
            "ssh" => {}
            "kube" => {}
            other => {
                return Err(self.invalid(
                    "distributed.launcher",
                    format!("\"{other}\" is not a launcher (local, ssh, kube)"),
                ))
            }
        }
        if d.count() == 0 {
            return Err(self.invalid("distributed.generators", "must be ≥ 1"));
        }
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        range(
            "distributed.generators",
            in_range(d.count(), limits::GENERATORS, " generators"),
        )?;
        range(
            "distributed.start_in",
            in_range(d.start_in, limits::START_IN_S, " seconds"),
        )?;
        if let Some(m) = d.deadline_margin {
            range(
                "distributed.deadline_margin",
                in_range(m, limits::START_IN_S, " seconds"),
            )?;
        }
        if let Some(k) = &d.kube {
            if let Some(m) = k.wait_margin {
                range(
                    "distributed.kube.wait_margin",
                    in_range(m, limits::START_IN_S, " seconds"),
                )?;
            }
            if let Some(t) = k.wait_timeout {
                range(
                    "distributed.kube.wait_timeout",
                    in_range(t, limits::WAIT_TIMEOUT_S, " seconds"),
                )?;
            }
        }
        if let Some(c) = spec.matrix.clients.iter().find(|&&c| c < d.count()) {
            return Err(self.invalid(
                "distributed",
                format!(
                    "{c} clients cannot be split across {} generators",
                    d.count()
                ),
            ));
        }
        for t in &spec.targets {
            let has_password = t
                .conninfo
                .as_deref()
                .is_some_and(|ci| !pgsurge_wire::redact::passwords(ci).is_empty());
            if has_password {
                return Err(self.invalid(
                    "distributed",
                    format!(
                        "target \"{}\" has a password in its conninfo: generators get it on \
                         their command line; use ~/.pgpass or PGPASSWORD instead",
                        t.name
                    ),
                ));
            }
        }
        if d.launcher == "kube" {
            let Some(k) = &d.kube else {
                return Err(self.invalid(
                    "distributed.kube",
                    "launcher = \"kube\" needs a [distributed.kube] table with at least the \
                     image (image = \"registry.example/pgsurge:0.1.0\")",
                ));
            };
            crate::kube::validate(self, d, k)
                .map_err(|(key, message)| self.invalid(&key, message))?;
        }
        Ok(())
    }

    /// `[[fault]]`s: a known action at a time inside the run, on targets that have what
    /// it acts on.
    pub(super) fn validate_faults(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let run_s = match (&spec.run.duration, spec.run.transactions) {
            (_, Some(_)) => None,
            (Some(d), None) => d.seconds().ok(),
            (None, None) => Some(60.0),
        };
        if let Some(table) = &spec.run.check_commits {
            if spec.faults.is_empty() {
                return Err(self.invalid(
                    "run.check_commits",
                    "counts the acknowledged commits [[fault]]s lose: add a [[fault]]",
                ));
            }
            if table.split('.').any(|part| part.trim().is_empty()) || table.split('.').count() > 2 {
                return Err(self.invalid(
                    "run.check_commits",
                    format!("\"{table}\" is not a table name (TABLE or SCHEMA.TABLE)"),
                ));
            }
        }
        for (i, f) in spec.faults.iter().enumerate() {
            let key = format!("fault[{i}]");
            if (f.action == "command") != f.command.is_some() {
                return Err(self.invalid(
                    &format!("{key}.command"),
                    "a command is what action = \"command\" runs, and only it",
                ));
            }
            let scheduled = f
                .scheduled()
                .map_err(|e| self.invalid(&format!("{key}.{}", e.key()), e.to_string()))?;
            let at = scheduled.at_s;
            if let Some(end) = run_s.filter(|&end| at >= end) {
                return Err(self.invalid(
                    &format!("{key}.at"),
                    format!("{at} s is past the run's end (run.duration = {end} s)"),
                ));
            }
            let on_replica = match &scheduled.action {
                pgsurge_faults::Action::Server(fault) => fault.replica().is_some(),
                pgsurge_faults::Action::Command(_) | pgsurge_faults::Action::Link(_) => false,
            };
            let on_server = matches!(scheduled.action, pgsurge_faults::Action::Server(_));
            if f.replica.is_some() && !on_replica {
                return Err(self.invalid(
                    &format!("{key}.replica"),
                    format!("{} acts on the primary, not on a replica", f.action),
                ));
            }
            let n = f.replica.unwrap_or(1);
            for t in &spec.targets {
                if on_server && !t.is_throwaway() {
                    return Err(self.invalid(
                        &key,
                        format!(
                            "{} needs a throwaway target; target \"{}\" is an existing server: \
                             give its fault as action = \"command\"",
                            f.action, t.name
                        ),
                    ));
                }
                if on_replica && t.replicas < n {
                    return Err(self.invalid(
                        &key,
                        format!(
                            "{} needs replica{n}; target \"{}\" has {} replica{}",
                            f.action,
                            t.name,
                            t.replicas,
                            if t.replicas == 1 { "" } else { "s" }
                        ),
                    ));
                }
            }
        }
        Ok(())
    }
}
