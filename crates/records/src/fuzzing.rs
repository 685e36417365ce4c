//! The body of the fuzz target over `results import` (`fuzz/fuzz_targets/import.rs`),
//! kept in the library so inputs found by the fuzzer replay as ordinary tests
//! (`tests/it/fuzz_replay.rs`).

use std::sync::Mutex;

use pgsurge_store::{SetRecord, Store};

static STORE: Mutex<Option<(Store, i64)>> = Mutex::new(None);

/// Parses `data` as a pgbench report and as a `-l` log, the way `results import` does,
/// and writes what passes its checks into an in-memory store. Must never panic, and
/// the store must accept every run the checks let through.
#[doc(hidden)]
pub fn import_one(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let log = crate::import::parse_log(text).ok();
    let Some(report) = crate::import::parse_report(text) else {
        return;
    };
    if report.check().is_err() {
        return;
    }
    let Ok(write) = crate::import::to_run_write(0, "fuzz#1", 1, &report, log, "fuzz") else {
        return;
    };
    let mut guard = STORE.lock().unwrap_or_else(|e| e.into_inner());
    let (store, set_id) = guard.get_or_insert_with(|| {
        let mut store = Store::open(":memory:").expect("in-memory store");
        let set_id = store
            .create_set(&SetRecord {
                name: "fuzz".into(),
                kind: "import".into(),
                created_at: "2026-01-01T00:00:00Z".into(),
                ..Default::default()
            })
            .expect("set");
        (store, set_id)
    });
    let mut write = write;
    write.run.set_id = *set_id;
    if let Err(e) = store.write_run_replacing(&write) {
        panic!("a checked import was refused by the store: {e}");
    }
}
