//! The `pgsurge` binary: picks the subcommand and hands the rest of the command line
//! to the crate that owns it. Invoked under the name `pgbench`, it is `pgsurge bench`.
//!
//! | module | owns |
//! |---|---|
//! | `dispatch` | argv → the owning crate's entry point; `help`, `schema`, `completions`, `man` |
//! | `tree` | the one command tree (help, completions, man pages) |
//! | `quickstart` | `pgsurge quickstart`: campaign, results table and report in one command |
//! | `replay` | `pgsurge replay`: options → a replay spec, the engine's replay, the fidelity report |
//! | `replay_capture` | `pgsurge replay capture`: the logging a replay needs for a while, settings put back, the log collected |
//! | `bisect` | `pgsurge bisect`: the first commit where a campaign's cell got worse (campaign + compare) |
//! | `pipes` | a closed stdout ends the process quietly |

mod bisect;
mod dispatch;
mod pipes;
mod quickstart;
mod replay;
mod replay_capture;
mod tree;

fn main() {
    pipes::quiet_broken_pipe();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    std::process::exit(dispatch::run(&args));
}
