//! The fuzz targets' smoke run, on stable Rust in CI: every committed seed and every
//! input an earlier fuzzing run found (`fuzz/seeds/<target>/`, `fuzz/regressions/<target>/`)
//! goes through the target's body, then a few thousand deterministic mutations of the
//! seeds (bit flips, byte insertions and deletions, splices, truncations, repetition).
//! The long runs use `cargo fuzz` (see `docs/fuzzing.md`); this keeps every target
//! running and every finding fixed.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};

type Body = fn(&[u8]);

const TARGETS: [(&str, Body); 10] = [
    ("parse_eval", pgsurge_script::fuzz_bytes),
    ("decode", pgsurge_wire::fuzzing::decode_one),
    ("conninfo", pgsurge_wire::fuzzing::conninfo_one),
    ("campaign", pgsurge_plan::fuzzing::campaign_one),
    ("campaign_env", pgsurge_plan::fuzzing::campaign_env_one),
    ("import", pgsurge_records::fuzzing::import_one),
    (
        "merge_documents",
        pgsurge_generators::fuzzing::merge_documents_one,
    ),
    ("replay_log", pgsurge_replay::fuzzing::log_one),
    ("replay_sql", pgsurge_replay::fuzzing::sql_one),
    ("replay_sessions", pgsurge_replay::fuzzing::sessions_one),
];

/// Mutations per target.
const MUTATIONS: usize = 3000;

fn fuzz_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz")
}

fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let mut dirs = vec![
        fuzz_dir().join("seeds").join(target),
        fuzz_dir().join("regressions").join(target),
    ];
    let campaign = target.starts_with("campaign");
    if campaign {
        // the example campaigns (fuzz/seed copies them into the corpus too)
        dirs.push(fuzz_dir().join("../examples"));
    }
    let mut out = Vec::new();
    for dir in dirs {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        let mut paths: Vec<PathBuf> = entries
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_file() && (!campaign || p.extension().is_some_and(|e| e == "toml")))
            .collect();
        paths.sort();
        for p in paths {
            out.push((p.display().to_string(), std::fs::read(&p).unwrap()));
        }
    }
    out
}

/// xorshift64*: deterministic, so a failure reproduces.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

const INTERESTING: &[&[u8]] = &[
    b"\0",
    b"\xff",
    b"\\",
    b"'",
    b"\"",
    b"=",
    b":",
    b"(",
    b")",
    b"[",
    b"]",
    b"{",
    b"}",
    b"\n",
    b"-",
    b"9223372036854775807",
    b"-9223372036854775808",
    b"1e400",
    b"nan",
    b"\xff\xff\xff\x7f",
    b"\x00\x00\x00\x04",
    b"%",
    b"%zz",
    b"@",
    b"?",
    b"&",
    b",",
];

fn mutate(rng: &mut Rng, seeds: &[(String, Vec<u8>)]) -> Vec<u8> {
    let mut data = seeds[rng.below(seeds.len())].1.clone();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(data.len() + 1);
        match rng.below(7) {
            0 if !data.is_empty() => {
                let i = at.min(data.len() - 1);
                data[i] ^= 1 << rng.below(8);
            }
            1 => {
                let piece = INTERESTING[rng.below(INTERESTING.len())];
                data.splice(at..at, piece.iter().copied());
            }
            2 if !data.is_empty() => {
                let end = (at + 1 + rng.below(16)).min(data.len());
                data.drain(at.min(end)..end);
            }
            3 => data.truncate(at),
            4 => {
                let other = &seeds[rng.below(seeds.len())].1;
                let from = rng.below(other.len() + 1);
                data.splice(at..at, other[from..].iter().copied());
            }
            5 if !data.is_empty() => {
                // repeat a slice many times: deep nesting, long chains
                let start = at.min(data.len() - 1);
                let end = (start + 1 + rng.below(8)).min(data.len());
                let piece = data[start..end].to_vec();
                for _ in 0..rng.below(200) {
                    data.splice(start..start, piece.iter().copied());
                }
            }
            _ => data.insert(at, rng.next() as u8),
        }
    }
    data
}

fn run_one(name: &str, body: Body, what: &str, data: &[u8]) {
    if catch_unwind(AssertUnwindSafe(|| body(data))).is_err() {
        panic!(
            "fuzz target {name} panicked on {what}; input (hex): {}",
            data.iter().map(|b| format!("{b:02x}")).collect::<String>()
        );
    }
}

#[test]
fn every_target_survives_its_seeds_findings_and_mutations() {
    for (name, body) in TARGETS {
        let seeds = inputs(name);
        assert!(
            !seeds.is_empty(),
            "no seeds for fuzz target {name} under {}",
            fuzz_dir().display()
        );
        for (path, data) in &seeds {
            run_one(name, body, path, data);
        }
        let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ name.len() as u64);
        for k in 0..MUTATIONS {
            let data = mutate(&mut rng, &seeds);
            run_one(name, body, &format!("mutation {k}"), &data);
        }
    }
}

#[test]
fn a_target_that_panics_is_reported() {
    let seeds = inputs("decode");
    let caught = catch_unwind(|| {
        run_one(
            "probe",
            |d| assert!(d.len() > usize::MAX / 2, "probe"),
            "seed",
            &seeds[0].1,
        )
    });
    assert!(caught.is_err());
}
