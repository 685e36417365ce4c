//! Maps argv to a subcommand entry point. The usage text, `help`, `schema`,
//! `completions` and `man` come from the one command tree in [`crate::tree`].

use std::ffi::OsString;
use std::io::Write;
use std::path::Path;

use crate::tree::{find, tree, write_man_pages};

/// Runs a command owned by another crate with the arguments after its name, or None
/// when `cmd` is not one of them.
fn delegate(cmd: &str, rest: &[OsString]) -> Option<i32> {
    Some(match cmd {
        "bench" => bench(rest),
        "campaign" => pgsurge_campaign::campaign_main(rest),
        "results" => pgsurge_records::results_main(rest),
        "quickstart" => crate::quickstart::main(rest),
        "bisect" => crate::bisect::main(rest),
        "report" => pgsurge_report::report_main(rest),
        "compare" => pgsurge_report::compare_main(rest),
        "server" => pgsurge_server::server_main(rest),
        "merge" => pgsurge_generators::merge_main(rest),
        "dist" => pgsurge_generators::dist_main(rest),
        "kube" => pgsurge_kube::kube_main(rest),
        "workload" => pgsurge_workload::workload_main(rest),
        "replay" => crate::replay::main(rest),
        _ => return None,
    })
}

/// `pgsurge bench` (and the binary run as `pgbench`), with `--store` writing through
/// the records crate.
fn bench(args: &[OsString]) -> i32 {
    let store = |request: &pgsurge_args::StoreRequest<'_>,
                 result: &pgsurge_engine::RunResult,
                 samples: &[(
        pgsurge_engine::IntervalSample,
        pgsurge_results::LatencyHistogram,
    )]| {
        let run = pgsurge_records::adhoc::AdhocRun {
            location: request.location,
            set: request.set,
            group: request.group,
            dbname: request.dbname,
            command_line: &request.command_line,
        };
        pgsurge_records::adhoc::store_bench_run(&run, result, samples)
    };
    let hooks = pgsurge_args::StoreHooks {
        check: &pgsurge_records::adhoc::check_store,
        write: &store,
    };
    pgsurge_args::bench_main_with(args, Some(hooks))
}

/// The text of `pgsurge schema NAME`, or why there is none.
pub fn schema(name: &str) -> Result<&'static str, String> {
    match name {
        "run-result" => Ok(pgsurge_results::RUN_RESULT_SCHEMA),
        "export" => Ok(pgsurge_records::EXPORT_SCHEMA),
        "plan" => Ok(pgsurge_campaign::PLAN_SCHEMA),
        "compare" => Ok(pgsurge_report::COMPARE_SCHEMA),
        "replay" => Ok(pgsurge_replay::report::REPLAY_SCHEMA),
        "replay-compare" => Ok(pgsurge_report::replay_compare::REPLAY_COMPARE_SCHEMA),
        "trend" => Ok(pgsurge_records::trend::TREND_SCHEMA),
        other => Err(format!("unknown schema \"{other}\"")),
    }
}

/// Writes `text` to stdout; a closed pipe ends the output quietly.
fn out(text: &[u8]) -> i32 {
    let mut o = std::io::stdout().lock();
    match o.write_all(text).and_then(|()| o.flush()) {
        Ok(()) => 0,
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => 0,
        Err(e) => {
            eprintln!("pgsurge: error: writing to stdout: {e}");
            1
        }
    }
}

/// `pgsurge help [COMMAND [SUBCOMMAND]]`.
fn help(path: &[OsString]) -> i32 {
    let path: Vec<String> = path
        .iter()
        .map(|s| s.to_string_lossy().into_owned())
        .collect();
    // Commands whose help their own parser prints (pgbench's text for bench).
    if let [cmd] = path.as_slice() {
        if matches!(cmd.as_str(), "bench" | "report" | "compare") {
            return delegate(cmd, &[OsString::from("--help")]).unwrap_or(1);
        }
    }
    let mut root = tree();
    root.build();
    match find(&mut root, &path) {
        Some(cmd) => out(cmd.render_long_help().to_string().as_bytes()),
        None => {
            eprintln!(
                "pgsurge: error: no command \"{}\"; `pgsurge help` lists them",
                path.join(" ")
            );
            2
        }
    }
}

/// Runs the command line `argv` (including the program name) and returns the exit code.
pub fn run(argv: &[OsString]) -> i32 {
    let invoked_as = argv
        .first()
        .map(|a| {
            Path::new(a)
                .file_name()
                .unwrap_or(a.as_os_str())
                .to_string_lossy()
                .into_owned()
        })
        .unwrap_or_default();
    if invoked_as == "pgbench" {
        return bench(&argv[1..]);
    }
    let Some(cmd) = argv.get(1).map(|s| s.to_string_lossy().into_owned()) else {
        eprint!("{}", tree().render_help());
        return pgsurge_command::EXIT_USAGE;
    };
    if let Some(code) = delegate(&cmd, &argv[2..]) {
        return code;
    }
    if cmd == "help" {
        return help(&argv[2..]);
    }
    let matches = match pgsurge_command::parse_command(tree(), "pgsurge", &argv[1..]) {
        Ok(m) => m,
        Err(status) => return status,
    };
    match matches.subcommand() {
        Some(("schema", m)) => {
            let name = m.get_one::<String>("name").expect("required");
            match schema(name) {
                Ok(text) => out(text.as_bytes()),
                Err(e) => {
                    eprintln!("pgsurge: error: {e}");
                    1
                }
            }
        }
        Some(("completions", m)) => {
            let shell = *m
                .get_one::<clap_complete::Shell>("shell")
                .expect("required");
            let mut buf = Vec::new();
            clap_complete::generate(shell, &mut tree(), "pgsurge", &mut buf);
            out(&buf)
        }
        Some(("man", m)) => match m.get_one::<std::path::PathBuf>("dir") {
            Some(dir) => match write_man_pages(dir) {
                Ok(pages) => {
                    eprintln!("wrote {} man pages into {}", pages.len(), dir.display());
                    0
                }
                Err(e) => {
                    eprintln!(
                        "pgsurge: error: writing man pages into {}: {e}",
                        dir.display()
                    );
                    1
                }
            },
            None => {
                let mut buf = Vec::new();
                match clap_mangen::Man::new(tree()).render(&mut buf) {
                    Ok(()) => out(&buf),
                    Err(e) => {
                        eprintln!("pgsurge: error: {e}");
                        1
                    }
                }
            }
        },
        other => {
            // Every other subcommand was delegated above.
            eprintln!("pgsurge: error: unhandled command {other:?}");
            2
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_schema_name_is_valid_json_schema() {
        for name in crate::tree::SCHEMA_NAMES {
            let text = schema(name).unwrap_or_else(|e| panic!("{name}: {e}"));
            let v: serde_json::Value = serde_json::from_str(text).unwrap();
            jsonschema::validator_for(&v)
                .unwrap_or_else(|e| panic!("{name}: schema does not compile: {e}"));
        }
        assert!(schema("nope").is_err());
    }
}
