//! The bodies of the fuzz targets over campaign files (`fuzz/fuzz_targets/campaign.rs`
//! and `campaign_env.rs`),
//! kept in the library so inputs found by the fuzzer replay as ordinary tests
//! (`crates/records/tests/it/fuzz_replay.rs`).

use std::path::Path;

use crate::spec::Campaign;

/// Parses `data` as a campaign file (no environment), expands its matrix and derives
/// what a run stores. Must never panic.
#[doc(hidden)]
pub fn campaign_one(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let no_env = |_: &str| None;
    let Ok(campaign) =
        Campaign::parse_with_env(text, "fuzz.toml", Path::new("/nonexistent"), &no_env)
    else {
        return;
    };
    let _ = crate::matrix::expand(&campaign);
    let _ = campaign.identity_hash();
    let _ = campaign.limit();
    let _ = campaign.thresholds();
    let stored = crate::stored::stored_spec(&campaign);
    let _ = Campaign::parse_with_env(&stored, "stored.toml", Path::new("/nonexistent"), &no_env);
}

/// The environment `campaign_env_one` gives campaign files: a password in a conninfo,
/// a path with a space, a host, an empty value, and a value holding TOML and `${}`
/// syntax (taken as it is, never read again).
const FUZZ_ENV: &[(&str, &str)] = &[
    (
        "PGSURGE_TARGET",
        "host=db1 dbname=bench password=Fuzz-Env-Secret-7",
    ),
    ("PGSURGE_DIR", "/nonexistent/pgsurge fuzz"),
    ("PGSURGE_HOST", "gen1.example"),
    ("PGPORT", "5999"),
    ("EMPTY", ""),
    ("TRICKY", "\"}${PGSURGE_TARGET}$$\n'# x=]["),
];

fn fuzz_env(k: &str) -> Option<String> {
    FUZZ_ENV
        .iter()
        .find(|(name, _)| *name == k)
        .map(|(_, v)| v.to_string())
}

/// The secret of [`FUZZ_ENV`].
const FUZZ_SECRET: &str = "Fuzz-Env-Secret-7";

/// Loads `data` as a campaign file with the variables of [`FUZZ_ENV`] set, through the
/// loader's `${VAR}` interpolation. Must never panic; and what a campaign stores is
/// the file as written (no value from the environment gets into it), and the keys
/// that are not interpolated (hooks, names) come out exactly as written.
#[doc(hidden)]
pub fn campaign_env_one(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let env = fuzz_env;
    let Ok(campaign) = Campaign::parse_with_env(text, "fuzz.toml", Path::new("/nonexistent"), &env)
    else {
        return;
    };
    let _ = crate::matrix::expand(&campaign);
    let _ = campaign.identity_hash();
    let _ = campaign.limit();
    let _ = campaign.thresholds();
    let stored = crate::stored::stored_spec(&campaign);
    assert!(
        !stored.contains(FUZZ_SECRET) || text.contains(FUZZ_SECRET),
        "a value from the environment is in the stored campaign: {stored}"
    );
    if let Ok(raw) = toml::from_str::<toml::Value>(text) {
        let raw_str = |table: &str, key: &str| {
            raw.get(table)
                .and_then(|t| t.get(key))
                .and_then(|v| v.as_str())
                .map(str::to_string)
        };
        let hooks = &campaign.spec.hooks;
        for (name, parsed) in [
            ("set_start", &hooks.set_start),
            ("before_test", &hooks.before_test),
            ("after_test", &hooks.after_test),
        ] {
            assert_eq!(
                parsed.as_deref(),
                raw_str("hooks", name).as_deref(),
                "hooks.{name} is not as written"
            );
        }
        assert_eq!(
            Some(campaign.spec.campaign.name.as_str()),
            raw_str("campaign", "name").as_deref(),
            "campaign.name is not as written"
        );
    }
    let _ = Campaign::parse_with_env(&stored, "stored.toml", Path::new("/nonexistent"), &env);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The seeds of `campaign_env` reach its checks: most of them load.
    #[test]
    fn the_env_seeds_load_through_the_interpolation() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/seeds/campaign_env");
        let (mut seeds, mut loaded) = (0, 0);
        for e in std::fs::read_dir(&dir).unwrap() {
            let text = std::fs::read_to_string(e.unwrap().path()).unwrap();
            seeds += 1;
            let parsed =
                Campaign::parse_with_env(&text, "seed.toml", Path::new("/nonexistent"), &fuzz_env);
            if let Ok(c) = parsed {
                loaded += 1;
                assert!(!crate::stored::stored_spec(&c).contains(FUZZ_SECRET));
            }
            campaign_env_one(text.as_bytes());
        }
        assert!(seeds >= 4 && loaded >= 3, "{loaded} of {seeds} seeds load");
    }
}
