//! The campaign file (TOML): what to run, against which servers, in which order.
//!
//! This module holds the types of the file (with their serde forms and defaults), of a
//! loaded [`Campaign`] and of an invalid file ([`SpecError`]); it depends on no other
//! module of the crate. [`crate::load`] reads and validates a file into them,
//! [`crate::matrix`] expands a [`CampaignSpec`] into the ordered list of tests. See
//! `examples/*.toml` at the repository root for documented examples. The tests below
//! read files through [`Campaign::parse`] and check what the types hold.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

/// Errors in a campaign file.
#[derive(Debug, thiserror::Error)]
pub enum SpecError {
    /// The file could not be read.
    #[error("cannot read campaign file {path}: {source}")]
    Read {
        /// The campaign file, as given on the command line.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// TOML syntax or an unknown/mistyped key.
    #[error("campaign file {path}: {message}")]
    Toml {
        /// The campaign file, as given on the command line.
        path: String,
        /// The TOML parser's message (with line and column).
        message: String,
    },
    /// A value is not valid.
    #[error("campaign file {path}: {key}: {message}")]
    Invalid {
        /// The campaign file, as given on the command line.
        path: String,
        /// The key, e.g. `matrix.clients`.
        key: String,
        /// What is wrong and what would be valid.
        message: String,
    },
}

/// A whole campaign file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignSpec {
    /// `[campaign]`: name, description, order.
    pub campaign: CampaignSection,
    /// `[[target]]`: servers to test (at least one).
    #[serde(rename = "target")]
    pub targets: Vec<TargetSpec>,
    /// `[matrix]`: the values crossed with each other.
    pub matrix: MatrixSpec,
    /// `[run]`: options every test shares.
    #[serde(default)]
    pub run: RunSection,
    /// `[init]`: how `-i` builds each scale.
    #[serde(default)]
    pub init: InitSection,
    /// `[sampling]`: OS and PostgreSQL metric sampling.
    #[serde(default)]
    pub sampling: SamplingSection,
    /// `[hygiene]`: what is done between tests.
    #[serde(default)]
    pub hygiene: HygieneSection,
    /// `[thresholds]`: CI gates checked on every test (`p99 = "< 20ms"`,
    /// `tps = "> 5000"`; see [`crate::thresholds`]). Not part of the set's identity.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub thresholds: BTreeMap<String, String>,
    /// `[hooks]`: shell commands run at set start and around each test.
    #[serde(default, skip_serializing_if = "HooksSection::is_empty")]
    pub hooks: HooksSection,
    /// `[capacity]`: instead of the matrix's rates, search each cell for the highest
    /// rate that meets a latency objective.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capacity: Option<CapacitySection>,
    /// `[distributed]`: each test runs as several generator processes whose results
    /// are merged exactly (`pgsurge dist`), instead of one in-process client.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub distributed: Option<DistributedSection>,
    /// `[pinning]`: the CPUs of throwaway servers and of the load generator.
    #[serde(default, skip_serializing_if = "PinningSection::is_empty")]
    pub pinning: PinningSection,
    /// `[profile]`: call stacks of the server and the client over each test's measured
    /// run (see `docs/profiles.md`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<ProfileSection>,
    /// `[[fault]]`: what is done to the servers at times of every test's run (the
    /// clients then reconnect, see `--reconnect`).
    #[serde(default, rename = "fault", skip_serializing_if = "Vec::is_empty")]
    pub faults: Vec<FaultSpec>,
    /// `[repeats]`: each cell repeats until its figure is precise enough (instead of
    /// `matrix.repeats`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repeats: Option<RepeatsSection>,
}

/// `[profile]`: what each test profiles over its measured run, with `perf`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ProfileSection {
    /// Profiles are taken (the default once the section is there).
    #[serde(default = "profile_on")]
    pub on: bool,
    /// On-CPU samples per second per running thread (default 99).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frequency: Option<u32>,
    /// Whose stacks: `server` (the default), `client` or `both`.
    #[serde(default)]
    pub processes: ProfileProcesses,
    /// The server's time off the CPU too (scheduler switches; needs root).
    #[serde(default)]
    pub off_cpu: bool,
}

fn profile_on() -> bool {
    true
}

/// `[profile] processes`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProfileProcesses {
    /// The target's postmaster and every process it has.
    #[default]
    Server,
    /// The load generator (this process).
    Client,
    /// Both.
    Both,
}

/// `[[fault]]`: something done to a test's servers at a time after its run started.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FaultSpec {
    /// When, after the run's start: seconds or a duration (`"5s"`, `"1m30s"`).
    pub at: DurationValue,
    /// `promote` (a standby), `stop` (immediate shutdown of the primary), `kill`
    /// (SIGKILL of the primary and its processes), `restart` (the primary shut down
    /// fast and started again in place), `pause-replay`, `resume-replay` (on a
    /// standby), or `command` (a shell command: the fault on an existing server).
    pub action: String,
    /// The standby of `promote`, `pause-replay`, `resume-replay`: 1 (`replica1`, the
    /// default), 2…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replica: Option<u32>,
    /// `command`: the shell command (`sh -c`; `PGSURGE_TARGET` names the target).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    /// `delay`, `loss`: the network device whose outgoing packets are held or dropped
    /// (`tc netem`), e.g. a standby's end of the veth pair that leads to it; or
    /// `"replication"`: a standby's link held both ways by a relay in pgsurge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<String>,
    /// `delay`, `loss`: the network namespace that holds `link`, if not pgsurge's own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub netns: Option<String>,
    /// `delay` (and with `loss`): how long each packet is held (`"50ms"`; 0 and no
    /// loss removes the link's netem).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay: Option<DurationValue>,
    /// `loss` (and with `delay`): the share of packets dropped, percent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<f64>,
}

/// The `link` of a `delay` that the standbys' relay applies: a target with this
/// fault streams each standby through a relay in pgsurge (no netem needed).
pub const REPLICATION_LINK: &str = "replication";

/// The actions of a `[[fault]]`.
pub const FAULT_ACTIONS: &[&str] = &[
    "promote",
    "stop",
    "kill",
    "restart",
    "pause-replay",
    "resume-replay",
    "delay",
    "loss",
    "command",
];

impl FaultSpec {
    /// The fault at its time as a run applies it, or what is wrong with its time or
    /// its action.
    pub fn scheduled(&self) -> Result<pgsurge_faults::Scheduled, String> {
        use pgsurge_faults::Action;
        let at_s = self.at.seconds()?;
        let replica = self.replica.map(|n| n as usize);
        let link_keys = self.link.is_some()
            || self.netns.is_some()
            || self.delay.is_some()
            || self.loss.is_some();
        let action = match (self.action.as_str(), &self.command) {
            ("command", Some(command)) => Action::Command(command.clone()),
            ("delay" | "loss", _) if self.link.as_deref() == Some(REPLICATION_LINK) => {
                Action::Server(self.relay_delay(replica.unwrap_or(1))?)
            }
            ("delay" | "loss", _) => Action::Link(self.link_fault()?),
            (other, _) if link_keys => {
                return Err(format!(
                    "link, netns, delay and loss are keys of action = \"delay\" or \"loss\", not of \"{other}\""
                ))
            }
            (other, _) => {
                Action::Server(pgsurge_server::Fault::parse(other, replica).ok_or_else(|| {
                    format!("\"{other}\" is not a fault ({})", FAULT_ACTIONS.join(", "))
                })?)
            }
        };
        Ok(pgsurge_faults::Scheduled {
            at_s,
            name: self.action.clone(),
            action,
        })
    }

    /// `delay` on `link = "replication"`: the standby's relay holds what goes both
    /// ways; a relay copies a stream, so it has no loss.
    fn relay_delay(&self, replica: usize) -> Result<pgsurge_server::Fault, String> {
        if self.loss.is_some() || self.action == "loss" || self.netns.is_some() {
            return Err(format!(
                "link = \"{REPLICATION_LINK}\" is the standbys' relay in pgsurge, a stream \
                 copy: it takes a delay, no loss and no netns (give loss on a network device)"
            ));
        }
        let delay_s = match &self.delay {
            Some(d) => d.seconds()?,
            None => return Err("needs delay = \"50ms\" (0 removes it)".into()),
        };
        if !(delay_s.is_finite() && (0.0..=60.0).contains(&delay_s)) {
            return Err(format!("a delay of {delay_s} s: give one from 0 to 60 s"));
        }
        let delay_us = (delay_s * 1e6).round() as u64;
        Ok(pgsurge_server::Fault::LinkDelay { replica, delay_us })
    }

    /// `delay` and `loss`: the link and its netem.
    fn link_fault(&self) -> Result<pgsurge_faults::LinkFault, String> {
        let device = self
            .link
            .clone()
            .ok_or("needs link = \"DEVICE\": the network device whose packets it holds or drops")?;
        let delay_s = match (&self.delay, self.action.as_str()) {
            (Some(d), _) => d.seconds()?,
            (None, "delay") => return Err("needs delay = \"50ms\" (0 removes it)".into()),
            (None, _) => 0.0,
        };
        let loss = match (self.loss, self.action.as_str()) {
            (Some(l), _) => l,
            (None, "loss") => return Err("needs loss = a percentage (0 removes it)".into()),
            (None, _) => 0.0,
        };
        pgsurge_faults::LinkFault::new(self.netns.clone(), device, delay_s, loss)
    }
}

/// `[pinning]`: CPU lists (`"0-3"`, `"4,6"`) for throwaway servers (the postmaster and
/// every backend) and for the load generator (its client threads and samplers).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PinningSection {
    /// The throwaway servers' CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The load generator's CPUs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<String>,
}

impl PinningSection {
    /// True when nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.server.is_none() && self.client.is_none()
    }
}

/// `[distributed]`: how each test's load is generated by several processes. Each
/// test's clients, rate and seed are split across the generators as `pgsurge dist`
/// splits them; they start together and their results are merged bucket for bucket,
/// so the stored test is the exact union (one run, its per-second series and
/// histograms), measured against the server as any test is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DistributedSection {
    /// Generator processes per test (with `ssh`: one per host when absent).
    #[serde(default)]
    pub generators: u32,
    /// Where they run: `local` (processes on this machine), `ssh` (one per host of
    /// `hosts`, over the system ssh client) or `kube` (the pods of a Kubernetes Indexed
    /// Job, configured by `[distributed.kube]`).
    #[serde(default = "local_launcher")]
    pub launcher: String,
    /// Seconds between launching the generators and their common start.
    #[serde(default = "three")]
    pub start_in: u32,
    /// `local` and `ssh`: seconds a generator may run past the test's duration (from the
    /// common start) before it is stopped and the test fails naming it [default: 120].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deadline_margin: Option<u32>,
    /// `ssh`: the generator hosts (`[user@]host` or ssh aliases), one generator each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub hosts: Vec<String>,
    /// `ssh`: options for every connection (`ssh -o`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ssh_options: Vec<String>,
    /// `ssh`: a configuration file instead of `~/.ssh/config` (`ssh -F`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ssh_config: Option<PathBuf>,
    /// `ssh`: the pgsurge binary on the hosts (default `pgsurge`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remote_pgsurge: Option<String>,
    /// `kube`: the Job, the cluster and the store the pods write to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kube: Option<KubeSection>,
}

