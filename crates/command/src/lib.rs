//! The entry of pgsurge's own subcommands (`campaign`, `results`, `report`, `compare`,
//! `server`, `merge`, `dist`, `kube`, `quickstart`; not `bench`, which keeps pgbench's
//! statuses). Every one parses its arguments through [`parse`] or [`parse_command`],
//! so all of them end the same way:
//!
//! | status | meaning |
//! |---|---|
//! | [`EXIT_OK`] (0) | done; also `--help` and `--version`, printed on stdout |
//! | [`EXIT_FAILURE`] (1) | the command ran and failed (its error on stderr) |
//! | [`EXIT_USAGE`] (2) | the command line is wrong: nothing was done |
//!
//! Above these, statuses mean the same in every command that gives them (the README's
//! table lists which): [`EXIT_NOTHING`] (3) when there is nothing to act on (no server,
//! no build, no run to report; a line says so) or when the command ran and the answer
//! is no (a failed test, a regression), 4 when a campaign's test misses a threshold,
//! [`EXIT_INTERRUPTED`] (130) after Ctrl-C.
//!
//! What a command prints of names and messages that come from a file or a store goes
//! through [`terminal_safe`], so that text cannot drive the terminal.

use std::ffi::OsString;
use std::io::{IsTerminal, Write};

/// Done.
pub const EXIT_OK: i32 = 0;
/// The command ran and failed.
pub const EXIT_FAILURE: i32 = 1;
/// The command line is wrong; nothing was done.
pub const EXIT_USAGE: i32 = 2;
/// Nothing to act on (no server recorded or running, no build, no run), or done and
/// the answer is no (a failed test, a regression found).
pub const EXIT_NOTHING: i32 = 3;
/// Interrupted by Ctrl-C (128 + SIGINT, as a shell reports it); resumable.
pub const EXIT_INTERRUPTED: i32 = 130;

/// Parses `args` (the arguments after the command words) as `T`, naming the command
/// `bin` in messages ("pgsurge campaign"). `Err` holds the status to exit with: 0
/// after `--help`/`--version` (printed on stdout), [`EXIT_USAGE`] after a usage error
/// (printed on stderr).
pub fn parse<T: clap::Parser>(bin: &str, args: &[OsString]) -> Result<T, i32> {
    parse_to(bin, args, &mut std::io::stdout(), &mut std::io::stderr())
}

