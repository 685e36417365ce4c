//! `results show`: a set's runs as a table (also quickstart's), with what the facts say
//! of them, the capacity found, and one run in detail with where its time went.

use super::{select_runs, warn_impossible, warn_skipped, write_stdout, CliResult, Selection};
use pgsurge_command::terminal_safe as safe;
use pgsurge_plan::capacity;
use pgsurge_store::{facts, Run, Store};

pub(super) fn f(v: Option<f64>, prec: usize) -> String {
    v.map(|x| format!("{x:.prec$}"))
        .unwrap_or_else(|| "-".into())
}

/// The text table of runs (also used by quickstart).
pub fn runs_table(runs: &[Run]) -> String {
    let mut s = format!(
        "{:>5}  {:<34} {:>6} {:>5} {:>8} {:>11} {:>9} {:>9} {:>9}  {}\n",
        "run", "test", "scale", "cli", "rate", "tps", "lat avg", "lat p99", "commit Δ%", "status"
    );
    for r in runs {
        let d = &r.record;
        let impossible = d.impossible_values();
        let flag = if impossible.is_empty() {
            String::new()
        } else {
            format!(" [IMPOSSIBLE: {}]", impossible.join(", "))
        };
        s.push_str(&format!(
            "{:>5}  {:<34} {:>6} {:>5} {:>8} {:>11} {:>9} {:>9} {:>9}  {}{flag}{}\n",
            r.id,
            safe(&d.test_key),
            d.scale.map(|v| v.to_string()).unwrap_or_else(|| "-".into()),
            d.clients
                .map(|v| v.to_string())
                .unwrap_or_else(|| "-".into()),
            f(d.rate, 0),
            f(d.tps, 1),
            f(d.latency_mean_ms, 3),
            f(d.latency_p99_ms, 3),
            f(d.commit_mismatch_pct, 1),
            safe(&d.status),
            d.error
                .as_deref()
                .map(|e| format!(": {}", safe(&first_line(e))))
                .unwrap_or_default()
        ));
    }
    s
}

/// The first line of a (possibly multi-line) error, marked when lines follow.
pub(super) fn first_line(text: &str) -> String {
    let mut lines = text.lines();
    let first = lines.next().unwrap_or("");
    if lines.next().is_some() {
        format!("{first} …")
    } else {
        first.to_string()
    }
}