/// `[distributed.kube]`: each test's generators are the pods of a Kubernetes Indexed
/// Job (the Job of `pgsurge kube job`), applied with `kubectl`; each pod writes its
/// result into a PostgreSQL results store as one generator of a group, and the
/// campaign waits on the store for the group and merges it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct KubeSection {
    /// The generator image (built from the Containerfile; its entrypoint is pgsurge).
    pub image: String,
    /// Namespace of the Jobs (default: kubectl's current one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    /// kubectl context (default: the current one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<String>,
    /// The kubectl program (default `kubectl`, found on PATH).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kubectl: Option<String>,
    /// The Secret holding the database password, read by the pods as `PGPASSWORD`
    /// (none: the pods send no password).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
    /// The password's key in that Secret (default `password`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_key: Option<String>,
    /// The PostgreSQL results store the pods write to (default: the campaign's store,
    /// when it is a PostgreSQL one the pods can reach).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub store: Option<String>,
    /// Database host as the pods reach it (default: the target's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Database port (default: the target's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<u16>,
    /// Database user of the pods (default: the target's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// Database name (default: the target's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dbname: Option<String>,
    /// More environment of the generator container (`PGSSLMODE = "require"`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, String>,
    /// CPU of each pod, request and limit (a Kubernetes quantity; default `1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu: Option<String>,
    /// Memory of each pod, request and limit (default `512Mi`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory: Option<String>,
    /// Spreading over nodes: `soft` (default) or `hard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub spread: Option<String>,
    /// Seconds to wait for the results after the start and the run (default 120).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_margin: Option<u32>,
    /// The whole wait in seconds from applying the Job, instead of start_in + the run's
    /// duration + wait_margin (needed when tests run a number of transactions).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wait_timeout: Option<u32>,
    /// Keep each test's Job (and so its pods and logs) instead of deleting it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub keep_job: bool,
}

impl KubeSection {
    /// Seconds [`KubeSection::wait_margin`] defaults to.
    pub const DEFAULT_WAIT_MARGIN: u32 = 120;
}

impl DistributedSection {
    /// Generators per test: `generators`, or one per host with `ssh`.
    pub fn count(&self) -> u32 {
        if self.launcher == "ssh" && self.generators == 0 {
            self.hosts.len() as u32
        } else {
            self.generators
        }
    }
}

fn local_launcher() -> String {
    "local".into()
}

/// `[capacity]`: the highest rate (`-R`) whose latency percentile stays under a bound,
/// found per matrix cell by doubling the rate from `start_rate` until the objective is
/// missed, then bisecting until the passing and failing rates are within `resolution`.
/// Each step runs `repeats` times; a step passes when the median of its runs'
/// percentile is under the bound, every run ended ok, and the runs kept up with the rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CapacitySection {
    /// The percentile judged: 50, 90, 95, 99 or 99.9 (default 99).
    #[serde(default = "ninety_nine")]
    pub percentile: f64,
    /// The latency objective, e.g. "10ms".
    pub bound: DurationValue,
    /// The first rate tried, in tps.
    pub start_rate: f64,
    /// The highest rate tried (default: 1000 × start_rate).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rate: Option<f64>,
    /// Runs per step (default 3).
    #[serde(default = "three")]
    pub repeats: u32,
    /// Stop when the failing rate is within this fraction above the passing one
    /// (default 0.05).
    #[serde(default = "five_hundredths")]
    pub resolution: f64,
}

/// `[repeats]`: repeats until precise. A cell stops repeating once the 95 % interval
/// of the change between its targets (of its own mean, with one target) is within
/// `until` either side and the change is decided against a margin of ±`until` (not
/// `inconclusive`), after at least `min` repeats; it never runs more than `max`,
/// and once the campaign's `budget` of wall time is spent no cell starts a repeat
/// beyond `min`. Rounds stay interleaved (and shuffled) across targets.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RepeatsSection {
    /// The precision, as a percentage: `"2%"`.
    pub until: String,
    /// Fewest repeats of every cell (default 3).
    #[serde(default = "three")]
    pub min: u32,
    /// Most repeats of a cell (default 10).
    #[serde(default = "ten")]
    pub max: u32,
    /// Wall time after which no cell starts a repeat beyond `min` (default: none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub budget: Option<DurationValue>,
}

impl RepeatsSection {
    /// `until` as a fraction (0.02 for `"2%"`), or what is wrong with it.
    pub fn precision(&self) -> Result<f64, String> {
        let t = self.until.trim();
        let number = t.strip_suffix('%').ok_or("a percentage such as \"2%\"")?;
        match number.trim().parse::<f64>() {
            Ok(p) if p > 0.0 && p < 100.0 => Ok(p / 100.0),
            _ => Err("a percentage above 0 and below 100, such as \"2%\"".into()),
        }
    }
}

fn ten() -> u32 {
    10
}

fn ninety_nine() -> f64 {
    99.0
}
fn three() -> u32 {
    3
}
fn five_hundredths() -> f64 {
    0.05
}

impl CapacitySection {
    /// The objective in milliseconds.
    pub fn bound_ms(&self) -> f64 {
        self.bound.seconds().unwrap_or(0.0) * 1000.0
    }

    /// The highest rate tried (default: 1000 × start_rate, at most the highest rate a
    /// campaign takes).
    pub fn max_rate(&self) -> f64 {
        self.max_rate
            .unwrap_or((self.start_rate * 1000.0).min(limits::RATE.1))
    }

    /// The objective in numbers, as the search of `pgsurge_analysis::capacity` takes it.
    pub fn objective(&self) -> pgsurge_analysis::capacity::Objective {
        pgsurge_analysis::capacity::Objective {
            percentile: self.percentile,
            bound_ms: self.bound_ms(),
            start_rate: self.start_rate,
            max_rate: self.max_rate(),
            repeats: self.repeats,
            resolution: self.resolution,
        }
    }
}

/// `[hooks]`: shell commands (`sh -c`) run by the campaign, pgbench-tools' per-test
/// reset done properly: each has a timeout, and its exit status, duration and output are
/// stored with the test. A command is taken as written: `${VAR}` in it is the shell's. A failing `before_test` or `after_test` fails that test only; a
/// failing `set_start` stops the campaign before its first test.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HooksSection {
    /// Run once when a campaign invocation starts (also on resume), before any test.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set_start: Option<String>,
    /// Run before each test (after its scale is loaded): restart the server, drop the
    /// caches, `pg_prewarm`…
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before_test: Option<String>,
    /// Run after each test, before it is stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after_test: Option<String>,
    /// How long a hook may run before it is killed and counted as failed (default 10
    /// minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<DurationValue>,
}

impl HooksSection {
    /// True when no hook is set.
    pub fn is_empty(&self) -> bool {
        self.set_start.is_none() && self.before_test.is_none() && self.after_test.is_none()
    }

    /// The timeout of each hook.
    pub fn timeout(&self) -> std::time::Duration {
        let secs = self
            .timeout
            .as_ref()
            .and_then(|t| t.seconds().ok())
            .unwrap_or(600.0);
        std::time::Duration::from_secs_f64(secs)
    }
}

/// `[campaign]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CampaignSection {
    /// Name of the campaign (and of its set in the store).
    pub name: String,
    /// Free text stored with the set.
    #[serde(default)]
    pub description: Option<String>,
    /// Seed of the test order shuffle and of each test's `--random-seed`.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Alternate targets test by test (A B A B …) instead of running all of A first.
    #[serde(default = "yes")]
    pub interleave_targets: bool,
    /// Shuffle the order of matrix cells within each repeat round (seeded), so drift
    /// over time does not masquerade as a difference between cells.
    #[serde(default = "yes")]
    pub shuffle: bool,
    /// A/A noise check: run the first target a second time as an identical target
    /// named "NAME (A-A)", interleaved with the others. Comparing the two measures the
    /// machine's noise floor; the report and `pgsurge compare --aa` show it next to
    /// the real comparison.
    #[serde(default)]
    pub aa_check: bool,
}

fn default_seed() -> u64 {
    1
}
fn yes() -> bool {
    true
}

/// `[[target]]`: an existing server (`conninfo`) or a throwaway one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TargetSpec {
    /// Label, unique in the campaign.
    pub name: String,
    /// Existing server: libpq connection string or URI of the benchmark database.
    #[serde(default)]
    pub conninfo: Option<String>,
    /// Throwaway server from binaries in this directory.
    #[serde(default)]
    pub pg_bin: Option<PathBuf>,
    /// Throwaway server of this version (local binaries of that major, else fetched).
    #[serde(default)]
    pub pg_version: Option<String>,
    /// Throwaway server built from this PostgreSQL source: a tree, a git checkout or a
    /// release tarball (relative to the campaign file); cached by its inputs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<PathBuf>,
    /// Commit, branch or tag of a git `source` (default: its HEAD with the uncommitted
    /// changes to tracked files).
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
    /// Patches applied to `source`, in order (relative to the campaign file).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<PathBuf>,
    /// Arguments for `configure` (or `meson setup`) when building `source`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub configure: Vec<String>,
    /// Build `source` for profiling (frame pointers and debug symbols, see
    /// `pgsurge server build --profiling`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub profiling: bool,
    /// Settings for a throwaway server (`postgresql.auto.conf`).
    #[serde(default)]
    pub settings: BTreeMap<String, toml::Value>,
    /// initdb `--data-checksums` for a throwaway server.
    #[serde(default)]
    pub data_checksums: bool,
    /// Data directory of a throwaway server (default: a temporary directory, which is
    /// in memory where the temporary directory is tmpfs). Kept after the campaign;
    /// reused when it holds a cluster of the same major version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub data_dir: Option<PathBuf>,
    /// Existing server: URL of a Prometheus node_exporter on the server's host
    /// (`http://host:9100/metrics`, or `https://user:password@host:9100/metrics` for
    /// TLS and basic auth); empty = none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_exporter: Option<String>,
    /// PEM file of the CA (or the self-signed certificate) of an `https://`
    /// node_exporter; none: the public web roots. Relative to the campaign file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub node_exporter_ca: Option<PathBuf>,
    /// Where the server host's OS metrics come from: `auto` (default: node_exporter if
    /// given, else local for a throwaway or loopback/socket server, else the server's
    /// own files when the role may read them, else none), `local`, `node_exporter`,
    /// `pg_read_file` or `none`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_metrics: Option<String>,
    /// When to build the pgbench tables: `if-needed` (default: only when the tables of
    /// the scale are not there with the right size), `always`, `never`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<String>,
    /// Throwaway server: streaming standbys started with it (same binaries, settings
    /// and CPUs, each on its own port), stopped with it; the tests connect through a
    /// multi-host connection string that finds the one accepting writes.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub replicas: u32,
    /// `async` (default) or `sync`: whether commits wait until a standby has flushed
    /// them (`synchronous_standby_names = 'ANY 1 (…)'`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replication: Option<String>,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// `init` of a target.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitMode {
    /// Re-initialize before the first test of every scale.
    Always,
    /// Only when the tables are missing or of another size.
    IfNeeded,
    /// Never: a test whose tables are missing fails.
    Never,
}

