//! Inputs that cannot be one run are refused, each with a message naming the inputs
//! or indexes: the same file or run twice, generator indexes that are not one run's
//! (twice, out of range, different counts, missing, numbered and unnumbered mixed),
//! runs that did not overlap in time, documents that contradict themselves (totals
//! against their own histogram, a script's figures against the totals or the
//! transaction type), and counts whose sum does not fit. The runs a merge must still
//! take (generators of different lengths, a skew inside the tolerance, unnumbered
//! runs side by side) merge.

use std::path::{Path, PathBuf};

use crate::common::{four, generator_of, latencies, summary, T0};
use hdrhistogram::Histogram;
use pgsurge_generators::histograms;
use pgsurge_generators::merge::merge;
use pgsurge_generators::merge_cli::merge_files;
use pgsurge_results::{RunResult, ScriptResult, TxnSummary};

fn err(rs: &[RunResult], labels: &[String]) -> String {
    match merge(rs, labels) {
        Ok(m) => panic!(
            "merged {} transactions instead of refusing",
            m.result.totals.transactions
        ),
        Err(e) => e.to_string(),
    }
}

fn labels(n: usize) -> Vec<String> {
    (0..n).map(|g| format!("gen-{g}.json")).collect()
}

fn write_all(dir: &Path, rs: &[RunResult], stem: &str) -> Vec<PathBuf> {
    rs.iter()
        .enumerate()
        .map(|(g, r)| {
            let p = dir.join(format!("{stem}-{g}.json"));
            pgsurge_results::write_json(r, &p).expect("write");
            p
        })
        .collect()
}

/// Generator `gen` of 2 of a `-t` run (whose generators may run for different
/// times), `secs` seconds long, starting `skew_us` after the first.
fn t_run(gen: u32, secs: usize, skew_us: i64) -> RunResult {
    let mut r = generator_of(gen, 2, 4, secs, 300, skew_us).0;
    r.options.duration_s = None;
    r.options.transactions_per_client = Some(500);
    r
}

/// Generators 0 and 1 of 2, of `secs` seconds each, the second starting `skew_us`
/// after the first.
fn two(secs: usize, skew_us: i64) -> Vec<RunResult> {
    vec![
        generator_of(0, 2, 4, secs, 300, 0).0,
        generator_of(1, 2, 4, secs, 300, skew_us).0,
    ]
}

#[test]
fn the_same_file_twice_is_refused_and_nothing_is_written() {
    let (rs, _, _) = four();
    let dir = pgsurge_testkit::scratch_dir("merge-refusals");
    let paths = write_all(dir.path(), &rs, "gen");
    let e = merge_files(&[
        paths[0].clone(),
        paths[1].clone(),
        paths[2].clone(),
        paths[3].clone(),
        paths[0].clone(),
    ])
    .unwrap_err()
    .to_string();
    assert_eq!(
        e,
        format!(
            "{} is given twice: each generator's result is merged once",
            paths[0].display()
        )
    );
    // Another path to the same file is the same file.
    let other_path = dir.path().join(".").join("gen-2.json");
    let e = merge_files(&[
        paths[0].clone(),
        paths[1].clone(),
        paths[2].clone(),
        paths[3].clone(),
        other_path.clone(),
    ])
    .unwrap_err()
    .to_string();
    assert!(
        e.starts_with(&format!("{} is given twice", other_path.display())),
        "{e}"
    );

    // `pgsurge merge`: exit 1, no merged document.
    let out = dir.path().join("merged.json");
    let args: Vec<std::ffi::OsString> = [
        format!("--json={}", out.display()),
        paths[0].display().to_string(),
        paths[1].display().to_string(),
        paths[0].display().to_string(),
    ]
    .into_iter()
    .map(Into::into)
    .collect();
    assert_eq!(pgsurge_generators::merge_main(&args), 1);
    assert!(!out.exists(), "a refused merge writes nothing");
}

#[test]
fn a_byte_identical_copy_under_another_name_is_refused() {
    let (rs, _, _) = four();
    let dir = pgsurge_testkit::scratch_dir("merge-refusals");
    let mut paths = write_all(dir.path(), &rs, "gen");
    let copy = dir.path().join("copy.json");
    std::fs::copy(&paths[1], &copy).unwrap();
    paths.push(copy.clone());
    let e = merge_files(&paths).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "{} and {} are the same run (identical documents): each generator's result is merged once",
            paths[1].display(),
            copy.display()
        )
    );
}

#[test]
fn one_generator_section_twice_is_the_same_run() {
    let (mut rs, mut labels, _) = four();
    let mut again = rs[1].clone();
    again.tps += 1.0;
    rs.push(again);
    labels.push("gen-1-again.json".into());
    assert_eq!(
        err(&rs, &labels),
        format!(
            "gen-1.json and gen-1-again.json are the same run (one generator section: generator \
             \"gen-1\" on host \"host-1\", started at {} µs since the epoch): each generator's \
             result is merged once",
            T0 + 700
        )
    );
}

