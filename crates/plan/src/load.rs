//! Reading a campaign file: `${VAR}` interpolation, TOML into the [`crate::spec`]
//! types, and validation of every key. Every error names the key and says what would
//! be valid. Validation resolves what later stages need to be resolvable: the matrix's
//! scripts ([`crate::matrix::Workload::from_spec`]), `[thresholds]`
//! ([`crate::thresholds::parse`]), `[run] extra_args` ([`crate::extra::extra_flags`]) and the kube
//! launcher's table ([`crate::kube::validate`]).
//!
//! This file reads a file (or a spec built in code) into a [`Campaign`] and runs the
//! checks in order; the jobs live in submodules:
//!
//! | module | owns |
//! |---|---|
//! | `variables` | `${VAR}` references: which keys take them, their replacement |
//! | `check_servers` | checking `[[target]]`, `[pinning]`, `[distributed]`, `[[fault]]` |
//! | `check_tests` | checking `[matrix]`, `[run]`, `[init]`, `[hygiene]`, `[sampling]`, `[profile]`, `[hooks]`, `[capacity]`, `[repeats]` |

use std::collections::BTreeMap;
use std::path::Path;

use crate::extra::{extra_flags, ExtraFlags};
use crate::spec::{Campaign, CampaignSpec, SpecError};

mod check_servers;
mod check_tests;
mod variables;

use variables::interpolate_spec;
pub use variables::{interpolate, INTERPOLATED_KEYS};

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
    /// Reads and validates a campaign file to run on this machine: what [`Campaign::parse`]
    /// checks, then what this machine's kernel cannot apply
    /// ([`Campaign::check_link_faults`]). `campaign run`, `campaign plan` and `bisect`
    /// read their file here, so the plan refuses what the run would.
    pub fn load(path: &Path) -> Result<Campaign, SpecError> {
        let text = std::fs::read_to_string(path).map_err(|source| SpecError::Read {
            path: path.display().to_string(),
            source,
        })?;
        let base = path.parent().map(Path::to_path_buf).unwrap_or_default();
        let campaign = Campaign::parse(&text, &path.display().to_string(), &base)?;
        campaign.check_link_faults()?;
        Ok(campaign)
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
            layouts: BTreeMap::new(),
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
            layouts: BTreeMap::new(),
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

    /// The `[[fault]]`s as each test's run applies them.
    pub fn fault_schedule(&self) -> Vec<pgsurge_faults::Scheduled> {
        let faults = self.spec.faults.iter();
        faults.filter_map(|f| f.scheduled().ok()).collect()
    }

    /// Refuses, before anything starts, a `[[fault]]` on a network device (`delay` or
    /// `loss` through `tc netem`) that this machine's kernel cannot apply: it has no
    /// netem queueing discipline. The error names the fault and the relay that delays a
    /// standby's link without netem. Probes the kernel only when there is such a fault.
    /// Called by [`Campaign::load`], not by [`Campaign::parse`]: the probe runs
    /// `unshare` and `tc`, which reading campaign text in code never needs.
    pub fn check_link_faults(&self) -> Result<(), SpecError> {
        let mut links = self.spec.faults.iter().enumerate().filter(|(_, f)| {
            f.scheduled()
                .is_ok_and(|s| matches!(s.action, pgsurge_faults::Action::Link(_)))
        });
        let Some((i, f)) = links.next() else {
            return Ok(());
        };
        if !pgsurge_faults::LinkFault::kernel_lacks_netem() {
            return Ok(());
        }
        Err(self.invalid(
            &format!("fault[{i}].link"),
            format!(
                "{} on a network device needs the kernel's netem queueing discipline \
                 (sch_netem), and this machine's kernel has none; a standby's replication \
                 link is delayed without it through pgsurge's relay: link = \"{}\"",
                f.action,
                crate::spec::REPLICATION_LINK
            ),
        ))
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

    /// The parsed `[thresholds]` (validated at load).
    pub fn thresholds(&self) -> Vec<crate::thresholds::Threshold> {
        self.spec
            .thresholds
            .iter()
            .filter_map(|(k, v)| crate::thresholds::parse(k, v).ok())
            .collect()
    }
}