impl InitMode {
    /// Parses `always`, `if-needed`, `never`.
    pub fn parse(s: &str) -> Option<InitMode> {
        match s {
            "always" => Some(InitMode::Always),
            "if-needed" => Some(InitMode::IfNeeded),
            "never" => Some(InitMode::Never),
            _ => None,
        }
    }
}

impl CampaignSection {
    /// A `[campaign]` section with `name` and every other key at its default.
    pub fn named(name: &str) -> CampaignSection {
        CampaignSection {
            name: name.to_owned(),
            description: None,
            seed: default_seed(),
            interleave_targets: true,
            shuffle: true,
            aa_check: false,
        }
    }
}

impl TargetSpec {
    /// Where a throwaway target's binaries come from: `built`, its `source` once built
    /// (None before: an error naming the target), `pg_bin`, `pg_version`, or found on
    /// this machine.
    pub fn binary_source(
        &self,
        built: Option<&std::path::Path>,
    ) -> Result<pgsurge_server::BinarySource, String> {
        use pgsurge_server::BinarySource;
        Ok(match (&self.pg_bin, &self.pg_version) {
            _ if self.source.is_some() => match built {
                Some(dir) => BinarySource::Dir(dir.to_path_buf()),
                None => {
                    return Err(format!(
                        "target \"{}\": its source is not built yet",
                        self.name
                    ))
                }
            },
            (Some(dir), _) => BinarySource::Dir(dir.clone()),
            (None, Some(v)) => BinarySource::Version(v.clone()),
            (None, None) => BinarySource::Auto,
        })
    }

    /// A throwaway-server target named `name`, every other key at its default
    /// (local binaries found by discovery, default settings).
    pub fn throwaway(name: &str) -> TargetSpec {
        TargetSpec {
            name: name.to_owned(),
            conninfo: None,
            pg_bin: None,
            pg_version: None,
            source: None,
            git_ref: None,
            patches: Vec::new(),
            configure: Vec::new(),
            profiling: false,
            settings: BTreeMap::new(),
            data_checksums: false,
            data_dir: None,
            node_exporter: None,
            node_exporter_ca: None,
            host_metrics: None,
            init: None,
            replicas: 0,
            replication: None,
        }
    }

    /// The builder of the target's throwaway primary: its binaries (`built` from
    /// source, or as `binary_source` finds them), data directory, settings and
    /// checksums, `pg_stat_statements`, the servers' CPUs and the benchmark database.
    pub fn cluster_builder(
        &self,
        built: Option<&std::path::Path>,
        cpus: Option<pgsurge_affinity::CpuList>,
        database: &str,
    ) -> Result<pgsurge_server::ClusterBuilder, String> {
        let mut builder = pgsurge_server::ClusterBuilder::new();
        if let Some(dir) = &self.data_dir {
            builder = builder.data_dir(dir);
        }
        Ok(builder
            .binaries(self.binary_source(built)?)
            .settings(self.settings_text())
            .data_checksums(self.data_checksums)
            .statements(true)
            .cpus(cpus)
            .database(database)
            .temp_prefix(format!("pgsurge-campaign-{}", self.name)))
    }

    /// Whether commits wait for a standby (`replication = "sync"`).
    pub fn sync_replication(&self) -> bool {
        self.replication.as_deref() == Some("sync")
    }

    /// The build request of a target with a `source`.
    pub fn build_request(&self) -> Option<pgsurge_server::source_build::BuildRequest> {
        let source = self.source.clone()?;
        Some(pgsurge_server::source_build::BuildRequest {
            source,
            git_ref: self.git_ref.clone(),
            patches: self.patches.clone(),
            configure: self.configure.clone(),
            profiling: self.profiling,
            ..Default::default()
        })
    }

    /// True for a throwaway server (no `conninfo`).
    pub fn is_throwaway(&self) -> bool {
        self.conninfo.is_none()
    }

    /// The target's init mode (validated: unknown text is refused at load).
    pub fn init_mode(&self) -> InitMode {
        self.init
            .as_deref()
            .and_then(InitMode::parse)
            .unwrap_or(InitMode::IfNeeded)
    }

    /// The node_exporter URL, when one is given (an empty string is none).
    pub fn node_exporter_url(&self) -> Option<&str> {
        self.node_exporter
            .as_deref()
            .map(str::trim)
            .filter(|u| !u.is_empty())
    }

    /// Settings as strings (`shared_buffers = "1GB"`, `fsync = false` → "off"...).
    pub fn settings_text(&self) -> Vec<(String, String)> {
        (self.settings.iter())
            .map(|(k, v)| (k.clone(), setting_text(v)))
            .collect()
    }
}

/// A setting's value as the server takes it (`true` is `on`).
pub fn setting_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        toml::Value::Boolean(b) => if *b { "on" } else { "off" }.to_string(),
        other => other.to_string(),
    }
}

/// `[matrix]`: every combination of these values is one test (per target and repeat).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatrixSpec {
    /// Scale factors (`-s` of `-i`); the database is re-initialized when it changes.
    pub scales: Vec<u32>,
    /// Client counts (`-c`).
    pub clients: Vec<u32>,
    /// Workloads: built-in names, `{ file = "x.sql" }`, or weighted mixes.
    #[serde(default = "default_scripts")]
    pub scripts: Vec<ScriptSpec>,
    /// Total target rates in transactions per second (`-R`); 0 = unthrottled.
    #[serde(default)]
    pub rates: Vec<f64>,
    /// Per-client target rates; the total rate is clients × rate. Not with `rates`.
    #[serde(default)]
    pub rates_per_client: Vec<f64>,
    /// How many times each cell runs.
    #[serde(default = "one")]
    pub repeats: u32,
    /// Query modes to run each cell in (replaces `run.query_mode`; adds `/M<mode>` to
    /// test keys).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub query_modes: Vec<String>,
    /// Thread counts (`-j`, clamped to the clients; replaces `run.threads`; adds `/j<n>`
    /// to test keys).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub threads: Vec<u32>,
    /// Server settings swept over, e.g. `{ shared_buffers = ["128MB", "1GB"] }`: every
    /// combination is a dimension (adds `/<name>=<value>` to test keys). A throwaway
    /// server is restarted with each value (its data kept when it has a `data_dir`,
    /// otherwise initialized again); on an existing server each test's sessions get the
    /// value (`options=-c name=value`), so only settings a session may change are allowed.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub settings: BTreeMap<String, Vec<toml::Value>>,
}

impl MatrixSpec {
    /// A matrix of `scales` × `clients` × `scripts`, no rates, one repeat.
    pub fn new(scales: Vec<u32>, clients: Vec<u32>, scripts: Vec<ScriptSpec>) -> MatrixSpec {
        MatrixSpec {
            scales,
            clients,
            scripts,
            rates: Vec::new(),
            rates_per_client: Vec::new(),
            repeats: one(),
            query_modes: Vec::new(),
            threads: Vec::new(),
            settings: BTreeMap::new(),
        }
    }
}

fn one() -> u32 {
    1
}
fn default_scripts() -> Vec<ScriptSpec> {
    vec![ScriptSpec::Builtin("tpcb-like".into())]
}

/// One workload of the matrix.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ScriptSpec {
    /// A built-in script name: `tpcb-like`, `simple-update`, `select-only`.
    Builtin(String),
    /// A weighted mix of built-in and file scripts, with a display name.
    Mix {
        /// Display name of the mix.
        name: String,
        /// The scripts of the mix with their weights (`-b`/`-f NAME@W`).
        mix: Vec<ScriptPart>,
    },
    /// One built-in or file script (with an optional weight, ignored alone), or a
    /// workload pack (`{ workload = "tpcc" }`).
    Part(ScriptPart),
}

/// One part of a workload.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptPart {
    /// Built-in script name.
    #[serde(default)]
    pub builtin: Option<String>,
    /// Script file, relative to the campaign file.
    #[serde(default)]
    pub file: Option<PathBuf>,
    /// A workload pack, built-in name or directory (relative to the campaign file):
    /// its scripts with their weights, its loader and its metrics. A whole workload,
    /// never part of a mix.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workload: Option<String>,
    /// A PostgreSQL log replayed as the workload (relative to the campaign file): every
    /// session onto the target's database, as its user. A whole workload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<PathBuf>,
    /// The replay's speed factor (2: twice as fast as logged; default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub speed: Option<f64>,
    /// The replay sends each session's next statement as soon as its previous answer
    /// came (`pgsurge replay --max`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<bool>,
    /// Weight in a mix (`@W`).
    #[serde(default = "one")]
    pub weight: u32,
}

/// How long each test runs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// `-T` seconds.
    Duration(u32),
    /// `-t` transactions per client.
    Transactions(u32),
}