pub(super) fn indent(text: &str) -> String {
    text.lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `results show --run ID`: one run in detail (or its stored record as JSON).
pub(super) fn show_run(store: &mut Store, id: i64, json: bool) -> CliResult {
    let loaded = store.load_run(id).map_err(|e| e.to_string())?;
    if json {
        return write_stdout(
            format!(
                "{}\n",
                serde_json::to_string_pretty(&loaded.run).map_err(|e| e.to_string())?
            )
            .as_bytes(),
        );
    }
    let record = &loaded.run.record;
    let mut text = format!(
        "run {} ({}), set {}, target {}\n",
        loaded.run.id,
        record.test_key,
        record.set_id,
        loaded
            .target
            .as_ref()
            .map(|t| t.record.name.as_str())
            .unwrap_or("-")
    );
    let impossible = record.impossible_values();
    warn_impossible(std::slice::from_ref(&loaded.run));
    let fields = serde_json::to_value(record).map_err(|e| e.to_string())?;
    if let serde_json::Value::Object(map) = fields {
        for (k, v) in map {
            if matches!(k.as_str(), "result_json" | "scripts" | "options" | "error") || v.is_null()
            {
                continue;
            }
            let v = match v {
                serde_json::Value::String(s) => s,
                other => other.to_string(),
            };
            let flag = if impossible.iter().any(|i| i.starts_with(&format!("{k} = "))) {
                " (IMPOSSIBLE)"
            } else {
                ""
            };
            text.push_str(&format!("  {k}: {v}{flag}\n"));
        }
    }
    // A workload pack's metrics (NOPM…), as the bench report prints them.
    for m in loaded.run.workload_metrics() {
        text.push_str(&format!("  {} = {:.1} ({})\n", m.name, m.value, m.unit));
    }
    text.push_str(&format!(
        "intervals: {}, metric samples: {}, histograms: {}, settings: {}, counters: {}\n",
        loaded.intervals.len(),
        loaded.metrics.len(),
        loaded.histograms.len(),
        loaded.settings.len(),
        loaded.counters.len()
    ));
    if let Some(e) = &record.error {
        text.push_str(&format!("error:\n{}\n", indent(e)));
    }
    for f in &loaded.facts {
        if f.name == facts::STATEMENTS_TOP {
            continue; // shown as a table below
        }
        text.push_str(&format!(
            "{}: {}\n",
            f.name,
            f.value.as_deref().unwrap_or("-")
        ));
    }
    if !loaded
        .facts
        .iter()
        .any(|f| f.name == facts::SERVER_HOST_METRICS_SOURCE)
    {
        text.push_str(&format!(
            "{}: not recorded\n",
            facts::SERVER_HOST_METRICS_SOURCE
        ));
    }
    text.push_str(&where_time_goes(&loaded.metrics, &loaded.facts));
    for w in &loaded.warnings {
        text.push_str(&format!("warning: {}\n", w.message));
    }
    text.push_str(&format!(
        "(the stored record as JSON: pgsurge results show --run {} --json)\n",
        loaded.run.id
    ));
    write_stdout(safe(&text).as_bytes())
}

pub(super) fn show(
    store: &mut Store,
    set: Option<String>,
    target: Option<String>,
    run: Option<i64>,
    json: bool,
) -> CliResult {
    if let Some(id) = run {
        return show_run(store, id, json);
    }
    let set_id = match set {
        Some(s) => store.resolve_set(&s).map_err(|e| e.to_string())?,
        None => store
            .list_sets()
            .map_err(|e| e.to_string())?
            .last()
            .map(|s| s.id)
            .ok_or("the store holds no set")?,
    };
    let s = store.set(set_id).map_err(|e| e.to_string())?;
    let mut text = format!(
        "set {} \"{}\" ({}, {}), created {}\n",
        s.id, s.record.name, s.record.kind, s.record.status, s.record.created_at
    );
    let (runs, _) = select_runs(
        store,
        &Selection {
            set: Some(set_id.to_string()),
            target,
        },
    )?;
    text.push_str(&runs_table(&runs));
    for loaded in &runs {
        if let Some(e) = loaded.record.error.as_deref().filter(|e| e.contains('\n')) {
            text.push_str(&format!(
                "run {} ({}) error:\n{}\n",
                loaded.id,
                loaded.record.test_key,
                indent(e)
            ));
        }
    }
    let facts = store.set_facts(set_id).map_err(|e| e.to_string())?;
    text.push_str(&facts_lines(&runs, &facts));
    if s.record.kind == pgsurge_store::set_kind::GROUP {
        // A distributed run: the merge of its generators, as `dist wait` printed it.
        text.push_str(&format!(
            "merged result of the group's {} generator(s):\n",
            runs.len()
        ));
        match pgsurge_generators::group::merge_group(store, set_id) {
            Ok(m) => {
                let mut out = Vec::new();
                pgsurge_generators::write_merged_report(&m, &mut out).map_err(|e| e.to_string())?;
                text.push_str(&String::from_utf8_lossy(&out));
            }
            Err(e) => text.push_str(&format!("(cannot merge: {e})\n")),
        }
    }
    if let Some(cap) = s.record.spec.as_deref().and_then(capacity::stored_section) {
        let results = capacity::capacity_of_set(store, set_id, &cap.objective())
            .map_err(|e| e.to_string())?;
        for r in results {
            text.push_str(&format!("capacity: {}\n", r.line()));
        }
    }
    // A target's warning is stored with each of its tests; it is said once.
    let mut said = std::collections::HashSet::new();
    for w in store.warnings(Some(set_id)).map_err(|e| e.to_string())? {
        if said.insert(w.record.message.clone()) {
            text.push_str(&format!("warning: {}\n", w.record.message));
        }
    }
    write_stdout(safe(&text).as_bytes())?;
    warn_impossible(&runs);
    warn_skipped(store, !runs.is_empty())
}

/// Where a test's time went, as `results show --run` prints it: its wait events by
/// share of active session time, and its top statements when `pg_stat_statements`
/// was read. Empty when neither was recorded.
pub fn where_time_goes(
    metrics: &[pgsurge_store::MetricSample],
    facts: &[pgsurge_store::FactRecord],
) -> String {
    use pgsurge_store::activity::{self, Statements};
    let mut s = String::new();
    let shares = activity::wait_shares(metrics);
    if !shares.is_empty() {
        s.push_str(&format!(
            "wait events (share of active session time; pg_stat_activity every {} ms):\n",
            pgsurge_observe::waits::SAMPLE_EVERY.as_millis()
        ));
        let width = shares.iter().map(|w| w.label.len()).max().unwrap_or(0);
        for w in shares.iter().take(10) {
            s.push_str(&format!(
                "  {:<width$}  {:>5.1} %  mean {:.2} sessions\n",
                w.label, w.share_pct, w.mean_sessions
            ));
        }
        if shares.len() > 10 {
            s.push_str(&format!("  (and {} more)\n", shares.len() - 10));
        }
    }
    if let Statements::Top { source, top } = activity::statements(facts) {
        s.push_str(&format!(
            "top statements by execution time during the test ({source}):\n"
        ));
        if top.is_empty() {
            s.push_str("  none executed\n");
        } else {
            s.push_str(&format!(
                "  {:>10} {:>12} {:>10} {:>10} {:>6}  query\n",
                "calls", "total ms", "mean ms", "rows", "time %"
            ));
        }
        for t in &top {
            s.push_str(&format!(
                "  {:>10} {:>12.1} {:>10.3} {:>10} {:>6}  {}\n",
                t.calls,
                t.total_ms,
                t.mean_ms,
                t.rows,
                t.share_pct.map(|p| format!("{p:.1}")).unwrap_or_default(),
                t.query
            ));
        }
    }
    s
}

/// Where each run's server-host metrics came from, whether the client was the
/// bottleneck and whether the test initialized the data: one line for the runs that
/// say the same (`runs 2-5, 9: …`), one per run that says something of its own.
pub fn facts_lines(runs: &[Run], facts: &[(i64, pgsurge_store::FactRecord)]) -> String {
    let mut groups: Vec<(String, Vec<&Run>)> = Vec::new();
    for (r, line) in run_facts(runs, facts) {
        match groups.iter_mut().find(|(l, _)| *l == line) {
            Some((_, rs)) => rs.push(r),
            None => groups.push((line, vec![r])),
        }
    }
    let mut s = String::new();
    for (line, rs) in groups {
        match rs.as_slice() {
            [r] => s.push_str(&format!("run {} ({}): {line}\n", r.id, r.record.test_key)),
            _ => {
                let ids: Vec<i64> = rs.iter().map(|r| r.id).collect();
                s.push_str(&format!("runs {}: {line}\n", id_ranges(&ids)));
            }
        }
    }
    s
}

/// `1-4, 7, 9-10`: run ids (ascending) as ranges.
pub(super) fn id_ranges(ids: &[i64]) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut i = 0;
    while i < ids.len() {
        let mut j = i;
        while j + 1 < ids.len() && ids[j + 1] == ids[j] + 1 {
            j += 1;
        }
        parts.push(if j == i {
            ids[i].to_string()
        } else {
            format!("{}-{}", ids[i], ids[j])
        });
        i = j + 1;
    }
    parts.join(", ")
}

