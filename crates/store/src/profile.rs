//! Profiles in the store (`run_profiles`): a [`Profile`]'s folded stacks, deflated, and
//! back.

use std::io::{Read, Write};

use pgsurge_results::profile::{folded_text, parse_folded, Profile, ProfileKind};

use crate::error::{Result, StoreError};
use crate::model::ProfileRecord;

/// The encoding [`encode`] writes.
pub const FOLDED_DEFLATE: &str = "folded-deflate";

/// The record of `profile`, its folded text deflated.
pub fn encode(profile: &Profile) -> ProfileRecord {
    let mut enc = flate2::write::DeflateEncoder::new(Vec::new(), flate2::Compression::best());
    // Writing into a Vec cannot fail.
    let _ = enc.write_all(folded_text(&profile.stacks).as_bytes());
    let data = enc.finish().unwrap_or_default();
    ProfileRecord {
        kind: profile.kind.name().to_string(),
        unit: profile.kind.unit().to_string(),
        frequency_hz: profile.frequency_hz.map(i64::from),
        total: i64::try_from(profile.total()).unwrap_or(i64::MAX),
        notes: (!profile.notes.is_empty()).then(|| profile.notes.join("\n")),
        encoding: FOLDED_DEFLATE.to_string(),
        data,
    }
}

/// The profile a record holds; `Err` for a kind or an encoding this build does not
/// know, or data that does not decode.
pub fn decode(record: &ProfileRecord) -> Result<Profile> {
    let bad = |why: String| StoreError::BadValue {
        column: "run_profiles.data".into(),
        message: format!("{}: {why}", record.kind),
    };
    let kind = ProfileKind::parse(&record.kind).ok_or_else(|| bad("unknown kind".into()))?;
    if record.encoding != FOLDED_DEFLATE {
        return Err(bad(format!("unknown encoding {}", record.encoding)));
    }
    let mut text = String::new();
    flate2::read::DeflateDecoder::new(record.data.as_slice())
        .read_to_string(&mut text)
        .map_err(|e| bad(e.to_string()))?;
    Ok(Profile {
        kind,
        frequency_hz: record.frequency_hz.and_then(|f| u32::try_from(f).ok()),
        stacks: parse_folded(&text).map_err(bad)?,
        notes: record
            .notes
            .as_deref()
            .map(|n| n.lines().map(str::to_string).collect())
            .unwrap_or_default(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_profile_round_trips() {
        let p = Profile {
            kind: ProfileKind::ServerCpu,
            frequency_hz: Some(499),
            stacks: parse_folded("postgres;main;f 3\npostgres;main 1\n").unwrap(),
            notes: vec!["a".into(), "b".into()],
        };
        let r = encode(&p);
        assert_eq!(r.total, 4);
        assert_eq!(decode(&r).unwrap(), p);
        let broken = ProfileRecord {
            data: vec![1, 2, 3],
            ..r
        };
        assert!(decode(&broken).is_err());
    }
}
