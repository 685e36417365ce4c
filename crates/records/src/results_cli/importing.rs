//! `results import`: pgbench text reports (with their `-l` or aggregate log) and
//! pgbench-tools results databases stored as sets.

use super::CliResult;
use pgsurge_command::terminal_safe as safe;
use pgsurge_store::{now_rfc3339, set_kind, set_status, SetRecord, Store};
use std::path::PathBuf;

pub(super) fn import(
    store: &mut Store,
    reports: &[PathBuf],
    log: Option<PathBuf>,
    name: &str,
) -> CliResult {
    if log.is_some() && reports.len() != 1 {
        return Err("--log goes with exactly one report".into());
    }
    let mut parsed = Vec::new();
    for p in reports {
        let text =
            std::fs::read_to_string(p).map_err(|e| format!("reading {}: {e}", p.display()))?;
        let r = crate::import::parse_report(&text).ok_or_else(|| {
            format!(
                "{}: no pgbench report found (no \"tps =\" line)",
                p.display()
            )
        })?;
        r.check().map_err(|e| format!("{}: {e}", p.display()))?;
        parsed.push((p, r));
    }
    let log = match log {
        Some(p) => {
            let text =
                std::fs::read_to_string(&p).map_err(|e| format!("reading {}: {e}", p.display()))?;
            let log =
                crate::import::parse_log(&text).map_err(|e| format!("{}: {e}", p.display()))?;
            if log.intervals.is_empty() {
                // pgbench writes an aggregated interval only once it has ended: the log
                // of a run that ended inside its first interval holds no line.
                eprintln!(
                    "pgsurge: note: the log {} holds no line (as pgbench leaves the \
                     --aggregate-interval log of a run that ended inside its first \
                     interval); the report is imported without it",
                    p.display()
                );
                None
            } else {
                // --log goes with exactly one report.
                if let Some((report_path, report)) = parsed.first() {
                    crate::import::check_log(report, &log, &p.display().to_string())
                        .map_err(|e| format!("{}: {e}", report_path.display()))?;
                }
                Some(log)
            }
        }
        None => None,
    };
    let set_id = store
        .create_set(&SetRecord {
            name: name.to_string(),
            kind: set_kind::IMPORT.into(),
            description: Some(format!("imported from {} file(s)", reports.len())),
            planned_tests: Some(reports.len() as i64),
            status: set_status::COMPLETE.into(),
            created_at: now_rfc3339(),
            finished_at: Some(now_rfc3339()),
            ..Default::default()
        })
        .map_err(|e| e.to_string())?;
    let mut log = log;
    for (i, (p, r)) in parsed.iter().enumerate() {
        let key = format!("{}#{}", p.display(), i + 1);
        let w = crate::import::to_run_write(
            set_id,
            &key,
            i as i64 + 1,
            r,
            log.take(),
            &p.display().to_string(),
        )?;
        store.write_run(&w).map_err(|e| e.to_string())?;
    }
    println!("imported {} run(s) into set {set_id}", parsed.len());
    Ok(())
}

pub(super) fn import_pgbench_tools(
    store: &mut Store,
    args: &[PathBuf],
    results_dir: Option<PathBuf>,
    name: Option<String>,
) -> CliResult {
    let [conninfo] = args else {
        return Err("--from pgbench-tools takes exactly one connection string".into());
    };
    let conninfo = conninfo
        .to_str()
        .ok_or("the connection string is not valid UTF-8")?;
    if let Some(d) = &results_dir {
        if !d.is_dir() {
            return Err(format!("--results-dir {}: not a directory", d.display()));
        }
    }
    let s = crate::pgbench_tools::import(
        store,
        &crate::pgbench_tools::ImportOptions {
            conninfo: conninfo.to_string(),
            results_dir,
            name: name.unwrap_or_else(|| "pgbench-tools".into()),
        },
    )?;
    for l in &s.left_out {
        eprintln!("pgsurge: warning: left out {}", safe(&l.to_string()));
    }
    println!(
        "imported {} run(s) into {} new set(s); {} already stored; {} initialization test(s) \
         stored as facts; {} run(s) completed from result files; {} row(s) left out",
        s.runs_written,
        s.sets_created,
        s.runs_present,
        s.init_tests,
        s.filled_from_files,
        s.left_out.len()
    );
    Ok(())
}
