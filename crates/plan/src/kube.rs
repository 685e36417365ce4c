//! `[distributed.kube]` checked against the rest of a campaign file (image, names,
//! quantities, secrets, where the pods reach the database and the store), and where the
//! pods connect. A password is never accepted where it would be written into a Job:
//! the database password is only ever a `secretKeyRef`.

use pgsurge_kube::job;
use pgsurge_wire::{ConnConfig, HostKind};

use crate::spec::{Campaign, DistributedSection, KubeSection, Limit, ScriptSpec};

/// Where the pods connect: `PGHOST`, `PGPORT`, `PGUSER`, `PGDATABASE` of the container.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PodDatabase {
    /// Host(s), comma-separated as libpq takes them.
    pub host: String,
    /// Port(s), one per host.
    pub port: String,
    /// User.
    pub user: String,
    /// Database.
    pub dbname: String,
}

/// Checks `[distributed.kube]` against the rest of the campaign; the error is the key
/// and what is wrong.
pub fn validate(
    c: &Campaign,
    d: &DistributedSection,
    k: &KubeSection,
) -> std::result::Result<(), (String, String)> {
    let bad = |key: &str, m: String| Err((format!("distributed.kube.{key}"), m));
    if k.image.trim().is_empty() || k.image.chars().any(char::is_whitespace) {
        return bad(
            "image",
            format!(
                "\"{}\" is not an image reference (such as registry.example/pgsurge:0.1.0)",
                k.image
            ),
        );
    }
    if d.start_in == 0 {
        return Err((
            "distributed.start_in".into(),
            "the pods need time to be scheduled, pull the image and connect before the \
             common start: give at least 1 second (60 or more on a real cluster)"
                .into(),
        ));
    }
    if let Some(ns) = k.namespace.as_deref().filter(|n| !job::is_dns_label(n, 63)) {
        return bad(
            "namespace",
            format!(
                "\"{ns}\" is not a namespace name: lower-case letters, digits and '-', \
                 starting and ending with a letter or digit, at most 63 characters"
            ),
        );
    }
    for (key, v) in [("context", &k.context), ("kubectl", &k.kubectl)] {
        if v.as_deref().is_some_and(|v| v.trim().is_empty()) {
            return bad(key, "must not be empty".into());
        }
    }
    match (&k.secret, &k.secret_key) {
        (None, Some(_)) => return bad("secret_key", "needs secret (the Secret's name)".into()),
        (Some(s), _) if !job::is_dns_subdomain(s) => {
            return bad(
                "secret",
                format!(
                    "\"{s}\" is not a Secret name: lower-case letters, digits, '-' and '.', \
                     starting and ending with a letter or digit, at most 253 characters"
                ),
            )
        }
        _ => {}
    }
    if let Some(key) = &k.secret_key {
        let ok = |ch: char| ch.is_ascii_alphanumeric() || "-._".contains(ch);
        if key.is_empty() || key.len() > 253 || !key.chars().all(ok) {
            return bad(
                "secret_key",
                format!("\"{key}\" is not a Secret key: letters, digits, '-', '_' and '.'"),
            );
        }
    }
    for (key, q) in [("cpu", &k.cpu), ("memory", &k.memory)] {
        if let Some(q) = q.as_deref().filter(|q| !job::is_quantity(q)) {
            return bad(
                key,
                format!("\"{q}\" is not a Kubernetes quantity (such as 2, 500m, 512Mi, 2Gi)"),
            );
        }
    }
    if let Some(s) = k
        .spread
        .as_deref()
        .filter(|s| !["soft", "hard"].contains(s))
    {
        return bad("spread", format!("\"{s}\" is not a spread (soft, hard)"));
    }
    if let Some(store) = &k.store {
        check_pod_store(store).or_else(|m| bad("store", m))?;
    }
    for (key, v) in [("host", &k.host), ("user", &k.user), ("dbname", &k.dbname)] {
        match v.as_deref() {
            Some(v) if v.trim().is_empty() => return bad(key, "must not be empty".into()),
            Some(v) if !pgsurge_wire::redact::passwords(v).is_empty() => {
                return bad(key, password_refused("it"));
            }
            _ => {}
        }
    }
    if k.port == Some(0) {
        return bad("port", "must be a port number (1 to 65535)".into());
    }
    for (name, value) in &k.env {
        job::check_env(&format!("{name}={value}")).or_else(|e| {
            // The kube error names the option of `kube job`; say the campaign key.
            bad(&format!("env.{name}"), e.to_string().replace("--env ", ""))
        })?;
        if !pgsurge_wire::redact::passwords(value).is_empty() {
            return bad(&format!("env.{name}"), password_refused("the value"));
        }
    }
    if k.wait_timeout == Some(0) {
        return bad("wait_timeout", "must be more than 0 seconds".into());
    }
    if matches!(c.limit(), Limit::Transactions(_)) && k.wait_timeout.is_none() {
        return bad(
            "wait_timeout",
            "the tests run a number of transactions, so how long they take is not known: \
             give wait_timeout (seconds from applying a test's Job to giving up on its results)"
                .into(),
        );
    }
    if let Some(f) = script_files(c).first() {
        return Err((
            "matrix.scripts".into(),
            format!(
                "script file {}: the pods cannot read files of this machine; launcher = \
                 \"kube\" runs built-in scripts only",
                f.display()
            ),
        ));
    }
    for t in &c.spec.targets {
        if k.host.is_some() {
            break;
        }
        let reach = match &t.conninfo {
            None => Err(format!(
                "target \"{}\" is a throwaway server, which listens on a Unix socket and \
                 127.0.0.1 only: pods cannot reach it. Use a target with conninfo, or give \
                 [distributed.kube] host (and port) at which the pods reach it",
                t.name
            )),
            // No environment at parse time: a conninfo that names no host is refused
            // rather than judged by this shell's PGHOST, which the pods do not have.
            Some(ci) => pod_database(k, ci, &|_| None)
                .map(|_| ())
                .map_err(|e| format!("target \"{}\": {e}", t.name)),
        };
        reach.or_else(|m| bad("host", m))?;
    }
    Ok(())
}