/// Each run's facts line (without the run), for the runs that have facts.
pub(super) fn run_facts<'a>(
    runs: &'a [Run],
    facts: &[(i64, pgsurge_store::FactRecord)],
) -> Vec<(&'a Run, String)> {
    use pgsurge_store::facts as f;
    let mut out = Vec::new();
    for r in runs {
        let get = |name: &str| {
            facts
                .iter()
                .find(|(id, x)| *id == r.id && x.name == name)
                .and_then(|(_, x)| x.value.as_deref())
        };
        let Some(source) = get(f::SERVER_HOST_METRICS_SOURCE) else {
            continue;
        };
        let source = if source == "none" {
            "none (the server's host was not measured)".to_string()
        } else {
            source.to_string()
        };
        let client = match get(f::CLIENT_BOUND) {
            Some("true") => format!(
                "CLIENT-BOUND ({})",
                get(f::CLIENT_BOUND_REASON).unwrap_or("no reason recorded")
            ),
            Some(_) => "no".into(),
            None => "not measured".into(),
        };
        let init = match (get(f::INIT_PERFORMED), get(f::INIT_DURATION_S)) {
            (Some("true"), d) => format!(
                "initialized ({}, {} s, {})",
                get(f::INIT_METHOD).unwrap_or("?"),
                d.unwrap_or("?"),
                get(f::INIT_REASON).unwrap_or("")
            ),
            (Some(_), _) => format!("reused ({})", get(f::INIT_REASON).unwrap_or("")),
            (None, _) => "-".into(),
        };
        let mut line =
            format!("server host metrics: {source}; client-bound: {client}; init: {init}");
        if let Some(fs) = get(f::DATA_DIR_FSTYPE) {
            line.push_str(&format!("; data directory on {fs}"));
            if get(f::DATA_DIR_IN_MEMORY) == Some("true") {
                line.push_str(" (IN MEMORY: no real I/O)");
            }
        }
        if let Some(build) = get(f::BUILD_SOURCE) {
            line.push_str(&format!("; built from {build}"));
        }
        if let Some(h) = get(f::TIMING_HAZARDS) {
            line.push_str(&format!("; built with {h}: NOT FOR TIMING"));
        }
        out.push((r, line));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results_cli::tests::{all, store};

    #[test]
    fn runs_whose_facts_say_the_same_share_one_line() {
        use pgsurge_store::facts as f;
        use pgsurge_store::FactRecord;
        let mut s = store();
        let (runs, _) = select_runs(&mut s, &all()).unwrap();
        let (a, b) = (runs[0].id, runs[1].id);
        let same = |id: i64| {
            vec![
                (id, FactRecord::new(f::SERVER_HOST_METRICS_SOURCE, "local")),
                (id, FactRecord::new(f::CLIENT_BOUND, "false")),
            ]
        };
        let facts: Vec<_> = same(a).into_iter().chain(same(b)).collect();
        let text = facts_lines(&runs, &facts);
        assert_eq!(
            text,
            format!("runs {a}-{b}: server host metrics: local; client-bound: no; init: -\n")
        );
        // A run that says something of its own keeps its line.
        let mut facts = facts;
        facts.push((b, FactRecord::new(f::DATA_DIR_FSTYPE, "ext4")));
        let text = facts_lines(&runs, &facts);
        assert_eq!(text.lines().count(), 2, "{text}");
        assert!(
            text.contains(&format!("run {b} ({}): ", runs[1].record.test_key)),
            "{text}"
        );
        assert_eq!(id_ranges(&[1, 2, 3, 5, 7, 8]), "1-3, 5, 7-8");
    }
}