/// `[run]`: options shared by every test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RunSection {
    /// Duration of each test: seconds or a string such as "90s", "2m".
    #[serde(default)]
    pub duration: Option<DurationValue>,
    /// Transactions per client instead of a duration.
    #[serde(default)]
    pub transactions: Option<u32>,
    /// Threads: a number, or "auto" (min(clients, CPUs)).
    #[serde(default)]
    pub threads: Option<ThreadsValue>,
    /// simple / extended / prepared.
    #[serde(default = "default_mode")]
    pub query_mode: String,
    /// `-L`: transactions slower than this count as late (skipped under a rate).
    #[serde(default)]
    pub latency_limit: Option<DurationValue>,
    /// Time run before each test and discarded (a separate, unrecorded run), or
    /// `"auto"`: the test runs until its detected steady window has lasted `duration`
    /// (at most `warmup_max` longer).
    #[serde(default)]
    pub warmup: Option<DurationValue>,
    /// With `warmup = "auto"`: the most a test may run beyond `duration` while its
    /// warm-up lasts (default 10 minutes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub warmup_max: Option<DurationValue>,
    /// `--max-tries`.
    #[serde(default)]
    pub max_tries: Option<u32>,
    /// `-D NAME=VALUE` for every script.
    #[serde(default)]
    pub defines: BTreeMap<String, toml::Value>,
    /// Database name used on throwaway servers.
    #[serde(default = "default_db")]
    pub database: String,
    /// Extra pgbench flags (e.g. ["--failures-detailed"]); only the flags
    /// [`crate::extra::extra_flags`] lists, each mapped to a typed run option.
    #[serde(default)]
    pub extra_args: Vec<String>,
    /// How long a test that cannot reach its server waits for it to come back
    /// (retrying with back-off) before the server's remaining tests are failed
    /// (default 3 minutes; 0 = do not wait). Not part of the campaign's identity.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outage_wait: Option<DurationValue>,
    /// With `[[fault]]`s: the table (`client_id`, `txn_seq` columns) whose rows the
    /// test's script writes, one per transaction; after each test the transactions
    /// its clients were told committed are looked for in it on the primary that
    /// answers, and those missing are stored as acknowledged commits lost.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_commits: Option<String>,
}

fn default_mode() -> String {
    "simple".into()
}
fn default_db() -> String {
    "pgsurge".into()
}

impl Default for RunSection {
    fn default() -> Self {
        RunSection {
            duration: None,
            transactions: None,
            threads: None,
            query_mode: default_mode(),
            latency_limit: None,
            warmup: None,
            warmup_max: None,
            max_tries: None,
            defines: BTreeMap::new(),
            database: default_db(),
            extra_args: Vec::new(),
            outage_wait: None,
            check_commits: None,
        }
    }
}

/// A duration: integer seconds or text with a unit (ms, s, m, h).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DurationValue {
    /// Seconds.
    Seconds(f64),
    /// "500ms", "10s", "2m", "1h".
    Text(String),
}

impl DurationValue {
    /// The duration in seconds, or a message saying what is wrong.
    pub fn seconds(&self) -> Result<f64, String> {
        match self {
            DurationValue::Seconds(s) if *s >= 0.0 && s.is_finite() => Ok(*s),
            DurationValue::Seconds(s) => Err(format!("{s} is not a valid duration")),
            DurationValue::Text(t) => parse_duration(t),
        }
    }
}

/// Parses a bare number of seconds (`30`, `1.5`) or a duration with units, also
/// combined: `500ms`, `90s`, `1m30s`, `2h`, `1h 30m` (humantime's syntax).
pub fn parse_duration(t: &str) -> Result<f64, String> {
    let t = t.trim();
    if let Ok(n) = t.parse::<f64>() {
        return if n >= 0.0 && n.is_finite() {
            Ok(n)
        } else {
            Err(format!("\"{t}\" is not a valid duration"))
        };
    }
    humantime::parse_duration(t)
        .map(|d| d.as_secs_f64())
        .map_err(|e| {
            format!("\"{t}\" is not a duration ({e}; use e.g. 30, \"30s\", \"500ms\", \"1m30s\", \"2h\")")
        })
}

/// Threads: a number or "auto".
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ThreadsValue {
    /// A fixed count (clamped to the client count).
    Count(u32),
    /// "auto".
    Auto(String),
}

/// `[init]`: how each scale is built; `[init.scale.N]` overrides for scale N.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitSection {
    /// "client" (COPY from the client, `-I dtgvp`) or "server" (`-I dtGvp`).
    #[serde(default)]
    pub method: Option<String>,
    /// `--partitions`.
    #[serde(default)]
    pub partitions: Option<u32>,
    /// `--partition-method` (range / hash).
    #[serde(default)]
    pub partition_method: Option<String>,
    /// `-F`.
    #[serde(default)]
    pub fillfactor: Option<u32>,
    /// `--unlogged-tables`.
    #[serde(default)]
    pub unlogged: Option<bool>,
    /// `--foreign-keys`.
    #[serde(default)]
    pub foreign_keys: Option<bool>,
    /// `--init-jobs`: connections that load, vacuum and index `pgbench_accounts`
    /// (1 when absent: pgbench's serial `-i`).
    #[serde(default)]
    pub jobs: Option<u32>,
    /// Overrides per scale (keys are scale numbers as strings).
    #[serde(default)]
    pub scale: BTreeMap<String, InitOptionsSpec>,
}

/// Options of `-i`.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitOptionsSpec {
    /// "client" (COPY from the client, `-I dtgvp`) or "server" (`-I dtGvp`).
    #[serde(default)]
    pub method: Option<String>,
    /// `--partitions`.
    #[serde(default)]
    pub partitions: Option<u32>,
    /// `--partition-method` (range / hash).
    #[serde(default)]
    pub partition_method: Option<String>,
    /// `-F`.
    #[serde(default)]
    pub fillfactor: Option<u32>,
    /// `--unlogged-tables`.
    #[serde(default)]
    pub unlogged: Option<bool>,
    /// `--foreign-keys`.
    #[serde(default)]
    pub foreign_keys: Option<bool>,
    /// `--init-jobs`: connections that load, vacuum and index `pgbench_accounts`
    /// (1 when absent: pgbench's serial `-i`).
    #[serde(default)]
    pub jobs: Option<u32>,
}

impl InitSection {
    /// The effective options for `scale` (override fields win over defaults).
    pub fn for_scale(&self, scale: u32) -> InitOptionsSpec {
        let d = InitOptionsSpec {
            method: self.method.clone(),
            partitions: self.partitions,
            partition_method: self.partition_method.clone(),
            fillfactor: self.fillfactor,
            unlogged: self.unlogged,
            foreign_keys: self.foreign_keys,
            jobs: self.jobs,
        };
        match self.scale.get(&scale.to_string()) {
            None => d,
            Some(o) => InitOptionsSpec {
                method: o.method.clone().or_else(|| d.method.clone()),
                partitions: o.partitions.or(d.partitions),
                partition_method: o
                    .partition_method
                    .clone()
                    .or_else(|| d.partition_method.clone()),
                fillfactor: o.fillfactor.or(d.fillfactor),
                unlogged: o.unlogged.or(d.unlogged),
                foreign_keys: o.foreign_keys.or(d.foreign_keys),
                jobs: o.jobs.or(d.jobs),
            },
        }
    }
}

/// `[sampling]`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SamplingSection {
    /// Sample OS metrics from /proc (client host = server host for throwaway servers).
    #[serde(default = "yes")]
    pub os: bool,
    /// Sample PostgreSQL statistics views.
    #[serde(default = "yes")]
    pub pg: bool,
    /// Seconds between samples.
    #[serde(default = "one_f")]
    pub interval: f64,
    /// Block devices to sample (default: every non-virtual device).
    #[serde(default)]
    pub devices: Vec<String>,
}

fn one_f() -> f64 {
    1.0
}

impl Default for SamplingSection {
    fn default() -> Self {
        SamplingSection {
            os: true,
            pg: true,
            interval: 1.0,
            devices: Vec::new(),
        }
    }
}

/// `[hygiene]`: the state reset before each test.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HygieneSection {
    /// `TRUNCATE pgbench_history` before each test.
    #[serde(default = "yes")]
    pub truncate_history: bool,
    /// `VACUUM ANALYZE` of the pgbench tables before each test.
    #[serde(default = "yes")]
    pub vacuum: bool,
    /// `CHECKPOINT` (and wait for it) before each test.
    #[serde(default = "yes")]
    pub checkpoint: bool,
    /// `pg_stat_reset()` (and shared stats) before each test. Default: on for
    /// throwaway servers, off for existing ones (a shared server's cluster-wide
    /// statistics are left alone; deltas come from the before/after snapshots).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_stats: Option<bool>,
    /// Server commits may differ from the client's count by this many percent before a
    /// warning is stored.
    #[serde(default = "five")]
    pub commit_tolerance_pct: f64,
    /// Throwaway servers: a new cluster (initdb, then freshly loaded data) before every
    /// test (`test`), whenever the test's scale differs from the last one's (`scale`),
    /// or never (`never`, the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fresh_cluster: Option<String>,
    /// Drop the OS page cache before each test (root only; otherwise a stored warning).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub drop_caches: bool,
}

/// `[hygiene] fresh_cluster`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FreshCluster {
    /// A new cluster before every test.
    Test,
    /// A new cluster when the scale changes.
    Scale,
    /// Keep the cluster for the whole campaign.
    Never,
}

impl FreshCluster {
    /// Parses `test`, `scale`, `never`.
    pub fn parse(text: &str) -> Option<FreshCluster> {
        match text {
            "test" => Some(FreshCluster::Test),
            "scale" => Some(FreshCluster::Scale),
            "never" => Some(FreshCluster::Never),
            _ => None,
        }
    }
}

fn five() -> f64 {
    5.0
}

impl Default for HygieneSection {
    fn default() -> Self {
        HygieneSection {
            truncate_history: true,
            vacuum: true,
            checkpoint: true,
            reset_stats: None,
            commit_tolerance_pct: 5.0,
            fresh_cluster: None,
            drop_caches: false,
        }
    }
}

impl HygieneSection {
    /// `fresh_cluster` (validated; `never` when not given).
    pub fn fresh_cluster(&self) -> FreshCluster {
        self.fresh_cluster
            .as_deref()
            .and_then(FreshCluster::parse)
            .unwrap_or(FreshCluster::Never)
    }

    /// Whether statistics are reset before each test on a throwaway (true) or existing
    /// (false) server.
    pub fn resets_stats(&self, throwaway: bool) -> bool {
        self.reset_stats.unwrap_or(throwaway)
    }
}