#[test]
fn the_same_generator_index_twice_is_refused() {
    let (mut rs, labels, _) = four();
    rs[2].generator.as_mut().unwrap().index = Some(1);
    assert_eq!(
        err(&rs, &labels),
        "generator index 1 is given twice: gen-1.json and gen-2.json"
    );
}

#[test]
fn indexes_that_claim_different_generator_counts_are_refused() {
    let (mut rs, labels, _) = four();
    rs[1].generator.as_mut().unwrap().count = Some(3);
    assert_eq!(
        err(&rs, &labels),
        "gen-0.json is generator 0 of 4 but gen-1.json is generator 1 of 3: the generators of \
         one run share one --generator-count"
    );
    let (mut rs, labels, _) = four();
    rs[3].generator.as_mut().unwrap().index = Some(4);
    assert_eq!(
        err(&rs, &labels),
        "gen-3.json: generator index 4 is not below its generator count 4"
    );
}

#[test]
fn a_missing_generator_index_is_refused() {
    // `local-0.json` alone, of a run of 2.
    let dir = pgsurge_testkit::scratch_dir("merge-refusals");
    let paths = write_all(dir.path(), &two(5, 0), "local");
    let e = merge_files(&paths[..1]).unwrap_err().to_string();
    assert_eq!(
        e,
        format!(
            "a run of 2 generators, but 1 given ({}); missing generator index(es): 1",
            paths[0].display()
        )
    );
    let (mut rs, mut labels, _) = four();
    rs.remove(2);
    labels.remove(2);
    assert_eq!(
        err(&rs, &labels),
        "a run of 4 generators, but 3 given (gen-0.json, gen-1.json, gen-3.json); missing \
         generator index(es): 2"
    );
}

#[test]
fn numbered_and_unnumbered_inputs_are_not_one_run() {
    let (mut rs, labels, _) = four();
    rs[2].generator.as_mut().unwrap().index = None;
    assert_eq!(
        err(&rs, &labels),
        "gen-0.json carries a generator index but gen-2.json does not: the inputs are all \
         numbered generators of one run, or none is numbered"
    );
    // Runs without generator options side by side merge (nothing to number them).
    let mut rs = two(3, 1_000);
    for r in &mut rs {
        r.generator = None;
    }
    let m = merge(&rs, &labels[..2]).expect("plain runs at the same time merge");
    assert_eq!(m.result.totals.transactions, 2 * 900);
}

#[test]
fn runs_that_never_overlapped_are_refused() {
    // A start skew of 5 s for 2 s runs.
    let rs = two(2, 5_000_000);
    assert_eq!(
        err(&rs, &labels(2)),
        "gen-1.json started 5.000 s after gen-0.json, but gen-0.json ran only 2.000 s: these \
         results did not run at the same time (the start skew may exceed the shortest run by \
         at most 50 ms)"
    );
    // Up to the tolerance past the shortest run, the merge is taken; past it, not.
    let m = merge(&two(2, 2_050_000), &labels(2)).expect("inside the tolerance");
    assert_eq!(m.start_skew_us, 2_050_000);
    let e = err(&two(2, 2_050_001), &labels(2));
    assert!(
        e.starts_with("gen-1.json started 2.050 s after gen-0.json"),
        "{e}"
    );
    // A short run in the middle of a long one: they overlap, but the late start is
    // further from the first than the short run lasted.
    let rs = vec![t_run(0, 10, 0), t_run(1, 1, 5_000_000)];
    assert_eq!(
        err(&rs, &labels(2)),
        "gen-1.json started 5.000 s after gen-0.json, but gen-1.json ran only 1.000 s: these \
         results did not run at the same time (the start skew may exceed the shortest run by \
         at most 50 ms)"
    );
    // Generators of different lengths that started together (`-t`) merge.
    let rs = vec![t_run(0, 5, 0), t_run(1, 1, 300_000)];
    let m = merge(&rs, &labels(2)).expect("one run");
    assert_eq!(m.result.totals.transactions, 1500 + 300);
}

#[test]
fn totals_that_disagree_with_their_own_histogram_are_refused() {
    let (mut rs, labels, vals) = four();
    let n = vals[1].len() as u64;
    rs[1].totals.transactions *= 10;
    rs[1].scripts[0].stats.transactions *= 10;
    assert_eq!(
        err(&rs, &labels),
        format!(
            "gen-1.json: not a consistent result document: its totals count {} transactions but \
             their latency histogram holds {n}",
            n * 10
        )
    );
    // Without a histogram, the exact sums still count them.
    rs[1].totals.latency.histogram = None;
    rs[1].scripts[0].stats.latency.histogram = None;
    assert_eq!(
        err(&rs, &labels),
        format!(
            "gen-1.json: not a consistent result document: its totals count {} transactions but \
             their latency sums count {n}",
            n * 10
        )
    );
    let (mut rs, labels, _) = four();
    rs[3].totals.failures = 7;
    rs[3].scripts[0].stats.failures = 7;
    assert_eq!(
        err(&rs, &labels),
        "gen-3.json: not a consistent result document: its totals count 7 failures but 3 \
         serialization, 0 deadlock, 0 other, 0 connection lost, 0 read-only and 0 cancelled"
    );
}

