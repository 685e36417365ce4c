//! `workload.toml`, a pack's manifest: its types and the reading of the text, with
//! errors naming the file, the line and the key.

use std::collections::BTreeMap;

use serde::Deserialize;

use crate::error::WorkloadError;

/// The manifest of a pack.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    /// The pack's name (`tpcc`).
    pub name: String,
    /// One line saying what the workload is.
    pub description: String,
    /// What one unit of `-s` is (`warehouses`, `100,000 rows per table`).
    pub scale: String,
    /// A query returning the scale of a loaded database (one row, one integer), given
    /// to the scripts as `:scale`.
    pub scale_query: String,
    /// Script variables with their defaults; `-D NAME=VALUE` overrides them.
    #[serde(default)]
    pub parameters: BTreeMap<String, toml::Value>,
    /// How `-i` creates and fills the database.
    pub load: Load,
    /// How a run draws each transaction's script: `random` (pgbench's weighted draw,
    /// the default) or `deck` (a shuffled deck of `weight` cards per script per
    /// client); `--mix` overrides it.
    #[serde(default, deserialize_with = "mix_by_name")]
    pub mix: Mix,
    /// The transaction scripts, run with their weights.
    #[serde(default)]
    pub scripts: Vec<ScriptRef>,
    /// What is measured on the server around a run.
    #[serde(default)]
    pub metrics: Vec<Metric>,
    /// Consistency conditions (`pgsurge workload check`).
    #[serde(default)]
    pub checks: Vec<Check>,
}

/// The loader: SQL files run in order.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Load {
    /// Files run once, first (drop and create tables, functions).
    #[serde(default)]
    pub schema: Vec<String>,
    /// The data steps, in order.
    #[serde(default)]
    pub steps: Vec<LoadStep>,
    /// Files run once at the end (keys, indexes, analyze).
    #[serde(default)]
    pub finish: Vec<String>,
    /// About how many seconds one unit of scale takes to load on one connection, for
    /// the estimates of `pgsurge campaign plan` (default 1).
    #[serde(default)]
    pub seconds_per_unit: Option<f64>,
}

/// One data step.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LoadStep {
    /// The SQL file.
    pub file: String,
    /// `once` (the default), or `unit`: once per unit of scale, `:unit` = 1…scale,
    /// spread over the `--init-jobs` connections.
    #[serde(default)]
    pub per: Per,
}

/// How often a load step runs.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Per {
    /// Once.
    #[default]
    Once,
    /// Once per unit of scale.
    Unit,
}

/// How a run draws each transaction's script: the engine's type, read by its name.
pub use pgsurge_engine::Mix;

/// `mix = "random"` or `mix = "deck"`.
fn mix_by_name<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Mix, D::Error> {
    let name = String::deserialize(d)?;
    Mix::parse(&name).ok_or_else(|| {
        serde::de::Error::custom(format!(
            "unknown mix \"{name}\": expected \"random\" or \"deck\""
        ))
    })
}

/// The parameter that turns a pack's keying and think times on (`1`) or off (`0`).
pub const THINK_TIMES: &str = "think_times";

/// The parameter that multiplies a pack's keying and think times.
pub const THINK_SCALE: &str = "think_scale";

/// A transaction script and its weight.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ScriptRef {
    /// The pgbench script file.
    pub file: String,
    /// Its weight in the mix (as `-f FILE@WEIGHT`).
    #[serde(default = "one")]
    pub weight: u32,
    /// Its name in the report's lines (default: the file's name).
    #[serde(default)]
    pub name: Option<String>,
    /// A limit on its 90th percentile latency, in seconds (TPC-C's response time
    /// constraints): the report sets the run's 90th percentile against it.
    #[serde(default)]
    pub p90_limit_s: Option<f64>,
    /// The keying time before each of its transactions, in seconds, when the run's
    /// `think_times` parameter is 1 (not part of the latency).
    #[serde(default)]
    pub keying_s: Option<f64>,
    /// The mean think time after each of its transactions, in seconds (negative
    /// exponential, truncated at 10 times the mean), when `think_times` is 1.
    #[serde(default)]
    pub think_s: Option<f64>,
}

