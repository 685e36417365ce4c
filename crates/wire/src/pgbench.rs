//! pgbench's `doConnect`: the fixed keyword set, and the password prompt.
//!
//! Owns: prompting `Password: ` once when the server wants a password and none is
//! known (libpq's `PQconnectionNeedsPassword`), remembering it for every later
//! connection of the run (all threads, as pgbench's static variable does), and
//! libpq's `simple_prompt` (the terminal, echo off; stdin/stderr without one).

use std::io::{self, BufRead, Write};
use std::sync::Mutex;

use crate::{ConfigError, ConnConfig, ConnectError, Connection};

/// Reads a password interactively (`None`: no terminal and nothing on stdin).
pub type PasswordPrompt = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// Opens connections the way pgbench does; share one per run (it is `Sync`).
pub struct PgbenchConnector {
    config: Result<ConnConfig, ConfigError>,
    password: Mutex<Option<String>>,
    prompt: PasswordPrompt,
}

impl std::fmt::Debug for PgbenchConnector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PgbenchConnector")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl PgbenchConnector {
    /// Resolves parameters like [`ConnConfig::for_pgbench`]. A resolution error is
    /// kept and returned by every [`PgbenchConnector::connect`], as libpq reports
    /// it from each `PQconnectdbParams`.
    pub fn new(
        host: Option<&str>,
        port: Option<&str>,
        user: Option<&str>,
        dbname: &str,
        env: &impl Fn(&str) -> Option<String>,
    ) -> PgbenchConnector {
        PgbenchConnector {
            config: ConnConfig::for_pgbench(host, port, user, dbname, env),
            password: Mutex::new(None),
            prompt: Box::new(|p| simple_prompt(p, false).ok()),
        }
    }

    /// Replaces the prompt (tests; non-interactive front ends).
    pub fn with_prompt(mut self, prompt: PasswordPrompt) -> PgbenchConnector {
        self.prompt = prompt;
        self
    }

    /// The resolved parameters (without a prompted password).
    pub fn config(&self) -> Result<&ConnConfig, &ConfigError> {
        self.config.as_ref()
    }

    /// Connects; if the server needs a password and none was given or prompted yet,
    /// prompts `Password: ` once and retries.
    pub fn connect(&self) -> Result<Connection, ConnectError> {
        let base = self
            .config
            .as_ref()
            .map_err(|e| ConnectError::from(e.clone()))?;
        loop {
            let known = self.password.lock().map(|p| p.clone()).unwrap_or_default();
            let result = match &known {
                // libpq ignores an empty password value.
                Some(pw) if !pw.is_empty() => {
                    let mut cfg = base.clone();
                    cfg.set_password(pw);
                    Connection::connect(&cfg)
                }
                _ => Connection::connect(base),
            };
            match result {
                Err(e) if e.needs_password() && known.is_none() => {
                    let pw = (self.prompt)("Password: ").unwrap_or_default();
                    if let Ok(mut slot) = self.password.lock() {
                        // Another thread may have prompted meanwhile; keep the first.
                        slot.get_or_insert(pw);
                    }
                }
                other => return other,
            }
        }
    }
}

/// libpq's `simple_prompt`: writes `prompt` to the terminal and reads one line from
/// it, with echo off unless `echo`; without a terminal, prompts on stderr and reads
/// stdin. The trailing newline is removed.
pub fn simple_prompt(prompt: &str, echo: bool) -> io::Result<String> {
    use std::os::fd::AsRawFd;
    let tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/tty");
    let mut line = String::new();
    match tty {
        Ok(mut tty) => {
            tty.write_all(prompt.as_bytes())?;
            tty.flush()?;
            let fd = tty.as_raw_fd();
            // SAFETY: termios calls on a valid terminal fd with a zeroed struct
            // that tcgetattr fills in.
            let saved = unsafe {
                let mut t: libc::termios = std::mem::zeroed();
                if libc::tcgetattr(fd, &mut t) == 0 {
                    let saved = t;
                    if !echo {
                        t.c_lflag &= !libc::ECHO;
                        libc::tcsetattr(fd, libc::TCSAFLUSH, &t);
                    }
                    Some(saved)
                } else {
                    None
                }
            };
            let r = io::BufReader::new(&tty).read_line(&mut line);
            if let Some(saved) = saved {
                // SAFETY: restores the attributes read above on the same fd.
                unsafe { libc::tcsetattr(fd, libc::TCSAFLUSH, &saved) };
                if !echo {
                    let _ = tty.write_all(b"\n");
                }
            }
            r?;
        }
        Err(_) => {
            let mut err = io::stderr();
            err.write_all(prompt.as_bytes())?;
            err.flush()?;
            io::stdin().lock().read_line(&mut line)?;
            // libpq ends a no-echo prompt with a newline on the prompt's stream, also
            // when that is stderr (pgbench's output then reads "Password: \n…").
            if !echo {
                err.write_all(b"\n")?;
                err.flush()?;
            }
        }
    }
    while line.ends_with('\n') || line.ends_with('\r') {
        line.pop();
    }
    Ok(line)
}