#[test]
fn a_script_that_is_not_the_documents_is_refused() {
    // The select-only script's figures inside a tpcb-like document.
    let (mut rs, labels, vals) = four();
    let select_only = summary(&latencies(99, vals[1].len()));
    rs[1].scripts[0].stats.latency = select_only;
    assert_eq!(
        err(&rs, &labels),
        format!(
            "gen-1.json: not a consistent result document: its one script \"<builtin: TPC-B \
             (sort of)>\" has other figures than its totals ({n} and {n} transactions, different \
             latency histograms): a run of one script counts the same transactions in both",
            n = vals[1].len()
        )
    );
    // A script of another name than the transaction type.
    let (mut rs, labels, _) = four();
    rs[2].scripts[0].name = "<builtin: select only>".into();
    assert_eq!(
        err(&rs, &labels),
        "gen-2.json: not a consistent result document: its transaction type is \"<builtin: \
         TPC-B (sort of)>\" but its one script is \"<builtin: select only>\""
    );
    let (mut rs, labels, _) = four();
    rs[0].scripts.clear();
    assert_eq!(
        err(&rs, &labels),
        "gen-0.json: not a consistent result document: it lists no script"
    );
}

/// `r` as a run of two scripts: the first `split` values of `vals` from the first,
/// the rest from the second.
fn two_scripts(r: &mut RunResult, vals: &[f64], split: usize) {
    let part = |v: &[f64]| TxnSummary {
        transactions: v.len() as u64,
        latency: summary(v),
        ..Default::default()
    };
    r.transaction_type = "multiple scripts".into();
    r.totals.failures = 0;
    r.totals.serialization_failures = 0;
    r.scripts = vec![
        ScriptResult {
            name: "<builtin: select only>".into(),
            weight: 2,
            stats: part(&vals[..split]),
            ..Default::default()
        },
        ScriptResult {
            name: "<builtin: simple update>".into(),
            weight: 1,
            stats: part(&vals[split..]),
            ..Default::default()
        },
    ];
}

#[test]
fn scripts_that_do_not_add_up_to_the_totals_are_refused() {
    let (mut rs, labels, vals) = four();
    for (r, v) in rs.iter_mut().zip(&vals) {
        two_scripts(r, v, v.len() / 3);
    }
    let m = merge(&rs, &labels).expect("two scripts merge");
    assert_eq!(
        m.result.scripts[0].stats.transactions + m.result.scripts[1].stats.transactions,
        m.result.totals.transactions
    );
    // Another histogram of as many values in the second script.
    let mut bad = rs.clone();
    let n2 = vals[2].len() - vals[2].len() / 3;
    bad[2].scripts[1].stats.latency = summary(&latencies(77, n2));
    assert_eq!(
        err(&bad, &labels),
        "gen-2.json: not a consistent result document: the latency histograms of its scripts \
         do not add up to its totals' histogram"
    );
    let mut bad = rs.clone();
    bad[1].scripts[0].stats.transactions -= 1;
    bad[1].scripts[0].stats.latency.histogram = None;
    bad[1].scripts[0].stats.latency.sums_us.count -= 1;
    assert_eq!(
        err(&bad, &labels),
        format!(
            "gen-1.json: not a consistent result document: its scripts' successful transactions \
             do not add up to its totals' {}",
            vals[1].len()
        )
    );
    let mut bad = rs;
    bad[0].transaction_type = "<builtin: select only>".into();
    assert_eq!(
        err(&bad, &labels),
        "gen-0.json: not a consistent result document: its transaction type is \"<builtin: \
         select only>\" but it runs 2 scripts"
    );
}

/// `r`'s totals (and its one script's) as `n` successful transactions without a
/// histogram, as a document can claim.
fn claim_transactions(r: &mut RunResult, n: u64) {
    r.totals.transactions = n;
    r.totals.failures = 0;
    r.totals.serialization_failures = 0;
    r.totals.latency.sums_us.count = n;
    r.totals.latency.histogram = None;
    r.scripts[0].stats = r.totals.clone();
}