fn one() -> u32 {
    1
}

/// A number read on the server before and after a run (`query`), or one derived
/// from another metric of the pack (`of`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Metric {
    /// Its name in the report (`NOPM`).
    pub name: String,
    /// What it counts.
    #[serde(default)]
    pub description: String,
    /// A query returning one number; the metric is its change over the run. Empty for
    /// a derived metric.
    #[serde(default)]
    pub query: String,
    /// A derived metric: the value of the pack's metric of this name (one with a
    /// query), as a percentage of `ceiling_per_unit` times the scale (TPC-C's
    /// efficiency: tpmC over 12.86 per warehouse).
    #[serde(default)]
    pub of: Option<String>,
    /// The ceiling of the metric named by `of`, per unit of scale.
    #[serde(default)]
    pub ceiling_per_unit: Option<f64>,
    /// `minute` or `second`: the change divided by the run's duration; `run`: the
    /// change itself.
    #[serde(default)]
    pub per: MetricPer,
    /// The metric means something only in a run with the keying and think times on
    /// (`think_times = 1`): it is left out of the others (TPC-C's tpmC and efficiency).
    #[serde(default)]
    pub with_think_times: bool,
}

/// What a metric's change is divided by.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MetricPer {
    /// The change over the whole run.
    #[default]
    Run,
    /// Per second of run.
    Second,
    /// Per minute of run.
    Minute,
}

/// A consistency condition: a query returning the rows that violate it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Check {
    /// Its name (`3.3.2.1 W_YTD = sum(D_YTD)`).
    pub name: String,
    /// The query; the condition holds when it returns no row.
    pub query: String,
}

/// Reads a manifest's text; `file` names it in errors.
pub fn parse_manifest(file: &str, text: &str) -> Result<Manifest, WorkloadError> {
    let m: Manifest = toml::from_str(text).map_err(|e| WorkloadError::Manifest {
        file: file.to_string(),
        message: e.to_string().trim_end().to_string(),
    })?;
    validate(file, text, &m)?;
    Ok(m)
}

/// The 1-based line of the first `key = "value"` assignment in `text` whose value is
/// `value`, for errors about a value that parsed but is wrong.
pub(crate) fn line_of_value(text: &str, key: &str, value: &str) -> Option<usize> {
    text.lines()
        .position(|l| {
            let l = l.trim_start();
            l.contains(key) && l.contains(&format!("\"{value}\""))
        })
        .map(|i| i + 1)
}

fn invalid(file: &str, text: &str, key: &str, value: &str, why: String) -> WorkloadError {
    WorkloadError::Manifest {
        file: file.to_string(),
        message: match line_of_value(text, key, value) {
            Some(line) => format!("line {line}, key `{key}`: {why}"),
            None => format!("key `{key}`: {why}"),
        },
    }
}

/// The variables the loader sets itself (`:scale`, `:unit`): a parameter of the same
/// name (in the manifest or from `-D`) would change which rows a unit writes.
pub const LOADER_VARIABLES: [&str; 2] = ["scale", "unit"];