/// [`parse`] writing help and errors to the given streams.
pub fn parse_to<T: clap::Parser>(
    bin: &str,
    args: &[OsString],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<T, i32> {
    let matches = parse_command_to(T::command(), bin, args, out, err)?;
    T::from_arg_matches(&matches).map_err(|e| report(&e, out, err))
}

/// Parses `args` against a command built at run time (the top-level tree of
/// subcommands); as [`parse`].
pub fn parse_command(
    cmd: clap::Command,
    bin: &str,
    args: &[OsString],
) -> Result<clap::ArgMatches, i32> {
    parse_command_to(
        cmd,
        bin,
        args,
        &mut std::io::stdout(),
        &mut std::io::stderr(),
    )
}

fn parse_command_to(
    cmd: clap::Command,
    bin: &str,
    args: &[OsString],
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<clap::ArgMatches, i32> {
    let argv = std::iter::once(OsString::from(bin)).chain(args.iter().cloned());
    cmd.bin_name(bin.to_string())
        .try_get_matches_from(argv)
        .map_err(|e| report(&e, out, err))
}

/// Prints clap's message (help, version or a usage error) and gives its status.
fn report(e: &clap::Error, out: &mut dyn Write, err: &mut dyn Write) -> i32 {
    let to_stderr = e.use_stderr();
    let on_terminal = if to_stderr {
        std::io::stderr().is_terminal()
    } else {
        std::io::stdout().is_terminal()
    };
    // Colour only on a terminal, and never when NO_COLOR is set (no-color.org).
    let colour = on_terminal && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    let styled = e.render();
    let text = if colour {
        styled.ansi().to_string()
    } else {
        styled.to_string()
    };
    // A closed stream (`pgsurge campaign --help | head -1`) is not an error.
    let write = |stream: &mut dyn Write| {
        let _ = stream
            .write_all(text.as_bytes())
            .and_then(|()| stream.flush());
    };
    if to_stderr {
        write(err);
    } else {
        write(out);
    }
    if to_stderr {
        EXIT_USAGE
    } else {
        EXIT_OK
    }
}

/// A usage error found after parsing (a missing subcommand, arguments that exclude
/// each other): `bin: error: message` on stderr, and [`EXIT_USAGE`].
pub fn usage_error(bin: &str, message: &str) -> i32 {
    eprintln!("{bin}: error: {message}");
    EXIT_USAGE
}

/// `s` with control characters other than newline and tab escaped (`\u{1b}`), so
/// names and messages from a campaign file or a store cannot drive the terminal.
pub fn terminal_safe(s: &str) -> std::borrow::Cow<'_, str> {
    let bad = |c: char| c.is_control() && c != '\n' && c != '\t';
    if !s.chars().any(bad) {
        return std::borrow::Cow::Borrowed(s);
    }
    std::borrow::Cow::Owned(
        s.chars()
            .map(|c| {
                if bad(c) {
                    c.escape_unicode().to_string()
                } else {
                    c.to_string()
                }
            })
            .collect(),
    )
}

/// The closing lines of a command that leaves results behind: `next:`, then each
/// command and what it gives, the explanations starting in one column.
pub fn next_lines(steps: &[(String, String)]) -> String {
    let width = steps
        .iter()
        .map(|(command, _)| command.chars().count())
        .max()
        .unwrap_or(0);
    let mut out = String::from("next:\n");
    for (command, what) in steps {
        let pad = width - command.chars().count();
        out.push_str(&format!("  {command}{:pad$}   {what}\n", ""));
    }
    out
}

/// `s` as one word for a POSIX shell, the one quoting of the suite's printed and
/// remote command lines: as is when it holds only plain characters (so that
/// `--define=k=v` reads as written), else quoted by `shlex` (which also steers clear
/// of the interactive shells' `!` and `^`).
pub fn shell_word(s: &str) -> String {
    let plain = |c: char| c.is_ascii_alphanumeric() || "-_./:@=%+,".contains(c);
    if !s.is_empty() && s.chars().all(plain) {
        return s.to_string();
    }
    // With NUL bytes allowed the quoter has no error to return.
    shlex::Quoter::new()
        .allow_nul(true)
        .quote(s)
        .map_or_else(|_| String::new(), std::borrow::Cow::into_owned)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn next_lines_start_their_explanations_in_one_column() {
        let t = next_lines(&[
            ("pgsurge report --set 3".into(), "the HTML report".into()),
            ("pgsurge results show 3 --json".into(), "the runs".into()),
        ]);
        assert_eq!(
            t,
            "next:\n  pgsurge report --set 3          the HTML report\n  \
             pgsurge results show 3 --json   the runs\n"
        );
        assert_eq!(shell_word("set:1/target:a"), "set:1/target:a");
        assert_eq!(shell_word("it's"), "\"it's\"");
        assert_eq!(shell_word("run 1"), "'run 1'");
        assert_eq!(shell_word(""), "''");
        for w in [
            "it's",
            "a b;$(rm -rf /)'x",
            "!x^y",
            "tab\there",
            "--define=k=v",
            "",
        ] {
            assert_eq!(
                shlex::split(&shell_word(w)),
                Some(vec![w.to_string()]),
                "{w}"
            );
        }
    }

    #[derive(clap::Parser, Debug)]
    struct Demo {
        /// A count.
        #[arg(long)]
        count: u32,
    }

    fn run(args: &[&str]) -> (Result<Demo, i32>, String, String) {
        let args: Vec<OsString> = args.iter().map(OsString::from).collect();
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let r = parse_to::<Demo>("pgsurge demo", &args, &mut out, &mut err);
        (
            r,
            String::from_utf8(out).unwrap(),
            String::from_utf8(err).unwrap(),
        )
    }

    #[test]
    fn arguments_parse() {
        let (r, out, err) = run(&["--count", "3"]);
        assert_eq!(r.unwrap().count, 3);
        assert!(out.is_empty() && err.is_empty());
    }

    #[test]
    fn a_usage_error_is_status_2_on_stderr_naming_the_command() {
        let (r, out, err) = run(&["--count", "x"]);
        assert_eq!(r.unwrap_err(), EXIT_USAGE);
        assert!(out.is_empty());
        assert!(err.contains("invalid value 'x'"), "{err}");
        let (r, _, err) = run(&["--nope"]);
        assert_eq!(r.unwrap_err(), EXIT_USAGE);
        assert!(err.contains("--nope"), "{err}");
        assert!(err.contains("Usage: pgsurge demo"), "{err}");
    }

    #[test]
    fn help_is_status_0_on_stdout() {
        let (r, out, err) = run(&["--help"]);
        assert_eq!(r.unwrap_err(), EXIT_OK);
        assert!(out.contains("--count"), "{out}");
        assert!(err.is_empty());
    }

    #[test]
    fn control_characters_are_escaped_for_the_terminal() {
        assert_eq!(super::terminal_safe("plain\nline\ttab"), "plain\nline\ttab");
        assert_eq!(
            super::terminal_safe("a\u{1b}[31mred\u{7}"),
            "a\\u{1b}[31mred\\u{7}"
        );
        assert_eq!(super::terminal_safe("c1\u{9b}x\r"), "c1\\u{9b}x\\u{d}");
    }
}
