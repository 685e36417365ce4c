//! The connection keywords libpq accepts and their environment variables, and the
//! raw keyword → value settings that conninfo strings, URIs and service files give.

use std::collections::BTreeMap;

/// Keywords libpq accepts, with their environment variable (if any).
/// Unknown keywords are an error, as in libpq.
pub(crate) const KEYWORDS: &[(&str, Option<&str>)] = &[
    ("service", Some("PGSERVICE")),
    ("servicefile", None),
    ("user", Some("PGUSER")),
    ("password", Some("PGPASSWORD")),
    ("passfile", Some("PGPASSFILE")),
    ("channel_binding", Some("PGCHANNELBINDING")),
    ("connect_timeout", Some("PGCONNECT_TIMEOUT")),
    ("dbname", Some("PGDATABASE")),
    ("host", Some("PGHOST")),
    ("hostaddr", Some("PGHOSTADDR")),
    ("port", Some("PGPORT")),
    ("client_encoding", Some("PGCLIENTENCODING")),
    ("options", Some("PGOPTIONS")),
    ("application_name", Some("PGAPPNAME")),
    ("fallback_application_name", None),
    ("keepalives", None),
    ("keepalives_idle", None),
    ("keepalives_interval", None),
    ("keepalives_count", None),
    ("tcp_user_timeout", None),
    ("sslmode", Some("PGSSLMODE")),
    ("sslnegotiation", Some("PGSSLNEGOTIATION")),
    ("sslcompression", Some("PGSSLCOMPRESSION")),
    ("sslcert", Some("PGSSLCERT")),
    ("sslkey", Some("PGSSLKEY")),
    ("sslcertmode", Some("PGSSLCERTMODE")),
    ("sslpassword", None),
    ("sslrootcert", Some("PGSSLROOTCERT")),
    ("sslcrl", Some("PGSSLCRL")),
    ("sslcrldir", Some("PGSSLCRLDIR")),
    ("sslsni", Some("PGSSLSNI")),
    ("sslkeylogfile", None),
    ("requirepeer", Some("PGREQUIREPEER")),
    ("require_auth", Some("PGREQUIREAUTH")),
    ("ssl_min_protocol_version", Some("PGSSLMINPROTOCOLVERSION")),
    ("ssl_max_protocol_version", Some("PGSSLMAXPROTOCOLVERSION")),
    ("min_protocol_version", Some("PGMINPROTOCOLVERSION")),
    ("max_protocol_version", Some("PGMAXPROTOCOLVERSION")),
    ("gssencmode", Some("PGGSSENCMODE")),
    ("krbsrvname", Some("PGKRBSRVNAME")),
    ("gsslib", Some("PGGSSLIB")),
    ("gssdelegation", Some("PGGSSDELEGATION")),
    ("replication", None),
    ("target_session_attrs", Some("PGTARGETSESSIONATTRS")),
    ("load_balance_hosts", Some("PGLOADBALANCEHOSTS")),
    ("requiressl", Some("PGREQUIRESSL")),
    ("scram_client_key", None),
    ("scram_server_key", None),
    ("oauth_issuer", None),
    ("oauth_client_id", None),
    ("oauth_client_secret", None),
    ("oauth_scope", None),
];

/// Whether `k` is a keyword libpq accepts.
pub(crate) fn is_keyword(k: &str) -> bool {
    KEYWORDS.iter().any(|(kw, _)| *kw == k)
}

/// Raw keyword → value settings, before defaults (one `PQconninfoOption` array).
pub(crate) type Settings = BTreeMap<String, String>;
