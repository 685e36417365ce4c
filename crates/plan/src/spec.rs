//! The campaign file (TOML): what to run, against which servers, in which order.
//!
//! This module holds the types of the file (with their serde forms and defaults), of a
//! loaded [`Campaign`] and of an invalid file ([`SpecError`]); it depends on no other
//! module of the crate but [`crate::extra`]. [`crate::load`] reads and validates a file
//! into them, [`crate::matrix`] expands a [`CampaignSpec`] into the ordered list of
//! tests. See `examples/*.toml` at the repository root for documented examples. The
//! tests below read files through [`Campaign::parse`] and check what the types hold.
//!
//! This file holds the whole file's type, `[campaign]`, durations, the ranges of its
//! numbers ([`limits`]) and the loaded [`Campaign`]; its sections live by job in
//! submodules, whose types are re-exported here:
//!
//! | module | owns |
//! |---|---|
//! | `targets` | `[[target]]` and `[pinning]` |
//! | `workload` | `[matrix]` and `[run]`: what each test runs, and for how long |
//! | `preparation` | `[init]`, `[hygiene]`, `[hooks]`: what is done before and between tests |
//! | `measure` | `[sampling]` and `[profile]` |
//! | `faults` | `[[fault]]` |
//! | `distributed` | `[distributed]` and `[distributed.kube]` |
//! | `adaptive` | `[capacity]` and `[repeats]`: searches instead of fixed matrix values |

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

mod adaptive;
mod distributed;
mod faults;
mod measure;
mod preparation;
mod targets;
mod workload;

pub use adaptive::{CapacitySection, RepeatsSection};
pub use distributed::{DistributedSection, KubeSection};
pub use faults::{FaultSpec, FaultSpecError, FAULT_ACTIONS, REPLICATION_LINK};
pub use measure::{ProfileProcesses, ProfileSection, SamplingSection};
pub use preparation::{FreshCluster, HooksSection, HygieneSection, InitOptionsSpec, InitSection};
pub use targets::{setting_text, InitMode, PinningSection, TargetSpec};
pub use workload::{Limit, MatrixSpec, RunSection, ScriptPart, ScriptSpec, ThreadsValue};

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

fn three() -> u32 {
    3
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
    /// `repeats.builds`: layout builds of a `source` target.
    pub const BUILDS: (u32, u32) = (1, 20);
    /// `repeats.starts`: server starts of each build.
    pub const STARTS: (u32, u32) = (1, 100);
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
    /// With `[repeats] builds` above 1: the layout builds of each `source` target, by
    /// target name, in the order of their seeds (1, 2, …); its first is also in
    /// `builds`.
    pub layouts: BTreeMap<String, Vec<pgsurge_server::source_build::Built>>,
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
        self.until_section()
            .map_or(self.spec.matrix.repeats, |r| r.max)
    }

    /// `[repeats]` when it repeats until precise (it has `until`).
    pub fn until_section(&self) -> Option<&RepeatsSection> {
        self.spec.repeats.as_ref().filter(|r| r.until.is_some())
    }

    /// `[repeats] until` as a fraction (0.02 = ±2 %); None without it.
    pub fn precision_target(&self) -> Option<f64> {
        self.until_section()?.precision().ok()
    }

    /// `[repeats] builds` and `starts`: layout builds of each `source` target and
    /// server starts of each build ((1, 1) without them).
    pub fn levels(&self) -> (u32, u32) {
        self.spec
            .repeats
            .as_ref()
            .map_or((1, 1), |r| (r.builds.max(1), r.starts.max(1)))
    }

    /// The layout build and the server start (each from 0) of a test's repeat (from
    /// 1). The `matrix.repeats` of a cell are groups of runs in one start, a group per
    /// build and start, the builds alternating: (build 0, start 0), (build 1,
    /// start 0), …, (build 0, start 1), …; so the repeats of every build are spread
    /// over the campaign alike. (0, 0) without `[repeats] builds` or `starts`.
    pub fn level_of(&self, repeat: u32) -> (u32, u32) {
        let (builds, starts) = self.levels();
        let runs = (self.spec.matrix.repeats / (builds * starts)).max(1);
        let group = (repeat.max(1) - 1) / runs;
        (group % builds, (group / builds) % starts)
    }

    /// The build a test of `target` in layout build `build` uses: its layout build,
    /// or its one build.
    pub fn build_of(
        &self,
        target: &str,
        build: u32,
    ) -> Option<&pgsurge_server::source_build::Built> {
        match self.layouts.get(target) {
            Some(layouts) => layouts.get(build as usize),
            None => self.builds.get(target),
        }
    }

    /// `[repeats] budget` in seconds; None when there is none.
    pub fn repeats_budget(&self) -> Option<std::time::Duration> {
        let b = self.until_section()?.budget.as_ref()?.seconds().ok()?;
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
    fn builds_and_starts_nest_the_fixed_repeats() {
        let with = |target: &str, repeats: u32, section: &str| {
            parse(
                &GOOD
                    .replace("conninfo = \"dbname=x\"", target)
                    .replace("repeats = 2\n", &format!("repeats = {repeats}\n"))
                    .replace("[run]", &format!("[repeats]\n{section}\n[run]")),
            )
        };
        let source = "source = \"pg.tar.bz2\"";
        let c = with(source, 8, "builds = 2\nstarts = 2").unwrap();
        assert_eq!(c.levels(), (2, 2));
        assert_eq!(c.until_section(), None);
        assert_eq!(c.precision_target(), None);
        assert_eq!(c.planned_repeats(), 8);
        // Two runs per start, the builds alternating from one start to the next.
        let levels: Vec<(u32, u32)> = (1..=8).map(|r| c.level_of(r)).collect();
        assert_eq!(
            levels,
            [
                (0, 0),
                (0, 0),
                (1, 0),
                (1, 0),
                (0, 1),
                (0, 1),
                (1, 1),
                (1, 1)
            ]
        );
        let plain = with(source, 2, "starts = 1").unwrap();
        assert_eq!((plain.levels(), plain.level_of(2)), ((1, 1), (0, 0)));
        let invalid =
            |target: &str, repeats: u32, section: &str| match with(target, repeats, section)
                .unwrap_err()
            {
                SpecError::Invalid { key, message, .. } => format!("{key}: {message}"),
                other => panic!("{other:?}"),
            };
        let e = invalid(source, 6, "builds = 2\nstarts = 2");
        assert!(e.starts_with("matrix.repeats: must be a multiple"), "{e}");
        let e = invalid("conninfo = \"dbname=x\"", 4, "builds = 2");
        assert!(e.contains("target \"a\" has no source"), "{e}");
        let e = invalid("conninfo = \"dbname=x\"", 4, "starts = 2");
        assert!(e.contains("only throwaway servers"), "{e}");
        let e = invalid(source, 4, "builds = 21");
        assert!(e.starts_with("repeats.builds"), "{e}");
        let e = invalid(source, 4, "builds = 2\nmax = 4");
        assert!(e.contains("go with until"), "{e}");
        let e = invalid(source, 1, "until = \"2%\"\nbuilds = 2");
        assert!(e.contains("do not go with until"), "{e}");
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
