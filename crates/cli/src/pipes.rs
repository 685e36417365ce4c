//! A closed stdout (`pgsurge … | head -1`) ends the process quietly, as it ends C tools.
//!
//! Rust ignores SIGPIPE, so a write to a pipe whose reader has gone returns EPIPE, and
//! `println!` turns that into a panic ("failed printing to stdout: Broken pipe", exit
//! 101). Setting SIGPIPE back to its default at startup would avoid that, but it would
//! also kill the process when a *socket* write meets a closed connection (the wire code
//! writes to PostgreSQL with plain `write`), where pgsurge must report the error instead.
//! So SIGPIPE stays ignored, and only a panic caused by a broken stdout or stderr is
//! turned into what a C program does on a closed pipe: death by SIGPIPE, silently (exit
//! status 141 in a shell, 0 for the pipeline unless `pipefail`). Every other panic goes
//! to the default hook unchanged. Commands that write through `write_all` handle EPIPE
//! themselves (quiet success).

/// True for the panic message `println!`/`print!`/`eprintln!` produce on EPIPE.
fn is_broken_pipe_panic(message: &str) -> bool {
    (message.starts_with("failed printing to stdout")
        || message.starts_with("failed printing to stderr"))
        && message.contains("Broken pipe")
}

/// Installs the panic hook described in the module documentation.
pub fn quiet_broken_pipe() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let message = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if is_broken_pipe_panic(message) {
            // SAFETY: signal(2) and raise(3) with constant arguments; the process ends
            // here as if the write itself had raised SIGPIPE with default handling.
            unsafe {
                libc::signal(libc::SIGPIPE, libc::SIG_DFL);
                libc::raise(libc::SIGPIPE);
            }
            std::process::exit(141);
        }
        default(info);
    }));
}

#[cfg(test)]
mod tests {
    use super::is_broken_pipe_panic;

    #[test]
    fn recognizes_only_broken_pipe_print_failures() {
        assert!(is_broken_pipe_panic(
            "failed printing to stdout: Broken pipe (os error 32)"
        ));
        assert!(!is_broken_pipe_panic(
            "failed printing to stdout: No space left on device (os error 28)"
        ));
        assert!(!is_broken_pipe_panic("index out of bounds"));
    }
}