/// The ranges the numbers of a campaign file must be in: what a benchmark can mean,
/// well inside what the engine and the store take (a value outside is refused with
/// the key and its range).
pub mod limits {
    /// `matrix.scales` (100,000 rows of pgbench_accounts each).
    pub const SCALE: (u32, u32) = (1, 1_000_000);
    /// `matrix.clients`.
    pub const CLIENTS: (u32, u32) = (1, 10_000);
    /// `matrix.threads`, `run.threads`.
    pub const THREADS: (u32, u32) = (1, 1_024);
    /// Rates in tps: `matrix.rates` (and clients × `rates_per_client`),
    /// `capacity.start_rate`, `capacity.max_rate`.
    pub const RATE: (f64, f64) = (0.0, 10_000_000.0);
    /// `matrix.repeats`.
    pub const REPEATS: (u32, u32) = (1, 1_000);
    /// The weight of a script in a mix.
    pub const WEIGHT: (u32, u32) = (1, 1_000_000);
    /// `run.duration`, in seconds (30 days).
    pub const DURATION_S: (f64, f64) = (1.0, 2_592_000.0);
    /// `run.transactions` (per client).
    pub const TRANSACTIONS: (u32, u32) = (1, 1_000_000_000);
    /// `run.max_tries` (0: unlimited, with a duration or a latency limit).
    pub const MAX_TRIES: (u32, u32) = (0, 1_000_000);
    /// `run.latency_limit` and `capacity.bound`, in seconds (above 0).
    pub const LATENCY_S: (f64, f64) = (0.0, 3_600.0);
    /// `run.warmup`, `run.outage_wait`, `hooks.timeout`, in seconds (1 day).
    pub const WAIT_S: (f64, f64) = (0.0, 86_400.0);
    /// `init.partitions`.
    pub const PARTITIONS: (u32, u32) = (0, 100_000);
    /// `capacity.repeats`.
    pub const CAPACITY_REPEATS: (u32, u32) = (1, 100);
    /// `capacity.resolution`.
    pub const RESOLUTION: (f64, f64) = (0.001, 0.5);
    /// `distributed.generators`.
    pub const GENERATORS: (u32, u32) = (1, 1_000);
    /// `distributed.start_in`, `distributed.kube.wait_margin`, in seconds.
    pub const START_IN_S: (u32, u32) = (0, 3_600);
    /// `distributed.kube.wait_timeout`, in seconds (1 day).
    pub const WAIT_TIMEOUT_S: (u32, u32) = (1, 86_400);
}

/// `run.warmup`'s value for a warm-up detected in the test's own run.
pub const AUTO_WARMUP: &str = "auto";
/// Default `run.warmup_max`, seconds.
pub const DEFAULT_WARMUP_MAX_S: f64 = 600.0;

/// A parsed and validated campaign with where it came from. Made by [`crate::load`]
/// ([`Campaign::load`], [`Campaign::parse`], [`Campaign::from_spec`]).
#[derive(Debug, Clone)]
pub struct Campaign {
    /// The parsed, validated campaign (its [`crate::load::INTERPOLATED_KEYS`] with `${VAR}` replaced).
    pub spec: CampaignSpec,
    /// The file's text as written, `${VAR}` references kept (stored with the set, its
    /// passwords masked).
    pub text: String,
    /// Directory script files are relative to.
    pub base_dir: PathBuf,
    /// Path of the file, for messages.
    pub path: String,
    /// The builds of the targets with a `source`, by target name, once made
    /// (`pgsurge_campaign::sources::build_sources`).
    pub builds: BTreeMap<String, pgsurge_server::source_build::Built>,
    /// `[run] extra_args`, read once at load.
    pub extra: crate::extra::ExtraFlags,
}

impl Campaign {
    /// The test limit (default: 60 s).
    pub fn limit(&self) -> Limit {
        let r = &self.spec.run;
        match (&r.duration, r.transactions) {
            (_, Some(t)) => Limit::Transactions(t),
            (Some(d), None) => Limit::Duration(d.seconds().unwrap_or(60.0) as u32),
            (None, None) => Limit::Duration(60),
        }
    }

    /// How long to wait for an unreachable server ([`RunSection::outage_wait`]).
    pub fn outage_wait(&self) -> std::time::Duration {
        let secs = self
            .spec
            .run
            .outage_wait
            .as_ref()
            .and_then(|w| w.seconds().ok())
            .unwrap_or(180.0);
        std::time::Duration::from_secs_f64(secs)
    }

    /// True for `warmup = "auto"`: the warm-up is detected in the test's own run.
    pub fn warmup_auto(&self) -> bool {
        matches!(&self.spec.run.warmup, Some(DurationValue::Text(t)) if t.trim() == AUTO_WARMUP)
    }

    /// `[run] latency_limit` in seconds.
    pub fn latency_limit_s(&self) -> Option<f64> {
        let limit = self.spec.run.latency_limit.as_ref();
        limit.and_then(|l| l.seconds().ok())
    }

    /// With `warmup = "auto"`: the most seconds a test runs beyond its duration
    /// (`warmup_max`, default [`DEFAULT_WARMUP_MAX_S`]); 0 otherwise.
    pub fn warmup_max_s(&self) -> f64 {
        if !self.warmup_auto() {
            return 0.0;
        }
        self.spec
            .run
            .warmup_max
            .as_ref()
            .and_then(|w| w.seconds().ok())
            .unwrap_or(DEFAULT_WARMUP_MAX_S)
    }

    /// The repeats each cell is planned for: `[repeats] max` (the worst case), else
    /// `matrix.repeats`.
    pub fn planned_repeats(&self) -> u32 {
        self.spec
            .repeats
            .as_ref()
            .map_or(self.spec.matrix.repeats, |r| r.max)
    }

    /// `[repeats] until` as a fraction (0.02 = ±2 %); None without `[repeats]`.
    pub fn precision_target(&self) -> Option<f64> {
        self.spec.repeats.as_ref()?.precision().ok()
    }

    /// `[repeats] budget` in seconds; None when there is none.
    pub fn repeats_budget(&self) -> Option<std::time::Duration> {
        let b = self
            .spec
            .repeats
            .as_ref()?
            .budget
            .as_ref()?
            .seconds()
            .ok()?;
        Some(std::time::Duration::from_secs_f64(b))
    }

    /// The limit of a test's measured run: with `warmup = "auto"` the automatic warm-up
    /// is part of it, so it may last `warmup_max` beyond the duration.
    pub fn measured_limit(&self) -> Limit {
        match self.limit() {
            Limit::Duration(d) if self.warmup_auto() => {
                Limit::Duration(d.saturating_add(self.warmup_max_s().round() as u32))
            }
            other => other,
        }
    }

    /// With `warmup = "auto"`: the seconds a test's steady window must last (its
    /// duration); None otherwise.
    pub fn steady_window_s(&self) -> Option<f64> {
        match self.limit() {
            Limit::Duration(d) if self.warmup_auto() => Some(f64::from(d)),
            _ => None,
        }
    }

    /// The longest warm-up a test can have: the fixed one, or the cap of an automatic
    /// one (what plans and estimates count).
    pub fn warmup_worst_s(&self) -> f64 {
        self.warmup_s() + self.warmup_max_s()
    }

    /// Warm-up seconds of a fixed warm-up (0 when none, or automatic).
    pub fn warmup_s(&self) -> f64 {
        self.spec
            .run
            .warmup
            .as_ref()
            .and_then(|w| w.seconds().ok())
            .unwrap_or(0.0)
    }

