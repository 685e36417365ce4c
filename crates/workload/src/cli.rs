//! `pgsurge workload`: `list`, `show NAME`, `new DIR`, `check NAME|DIR [CONNINFO]`.

use std::ffi::OsString;
use std::io::Write;
use std::path::{Path, PathBuf};

use clap::{Parser, Subcommand};
use pgsurge_command::{EXIT_FAILURE, EXIT_OK};
use pgsurge_wire::{ConnConfig, Connection};

use crate::error::WorkloadError;
use crate::pack::{Pack, BUILTIN};

/// `pgsurge workload`.
#[derive(Debug, Parser)]
#[command(
    name = "workload",
    about = "Workload packs (tpcc, ycsb-a…f, oltp-…, your own): list, show, new, check",
    after_help = "Load a pack with `pgsurge bench --workload NAME|DIR -i -s N DBNAME`, run it with \
                  `pgsurge bench --workload NAME|DIR -c 8 -T 60 DBNAME`. See docs/workloads.md."
)]
pub struct WorkloadArgs {
    #[command(subcommand)]
    command: WorkloadCommand,
}

#[derive(Debug, Subcommand)]
enum WorkloadCommand {
    /// List the built-in packs.
    List,
    /// Print every file of a pack (to copy and change it).
    Show {
        /// A built-in pack's name or a pack directory.
        pack: String,
    },
    /// Write a commented template pack, or a copy of a pack, into DIR (created; none of
    /// the files it writes may exist there, and no symlink is followed).
    New {
        /// The directory.
        dir: PathBuf,
        /// Copy this pack (a built-in pack's name or a directory) instead of the template.
        #[arg(long, value_name = "PACK")]
        from: Option<String>,
    },
    /// Run a pack's consistency checks: exit 0 when all hold, 1 naming each violated one.
    Check {
        /// A built-in pack's name or a pack directory.
        pack: String,
        /// The database: a name, `key=value …` or a `postgresql://` URI (default: the
        /// PG* environment, as psql).
        conninfo: Option<String>,
    },
}

/// The clap definition of `pgsurge workload`, for the binary's command tree.
pub fn workload_cli() -> clap::Command {
    <WorkloadArgs as clap::CommandFactory>::command()
}

/// Runs `pgsurge workload` with the arguments after `workload`; returns the exit status.
pub fn workload_main(args: &[OsString]) -> i32 {
    let parsed: WorkloadArgs = match pgsurge_command::parse("pgsurge workload", args) {
        Ok(a) => a,
        Err(status) => return status,
    };
    let mut out = std::io::stdout().lock();
    let result = match parsed.command {
        WorkloadCommand::List => list(&mut out),
        WorkloadCommand::Show { pack } => show(&pack, &mut out),
        WorkloadCommand::New { dir, from } => new_command(&dir, from.as_deref(), &mut out),
        WorkloadCommand::Check { pack, conninfo } => check(&pack, conninfo.as_deref(), &mut out),
    };
    let _ = out.flush();
    match result {
        Ok(code) => code,
        Err(e) => {
            eprintln!("pgsurge: error: {e}");
            EXIT_FAILURE
        }
    }
}

fn list(out: &mut dyn Write) -> Result<i32, WorkloadError> {
    for (name, _) in BUILTIN {
        let p = Pack::resolve(name)?;
        let _ = writeln!(
            out,
            "{name:<18} {} (-s: {})",
            p.manifest.description, p.manifest.scale
        );
    }
    Ok(EXIT_OK)
}

fn show(name: &str, out: &mut dyn Write) -> Result<i32, WorkloadError> {
    let p = Pack::resolve(name)?;
    for (path, text) in p.files() {
        let _ = writeln!(out, "==> {path} <==");
        let _ = out.write_all(text.as_bytes());
        if !text.ends_with('\n') {
            let _ = writeln!(out);
        }
        let _ = writeln!(out);
    }
    Ok(EXIT_OK)
}

fn new_command(dir: &Path, from: Option<&str>, out: &mut dyn Write) -> Result<i32, WorkloadError> {
    let what = match from {
        None => {
            new_pack(dir)?;
            "a template pack".to_string()
        }
        Some(name) => {
            let pack = Pack::resolve(name)?;
            write_files(dir, &pack.files())?;
            format!("a copy of {}", pack.name())
        }
    };
    let _ = writeln!(
        out,
        "wrote {what} into {}; load it with `pgsurge bench --workload {} -i DBNAME`",
        dir.display(),
        dir.display()
    );
    Ok(EXIT_OK)
}

/// The files `workload new` writes.
const TEMPLATE: &[(&str, &str)] = &[
    ("workload.toml", include_str!("../template/workload.toml")),
    ("schema.sql", include_str!("../template/schema.sql")),
    ("load/kv.sql", include_str!("../template/load/kv.sql")),
    ("finish.sql", include_str!("../template/finish.sql")),
    ("txn.sql", include_str!("../template/txn.sql")),
];

