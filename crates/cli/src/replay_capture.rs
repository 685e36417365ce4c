//! `pgsurge replay capture CONNINFO --for DURATION -o DIR`: turns on the logging a
//! replay needs (`ALTER SYSTEM` and a reload, only those settings, their values before
//! remembered), waits, puts every setting back as it was, and copies the part of the
//! server's log files written meanwhile into DIR when the server is on this machine
//! (else says where they are). A role that may not change the settings is refused
//! before anything changes.

use std::ffi::OsString;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use clap::Parser;
use pgsurge_command::{EXIT_FAILURE, EXIT_OK, EXIT_USAGE};
use pgsurge_engine::StopFlag;
use pgsurge_observe::Pg;
use pgsurge_results::output::OutputFile;
use pgsurge_wire::ConnConfig;

#[derive(Parser, Debug)]
#[command(
    name = "pgsurge replay capture",
    about = "Log what a replay needs for a while, then put the server's settings back and collect the log"
)]
struct Cli {
    /// The server (conninfo string or URI); a superuser, or from PostgreSQL 15 a role
    /// granted ALTER SYSTEM on the logging settings.
    #[arg(value_name = "CONNINFO")]
    conninfo: String,
    /// How long to log (seconds, or e.g. "10m"); Ctrl-C ends it sooner, settings put back.
    #[arg(long = "for", value_name = "DURATION", value_parser = parse_duration)]
    duration: Duration,
    /// Directory the log is copied into (created if missing).
    #[arg(short = 'o', long = "output", value_name = "DIR")]
    dir: PathBuf,
    /// Also log every statement's duration (log_min_duration_statement = 0), for the
    /// fidelity report's logged latencies.
    #[arg(long)]
    durations: bool,
}

/// The clap definition (for the command tree).
pub fn command() -> clap::Command {
    <Cli as clap::CommandFactory>::command().name("capture")
}

/// The longest capture: a year of logging every statement is already more than any
/// disk holds, and the end of a longer one may not be a time the clock can hold.
const LONGEST: Duration = Duration::from_secs(366 * 24 * 3600);

fn parse_duration(text: &str) -> Result<Duration, String> {
    let too_long = || format!("\"{text}\": a capture lasts at most 366 days");
    let given = match text.trim().parse::<f64>() {
        Ok(secs) if secs > LONGEST.as_secs_f64() => return Err(too_long()),
        Ok(secs) => Duration::try_from_secs_f64(secs).ok(),
        Err(_) => humantime::parse_duration(text.trim()).ok(),
    };
    let Some(d) = given.filter(|d| !d.is_zero()) else {
        return Err(format!(
            "\"{text}\": expected seconds or a duration such as 10m"
        ));
    };
    if d > LONGEST {
        return Err(too_long());
    }
    Ok(d)
}

/// The stderr log's prefix a replay reads by default.
const PREFIX: &str = "%m|%u|%d|%c|";

/// The settings a replay needs and the value each is given.
fn wanted(durations: bool) -> Vec<(&'static str, &'static str)> {
    let mut w = vec![
        ("log_statement", "all"),
        ("log_connections", "on"),
        ("log_disconnections", "on"),
        ("log_min_error_statement", "error"),
        ("lc_messages", "C"),
        ("log_line_prefix", PREFIX),
    ];
    if durations {
        w.push(("log_min_duration_statement", "0"));
    }
    w
}

/// A setting before the capture: its value in `postgresql.auto.conf`, or none there.
struct Before {
    name: &'static str,
    auto_conf: Option<String>,
}

/// Entry point of `pgsurge replay capture`.
pub fn main(args: &[OsString]) -> i32 {
    let cli: Cli = match pgsurge_command::parse("pgsurge replay capture", args) {
        Ok(c) => c,
        Err(status) => return status,
    };
    let config = match ConnConfig::parse(&cli.conninfo) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("pgsurge replay capture: error: the connection string: {e}");
            return EXIT_USAGE;
        }
    };
    match capture(&cli, &config) {
        Ok(()) => EXIT_OK,
        Err(e) => {
            eprintln!("pgsurge replay capture: error: {e}");
            EXIT_FAILURE
        }
    }
}