    /// Hash of everything that makes tests comparable: the spec without the matrix value
    /// lists and the description. Rerunning a campaign with the same hash resumes (or
    /// extends) its set; changing anything else starts a new set.
    pub fn identity_hash(&self) -> String {
        use sha2::{Digest, Sha256};
        let mut spec = self.spec.clone();
        spec.campaign.description = None;
        spec.run.outage_wait = None;
        // The hash is stored: it must not be a function of a password (a weak one could
        // be found by hashing guesses). Masking changes nothing when there is none.
        for t in &mut spec.targets {
            if let Some(ci) = &t.conninfo {
                t.conninfo = Some(pgsurge_wire::redact::redact(ci));
            }
            if let Some(url) = &t.node_exporter {
                t.node_exporter = Some(pgsurge_wire::redact::redact(url));
            }
        }
        spec.matrix.scales.clear();
        spec.matrix.clients.clear();
        spec.matrix.scripts.clear();
        spec.matrix.rates.clear();
        spec.matrix.rates_per_client.clear();
        spec.matrix.repeats = 0;
        spec.matrix.query_modes.clear();
        spec.matrix.threads.clear();
        spec.matrix.settings.clear();
        spec.campaign.shuffle = false;
        spec.campaign.interleave_targets = false;
        spec.thresholds.clear();
        let json = serde_json::to_string(&spec).unwrap_or_default();
        let digest = Sha256::digest(json.as_bytes());
        digest.iter().take(12).map(|b| format!("{b:02x}")).collect()
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::*;

    const GOOD: &str = r#"
[campaign]
name = "t"
[[target]]
name = "a"
conninfo = "dbname=x"
[matrix]
scales = [1, 2]
clients = [1, 4]
scripts = ["select-only", { name = "mix", mix = [{ builtin = "tpcb-like", weight = 1 }, { builtin = "select-only", weight = 9 }] }]
repeats = 2
[run]
duration = "2s"
threads = "auto"
[init.scale.2]
method = "server"
"#;

    fn parse(t: &str) -> Result<Campaign, SpecError> {
        Campaign::parse(t, "test.toml", Path::new("."))
    }

    /// A campaign with `launcher = "kube"`; `edit` changes its text.
    fn kube_campaign(edit: impl Fn(String) -> String) -> Result<Campaign, SpecError> {
        let text = r#"
[campaign]
name = "k"
[[target]]
name = "db"
conninfo = "host=db.internal port=5432 user=bench dbname=pgb"
[matrix]
scales = [1]
clients = [4]
scripts = ["select-only"]
[run]
duration = 10
[distributed]
launcher = "kube"
generators = 2
start_in = 60
[distributed.kube]
image = "registry.example/pgsurge:0.1.0"
secret = "pgsurge-db"
store = "postgresql://bench@results-db:5432/pgsurge"
"#;
        parse(&edit(text.to_string()))
    }

    #[test]
    fn the_kube_launcher_is_checked_at_parse_time() {
        let c = kube_campaign(|t| t).expect("a good kube campaign");
        let k = c.spec.distributed.as_ref().and_then(|d| d.kube.as_ref());
        assert_eq!(
            k.map(|k| k.image.as_str()),
            Some("registry.example/pgsurge:0.1.0")
        );
        // A throwaway target is fine once the pods are told where to connect.
        kube_campaign(|t| {
            t.replace(
                "conninfo = \"host=db.internal port=5432 user=bench dbname=pgb\"\n",
                "",
            )
            .replace(
                "[distributed.kube]\n",
                "[distributed.kube]\nhost = \"10.1.2.3\"\n",
            )
        })
        .expect("throwaway target with host");

        const KUBE: &str = "[distributed.kube]\n";
        type Edit = Box<dyn Fn(String) -> String>;
        let cases: Vec<(Edit, &str, &str)> = vec![
            (
                Box::new(|t| t.replace("launcher = \"kube\"", "launcher = \"k8s\"")),
                "distributed.launcher",
                "\"k8s\" is not a launcher (local, ssh, kube)",
            ),
            (
                Box::new(|t| t[..t.find(KUBE).unwrap()].to_string()),
                "distributed.kube",
                "needs a [distributed.kube] table",
            ),
            (
                Box::new(|t| t.replace("launcher = \"kube\"", "launcher = \"local\"")),
                "distributed.kube",
                "[distributed.kube] goes with launcher = \"kube\"",
            ),
            (
                Box::new(|t| t.replace("generators = 2", "hosts = [\"gen1\"]")),
                "distributed.hosts",
                "go with launcher = \"ssh\"",
            ),
            (
                Box::new(|t| t.replace("start_in = 60", "start_in = 0")),
                "distributed.start_in",
                "at least 1 second",
            ),
            (
                Box::new(|t| t.replace("registry.example/pgsurge:0.1.0", "")),
                "distributed.kube.image",
                "is not an image reference",
            ),
            (
                Box::new(|t| t + "namespace = \"Bench\"\n"),
                "distributed.kube.namespace",
                "\"Bench\" is not a namespace name",
            ),
            (
                Box::new(|t| t.replace("secret = \"pgsurge-db\"", "secret_key = \"pw\"")),
                "distributed.kube.secret_key",
                "needs secret",
            ),
            (
                Box::new(|t| t + "cpu = \"two\"\n"),
                "distributed.kube.cpu",
                "\"two\" is not a Kubernetes quantity",
            ),
            (
                Box::new(|t| t + "spread = \"always\"\n"),
                "distributed.kube.spread",
                "\"always\" is not a spread (soft, hard)",
            ),
            (
                Box::new(|t| t.replace("postgresql://bench@results-db:5432/pgsurge", "r.db")),
                "distributed.kube.store",
                "is not a PostgreSQL store",
            ),
            (
                Box::new(|t| t.replace("bench@results-db", "bench:Store-Pw-9@results-db")),
                "distributed.kube.store",
                "contains a password",
            ),
            (
                Box::new(|t| t.replace("results-db:5432/pgsurge", "results-db/")),
                "distributed.kube.store",
                "does not name its host, port and database",
            ),
            (
                Box::new(|t| t + "user = \"bench password=Inline-Pw-9\"\n"),
                "distributed.kube.user",
                "contains a password",
            ),
            (
                Box::new(|t| t + "env = { PGPASSWORD = \"Env-Pw-9\" }\n"),
                "distributed.kube.env.PGPASSWORD",
                "the password only comes from the Secret",
            ),
            (
                Box::new(|t| t.replace("duration = 10", "transactions = 100")),
                "distributed.kube.wait_timeout",
                "give wait_timeout",
            ),
            (
                Box::new(|t| t.replace("\"select-only\"", "{ file = \"mine.sql\" }")),
                "matrix.scripts",
                "script file mine.sql: the pods cannot read files of this machine",
            ),
            (
                Box::new(|t| {
                    t.replace(
                        "conninfo = \"host=db.internal port=5432 user=bench dbname=pgb\"\n",
                        "",
                    )
                }),
                "distributed.kube.host",
                "target \"db\" is a throwaway server",
            ),
            (
                Box::new(|t| t.replace("host=db.internal", "host=/var/run/postgresql")),
                "distributed.kube.host",
                "target \"db\": the server is reached at /var/run/postgresql",
            ),
        ];
        for (edit, key, message) in cases {
            let text = edit(kube_campaign(|t| t).map(|c| c.text).unwrap());
            match parse(&text) {
                Err(SpecError::Invalid {
                    key: k, message: m, ..
                }) => {
                    assert_eq!(k, key, "{m}\n{text}");
                    assert!(m.contains(message), "{m}\n{text}");
                    assert!(!m.contains("-Pw-9"), "a password in a message: {m}");
                }
                other => panic!("expected {key}: {message}, got {other:?}\n{text}"),
            }
        }
        // Without an image the table does not parse.
        let e = kube_campaign(|t| t.replace("image = \"registry.example/pgsurge:0.1.0\"\n", ""))
            .unwrap_err();
        assert!(e.to_string().contains("missing field `image`"), "{e}");
    }

    #[test]
    fn an_automatic_warm_up_is_capped_and_needs_a_duration() {
        let auto = |extra: &str| {
            parse(&GOOD.replace(
                "threads = \"auto\"",
                &format!("threads = \"auto\"\nwarmup = \"auto\"\n{extra}"),
            ))
        };
        let c = auto("").unwrap();
        assert!(c.warmup_auto());
        assert_eq!(
            (c.warmup_s(), c.warmup_max_s()),
            (0.0, DEFAULT_WARMUP_MAX_S)
        );
        assert_eq!(c.warmup_worst_s(), DEFAULT_WARMUP_MAX_S);
        let c = auto("warmup_max = \"90s\"").unwrap();
        assert_eq!(c.warmup_worst_s(), 90.0);
        // A fixed warm-up is what it says; its identity is unchanged by the new key.
        let fixed = parse(&GOOD.replace("threads = \"auto\"", "warmup = \"10s\"")).unwrap();
        assert!(!fixed.warmup_auto());
        assert_eq!((fixed.warmup_s(), fixed.warmup_worst_s()), (10.0, 10.0));
        assert!(!serde_json::to_string(&fixed.spec)
            .unwrap()
            .contains("warmup_max"));
        let cases = [
            (
                auto("warmup_max = 0").unwrap_err(),
                "run.warmup_max",
                "must be more than 0",
            ),
            (
                auto("warmup_max = \"2days\"").unwrap_err(),
                "run.warmup_max",
                "give 0 to 86400 seconds",
            ),
            (
                parse(&GOOD.replace("threads = \"auto\"", "warmup_max = \"1m\"")).unwrap_err(),
                "run.warmup_max",
                "applies only with warmup = \"auto\"",
            ),
            (
                parse(&GOOD.replace("duration = \"2s\"", "transactions = 100\nwarmup = \"auto\""))
                    .unwrap_err(),
                "run.warmup",
                "needs a duration",
            ),
            (
                parse(&GOOD.replace("threads = \"auto\"", "warmup = \"often\"")).unwrap_err(),
                "run.warmup",
                "often",
            ),
        ];
        for (e, key, message) in cases {
            match e {
                SpecError::Invalid {
                    key: k, message: m, ..
                } => {
                    assert_eq!(k, key, "{m}");
                    assert!(m.contains(message), "{m}");
                }
                other => panic!("expected {key}: {message}, got {other:?}"),
            }
        }
    }

    #[test]
    fn repeats_until_precise_plan_the_worst_case_and_check_their_values() {
        let with = |section: &str| {
            parse(
                &GOOD
                    .replace("repeats = 2\n", "")
                    .replace("[run]", &format!("[repeats]\n{section}\n[run]")),
            )
        };
        let c = with("until = \"2%\"\nmin = 3\nmax = 6\nbudget = \"30m\"").unwrap();
        assert_eq!(c.precision_target(), Some(0.02));
        assert_eq!(c.planned_repeats(), 6);
        assert_eq!(
            c.repeats_budget(),
            Some(std::time::Duration::from_secs(1800))
        );
        let m = crate::matrix::expand(&c).unwrap();
        assert_eq!(m.tests.iter().map(|t| t.repeat).max(), Some(6));
        let defaults = with("until = \"5%\"").unwrap();
        assert_eq!(
            defaults.spec.repeats.as_ref().map(|r| (r.min, r.max)),
            Some((3, 10))
        );
        let invalid = |section: &str| match with(section).unwrap_err() {
            SpecError::Invalid { key, message, .. } => (key, message),
            other => panic!("{other:?}"),
        };
        assert_eq!(invalid("until = \"2\"").0, "repeats.until");
        assert_eq!(invalid("until = \"0%\"").0, "repeats.until");
        assert_eq!(invalid("until = \"2%\"\nmin = 1").0, "repeats.min");
        assert_eq!(invalid("until = \"2%\"\nmin = 5\nmax = 4").0, "repeats.max");
        assert_eq!(
            invalid("until = \"2%\"\nbudget = \"soon\"").0,
            "repeats.budget"
        );
        let both = parse(&GOOD.replace("[run]", "[repeats]\nuntil = \"2%\"\n[run]")).unwrap_err();
        assert!(both.to_string().contains("not both"), "{both}");
    }

    #[test]
    fn aa_check_adds_an_identical_twin_of_the_first_target() {
        let c = parse(
            "[campaign]\nname = \"x\"\naa_check = true\n[[target]]\nname = \"pg\"\nsettings = { shared_buffers = \"1GB\" }\n[[target]]\nname = \"other\"\n[matrix]\nscales = [1]\nclients = [1]\n",
        )
        .unwrap();
        let names: Vec<&str> = c.spec.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["pg", "pg (A-A)", "other"]);
        assert_eq!(c.spec.targets[1].settings, c.spec.targets[0].settings);
        let off = parse("[campaign]\nname = \"x\"\n[[target]]\nname = \"pg\"\n[matrix]\nscales = [1]\nclients = [1]\n").unwrap();
        assert_eq!(off.spec.targets.len(), 1);
    }

