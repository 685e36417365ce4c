//! The terminal's view of a campaign: the progress bar (one unit per planned second of
//! a test), the lines said above it, and how a test is named in them (`[3/12] key`).

use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pgsurge_command::terminal_safe;
use pgsurge_wire::redact::redact;

use crate::matrix::{Matrix, TestPlan};
use crate::spec::{Campaign, Limit};

/// Seconds a test is expected to take besides its run (hygiene, snapshots).
pub(super) const OVERHEAD_S: u64 = 3;

pub(super) fn planned_seconds(c: &Campaign) -> u64 {
    match c.limit() {
        Limit::Duration(d) => u64::from(d) + c.warmup_worst_s().round() as u64 + OVERHEAD_S,
        Limit::Transactions(_) => 10,
    }
}

pub(super) fn progress_bar(
    c: &Campaign,
    _m: &Matrix,
    todo: &[&TestPlan],
    quiet: bool,
) -> ProgressBar {
    let per_test = planned_seconds(c);
    let pb = ProgressBar::new(per_test * todo.len() as u64);
    if quiet {
        pb.set_draw_target(ProgressDrawTarget::hidden());
    } else {
        pb.set_draw_target(ProgressDrawTarget::stderr());
    }
    if let Ok(style) = ProgressStyle::with_template(
        "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta_precise}\n  {msg}",
    ) {
        pb.set_style(style);
    }
    pb.enable_steady_tick(Duration::from_millis(250));
    pb
}

pub(super) fn say(pb: &ProgressBar, quiet: bool, line: &str) {
    if quiet {
        return;
    }
    // Lines quote errors and warnings, which may quote a connection string.
    let masked = redact(line);
    let line = &terminal_safe(&masked);
    if pb.is_hidden() {
        eprintln!("{line}");
    } else {
        pb.println(line);
    }
}

/// One test of the loop: its place in the invocation and its plan.
pub(super) struct TestAt<'p> {
    /// Its number, from 1.
    pub(super) n: usize,
    /// Tests in this invocation.
    pub(super) of: usize,
    pub(super) plan: &'p TestPlan,
    /// The progress bar's position when it starts.
    pub(super) base: u64,
}

impl TestAt<'_> {
    /// `[3/12] local/s10/tpcb-like/c4/r-/1`.
    pub(super) fn head(&self) -> String {
        format!("[{}/{}] {}", self.n, self.of, self.plan.key)
    }

    /// `[3/12] local/s10/tpcb-like/c4/r-/1: {what}`.
    pub(super) fn line(&self, what: impl std::fmt::Display) -> String {
        format!("{}: {what}", self.head())
    }
}
