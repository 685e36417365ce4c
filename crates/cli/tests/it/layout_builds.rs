//! Builds as a noise level: a campaign over the release tarball with `[repeats] builds
//! = 2, starts = 2` links the server twice from the objects of the patch test's build
//! (the same configure arguments, so every compile is a ccache hit), each with its own
//! layout seed, and nests its eight repeats as 2 builds × 2 server starts × 2 runs, on
//! each of two targets of the same inputs (which share the layout builds). The stored
//! runs carry both seeds, two different `postgres` digests and four server starts, each
//! initialized, as `campaign plan` counts; `compare` states each level's share and
//! which level is cheapest to repeat at the measured costs, as text, as JSON that its
//! schema accepts, and in the report, whose targets table names the seeds. A layout
//! build made in another cache directory is the same binary.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use pgsurge_store::{facts, RunFilter, Store};

use super::patch_ab::{ok, pgsurge, CONFIGURE_ARGS};

/// The release tarball, when lld is there to link its layouts; else `None`, through the
/// testkit's prerequisite helpers.
pub(crate) fn layout_prerequisites() -> Option<PathBuf> {
    let tarball = pgsurge_testkit::postgres_tarball()?;
    pgsurge_testkit::command_path("ld.lld")?;
    Some(tarball)
}

/// A campaign named `name` over `targets`, each built from `tarball` with the patch
/// test's configure arguments, eight one-second select-only repeats nested as 2 builds
/// × 2 starts × 2 runs: every layout test writes its campaign here, so that they share
/// their layout builds (same inputs, same seeds).
pub(crate) fn layout_campaign(name: &str, tarball: &Path, targets: &[&str]) -> String {
    let mut text = format!("[campaign]\nname = \"{name}\"\n");
    for target in targets {
        text.push_str(&format!(
            "\n[[target]]\nname = \"{target}\"\nsource = \"{}\"\nconfigure = {CONFIGURE_ARGS:?}\n",
            tarball.display()
        ));
    }
    text.push_str(
        "\n[matrix]\nscales = [1]\nclients = [1]\nscripts = [\"select-only\"]\nrepeats = 8\n\
         \n[repeats]\nbuilds = 2\nstarts = 2\n\n[run]\nduration = 1\n",
    );
    text
}