    #[test]
    fn every_number_is_bounded_and_the_error_names_the_key_and_range() {
        let cap = "[capacity]\nbound = \"10ms\"\nstart_rate = 100\n";
        let with = |text: &str| format!("{GOOD}{text}");
        let run = |old: &str, new: &str| GOOD.replace(old, new);
        let cases: Vec<(String, &str, &str)> = vec![
            (
                with(&cap.replace("100", "1e300")),
                "capacity.start_rate",
                "1e300 is out of range: give 1 to 10000000 tps",
            ),
            (
                with(&format!("{cap}max_rate = 1e9\n")),
                "capacity.max_rate",
                "1000000000 is out of range: give 100 to 10000000 tps",
            ),
            (
                with(&format!("{cap}resolution = 1e-300\n")),
                "capacity.resolution",
                "1e-300 is out of range: give 0.001 to 0.5",
            ),
            (
                with(&format!("{cap}repeats = 100000\n")),
                "capacity.repeats",
                "give 1 to 100",
            ),
            (
                with(&cap.replace("10ms", "2h")),
                "capacity.bound",
                "7200 is out of range: give 0 to 3600 seconds",
            ),
            (
                run("clients = [1, 4]", "clients = [1, 4]\nrates = [1e300]"),
                "matrix.rates",
                "1e300 is out of range: give 0 to 10000000 tps",
            ),
            (
                run(
                    "clients = [1, 4]",
                    "clients = [1, 4]\nrates_per_client = [3e6]",
                ),
                "matrix.rates_per_client",
                "with 4 clients the total must stay at most 10000000 tps",
            ),
            (
                run("scales = [1, 2]", "scales = [1, 20000000]"),
                "matrix.scales",
                "20000000 is out of range: give 1 to 1000000",
            ),
            (
                run("clients = [1, 4]", "clients = [1, 100000]"),
                "matrix.clients",
                "give 1 to 10000 clients",
            ),
            (
                run("clients = [1, 4]", "clients = [1, 4]\nthreads = [5000]"),
                "matrix.threads",
                "give 1 to 1024 threads",
            ),
            (
                run("repeats = 2", "repeats = 5000"),
                "matrix.repeats",
                "give 1 to 1000",
            ),
            (
                run("weight = 9", "weight = 2000000"),
                "matrix.scripts[1]",
                "2000000 is out of range: give 1 to 1000000 (weight)",
            ),
            (
                run("duration = \"2s\"", "duration = 1e12"),
                "run.duration",
                "1e12 is out of range: give 1 to 2592000 seconds",
            ),
            (
                run("duration = \"2s\"", "transactions = 4000000000"),
                "run.transactions",
                "give 1 to 1000000000 per client",
            ),
            (
                run("threads = \"auto\"", "threads = 5000"),
                "run.threads",
                "give 1 to 1024 threads",
            ),
            (
                run("threads = \"auto\"", "latency_limit = 0"),
                "run.latency_limit",
                "must be more than 0",
            ),
            (
                run("threads = \"auto\"", "latency_limit = \"2h\""),
                "run.latency_limit",
                "give 0 to 3600 seconds",
            ),
            (
                run("threads = \"auto\"", "warmup = \"2days\""),
                "run.warmup",
                "172800 is out of range: give 0 to 86400 seconds",
            ),
            (
                run("threads = \"auto\"", "outage_wait = 1e9"),
                "run.outage_wait",
                "give 0 to 86400 seconds",
            ),
            (
                run("duration = \"2s\"", "transactions = 5\nmax_tries = 0"),
                "run.max_tries",
                "needs a duration or a latency_limit",
            ),
            (
                run("threads = \"auto\"", "max_tries = 2000000"),
                "run.max_tries",
                "give 0 to 1000000 (0 = unlimited)",
            ),
            (
                with("[hooks]\nbefore_test = \"true\"\ntimeout = \"2days\"\n"),
                "hooks.timeout",
                "give 0 to 86400 seconds",
            ),
            (
                run(
                    "method = \"server\"",
                    "method = \"server\"\npartitions = 1000000",
                ),
                "init.scale.2.partitions",
                "1000000 is out of range: give 0 to 100000",
            ),
            (
                with("[init.scale.7]\nfillfactor = 5\n"),
                "init.scale.7.fillfactor",
                "5 is out of range: give 10 to 100",
            ),
            (
                with("[distributed]\ngenerators = 5000\n"),
                "distributed.generators",
                "give 1 to 1000 generators",
            ),
            (
                with("[distributed]\ngenerators = 1\nstart_in = 100000\n"),
                "distributed.start_in",
                "give 0 to 3600 seconds",
            ),
        ];
        for (text, key, message) in cases {
            match parse(&text) {
                Err(SpecError::Invalid {
                    key: k, message: m, ..
                }) => {
                    assert_eq!(k, key, "{m}\n{text}");
                    assert!(m.contains(message), "{key}: {m}");
                }
                other => panic!("expected {key}: {message}, got {other:?}\n{text}"),
            }
        }
        // The ends of the ranges are taken.
        for ok in [
            with("[capacity]\nbound = \"1h\"\nstart_rate = 10000000\nresolution = 0.001\n"),
            run("duration = \"2s\"", "duration = \"30days\""),
            run(
                "clients = [1, 4]",
                "clients = [1, 10000]\nrates = [0, 10000000]",
            ),
            run(
                "threads = \"auto\"",
                "threads = 1024\nwarmup = \"1day\"\nmax_tries = 0",
            ),
        ] {
            if let Err(e) = parse(&ok) {
                panic!("{e}\n{ok}");
            }
        }
        // The default max_rate stays in range too.
        let c = parse(&with(
            "[capacity]\nbound = \"10ms\"\nstart_rate = 5000000\n",
        ))
        .unwrap();
        assert_eq!(c.spec.capacity.unwrap().max_rate(), 10_000_000.0);
    }

