//! The inputs a campaign file names besides its own text — script files, workload
//! packs, and for a target built from source its commit, patches and build — each
//! with a digest of its bytes (or the commit id), and the choice of the set a run goes
//! to by them.
//!
//! A set's identity is the campaign file's ([`Campaign::identity_hash`]) together with
//! its inputs: every stored test records the inputs it ran with (the run fact
//! [`facts::CAMPAIGN_INPUTS`]). A run resumes the newest set of the campaign whose tests
//! ran with the same bytes for every input both name; an input the set does not know
//! yet (a script added to the matrix) extends it. When an input changed, a new set is
//! started and the change is named.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use pgsurge_store::{facts, FactRecord, Store};
use sha2::{Digest, Sha256};

use crate::error::{CampaignError, Result};
use crate::matrix::{Matrix, ScriptSource};
use crate::spec::Campaign;

/// Input (`script q.sql`, `workload ./kv`, `target "pg" commit`) → its digest or
/// commit id.
pub type Inputs = BTreeMap<String, String>;

/// The size above which an input file is refused rather than read.
const MAX_INPUT_BYTES: u64 = 64 << 20;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// SHA-256 of a file's bytes; a file that is not a regular file, or is larger than
/// any script, is refused.
fn file_digest(path: &Path) -> Result<String> {
    let fail = |why: String| CampaignError::Other(format!("{}: {why}", path.display()));
    let meta = std::fs::metadata(path).map_err(|e| fail(e.to_string()))?;
    if !meta.is_file() {
        return Err(fail("not a regular file".into()));
    }
    if meta.len() > MAX_INPUT_BYTES {
        return Err(fail(format!(
            "{} bytes; an input file is at most {MAX_INPUT_BYTES} bytes",
            meta.len()
        )));
    }
    let bytes = std::fs::read(path).map_err(|e| fail(e.to_string()))?;
    Ok(hex(&Sha256::digest(&bytes)))
}

/// SHA-256 of a replayed log, read in pieces (a log can be far larger than a script).
fn log_digest(path: &Path) -> Result<String> {
    use std::io::Read;
    let fail = |why: String| CampaignError::Other(format!("{}: {why}", path.display()));
    let mut f = std::fs::File::open(path).map_err(|e| fail(e.to_string()))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match f.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => h.update(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(fail(e.to_string())),
        }
    }
    Ok(hex(&h.finalize()))
}

/// SHA-256 over a pack's files, each by path and bytes.
fn pack_digest(pack: &pgsurge_workload::Pack) -> String {
    let mut h = Sha256::new();
    for (path, text) in pack.files() {
        for part in [path, text] {
            h.update((part.len() as u64).to_le_bytes());
            h.update(part.as_bytes());
        }
    }
    hex(&h.finalize())
}

/// The inputs of `campaign` (its targets built already, [`crate::sources`]) and of its
/// expanded `matrix`.
pub fn of(campaign: &Campaign, matrix: &Matrix) -> Result<Inputs> {
    let mut inputs = Inputs::new();
    for w in &matrix.workloads {
        if let Some(p) = &w.pack {
            inputs.insert(format!("workload {}", p.arg), pack_digest(&p.pack));
        }
        if let Some(r) = &w.replay {
            let shown = r.log.strip_prefix(&campaign.base_dir).unwrap_or(&r.log);
            inputs.insert(format!("replay {}", shown.display()), log_digest(&r.log)?);
        }
        for part in &w.parts {
            if let ScriptSource::File(path) = &part.source {
                let shown = path.strip_prefix(&campaign.base_dir).unwrap_or(path);
                inputs.insert(format!("script {}", shown.display()), file_digest(path)?);
            }
        }
    }
    for (target, layouts) in &campaign.layouts {
        for built in layouts {
            let seed = built.info.layout_seed.unwrap_or_default();
            inputs.insert(
                format!("target \"{target}\" layout build {seed}"),
                built.info.key.clone(),
            );
        }
    }
    for (target, built) in &campaign.builds {
        let info = &built.info;
        inputs.insert(format!("target \"{target}\" build"), info.key.clone());
        if let Some(commit) = &info.commit {
            inputs.insert(format!("target \"{target}\" commit"), commit.clone());
        }
        for p in &info.patches {
            inputs.insert(
                format!("target \"{target}\" patch {}", p.name),
                p.sha256.clone(),
            );
        }
    }
    Ok(inputs)
}

