//! The exact merge: counts add up, the merged histogram equals bucket for bucket
//! the histogram of every generator's values recorded together (and the sum of the
//! generators' histograms), per-second series line up on the wall clock, and
//! different workloads are refused.

use crate::common::{four, T0};
use pgsurge_generators::histograms::{buckets, decode};
use pgsurge_generators::merge::merge;
use pgsurge_generators::merge_cli::{merge_files, write_merged_report};
use pgsurge_results::LatencyHistogram;

#[test]
fn merged_counts_are_sums_and_histogram_is_exact() {
    let (rs, labels, vals) = four();
    let m = merge(&rs, &labels).expect("merges");
    let t = &m.result.totals;
    assert_eq!(
        t.transactions,
        rs.iter().map(|r| r.totals.transactions).sum::<u64>()
    );
    assert_eq!(t.transactions, 300 * 5 + 350 * 5 + 400 * 5 + 450 * 5);
    assert_eq!(t.failures, 1 + 2 + 3, "generator g has g failures");
    assert_eq!(m.result.options.clients, 32);
    assert_eq!(m.result.scripts[0].stats.transactions, t.transactions);

    // Bucket for bucket: the merged histogram equals one histogram of all values …
    let mut everything = LatencyHistogram::default();
    vals.iter().flatten().for_each(|&v| everything.record(v));
    let merged =
        decode(t.latency.histogram.as_deref().expect("merged histogram")).expect("decodes");
    assert_eq!(buckets(&merged), buckets(&everything.to_hdr()));
    // … and the sum of the generators' own histograms.
    let mut sum = decode(rs[0].totals.latency.histogram.as_deref().unwrap()).unwrap();
    for r in &rs[1..] {
        sum.add(decode(r.totals.latency.histogram.as_deref().unwrap()).unwrap())
            .unwrap();
    }
    assert_eq!(buckets(&merged), buckets(&sum));
    assert_eq!(merged.len(), t.transactions);
    // Percentiles come from that histogram, the mean from exact sums.
    let p99 = t.latency.percentile(99.0).expect("p99");
    assert_eq!(
        p99,
        everything.value_at_percentile(99.0).unwrap() as f64 / 1000.0
    );
    let n = vals.iter().map(Vec::len).sum::<usize>() as f64;
    let mean_ms = vals.iter().flatten().sum::<f64>() / n / 1000.0;
    assert!((t.latency.mean_ms.unwrap() - mean_ms).abs() < 1e-9);

    // tps over the common window: earliest start to latest end.
    assert_eq!(m.start_skew_us, 2_100);
    assert_eq!(m.window_unix_us, (T0, T0 + 2_100 + 5_000_000));
    let want_tps = t.transactions as f64 / 5.0021;
    assert!(
        (m.result.tps - want_tps).abs() < 1e-6,
        "{} vs {want_tps}",
        m.result.tps
    );
}

#[test]
fn seconds_line_up_and_merge_exactly() {
    let (rs, labels, vals) = four();
    let m = merge(&rs, &labels).expect("merges");
    assert_eq!(
        m.result.intervals.len(),
        5,
        "skews of ms keep the seconds aligned"
    );
    for (k, iv) in m.result.intervals.iter().enumerate() {
        let per: Vec<&[f64]> = vals
            .iter()
            .zip([300, 350, 400, 450])
            .map(|(v, n)| &v[k * n..(k + 1) * n])
            .collect();
        assert_eq!(
            iv.transactions,
            per.iter().map(|c| c.len() as u64).sum::<u64>()
        );
        let mut all = LatencyHistogram::default();
        per.iter()
            .flat_map(|c| c.iter())
            .for_each(|&v| all.record(v));
        let h = decode(iv.histogram.as_deref().expect("merged")).unwrap();
        assert_eq!(buckets(&h), buckets(&all.to_hdr()), "second {k}");
        // Pooled mean and standard deviation are exact.
        let n = all.len() as f64;
        let mean = per.iter().flat_map(|c| c.iter()).sum::<f64>() / n;
        let var = per
            .iter()
            .flat_map(|c| c.iter())
            .map(|v| (v - mean) * (v - mean))
            .sum::<f64>()
            / n;
        assert!((iv.latency_ms - mean / 1000.0).abs() < 1e-9);
        assert!(
            (iv.stddev_ms - var.sqrt() / 1000.0).abs() < 1e-6,
            "{} vs {}",
            iv.stddev_ms,
            var.sqrt() / 1000.0
        );
    }
}

