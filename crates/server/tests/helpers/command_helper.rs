//! Helper process of `tests/it/meson_build.rs` (not a test, not shipped): runs
//! `pgsurge server ARGS…` through the crate's entry point in a process of its own, so
//! the test can give it an environment (the build cache directory) that no other test
//! of the binary sees.

fn main() {
    let args: Vec<std::ffi::OsString> = std::env::args_os().skip(1).collect();
    let code =
        pgsurge_server::server_command(&args, &mut std::io::stdout(), &mut std::io::stderr());
    std::process::exit(code);
}
