//! What a profile says about itself, stored with it and shown above its flame graph:
//! stacks cut short (binaries without frame pointers) and frames without symbols
//! (stripped binaries without their debug symbols), each with the share of the
//! samples it touches and what mends it.

use std::collections::BTreeMap;
use std::path::Path;

use pgsurge_results::profile::{Profile, ProfileKind};

/// The share of a profile's samples with a frame without a symbol above which the
/// profile says so: below it the few such frames (a library's stripped helper, a JIT
/// stub) change no reading of the graph.
pub const UNSYMBOLIZED_NOTE_SHARE: f64 = 0.05;

/// What a reader of the profile should know: stacks that stop short of `main` (no
/// frame pointers), frames without a symbol. `server_binary` (the postmaster's
/// executable) names the package of debug symbols to install where it is known.
///
/// Only the server's stacks are judged cut short: they are what a build with frame
/// pointers (`server build --profiling`) mends. The client's stacks pass through Rust's
/// standard library and the C library, built without frame pointers wherever pgsurge
/// comes from, so most of them stop short of `main` whatever is done; a note there
/// would tell of nothing to fix.
pub fn notes(profile: &Profile, server_binary: Option<&Path>) -> Vec<String> {
    let total = profile.total();
    if total == 0 {
        return vec!["no samples: the processes did not run during the window".into()];
    }
    if profile.kind == ProfileKind::ServerOffCpu {
        return Vec::new();
    }
    let mut notes = Vec::new();
    notes.extend(cut_short(profile));
    notes.extend(unsymbolized_note(profile, server_binary));
    notes
}

/// *stacks cut short* when fewer than half of the server's stacks outside the kernel
/// reach `main` (or a thread's start).
fn cut_short(profile: &Profile) -> Option<String> {
    let roots = [
        "main",
        "_start",
        "__libc_start_main",
        "__libc_start_call_main",
    ];
    let threads = ["start_thread", "clone", "clone3", "__clone"];
    let user_stacks: Vec<(&String, &u64)> = profile
        .stacks
        .iter()
        .filter(|(s, _)| !s.ends_with("_[k]") && s.split(';').nth(1).is_some())
        .collect();
    let user_total: u64 = user_stacks.iter().map(|(_, n)| **n).sum();
    let whole: u64 = user_stacks
        .iter()
        .filter(|(s, _)| {
            s.split(';')
                .any(|f| roots.contains(&f) || threads.contains(&f))
        })
        .map(|(_, n)| **n)
        .sum();
    (profile.kind == ProfileKind::ServerCpu
        && user_total > 0
        && (whole as f64) < 0.5 * user_total as f64)
        .then(|| {
            format!(
                "stacks cut short: {:.0} % of the samples reach main; the binaries have no \
                 frame pointers (a server built with `pgsurge server build --profiling` has \
                 them), so inclusive times are too low and callers are missing",
                whole as f64 * 100.0 / total_or_one(user_total)
            )
        })
}

fn total_or_one(n: u64) -> f64 {
    n.max(1) as f64
}

/// Whether a folded frame is one perf could not name: `[module]` (the code's binary
/// is known, its symbol is not: inferno's name for perf's `[unknown] (module)`),
/// `[unknown]`, or a bare address.
pub fn is_unsymbolized(frame: &str) -> bool {
    (frame.starts_with('[') && frame.ends_with(']')) || frame.starts_with("0x")
}

/// Samples without a symbol: those whose own (innermost) frame has none, in all and per
/// binary (`[postgres]` → `postgres`; `[unknown]` and addresses → `unknown`). Frames
/// further out are not judged: a walk by frame pointers often ends in an address
/// beyond the program's first frame, which perf cannot name, in binaries with every
/// symbol. The first element of a folded stack is the process's name, not a frame.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Unsymbolized {
    /// Samples whose innermost frame has no symbol, in all.
    pub innermost: u64,
    /// The same per binary.
    pub by_binary: BTreeMap<String, u64>,
}

/// The binary an unsymbolized frame is in.
fn binary_of(frame: &str) -> &str {
    let inner = frame.trim_start_matches('[').trim_end_matches(']');
    if inner.is_empty() || inner == "unknown" || frame.starts_with("0x") {
        "unknown"
    } else {
        inner
    }
}

/// [`Unsymbolized`] of folded `stacks`.
pub fn unsymbolized_samples(stacks: &BTreeMap<String, u64>) -> Unsymbolized {
    let mut u = Unsymbolized::default();
    for (stack, n) in stacks {
        let leaf = stack.split(';').skip(1).last();
        if let Some(leaf) = leaf.filter(|f| is_unsymbolized(f)) {
            u.innermost += n;
            *u.by_binary.entry(binary_of(leaf).to_string()).or_insert(0) += n;
        }
    }
    u
}

