//! Maps argv to a subcommand entry point. Owns the top-level usage text and nothing else.

use std::ffi::OsString;
use std::path::Path;

const USAGE: &str = "\
pgsurge — PostgreSQL benchmarking: a drop-in pgbench, campaigns, reports.

Usage:
  pgsurge bench [pgbench options] [DBNAME]   run pgbench-compatible benchmarks
  pgsurge campaign run FILE.toml [--store S]  run or resume a campaign matrix
  pgsurge results list|show|export|import     read the results store
  pgsurge report [--store S] -o DIR           write the static HTML report
  pgsurge compare A B                         A/B statistics with confidence intervals
  pgsurge server start|stop|status            throwaway PostgreSQL servers
  pgsurge quickstart                          throwaway server + short benchmark + report

Run `pgsurge COMMAND --help` for a command's options. Invoked as `pgbench`,
the binary behaves exactly like `pgsurge bench`.
";

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
        return pgsurge_args::bench_main(&argv[1..]);
    }
    let Some(cmd) = argv.get(1).map(|s| s.to_string_lossy().into_owned()) else {
        eprint!("{USAGE}");
        return 1;
    };
    let rest = &argv[2..];
    match cmd.as_str() {
        "bench" => pgsurge_args::bench_main(rest),
        "campaign" => pgsurge_lab::campaign_main(rest),
        "results" => pgsurge_lab::results_main(rest),
        "quickstart" => pgsurge_lab::quickstart_main(rest, &quickstart_report),
        "report" => pgsurge_report::report_main(rest),
        "compare" => pgsurge_report::compare_main(rest),
        "server" => pgsurge_server::server_main(rest),
        "-h" | "--help" | "help" => {
            print!("{USAGE}");
            0
        }
        "-V" | "--version" => {
            println!("pgsurge {}", env!("CARGO_PKG_VERSION"));
            0
        }
        other => {
            eprintln!("pgsurge: error: unknown command \"{other}\"");
            eprint!("{USAGE}");
            1
        }
    }
}

/// The quickstart's HTML report: lab runs the campaign, the report crate renders it.
fn quickstart_report(
    store: &mut pgsurge_store::Store,
    set_id: i64,
    dir: &std::path::Path,
) -> Result<std::path::PathBuf, String> {
    let request = pgsurge_report::ReportRequest { sets: vec![set_id] };
    pgsurge_report::write_report(store, &request, dir)
        .map(|files| files.index)
        .map_err(|e| e.to_string())
}
