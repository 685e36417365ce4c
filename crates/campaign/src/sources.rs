//! Targets built from PostgreSQL source (`source`, `ref`, `patches`, `configure`):
//! built (or found in the build cache) once, before the first test, so that a source
//! that does not build fails the campaign before anything is measured; `plan` says
//! which are cached and which will be built.

use std::io::Write;

use pgsurge_server::source_build::{self, Built};

use crate::error::{CampaignError, Result};
use crate::spec::Campaign;

/// `campaign` with every `source` target built; progress goes to stderr unless `quiet`.
pub fn build_sources(campaign: &Campaign, quiet: bool) -> Result<Campaign> {
    let mut built = campaign.clone();
    for t in &campaign.spec.targets {
        let Some(req) = t.build_request() else {
            continue;
        };
        if built.builds.contains_key(&t.name) {
            continue;
        }
        let mut progress: Box<dyn Write> = if quiet {
            Box::new(std::io::sink())
        } else {
            Box::new(std::io::stderr())
        };
        let b: Built = source_build::build(&req, &mut progress)
            .map_err(|e| CampaignError::Other(format!("target \"{}\": {e}", t.name)))?;
        if !quiet {
            let how = if b.cached { "cached build" } else { "built" };
            eprintln!(
                "target \"{}\": {how} {} of {}",
                t.name,
                source_build::short(&b.info.key),
                b.info.source
            );
        }
        built.builds.insert(t.name.clone(), b);
    }
    Ok(built)
}

/// One line per `source` target for `campaign plan`: cached, or to be built; and the
/// warnings of builds whose options make timings meaningless.
pub fn plan_lines(campaign: &Campaign) -> Result<(Vec<String>, Vec<String>)> {
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    for t in &campaign.spec.targets {
        let Some(req) = t.build_request() else {
            continue;
        };
        let p = source_build::plan(&req)
            .map_err(|e| CampaignError::Other(format!("target \"{}\": {e}", t.name)))?;
        let patches = if t.patches.is_empty() {
            String::new()
        } else {
            format!(
                " + {}",
                t.patches
                    .iter()
                    .map(|p| p.file_name().unwrap_or(p.as_os_str()).to_string_lossy())
                    .collect::<Vec<_>>()
                    .join(", ")
            )
        };
        lines.push(if p.cached {
            format!(
                "target \"{}\": cached build {} of {}{patches}",
                t.name,
                source_build::short(&p.key),
                p.source
            )
        } else {
            format!(
                "target \"{}\": will be built from {}{patches} (build {}; minutes, once)",
                t.name,
                p.source,
                source_build::short(&p.key)
            )
        });
        // What the configure arguments name, and what a cached build recorded from
        // pg_config.
        let mut hazards = p.timing_hazards;
        let recorded = source_build::list_builds()
            .ok()
            .and_then(|list| list.into_iter().find(|b| b.info.key == p.key))
            .map(|b| b.info.timing_hazards)
            .unwrap_or_default();
        for h in recorded {
            if !hazards.contains(&h) {
                hazards.push(h);
            }
        }
        if !hazards.is_empty() {
            warnings.push(format!(
                "target \"{}\" is built with {}: assertions and debug options make timings \
                 meaningless; build without them to measure",
                t.name,
                hazards.join(" ")
            ));
        }
    }
    Ok((lines, warnings))
}
