//! Profiles of a run's measured window: call stacks of the server's processes or of
//! the client, folded (one line per distinct stack, `outer;…;inner count`), as
//! `inferno` and Brendan Gregg's flame-graph scripts read them. Recorded around a run
//! by `pgsurge-observe` (`profile`), carried in the [`crate::RunResult`] (never in its
//! JSON: stacks are large) and stored with the test by `pgsurge-store`.
//!
//! The stack's frames are function names resolved when the run ended (the binaries
//! may be gone later); a frame's name never holds `;`.

use std::collections::{BTreeMap, BTreeSet};

/// What a profile samples.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProfileKind {
    /// On-CPU samples of the server's processes (postmaster, backends, auxiliary
    /// processes); counts are samples.
    ServerCpu,
    /// On-CPU samples of the client (every thread of the pgsurge process); counts are
    /// samples.
    ClientCpu,
    /// Time the server's processes spent off the CPU (switched out by the scheduler),
    /// by the stack they left it with; counts are microseconds.
    ServerOffCpu,
}

impl ProfileKind {
    /// Every kind, in the order outputs list them.
    pub const ALL: [ProfileKind; 3] = [
        ProfileKind::ServerCpu,
        ProfileKind::ClientCpu,
        ProfileKind::ServerOffCpu,
    ];

    /// The stored name (`server-cpu`, `client-cpu`, `server-offcpu`).
    pub fn name(self) -> &'static str {
        match self {
            ProfileKind::ServerCpu => "server-cpu",
            ProfileKind::ClientCpu => "client-cpu",
            ProfileKind::ServerOffCpu => "server-offcpu",
        }
    }

    /// The kind stored as `name`.
    pub fn parse(name: &str) -> Option<ProfileKind> {
        ProfileKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// What one count is: `samples` or `us`.
    pub fn unit(self) -> &'static str {
        match self {
            ProfileKind::ServerCpu | ProfileKind::ClientCpu => "samples",
            ProfileKind::ServerOffCpu => "us",
        }
    }

    /// A heading in words.
    pub fn title(self) -> &'static str {
        match self {
            ProfileKind::ServerCpu => "server on-CPU",
            ProfileKind::ClientCpu => "client on-CPU",
            ProfileKind::ServerOffCpu => "server off-CPU",
        }
    }
}

/// One profile of a measured window.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// What was sampled.
    pub kind: ProfileKind,
    /// Sampling frequency of on-CPU profiles (per running thread), in Hz.
    pub frequency_hz: Option<u32>,
    /// Folded stacks: `outer;…;inner` → count (see [`ProfileKind::unit`]).
    pub stacks: BTreeMap<String, u64>,
    /// What a reader should know, e.g. that stacks are cut short.
    pub notes: Vec<String>,
}

impl Profile {
    /// The sum of the counts.
    pub fn total(&self) -> u64 {
        self.stacks.values().sum()
    }

    /// The folded text: one `stack count` line per stack.
    pub fn folded(&self) -> String {
        folded_text(&self.stacks)
    }

    /// Counts by the innermost frame (self time); for an off-CPU profile, by the
    /// innermost frame outside the kernel: the server's function that waited
    /// ([`wait_site_counts`]).
    pub fn self_counts(&self) -> BTreeMap<String, u64> {
        match self.kind {
            ProfileKind::ServerOffCpu => wait_site_counts(&self.stacks),
            ProfileKind::ServerCpu | ProfileKind::ClientCpu => self_counts(&self.stacks),
        }
    }

    /// Counts by every function on a stack, once per stack (inclusive time).
    pub fn inclusive_counts(&self) -> BTreeMap<String, u64> {
        inclusive_counts(&self.stacks)
    }

    /// A few lines for a terminal: the count, the unit and the hottest functions by
    /// self count (at most `top`), each with its share.
    pub fn render(&self, top: usize) -> String {
        let total = self.total();
        let freq = self
            .frequency_hz
            .map(|f| format!(" at {f} Hz"))
            .unwrap_or_default();
        let mut out = format!(
            "profile ({}): {total} {}{freq}\n",
            self.kind.title(),
            self.kind.unit()
        );
        for note in &self.notes {
            out.push_str(&format!("  note: {note}\n"));
        }
        let mut by_self: Vec<(String, u64)> = self.self_counts().into_iter().collect();
        by_self.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        for (f, n) in by_self.into_iter().take(top) {
            let pct = if total == 0 {
                0.0
            } else {
                n as f64 * 100.0 / total as f64
            };
            out.push_str(&format!("  {pct:5.1} % {f}\n"));
        }
        out
    }
}

/// Folded stacks as text, one `stack count` line each, sorted by stack.
pub fn folded_text(stacks: &BTreeMap<String, u64>) -> String {
    let mut out = String::new();
    for (stack, n) in stacks {
        out.push_str(stack);
        out.push(' ');
        out.push_str(&n.to_string());
        out.push('\n');
    }
    out
}