/// The fact every test of a run stores: its inputs, as a JSON object.
pub fn fact(inputs: &Inputs) -> FactRecord {
    FactRecord::new(
        facts::CAMPAIGN_INPUTS,
        serde_json::to_string(inputs).unwrap_or_default(),
    )
}

/// What the tests of a set ran with: the union of their recorded inputs.
fn recorded(store: &mut Store, set_id: i64) -> Result<Inputs> {
    let mut all = Inputs::new();
    for (_, f) in store.set_facts(set_id)? {
        if f.name != facts::CAMPAIGN_INPUTS {
            continue;
        }
        let Some(map) = f
            .value
            .as_deref()
            .and_then(|v| serde_json::from_str::<Inputs>(v).ok())
        else {
            continue;
        };
        all.extend(map);
    }
    Ok(all)
}

/// An input whose bytes differ between a set's tests and this run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Changed {
    /// The input.
    pub input: String,
    /// Its digest (or commit) in the set.
    pub was: String,
    /// Its digest now.
    pub now: String,
}

fn changes(stored: &Inputs, now: &Inputs) -> Vec<Changed> {
    now.iter()
        .filter_map(|(k, v)| {
            let was = stored.get(k)?;
            (was != v).then(|| Changed {
                input: k.clone(),
                was: was.clone(),
                now: v.clone(),
            })
        })
        .collect()
}

/// The set identity a run takes, and why it is a new one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Chosen {
    /// The `spec_hash` to claim: an existing set's (resumed) or a new one.
    pub hash: String,
    /// When no set of the campaign file ran with these inputs: the newest set of the
    /// same file and what changed since it.
    pub changed_since: Option<(i64, Vec<Changed>)>,
}

/// The hash of a set whose file identity is `base` and whose inputs are `inputs`.
fn with_inputs(base: &str, inputs: &Inputs) -> String {
    let mut h = Sha256::new();
    for (k, v) in inputs {
        h.update((k.len() as u64).to_le_bytes());
        h.update(k.as_bytes());
        h.update((v.len() as u64).to_le_bytes());
        h.update(v.as_bytes());
    }
    let digest = hex(&h.finalize());
    format!("{base} inputs {}", &digest[..16])
}

pub use pgsurge_plan::stored::same_file;

/// Chooses the identity of the set a run of the campaign file `base` with `inputs`
/// goes to, among the sets of `kind` named `name`: the newest set (the one claiming its
/// hash resumes) whose tests ran with the same bytes for every input both name, else a
/// new identity. Sets of another campaign file are not looked at.
pub fn choose(
    store: &mut Store,
    kind: &str,
    name: &str,
    base: &str,
    inputs: &Inputs,
) -> Result<Chosen> {
    let mut sets: Vec<pgsurge_store::Set> = store
        .list_sets()?
        .into_iter()
        .filter(|s| s.record.kind == kind && s.record.name == name)
        .filter(|s| {
            s.record
                .spec_hash
                .as_deref()
                .is_some_and(|h| same_file(h, base))
        })
        .collect();
    sets.sort_by_key(|s| std::cmp::Reverse(s.id));
    let mut looked_at = BTreeSet::new();
    let mut newest_changed = None;
    for s in &sets {
        let Some(hash) = s.record.spec_hash.clone() else {
            continue;
        };
        // Claiming a hash resumes the newest set holding it: the older ones are not
        // reachable by it.
        if !looked_at.insert(hash.clone()) {
            continue;
        }
        let changed = changes(&recorded(store, s.id)?, inputs);
        if changed.is_empty() {
            return Ok(Chosen {
                hash,
                changed_since: None,
            });
        }
        if newest_changed.is_none() {
            newest_changed = Some((s.id, changed));
        }
    }
    Ok(Chosen {
        hash: with_inputs(base, inputs),
        changed_since: newest_changed,
    })
}