    #[test]
    fn faults_are_refused_past_the_run_and_without_what_they_act_on() {
        let with = |target_keys: &str, fault: &str| {
            parse(&format!(
                "{}\n[[fault]]\n{fault}\n",
                GOOD.replace(
                    "conninfo = \"dbname=x\"",
                    &format!("pg_bin = \"/usr/bin\"\n{target_keys}")
                )
            ))
        };
        let c = with("replicas = 1", "at = \"1s\"\naction = \"promote\"").unwrap();
        assert_eq!(c.spec.faults[0].action, "promote");
        assert!(!c.relays_replication());
        let relayed = "at = 1\naction = \"delay\"\nlink = \"replication\"\ndelay = \"20ms\"";
        let c = with("replicas = 1", relayed).unwrap();
        assert!(c.relays_replication());
        let delay = pgsurge_server::Fault::LinkDelay {
            replica: 1,
            delay_us: 20_000,
        };
        assert_eq!(
            c.fault_schedule()[0].action,
            pgsurge_faults::Action::Server(delay)
        );
        for (target, fault, says) in [
            (
                "replicas = 1",
                "at = \"5s\"\naction = \"stop\"",
                "past the run's end",
            ),
            (
                "",
                "at = 1\naction = \"promote\"",
                "needs replica1; target \"a\" has 0 replicas",
            ),
            (
                "replicas = 1",
                "at = 1\naction = \"pause-replay\"\nreplica = 2",
                "needs replica2",
            ),
            ("", "at = 1\naction = \"explode\"", "not a fault"),
            ("", "at = 1\naction = \"command\"", "only it"),
            ("", "at = \"soon\"\naction = \"kill\"", "not a duration"),
            (
                "",
                "at = 1\naction = \"delay\"\ndelay = \"50ms\"",
                "needs link",
            ),
            (
                "",
                "at = 1\naction = \"delay\"\nlink = \"v0\"",
                "needs delay",
            ),
            (
                "",
                "at = 1\naction = \"loss\"\nlink = \"v0\"\nloss = 101.0",
                "percentage",
            ),
            (
                "",
                "at = 1\naction = \"delay\"\nlink = \"v 0\"\ndelay = 1",
                "device name",
            ),
            (
                "",
                "at = 1\naction = \"delay\"\nlink = \"v0\"\nnetns = \"-x\"\ndelay = 1",
                "namespace name",
            ),
            (
                "",
                "at = 1\naction = \"stop\"\nlink = \"v0\"",
                "keys of action",
            ),
            (
                "",
                "at = 1\naction = \"delay\"\nlink = \"replication\"\ndelay = 1",
                "needs replica1; target \"a\" has 0 replicas",
            ),
            (
                "replicas = 1",
                "at = 1\naction = \"loss\"\nlink = \"replication\"\nloss = 1.0",
                "no loss",
            ),
            (
                "replicas = 1",
                "at = 1\naction = \"delay\"\nlink = \"replication\"\nnetns = \"n\"\ndelay = 1",
                "no netns",
            ),
        ] {
            let e = with(target, fault).unwrap_err().to_string();
            assert!(e.contains(says), "{fault}: {e}");
        }
        // An existing server takes its faults as commands.
        let e = parse(&format!("{GOOD}\n[[fault]]\nat = 1\naction = \"kill\"\n"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("action = \"command\""), "{e}");
        parse(&format!(
            "{GOOD}\n[[fault]]\nat = 1\naction = \"command\"\ncommand = \"true\"\n"
        ))
        .unwrap();
        // A link's delay is no server's fault: an existing server's run takes it too.
        let c = parse(&format!(
            "{GOOD}\n[[fault]]\nat = 1\naction = \"delay\"\nlink = \"vs0\"\nnetns = \"db\"\ndelay = \"50ms\"\n"
        ))
        .unwrap();
        assert_eq!(
            c.fault_schedule()[0].action,
            pgsurge_faults::Action::Link(pgsurge_faults::LinkFault {
                netns: Some("db".into()),
                device: "vs0".into(),
                delay_us: 50_000,
                loss_pct: 0.0,
            })
        );
    }

    #[test]
    fn checking_acknowledged_commits_needs_faults_and_a_table_name() {
        let with = |check: &str, fault: &str| {
            parse(&format!(
                "{}\n{fault}\n",
                GOOD.replace("duration = \"2s\"", &format!("duration = \"2s\"\n{check}"))
            ))
        };
        let fault = "[[fault]]\nat = 1\naction = \"command\"\ncommand = \"true\"";
        let c = with("check_commits = \"bench.acks\"", fault).unwrap();
        assert_eq!(c.spec.run.check_commits.as_deref(), Some("bench.acks"));
        for (check, fault, says) in [
            ("check_commits = \"acks\"", "", "add a [[fault]]"),
            ("check_commits = \"\"", fault, "not a table name"),
            ("check_commits = \"a..b\"", fault, "not a table name"),
            ("check_commits = \"a.b.c\"", fault, "not a table name"),
        ] {
            let e = with(check, fault).unwrap_err().to_string();
            assert!(
                e.contains(says) && e.contains("run.check_commits"),
                "{check}: {e}"
            );
        }
    }

    #[test]
    fn replicas_belong_to_throwaway_servers_and_are_bounded() {
        let throwaway = |keys: &str| {
            parse(&GOOD.replace(
                "conninfo = \"dbname=x\"",
                &format!("pg_bin = \"/usr/bin\"\n{keys}"),
            ))
        };
        let c = throwaway("replicas = 2\nreplication = \"sync\"").unwrap();
        assert_eq!(c.spec.targets[0].replicas, 2);
        assert!(c.spec.targets[0].sync_replication());
        assert!(!throwaway("replicas = 1").unwrap().spec.targets[0].sync_replication());
        for (keys, says) in [
            ("replicas = 9", "at most 8"),
            (
                "replicas = 1\nreplication = \"quorum\"",
                "not a replication mode",
            ),
            ("replication = \"sync\"", "add replicas = N"),
        ] {
            let e = throwaway(keys).unwrap_err().to_string();
            assert!(e.contains(says), "{keys}: {e}");
        }
        let e = parse(&GOOD.replace(
            "conninfo = \"dbname=x\"",
            "conninfo = \"dbname=x\"\nreplicas = 1",
        ))
        .unwrap_err()
        .to_string();
        assert!(e.contains("target[0].replicas"), "{e}");
        // Each value a matrix sweeps `shared_buffers` over is checked as the target's.
        let swept = |values: &str| {
            parse(
                &GOOD
                    .replace(
                        "conninfo = \"dbname=x\"",
                        "pg_bin = \"/usr/bin\"\nreplicas = 1",
                    )
                    .replace(
                        "[matrix]\n",
                        &format!("[matrix]\nsettings = {{ shared_buffers = [{values}] }}\n"),
                    ),
            )
        };
        swept("\"16MB\", \"32MB\"").unwrap();
        let e = swept("\"16MB\", \"100000GB\"").unwrap_err().to_string();
        assert!(
            e.contains("target[0].replicas")
                && e.contains("available")
                && e.contains("matrix.settings.shared_buffers = \"100000GB\""),
            "{e}"
        );
    }

    #[test]
    fn build_keys_without_a_source_are_refused_at_load() {
        for (key, value) in [
            ("profiling", "true"),
            ("patches", "[\"fix.patch\"]"),
            ("configure", "[\"--without-icu\"]"),
            ("ref", "\"REL_18_0\""),
        ] {
            let e = parse(&GOOD.replace(
                "conninfo = \"dbname=x\"",
                &format!("pg_bin = \"/usr/bin\"\n{key} = {value}"),
            ))
            .unwrap_err()
            .to_string();
            assert!(
                e.contains(&format!("target[0].{key}")) && e.contains("add source = \"PATH\""),
                "{key}: {e}"
            );
        }
        // With a source, `profiling` is taken.
        let c = parse(&GOOD.replace(
            "conninfo = \"dbname=x\"",
            "source = \"/src/postgresql-18.tar.bz2\"\nprofiling = true",
        ))
        .unwrap();
        assert!(c.spec.targets[0].profiling);
    }

    #[test]
    fn commit_tolerance_must_be_a_percentage() {
        let with = |v: &str| {
            parse(&GOOD.replace(
                "[init.scale.2]",
                &format!("[hygiene]\ncommit_tolerance_pct = {v}\n[init.scale.2]"),
            ))
        };
        for bad in ["-5", "-0.1", "101", "nan", "inf"] {
            let e = with(bad).unwrap_err().to_string();
            assert!(e.contains("hygiene.commit_tolerance_pct"), "{bad}: {e}");
        }
        for good in ["0", "5", "12.5", "100"] {
            assert!(with(good).is_ok(), "{good}");
        }
    }

    #[test]
    fn outage_wait_is_parsed_and_not_part_of_the_identity() {
        let a = parse(GOOD).unwrap();
        assert_eq!(a.outage_wait(), std::time::Duration::from_secs(180));
        let b = parse(&GOOD.replace(
            "threads = \"auto\"",
            "threads = \"auto\"\noutage_wait = \"20s\"",
        ))
        .unwrap();
        assert_eq!(b.outage_wait(), std::time::Duration::from_secs(20));
        assert_eq!(a.identity_hash(), b.identity_hash());
        assert!(parse(&GOOD.replace(
            "threads = \"auto\"",
            "threads = \"auto\"\noutage_wait = \"soon\""
        ))
        .is_err());
    }

    #[test]
    fn identity_hash_does_not_depend_on_the_password() {
        let with = |ci: &str| {
            parse(&GOOD.replace("conninfo = \"dbname=x\"", &format!("conninfo = \"{ci}\"")))
                .unwrap()
        };
        let a = with("dbname=x password=one");
        let b = with("dbname=x password=two");
        assert_eq!(a.identity_hash(), b.identity_hash());
        // A spec without a password keeps the hash it had (stored sets still resume).
        assert_eq!(
            parse(GOOD).unwrap().identity_hash(),
            with("dbname=x").identity_hash()
        );
        assert_ne!(
            with("dbname=x").identity_hash(),
            with("dbname=y").identity_hash()
        );
        let exporter = |url: &str| {
            parse(&GOOD.replace(
                "conninfo = \"dbname=x\"",
                &format!("conninfo = \"dbname=x\"\nnode_exporter = \"{url}\""),
            ))
            .unwrap()
        };
        assert_eq!(
            exporter("https://u:one@db1:9100/metrics").identity_hash(),
            exporter("https://u:two@db1:9100/metrics").identity_hash()
        );
        assert_ne!(
            exporter("https://u:one@db1:9100/metrics").identity_hash(),
            exporter("https://u:one@db2:9100/metrics").identity_hash()
        );
    }

    #[test]
    fn parses_a_good_file_with_defaults() {
        let c = parse(GOOD).unwrap();
        assert_eq!(c.limit(), Limit::Duration(2));
        assert_eq!(c.spec.run.query_mode, "simple");
        assert_eq!(c.spec.init.for_scale(2).method.as_deref(), Some("server"));
        assert_eq!(c.spec.init.for_scale(1).method, None);
        assert!(c.spec.hygiene.vacuum);
        assert_eq!(c.spec.matrix.scripts.len(), 2);
    }

    #[test]
    fn identity_ignores_matrix_values_but_not_run_options() {
        let a = parse(GOOD).unwrap();
        let b = parse(&GOOD.replace("clients = [1, 4]", "clients = [1, 4, 8]")).unwrap();
        let c = parse(&GOOD.replace("duration = \"2s\"", "duration = \"3s\"")).unwrap();
        assert_eq!(a.identity_hash(), b.identity_hash());
        assert_ne!(a.identity_hash(), c.identity_hash());
    }

    #[test]
    fn errors_name_the_key() {
        let e = parse(&GOOD.replace("clients = [1, 4]", "clients = []")).unwrap_err();
        assert!(e.to_string().contains("matrix.clients"), "{e}");
        let e = parse(&GOOD.replace("threads = \"auto\"", "threads = \"many\"")).unwrap_err();
        assert!(e.to_string().contains("run.threads"), "{e}");
        let e =
            parse(&GOOD.replace("duration = \"2s\"", "duration = \"2 fortnights\"")).unwrap_err();
        assert!(e.to_string().contains("run.duration"), "{e}");
        let e = parse(&GOOD.replace("repeats = 2", "repeats = 2\nbogus = 1")).unwrap_err();
        assert!(e.to_string().contains("bogus"), "{e}");
        let e = parse(&GOOD.replace("\"select-only\", {", "\"no-such\", {")).unwrap_err();
        assert!(e.to_string().contains("matrix.scripts[0]"), "{e}");
    }

    #[test]
    fn a_target_name_that_is_blank_or_breaks_a_line_is_refused() {
        // `name` as a TOML basic string.
        let toml_str = |name: &str| {
            let escaped: String = name
                .chars()
                .map(|c| match c {
                    '"' | '\\' => format!("\\{c}"),
                    c if c.is_control() => format!("\\u{:04x}", c as u32),
                    c => c.to_string(),
                })
                .collect();
            format!("\"{escaped}\"")
        };
        for name in ["", "   ", "\t", "a\nb", "pg\r", "x/y", "a\u{1b}[31m"] {
            let text = GOOD.replace("name = \"a\"", &format!("name = {}", toml_str(name)));
            let e = parse(&text).unwrap_err().to_string();
            assert!(
                e.contains("target[0].name") && e.contains("not blank"),
                "{name:?}: {e}"
            );
        }
        for name in ["pg 18", "patched-é", " x"] {
            let text = GOOD.replace("name = \"a\"", &format!("name = {}", toml_str(name)));
            assert!(parse(&text).is_ok(), "{name:?}");
        }
    }

    #[test]
    fn thresholds_are_validated_and_not_part_of_the_identity() {
        let with = |t: &str| parse(&format!("{GOOD}\n[thresholds]\n{t}\n"));
        let c = with("p99 = \"< 20ms\"\ntps = \"> 5\"").unwrap();
        assert_eq!(c.thresholds().len(), 2);
        assert_eq!(c.identity_hash(), parse(GOOD).unwrap().identity_hash());
        let e = with("p98 = \"< 20ms\"").unwrap_err();
        assert!(e.to_string().contains("thresholds.p98"), "{e}");
        // A check no test can pass is refused when the file is loaded.
        let e = with("p99 = \"< -5ms\"").unwrap_err().to_string();
        assert!(
            e.contains("thresholds.p99: \"< -5ms\" can never pass: p99 is never below 0"),
            "{e}"
        );
        let e = with("failures = \"== 0.5\"").unwrap_err().to_string();
        assert!(
            e.contains("thresholds.failures: \"== 0.5\" can never pass"),
            "{e}"
        );
    }

    #[test]
    fn durations_parse_with_units() {
        assert_eq!(parse_duration("500ms").unwrap(), 0.5);
        assert_eq!(parse_duration("2m").unwrap(), 120.0);
        assert_eq!(parse_duration("7").unwrap(), 7.0);
        assert_eq!(parse_duration("90s").unwrap(), 90.0);
        assert_eq!(parse_duration("1m30s").unwrap(), 90.0);
        assert_eq!(parse_duration("2h").unwrap(), 7200.0);
        assert_eq!(parse_duration("1h 30m").unwrap(), 5400.0);
        assert!(parse_duration("-3").is_err());
        assert!(parse_duration("").is_err());
        assert!(parse_duration("x").is_err());
        assert!(parse_duration("3 parsecs").is_err());
    }
}

#[cfg(test)]
mod example_tests {
    use std::path::Path;

    use super::*;

    /// Every campaign under `examples/` parses, validates and expands.
    #[test]
    fn repository_examples_are_valid() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples");
        let mut n = 0;
        for e in std::fs::read_dir(&dir).unwrap() {
            let p = e.unwrap().path();
            if p.extension().and_then(|x| x.to_str()) == Some("toml") {
                // remote-server.toml needs its target from the environment, and
                // patch-ab.toml its source and patch.
                let env = |k: &str| match k {
                    "PGSURGE_TARGET" => Some("host=db1 dbname=bench".to_string()),
                    "PG_SOURCE" => Some("/src/postgresql".to_string()),
                    "PATCH" => Some("/src/fix.patch".to_string()),
                    _ => None,
                };
                let text = std::fs::read_to_string(&p).unwrap();
                let c = Campaign::parse_with_env(&text, &p.display().to_string(), &dir, &env)
                    .unwrap_or_else(|e| panic!("{e}"));
                let m = crate::matrix::expand(&c).unwrap();
                assert!(!m.tests.is_empty(), "{}", p.display());
                n += 1;
            }
        }
        assert!(n >= 4, "examples found: {n}");
    }
}
