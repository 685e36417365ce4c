//! The `pgsurge` binary: picks the subcommand and hands the rest of the command line
//! to the crate that owns it. Invoked under the name `pgbench`, it is `pgsurge bench`.

mod dispatch;
mod pipes;
mod tree;

fn main() {
    pipes::quiet_broken_pipe();
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    std::process::exit(dispatch::run(&args));
}
