//! A replay of PostgreSQL logs as a workload of the matrix (`{ replay = "FILE", speed,
//! max }`): the log and its pace read from the campaign file, its name, and the spec of
//! its replay onto a target. Running it is the campaign's.

use std::path::{Path, PathBuf};

use pgsurge_replay::{Pacing, ReplaySpec, Target};

use crate::spec::ScriptPart;

/// A replay workload: which log, at what pace.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayWorkload {
    /// The log file (relative paths resolved against the campaign file).
    pub log: PathBuf,
    /// Speed factor.
    pub speed: f64,
    /// `--max`.
    pub max: bool,
}

impl ReplayWorkload {
    /// The workload of a `{ replay = "…", speed = F, max = B }` entry.
    pub fn from_part(p: &ScriptPart, base: &Path) -> Result<ReplayWorkload, String> {
        let Some(log) = &p.replay else {
            return Err("not a replay".into());
        };
        if p.builtin.is_some() || p.file.is_some() || p.workload.is_some() {
            return Err(
                "a replay is a whole workload: give it alone, as { replay = \"FILE\" }".into(),
            );
        }
        let speed = p.speed.unwrap_or(1.0);
        if !(speed.is_finite() && speed > 0.0) {
            return Err(format!("replay speed must be above 0, not {speed}"));
        }
        let log = if log.is_absolute() {
            log.clone()
        } else {
            base.join(log)
        };
        if !log.is_file() {
            return Err(format!("replay log {} is not a file", log.display()));
        }
        Ok(ReplayWorkload {
            log,
            speed,
            max: p.max.unwrap_or(false),
        })
    }

    /// The workload's name in the matrix and the store: `replay:FILE` and its pace.
    pub fn name(&self) -> String {
        let file = self
            .log
            .file_name()
            .map(|f| f.to_string_lossy().into_owned())
            .unwrap_or_default();
        workload_name(&file, self.max, self.speed)
    }

    /// The spec of a replay onto `conn` (every session as its user, on its database).
    pub fn spec(&self, conn: &pgsurge_wire::ConnConfig) -> ReplaySpec {
        let mut spec = ReplaySpec::new(vec![self.log.clone()]);
        spec.pacing = if self.max {
            Pacing::Max { speed: self.speed }
        } else {
            Pacing::Speed(self.speed)
        };
        spec.target = Target {
            fixed: Some(conn.clone()),
            ..Target::default()
        };
        spec
    }
}

/// A replay's name in the matrix and the store: `replay:FILE`, with `@max` or the speed
/// factor (`@2x`) when it is not 1.
pub fn workload_name(file: &str, max: bool, speed: f64) -> String {
    if max {
        format!("replay:{file}@max")
    } else if speed == 1.0 {
        format!("replay:{file}")
    } else {
        format!("replay:{file}@{speed}x")
    }
}
