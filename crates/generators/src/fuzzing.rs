//! The body of the fuzz target over merge inputs (`fuzz/fuzz_targets/merge_documents.rs`),
//! kept in the library so inputs found by the fuzzer replay as ordinary tests
//! (`crates/records/tests/it/fuzz_replay.rs`).

use pgsurge_results::RunResult;

use crate::checks;
use crate::merge::merge;
use crate::merge_cli::{parse_result, write_merged_report};

/// At most this many documents per input (the checks compare them in pairs).
const MAX_DOCUMENTS: usize = 16;

/// Cuts `data` at NUL bytes into documents (or generators' captured output), reads
/// each as `pgsurge merge` reads a file, and merges them. Must never panic. A merge
/// that succeeds must add the inputs' transactions up exactly, give a result whose
/// counts agree with its histograms, and render and read back as a document.
#[doc(hidden)]
pub fn merge_documents_one(data: &[u8]) {
    let mut results: Vec<RunResult> = Vec::new();
    for piece in data.split(|&b| b == 0).take(MAX_DOCUMENTS) {
        match parse_result(&String::from_utf8_lossy(piece)) {
            Ok(r) => results.push(r),
            Err(_) => return,
        }
    }
    let labels: Vec<String> = (0..results.len()).map(|i| format!("doc-{i}")).collect();
    let merged = match merge(&results, &labels) {
        Ok(m) => m,
        Err(e) => {
            let _ = e.to_string();
            return;
        }
    };
    let r = &merged.result;
    let sum = results
        .iter()
        .try_fold(0u64, |a, x| a.checked_add(x.totals.transactions));
    assert_eq!(sum, Some(r.totals.transactions), "merged transactions");
    if let Err(e) = checks::check_counts(r, "merged") {
        panic!("the merge of consistent documents is not consistent: {e}");
    }
    let mut report = Vec::new();
    write_merged_report(&merged, &mut report).expect("report into memory");
    let mut json = Vec::new();
    pgsurge_results::write_json_to(r, &mut json).expect("JSON into memory");
    let back =
        parse_result(&String::from_utf8_lossy(&json)).expect("the merged document reads back");
    assert_eq!(back.totals.transactions, r.totals.transactions);
}