#[test]
fn two_layout_builds_are_a_noise_level_of_their_own() {
    let Some(tarball) = layout_prerequisites() else {
        return;
    };
    let _heavy = pgsurge_testkit::one_heavy_test_at_a_time();
    let cache = pgsurge_testkit::build_cache_dir();
    std::fs::create_dir_all(&cache).unwrap();
    let dir = pgsurge_testkit::scratch_dir("layout-builds");
    let file = dir.path().join("layouts.toml");
    std::fs::write(
        &file,
        layout_campaign("layouts", &tarball, &["base", "twin"]),
    )
    .unwrap();
    let store_path = dir.path().join("r.db");
    let store = store_path.to_str().unwrap();
    ok(
        &pgsurge(&cache)
            .args(["campaign", "run", "--quiet", "--store", store])
            .arg(&file)
            .output()
            .unwrap(),
        "campaign run",
    );

    // What each stored run says of its build and its server start.
    let mut s = Store::open(store).unwrap();
    let runs = s.list_runs(&RunFilter::default()).unwrap();
    assert_eq!(runs.len(), 16, "8 repeats of each of the two targets");
    let set = runs[0].record.set_id;
    let mut seeds = BTreeSet::new();
    let mut digests = BTreeSet::new();
    let mut starts = BTreeSet::new();
    let mut builds_of_start = BTreeSet::new();
    let mut seed_of_run = std::collections::BTreeMap::new();
    for (run, fact) in s.set_facts(set).unwrap() {
        let value = fact.value.unwrap_or_default();
        match fact.name.as_str() {
            facts::BUILD_LAYOUT_SEED => {
                seeds.insert(value.clone());
                seed_of_run.insert(run, value);
            }
            facts::BUILD_POSTGRES_SHA256 => {
                digests.insert(value);
            }
            facts::SERVER_START => {
                starts.insert((run, value));
            }
            _ => {}
        }
    }
    assert_eq!(seeds, BTreeSet::from(["1".to_string(), "2".to_string()]));
    assert_eq!(digests.len(), 2, "two layouts, two binaries: {digests:?}");
    assert_eq!(seed_of_run.len(), 16, "every run names its layout build");
    for (run, start) in &starts {
        builds_of_start.insert((start.clone(), seed_of_run[run].clone()));
    }
    let distinct_starts: BTreeSet<&String> = starts.iter().map(|(_, s)| s).collect();
    // Two starts of each of two builds, for each of the two targets; one build each.
    assert_eq!(distinct_starts.len(), 8, "{starts:?}");
    assert_eq!(builds_of_start.len(), 8, "{builds_of_start:?}");
    // `campaign plan` counts the initializations the run made: one per server start.
    let loads = s
        .set_facts(set)
        .unwrap()
        .into_iter()
        .filter(|(_, f)| f.name == facts::INIT_PERFORMED && f.value.as_deref() == Some("true"))
        .count();
    let plan = ok(
        &pgsurge(&cache)
            .args(["campaign", "plan", "--format", "json"])
            .arg(&file)
            .output()
            .unwrap(),
        "campaign plan",
    );
    let plan: serde_json::Value = serde_json::from_str(&plan).unwrap();
    assert_eq!(loads, 8, "one initialization per server start");
    assert_eq!(
        plan["estimate"]["initializations"], loads,
        "plan against run"
    );

    // The two layout builds are the same program: the same symbols, placed apart.
    let bins: Vec<String> = pgsurge_server_bins(&mut s, set);
    assert_eq!(bins.len(), 2, "{bins:?}");
    let symbols = |bin: &str| {
        let out = std::process::Command::new("nm")
            .arg(format!("{bin}/postgres"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let names: BTreeSet<String> = text
            .lines()
            .filter_map(|l| l.split_whitespace().nth(2).map(str::to_string))
            .collect();
        let main = text
            .lines()
            .find(|l| l.ends_with(" T main"))
            .map(str::to_string);
        (names, main)
    };
    let (one, two) = (symbols(&bins[0]), symbols(&bins[1]));
    assert!(one.0.len() > 10_000, "{} symbols", one.0.len());
    assert_eq!(one.0, two.0, "the same symbols");
    assert_ne!(one.1, two.1, "main placed apart");

    // compare: the three levels of each side, as text and as JSON the schema accepts.
    let text = ok(
        &pgsurge(&cache)
            .args(["compare", "--store", store])
            .output()
            .unwrap(),
        "compare",
    );
    let line = text
        .lines()
        .find(|l| l.contains("noise levels of A over layout builds (seeds 1, 2): "))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains("% of the variance between builds, ")
            && line.contains("2 builds × 2 starts × 2 runs): cheapest to repeat "),
        "{line}"
    );
    let json = ok(
        &pgsurge(&cache)
            .args(["compare", "--store", store, "--format", "json"])
            .output()
            .unwrap(),
        "compare --format json",
    );
    let doc: serde_json::Value = serde_json::from_str(&json).unwrap();
    pgsurge_testkit::schema::assert_valid(pgsurge_report::COMPARE_SCHEMA, &doc);
    for side in ["a", "b"] {
        let b = &doc["cells"][0]["noise_levels"]["builds"][side];
        assert_eq!(b["layout_seeds"], serde_json::json!([1, 2]), "{b}");
        let sha = b["postgres_sha256"].as_array().unwrap();
        assert!(sha.len() == 2 && sha[0] != sha[1], "{b}");
        let levels = &b["levels"];
        assert_eq!(
            (
                &levels["builds"],
                &levels["starts_per_build"],
                &levels["runs_per_start"]
            ),
            (&2.into(), &2.into(), &2.into()),
            "{b}"
        );
        for level in ["within", "between_starts", "between_builds"] {
            assert!(levels[level].as_f64().unwrap() >= 0.0, "{b}");
        }
        let shares: f64 = ["share_runs", "share_starts", "share_builds"]
            .iter()
            .map(|k| b[k].as_f64().unwrap())
            .sum();
        assert!((shares - 1.0).abs() < 1e-9 || shares == 0.0, "{b}");
        // The measured costs: a build's wall time far above a start's and a run's.
        let costs = &b["costs"];
        let cost = |k: &str| costs[k].as_f64().unwrap();
        assert!(cost("run") >= 1.0 && cost("start") > 0.0, "{b}");
        assert!(cost("build") > cost("start"), "{b}");
        assert!(
            ["runs", "starts", "builds"].contains(&b["cheapest"].as_str().unwrap()),
            "{b}"
        );
    }

    // The report says it too, and names each target's layout seeds.
    let report = dir.path().join("report");
    ok(
        &pgsurge(&cache)
            .args(["report", "--store", store, "-o"])
            .arg(&report)
            .output()
            .unwrap(),
        "report",
    );
    let index = std::fs::read_to_string(report.join("index.html")).unwrap();
    assert!(
        index.contains("noise levels of A over layout builds (seeds 1, 2): "),
        "{index}"
    );
    assert!(index.contains("layout seeds 1, 2"), "{index}");
}

/// The binaries directories the set's targets ran from (one per layout build).
fn pgsurge_server_bins(store: &mut Store, set: i64) -> Vec<String> {
    let mut bins: BTreeSet<String> = BTreeSet::new();
    for (_, fact) in store.set_facts(set).unwrap() {
        if fact.name == facts::BUILD_KEY {
            let key = fact.value.unwrap_or_default();
            bins.insert(
                pgsurge_testkit::build_cache_dir()
                    .join("builds")
                    .join(key)
                    .join("install/bin")
                    .display()
                    .to_string(),
            );
        }
    }
    bins.into_iter().collect()
}

/// A layout build is the same program whichever cache directory made it: its
/// `postgres` names no path of its cache entry, so the same seed gives the same digest
/// in the shared build cache and in a scratch one.
#[test]
fn a_layout_build_has_the_same_digest_in_another_cache_directory() {
    let Some(tarball) = layout_prerequisites() else {
        return;
    };
    let _heavy = pgsurge_testkit::one_heavy_test_at_a_time();
    let shared = pgsurge_testkit::build_cache_dir();
    std::fs::create_dir_all(&shared).unwrap();
    let dir = pgsurge_testkit::scratch_dir("layout-digest");
    let digest = |cache: &Path| {
        let mut cmd = pgsurge(cache);
        cmd.args(["server", "build", "--layout-seed", "1", "--source"])
            .arg(&tarball);
        for c in CONFIGURE_ARGS {
            cmd.arg(format!("--configure={c}"));
        }
        let out = ok(&cmd.output().unwrap(), "server build --layout-seed 1");
        let bin = PathBuf::from(out.lines().last().unwrap_or_default());
        let entry = bin.parent().and_then(|p| p.parent()).unwrap();
        let record = std::fs::read_to_string(entry.join("build.json")).unwrap();
        let record: serde_json::Value = serde_json::from_str(&record).unwrap();
        let sha = record["postgres_sha256"].as_str().unwrap().to_string();
        (entry.file_name().unwrap().to_owned(), sha)
    };
    let (key, sha) = digest(&shared);
    let (other_key, other_sha) = digest(dir.path());
    assert_eq!(key, other_key, "one key for the same inputs and seed");
    assert_eq!(sha, other_sha, "the same postgres in two cache directories");
}