/// Writes the template pack into `dir` (created if missing). Nothing already there is
/// replaced, and no symlink is followed ([`write_files`]).
pub fn new_pack(dir: &Path) -> Result<(), WorkloadError> {
    write_files(dir, TEMPLATE)
}

/// Writes a pack's files into `dir` (created if missing). Every path is checked before
/// the first file is written: one that exists (a file, a directory, a symlink, even a
/// dangling one) or that goes through a symlinked directory inside `dir` refuses the
/// whole command, so a user's file is never replaced and nothing is written outside
/// `dir`. Each file is created with `O_CREAT | O_EXCL`, which fails on anything already
/// at the path, a symlink included, without following it.
fn write_files(dir: &Path, files: &[(&str, &str)]) -> Result<(), WorkloadError> {
    let werr = |p: &Path, e: std::io::Error| WorkloadError::Write {
        path: p.display().to_string(),
        message: e.to_string(),
    };
    for (rel, _) in files {
        refuse_existing(dir, rel)?;
    }
    for (rel, text) in files {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            std::fs::create_dir_all(parent).map_err(|e| werr(parent, e))?;
        }
        // A path that appeared since the check is refused by the open itself.
        refuse_existing(dir, rel)?;
        let mut f = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&p)
            .map_err(|e| werr(&p, e))?;
        f.write_all(text.as_bytes()).map_err(|e| werr(&p, e))?;
    }
    Ok(())
}

/// Refuses `dir/rel` when anything is at that path, or when a directory on the way
/// inside `dir` is a symlink or not a directory.
fn refuse_existing(dir: &Path, rel: &str) -> Result<(), WorkloadError> {
    let refuse = |p: &Path, why: &str| WorkloadError::Write {
        path: p.display().to_string(),
        message: why.to_string(),
    };
    let mut at = dir.to_path_buf();
    let parts: Vec<&str> = rel.split('/').collect();
    for (i, part) in parts.iter().enumerate() {
        at.push(part);
        let meta = match std::fs::symlink_metadata(&at) {
            Ok(meta) => meta,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(refuse(&at, &format!("{e}; nothing written"))),
        };
        if meta.file_type().is_symlink() {
            return Err(refuse(&at, "is a symlink; not followed, nothing written"));
        }
        if i + 1 == parts.len() {
            return Err(refuse(&at, "already exists; not replaced, nothing written"));
        }
        if !meta.is_dir() {
            return Err(refuse(&at, "is not a directory; nothing written"));
        }
    }
    Ok(())
}

/// A conninfo argument: a bare database name becomes `dbname=NAME`.
fn conn_config(conninfo: Option<&str>) -> Result<ConnConfig, WorkloadError> {
    let text = match conninfo {
        None => String::new(),
        Some(c)
            if c.contains('=')
                || c.starts_with("postgres://")
                || c.starts_with("postgresql://") =>
        {
            c.to_string()
        }
        Some(name) => format!("dbname={}", pgsurge_wire::quote_conninfo(name)),
    };
    ConnConfig::parse(&text).map_err(|e| WorkloadError::Connect(e.to_string()))
}

/// Opens a connection for a pack's queries (checks, metrics).
pub fn connect(conninfo: Option<&str>) -> Result<Connection, WorkloadError> {
    let cfg = conn_config(conninfo)?;
    Connection::connect(&cfg)
        .map_err(|e| WorkloadError::Connect(e.to_string().trim_end().to_string()))
}

fn check(name: &str, conninfo: Option<&str>, out: &mut dyn Write) -> Result<i32, WorkloadError> {
    let p = Pack::resolve(name)?;
    if p.manifest.checks.is_empty() {
        let _ = writeln!(out, "workload {} has no consistency checks", p.name());
        return Ok(EXIT_OK);
    }
    let mut conn = connect(conninfo)?;
    let outcomes = crate::check::run_checks(&p, &mut conn)?;
    conn.close();
    let _ = out.write_all(crate::check::render(&outcomes).as_bytes());
    let violated = outcomes.iter().filter(|o| !o.holds()).count();
    if violated == 0 {
        let _ = writeln!(out, "all {} conditions hold", outcomes.len());
        Ok(EXIT_OK)
    } else {
        let _ = out.flush();
        eprintln!(
            "pgsurge: error: {violated} of {} conditions of workload {} violated",
            outcomes.len(),
            p.name()
        );
        Ok(EXIT_FAILURE)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_template_is_a_valid_pack() {
        let scratch = pgsurge_testkit::scratch_dir("workload-new");
        let dir = scratch.path().join("pack");
        new_pack(&dir).unwrap();
        let p = Pack::from_dir(&dir).unwrap();
        let again = new_pack(&dir).unwrap_err().to_string();
        assert_eq!(p.name(), "kv");
        assert!(again.contains("already exists"), "{again}");
    }
}
