//! pgbench 18's option tables: the short option string and the long options in
//! pgbench's array order (glibc lists ambiguity candidates in that order), plus
//! pgsurge's extension options, which are matched only when no pgbench option matches.

use crate::getopt::{HasArg, LongOpt, ShortOpt};

/// Every option pgsurge's `bench` understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Opt {
    Builtin,
    Client,
    Connect,
    Dbname,
    Define,
    File,
    Fillfactor,
    Host,
    Initialize,
    InitSteps,
    Jobs,
    Log,
    LatencyLimit,
    NoVacuum,
    Port,
    Progress,
    Protocol,
    Quiet,
    ReportPerCommand,
    Rate,
    Scale,
    SelectOnly,
    SkipSomeUpdates,
    Time,
    Transactions,
    Username,
    VacuumAll,
    UnloggedTables,
    Tablespace,
    IndexTablespace,
    SamplingRate,
    AggregateInterval,
    ProgressTimestamp,
    LogPrefix,
    ForeignKeys,
    RandomSeed,
    ShowScript,
    Partitions,
    PartitionMethod,
    FailuresDetailed,
    MaxTries,
    VerboseErrors,
    ExitOnAbort,
    Debug,
    // pgsurge extensions
    Percentiles,
    Json,
    HdrLog,
    StartAt,
    GeneratorName,
    GeneratorIndex,
    InitJobs,
    HdrLogUnit,
    Store,
    Set,
    Group,
    GeneratorCount,
    GeneratorSplit,
    Cpus,
    Workload,
    Mix,
    Costs,
    Reconnect,
    CheckCommits,
    ReplicaFile,
    Profile,
    Live,
}

const fn s(letter: u8, takes_arg: bool, id: Opt) -> ShortOpt<Opt> {
    ShortOpt {
        letter,
        takes_arg,
        id,
    }
}

const fn l(name: &'static str, has_arg: HasArg, id: Opt) -> LongOpt<Opt> {
    LongOpt { name, has_arg, id }
}

/// pgbench's `"b:c:Cd:D:f:F:h:iI:j:lL:M:nNp:P:qrR:s:St:T:U:v"`.
pub const SHORTS: &[ShortOpt<Opt>] = &[
    s(b'b', true, Opt::Builtin),
    s(b'c', true, Opt::Client),
    s(b'C', false, Opt::Connect),
    s(b'd', true, Opt::Dbname),
    s(b'D', true, Opt::Define),
    s(b'f', true, Opt::File),
    s(b'F', true, Opt::Fillfactor),
    s(b'h', true, Opt::Host),
    s(b'i', false, Opt::Initialize),
    s(b'I', true, Opt::InitSteps),
    s(b'j', true, Opt::Jobs),
    s(b'l', false, Opt::Log),
    s(b'L', true, Opt::LatencyLimit),
    s(b'M', true, Opt::Protocol),
    s(b'n', false, Opt::NoVacuum),
    s(b'N', false, Opt::SkipSomeUpdates),
    s(b'p', true, Opt::Port),
    s(b'P', true, Opt::Progress),
    s(b'q', false, Opt::Quiet),
    s(b'r', false, Opt::ReportPerCommand),
    s(b'R', true, Opt::Rate),
    s(b's', true, Opt::Scale),
    s(b'S', false, Opt::SelectOnly),
    s(b't', true, Opt::Transactions),
    s(b'T', true, Opt::Time),
    s(b'U', true, Opt::Username),
    s(b'v', false, Opt::VacuumAll),
];

use HasArg::{No, Optional, Required};

