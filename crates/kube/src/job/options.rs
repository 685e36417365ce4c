//! The options of `pgsurge kube job`.

use clap::{Parser, ValueEnum};

/// Output format of the manifest.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// YAML, as `kubectl apply -f` reads it.
    Yaml,
    /// JSON (one document, pretty-printed).
    Json,
}

/// How strictly the generators are spread over nodes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Spread {
    /// Prefer one generator per node (`whenUnsatisfiable: ScheduleAnyway`): pods are
    /// never left pending for want of nodes, which would make them miss the start.
    Soft,
    /// Never let the number of generators on two nodes differ by more than one
    /// (`DoNotSchedule`); a pod that cannot be placed stays pending.
    Hard,
}

/// `pgsurge kube job` options.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "pgsurge kube job",
    about = "Print a Kubernetes Indexed Job whose N pods run one pgsurge bench generator each",
    long_about = "Print a Kubernetes batch/v1 Job (Indexed completion mode) whose N pods run one \
                  `pgsurge bench` generator each, with a common --start-at, each its share of the \
                  clients, rate and seed, and --json=- on stdout. Nothing is sent to a cluster: \
                  pipe it to `kubectl apply -f -`. The password comes only from a Secret \
                  (--conninfo-secret); an argument with a password in it is refused.",
    after_help = "Example:\n  pgsurge kube job -n 4 -c 32 -R 8000 --random-seed=42 --image=registry.example/pgsurge:0.1.0 \\\n      --conninfo-secret=pgsurge-db --host=db.internal --user=bench \\\n      -- -T 60 -j 2 pgbench | kubectl apply -f -"
)]
pub struct JobArgs {
    /// Number of generators: the Job's completions and parallelism, one pod each.
    #[arg(short = 'n', long = "generators", value_name = "N")]
    pub generators: u32,
    /// Total clients, split across the generators (`-c` of each).
    #[arg(short = 'c', long = "clients", value_name = "NUM", default_value_t = 1)]
    pub clients: u32,
    /// Total target rate in tps, R/N per generator (`-R` of each).
    #[arg(short = 'R', long = "rate", value_name = "TPS")]
    pub rate: Option<f64>,
    /// Run seed; generator i uses the i-th SplitMix64 output of it.
    #[arg(long = "random-seed", value_name = "SEED")]
    pub seed: Option<u64>,
    /// The common start: RFC 3339 or Unix epoch seconds; written into the Job as RFC 3339.
    #[arg(long = "start-at", value_name = "TIME", conflicts_with = "start_in")]
    pub start_at: Option<String>,
    /// Or start this long after now (`90s`, `2m`, `1h`, plain seconds): time to
    /// schedule the pods, pull the image and connect before the start.
    #[arg(long = "start-in", value_name = "DURATION", default_value = "60s")]
    pub start_in: String,
    /// The Job's name (a DNS label); also its pods' `app.kubernetes.io/instance` label.
    #[arg(long, value_name = "NAME", default_value = "pgsurge-run")]
    pub name: String,
    /// The namespace to create the Job in (default: kubectl's current one).
    #[arg(long, value_name = "NAMESPACE")]
    pub namespace: Option<String>,
    /// The generator image (built from the repository's Containerfile; its entrypoint
    /// is pgsurge).
    #[arg(long, value_name = "IMAGE", default_value = "pgsurge:latest")]
    pub image: String,
    /// CPU of each generator, requested and limit (a Kubernetes quantity: 2, 500m).
    #[arg(long, value_name = "QUANTITY", default_value = "1")]
    pub cpu: String,
    /// Memory of each generator, requested and limit (a Kubernetes quantity: 512Mi, 2Gi).
    #[arg(long, value_name = "QUANTITY", default_value = "512Mi")]
    pub memory: String,
    /// Spreading of the generators over nodes (topology spread on kubernetes.io/hostname).
    #[arg(long, value_enum, value_name = "HOW", default_value_t = Spread::Soft)]
    pub spread: Spread,
    /// The Secret that holds the database password (read as PGPASSWORD).
    #[arg(long = "conninfo-secret", value_name = "SECRET")]
    pub secret: Option<String>,
    /// The key of the password in that Secret [default: password].
    #[arg(long = "conninfo-secret-key", value_name = "KEY")]
    pub secret_key: Option<String>,
    /// Database server host (PGHOST of the generators).
    #[arg(long, value_name = "HOST")]
    pub host: Option<String>,
    /// Database server port (PGPORT).
    #[arg(long, value_name = "PORT")]
    pub port: Option<String>,
    /// Database name (PGDATABASE).
    #[arg(long, value_name = "DBNAME")]
    pub dbname: Option<String>,
    /// Database user (PGUSER).
    #[arg(long, value_name = "USER")]
    pub user: Option<String>,
    /// More environment of the generators (`PGSSLMODE=require`, `PGOPTIONS=…`), each
    /// `NAME=VALUE`, repeatable; not a password (the Secret gives PGPASSWORD) nor a
    /// variable that another option sets.
    #[arg(long = "env", value_name = "NAME=VALUE")]
    pub env: Vec<String>,
    /// Output format.
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = Format::Yaml)]
    pub format: Format,
    /// Options for every `pgsurge bench` (after `--`): pgbench's, less the clients,
    /// rate, seed, JSON, start and generator options this command sets.
    #[arg(last = true, value_name = "BENCH OPTIONS")]
    pub bench: Vec<String>,
}

