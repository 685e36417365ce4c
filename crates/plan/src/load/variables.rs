//! `${VAR}` references in a campaign file: the keys that take them
//! ([`INTERPOLATED_KEYS`]) and their replacement in one value and in a parsed file.

use std::path::PathBuf;

use crate::spec::{CampaignSpec, ScriptSpec};

/// The keys whose string values take `${VAR}` references: where a server, a host or a
/// file is (see docs/campaign-reference.md). Every other key, hook commands included,
/// is taken as written: a hook's `${PGPORT}` is for its shell, which runs with the
/// test's environment.
pub const INTERPOLATED_KEYS: &[&str] = &[
    "target.conninfo",
    "target.node_exporter",
    "target.node_exporter_ca",
    "target.pg_bin",
    "target.source",
    "target.ref",
    "target.patches",
    "target.data_dir",
    "matrix.scripts.file",
    "distributed.hosts",
    "distributed.ssh_options",
    "distributed.ssh_config",
    "distributed.remote_pgsurge",
    "distributed.kube.store",
    "distributed.kube.host",
    "distributed.kube.kubectl",
];

/// Replaces `${VAR}` and `${VAR:-default}` in one value (`$$` is a literal `$`; a `$`
/// before anything else is kept). A variable that is unset, with no default, is an
/// error naming it. Values taken from the environment are not read again.
pub fn interpolate(text: &str, env: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(r) = after.strip_prefix('$') {
            out.push('$');
            rest = r;
            continue;
        }
        let Some(body) = after.strip_prefix('{') else {
            out.push('$');
            rest = after;
            continue;
        };
        let end = body
            .find('}')
            .ok_or_else(|| "\"${\" without a closing \"}\"".to_string())?;
        let inner = &body[..end];
        let (name, default) = match inner.split_once(":-") {
            Some((n, d)) => (n, Some(d)),
            None => (inner, None),
        };
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "\"${{{inner}}}\" is not a variable reference (use ${{NAME}} or ${{NAME:-default}})"
            ));
        }
        // As in the shell, `:-` also replaces a variable set to the empty string.
        let value = env(name).filter(|v| default.is_none() || !v.is_empty());
        match value.or_else(|| default.map(str::to_string)) {
            Some(v) => out.push_str(&v),
            None => {
                return Err(format!(
                    "environment variable {name} is not set (set it, or write ${{{name}:-default}})"
                ))
            }
        }
        rest = &body[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Interpolates the [`INTERPOLATED_KEYS`] of a parsed spec; an error is (key, message).
pub(super) fn interpolate_spec(
    spec: &mut CampaignSpec,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<(), (String, String)> {
    let text = |key: String, v: &mut String| -> Result<(), (String, String)> {
        *v = interpolate(v, env).map_err(|m| (key, m))?;
        Ok(())
    };
    let path = |key: String, v: &mut PathBuf| -> Result<(), (String, String)> {
        let Some(s) = v.to_str() else {
            return Ok(());
        };
        *v = PathBuf::from(interpolate(s, env).map_err(|m| (key, m))?);
        Ok(())
    };
    for (i, t) in spec.targets.iter_mut().enumerate() {
        if let Some(v) = &mut t.conninfo {
            text(format!("target[{i}].conninfo"), v)?;
        }
        if let Some(v) = &mut t.node_exporter {
            text(format!("target[{i}].node_exporter"), v)?;
        }
        if let Some(v) = &mut t.node_exporter_ca {
            path(format!("target[{i}].node_exporter_ca"), v)?;
        }
        if let Some(v) = &mut t.pg_bin {
            path(format!("target[{i}].pg_bin"), v)?;
        }
        if let Some(v) = &mut t.source {
            path(format!("target[{i}].source"), v)?;
        }
        if let Some(v) = &mut t.git_ref {
            text(format!("target[{i}].ref"), v)?;
        }
        for (j, v) in t.patches.iter_mut().enumerate() {
            path(format!("target[{i}].patches[{j}]"), v)?;
        }
        if let Some(v) = &mut t.data_dir {
            path(format!("target[{i}].data_dir"), v)?;
        }
    }
    for (i, script) in spec.matrix.scripts.iter_mut().enumerate() {
        match script {
            ScriptSpec::Builtin(_) => {}
            ScriptSpec::Part(p) => {
                if let Some(f) = &mut p.file {
                    path(format!("matrix.scripts[{i}].file"), f)?;
                }
            }
            ScriptSpec::Mix { mix, .. } => {
                for (j, p) in mix.iter_mut().enumerate() {
                    if let Some(f) = &mut p.file {
                        path(format!("matrix.scripts[{i}].mix[{j}].file"), f)?;
                    }
                }
            }
        }
    }
    if let Some(d) = &mut spec.distributed {
        for (i, h) in d.hosts.iter_mut().enumerate() {
            text(format!("distributed.hosts[{i}]"), h)?;
        }
        for (i, o) in d.ssh_options.iter_mut().enumerate() {
            text(format!("distributed.ssh_options[{i}]"), o)?;
        }
        if let Some(v) = &mut d.ssh_config {
            path("distributed.ssh_config".into(), v)?;
        }
        if let Some(v) = &mut d.remote_pgsurge {
            text("distributed.remote_pgsurge".into(), v)?;
        }
        if let Some(k) = &mut d.kube {
            for (key, v) in [
                ("store", &mut k.store),
                ("host", &mut k.host),
                ("kubectl", &mut k.kubectl),
            ] {
                if let Some(v) = v {
                    text(format!("distributed.kube.{key}"), v)?;
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod interpolation_tests {
    use std::path::Path;

    use super::*;
    use crate::spec::Campaign;

    fn env(k: &str) -> Option<String> {
        match k {
            "PGSURGE_TARGET" => Some("host=db1 dbname=bench".into()),
            "EMPTY" => Some(String::new()),
            "PGPORT" => Some("5999".into()),
            "PGDATABASE" => Some("launching_shell_db".into()),
            "GEN" => Some("gen7".into()),
            "STORE_HOST" => Some("results-db".into()),
            _ => None,
        }
    }

    #[test]
    fn variables_and_defaults_are_replaced() {
        assert_eq!(
            interpolate("${PGSURGE_TARGET} port=1", &env).unwrap(),
            "host=db1 dbname=bench port=1"
        );
        assert_eq!(interpolate("${PGSURGE_NODE_EXPORTER:-}", &env).unwrap(), "");
        assert_eq!(
            interpolate("${X:-http://h:9100}", &env).unwrap(),
            "http://h:9100"
        );
        assert_eq!(
            interpolate("$$HOME ${EMPTY:-x} $1 a$", &env).unwrap(),
            "$HOME x $1 a$"
        );
    }

    #[test]
    fn a_missing_variable_is_a_clear_error() {
        assert_eq!(
            interpolate("${NOPE}", &env).unwrap_err(),
            "environment variable NOPE is not set (set it, or write ${NOPE:-default})"
        );
        assert!(interpolate("${NOPE", &env).unwrap_err().contains("closing"));
        assert!(interpolate("${A B}", &env)
            .unwrap_err()
            .contains("not a variable"));
    }

    const HOOKED: &str = r#"[campaign]
name = "r"
description = "for ${PGDATABASE}"
[[target]]
name = "t"
conninfo = "${PGSURGE_TARGET} port=${PGPORT}"
node_exporter = "${PGSURGE_NODE_EXPORTER:-}"
[matrix]
scales = [1]
clients = [1]
scripts = [{ name = "m", mix = [{ builtin = "select-only" }, { file = "${SCRIPTS}/lib.rs" }] }]
[run.defines]
where = "${PGDATABASE}"
[hooks]
before_test = "psql -p ${PGPORT} -d ${PGDATABASE} -c 'TRUNCATE t'; echo $$ ${PGSURGE_TEST_KEY}"
after_test = "echo ${NOT_SET_ANYWHERE}"
"#;

    #[test]
    fn only_the_documented_keys_are_interpolated() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let env_here = |k: &str| match k {
            "SCRIPTS" => Some(dir.join("src").display().to_string()),
            other => env(other),
        };
        let c = Campaign::parse_with_env(HOOKED, "r.toml", dir, &env_here)
            .unwrap_or_else(|e| panic!("{e}"));
        let t = &c.spec.targets[0];
        assert_eq!(
            t.conninfo.as_deref(),
            Some("host=db1 dbname=bench port=5999")
        );
        assert_eq!(t.node_exporter_url(), None);
        let ScriptSpec::Mix { mix, .. } = &c.spec.matrix.scripts[0] else {
            panic!("{:?}", c.spec.matrix.scripts)
        };
        assert_eq!(
            mix[1].file.as_deref(),
            Some(dir.join("src/lib.rs").as_path())
        );
        // Hooks are for the shell, which runs with the test's PGPORT and PGDATABASE;
        // `$$` and unset names stay as written.
        assert_eq!(
            c.spec.hooks.before_test.as_deref(),
            Some("psql -p ${PGPORT} -d ${PGDATABASE} -c 'TRUNCATE t'; echo $$ ${PGSURGE_TEST_KEY}")
        );
        assert_eq!(
            c.spec.hooks.after_test.as_deref(),
            Some("echo ${NOT_SET_ANYWHERE}")
        );
        assert_eq!(
            c.spec.campaign.description.as_deref(),
            Some("for ${PGDATABASE}")
        );
        assert_eq!(
            c.spec.run.defines.get("where"),
            Some(&toml::Value::String("${PGDATABASE}".into()))
        );
    }

    #[test]
    fn distributed_hosts_and_paths_are_interpolated() {
        let text = "[campaign]\nname = \"d\"\n[[target]]\nname = \"t\"\nconninfo = \"host=db1\"\n[matrix]\nscales = [1]\nclients = [2]\n[distributed]\nlauncher = \"ssh\"\nhosts = [\"${GEN}\", \"bench@${GEN}\"]\nssh_options = [\"IdentityFile=${KEYS:-/k}/id\"]\nremote_pgsurge = \"${BIN:-/usr/bin}/pgsurge\"\n";
        let c = Campaign::parse_with_env(text, "d.toml", Path::new("."), &env).unwrap();
        let d = c.spec.distributed.as_ref().unwrap();
        assert_eq!(d.hosts, ["gen7", "bench@gen7"]);
        assert_eq!(d.ssh_options, ["IdentityFile=/k/id"]);
        assert_eq!(d.remote_pgsurge.as_deref(), Some("/usr/bin/pgsurge"));
        let e = Campaign::parse_with_env(
            &text.replace("${GEN}\", \"bench", "${NOPE}\", \"bench"),
            "d.toml",
            Path::new("."),
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("distributed.hosts[0]") && e.contains("NOPE is not set"),
            "{e}"
        );
    }

    #[test]
    fn the_reference_lists_every_interpolated_key() {
        let doc = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/campaign-reference.md"),
        )
        .unwrap();
        let start = doc.find("### Environment variables").unwrap();
        let end = start + doc[start..].find("\n### ").unwrap();
        for key in INTERPOLATED_KEYS {
            let last = key.rsplit('.').next().unwrap();
            assert!(doc[start..end].contains(&format!("`{last}`")), "{key}");
        }
    }

    #[test]
    fn the_node_exporter_ca_is_interpolated_and_beside_the_campaign_file() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR"));
        let text = "[campaign]\nname = \"r\"\n[[target]]\nname = \"t\"\nconninfo = \"${PGSURGE_TARGET}\"\nnode_exporter = \"https://ne:${NE_PW:-pw}@db1:9100/metrics\"\nnode_exporter_ca = \"${CA_DIR:-src}/lib.rs\"\n[matrix]\nscales = [1]\nclients = [1]\n";
        let c =
            Campaign::parse_with_env(text, "r.toml", dir, &env).unwrap_or_else(|e| panic!("{e}"));
        let t = &c.spec.targets[0];
        assert_eq!(
            t.node_exporter_ca.as_deref(),
            Some(dir.join("src/lib.rs").as_path())
        );
        assert_eq!(
            t.node_exporter_url(),
            Some("https://ne:pw@db1:9100/metrics")
        );
        let e = Campaign::parse_with_env(&text.replace("lib.rs", "nope.pem"), "r.toml", dir, &env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("node_exporter_ca") && e.contains("nope.pem"),
            "{e}"
        );
        let e = Campaign::parse_with_env(
            &text.replace("https://ne:${NE_PW:-pw}@", "ftp://ne:hidden@"),
            "r.toml",
            dir,
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("https://") && !e.contains("hidden"), "{e}");
    }

    #[test]
    fn a_reference_outside_a_string_is_a_toml_error_with_a_hint() {
        let text = "[campaign]\nname = \"n\"\n[[target]]\nname = \"t\"\n[matrix]\nscales = [1]\nclients = [${CLIENTS}]\n";
        let e = Campaign::parse_with_env(text, "n.toml", Path::new("."), &env)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("n.toml") && e.contains("never in numbers"),
            "{e}"
        );
    }

    #[test]
    fn the_stored_text_keeps_the_references() {
        let text = "[campaign]\nname = \"r\"\n[[target]]\nname = \"t\"\nconninfo = \"${PGSURGE_TARGET}\"\nnode_exporter = \"${PGSURGE_NODE_EXPORTER:-}\"\n[matrix]\nscales = [1]\nclients = [1]\n";
        let c = Campaign::parse_with_env(text, "r.toml", Path::new("."), &env).unwrap();
        assert_eq!(
            c.spec.targets[0].conninfo.as_deref(),
            Some("host=db1 dbname=bench")
        );
        assert_eq!(c.spec.targets[0].node_exporter_url(), None);
        assert_eq!(c.text, text);
        let e = Campaign::parse_with_env(
            &text.replace("PGSURGE_TARGET", "UNSET_X"),
            "r.toml",
            Path::new("."),
            &env,
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("r.toml")
                && e.contains("target[0].conninfo")
                && e.contains("UNSET_X is not set"),
            "{e}"
        );
    }
}
