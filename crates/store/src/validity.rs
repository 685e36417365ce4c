//! What a stored run's data says about its validity: the one reading of the stored facts
//! and figures into `pgsurge_analysis::validity::Evidence`, which the report, `compare`,
//! capacity searches and `results show` all judge from.
//!
//! The facts read are [`facts::CLIENT_BOUND`], [`facts::LAG_GROWING`],
//! [`facts::CHECKPOINT_IN_SHORT_WINDOW`], [`facts::AUTOVACUUM_IN_WINDOW`] (each when
//! `true`) and [`facts::TIMING_HAZARDS`] (when present); the run's own record gives its
//! failed and retried transactions and whether its steady-state detection found it not
//! steady.

use std::collections::BTreeSet;

use pgsurge_analysis::validity::Evidence;

use crate::{facts, FactRecord, Run, Store, StoreError};

/// Run ids with each stored fact that bears on a run's validity.
#[derive(Debug, Clone, Default)]
pub struct ValidityFacts {
    client_bound: BTreeSet<i64>,
    debug_build: BTreeSet<i64>,
    checkpoint: BTreeSet<i64>,
    autovacuum: BTreeSet<i64>,
    lag_growing: BTreeSet<i64>,
}

impl ValidityFacts {
    /// The validity facts of every run of the sets `sets`.
    pub fn of_sets(
        store: &mut Store,
        sets: impl IntoIterator<Item = i64>,
    ) -> Result<ValidityFacts, StoreError> {
        let mut out = ValidityFacts::default();
        for set in sets.into_iter().collect::<BTreeSet<i64>>() {
            for (run_id, fact) in store.set_facts(set)? {
                out.add(run_id, &fact);
            }
        }
        Ok(out)
    }

    /// Takes one stored fact of run `run_id`; false when it does not bear on validity
    /// (so a caller reading the same facts for more can look at it).
    pub fn add(&mut self, run_id: i64, fact: &FactRecord) -> bool {
        let is_true = fact.value.as_deref() == Some("true");
        let slot = match fact.name.as_str() {
            facts::CLIENT_BOUND if is_true => &mut self.client_bound,
            facts::TIMING_HAZARDS => &mut self.debug_build,
            facts::CHECKPOINT_IN_SHORT_WINDOW if is_true => &mut self.checkpoint,
            facts::AUTOVACUUM_IN_WINDOW if is_true => &mut self.autovacuum,
            facts::LAG_GROWING if is_true => &mut self.lag_growing,
            _ => return false,
        };
        slot.insert(run_id);
        true
    }

    /// Whether run `id` was client-bound.
    pub fn client_bound(&self, id: i64) -> bool {
        self.client_bound.contains(&id)
    }

    /// What run `run`'s stored data says about it (`runs` = 1).
    pub fn evidence(&self, run: &Run) -> Evidence {
        let r = &run.record;
        let flag = |set: &BTreeSet<i64>| usize::from(set.contains(&run.id));
        let steady = r
            .result_json
            .as_ref()
            .and_then(|d| d.get("steady_state"))
            .and_then(|s| s.get("steady"))
            .and_then(serde_json::Value::as_bool);
        Evidence {
            runs: 1,
            client_bound: flag(&self.client_bound),
            lag_growing: flag(&self.lag_growing),
            with_failures: usize::from(r.failures.unwrap_or(0) > 0),
            with_retries: usize::from(r.retried.unwrap_or(0) > 0),
            not_steady: usize::from(steady == Some(false)),
            checkpoint_in_window: flag(&self.checkpoint),
            autovacuum_in_window: flag(&self.autovacuum),
            debug_build: flag(&self.debug_build),
        }
    }
}