fn capture(cli: &Cli, config: &ConnConfig) -> Result<(), String> {
    let mut pg = Pg::connect(config).map_err(|e| e.to_string())?;
    let settings = wanted(cli.durations);
    may_alter(&mut pg, &settings)?;
    let before = remember(&mut pg, &settings)?;
    let files = LogFiles::locate(&mut pg, config)?;
    let stop = StopFlag::new();
    let _watcher = pgsurge_engine::stop::SignalWatcher::install(stop.clone()).ok();
    let token = format!("pgsurge-capture-{}", std::process::id());
    let started = set_all(&mut pg, &settings).and_then(|()| {
        let start = files.mark(&mut pg, &format!("{token}-start"), true)?;
        eprintln!(
            "capturing for {} (Ctrl-C ends it sooner); the settings are put back after",
            humantime::format_duration(cli.duration)
        );
        let until = Instant::now() + cli.duration;
        while !stop.is_raised() {
            let left = until.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            stop.wait(left.min(Duration::from_millis(200)));
        }
        let end = files.mark(&mut pg, &format!("{token}-end"), false)?;
        Ok((start, end))
    });
    let restored = restore(&mut pg, &before);
    let (start, end) = started?;
    restored?;
    eprintln!("the logging settings are as they were before");
    files.collect(start.as_ref(), end.as_ref(), &cli.dir)
}

/// Refuses a role that may not change a setting, before any is changed.
fn may_alter(pg: &mut Pg, settings: &[(&str, &str)]) -> Result<(), String> {
    let value = |pg: &mut Pg, sql: &str| pg.value(sql).map_err(|e| e.to_string());
    if value(
        pg,
        "SELECT rolsuper FROM pg_roles WHERE rolname = current_user",
    )?
    .as_deref()
        == Some("t")
    {
        return Ok(());
    }
    let role = value(pg, "SELECT current_user")?.unwrap_or_default();
    let mut refused = Vec::new();
    for (name, _) in settings {
        let allowed = if pg.version_num() >= 150_000 {
            value(
                pg,
                &format!(
                    "SELECT has_parameter_privilege(current_user, {}, 'ALTER SYSTEM')",
                    pgsurge_wire::quote_literal(name)
                ),
            )?
            .as_deref()
                == Some("t")
        } else {
            false
        };
        if !allowed {
            refused.push(*name);
        }
    }
    if refused.is_empty() {
        return Ok(());
    }
    Err(format!(
        "role \"{role}\" may not change {} with ALTER SYSTEM (a superuser may, or from \
         PostgreSQL 15 a role granted ALTER SYSTEM on them); nothing was changed. Set the \
         logging a replay needs by hand: see docs/replay.md",
        refused.join(", ")
    ))
}

