//! Targets built from PostgreSQL source (`source`, `ref`, `patches`, `configure`):
//! built (or found in the build cache) once, before the first test, so that a source
//! that does not build fails the campaign before anything is measured; `plan` says
//! which are cached and which will be built. With `[repeats] builds = N`, each is
//! built N times in N layouts, seeds 1 to N (see [`layout_requests`]).

use std::io::Write;

use pgsurge_server::source_build::{self, Built};

use crate::error::{CampaignError, Result};
use crate::spec::Campaign;

/// The build requests of a `source` target: its one build, or with `[repeats] builds
/// = N` above 1 its N layout builds (seeds 1 to N: the same objects, linked in the
/// order each seed draws). None for a target without a source.
pub fn layout_requests(
    campaign: &Campaign,
    target: &crate::spec::TargetSpec,
) -> Option<Vec<source_build::BuildRequest>> {
    let req = target.build_request()?;
    let (builds, _) = campaign.levels();
    if builds <= 1 {
        return Some(vec![req]);
    }
    Some(
        (1..=u64::from(builds))
            .map(|seed| source_build::BuildRequest {
                layout_seed: Some(seed),
                ..req.clone()
            })
            .collect(),
    )
}

/// `campaign` with every `source` target built; progress goes to stderr unless `quiet`.
pub fn build_sources(campaign: &Campaign, quiet: bool) -> Result<Campaign> {
    let mut built = campaign.clone();
    for t in &campaign.spec.targets {
        let Some(requests) = layout_requests(campaign, t) else {
            continue;
        };
        if built.builds.contains_key(&t.name) {
            continue;
        }
        let mut made = Vec::new();
        for req in &requests {
            let mut progress: Box<dyn Write> = if quiet {
                Box::new(std::io::sink())
            } else {
                Box::new(std::io::stderr())
            };
            let b: Built = source_build::build(req, &mut progress)
                .map_err(|e| CampaignError::Other(format!("target \"{}\": {e}", t.name)))?;
            if !quiet {
                let how = if b.cached { "cached build" } else { "built" };
                let layout = b
                    .info
                    .layout_seed
                    .map(|s| format!(" (layout seed {s})"))
                    .unwrap_or_default();
                eprintln!(
                    "target \"{}\": {how} {}{layout} of {}",
                    t.name,
                    source_build::short(&b.info.key),
                    b.info.source
                );
            }
            made.push(b);
        }
        built.builds.insert(t.name.clone(), made[0].clone());
        if made.len() > 1 {
            built.layouts.insert(t.name.clone(), made);
        }
    }
    Ok(built)
}

/// One line per `source` target for `campaign plan`: cached, or to be built; and the
/// warnings of builds whose options make timings meaningless.
pub fn plan_lines(campaign: &Campaign) -> Result<(Vec<String>, Vec<String>)> {
    let mut lines = Vec::new();
    let mut warnings = Vec::new();
    for t in &campaign.spec.targets {
        for req in layout_requests(campaign, t).unwrap_or_default() {
            plan_line(t, &req, &mut lines, &mut warnings)?;
        }
    }
    Ok((lines, warnings))
}

/// [`plan_lines`] of one build of a target.
fn plan_line(
    t: &crate::spec::TargetSpec,
    req: &source_build::BuildRequest,
    lines: &mut Vec<String>,
    warnings: &mut Vec<String>,
) -> Result<()> {
    let p = source_build::plan(req)
        .map_err(|e| CampaignError::Other(format!("target \"{}\": {e}", t.name)))?;
    let layout = req
        .layout_seed
        .map(|s| format!(" (layout seed {s})"))
        .unwrap_or_default();
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
            "target \"{}\": cached build {}{layout} of {}{patches}",
            t.name,
            source_build::short(&p.key),
            p.source
        )
    } else {
        format!(
            "target \"{}\": will be built from {}{patches} (build {}{layout}; minutes, once)",
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
    Ok(())
}