#[test]
fn counts_that_overflow_are_refused_not_wrapped() {
    // 2^64 − 1 + 3221 transactions.
    let mut rs = two(1, 0);
    claim_transactions(&mut rs[0], u64::MAX);
    claim_transactions(&mut rs[1], 3221);
    assert_eq!(
        err(&rs, &labels(2)),
        "the transactions of gen-0.json, gen-1.json add up to more than 18446744073709551615: \
         no counter holds their sum"
    );
    // Successful and failed transactions that fit apart but not together.
    let mut rs = two(1, 0);
    claim_transactions(&mut rs[0], u64::MAX - 310);
    rs[1].totals.failures = 20;
    rs[1].totals.serialization_failures = 20;
    rs[1].scripts[0].stats = rs[1].totals.clone();
    assert_eq!(
        err(&rs, &labels(2)),
        "the successful, skipped and failed transactions of gen-0.json, gen-1.json add up to \
         more than 18446744073709551615: no counter holds their sum"
    );
    // One document whose own counts do not fit together.
    let mut rs = two(1, 0);
    claim_transactions(&mut rs[0], u64::MAX);
    rs[0].totals.failures = 1;
    rs[0].totals.deadlock_failures = 1;
    let e = err(&rs, &labels(2));
    assert_eq!(
        e,
        "gen-0.json: not a consistent result document: its totals count 18446744073709551615 \
         successful, 0 skipped and 1 failed transactions: more than 18446744073709551615 together"
    );
    // Clients.
    let mut rs = two(1, 0);
    rs[0].options.clients = u32::MAX;
    assert_eq!(
        err(&rs, &labels(2)),
        "the clients of gen-0.json, gen-1.json add up to more than 4294967295: no counter holds \
         their sum"
    );
}

#[test]
fn per_second_counts_and_histograms_that_overflow_are_refused() {
    let mut rs = two(2, 0);
    rs[0].intervals[1].transactions = u64::MAX;
    let e = err(&rs, &labels(2));
    assert!(
        e.starts_with("the per-second transactions at ")
            && e.ends_with(
                " s since the epoch of gen-0.json, gen-1.json add up to more than \
                 18446744073709551615: no counter holds their sum"
            ),
        "{e}"
    );

    // Two histograms of 2^64 − 2 values each (the most a V2 encoding holds per bucket
    // is 2^63 − 1).
    let mut huge = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
    huge.record_n(1_000, i64::MAX as u64).unwrap();
    huge.record_n(2_000, i64::MAX as u64).unwrap();
    let encoded = histograms::encode(&huge).expect("encodes");
    assert_eq!(histograms::decode(&encoded).unwrap().len(), u64::MAX - 1);
    let mut rs = two(2, 0);
    for r in &mut rs {
        r.intervals[0].histogram = Some(encoded.clone());
    }
    let e = err(&rs, &labels(2));
    assert!(
        e.starts_with("the per-second histogram counts at ")
            && e.ends_with(
                " s since the epoch of gen-0.json, gen-1.json add up to more than \
                 18446744073709551615: no counter holds their sum"
            ),
        "{e}"
    );
    let mut into = Some(histograms::decode(&encoded).unwrap());
    let e = histograms::add(&mut into, &huge).unwrap_err().to_string();
    assert_eq!(
        e,
        "bad histogram: counts of 18446744073709551614 and 18446744073709551614 add up to more \
         than 18446744073709551615"
    );

    // One histogram whose buckets add up to more than 2^64 − 1 (its decoded total
    // saturates).
    let mut wrapped = huge.clone();
    wrapped.record_n(3_000, i64::MAX as u64).unwrap();
    let encoded = histograms::encode(&wrapped).expect("encodes");
    assert_eq!(
        histograms::decode(&encoded).unwrap_err().to_string(),
        "bad histogram: its bucket counts add up to 18446744073709551615 or more"
    );
    let mut rs = two(2, 0);
    rs[1].intervals[0].histogram = Some(encoded);
    let e = err(&rs, &labels(2));
    assert!(
        e.starts_with("gen-1.json: not a consistent result document: its per-second histogram at ")
            && e.ends_with(
                " s since the epoch cannot be read: its bucket counts add up to \
                 18446744073709551615 or more"
            ),
        "{e}"
    );
}

#[test]
fn a_document_that_ends_before_it_starts_is_refused() {
    let mut rs = two(2, 0);
    rs[1].end_time_unix_us = T0 - 1;
    assert_eq!(
        err(&rs, &labels(2)),
        format!(
            "gen-1.json: not a consistent result document: it ends ({} µs since the epoch) \
             before its clients started ({T0})",
            T0 - 1
        )
    );
    let mut rs = two(2, 0);
    rs[0].generator.as_mut().unwrap().actual_start_unix_us = i64::MIN;
    rs[0].end_time_unix_us = i64::MAX;
    let e = err(&rs, &labels(2));
    assert!(
        e.starts_with("gen-0.json: not a consistent result document: its start ("),
        "{e}"
    );
}
