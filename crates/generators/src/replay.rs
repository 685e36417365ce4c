//! A log replayed by many generators: when the options after `--` begin with `replay`
//! (`pgsurge dist local -n N -- replay [REPLAY OPTIONS] LOG…`), each generator runs
//! `pgsurge replay` with generator I of N playing the log's sessions n with
//! n mod N = I − 1, every one from the same `--start-at` instant, so the sessions keep
//! their places in the log's timeline whichever process plays them; the generators'
//! reports are then merged into the report of the whole replay
//! ([`pgsurge_replay::merge`]).
//!
//! The sessions are what is split: the launcher's `-c`, `-R` and `--random-seed` (a
//! bench's totals) do not apply, and the options each generator gets from the launcher
//! (`--generator`, `--start-at`, `--json`) or that cannot be split (`--store`, `--set`,
//! `--check`, `--strict-order`: one order across sessions needs one process) are refused
//! among the replay options.

use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};

use pgsurge_replay::report::ReplayReport;

use crate::launch::Workload;
use crate::MergeError;

/// The word after `--` that makes the generators replay a log.
pub const PROGRAM: &str = "replay";

/// The replay options, when the options after `--` are a replay's.
pub fn replay_options(after_dash: &[OsString]) -> Option<&[OsString]> {
    match after_dash.split_first() {
        Some((first, rest)) if first == PROGRAM => Some(rest),
        _ => None,
    }
}

/// Replay options a launcher sets per generator or that one generator's share cannot
/// carry, each with why.
const REFUSED: &[(&str, &str)] = &[
    ("--generator", "the launcher gives each generator its share"),
    (
        "--start-at",
        "the launcher gives every generator the common start",
    ),
    (
        "--json",
        "give the merged JSON to the launcher, before \"--\"",
    ),
    (
        "--store",
        "each generator would store a share; store the merged report with `pgsurge results import`",
    ),
    ("--set", "each generator would store a share"),
    (
        "--check",
        "a check reads the whole log: run `pgsurge replay --check` once",
    ),
    (
        "--strict-order",
        "one order across sessions needs one process",
    ),
];

/// Refuses what cannot be given to a replay's generators: the launcher's bench totals,
/// and the replay options of [`REFUSED`].
pub fn check_options(replay: &[OsString], gen: &Workload) -> Result<(), MergeError> {
    if gen.clients != 1 || gen.rate.is_some() || gen.seed.is_some() {
        return Err(MergeError::Launch(
            "a replay's generators split the log's sessions: -c, -R and --random-seed do not apply"
                .to_string(),
        ));
    }
    for a in replay {
        let s = a.to_string_lossy();
        let name = s.split('=').next().unwrap_or_default();
        if let Some((o, why)) = REFUSED.iter().find(|(o, _)| *o == name) {
            return Err(MergeError::Launch(format!(
                "replay option \"{o}\" is not for a replay's generators: {why}"
            )));
        }
    }
    Ok(())
}

/// The `pgsurge replay` arguments of generator `index` (0-based) of `count`: the
/// replay options, its share, the common start (Unix seconds) and where its report
/// goes (`-` = stdout).
pub fn generator_args(
    replay: &[OsString],
    index: u32,
    count: u32,
    start_at: &str,
    json: &OsStr,
) -> Vec<OsString> {
    let mut v: Vec<OsString> = vec![PROGRAM.into()];
    v.extend(replay.iter().cloned());
    v.push(format!("--generator={}/{count}", index + 1).into());
    v.push(format!("--start-at={start_at}").into());
    let mut j = OsString::from("--json=");
    j.push(json);
    v.push(j);
    v
}