#[test]
fn different_workloads_are_refused() {
    let (mut rs, labels, _) = four();
    rs[2].scale = 100;
    let e = merge(&rs, &labels).unwrap_err().to_string();
    assert_eq!(
        e,
        "cannot merge results of different workloads: scaling factor differs (10 in gen-0.json; 100 in gen-2.json)"
    );
    let (mut rs, labels, _) = four();
    rs[1].options.duration_s = Some(60);
    let e = merge(&rs, &labels).unwrap_err().to_string();
    assert!(e.contains("duration (-T) differs"), "{e}");
    let (mut rs, labels, _) = four();
    rs[3].scripts[0].text = "SELECT 1;".into();
    assert!(merge(&rs, &labels)
        .unwrap_err()
        .to_string()
        .contains("scripts differs"));
    assert!(merge(&[], &[]).is_err());
}

#[test]
fn report_from_files_has_the_union_and_one_line_per_generator() {
    let (rs, _, _) = four();
    let dir = pgsurge_testkit::scratch_dir("merge");
    let paths: Vec<_> = rs
        .iter()
        .enumerate()
        .map(|(g, r)| {
            let p = dir.path().join(format!("gen-{g}.json"));
            pgsurge_results::write_json(r, &p).expect("write");
            p
        })
        .collect();
    let m = merge_files(&paths).expect("merges");
    let mut out = Vec::new();
    write_merged_report(&m, &mut out).expect("write");
    let text = String::from_utf8(out).expect("utf8");
    assert!(text.contains("number of clients: 32\n"), "{text}");
    assert!(
        text.contains("number of transactions actually processed: 7500\n"),
        "{text}"
    );
    assert!(text.contains("number of generators: 4\n"), "{text}");
    assert!(
        text.contains("generator gen-2 (host host-2, index 2/4): clients 8, 2000 transactions, tps = 400.000000, start +1.400 ms"),
        "{text}"
    );
    assert!(text.ends_with("start skew: 2.100 ms\n"), "{text}");

    // The merged document lists its generators too.
    let g = &m.result.generators;
    assert_eq!(g.len(), 4);
    assert_eq!(
        (
            g[2].name.as_str(),
            g[2].host.as_deref(),
            g[2].index,
            g[2].count
        ),
        ("gen-2", Some("host-2"), Some(2), Some(4))
    );
    assert_eq!((g[2].clients, g[2].transactions), (8, 2000));
    let written = dir.path().join("merged.json");
    pgsurge_results::write_json(&m.result, &written).expect("write");
    let back: pgsurge_results::RunResult =
        serde_json::from_str(&std::fs::read_to_string(&written).unwrap()).expect("reads back");
    assert_eq!(&back.generators, g);

    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{").unwrap();
    let e = merge_files(&[paths[0].clone(), bad.clone()])
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!("{}: not a pgsurge result document", bad.display())),
        "{e}"
    );
}

/// `kubectl logs` of a generator run with `--json=-` is its stderr (the text report,
/// messages) and its stdout (the document) in one stream: merge reads the document
/// out of it, and the result is the same as from the plain files.
#[test]
fn generator_output_with_the_report_around_the_document_merges_the_same() {
    let (rs, _, _) = four();
    let dir = pgsurge_testkit::scratch_dir("merge");
    let mut files = Vec::new();
    let mut logs = Vec::new();
    for (g, r) in rs.iter().enumerate() {
        let p = dir.path().join(format!("gen-{g}.json"));
        pgsurge_results::write_json(r, &p).expect("write");
        let mut log = b"pgbench (18.0)\nstarting vacuum...end.\n".to_vec();
        pgsurge_results::write_pgbench_report(
            r,
            &pgsurge_results::ReportOptions::from_result(r),
            &mut log,
        )
        .expect("report");
        pgsurge_results::write_json_to(r, &mut log).expect("json");
        log.extend_from_slice(b"pgbench: error: a message after the document\n");
        let l = dir.path().join(format!("gen-{g}.log"));
        std::fs::write(&l, &log).expect("write log");
        files.push(p);
        logs.push(l);
    }
    let report = |paths: &[std::path::PathBuf]| {
        let mut out = Vec::new();
        write_merged_report(&merge_files(paths).expect("merges"), &mut out).expect("write");
        String::from_utf8(out).expect("utf8")
    };
    let from_logs = report(&logs);
    assert_eq!(from_logs, report(&files));
    assert!(
        from_logs.contains("number of generators: 4\n"),
        "{from_logs}"
    );

    // Output without a document, or with a broken one, is refused.
    let none = dir.path().join("none.log");
    std::fs::write(
        &none,
        "pgbench (18.0)\npgbench: error: connection refused\n",
    )
    .unwrap();
    let e = merge_files(std::slice::from_ref(&none))
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with(&format!(
            "{}: not a pgsurge result document",
            none.display()
        )),
        "{e}"
    );
    let cut = dir.path().join("cut.log");
    let text = std::fs::read_to_string(&logs[0]).unwrap();
    std::fs::write(&cut, &text[..text.len() / 2]).unwrap();
    let e = merge_files(std::slice::from_ref(&cut))
        .unwrap_err()
        .to_string();
    assert!(e.contains("nor output with one after line"), "{e}");
}