fn password_refused(what: &str) -> String {
    format!(
        "{what} contains a password, which would be written into the Job: keep the \
         password in a Secret and name it with [distributed.kube] secret"
    )
}

/// The script files of the matrix (the pods have only the image's files).
fn script_files(c: &Campaign) -> Vec<std::path::PathBuf> {
    let mut out = Vec::new();
    for s in &c.spec.matrix.scripts {
        match s {
            ScriptSpec::Builtin(_) => {}
            ScriptSpec::Mix { mix, .. } => out.extend(mix.iter().filter_map(|p| p.file.clone())),
            ScriptSpec::Part(p) => out.extend(p.file.clone()),
        }
    }
    out
}

/// Checks a store location the pods are to write to: PostgreSQL, no password, and a
/// host, port and database of its own — a piece it leaves out would come from the
/// pods' `PGHOST`, `PGPORT` or `PGDATABASE`, which point at the benchmarked server.
pub fn check_pod_store(location: &str) -> std::result::Result<(), String> {
    let shown = pgsurge_store::redact_location(location);
    if !pgsurge_store::is_postgres_location(location) {
        return Err(format!(
            "{shown} is not a PostgreSQL store (postgresql://… or host=… dbname=…): the pods \
             write their results over the network"
        ));
    }
    if !pgsurge_wire::redact::passwords(location).is_empty() {
        return Err(format!(
            "{shown} contains a password, which would be written into the Job: leave it out; \
             the pods authenticate to the store with the PGPASSWORD of [distributed.kube] \
             secret (the same Secret as the database), or a .pgpass in the image"
        ));
    }
    let probe = |name: &str| match name {
        "PGHOST" => Some("pgsurge-probe.invalid".to_string()),
        "PGPORT" => Some("1".to_string()),
        "PGDATABASE" => Some("pgsurge_probe".to_string()),
        _ => None,
    };
    let parsed = |env: &dyn Fn(&str) -> Option<String>| {
        ConnConfig::parse_with_env(location, &env)
            .map(|c| (c.hosts().to_vec(), c.dbname().to_string()))
            .map_err(|e| format!("{shown}: {e}"))
    };
    if parsed(&|_| None)? != parsed(&probe)? {
        return Err(format!(
            "{shown} does not name its host, port and database: the pods would take what is \
             missing from their PGHOST, PGPORT and PGDATABASE, the benchmarked database's \
             (write e.g. postgresql://bench@results-db:5432/pgsurge)"
        ));
    }
    Ok(())
}

/// The store the pods write to: `[distributed.kube] store`, else the campaign's own
/// store when it is a PostgreSQL one that is not on this machine only.
pub fn pod_store(k: &KubeSection, campaign_store: &str) -> std::result::Result<String, String> {
    if let Some(s) = &k.store {
        check_pod_store(s).map_err(|m| format!("[distributed.kube] store: {m}"))?;
        return Ok(s.clone());
    }
    let shown = pgsurge_store::redact_location(campaign_store);
    if !pgsurge_store::is_postgres_location(campaign_store) {
        return Err(format!(
            "the campaign's results store {shown} is a SQLite file, which the pods cannot \
             write to: give [distributed.kube] store = a PostgreSQL store the pods reach \
             (e.g. postgresql://bench@results-db/pgsurge), or run the campaign with --store \
             on one"
        ));
    }
    check_pod_store(campaign_store)
        .map_err(|m| format!("the campaign's results store (--store): {m}"))?;
    let cfg = ConnConfig::parse_with_env(campaign_store, &|_| None)
        .map_err(|e| format!("{shown}: {e}"))?;
    if let Some(h) = cfg.hosts().iter().find(|h| is_local_host(h)) {
        return Err(format!(
            "the campaign's results store {shown} is reached at {} on this machine, which \
             the pods cannot reach: give [distributed.kube] store = the same store as the \
             pods reach it",
            h.display_host()
        ));
    }
    Ok(campaign_store.to_string())
}