/// Reads the generators' reports and merges them into the whole replay's.
pub fn merge_files(paths: &[PathBuf]) -> Result<ReplayReport, MergeError> {
    let parts = paths
        .iter()
        .map(|p| {
            let file = |msg: String| MergeError::File {
                path: p.clone(),
                msg,
            };
            let text = std::fs::read_to_string(p).map_err(|e| file(e.to_string()))?;
            let report: ReplayReport = serde_json::from_str(&text)
                .map_err(|e| file(format!("not a pgsurge replay report: {e}")))?;
            Ok((p.display().to_string(), report))
        })
        .collect::<Result<Vec<_>, MergeError>>()?;
    pgsurge_replay::merge::merge(&parts).map_err(|e| MergeError::Launch(e.to_string()))
}

/// Presents the merged replay of `command`: the error, or the report's table on stdout
/// and its JSON where `--json` says (`-` = stdout, instead of the table). Returns the
/// exit code: 1 when the replay ended early or no session could connect, as
/// `pgsurge replay` itself.
pub fn present(
    command: &str,
    merged: Result<ReplayReport, MergeError>,
    json: Option<(&Path, crate::merge_cli::MergedJson)>,
) -> i32 {
    use std::io::Write as _;
    let report = match merged {
        Ok(r) => r,
        Err(e) => {
            eprintln!("{command}: error: {e}");
            return 1;
        }
    };
    let out: &mut dyn std::io::Write = &mut std::io::stdout().lock();
    let written = match &json {
        Some((_, crate::merge_cli::MergedJson::Stdout)) => {
            out.write_all(report.to_json().as_bytes())
        }
        _ => out.write_all(report.to_text().as_bytes()),
    };
    if let Err(e) = written.and_then(|()| out.flush()) {
        if e.kind() != std::io::ErrorKind::BrokenPipe {
            eprintln!("{command}: error: writing to stdout: {e}");
            return 1;
        }
    }
    if let Some((p, crate::merge_cli::MergedJson::File(mut file))) = json {
        let written = file
            .write_all(report.to_json().as_bytes())
            .and_then(|()| file.commit());
        if let Err(e) = written {
            eprintln!("{command}: error: could not write {}: {e}", p.display());
            return 1;
        }
    }
    let r = &report.replay;
    if r.sessions == 0 && r.failed_connections > 0 {
        eprintln!("{command}: error: no session could connect");
        return 1;
    }
    if let Some(why) = &report.ended_early {
        eprintln!("{command}: error: {why}");
        return 1;
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn os(v: &[&str]) -> Vec<OsString> {
        v.iter().map(OsString::from).collect()
    }

    fn gen() -> Workload {
        Workload {
            clients: 1,
            rate: None,
            seed: None,
            out_dir: None,
            deadline: None,
        }
    }

    #[test]
    fn a_replay_is_recognised_by_its_first_word() {
        let after = os(&["replay", "--max", "x.log"]);
        assert_eq!(replay_options(&after), Some(&after[1..]));
        assert_eq!(replay_options(&os(&["-S", "-T", "5"])), None);
        assert_eq!(replay_options(&[]), None);
    }

    #[test]
    fn options_set_per_generator_or_unsplittable_are_refused() {
        for bad in [
            "--generator=1/2",
            "--start-at=5",
            "--json=x",
            "--store",
            "--set=s",
            "--check",
            "--strict-order",
        ] {
            let e = check_options(&os(&[bad, "x.log"]), &gen()).unwrap_err();
            assert!(
                e.to_string().contains(bad.split('=').next().unwrap()),
                "{e}"
            );
        }
        let mut totals = gen();
        totals.clients = 8;
        let e = check_options(&os(&["x.log"]), &totals).unwrap_err();
        assert!(e.to_string().contains("-c, -R"), "{e}");
        check_options(&os(&["--max", "-j", "2", "-d", "db", "x.log"]), &gen()).unwrap();
    }

    #[test]
    fn each_generator_gets_its_share_the_start_and_a_report_path() {
        let v = generator_args(
            &os(&["--max", "x.log"]),
            1,
            3,
            "1795473000",
            OsStr::new("/o/g.json"),
        );
        assert_eq!(
            v,
            os(&[
                "replay",
                "--max",
                "x.log",
                "--generator=2/3",
                "--start-at=1795473000",
                "--json=/o/g.json"
            ])
        );
    }
}
