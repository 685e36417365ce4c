//! `pgsurge merge [--json=FILE] RESULT.json…`: reads generators' `--json` results,
//! prints the pgbench-style report of their union, one line per generator and the
//! start skew, and optionally writes the merged document.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::Parser;
use pgsurge_results::{write_pgbench_report, ReportOptions, RunResult};

use crate::merge::{merge, MergedRun};
use crate::MergeError;

/// `pgsurge merge` options.
#[derive(Debug, Parser)]
#[command(
    name = "pgsurge merge",
    about = "Merge the --json results of several generators into the result of their union"
)]
pub struct MergeArgs {
    /// Also write the merged result as a JSON document ("-" = stdout, instead of the report).
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Result documents written by `pgsurge bench --json` (one per generator), or a
    /// generator's captured output with `--json=-` (`kubectl logs POD > FILE`).
    #[arg(value_name = "RESULT.json", required = true)]
    pub results: Vec<PathBuf>,
}

/// Reads one result document.
pub fn read_result(path: &Path) -> Result<RunResult, MergeError> {
    let file = |msg: String| MergeError::File {
        path: path.to_path_buf(),
        msg,
    };
    let text = std::fs::read_to_string(path).map_err(|e| file(e.to_string()))?;
    parse_result(&text).map_err(file)
}

/// A result document, or the output of a generator that wrote its document with
/// `--json=-` and whose stderr was captured with it: `kubectl logs` gives a pod's
/// stdout and stderr as one stream, so the text report (stderr) comes first and
/// messages may follow. The document is then the text from the first line that is
/// `{` alone (how `--json` starts its pretty-printed document; no report line is) up
/// to the end of that JSON value.
pub fn parse_result(text: &str) -> Result<RunResult, String> {
    let whole = match serde_json::from_str(text) {
        Ok(r) => return Ok(r),
        Err(e) => e,
    };
    let not_a_document = || format!("not a pgsurge result document: {whole}");
    if text.trim_start().starts_with('{') {
        return Err(not_a_document());
    }
    let mut offset = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_end() == "{" {
            let mut docs = serde_json::Deserializer::from_str(&text[offset..]).into_iter();
            return match docs.next() {
                Some(Ok(r)) => Ok(r),
                Some(Err(e)) => Err(format!(
                    "not a pgsurge result document, nor output with one after line {}: {e}",
                    text[..offset].lines().count()
                )),
                None => Err(not_a_document()),
            };
        }
        offset += line.len();
    }
    Err(not_a_document())
}

/// Reads and merges `paths`, labelling each by its path. A file named twice (also
/// through another path to it) is refused before anything is read.
pub fn merge_files(paths: &[PathBuf]) -> Result<MergedRun, MergeError> {
    let mut seen = std::collections::HashSet::new();
    for p in paths {
        if !seen.insert(std::fs::canonicalize(p).unwrap_or_else(|_| p.clone())) {
            return Err(MergeError::GivenTwice { path: p.clone() });
        }
    }
    let results = paths
        .iter()
        .map(|p| read_result(p))
        .collect::<Result<Vec<_>, _>>()?;
    let labels: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
    merge(&results, &labels)
}

/// The pgbench report of the union, then one line per generator and the skew.
pub fn write_merged_report(m: &MergedRun, out: &mut dyn Write) -> std::io::Result<()> {
    let r = &m.result;
    write_pgbench_report(r, &ReportOptions::from_result(r), out)?;
    writeln!(out, "number of generators: {}", m.generators.len())?;
    let t0 = m.window_unix_us.0;
    for g in &m.generators {
        let mut who = String::new();
        if let Some(h) = &g.host {
            who.push_str(&format!("host {h}"));
        }
        if let Some((i, n)) = g.index {
            if !who.is_empty() {
                who.push_str(", ");
            }
            match n {
                Some(n) => who.push_str(&format!("index {i}/{n}")),
                None => who.push_str(&format!("index {i}")),
            }
        }
        let who = if who.is_empty() {
            String::new()
        } else {
            format!(" ({who})")
        };
        writeln!(
            out,
            "generator {}{}: clients {}, {} transactions, tps = {:.6}, start +{:.3} ms, end +{:.3} ms",
            g.name,
            who,
            g.clients,
            g.transactions,
            g.tps,
            (i128::from(g.start_unix_us) - i128::from(t0)) as f64 / 1000.0,
            (i128::from(g.end_unix_us) - i128::from(t0)) as f64 / 1000.0,
        )?;
    }
    writeln!(out, "start skew: {:.3} ms", m.start_skew_us as f64 / 1000.0)
}

/// Where a merged document goes: stdout, or an output opened before the work that
/// produces it (a path that cannot be written fails before any generator runs).
#[derive(Debug)]
pub enum MergedJson {
    /// `-`: stdout.
    Stdout,
    /// A file, device or FIFO (see [`pgsurge_results::OutputFile`]).
    File(pgsurge_results::OutputFile),
}

impl MergedJson {
    /// Opens `path` (`-` = stdout).
    pub fn open(path: &Path) -> Result<MergedJson, String> {
        if path.as_os_str() == "-" {
            return Ok(MergedJson::Stdout);
        }
        pgsurge_results::open_json(path)
            .map(MergedJson::File)
            .map_err(|e| e.to_string())
    }

    /// Writes the merged document.
    pub fn write(self, m: &MergedRun) -> Result<(), String> {
        match self {
            MergedJson::Stdout => pgsurge_results::write_json_to(&m.result, &mut std::io::stdout())
                .map_err(|e| e.to_string()),
            MergedJson::File(out) => {
                pgsurge_results::write_json_into(&m.result, out).map_err(|e| e.to_string())
            }
        }
    }
}

/// Writes the merged document to `path` (`-` = stdout).
pub fn write_merged_json(m: &MergedRun, path: &Path) -> Result<(), String> {
    MergedJson::open(path)?.write(m)
}

/// Entry point of `pgsurge merge ARGS` (without the command word); returns the exit code.
pub fn merge_main(args: &[OsString]) -> i32 {
    let a = match pgsurge_command::parse::<MergeArgs>("pgsurge merge", args) {
        Ok(a) => a,
        Err(status) => return status,
    };
    run_merge(&a)
}

/// Runs `pgsurge merge` with parsed arguments.
pub fn run_merge(a: &MergeArgs) -> i32 {
    let json = match a.json.as_deref().map(MergedJson::open).transpose() {
        Ok(j) => j,
        Err(e) => {
            eprintln!("pgsurge merge: error: {e}");
            return 1;
        }
    };
    let m = match merge_files(&a.results) {
        Ok(m) => m,
        Err(e) => {
            eprintln!("pgsurge merge: error: {e}");
            return 1;
        }
    };
    let to_stdout = a.json.as_deref().is_some_and(|p| p.as_os_str() == "-");
    if !to_stdout {
        let mut out = std::io::stdout().lock();
        if write_merged_report(&m, &mut out).is_err() {
            return 1;
        }
    }
    if let (Some(p), Some(out)) = (&a.json, json) {
        if let Err(e) = out.write(&m) {
            eprintln!("pgsurge merge: error: could not write {}: {e}", p.display());
            return 1;
        }
    }
    0
}
