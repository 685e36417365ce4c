//! Reading a campaign file: `${VAR}` interpolation, TOML into the [`crate::spec`]
//! types, and validation of every key. Every error names the key and says what would
//! be valid. Validation resolves what later stages need to be resolvable: the matrix's
//! scripts ([`crate::matrix::Workload::from_spec`]), `[thresholds]`
//! ([`crate::thresholds::parse`]), `[run] extra_args` ([`crate::extra::extra_flags`]) and the kube
//! launcher's table ([`crate::kube::validate`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::extra::{extra_flags, ExtraFlags};
use crate::spec::{
    limits, Campaign, CampaignSpec, DistributedSection, DurationValue, InitMode, ScriptPart,
    ScriptSpec, SpecError, ThreadsValue, AUTO_WARMUP,
};

/// The keys whose string values take `${VAR}` references: where a server, a host or a
/// file is (see docs/campaign-reference.md). Every other key, hook commands included,
/// is taken as written: a hook's `${PGPORT}` is for its shell, which runs with the
/// test's environment.
pub const INTERPOLATED_KEYS: &[&str] = &[
    "target.conninfo",
    "target.node_exporter",
    "target.node_exporter_ca",
    "target.pg_bin",
    "target.source",
    "target.ref",
    "target.patches",
    "target.data_dir",
    "matrix.scripts.file",
    "distributed.hosts",
    "distributed.ssh_options",
    "distributed.ssh_config",
    "distributed.remote_pgsurge",
    "distributed.kube.store",
    "distributed.kube.host",
    "distributed.kube.kubectl",
];

/// Replaces `${VAR}` and `${VAR:-default}` in one value (`$$` is a literal `$`; a `$`
/// before anything else is kept). A variable that is unset, with no default, is an
/// error naming it. Values taken from the environment are not read again.
pub fn interpolate(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            out.push('$');
            rest = after;
            continue;
        };
        let end = body
            .find('}')
            .ok_or_else(|| "\"${\" without a closing \"}\"".to_string())?;
        let inner = &body[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "\"${{{inner}}}\" is not a variable reference (use ${{NAME}} or ${{NAME:-default}})"
            ));
        }
        // As in the shell, `:-` also replaces a variable set to the empty string.
        let value = env(name).filter(|v| default.is_none() || !v.is_empty());
        match value.or_else(|| default.map(str::to_string)) {
            Some(v) => out.push_str(&v),
            None => {
                return Err(format!(
                    "environment variable {name} is not set (set it, or write ${{{name}:-default}})"
                ))
            }
        }
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Interpolates the [`INTERPOLATED_KEYS`] of a parsed spec; an error is (key, message).
fn interpolate_spec(
    spec: &mut CampaignSpec,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), (String, String)> {
    let text = |key: String, v: &mut String| -> Result<(), (String, String)> {
        *v = interpolate(v, env).map_err(|m| (key, m))?;
        Ok(())
    };
    let path = |key: String, v: &mut PathBuf| -> Result<(), (String, String)> {
        let Some(s) = v.to_str() else {
            return Ok(());
        };
        *v = PathBuf::from(interpolate(s, env).map_err(|m| (key, m))?);
        Ok(())
    };
    for (i, t) in spec.targets.iter_mut().enumerate() {
        if let Some(v) = &mut t.conninfo {
            text(format!("target[{i}].conninfo"), v)?;
        }
        if let Some(v) = &mut t.node_exporter {
            text(format!("target[{i}].node_exporter"), v)?;
        }
        if let Some(v) = &mut t.node_exporter_ca {
            path(format!("target[{i}].node_exporter_ca"), v)?;
        }
        if let Some(v) = &mut t.pg_bin {
            path(format!("target[{i}].pg_bin"), v)?;
        }
        if let Some(v) = &mut t.source {
            path(format!("target[{i}].source"), v)?;
        }
        if let Some(v) = &mut t.git_ref {
            text(format!("target[{i}].ref"), v)?;
        }
        for (j, v) in t.patches.iter_mut().enumerate() {
            path(format!("target[{i}].patches[{j}]"), v)?;
        }
        if let Some(v) = &mut t.data_dir {
            path(format!("target[{i}].data_dir"), v)?;
        }
    }
    for (i, script) in spec.matrix.scripts.iter_mut().enumerate() {
        match script {
            ScriptSpec::Builtin(_) => {}
            ScriptSpec::Part(p) => {
                if let Some(f) = &mut p.file {
                    path(format!("matrix.scripts[{i}].file"), f)?;
                }
            }
            ScriptSpec::Mix { mix, .. } => {
                for (j, p) in mix.iter_mut().enumerate() {
                    if let Some(f) = &mut p.file {
                        path(format!("matrix.scripts[{i}].mix[{j}].file"), f)?;
                    }
                }
            }
        }
    }
    if let Some(d) = &mut spec.distributed {
        for (i, h) in d.hosts.iter_mut().enumerate() {
            text(format!("distributed.hosts[{i}]"), h)?;
        }
        for (i, o) in d.ssh_options.iter_mut().enumerate() {
            text(format!("distributed.ssh_options[{i}]"), o)?;
        }
        if let Some(v) = &mut d.ssh_config {
            path("distributed.ssh_config".into(), v)?;
        }
        if let Some(v) = &mut d.remote_pgsurge {
            text("distributed.remote_pgsurge".into(), v)?;
        }
        if let Some(k) = &mut d.kube {
            for (key, v) in [
                ("store", &mut k.store),
                ("host", &mut k.host),
                ("kubectl", &mut k.kubectl),
            ] {
                if let Some(v) = v {
                    text(format!("distributed.kube.{key}"), v)?;
                }
            }
        }
    }
    Ok(())
}

