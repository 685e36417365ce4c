//! The one clap command tree of `pgsurge`: the top-level usage, `pgsurge help CMD`,
//! shell completions and the man pages all come from it. Each subcommand's definition
//! is the clap type its own crate parses with (`pgsurge_campaign::campaign_cli()`, …), so
//! help, completions and parsing cannot disagree. `bench` keeps pgbench's own getopt
//! parser (crates/args); here it is a command taking pgbench's arguments verbatim.
//!
//! To add a command (e.g. `merge`, `kube`): add its crate's clap definition in
//! [`tree`] and its entry point in `dispatch::delegate`.

use clap::{Arg, ArgAction, Command};

/// The JSON documents `pgsurge schema NAME` prints.
pub const SCHEMA_NAMES: &[&str] = &[
    "run-result",
    "export",
    "plan",
    "compare",
    "replay",
    "replay-compare",
    "trend",
];

/// A command whose arguments are handed verbatim to a parser outside this tree.
fn passthrough(name: &'static str, about: &'static str) -> Command {
    Command::new(name).about(about).disable_help_flag(true).arg(
        Arg::new("args")
            .num_args(0..)
            .trailing_var_arg(true)
            .allow_hyphen_values(true)
            .value_name("ARGS")
            .action(ArgAction::Append),
    )
}

/// The whole command tree.
pub fn tree() -> Command {
    Command::new("pgsurge")
        .version(env!("CARGO_PKG_VERSION"))
        .about("PostgreSQL benchmarking: a drop-in pgbench, campaigns, reports")
        .after_help(
            "Run `pgsurge help COMMAND` (or `pgsurge COMMAND --help`) for a command's options.\n\
             Invoked as `pgbench`, the binary behaves exactly like `pgsurge bench`.\n\n\
             Exit status of pgsurge's own commands: 0 done, 1 failed, 2 usage error (nothing\n\
             was done), 3 nothing to act on (no server, no build, no run; a line says so) or\n\
             done and the answer is no (a failed test, a regression), 4 a campaign test missed\n\
             a threshold, 130 interrupted. `bench` gives pgbench's.",
        )
        .subcommand_required(true)
        .arg_required_else_help(true)
        .subcommand(
            passthrough(
                "bench",
                "Run pgbench-compatible benchmarks (pgbench 18's options; `pgsurge help bench`)",
            )
            .override_usage("pgsurge bench [pgbench OPTION]... [DBNAME]"),
        )
        .subcommand(
            pgsurge_campaign::campaign_cli()
                .name("campaign")
                .about("Plan, run or resume a campaign (a matrix of tests) into the results store"),
        )
        .subcommand(
            pgsurge_records::results_cli()
                .name("results")
                .about("List, show, export or import the runs of a results store"),
        )
        .subcommand(
            <pgsurge_report::ReportArgs as clap::CommandFactory>::command()
                .name("report")
                .about("Write the static HTML report of a results store"),
        )
        .subcommand(
            <pgsurge_report::CompareArgs as clap::CommandFactory>::command()
                .name("compare")
                .about("Is B faster than A? Per matrix cell, with 95 % confidence intervals and each side's repeats (text, JSON, Markdown)"),
        )
        .subcommand(
            pgsurge_server::server_cli()
                .name("server")
                .about("Throwaway PostgreSQL servers (start, stop, status, env) and PostgreSQL built from source with patches (build, builds)"),
        )
        .subcommand(
            crate::replay::command()
                .name("replay")
                .about("Replay PostgreSQL logs (stderr, csvlog, jsonlog) against a server: sessions at their logged times, a fidelity report per statement fingerprint"),
        )
        .subcommand(
            crate::quickstart::command()
                .name("quickstart")
                .about("Throwaway server + short benchmark matrix + stored results + report"),
        )
        .subcommand(
            crate::bisect::command()
                .name("bisect")
                .about("Find the first commit where a campaign's cell got worse: build, measure and compare the commits between --good and --bad"),
        )
        .subcommand(
            pgsurge_generators::merge_cli()
                .about("Merge several generators' --json results exactly into one report"),
        )
        .subcommand(pgsurge_generators::dist_cli())
        .subcommand(pgsurge_kube::kube_cli())
        .subcommand(pgsurge_workload::workload_cli())
        .subcommand(
            Command::new("schema")
                .about("Print the JSON Schema of a machine-readable output")
                .arg(
                    Arg::new("name")
                        .required(true)
                        .value_parser(SCHEMA_NAMES.to_vec())
                        .help("run-result (bench --json), export (results export --format json), plan (campaign plan --format json), compare (compare --format json), replay (replay --json), replay-compare (compare --format json of two replays), trend (results trend --json)"),
                ),
        )
        .subcommand(
            Command::new("completions")
                .about("Print a shell completion script (e.g. `pgsurge completions bash > /etc/bash_completion.d/pgsurge`)")
                .arg(
                    Arg::new("shell")
                        .required(true)
                        .value_parser(clap::value_parser!(clap_complete::Shell)),
                ),
        )
        .subcommand(
            Command::new("man")
                .about("Print the pgsurge(1) man page, or write one page per command into DIR")
                .arg(
                    Arg::new("dir")
                        .long("dir")
                        .value_name("DIR")
                        .value_parser(clap::value_parser!(std::path::PathBuf)),
                ),
        )
}

