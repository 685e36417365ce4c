//! Reading logs through without replaying them (`pgsurge replay --check`): every line is
//! read and every statement fingerprinted, so a log's problems (unreadable lines,
//! parameter lists that do not fit) show before any session connects, and the report's
//! logged side shows what a replay would send.

use crate::fidelity::Counts;
use crate::log::LogFiles;
use crate::report::{
    fingerprint_rows, LagReport, LogFile, ReadSummary, ReplayReport, ReplaySettings, ReplaySummary,
    REPORT_VERSION,
};
use crate::sessions::{describe, Assembler};
use crate::spec::{Order, Pacing, ReplaySpec};

/// How many skipped lines a report quotes.
pub const SKIPPED_EXAMPLES: usize = 10;

/// Reads `spec`'s logs to their end: the report of a replay that sent nothing, or the
/// first unreadable line (`file:line: reason`) unless unreadable lines are skipped.
pub fn check(spec: &ReplaySpec) -> Result<ReplayReport, String> {
    spec.validate()?;
    let mut files = LogFiles::open(&spec.logs, spec.format, &spec.log_line_prefix)
        .map_err(|e| e.to_string())?;
    files.limit_entries(spec.limits.entry_bytes);
    let mut logs = log_files(spec, files.formats());
    let digests = files.digests();
    let paths = spec.logs.clone();
    let mut asm = Assembler::with_share(spec.share).with_limits(&spec.limits);
    let mut skipped = 0u64;
    let mut examples = Vec::new();
    let mut span_us = 0i64;
    while let Some(entry) = files.next() {
        let pushed = entry.and_then(|e| {
            let pushed = asm.push(&e);
            files.recycle(e);
            pushed
        });
        if let Err(u) = pushed {
            let text = format!("{}: {}", describe(u.at, &paths), u.reason);
            if !spec.skip_unreadable {
                return Err(text);
            }
            skipped += 1;
            if examples.len() < SKIPPED_EXAMPLES {
                examples.push(text);
            }
        }
        while let Some(ev) = asm.pop() {
            span_us = span_us.max(ev.offset_us());
            asm.recycle(ev);
        }
    }
    asm.finish();
    while let Some(ev) = asm.pop() {
        span_us = span_us.max(ev.offset_us());
    }
    let (logged, fingerprints, counts) = asm.into_parts();
    fill_digests(&mut logs, &digests);
    Ok(ReplayReport {
        format: "pgsurge-replay".into(),
        version: REPORT_VERSION,
        logs,
        settings: settings(spec, 0),
        read: ReadSummary::from_counts(&counts, skipped, examples, fingerprints.limit_reached()),
        replay: ReplaySummary {
            log_span_s: span_us as f64 / 1e6,
            ..ReplaySummary::default()
        },
        lag: LagReport::default(),
        fingerprints: fingerprint_rows(fingerprints.table(), &logged, &Counts::default()),
        ended_early: Some("--check: the logs were read, nothing was replayed".into()),
    })
}

/// The identity of each log file: path, format, size.
pub fn log_files(spec: &ReplaySpec, formats: &[crate::log::LogFormat]) -> Vec<LogFile> {
    spec.logs
        .iter()
        .zip(formats)
        .map(|(p, f)| LogFile {
            path: p.display().to_string(),
            format: *f,
            bytes: std::fs::metadata(p).map(|m| m.len()).unwrap_or(0),
            sha256: None,
        })
        .collect()
}

/// Puts each file's digest, where it was read through, into `logs`.
pub fn fill_digests(logs: &mut [LogFile], digests: &crate::log::Digests) {
    if let Ok(d) = digests.lock() {
        for (l, h) in logs.iter_mut().zip(d.iter()) {
            l.sha256 = h.clone();
        }
    }
}

/// The settings a replay of `spec` runs with (`threads`: the driver threads).
pub fn settings(spec: &ReplaySpec, threads: usize) -> ReplaySettings {
    ReplaySettings {
        speed: spec.pacing.speed(),
        max: matches!(spec.pacing, Pacing::Max { .. }),
        order: match spec.order {
            Order::Independent => "independent".into(),
            Order::Strict { .. } => "strict".into(),
        },
        threads: threads.max(1),
        generator: spec
            .share
            .filter(|s| s.count > 1)
            .map(|s| (s.index, s.count)),
        generators: None,
    }
}