/// *frames without symbols* when more than [`UNSYMBOLIZED_NOTE_SHARE`] of the samples
/// are in code without symbols (their innermost frame): the share, the binaries (most
/// samples first), and what to install.
pub fn unsymbolized_note(profile: &Profile, server_binary: Option<&Path>) -> Option<String> {
    let total = profile.total();
    let u = unsymbolized_samples(&profile.stacks);
    if total == 0 || (u.innermost as f64) <= UNSYMBOLIZED_NOTE_SHARE * total as f64 {
        return None;
    }
    let pct = |n: u64| n as f64 * 100.0 / total as f64;
    let mut binaries: Vec<(&String, &u64)> = u.by_binary.iter().collect();
    binaries.sort_by(|a, b| b.1.cmp(a.1).then_with(|| a.0.cmp(b.0)));
    let named: Vec<String> = binaries
        .iter()
        .take(3)
        .map(|(b, n)| format!("{b} {:.0} %", pct(**n)))
        .collect();
    let server_named = binaries.iter().any(|(b, _)| *b == "postgres");
    let install = match (profile.kind, server_named) {
        (ProfileKind::ServerCpu, true) => format!(
            "install the server's debug symbols ({}) or build it with `pgsurge server build \
             --profiling`",
            debug_package(server_binary)
        ),
        _ => "install the debug symbols of the binaries named (the distribution's -dbgsym \
              or -debuginfo packages)"
            .to_string(),
    };
    Some(format!(
        "frames without symbols: {:.0} % of the samples are in code whose functions perf \
         could not name ({}), drawn as [binary] boxes that hide which functions ran; \
         {install}",
        pct(u.innermost),
        named.join(", ")
    ))
}

/// The package holding the debug symbols of the server at `binary`: Debian's and
/// Ubuntu's `postgresql-N-dbgsym` for `/usr/lib/postgresql/N/bin/postgres`, otherwise
/// the distribution's kinds of packages.
fn debug_package(binary: Option<&Path>) -> String {
    let version = binary
        .and_then(|b| b.strip_prefix("/usr/lib/postgresql").ok())
        .and_then(|rest| rest.components().next())
        .and_then(|c| c.as_os_str().to_str())
        .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()));
    match version {
        Some(v) => format!("Debian and Ubuntu: postgresql-{v}-dbgsym, from the debug archive"),
        None => "the distribution's -dbgsym or -debuginfo package of the server".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile(stacks: &[(&str, u64)]) -> Profile {
        Profile {
            kind: ProfileKind::ServerCpu,
            frequency_hz: Some(99),
            stacks: stacks.iter().map(|(s, n)| (s.to_string(), *n)).collect(),
            notes: Vec::new(),
        }
    }

    #[test]
    fn frames_without_symbols_are_noted_above_the_threshold_only() {
        // 10 of 200 samples (5 %) are in [postgres]: at the threshold, no note; the
        // samples passing through it (stacks cut off beyond main, static callers) do
        // not count.
        let at = profile(&[
            ("postgres;main;PostgresMain;exec_simple_query", 150),
            ("postgres;main;[postgres];exec_simple_query", 40),
            ("postgres;main;PostgresMain;[postgres]", 6),
            ("postgres;[postgres]", 4),
        ]);
        let u = unsymbolized_samples(&at.stacks);
        assert_eq!(u.innermost, 10);
        assert_eq!(unsymbolized_note(&at, None), None);
        // One sample more is above it: the note gives the shares, the binary, and
        // Debian's package for a Debian server.
        let above = profile(&[
            ("postgres;main;PostgresMain;exec_simple_query", 149),
            ("postgres;main;[postgres];exec_simple_query", 40),
            ("postgres;main;PostgresMain;[postgres]", 7),
            ("postgres;[postgres];[postgres]", 4),
        ]);
        let note = unsymbolized_note(
            &above,
            Some(Path::new("/usr/lib/postgresql/15/bin/postgres")),
        )
        .expect("a note above the threshold");
        assert!(
            note.starts_with("frames without symbols: 6 % of the samples are in code"),
            "{note}"
        );
        assert!(note.contains("(postgres 6 %), drawn as"), "{note}");
        assert!(note.contains("postgresql-15-dbgsym"), "{note}");
        assert!(notes(&above, None)
            .iter()
            .any(|n| n.starts_with("frames without symbols")));
    }

    #[test]
    fn unsymbolized_frames_are_named_by_binary() {
        let p = profile(&[
            // The process's name is not a frame, even in brackets.
            ("[pgsurge];main;run", 50),
            ("postgres;[postgres];[libc.so.6]", 30),
            ("postgres;main;0x7f00aa", 15),
            ("postgres;main;[unknown]", 5),
        ]);
        let u = unsymbolized_samples(&p.stacks);
        assert_eq!(u.innermost, 50);
        assert_eq!(u.by_binary["libc.so.6"], 30);
        assert_eq!(u.by_binary["unknown"], 20);
        assert!(!u.by_binary.contains_key("postgres"));
        let note = unsymbolized_note(&p, Some(Path::new("/opt/pg/bin/postgres"))).unwrap();
        assert!(note.contains("50 % of the samples"), "{note}");
        assert!(note.contains("(libc.so.6 30 %, unknown 20 %)"), "{note}");
        assert!(note.contains("the distribution's -dbgsym"), "{note}");
        // Symbolized names with brackets inside are not taken for unsymbolized frames.
        assert!(!is_unsymbolized("<[T] as core::fmt::Debug>::fmt"));
        assert!(is_unsymbolized("[postgres]"));
    }
}