/// The subcommand at `path` (e.g. `["campaign", "plan"]`) in the built tree.
pub fn find<'a>(root: &'a mut Command, path: &[String]) -> Option<&'a mut Command> {
    let mut cmd = root;
    for name in path {
        cmd = cmd.find_subcommand_mut(name)?;
    }
    Some(cmd)
}

/// Writes the man pages: `pgsurge.1` and one `pgsurge-CMD[-SUB].1` per subcommand.
pub fn write_man_pages(dir: &std::path::Path) -> std::io::Result<Vec<std::path::PathBuf>> {
    fn walk(
        cmd: &Command,
        prefix: &str,
        dir: &std::path::Path,
        out: &mut Vec<std::path::PathBuf>,
    ) -> std::io::Result<()> {
        let name = if prefix.is_empty() {
            cmd.get_name().to_string()
        } else {
            format!("{prefix}-{}", cmd.get_name())
        };
        let page = cmd.clone().name(name.clone());
        let path = dir.join(format!("{name}.1"));
        let mut buf = Vec::new();
        clap_mangen::Man::new(page).render(&mut buf)?;
        std::fs::write(&path, buf)?;
        out.push(path);
        for sub in cmd.get_subcommands() {
            walk(sub, &name, dir, out)?;
        }
        Ok(())
    }
    std::fs::create_dir_all(dir)?;
    let mut root = tree();
    root.build();
    let mut out = Vec::new();
    walk(&root, "", dir, &mut out)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_tree_is_consistent() {
        tree().debug_assert();
    }

    #[test]
    fn every_command_is_in_the_tree_with_its_subcommands() {
        let mut t = tree();
        t.build();
        for path in [
            &["bench"][..],
            &["campaign", "run"],
            &["campaign", "plan"],
            &["campaign", "new"],
            &["campaign", "convert"],
            &["results", "show"],
            &["results", "export"],
            &["server", "env"],
            &["report"],
            &["compare"],
            &["quickstart"],
            &["bisect"],
            &["merge"],
            &["dist", "local"],
            &["kube", "job"],
            &["dist", "ssh"],
            &["schema"],
            &["completions"],
            &["man"],
        ] {
            let p: Vec<String> = path.iter().map(|s| s.to_string()).collect();
            assert!(find(&mut t, &p).is_some(), "{path:?} missing");
        }
        let export = find(&mut t, &["results".into(), "export".into()]).unwrap();
        assert!(export.get_arguments().any(|a| a.get_id() == "per_second"));
    }
}