/// `v` within `[lo, hi]`, or why not: "1e300 is out of range: give 1 to 10000000 tps".
fn in_range<T: PartialOrd + Copy + Into<f64>>(
    v: T,
    (lo, hi): (T, T),
    unit: &str,
) -> Result<(), String> {
    if v >= lo && v <= hi {
        Ok(())
    } else {
        Err(format!(
            "{} is out of range: give {} to {}{unit}",
            show_number(v.into()),
            show_number(lo.into()),
            show_number(hi.into())
        ))
    }
}

/// A number as a message shows it: `12.5`, `10000000`, `1e300` (never 300 digits).
fn show_number(v: f64) -> String {
    if v == 0.0 || (v.is_finite() && v.abs() >= 0.001 && v.abs() < 1e12) {
        let s = format!("{v:.3}");
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        format!("{v:e}")
    }
}

impl Campaign {
    /// Reads and validates a campaign file.
    pub fn load(path: &Path) -> Result<Campaign, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        Campaign::parse(&text, &path.display().to_string(), &base)
    }

    /// Parses and validates campaign text.
    pub fn parse(text: &str, path: &str, base_dir: &Path) -> Result<Campaign, SpecError> {
        Campaign::parse_with_env(text, path, base_dir, &|k| std::env::var(k).ok())
    }

    /// A campaign built in code (no file): validated like a file, and stored with the
    /// TOML form of `spec` as its text. `path` names it in messages.
    pub fn from_spec(
        spec: CampaignSpec,
        path: &str,
        base_dir: &Path,
    ) -> Result<Campaign, SpecError> {
        let text = toml::to_string(&spec).map_err(|e| SpecError::Toml {
            path: path.to_string(),
            message: e.to_string(),
        })?;
        let c = Campaign {
            spec,
            text,
            base_dir: base_dir.to_path_buf(),
            path: path.to_string(),
            builds: BTreeMap::new(),
            extra: ExtraFlags::default(),
        };
        c.checked()
    }

    /// [`Campaign::parse`] with `${VAR}` / `${VAR:-default}` in the string values of
    /// the [`INTERPOLATED_KEYS`] taken from `env`. The text is parsed as written; the
    /// stored text keeps the references, not the values (a password in a variable
    /// stays out of the store).
    pub fn parse_with_env(
        text: &str,
        path: &str,
        base_dir: &Path,
        env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Campaign, SpecError> {
        let mut spec: CampaignSpec = toml::from_str(text).map_err(|e| {
            let mut message = e.to_string().trim_end().to_string();
            // The message quotes the line it stopped at.
            if message.contains("${") {
                message.push_str(
                    "\n(${VAR} is replaced inside the quoted values of conninfo, node_exporter, \
                     node_exporter_ca, pg_bin, source, ref, patches, data_dir, script files and the [distributed] hosts and paths only, \
                     never in numbers or other keys)",
                );
            }
            SpecError::Toml {
                path: path.to_string(),
                message,
            }
        })?;
        interpolate_spec(&mut spec, env).map_err(|(key, message)| SpecError::Invalid {
            path: path.to_string(),
            key,
            message,
        })?;
        // A relative CA file, source or patch is beside the campaign file, as script
        // files are.
        for t in &mut spec.targets {
            let files = t
                .node_exporter_ca
                .iter_mut()
                .chain(t.source.iter_mut())
                .chain(t.patches.iter_mut());
            for f in files.filter(|f| f.is_relative()) {
                *f = base_dir.join(&*f);
            }
        }
        if spec.campaign.aa_check {
            if let Some(first) = spec.targets.first() {
                let mut twin = first.clone();
                twin.name = format!("{} (A-A)", first.name);
                spec.targets.insert(1, twin);
            }
        }
        let c = Campaign {
            spec,
            text: text.to_string(),
            base_dir: base_dir.to_path_buf(),
            path: path.to_string(),
            builds: BTreeMap::new(),
            extra: ExtraFlags::default(),
        };
        c.checked()
    }

    /// Validates a campaign read or built, its `[run] extra_args` read into the
    /// flags it keeps.
    fn checked(mut self) -> Result<Campaign, SpecError> {
        self.extra = extra_flags(&self.spec.run.extra_args)
            .map_err(|e| self.invalid("run.extra_args", e))?;
        self.validate()?;
        Ok(self)
    }

    fn invalid(&self, key: &str, message: impl Into<String>) -> SpecError {
        SpecError::Invalid {
            path: self.path.clone(),
            key: key.to_string(),
            message: message.into(),
        }
    }

    fn validate_distributed(&self, d: &DistributedSection) -> Result<(), SpecError> {
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

    fn validate(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        if spec.campaign.name.trim().is_empty() {
            return Err(self.invalid("campaign.name", "must not be empty"));
        }
        self.validate_targets()?;
        self.validate_faults()?;
        self.validate_matrix_numbers()?;
        self.validate_capacity()?;
        self.validate_repeats()?;
        if let Some(d) = &spec.distributed {
            self.validate_distributed(d)?;
        }
        self.validate_hooks()?;
        self.validate_matrix_values()?;
        self.validate_run()?;
        self.validate_init()?;
        self.validate_pinning()?;
        self.validate_profile()?;
        self.validate_hygiene()?;
        self.validate_observation()
    }

    /// `[profile]`: a frequency perf can sample at; the client profiled only where it
    /// runs in this process.
    fn validate_profile(&self) -> Result<(), SpecError> {
        let Some(p) = &self.spec.profile else {
            return Ok(());
        };
        if let Some(hz) = p.frequency {
            if !(1..=20_000).contains(&hz) {
                return Err(self.invalid(
                    "profile.frequency",
                    format!("{hz} Hz: give a frequency from 1 to 20000"),
                ));
            }
        }
        if self.spec.distributed.is_some() && p.processes != crate::spec::ProfileProcesses::Server {
            return Err(self.invalid(
                "profile.processes",
                "the clients run in generator processes under [distributed]: profile the \
                 server only (processes = \"server\")",
            ));
        }
        Ok(())
    }

    /// `[pinning]`: CPU lists of online CPUs; server pinning needs throwaway servers.
    fn validate_pinning(&self) -> Result<(), SpecError> {
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

    /// The `[[fault]]`s as each test's run applies them.
    pub fn fault_schedule(&self) -> Vec<pgsurge_faults::Scheduled> {
        let faults = self.spec.faults.iter();
        faults.filter_map(|f| f.scheduled().ok()).collect()
    }

    /// Whether a `[[fault]]` delays a standby's link through the relay: each throwaway
    /// target's standbys then stream through one.
    pub fn relays_replication(&self) -> bool {
        self.fault_schedule().iter().any(|f| {
            matches!(
                f.action,
                pgsurge_faults::Action::Server(pgsurge_server::Fault::LinkDelay { .. })
            )
        })
    }

    /// `[[fault]]`s: a known action at a time inside the run, on targets that have what
    /// it acts on.
    fn validate_faults(&self) -> Result<(), SpecError> {
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
            let field = if f.at.seconds().is_err() {
                "at"
            } else {
                "action"
            };
            let scheduled = f
                .scheduled()
                .map_err(|m| self.invalid(&format!("{key}.{field}"), m))?;
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

    fn validate_targets(&self) -> Result<(), SpecError> {
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

    /// The `[matrix]` numbers: scales, clients, threads, repeats, rates and weights.
    /// `[repeats]`: a precision, `2 ≤ min ≤ max`, a budget, and not with `matrix.repeats`.
    fn validate_repeats(&self) -> Result<(), SpecError> {
        let Some(r) = &self.spec.repeats else {
            return Ok(());
        };
        if self.spec.matrix.repeats != 1 {
            return Err(self.invalid(
                "repeats",
                "give matrix.repeats (a fixed number) or [repeats] (until precise), not both",
            ));
        }
        r.precision()
            .map_err(|e| self.invalid("repeats.until", format!("must be {e}")))?;
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        range("repeats.min", in_range(r.min, (2, limits::REPEATS.1), ""))?;
        range(
            "repeats.max",
            in_range(r.max, (r.min, limits::REPEATS.1), " (at least min)"),
        )?;
        if let Some(b) = &r.budget {
            let s = b.seconds().map_err(|e| self.invalid("repeats.budget", e))?;
            range("repeats.budget", in_range(s, limits::DURATION_S, " s"))?;
        }
        Ok(())
    }

    fn validate_matrix_numbers(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let matrix = &spec.matrix;
        if matrix.scales.is_empty() || matrix.scales.contains(&0) {
            return Err(self.invalid("matrix.scales", "needs at least one scale, each ≥ 1"));
        }
        if matrix.clients.is_empty() || matrix.clients.contains(&0) {
            return Err(self.invalid(
                "matrix.clients",
                "needs at least one client count, each ≥ 1",
            ));
        }
        if matrix.scripts.is_empty() {
            return Err(self.invalid("matrix.scripts", "needs at least one script"));
        }
        if matrix.repeats == 0 {
            return Err(self.invalid("matrix.repeats", "must be ≥ 1"));
        }
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        for &scale in &matrix.scales {
            range("matrix.scales", in_range(scale, limits::SCALE, ""))?;
        }
        for &c in &matrix.clients {
            range("matrix.clients", in_range(c, limits::CLIENTS, " clients"))?;
        }
        for &j in &matrix.threads {
            range("matrix.threads", in_range(j, limits::THREADS, " threads"))?;
        }
        range(
            "matrix.repeats",
            in_range(matrix.repeats, limits::REPEATS, ""),
        )?;
        if !matrix.rates.is_empty() && !matrix.rates_per_client.is_empty() {
            return Err(self.invalid("matrix", "give rates (total) or rates_per_client, not both"));
        }
        for &r in &matrix.rates {
            range(
                "matrix.rates",
                in_range(r, limits::RATE, " tps (0 = unthrottled)"),
            )?;
        }
        let most_clients = matrix.clients.iter().copied().max().unwrap_or(1);
        for &r in &matrix.rates_per_client {
            range(
                "matrix.rates_per_client",
                in_range(
                    r,
                    (limits::RATE.0, limits::RATE.1 / f64::from(most_clients)),
                    &format!(
                        " tps per client (0 = unthrottled; with {most_clients} clients the \
                         total must stay at most {} tps)",
                        show_number(limits::RATE.1)
                    ),
                ),
            )?;
        }
        for (i, sc) in matrix.scripts.iter().enumerate() {
            let parts: Vec<&ScriptPart> = match sc {
                ScriptSpec::Builtin(_) => Vec::new(),
                ScriptSpec::Part(p) => vec![p],
                ScriptSpec::Mix { mix, .. } => mix.iter().collect(),
            };
            for p in parts {
                range(
                    &format!("matrix.scripts[{i}]"),
                    in_range(p.weight, limits::WEIGHT, " (weight)"),
                )?;
            }
        }
        Ok(())
    }

    /// The `[capacity]` search.
    fn validate_capacity(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let matrix = &spec.matrix;
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        let Some(cap) = &spec.capacity else {
            return Ok(());
        };
        if !matrix.rates.is_empty() || !matrix.rates_per_client.is_empty() {
            return Err(self.invalid(
                "capacity",
                "a capacity search chooses the rates: remove matrix.rates / rates_per_client",
            ));
        }
        if ![50.0, 90.0, 95.0, 99.0, 99.9].contains(&cap.percentile) {
            return Err(self.invalid("capacity.percentile", "one of 50, 90, 95, 99, 99.9"));
        }
        match cap.bound.seconds() {
            Ok(s) if s > 0.0 => {
                range("capacity.bound", in_range(s, limits::LATENCY_S, " seconds"))?
            }
            Ok(_) => return Err(self.invalid("capacity.bound", "must be more than 0")),
            Err(e) => return Err(self.invalid("capacity.bound", e)),
        }
        range(
            "capacity.start_rate",
            in_range(cap.start_rate, (1.0, limits::RATE.1), " tps"),
        )?;
        if let Some(max) = cap.max_rate {
            range(
                "capacity.max_rate",
                in_range(
                    max,
                    (cap.start_rate, limits::RATE.1),
                    " tps (start_rate to the most)",
                ),
            )?;
        }
        range(
            "capacity.repeats",
            in_range(cap.repeats, limits::CAPACITY_REPEATS, ""),
        )?;
        range(
            "capacity.resolution",
            in_range(cap.resolution, limits::RESOLUTION, " (a fraction)"),
        )?;
        if spec.run.duration.is_none() {
            return Err(self.invalid(
                "capacity",
                "a capacity search needs run.duration (tests at a rate run for a time)",
            ));
        }
        Ok(())
    }

    /// The `[hooks]` table.
    fn validate_hooks(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        if let Some(t) = &spec.hooks.timeout {
            match t.seconds() {
                Ok(s) if s > 0.0 => {
                    range("hooks.timeout", in_range(s, limits::WAIT_S, " seconds"))?
                }
                Ok(_) => return Err(self.invalid("hooks.timeout", "must be more than 0")),
                Err(e) => return Err(self.invalid("hooks.timeout", e)),
            }
        }
        Ok(())
    }

    /// The `[matrix]` values that name things: query modes, settings and scripts.
    fn validate_matrix_values(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let matrix = &spec.matrix;
        for m in &matrix.query_modes {
            if pgsurge_engine::QueryMode::parse(m).is_none() {
                return Err(self.invalid(
                    "matrix.query_modes",
                    format!("\"{m}\" is not a query mode (simple, extended, prepared)"),
                ));
            }
        }
        if matrix.threads.contains(&0) {
            return Err(self.invalid("matrix.threads", "each thread count must be ≥ 1"));
        }
        for (name, values) in &matrix.settings {
            if values.is_empty() {
                return Err(self.invalid(
                    &format!("matrix.settings.{name}"),
                    "needs at least one value",
                ));
            }
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                return Err(self.invalid(
                    "matrix.settings",
                    format!("\"{name}\" is not a setting name"),
                ));
            }
            for v in values {
                if matches!(v, toml::Value::Array(_) | toml::Value::Table(_)) {
                    return Err(self.invalid(
                        &format!("matrix.settings.{name}"),
                        "values are strings, numbers or booleans",
                    ));
                }
            }
        }
        for (i, sc) in matrix.scripts.iter().enumerate() {
            crate::matrix::Workload::from_spec(sc, &self.base_dir)
                .map_err(|e| self.invalid(&format!("matrix.scripts[{i}]"), e))?;
        }
        Ok(())
    }

    /// The `[run]` table.
    fn validate_run(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        let r = &spec.run;
        match (&r.duration, r.transactions) {
            (Some(_), Some(_)) => {
                return Err(self.invalid("run", "give duration or transactions, not both"))
            }
            (Some(d), None) => {
                let secs = d.seconds().map_err(|e| self.invalid("run.duration", e))?;
                if secs < 1.0 || secs.fract() != 0.0 {
                    return Err(
                        self.invalid("run.duration", "must be a whole number of seconds ≥ 1")
                    );
                }
                range(
                    "run.duration",
                    in_range(secs, limits::DURATION_S, " seconds"),
                )?;
            }
            (None, Some(0)) => return Err(self.invalid("run.transactions", "must be ≥ 1")),
            (None, Some(t)) => range(
                "run.transactions",
                in_range(t, limits::TRANSACTIONS, " per client"),
            )?,
            _ => {}
        }
        if let Some(tries) = r.max_tries {
            range(
                "run.max_tries",
                in_range(tries, limits::MAX_TRIES, " (0 = unlimited)"),
            )?;
            if tries == 0 && r.transactions.is_some() && r.latency_limit.is_none() {
                return Err(self.invalid(
                    "run.max_tries",
                    "0 (unlimited tries) needs a duration or a latency_limit, as in pgbench",
                ));
            }
        }
        if !["simple", "extended", "prepared"].contains(&r.query_mode.as_str()) {
            return Err(self.invalid("run.query_mode", "must be simple, extended or prepared"));
        }
        if let Some(ThreadsValue::Auto(a)) = &r.threads {
            if a != "auto" {
                return Err(self.invalid("run.threads", "must be a number or \"auto\""));
            }
        }
        if let Some(ThreadsValue::Count(0)) = &r.threads {
            return Err(self.invalid("run.threads", "must be ≥ 1"));
        }
        if let Some(ThreadsValue::Count(j)) = &r.threads {
            range("run.threads", in_range(*j, limits::THREADS, " threads"))?;
        }
        let auto = matches!(&r.warmup, Some(DurationValue::Text(t)) if t.trim() == AUTO_WARMUP);
        if auto && r.transactions.is_some() {
            return Err(self.invalid(
                "run.warmup",
                "\"auto\" needs a duration (it runs until the steady window has lasted it), not transactions",
            ));
        }
        if auto && self.spec.distributed.is_some() {
            return Err(self.invalid(
                "run.warmup",
                "\"auto\" is not available with [distributed]: the generators' runs are not watched",
            ));
        }
        if r.warmup_max.is_some() && !auto {
            return Err(self.invalid("run.warmup_max", "applies only with warmup = \"auto\""));
        }
        if let Some(m) = &r.warmup_max {
            let secs = m.seconds().map_err(|e| self.invalid("run.warmup_max", e))?;
            if secs <= 0.0 {
                return Err(self.invalid("run.warmup_max", "must be more than 0"));
            }
            range("run.warmup_max", in_range(secs, limits::WAIT_S, " seconds"))?;
        }
        for (key, v) in [
            ("run.latency_limit", &r.latency_limit),
            ("run.warmup", if auto { &None } else { &r.warmup }),
            ("run.outage_wait", &r.outage_wait),
        ] {
            if let Some(v) = v {
                let secs = v.seconds().map_err(|e| self.invalid(key, e))?;
                let limit = if key == "run.latency_limit" {
                    if secs <= 0.0 {
                        return Err(self.invalid(key, "must be more than 0"));
                    }
                    limits::LATENCY_S
                } else {
                    limits::WAIT_S
                };
                range(key, in_range(secs, limit, " seconds"))?;
            }
        }
        Ok(())
    }

    /// `[init]` and every `[init.scale.N]`.
    fn validate_init(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        // `[init]` and every `[init.scale.N]`, whether or not the matrix has scale N.
        let mut inits = vec![("init".to_string(), spec.init.for_scale(0))];
        for k in spec.init.scale.keys() {
            if let Ok(n) = k.parse::<u32>() {
                inits.push((format!("init.scale.{k}"), spec.init.for_scale(n)));
            }
        }
        for (section, init) in &inits {
            let key = |name: &str| format!("{section}.{name}");
            if let Some(method) = &init.method {
                if method != "client" && method != "server" {
                    return Err(self.invalid(&key("method"), "must be \"client\" or \"server\""));
                }
            }
            if let Some(pm) = &init.partition_method {
                if pm != "range" && pm != "hash" {
                    return Err(
                        self.invalid(&key("partition_method"), "must be \"range\" or \"hash\"")
                    );
                }
            }
            if let Some(ff) = init.fillfactor {
                range(&key("fillfactor"), in_range(ff, (10, 100), ""))?;
            }
            if let Some(jobs) = init.jobs {
                range(&key("jobs"), in_range(jobs, (1, 1000), ""))?;
            }
            if let Some(p) = init.partitions {
                range(&key("partitions"), in_range(p, limits::PARTITIONS, ""))?;
            }
        }
        for k in spec.init.scale.keys() {
            if k.parse::<u32>().is_err() {
                return Err(self.invalid(&format!("init.scale.{k}"), "keys must be scale numbers"));
            }
        }
        Ok(())
    }

    /// `[hygiene]`, `[thresholds]` and `[sampling]`.
    /// `[hygiene]`: a fresh cluster needs a data directory that may be thrown away.
    fn validate_hygiene(&self) -> Result<(), SpecError> {
        let h = &self.spec.hygiene;
        if let Some(f) = h.fresh_cluster.as_deref() {
            if crate::spec::FreshCluster::parse(f).is_none() {
                return Err(self.invalid(
                    "hygiene.fresh_cluster",
                    format!("\"{f}\" is not a choice (test, scale or never)"),
                ));
            }
        }
        if h.fresh_cluster() != crate::spec::FreshCluster::Never {
            if let Some(t) = self.spec.targets.iter().find(|t| t.data_dir.is_some()) {
                return Err(self.invalid(
                    "hygiene.fresh_cluster",
                    format!(
                        "a fresh cluster replaces the data directory; target \"{}\" keeps \
                         its own (data_dir): leave data_dir out to use temporary ones",
                        t.name
                    ),
                ));
            }
        }
        Ok(())
    }

    fn validate_observation(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let tol = spec.hygiene.commit_tolerance_pct;
        if !(tol.is_finite() && (0.0..=100.0).contains(&tol)) {
            return Err(self.invalid(
                "hygiene.commit_tolerance_pct",
                format!("{tol} is not a tolerance: give a percentage between 0 and 100"),
            ));
        }
        for (k, v) in &spec.thresholds {
            crate::thresholds::parse(k, v)
                .map_err(|e| self.invalid(&format!("thresholds.{k}"), e))?;
        }
        if !(spec.sampling.interval >= 0.1 && spec.sampling.interval <= 60.0) {
            return Err(self.invalid("sampling.interval", "must be between 0.1 and 60 seconds"));
        }
        Ok(())
    }

    /// The parsed `[thresholds]` (validated at load).
    pub fn thresholds(&self) -> Vec<crate::thresholds::Threshold> {
        self.spec
            .thresholds
            .iter()
            .filter_map(|(k, v)| crate::thresholds::parse(k, v).ok())
            .collect()
    }
}

#[cfg(test)]
mod interpolation_tests {
    use super::*;

    fn env(k: &str) -> Option<String> {
        match k {
            "PGSURGE_TARGET" => Some("host=db1 dbname=bench".into()),
            "EMPTY" => Some(String::new()),
            "PGPORT" => Some("5999".into()),
            "PGDATABASE" => Some("launching_shell_db".into()),
            "GEN" => Some("gen7".into()),
            "STORE_HOST" => Some("results-db".into()),
            _ => None,
        }
    }

    #[test]
    fn variables_and_defaults_are_replaced() {
        assert_eq!(
            interpolate("${PGSURGE_TARGET} port=1", &env).unwrap(),
            "host=db1 dbname=bench port=1"
        );
        assert_eq!(interpolate("${PGSURGE_NODE_EXPORTER:-}", &env).unwrap(), "");
        assert_eq!(
            interpolate("${X:-http://h:9100}", &env).unwrap(),
            "http://h:9100"
        );
        assert_eq!(
            interpolate("$$HOME ${EMPTY:-x} $1 a$", &env).unwrap(),
            "$HOME x $1 a$"
        );
    }

    #[test]
    fn a_missing_variable_is_a_clear_error() {
        assert_eq!(
            interpolate("${NOPE}", &env).unwrap_err(),
            "environment variable NOPE is not set (set it, or write ${NOPE:-default})"
        );
        assert!(interpolate("${NOPE", &env).unwrap_err().contains("closing"));
        assert!(interpolate("${A B}", &env)
            .unwrap_err()
            .contains("not a variable"));
    }

    const HOOKED: &str = r#"[campaign]
name = "r"
description = "for ${PGDATABASE}"
[[target]]
name = "t"
conninfo = "${PGSURGE_TARGET} port=${PGPORT}"
node_exporter = "${PGSURGE_NODE_EXPORTER:-}"
[matrix]
scales = [1]
clients = [1]
scripts = [{ name = "m", mix = [{ builtin = "select-only" }, { file = "${SCRIPTS}/lib.rs" }] }]
[run.defines]
where = "${PGDATABASE}"
[hooks]
before_test = "psql -p ${PGPORT} -d ${PGDATABASE} -c 'TRUNCATE t'; echo $$ ${PGSURGE_TEST_KEY}"
after_test = "echo ${NOT_SET_ANYWHERE}"
"#;

    #[test]
    fn only_the_documented_keys_are_interpolated() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let env_here = |k: &str| match k {
            "SCRIPTS" => Some(dir.join("src").display().to_string()),
            other => env(other),
        };
        let c = Campaign::parse_with_env(HOOKED, "r.toml", dir, &env_here)
            .unwrap_or_else(|e| panic!("{e}"));
        let t = &c.spec.targets[0];
        assert_eq!(
            t.conninfo.as_deref(),
            Some("host=db1 dbname=bench port=5999")
        );
        assert_eq!(t.node_exporter_url(), None);
        let ScriptSpec::Mix { mix, .. } = &c.spec.matrix.scripts[0] else {
            panic!("{:?}", c.spec.matrix.scripts)
        };
        assert_eq!(
            mix[1].file.as_deref(),
            Some(dir.join("src/lib.rs").as_path())
        );
        // Hooks are for the shell, which runs with the test's PGPORT and PGDATABASE;
        // `$$` and unset names stay as written.
        assert_eq!(
            c.spec.hooks.before_test.as_deref(),
            Some("psql -p ${PGPORT} -d ${PGDATABASE} -c 'TRUNCATE t'; echo $$ ${PGSURGE_TEST_KEY}")
        );
        assert_eq!(
            c.spec.hooks.after_test.as_deref(),
            Some("echo ${NOT_SET_ANYWHERE}")
        );
        assert_eq!(
            c.spec.campaign.description.as_deref(),
            Some("for ${PGDATABASE}")
        );
        assert_eq!(
            c.spec.run.defines.get("where"),
            Some(&toml::Value::String("${PGDATABASE}".into()))
        );
    }

    #[test]
    fn distributed_hosts_and_paths_are_interpolated() {
        let text = "[campaign]\nname = \"d\"\n[[target]]\nname = \"t\"\nconninfo = \"host=db1\"\n[matrix]\nscales = [1]\nclients = [2]\n[distributed]\nlauncher = \"ssh\"\nhosts = [\"${GEN}\", \"bench@${GEN}\"]\nssh_options = [\"IdentityFile=${KEYS:-/k}/id\"]\nremote_pgsurge = \"${BIN:-/usr/bin}/pgsurge\"\n";
        let c = Campaign::parse_with_env(text, "d.toml", Path::new("."), &env).unwrap();
        let d = c.spec.distributed.as_ref().unwrap();
        assert_eq!(d.hosts, ["gen7", "bench@gen7"]);
        assert_eq!(d.ssh_options, ["IdentityFile=/k/id"]);
        assert_eq!(d.remote_pgsurge.as_deref(), Some("/usr/bin/pgsurge"));
        let e = Campaign::parse_with_env(
            &text.replace("${GEN}\", \"bench", "${NOPE}\", \"bench"),
            "d.toml",
            Path::new("."),
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("distributed.hosts[0]") && e.contains("NOPE is not set"),
            "{e}"
        );
    }

    #[test]
    fn the_reference_lists_every_interpolated_key() {
        let doc = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/campaign-reference.md"),
        )
        .unwrap();
        let start = doc.find("### Environment variables").unwrap();
        let end = start + doc[start..].find("\n### ").unwrap();
        for key in INTERPOLATED_KEYS {
            let last = key.rsplit('.').next().unwrap();
            assert!(doc[start..end].contains(&format!("`{last}`")), "{key}");
        }
    }

    #[test]
    fn the_node_exporter_ca_is_interpolated_and_beside_the_campaign_file() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let text = "[campaign]\nname = \"r\"\n[[target]]\nname = \"t\"\nconninfo = \"${PGSURGE_TARGET}\"\nnode_exporter = \"https://ne:${NE_PW:-pw}@db1:9100/metrics\"\nnode_exporter_ca = \"${CA_DIR:-src}/lib.rs\"\n[matrix]\nscales = [1]\nclients = [1]\n";
        let c =
            Campaign::parse_with_env(text, "r.toml", dir, &env).unwrap_or_else(|e| panic!("{e}"));
        let t = &c.spec.targets[0];
        assert_eq!(
            t.node_exporter_ca.as_deref(),
            Some(dir.join("src/lib.rs").as_path())
        );
        assert_eq!(
            t.node_exporter_url(),
            Some("https://ne:pw@db1:9100/metrics")
        );
        let e = Campaign::parse_with_env(&text.replace("lib.rs", "nope.pem"), "r.toml", dir, &env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("node_exporter_ca") && e.contains("nope.pem"),
            "{e}"
        );
        let e = Campaign::parse_with_env(
            &text.replace("https://ne:${NE_PW:-pw}@", "ftp://ne:hidden@"),
            "r.toml",
            dir,
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("https://") && !e.contains("hidden"), "{e}");
    }

    #[test]
    fn a_reference_outside_a_string_is_a_toml_error_with_a_hint() {
        let text = "[campaign]\nname = \"n\"\n[[target]]\nname = \"t\"\n[matrix]\nscales = [1]\nclients = [${CLIENTS}]\n";
        let e = Campaign::parse_with_env(text, "n.toml", Path::new("."), &env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("n.toml") && e.contains("never in numbers"),
            "{e}"
        );
    }

    #[test]
    fn the_stored_text_keeps_the_references() {
        let text = "[campaign]\nname = \"r\"\n[[target]]\nname = \"t\"\nconninfo = \"${PGSURGE_TARGET}\"\nnode_exporter = \"${PGSURGE_NODE_EXPORTER:-}\"\n[matrix]\nscales = [1]\nclients = [1]\n";
        let c = Campaign::parse_with_env(text, "r.toml", Path::new("."), &env).unwrap();
        assert_eq!(
            c.spec.targets[0].conninfo.as_deref(),
            Some("host=db1 dbname=bench")
        );
        assert_eq!(c.spec.targets[0].node_exporter_url(), None);
        assert_eq!(c.text, text);
        let e = Campaign::parse_with_env(
            &text.replace("PGSURGE_TARGET", "UNSET_X"),
            "r.toml",
            Path::new("."),
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("r.toml")
                && e.contains("target[0].conninfo")
                && e.contains("UNSET_X is not set"),
            "{e}"
        );
    }
}