/// Reads folded text (`stack count` per line; blank lines skipped); `Err` names the
/// first line that is not one.
pub fn parse_folded(text: &str) -> Result<BTreeMap<String, u64>, String> {
    let mut stacks = BTreeMap::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let parsed = line
            .rsplit_once(' ')
            .and_then(|(stack, n)| Some((stack, n.parse::<u64>().ok()?)));
        let Some((stack, n)) = parsed else {
            return Err(format!("line {}: not `stack count`", i + 1));
        };
        *stacks.entry(stack.to_string()).or_insert(0) += n;
    }
    Ok(stacks)
}

/// Counts by the innermost frame of each stack.
pub fn self_counts(stacks: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (stack, n) in stacks {
        let leaf = stack.rsplit(';').next().unwrap_or(stack);
        *m.entry(leaf.to_string()).or_insert(0) += n;
    }
    m
}

/// The suffix of a kernel frame's name in off-CPU stacks (the flame-graph tools'
/// convention).
pub const KERNEL_FRAME: &str = "_[k]";

/// Counts by the innermost frame of each stack that is not the kernel's (named with
/// [`KERNEL_FRAME`]): where an off-CPU stack's process waited in its own code (the
/// kernel part is the scheduler's, the same for every wait). The first frame names the
/// process; a stack of kernel frames only counts under its innermost frame.
pub fn wait_site_counts(stacks: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (stack, n) in stacks {
        let frames: Vec<&str> = stack.split(';').collect();
        let leaf = frames.last().copied().unwrap_or(stack);
        // The first frame names the process, not a function.
        let site = frames
            .iter()
            .skip(1)
            .rev()
            .find(|f| !f.ends_with(KERNEL_FRAME))
            .copied()
            .unwrap_or(leaf);
        *m.entry(site.to_string()).or_insert(0) += n;
    }
    m
}

/// Counts by every function on a stack, a function counted once per stack however
/// often it recurses.
pub fn inclusive_counts(stacks: &BTreeMap<String, u64>) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for (stack, n) in stacks {
        let frames: BTreeSet<&str> = stack.split(';').collect();
        for f in frames {
            *m.entry(f.to_string()).or_insert(0) += n;
        }
    }
    m
}

/// The sum of several profiles' stacks (repeats of one cell pooled).
pub fn pooled<'a>(
    profiles: impl IntoIterator<Item = &'a BTreeMap<String, u64>>,
) -> BTreeMap<String, u64> {
    let mut m = BTreeMap::new();
    for p in profiles {
        for (s, n) in p {
            *m.entry(s.clone()).or_insert(0) += n;
        }
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks() -> BTreeMap<String, u64> {
        parse_folded("main;a;b 3\nmain;a 2\nmain;b;b 5\n").unwrap()
    }

    #[test]
    fn self_and_inclusive_counts() {
        let s = stacks();
        let own = self_counts(&s);
        assert_eq!(own["b"], 8);
        assert_eq!(own["a"], 2);
        let inc = inclusive_counts(&s);
        assert_eq!(inc["main"], 10);
        assert_eq!(inc["a"], 5);
        // b recurses in the last stack: counted once there.
        assert_eq!(inc["b"], 8);
    }

    #[test]
    fn an_off_cpu_stack_counts_under_the_frame_that_waited() {
        let s = parse_folded(
            "postgres;main;pg_sleep;WaitLatch;do_epoll_wait_[k];__schedule_[k] 7\n\
             postgres;main;secure_read;WaitEventSetWait;__schedule_[k] 2\n\
             postgres;main;pg_usleep 1\n\
             kworker;worker_thread_[k];__schedule_[k] 4\n",
        )
        .unwrap();
        let p = Profile {
            kind: ProfileKind::ServerOffCpu,
            frequency_hz: None,
            stacks: s.clone(),
            notes: Vec::new(),
        };
        let sites = p.self_counts();
        assert_eq!(sites["WaitLatch"], 7);
        assert_eq!(sites["WaitEventSetWait"], 2);
        assert_eq!(sites["pg_usleep"], 1);
        assert_eq!(sites["__schedule_[k]"], 4);
        // On-CPU, the innermost frame is the kernel's.
        let on_cpu = Profile {
            kind: ProfileKind::ServerCpu,
            ..p
        };
        assert_eq!(on_cpu.self_counts()["__schedule_[k]"], 13);
    }

    #[test]
    fn folded_text_round_trips_and_bad_lines_are_refused() {
        let s = stacks();
        assert_eq!(parse_folded(&folded_text(&s)).unwrap(), s);
        assert!(parse_folded("main;a x\n").unwrap_err().contains("line 1"));
        assert_eq!(pooled([&s, &s])["main;b;b"], 10);
    }
}