fn validate(file: &str, text: &str, m: &Manifest) -> Result<(), WorkloadError> {
    if m.name.is_empty()
        || !m
            .name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_".contains(c))
    {
        return Err(invalid(
            file,
            text,
            "name",
            &m.name,
            "a pack name is letters, digits, '-' and '_'".into(),
        ));
    }
    for (name, value) in &m.parameters {
        if !pgsurge_script::is_valid_variable_name(name) {
            return Err(WorkloadError::Manifest {
                file: file.to_string(),
                message: format!("key `parameters.{name}`: not a valid variable name"),
            });
        }
        if LOADER_VARIABLES.contains(&name.as_str()) {
            return Err(WorkloadError::Manifest {
                file: file.to_string(),
                message: format!(
                    "key `parameters.{name}`: the loader sets :{name} itself; a parameter \
                     cannot have its name"
                ),
            });
        }
        if !matches!(
            value,
            toml::Value::Integer(_) | toml::Value::Float(_) | toml::Value::String(_)
        ) {
            return Err(WorkloadError::Manifest {
                file: file.to_string(),
                message: format!("key `parameters.{name}`: a parameter is a number or a string"),
            });
        }
    }
    if m.scripts.is_empty() {
        return Err(WorkloadError::Manifest {
            file: file.to_string(),
            message: "key `scripts`: a pack needs at least one [[scripts]] entry".into(),
        });
    }
    for s in &m.scripts {
        if s.weight > 1000 {
            return Err(invalid(
                file,
                text,
                "file",
                &s.file,
                format!("weight {} is out of range 0–1000", s.weight),
            ));
        }
        if let Some(limit) = s.p90_limit_s {
            if !(limit.is_finite() && limit > 0.0) {
                return Err(invalid(
                    file,
                    text,
                    "file",
                    &s.file,
                    format!(
                        "script {}: p90_limit_s {limit} is not a positive number of seconds",
                        s.file
                    ),
                ));
            }
        }
    }
    for s in &m.scripts {
        for (key, v) in [("keying_s", s.keying_s), ("think_s", s.think_s)] {
            if let Some(v) = v {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(invalid(
                        file,
                        text,
                        "file",
                        &s.file,
                        format!("script {}: {key} {v} is not a number of seconds", s.file),
                    ));
                }
            }
        }
    }
    for metric in &m.metrics {
        let fail = |why: String| WorkloadError::Manifest {
            file: file.to_string(),
            message: match line_of_value(text, "name", &metric.name) {
                Some(line) => format!("line {line}, metric \"{}\": {why}", metric.name),
                None => format!("metric \"{}\": {why}", metric.name),
            },
        };
        match (&metric.of, metric.ceiling_per_unit) {
            (None, None) if metric.query.trim().is_empty() => {
                return Err(fail(
                    "a metric needs a `query` (or `of` and `ceiling_per_unit`)".into(),
                ));
            }
            (None, None) => {}
            (Some(of), Some(ceiling)) => {
                if !metric.query.is_empty() {
                    return Err(fail("a derived metric (`of`) has no `query`".into()));
                }
                if !(ceiling.is_finite() && ceiling > 0.0) {
                    return Err(fail(format!(
                        "ceiling_per_unit {ceiling} is not a positive number"
                    )));
                }
                let base = m.metrics.iter().find(|b| &b.name == of);
                if base.is_none_or(|b| b.of.is_some()) {
                    return Err(fail(format!(
                        "`of`: the pack has no metric \"{of}\" with a query"
                    )));
                }
            }
            _ => {
                return Err(fail("`of` and `ceiling_per_unit` go together".into()));
            }
        }
    }
    if m.scripts.iter().map(|s| u64::from(s.weight)).sum::<u64>() == 0 {
        return Err(WorkloadError::Manifest {
            file: file.to_string(),
            message: "key `scripts`: the total weight must not be zero".into(),
        });
    }
    Ok(())
}

