//! When a running throwaway server is replaced by a new one before a test: the one
//! rule the runner starts servers by and `campaign plan` counts its initializations
//! by, so the estimate's worst case is what a run does. A new server is a new cluster:
//! its data is loaded again.
//!
//! It decides only; starting, stopping and loading are the runner's.

use crate::matrix::TestPlan;
use crate::spec::{Campaign, FreshCluster};

/// What is known of a target's running throwaway server when the next test comes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Running<'a> {
    /// The `matrix.settings` values it was started with.
    pub settings: &'a [(String, String)],
    /// The layout build and server start (`[repeats] builds` and `starts`) it is.
    pub level: (u32, u32),
    /// A test's `[[fault]]`s changed it.
    pub faulted: bool,
    /// Tests it ran.
    pub tests_done: usize,
    /// The scale of the data it holds, when known.
    pub scale: Option<u32>,
}

/// Whether the server `running` is replaced by a new one before `plan`: for the next
/// value of a swept setting, after a fault, for the next layout build or server start
/// of `[repeats]` (by [`Campaign::level_of`]), or as `[hygiene] fresh_cluster` asks
/// (after every test, or when the scale changes).
pub fn replaced(campaign: &Campaign, running: &Running<'_>, plan: &TestPlan) -> bool {
    let fresh = match campaign.spec.hygiene.fresh_cluster() {
        FreshCluster::Test => running.tests_done > 0,
        FreshCluster::Scale => running.scale.is_some_and(|s| s != plan.scale),
        FreshCluster::Never => false,
    };
    fresh
        || running.faulted
        || running.settings != plan.settings.as_slice()
        || running.level != campaign.level_of(plan.repeat)
}