fn is_local_host(h: &pgsurge_wire::HostSpec) -> bool {
    let addr = h.hostaddr.as_deref().unwrap_or(&h.host);
    h.kind == HostKind::UnixSocket
        || addr == "localhost"
        || addr == "::1"
        || addr.starts_with("127.")
}

/// Where the pods connect: `[distributed.kube]` host, port, user and dbname, the rest
/// from the target's conninfo (read with `env` for its PG* defaults).
pub fn pod_database(
    k: &KubeSection,
    conninfo: &str,
    env: &dyn Fn(&str) -> Option<String>,
) -> std::result::Result<PodDatabase, String> {
    let cfg = ConnConfig::parse_with_env(conninfo, &env).map_err(|e| {
        format!(
            "conninfo \"{}\": {e}",
            pgsurge_wire::redact::redact(conninfo)
        )
    })?;
    let host = match &k.host {
        Some(h) => h.clone(),
        None => {
            if let Some(h) = cfg.hosts().iter().find(|h| is_local_host(h)) {
                return Err(format!(
                    "the server is reached at {} (a Unix socket or this machine's loopback), \
                     which pods cannot reach: give [distributed.kube] host = the server's \
                     address as the pods see it (and port, user, dbname where they differ)",
                    h.display_host()
                ));
            }
            let hosts: Vec<&str> = cfg.hosts().iter().map(|h| h.display_host()).collect();
            hosts.join(",")
        }
    };
    let port = match k.port {
        Some(p) => p.to_string(),
        None => {
            let ports: Vec<String> = cfg.hosts().iter().map(|h| h.port.to_string()).collect();
            if ports.is_empty() {
                cfg.port()
            } else {
                ports.join(",")
            }
        }
    };
    Ok(PodDatabase {
        host,
        port,
        user: k.user.clone().unwrap_or_else(|| cfg.user().to_string()),
        dbname: k.dbname.clone().unwrap_or_else(|| cfg.dbname().to_string()),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section() -> KubeSection {
        KubeSection {
            image: "pgsurge:test".into(),
            ..Default::default()
        }
    }

    #[test]
    fn the_pods_database_comes_from_the_target_or_the_overrides() {
        let k = section();
        let env = |_: &str| None;
        let db = pod_database(&k, "host=db.internal port=6432 user=bench dbname=pgb", &env)
            .expect("a remote host");
        assert_eq!(
            db,
            PodDatabase {
                host: "db.internal".into(),
                port: "6432".into(),
                user: "bench".into(),
                dbname: "pgb".into()
            }
        );
        let db =
            pod_database(&k, "postgresql://bench@db1:5433,db2:5434/pgb", &env).expect("two hosts");
        assert_eq!(
            (db.host.as_str(), db.port.as_str()),
            ("db1,db2", "5433,5434")
        );
        for local in [
            "host=/tmp/sock port=5432 dbname=x",
            "host=localhost dbname=x",
            "host=127.0.0.1 dbname=x",
            "dbname=x",
        ] {
            let e = pod_database(&k, local, &env).expect_err(local);
            assert!(e.contains("which pods cannot reach"), "{e}");
            assert!(e.contains("[distributed.kube] host"), "{e}");
        }
        let k = KubeSection {
            host: Some("10.0.0.5".into()),
            port: Some(5999),
            user: Some("gen".into()),
            ..section()
        };
        let db = pod_database(&k, "host=/tmp/sock port=5432 user=postgres dbname=x", &env)
            .expect("host given");
        assert_eq!(
            db,
            PodDatabase {
                host: "10.0.0.5".into(),
                port: "5999".into(),
                user: "gen".into(),
                dbname: "x".into()
            }
        );
    }

    #[test]
    fn the_pods_store_is_postgres_reachable_and_without_password() {
        let k = section();
        let remote = "postgresql://bench@results-db:5432/pgsurge";
        assert_eq!(pod_store(&k, remote), Ok(remote.to_string()));
        let e = pod_store(&k, "/var/lib/pgsurge/results.db").unwrap_err();
        assert!(
            e.contains("is a SQLite file") && e.contains("store ="),
            "{e}"
        );
        let e = pod_store(&k, "host=/tmp/sock port=5432 dbname=results").unwrap_err();
        assert!(e.contains("which the pods cannot reach"), "{e}");
        let e = pod_store(&k, "postgresql://bench:Secret-1@results-db:5432/pgsurge").unwrap_err();
        assert!(
            e.contains("contains a password") && !e.contains("Secret-1"),
            "{e}"
        );
        // A location that leaves out its host, port or database would borrow the pods'.
        for partial in [
            "postgresql://bench@results-db/",
            "postgresql:///pgsurge",
            "host=results-db dbname=pgsurge",
        ] {
            let e = check_pod_store(partial).expect_err(partial);
            assert!(
                e.contains("does not name its host, port and database"),
                "{e}"
            );
        }
        // An explicit store is the user's word, even on this machine.
        let k = KubeSection {
            store: Some("host=127.0.0.1 port=5432 dbname=results".into()),
            ..section()
        };
        assert_eq!(
            pod_store(&k, "results.db").as_deref(),
            Ok("host=127.0.0.1 port=5432 dbname=results")
        );
    }
}