/// The note of a run that starts set `set_id` because inputs changed since set `last`.
pub fn changed_notice(last: i64, changed: &[Changed], set_id: i64) -> String {
    let short = |v: &str| v.chars().take(12).collect::<String>();
    let list: Vec<String> = changed
        .iter()
        .map(|c| format!("{} ({} → {})", c.input, short(&c.was), short(&c.now)))
        .collect();
    format!(
        "an input of the campaign changed since set {last} was run: {}; its tests are not \
         comparable with the stored ones, so a new set {set_id} is started; set {last} is kept \
         as it is (run with the inputs as they were to resume it)",
        list.join(", ")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use pgsurge_store::{RunRecord, RunWrite, SetRecord};

    fn inputs(pairs: &[(&str, &str)]) -> Inputs {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    /// A set of campaign `c` with one test that ran with `ran_with`.
    fn stored_set(store: &mut Store, hash: &str, ran_with: &Inputs) -> i64 {
        let set_id = store
            .create_set(&SetRecord {
                name: "c".into(),
                kind: "campaign".into(),
                spec_hash: Some(hash.into()),
                status: "complete".into(),
                created_at: "2026-01-01T00:00:00Z".into(),
                ..Default::default()
            })
            .unwrap();
        store
            .write_run(&RunWrite {
                run: RunRecord {
                    set_id,
                    test_key: "t/1".into(),
                    repeat_no: 1,
                    status: "ok".into(),
                    ..Default::default()
                },
                facts: vec![fact(ran_with)],
                ..Default::default()
            })
            .unwrap();
        set_id
    }

    #[test]
    fn a_moved_ref_or_an_edited_patch_starts_a_new_set_and_says_which() {
        let dir = pgsurge_testkit::scratch_dir("campaign-inputs");
        let path = dir.path().join("r.db");
        let mut store = Store::open(path.to_str().unwrap()).unwrap();
        let first = inputs(&[
            ("target \"pg\" commit", "1111aaaa"),
            ("target \"pg\" patch fix.patch", "2222bbbb"),
        ]);
        let hash = with_inputs("base", &first);
        let set = stored_set(&mut store, &hash, &first);
        // The same inputs, and an input added: the set is resumed.
        let mut more = first.clone();
        more.insert("script q.sql".into(), "3333cccc".into());
        for same in [&first, &more] {
            let c = choose(&mut store, "campaign", "c", "base", same).unwrap();
            assert_eq!(
                c,
                Chosen {
                    hash: hash.clone(),
                    changed_since: None
                }
            );
        }
        // `master` moved: a new identity, naming the commit that changed.
        let mut moved = first.clone();
        moved.insert("target \"pg\" commit".into(), "9999ffff".into());
        let c = choose(&mut store, "campaign", "c", "base", &moved).unwrap();
        assert_ne!(c.hash, hash);
        let (last, changed) = c.changed_since.clone().unwrap();
        assert_eq!(last, set);
        assert_eq!(
            changed,
            [Changed {
                input: "target \"pg\" commit".into(),
                was: "1111aaaa".into(),
                now: "9999ffff".into()
            }]
        );
        let note = changed_notice(last, &changed, 7);
        assert!(
            note.contains("target \"pg\" commit (1111aaaa → 9999ffff)") && note.contains("set 7"),
            "{note}"
        );
        // An edited patch, too.
        let mut patched = first.clone();
        patched.insert("target \"pg\" patch fix.patch".into(), "4444dddd".into());
        let p = choose(&mut store, "campaign", "c", "base", &patched).unwrap();
        assert_ne!(p.hash, hash);
        let (_, changed) = p.changed_since.unwrap();
        assert_eq!(changed[0].input, "target \"pg\" patch fix.patch");
        // Once that set exists, the moved ref resumes it, and the old ref the first.
        let moved_set = stored_set(&mut store, &c.hash, &moved);
        assert_ne!(moved_set, set);
        assert_eq!(
            choose(&mut store, "campaign", "c", "base", &moved)
                .unwrap()
                .hash,
            c.hash
        );
        assert_eq!(
            choose(&mut store, "campaign", "c", "base", &first)
                .unwrap()
                .hash,
            hash
        );
        // Another campaign file's sets are not looked at.
        let c = choose(&mut store, "campaign", "c", "other", &first).unwrap();
        assert_eq!(c.changed_since, None);
        assert!(c.hash.starts_with("other inputs "), "{}", c.hash);
    }
}
