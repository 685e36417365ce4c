//! What the index says of where and how the tests ran: the sets (with their test
//! lengths and hosts' CPUs), the targets (their builds and settings), the warnings
//! grouped by kind and target, and the list of tests.

use crate::cells::{trim_float, CellKey};
use crate::html::{escape, num, table, text_table};
use pgsurge_store::{facts, Run, RunFilter, Set, Store, StoreError};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// What a test's environment manifest says of the CPUs it ran on: the server's host
/// and the client's, once when they are the same machine.
pub(crate) fn host_cpus(env: &serde_json::Value) -> Option<String> {
    let cpus = |host: &serde_json::Value| {
        let count = host["cpu"]["count"].as_u64()?;
        let model = host["cpu"]["model"].as_str().unwrap_or("").trim();
        Some(if model.is_empty() {
            format!("{count} CPUs")
        } else {
            format!("{count} CPUs ({model})")
        })
    };
    let client = &env["client"];
    let same =
        client.is_null() || (env["hostname"].is_string() && env["hostname"] == client["hostname"]);
    match (cpus(env), cpus(client)) {
        (Some(s), _) if same => Some(format!("server and client: {s}")),
        (Some(s), Some(c)) => Some(format!("server: {s}; client: {c}")),
        (Some(s), None) => Some(format!("server: {s}")),
        (None, Some(c)) => Some(format!("client: {c}")),
        (None, None) => None,
    }
}

/// The measured lengths of `runs`, as `4 s` or `4–5 s` (rounded to 0.1 s).
pub(super) fn test_lengths(runs: &[&Run]) -> String {
    let lengths: Vec<f64> = runs
        .iter()
        .filter_map(|r| r.record.measured_s.or(r.record.duration_s))
        .filter(|s| s.is_finite())
        .collect();
    let lo = lengths.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = lengths.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if lengths.is_empty() {
        "–".into()
    } else if format!("{lo:.1}") == format!("{hi:.1}") {
        format!("{} s", trim_float((lo * 10.0).round() / 10.0))
    } else {
        format!(
            "{}–{} s",
            trim_float((lo * 10.0).round() / 10.0),
            trim_float((hi * 10.0).round() / 10.0)
        )
    }
}