/// Each setting's value in `postgresql.auto.conf` before the capture.
fn remember(pg: &mut Pg, settings: &[(&'static str, &str)]) -> Result<Vec<Before>, String> {
    let names: Vec<String> = settings
        .iter()
        .map(|(n, _)| pgsurge_wire::quote_literal(n))
        .collect();
    let rows = pg
        .rows(&format!(
            "SELECT name, setting FROM pg_file_settings \
             WHERE sourcefile LIKE '%postgresql.auto.conf' AND name IN ({}) AND error IS NULL \
             ORDER BY seqno",
            names.join(", ")
        ))
        .map_err(|e| format!("reading the settings of postgresql.auto.conf: {e}"))?;
    Ok(settings
        .iter()
        .map(|(name, _)| Before {
            name,
            // The last line for a name is the one that counts.
            auto_conf: rows
                .iter()
                .filter(|r| r.first().and_then(|n| n.as_deref()) == Some(name))
                .filter_map(|r| r.get(1).cloned().flatten())
                .next_back(),
        })
        .collect())
}

fn reload(pg: &mut Pg) -> Result<(), String> {
    pg.exec("SELECT pg_reload_conf()")
        .map_err(|e| format!("reloading the configuration: {e}"))?;
    // The server's processes read it when they get the signal.
    std::thread::sleep(Duration::from_secs(1));
    Ok(())
}

/// Sets every setting and reloads; a setting the reload did not take (set on the
/// server's command line, which ALTER SYSTEM does not override) is an error.
fn set_all(pg: &mut Pg, settings: &[(&str, &str)]) -> Result<(), String> {
    for (name, value) in settings {
        pg.exec(&format!(
            "ALTER SYSTEM SET {name} = {}",
            pgsurge_wire::quote_literal(value)
        ))
        .map_err(|e| format!("setting {name}: {e}"))?;
    }
    reload(pg)?;
    let mut check = Pg::connect(pg.config()).map_err(|e| e.to_string())?;
    for (name, value) in settings {
        let now = check
            .value(&format!(
                "SELECT current_setting({})",
                pgsurge_wire::quote_literal(name)
            ))
            .map_err(|e| e.to_string())?
            .unwrap_or_default();
        let same = now == *value
            || (*value == "0" && now == "0")
            || (*name == "log_min_error_statement" && now == "error");
        if !same {
            return Err(format!(
                "{name} is still {now:?} after the reload: it is set where ALTER SYSTEM does \
                 not reach (the server's command line?)"
            ));
        }
    }
    drop(check);
    // The checking session's own lines reach the log before the capture's start.
    std::thread::sleep(Duration::from_millis(500));
    Ok(())
}

/// Puts every setting back: its value in `postgresql.auto.conf` before, or none there.
fn restore(pg: &mut Pg, before: &[Before]) -> Result<(), String> {
    let mut failed = Vec::new();
    for b in before {
        let sql = match &b.auto_conf {
            Some(v) => format!(
                "ALTER SYSTEM SET {} = {}",
                b.name,
                pgsurge_wire::quote_literal(v)
            ),
            None => format!("ALTER SYSTEM RESET {}", b.name),
        };
        if let Err(e) = pg.exec(&sql) {
            failed.push(format!("{}: {e}", b.name));
        }
    }
    reload(pg)?;
    if failed.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "could not put back {} (run ALTER SYSTEM RESET for them and reload)",
            failed.join("; ")
        ))
    }
}

/// A place in the server's log: a file and a byte offset in it.
struct Place {
    file: PathBuf,
    offset: u64,
}

/// Bytes `from..to` of a file.
fn read_range(path: &Path, from: u64, to: u64) -> Result<Vec<u8>, String> {
    let mut f = std::fs::File::open(path).map_err(|e| format!("{}: {e}", path.display()))?;
    f.seek(SeekFrom::Start(from))
        .map_err(|e| format!("{}: {e}", path.display()))?;
    let mut bytes = Vec::new();
    f.take(to - from)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{}: {e}", path.display()))?;
    Ok(bytes)
}

/// Where the server writes its log: the directory of its log files when its logging
/// collector runs and the directory can be read here.
struct LogFiles {
    dir: Option<PathBuf>,
    /// Said instead of collecting when `dir` is none.
    elsewhere: String,
}

impl LogFiles {
    fn locate(pg: &mut Pg, config: &ConnConfig) -> Result<LogFiles, String> {
        let mut value = |sql: &str| {
            pg.value(sql)
                .map(Option::unwrap_or_default)
                .map_err(|e| e.to_string())
        };
        let collector = value("SELECT current_setting('logging_collector')")?;
        let data = value("SELECT current_setting('data_directory')")?;
        let log_dir = value("SELECT current_setting('log_directory')")?;
        let destination = value("SELECT current_setting('log_destination')")?;
        if collector != "on" {
            return Ok(LogFiles {
                dir: None,
                elsewhere: "the server's logging collector is off: its log is where its \
                            standard error goes (the file given to pg_ctl -l, or the service's \
                            journal)"
                    .into(),
            });
        }
        let dir = Path::new(&data).join(&log_dir);
        let local = config.is_local();
        if local
            && std::fs::read_dir(&dir).is_ok()
            && destination.split(',').any(|d| d.trim() == "stderr")
        {
            return Ok(LogFiles {
                dir: Some(dir),
                elsewhere: String::new(),
            });
        }
        Ok(LogFiles {
            dir: None,
            elsewhere: format!(
                "the log files are in {} on the server's host (log_destination {destination})",
                dir.display()
            ),
        })
    }

