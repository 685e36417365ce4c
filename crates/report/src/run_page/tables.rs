//! The tables at the end of a test's page: its options, scripts, per-transaction
//! costs, server counters, non-default settings and environment manifest (settings and
//! manifest redacted again on display).

use crate::html::{escape, kv_table, num, table, text_list};
use pgsurge_store::LoadedRun;
use std::fmt::Write;

/// The options the test ran with.
pub(super) fn options_section(run: &LoadedRun) -> String {
    let rec = &run.run.record;
    let mut body = String::new();
    if let Some(opts) = rec.options.as_ref().and_then(|o| o.as_object()) {
        body.push_str("<h2>Options</h2>");
        let rows: Vec<(String, String)> = opts
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    v.as_str()
                        .map(str::to_string)
                        .unwrap_or_else(|| v.to_string()),
                )
            })
            .collect();
        body.push_str(&kv_table(&rows));
    }
    body
}

/// The scripts, with their weights.
pub(super) fn scripts_section(run: &LoadedRun) -> String {
    let rec = &run.run.record;
    let mut body = String::new();
    if let Some(scripts) = rec.scripts.as_ref().and_then(|s| s.as_array()) {
        body.push_str("<h2>Scripts</h2>");
        for sc in scripts {
            let name = sc.get("name").and_then(|v| v.as_str()).unwrap_or("?");
            let weight = sc.get("weight").map(|v| v.to_string()).unwrap_or_default();
            let text = sc.get("text").and_then(|v| v.as_str()).unwrap_or("");
            let _ = write!(
                body,
                "<h3>{} (weight {})</h3><pre>{}</pre>",
                escape(name),
                escape(&weight),
                escape(text)
            );
        }
    }
    body
}

/// The server counters sampled before and after the test.
pub(super) fn counters_section(run: &LoadedRun) -> String {
    let mut body = String::new();
    if !run.counters.is_empty() {
        body.push_str("<h2>Server counters (before → after)</h2>");
        let rows: Vec<Vec<String>> = run
            .counters
            .iter()
            .map(|c| {
                vec![
                    escape(&c.name),
                    num(c.before_value.unwrap_or(f64::NAN), 0),
                    num(c.after_value.unwrap_or(f64::NAN), 0),
                    num(c.delta.unwrap_or(f64::NAN), 0),
                ]
            })
            .collect();
        body.push_str(&table(
            &["counter", "before", "after", "delta"].map(String::from),
            &rows,
        ));
    }
    body
}

/// The server's non-default settings (masked again on display).
pub(super) fn settings_section(run: &LoadedRun) -> String {
    let mut body = String::new();
    if !run.settings.is_empty() {
        body.push_str("<h2>Non-default settings</h2>");
        let rows: Vec<Vec<String>> = run
            .settings
            .iter()
            .map(|s| {
                // Masked again on display: a store written elsewhere may hold a
                // credential in a setting.
                let shown = |v: &Option<String>| {
                    escape(&pgsurge_store::redact_text(v.as_deref().unwrap_or("")))
                };
                vec![
                    escape(&s.name),
                    shown(&s.setting),
                    escape(s.unit.as_deref().unwrap_or("")),
                    escape(s.source.as_deref().unwrap_or("")),
                    shown(&s.boot_val),
                ]
            })
            .collect();
        body.push_str(&table(
            &["name", "setting", "unit", "source", "boot value"].map(String::from),
            &rows,
        ));
    }
    body
}

/// What each transaction of the test cost (server and client CPU, context switches,
/// WAL, buffers, temporary bytes), and what could not be measured.
pub(super) fn costs_section(run: &LoadedRun) -> String {
    let Some(costs) = run.run.txn_costs() else {
        return String::new();
    };
    let mut body = format!(
        "<h2>Per-transaction costs</h2><p class=\"muted\">Over the measured window's {} \
         transactions.</p>",
        costs.transactions
    );
    let rows: Vec<Vec<String>> = costs
        .costs
        .iter()
        .map(|c| {
            let kind = pgsurge_results::costs::cost_kind(&c.name);
            vec![
                escape(&c.name),
                num(c.per_txn, 3),
                escape(kind.map_or("", |k| k.unit)),
                num(c.total, 0),
                escape(kind.map_or("", |k| k.description)),
            ]
        })
        .collect();
    body.push_str(&table(
        &["cost", "per transaction", "unit", "total", "what"].map(String::from),
        &rows,
    ));
    if !costs.unavailable.is_empty() {
        body.push_str(&text_list("not measured", &costs.unavailable));
    }
    body
}

/// The environment the test ran in (redacted).
pub(super) fn environment_section(run: &LoadedRun) -> String {
    let mut body = String::new();
    if let Some(env) = &run.environment {
        body.push_str("<h2>Environment</h2>");
        let mut rows = Vec::new();
        flatten_json("", &pgsurge_store::redact_json(env), &mut rows);
        body.push_str(&kv_table(&rows));
    }
    body
}

/// Flattens a JSON document into dotted-key rows for a table.
pub(super) fn flatten_json(prefix: &str, v: &serde_json::Value, out: &mut Vec<(String, String)>) {
    match v {
        serde_json::Value::Object(m) => {
            for (k, v) in m {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten_json(&key, v, out);
            }
        }
        serde_json::Value::Array(a) if a.iter().any(|x| x.is_object()) => {
            for (i, v) in a.iter().enumerate() {
                flatten_json(&format!("{prefix}[{i}]"), v, out);
            }
        }
        serde_json::Value::String(s) => out.push((prefix.to_string(), s.clone())),
        other => out.push((prefix.to_string(), other.to_string())),
    }
}