/// When the generators start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Start {
    /// At this time: RFC 3339 or Unix epoch seconds.
    At(String),
    /// This long after the Job is built (`90s`, `2m`, `1h`, plain seconds).
    In(String),
}

/// The Job of one distributed run, as [`build_job`](super::build_job) takes it: what
/// `pgsurge kube job` parses its command line into, and what a campaign fills in
/// directly.
#[derive(Debug, Clone, PartialEq)]
pub struct KubePlan {
    /// Number of generators, one pod each.
    pub generators: u32,
    /// Total clients, split across the generators.
    pub clients: u32,
    /// Total target rate in tps.
    pub rate: Option<f64>,
    /// Run seed.
    pub seed: Option<u64>,
    /// The common start.
    pub start: Start,
    /// The Job's name (a DNS label).
    pub name: String,
    /// The namespace of the Job (none: kubectl's current one).
    pub namespace: Option<String>,
    /// The generator image.
    pub image: String,
    /// CPU of each generator (a Kubernetes quantity).
    pub cpu: String,
    /// Memory of each generator (a Kubernetes quantity).
    pub memory: String,
    /// Spreading of the generators over nodes.
    pub spread: Spread,
    /// The Secret that holds the database password.
    pub secret: Option<String>,
    /// The key of the password in that Secret (none: `password`).
    pub secret_key: Option<String>,
    /// PGHOST of the generators.
    pub host: Option<String>,
    /// PGPORT.
    pub port: Option<String>,
    /// PGDATABASE.
    pub dbname: Option<String>,
    /// PGUSER.
    pub user: Option<String>,
    /// More environment, each `NAME=VALUE`.
    pub env: Vec<String>,
    /// Options for every `pgsurge bench`.
    pub bench: Vec<String>,
}

impl From<JobArgs> for KubePlan {
    fn from(a: JobArgs) -> KubePlan {
        KubePlan {
            generators: a.generators,
            clients: a.clients,
            rate: a.rate,
            seed: a.seed,
            start: match a.start_at {
                Some(t) => Start::At(t),
                None => Start::In(a.start_in),
            },
            name: a.name,
            namespace: a.namespace,
            image: a.image,
            cpu: a.cpu,
            memory: a.memory,
            spread: a.spread,
            secret: a.secret,
            secret_key: a.secret_key,
            host: a.host,
            port: a.port,
            dbname: a.dbname,
            user: a.user,
            env: a.env,
            bench: a.bench,
        }
    }
}