/// pgbench 18's `long_options[]`, in its order.
pub const LONGS: &[LongOpt<Opt>] = &[
    l("builtin", Required, Opt::Builtin),
    l("client", Required, Opt::Client),
    l("connect", No, Opt::Connect),
    l("dbname", Required, Opt::Dbname),
    l("define", Required, Opt::Define),
    l("file", Required, Opt::File),
    l("fillfactor", Required, Opt::Fillfactor),
    l("host", Required, Opt::Host),
    l("initialize", No, Opt::Initialize),
    l("init-steps", Required, Opt::InitSteps),
    l("jobs", Required, Opt::Jobs),
    l("log", No, Opt::Log),
    l("latency-limit", Required, Opt::LatencyLimit),
    l("no-vacuum", No, Opt::NoVacuum),
    l("port", Required, Opt::Port),
    l("progress", Required, Opt::Progress),
    l("protocol", Required, Opt::Protocol),
    l("quiet", No, Opt::Quiet),
    l("report-per-command", No, Opt::ReportPerCommand),
    l("rate", Required, Opt::Rate),
    l("scale", Required, Opt::Scale),
    l("select-only", No, Opt::SelectOnly),
    l("skip-some-updates", No, Opt::SkipSomeUpdates),
    l("time", Required, Opt::Time),
    l("transactions", Required, Opt::Transactions),
    l("username", Required, Opt::Username),
    l("vacuum-all", No, Opt::VacuumAll),
    l("unlogged-tables", No, Opt::UnloggedTables),
    l("tablespace", Required, Opt::Tablespace),
    l("index-tablespace", Required, Opt::IndexTablespace),
    l("sampling-rate", Required, Opt::SamplingRate),
    l("aggregate-interval", Required, Opt::AggregateInterval),
    l("progress-timestamp", No, Opt::ProgressTimestamp),
    l("log-prefix", Required, Opt::LogPrefix),
    l("foreign-keys", No, Opt::ForeignKeys),
    l("random-seed", Required, Opt::RandomSeed),
    l("show-script", Required, Opt::ShowScript),
    l("partitions", Required, Opt::Partitions),
    l("partition-method", Required, Opt::PartitionMethod),
    l("failures-detailed", No, Opt::FailuresDetailed),
    l("max-tries", Required, Opt::MaxTries),
    l("verbose-errors", No, Opt::VerboseErrors),
    l("exit-on-abort", No, Opt::ExitOnAbort),
    l("debug", No, Opt::Debug),
];

/// pgsurge's own options. Consulted only when nothing in [`LONGS`] matches, so every
/// argument pgbench accepts, or rejects as ambiguous, means the same here.
pub const EXTENSIONS: &[LongOpt<Opt>] = &[
    l("percentiles", Optional, Opt::Percentiles),
    l("json", Required, Opt::Json),
    l("hdr-log", Required, Opt::HdrLog),
    l("start-at", Required, Opt::StartAt),
    l("generator-name", Required, Opt::GeneratorName),
    l("generator-index", Required, Opt::GeneratorIndex),
    l("generator-count", Required, Opt::GeneratorCount),
    l("generator-split", No, Opt::GeneratorSplit),
    l("init-jobs", Required, Opt::InitJobs),
    l("hdr-log-unit", Required, Opt::HdrLogUnit),
    l("store", Optional, Opt::Store),
    l("set", Required, Opt::Set),
    l("group", Required, Opt::Group),
    l("cpus", Required, Opt::Cpus),
    l("workload", Required, Opt::Workload),
    l("mix", Required, Opt::Mix),
    l("costs", No, Opt::Costs),
    l("reconnect", No, Opt::Reconnect),
    l("check-commits", Required, Opt::CheckCommits),
    l("replica-file", Required, Opt::ReplicaFile),
    l("profile", Optional, Opt::Profile),
    l("live", Optional, Opt::Live),
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_long_option_is_in_the_help() {
        let help = crate::help::help_text();
        for o in LONGS.iter().chain(EXTENSIONS) {
            assert!(
                help.contains(&format!("--{}", o.name)),
                "--{} missing from --help",
                o.name
            );
        }
        for s in SHORTS {
            let flag = format!("-{}, --", s.letter as char);
            assert!(help.contains(&flag), "{flag} missing from --help");
        }
    }

    #[test]
    fn short_letters_have_a_long_twin_with_the_same_argument_kind() {
        for s in SHORTS {
            let twin = LONGS.iter().find(|l| l.id == s.id).expect("long twin");
            assert_eq!(
                s.takes_arg,
                twin.has_arg == HasArg::Required,
                "{}",
                twin.name
            );
        }
    }
}