/// The parameter's value as the text `-D NAME=VALUE` would give.
pub fn parameter_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const GOOD: &str = r#"
name = "t"
description = "d"
scale = "units"
scale_query = "select 1"
[load]
schema = ["s.sql"]
[[scripts]]
file = "a.sql"
weight = 3
"#;

    #[test]
    fn a_minimal_manifest_reads() {
        let m = parse_manifest("workload.toml", GOOD).unwrap();
        assert_eq!(m.scripts[0].weight, 3);
        assert_eq!(m.load.schema, ["s.sql"]);
    }

    #[test]
    fn a_wrong_type_names_file_line_and_key() {
        let text = GOOD.replace("weight = 3", "weight = \"x\"");
        let e = parse_manifest("p/workload.toml", &text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("p/workload.toml"), "{e}");
        assert!(e.contains("line 10"), "{e}");
        assert!(e.contains("weight"), "{e}");
    }

    #[test]
    fn an_unknown_key_is_refused_by_name() {
        let text = GOOD.replace("weight = 3", "wieght = 3");
        let e = parse_manifest("workload.toml", &text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("wieght"), "{e}");
        assert!(e.contains("line 10"), "{e}");
    }

    #[test]
    fn a_latency_limit_is_a_positive_number_of_seconds() {
        let m = parse_manifest(
            "workload.toml",
            &GOOD.replace("weight = 3", "weight = 3\nname = \"A\"\np90_limit_s = 5"),
        )
        .unwrap();
        assert_eq!(m.scripts[0].p90_limit_s, Some(5.0));
        assert_eq!(m.scripts[0].name.as_deref(), Some("A"));
        for bad in ["0", "-1", "nan"] {
            let text = GOOD.replace("weight = 3", &format!("weight = 3\np90_limit_s = {bad}"));
            let e = parse_manifest("workload.toml", &text)
                .unwrap_err()
                .to_string();
            assert!(
                e.contains("p90_limit_s") && e.contains("a.sql"),
                "{bad}: {e}"
            );
        }
    }

    #[test]
    fn mix_times_and_derived_metrics_are_read_and_checked() {
        let text = GOOD
            .replace(
                "scale_query = \"select 1\"",
                "scale_query = \"select 1\"\nmix = \"deck\"",
            )
            .replace("weight = 3", "weight = 3\nkeying_s = 18\nthink_s = 12.5");
        let metrics = "\n[[metrics]]\nname = \"n\"\nquery = \"select 1\"\nper = \"minute\"\n\
                       [[metrics]]\nname = \"e\"\nof = \"n\"\nceiling_per_unit = 12.86\n";
        let m = parse_manifest("workload.toml", &format!("{text}{metrics}")).unwrap();
        assert_eq!(m.mix, Mix::Deck);
        assert_eq!(m.scripts[0].keying_s, Some(18.0));
        assert_eq!(m.scripts[0].think_s, Some(12.5));
        assert_eq!(m.metrics[1].of.as_deref(), Some("n"));
        assert_eq!(
            parse_manifest("workload.toml", GOOD).unwrap().mix,
            Mix::Random
        );
        for (bad, why) in [
            (text.replace("deck", "cards"), "cards"),
            (text.replace("keying_s = 18", "keying_s = -1"), "keying_s"),
            (
                format!("{text}{}", metrics.replace("of = \"n\"", "of = \"x\"")),
                "no metric \"x\"",
            ),
            (
                format!("{text}{}", metrics.replace("ceiling_per_unit = 12.86", "")),
                "go together",
            ),
            (
                format!("{text}{}", metrics.replace("12.86", "0.0")),
                "ceiling_per_unit",
            ),
            (
                format!("{text}{}", metrics.replace("of = \"n\"", "of = \"e\"")),
                "with a query",
            ),
            (
                format!("{text}{}", metrics.replace("query = \"select 1\"\n", "")),
                "needs a `query`",
            ),
        ] {
            let e = parse_manifest("workload.toml", &bad)
                .unwrap_err()
                .to_string();
            assert!(e.contains(why), "{why}: {e}");
        }
    }

    #[test]
    fn a_bad_load_step_kind_is_refused() {
        let text = format!("{GOOD}\n[[load.steps]]\nfile = \"x.sql\"\nper = \"row\"\n");
        let e = parse_manifest("workload.toml", &text)
            .unwrap_err()
            .to_string();
        assert!(e.contains("per") || e.contains("row"), "{e}");
    }
}