    /// The stderr log files (not `.csv`/`.json`) of the directory and their sizes.
    fn sizes(&self) -> Vec<(PathBuf, u64)> {
        let Some(dir) = &self.dir else {
            return Vec::new();
        };
        let mut files: Vec<(PathBuf, u64)> = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
            .map(|e| e.path())
            .filter(|p| !matches!(p.extension().and_then(|x| x.to_str()), Some("csv" | "json")))
            .filter_map(|p| std::fs::metadata(&p).ok().map(|m| (p, m.len())))
            .collect();
        files.sort();
        files
    }

    /// Logs a statement naming `token` (logging every statement is on) and waits until
    /// it is in a log file: the place just after its line (`after`) or where its line
    /// starts. What other sessions logged before it is before it in the files, as the
    /// logging collector writes in the order it is sent.
    fn mark(&self, pg: &mut Pg, token: &str, after: bool) -> Result<Option<Place>, String> {
        let before = self.sizes();
        pg.exec(&format!("SELECT {}", pgsurge_wire::quote_literal(token)))
            .map_err(|e| format!("marking the log: {e}"))?;
        if self.dir.is_none() {
            return Ok(None);
        }
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            for (path, len) in self.sizes() {
                let from = before
                    .iter()
                    .find(|(p, _)| *p == path)
                    .map_or(0, |(_, l)| *l);
                if len <= from {
                    continue;
                }
                let bytes = read_range(&path, from, len)?;
                let Some(at) = bytes
                    .windows(token.len())
                    .position(|w| w == token.as_bytes())
                else {
                    continue;
                };
                let offset = if after {
                    bytes[at..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .map_or(bytes.len(), |k| at + k + 1)
                } else {
                    bytes[..at]
                        .iter()
                        .rposition(|&b| b == b'\n')
                        .map_or(0, |k| k + 1)
                };
                return Ok(Some(Place {
                    file: path,
                    offset: from + offset as u64,
                }));
            }
            if Instant::now() > deadline {
                return Err(format!(
                    "the statement marking the capture did not reach the log files in {} in \
                     60 s",
                    self.dir.as_deref().unwrap_or(Path::new("?")).display()
                ));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// Copies the log between `start` and `end` (over the files in between, in name
    /// order: the server names them by time) into `capture.log` in `out`.
    fn collect(
        &self,
        start: Option<&Place>,
        end: Option<&Place>,
        out: &Path,
    ) -> Result<(), String> {
        let (Some(start), Some(end)) = (start, end) else {
            eprintln!(
                "{}; copy the part written during the capture",
                self.elsewhere
            );
            return Ok(());
        };
        std::fs::create_dir_all(out).map_err(|e| format!("{}: {e}", out.display()))?;
        let target = out.join("capture.log");
        let mut file = OutputFile::create(&target, 64 * 1024)
            .map_err(|e| format!("{}: {e}", target.display()))?;
        let mut bytes = 0u64;
        for (path, len) in self.sizes() {
            if path < start.file || path > end.file {
                continue;
            }
            let from = if path == start.file { start.offset } else { 0 };
            let to = if path == end.file { end.offset } else { len };
            if to <= from {
                continue;
            }
            let mut f =
                std::fs::File::open(&path).map_err(|e| format!("{}: {e}", path.display()))?;
            f.seek(SeekFrom::Start(from))
                .map_err(|e| format!("{}: {e}", path.display()))?;
            bytes += std::io::copy(&mut f.take(to - from), &mut file)
                .map_err(|e| format!("{}: {e}", target.display()))?;
        }
        file.commit()
            .map_err(|e| format!("{}: {e}", target.display()))?;
        eprintln!(
            "wrote {} ({bytes} bytes); replay it with `pgsurge replay {}`",
            target.display(),
            target.display()
        );
        Ok(())
    }
}