/// The sets: name, id, kind, status, test counts and lengths, the host's CPUs,
/// creation, description.
pub(super) fn sets_section(sets: &[Set], runs: &[Run], hosts: &BTreeMap<i64, String>) -> String {
    let mut body = String::new();
    body.push_str("<h2>Sets</h2>");
    let rows: Vec<Vec<String>> = sets
        .iter()
        .map(|s| {
            let of_set: Vec<&Run> = runs.iter().filter(|r| r.record.set_id == s.id).collect();
            vec![
                escape(&s.record.name),
                s.id.to_string(),
                escape(&s.record.kind),
                escape(&s.record.status),
                s.runs_ok.to_string(),
                s.runs_failed.to_string(),
                test_lengths(&of_set),
                escape(hosts.get(&s.id).map(String::as_str).unwrap_or("–")),
                escape(&s.record.created_at),
                escape(s.record.description.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    body.push_str(&table(
        &[
            "set",
            "id",
            "kind",
            "status",
            "tests ok",
            "failed",
            "each test",
            "host CPUs",
            "created",
            "description",
        ]
        .map(String::from),
        &rows,
    ));
    body
}

/// The targets of every set and where each server came from (passwords redacted):
/// its version, its binaries or connection, what it was built from (source and
/// patches, commit, configure arguments), and its settings.
pub(super) fn targets_section(store: &mut Store, sets: &[Set]) -> Result<String, StoreError> {
    let mut body = String::new();
    let mut trows = Vec::new();
    let several_sets = sets.len() > 1;
    for s in sets {
        let builds = target_builds(store, s.id)?;
        for t in store.targets(s.id)? {
            let build = builds.get(&t.id);
            let mut name = escape(&t.record.name);
            if several_sets {
                let _ = write!(name, "<br><small>set {}</small>", escape(&s.record.name));
            }
            let server = format!(
                "{}<br><small>{}</small>",
                escape(t.record.server_version.as_deref().unwrap_or("")),
                escape(&t.record.kind)
            );
            let origin = match build {
                Some(b) => {
                    let mut o = escape(&b.source);
                    if let Some(c) = &b.commit {
                        let _ = write!(o, "<br><small>commit {}</small>", escape(c));
                    }
                    if !b.configure.is_empty() {
                        let _ = write!(o, "<br><small>configure {}</small>", escape(&b.configure));
                    }
                    if !b.layout_seeds.is_empty() {
                        let seeds: Vec<String> =
                            b.layout_seeds.iter().map(u64::to_string).collect();
                        let _ = write!(
                            o,
                            "<br><small>layout seeds {} (linked by lld, sections shuffled)</small>",
                            seeds.join(", ")
                        );
                    }
                    if !b.hazards.is_empty() {
                        let _ = write!(
                            o,
                            "<br><span class=\"warn\">with {}: NOT FOR TIMING</span>",
                            escape(&b.hazards)
                        );
                    }
                    o
                }
                None => escape(&pgsurge_store::redact_text(
                    t.record
                        .bin_dir
                        .as_deref()
                        .or(t.record.conninfo.as_deref())
                        .unwrap_or(""),
                )),
            };
            trows.push(vec![
                name,
                server,
                origin,
                settings_text(t.record.settings.as_ref()),
            ]);
        }
    }
    if !trows.is_empty() {
        body.push_str("<h2>Targets</h2>");
        body.push_str(&text_table(
            &[
                "target",
                "server",
                "built from / binaries / conninfo",
                "settings",
            ]
            .map(String::from),
            &trows,
        ));
    }

    Ok(body)
}

/// A target's settings as `name = value` lines (passwords masked), `–` for none.
pub(super) fn settings_text(settings: Option<&serde_json::Value>) -> String {
    let Some(v) = settings.map(pgsurge_store::redact_json) else {
        return "–".into();
    };
    match v.as_object() {
        Some(map) if map.is_empty() => "–".into(),
        Some(map) => map
            .iter()
            .map(|(name, value)| {
                let value = value
                    .as_str()
                    .map(str::to_string)
                    .unwrap_or_else(|| value.to_string());
                escape(&format!("{name} = {value}"))
            })
            .collect::<Vec<_>>()
            .join("<br>"),
        None => escape(&v.to_string()),
    }
}

/// What a target built from source was built from, as its runs' build facts say.
#[derive(Debug, Default)]
pub(super) struct TargetBuild {
    /// The source, with its patches (`tarball + fix.patch (1a2b3c4d)`).
    source: String,
    /// The commit, for a git source.
    commit: Option<String>,
    /// The configure arguments (pgsurge's own prefix left out).
    configure: String,
    /// Build options that make timings meaningless.
    hazards: String,
    /// The seeds of its layout builds (`[repeats] builds`), when it has several.
    layout_seeds: BTreeSet<u64>,
}

/// What each target of a set built from source was built from (its runs' build
/// facts), by target id.
pub(super) fn target_builds(
    store: &mut Store,
    set_id: i64,
) -> Result<BTreeMap<i64, TargetBuild>, StoreError> {
    let runs = store.readable_runs(&RunFilter {
        set_id: Some(set_id),
        ..Default::default()
    })?;
    let target_of: BTreeMap<i64, i64> = runs
        .iter()
        .filter_map(|r| Some((r.id, r.record.target_id?)))
        .collect();
    let mut out: BTreeMap<i64, TargetBuild> = BTreeMap::new();
    for (run_id, fact) in store.set_facts(set_id)? {
        let (Some(target), Some(value)) = (target_of.get(&run_id), fact.value) else {
            continue;
        };
        let e = out.entry(*target).or_default();
        match fact.name.as_str() {
            facts::BUILD_SOURCE => e.source = value,
            facts::BUILD_COMMIT => e.commit = Some(value),
            facts::BUILD_CONFIGURE => e.configure = configure_without_prefix(&value),
            facts::TIMING_HAZARDS => e.hazards = value,
            facts::BUILD_LAYOUT_SEED => e.layout_seeds.extend(value.parse::<u64>().ok()),
            _ => {}
        }
    }
    out.retain(|_, b| !b.source.is_empty() || !b.hazards.is_empty());
    Ok(out)
}

/// `pg_config --configure` without the prefix every build of the cache shares.
pub(super) fn configure_without_prefix(configure: &str) -> String {
    configure
        .split("' '")
        .map(|a| a.trim_matches('\''))
        .filter(|a| !a.is_empty() && !a.starts_with("--prefix="))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The warnings of `sets`, when there are any. A warning stored with each test of a
/// target is listed once, with how many tests it concerns; one that several targets
/// share (the host's settings, named per target) is listed once, naming the targets.
pub(super) fn warnings_section(
    store: &mut Store,
    sets: &[Set],
    runs: &[Run],
    target_names: &BTreeMap<i64, String>,
) -> Result<String, StoreError> {
    let mut body = String::new();
    let mut warnings = Vec::new();
    for s in sets {
        warnings.extend(store.warnings(Some(s.id))?);
    }
    if warnings.is_empty() {
        return Ok(body);
    }
    let target_of_run: BTreeMap<i64, &str> = runs
        .iter()
        .filter_map(|r| Some((r.id, target_names.get(&r.record.target_id?)?.as_str())))
        .collect();
    // (code, text after the target's name, targets, tests).
    let mut seen: Vec<(&str, String, Vec<&str>, usize)> = Vec::new();
    for w in &warnings {
        let (code, message) = (w.record.code.as_str(), w.record.message.as_str());
        let target = w
            .record
            .run_id
            .and_then(|id| target_of_run.get(&id).copied());
        let (target, rest) = match target
            .and_then(|t| Some((t, message.strip_prefix(&format!("target \"{t}\""))?)))
        {
            Some((t, rest)) => (Some(t), rest.to_string()),
            None => (None, message.to_string()),
        };
        match seen
            .iter_mut()
            .find(|s| s.0 == code && s.1 == rest && (s.2.is_empty() == target.is_none()))
        {
            Some(s) => {
                s.3 += 1;
                if let Some(t) = target.filter(|t| !s.2.contains(t)) {
                    s.2.push(t);
                }
            }
            None => seen.push((code, rest, target.into_iter().collect(), 1)),
        }
    }
    body.push_str("<h2>Warnings</h2><ul>");
    for (code, rest, targets, times) in &seen {
        let named: Vec<String> = targets.iter().map(|t| format!("\"{t}\"")).collect();
        let message = match named.len() {
            0 => rest.clone(),
            1 => format!("target {}{rest}", named[0]),
            _ => format!("targets {}{rest}", named.join(", ")),
        };
        let _ = write!(
            body,
            "<li class=\"warn\">{}: {}{}</li>",
            escape(code),
            escape(&message),
            if *times > 1 {
                format!(" <span class=\"muted\">({times} tests)</span>")
            } else {
                String::new()
            }
        );
    }
    body.push_str("</ul>");
    Ok(body)
}

/// Every test, linking to its page.
pub(super) fn tests_section(
    sets: &[Set],
    runs: &[Run],
    target_names: &BTreeMap<i64, String>,
) -> String {
    let mut body = String::new();
    body.push_str("<h2>Tests</h2>");
    let rows: Vec<Vec<String>> = runs
        .iter()
        .map(|r| {
            let rec = &r.record;
            vec![
                format!("<a href=\"run-{}.html\">#{}</a>", r.id, r.id),
                escape(
                    sets.iter()
                        .find(|s| s.id == rec.set_id)
                        .map(|s| s.record.name.as_str())
                        .unwrap_or(""),
                ),
                escape(
                    rec.target_id
                        .and_then(|t| target_names.get(&t))
                        .map(String::as_str)
                        .unwrap_or(""),
                ),
                escape(&CellKey::of(r).label()),
                rec.repeat_no.to_string(),
                escape(&rec.status),
                num(rec.measured_s.or(rec.duration_s).unwrap_or(f64::NAN), 1),
                num(rec.tps.unwrap_or(f64::NAN), 1),
                num(rec.latency_mean_ms.unwrap_or(f64::NAN), 3),
                num(rec.latency_p99_ms.unwrap_or(f64::NAN), 3),
                escape(rec.error.as_deref().unwrap_or("")),
            ]
        })
        .collect();
    body.push_str(&table(
        &[
            "test",
            "set",
            "target",
            "cell",
            "repeat",
            "status",
            "s",
            "tps",
            "lat avg ms",
            "p99 ms",
            "error",
        ]
        .map(String::from),
        &rows,
    ));
    body
}
