//! Expands a campaign into its ordered list of tests.
//!
//! A test's identity (`key`) is its matrix cell and repeat, e.g.
//! `pg17/s10/tpcb-like/c8/r-/3`: the store refuses a second test with the same key in a
//! set, which is what makes resuming exact. The optional dimensions add to the key only
//! when the campaign uses them (`/Mprepared`, `/j4`, `/shared_buffers=1GB`), so older
//! campaigns keep their keys. The order: scales in the order given; within a scale, each
//! combination of swept settings; within that, repeat rounds; within a round every cell
//! (workload × clients × rate × query mode × threads), in a seeded shuffled order when
//! `shuffle` is on; each cell runs on every target in turn (rotated each round: A B, then
//! B A) when `interleave_targets` is on.

use std::path::{Path, PathBuf};

use crate::spec::{Campaign, MatrixSpec, ScriptPart, ScriptSpec};

/// Which data a target's database holds: pgbench's tables or a workload pack's, at a
/// scale.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dataset {
    /// The workload pack's name; None for pgbench's tables.
    pub pack: Option<String>,
    /// The scale it was loaded at.
    pub scale: u32,
}

impl Dataset {
    /// pgbench's tables at `scale`.
    pub fn pgbench(scale: u32) -> Dataset {
        Dataset { pack: None, scale }
    }
}

/// Built-in pgbench scripts a campaign may name.
pub const BUILTIN_SCRIPTS: &[&str] = &["tpcb-like", "simple-update", "select-only"];

/// Where one script of a workload comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum ScriptSource {
    /// `-b NAME`.
    Builtin(String),
    /// `-f FILE`.
    File(PathBuf),
    /// A script of a workload pack: its description (`tpcc/new_order.sql`) and text.
    Pack {
        /// How the report names it.
        desc: String,
        /// The script.
        text: String,
    },
}

/// The workload pack a workload runs: its scripts are the workload's parts; its
/// loader prepares the data and its metrics are read around each test.
#[derive(Debug, Clone)]
pub struct PackWorkload {
    /// As the campaign names it: a built-in pack or a directory.
    pub arg: String,
    /// The pack, read at plan time.
    pub pack: pgsurge_workload::Pack,
}

impl PartialEq for PackWorkload {
    fn eq(&self, other: &PackWorkload) -> bool {
        self.arg == other.arg && self.pack.files() == other.pack.files()
    }
}

/// A script with its weight.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkloadPart {
    /// Where the script comes from: a built-in name or a file (read at plan time).
    pub source: ScriptSource,
    /// `@W`.
    pub weight: u32,
}

/// One workload of the matrix: one script or a weighted mix.
#[derive(Debug, Clone, PartialEq)]
pub struct Workload {
    /// Display name (used in test keys and reports).
    pub name: String,
    /// Its scripts.
    pub parts: Vec<WorkloadPart>,
    /// The workload pack the scripts come from, if any.
    pub pack: Option<PackWorkload>,
    /// The log replayed instead of scripts, if the workload is a replay.
    pub replay: Option<crate::replay::ReplayWorkload>,
}

fn part_from_spec(p: &ScriptPart, base: &Path) -> Result<WorkloadPart, String> {
    if p.replay.is_some() {
        return Err(
            "a replay is a whole workload: give it alone, as { replay = \"FILE\" }, not in a mix"
                .into(),
        );
    }
    if p.workload.is_some() {
        return Err(
            "a workload pack is a whole workload: give it alone, as { workload = \"NAME\" }, \
             not in a mix"
                .into(),
        );
    }
    let source = match (&p.builtin, &p.file) {
        (Some(b), None) => builtin(b)?,
        (None, Some(f)) => file(f, base)?,
        _ => {
            return Err(
                "give exactly one of builtin = \"…\", file = \"…\" or workload = \"…\"".into(),
            )
        }
    };
    if p.weight == 0 {
        return Err("weight must be ≥ 1".into());
    }
    Ok(WorkloadPart {
        source,
        weight: p.weight,
    })
}

/// Resolves a built-in script name as `-b` does: a unique prefix (`tpcb`, `select`) names
/// the script, which is then known by its full name (`tpcb-like`) in test keys.
fn builtin(name: &str) -> Result<ScriptSource, String> {
    match pgsurge_script::find_builtin(name) {
        Ok(b) if !name.is_empty() && BUILTIN_SCRIPTS.contains(&b.name) => {
            Ok(ScriptSource::Builtin(b.name.to_string()))
        }
        _ => Err(format!(
            "unknown built-in script \"{name}\" (valid: {}, or a unique prefix such as tpcb)",
            BUILTIN_SCRIPTS.join(", ")
        )),
    }
}

/// A workload pack as a whole workload: its scripts with their weights. `arg` is a
/// built-in pack's name or a directory, relative to `base` (the campaign file's).
fn pack_workload(p: &ScriptPart, arg: &str, base: &Path) -> Result<Workload, String> {
    if p.builtin.is_some() || p.file.is_some() {
        return Err("give exactly one of builtin = \"…\", file = \"…\" or workload = \"…\"".into());
    }
    let relative = base.join(arg);
    let resolved = if !Path::new(arg).is_absolute() && relative.is_dir() {
        relative.display().to_string()
    } else {
        arg.to_string()
    };
    let pack = pgsurge_workload::Pack::resolve(&resolved).map_err(|e| e.to_string())?;
    let parts = pack
        .manifest
        .scripts
        .iter()
        .map(|s| WorkloadPart {
            source: ScriptSource::Pack {
                desc: pack.script_desc(&s.file),
                text: pack.file(&s.file).to_string(),
            },
            weight: s.weight,
        })
        .collect();
    let name = pack.name().to_string();
    if name.is_empty() || name.contains('/') {
        return Err(format!("workload pack \"{arg}\" needs a name without '/'"));
    }
    Ok(Workload {
        name,
        parts,
        pack: Some(PackWorkload {
            arg: arg.to_string(),
            pack,
        }),
        replay: None,
    })
}

fn file(f: &Path, base: &Path) -> Result<ScriptSource, String> {
    let path = if f.is_absolute() {
        f.to_path_buf()
    } else {
        base.join(f)
    };
    if !path.is_file() {
        return Err(format!("script file {} not found", path.display()));
    }
    Ok(ScriptSource::File(path))
}

impl WorkloadPart {
    fn label(&self) -> String {
        match &self.source {
            ScriptSource::Builtin(b) => b.clone(),
            ScriptSource::File(f) => f
                .file_stem()
                .map(|s| s.to_string_lossy().into_owned())
                .unwrap_or_else(|| f.display().to_string()),
            ScriptSource::Pack { desc, .. } => desc.clone(),
        }
    }
}

impl Workload {
    /// The data a test of this workload at `scale` needs.
    pub fn dataset(&self, scale: u32) -> Dataset {
        Dataset {
            pack: self.pack.as_ref().map(|p| p.pack.name().to_string()),
            scale,
        }
    }

    /// Resolves a matrix entry (file paths relative to `base`).
    pub fn from_spec(spec: &ScriptSpec, base: &Path) -> Result<Workload, String> {
        let paced = |p: &ScriptPart| p.replay.is_none() && (p.speed.is_some() || p.max.is_some());
        let parts: &[ScriptPart] = match spec {
            ScriptSpec::Part(p) => std::slice::from_ref(p),
            ScriptSpec::Mix { mix, .. } => mix,
            ScriptSpec::Builtin(_) => &[],
        };
        if parts.iter().any(paced) {
            return Err("speed and max pace a replay: give them with replay = \"FILE\"".into());
        }
        match spec {
            ScriptSpec::Builtin(b) => {
                let source = builtin(b)?;
                let name = match &source {
                    ScriptSource::Builtin(full) => full.clone(),
                    ScriptSource::File(_) | ScriptSource::Pack { .. } => b.clone(),
                };
                Ok(Workload {
                    name,
                    parts: vec![WorkloadPart { source, weight: 1 }],
                    pack: None,
                    replay: None,
                })
            }
            ScriptSpec::Part(p) if p.workload.is_some() => {
                pack_workload(p, p.workload.as_deref().unwrap_or_default(), base)
            }
            ScriptSpec::Part(p) if p.replay.is_some() => {
                let r = crate::replay::ReplayWorkload::from_part(p, base)?;
                Ok(Workload {
                    name: r.name(),
                    parts: Vec::new(),
                    pack: None,
                    replay: Some(r),
                })
            }
            ScriptSpec::Part(p) => {
                let part = part_from_spec(p, base)?;
                Ok(Workload {
                    name: part.label(),
                    parts: vec![part],
                    pack: None,
                    replay: None,
                })
            }
            ScriptSpec::Mix { name, mix } => {
                if mix.is_empty() {
                    return Err("a mix needs at least one part".into());
                }
                if name.is_empty() || name.contains('/') {
                    return Err("a mix needs a name without '/'".into());
                }
                let parts = mix
                    .iter()
                    .map(|p| part_from_spec(p, base))
                    .collect::<Result<Vec<_>, _>>()?;
                Ok(Workload {
                    name: name.clone(),
                    parts,
                    pack: None,
                    replay: None,
                })
            }
        }
    }
}

/// One planned test.
#[derive(Debug, Clone, PartialEq)]
pub struct TestPlan {
    /// Position in the order, from 1.
    pub seq: usize,
    /// Identity in the set.
    pub key: String,
    /// Index into the campaign's targets.
    pub target: usize,
    /// Scale.
    pub scale: u32,
    /// Index into [`Matrix::workloads`].
    pub workload: usize,
    /// Clients.
    pub clients: u32,
    /// Total rate (tps); None = unthrottled.
    pub rate: Option<f64>,
    /// The per-client rate it came from, if the campaign gave one.
    pub rate_per_client: Option<f64>,
    /// Repeat number from 1.
    pub repeat: u32,
    /// `--random-seed` of this test.
    pub seed: u64,
    /// Query mode from `matrix.query_modes` (None: `run.query_mode`).
    pub query_mode: Option<String>,
    /// Thread count from `matrix.threads` (None: `run.threads`).
    pub threads: Option<u32>,
    /// Server settings from `matrix.settings` (name, value), sorted by name.
    pub settings: Vec<(String, String)>,
}

/// The expanded campaign.
#[derive(Debug, Clone)]
pub struct Matrix {
    /// Workloads in the order of `matrix.scripts`.
    pub workloads: Vec<Workload>,
    /// Every test in run order.
    pub tests: Vec<TestPlan>,
}

/// splitmix64: a small, well-known generator; enough for a reproducible shuffle.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            let j = (self.next() % (i as u64 + 1)) as usize;
            v.swap(i, j);
        }
    }
}

fn fnv1a(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

/// The `--random-seed` of the test `key` in a campaign seeded with `campaign_seed`.
pub fn test_seed(campaign_seed: u64, key: &str) -> u64 {
    SplitMix(campaign_seed ^ fnv1a(key)).next() >> 1
}

fn rate_label(rate: Option<f64>, per_client: Option<f64>) -> String {
    match (rate, per_client) {
        (_, Some(p)) => format!("rpc{p}"),
        (Some(r), None) => format!("r{r}"),
        (None, None) => "r-".into(),
    }
}

/// One cell of the matrix within a scale and a settings combination.
struct Cell<'a> {
    workload: usize,
    clients: u32,
    rate: Option<f64>,
    per_client: Option<f64>,
    mode: Option<&'a str>,
    threads: Option<u32>,
}

/// A setting value as the server is given it (strings bare, numbers and booleans as
/// written).
pub fn setting_text(v: &toml::Value) -> String {
    match v {
        toml::Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Every combination of the swept settings (one empty combination when none is swept).
fn setting_combinations(
    settings: &std::collections::BTreeMap<String, Vec<toml::Value>>,
) -> Vec<Vec<(String, String)>> {
    let mut combos: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (name, values) in settings {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.push((name.clone(), setting_text(v)));
                    c
                })
            })
            .collect();
    }
    combos
}

/// Expands `campaign` into its tests.
pub fn expand(campaign: &Campaign) -> Result<Matrix, String> {
    let spec = &campaign.spec;
    let matrix = &spec.matrix;
    let workloads = load_workloads(campaign)?;
    let cells = cells(matrix, workloads.len());
    let combos = setting_combinations(&matrix.settings);
    let ntargets = spec.targets.len();
    let mut tests = Vec::new();
    let mut push =
        |target: usize, scale: u32, settings: &[(String, String)], cell: &Cell<'_>, repeat: u32| {
            let key = test_key(
                &spec.targets[target].name,
                scale,
                &workloads[cell.workload].name,
                cell,
                settings,
                repeat,
            );
            tests.push(TestPlan {
                seq: tests.len() + 1,
                seed: test_seed(spec.campaign.seed, &key),
                key,
                target,
                scale,
                workload: cell.workload,
                clients: cell.clients,
                rate: cell.rate,
                rate_per_client: cell.per_client,
                repeat,
                query_mode: cell.mode.map(str::to_string),
                threads: cell.threads,
                settings: settings.to_vec(),
            });
        };
    // Settings sit right inside the scale, so a server restarts once per value and
    // scale and the data is loaded once per scale.
    if spec.campaign.interleave_targets {
        for &scale in &matrix.scales {
            for settings in &combos {
                for (repeat, order) in rounds(campaign, scale, cells.len()) {
                    for ci in order {
                        for k in 0..ntargets {
                            let t = (k + repeat as usize - 1) % ntargets;
                            push(t, scale, settings, &cells[ci], repeat);
                        }
                    }
                }
            }
        }
    } else {
        for t in 0..ntargets {
            for &scale in &matrix.scales {
                for settings in &combos {
                    for (repeat, order) in rounds(campaign, scale, cells.len()) {
                        for ci in order {
                            push(t, scale, settings, &cells[ci], repeat);
                        }
                    }
                }
            }
        }
    }
    Ok(Matrix { workloads, tests })
}

/// The matrix's scripts as workloads, their names unique.
fn load_workloads(campaign: &Campaign) -> Result<Vec<Workload>, String> {
    let workloads = campaign
        .spec
        .matrix
        .scripts
        .iter()
        .map(|w| Workload::from_spec(w, &campaign.base_dir))
        .collect::<Result<Vec<_>, _>>()?;
    let mut names = std::collections::BTreeSet::new();
    for w in &workloads {
        if !names.insert(w.name.clone()) {
            return Err(format!("two workloads are named \"{}\"", w.name));
        }
    }
    Ok(workloads)
}

/// The cells of one scale and one combination of settings: every workload × clients ×
/// rate × query mode × threads, in that nesting.
fn cells(matrix: &MatrixSpec, workloads: usize) -> Vec<Cell<'_>> {
    // Rate dimension: (total, per-client) per entry; 0 = unthrottled.
    enum RateDim {
        Total(f64),
        PerClient(f64),
        None,
    }
    let rates: Vec<RateDim> = if !matrix.rates_per_client.is_empty() {
        matrix
            .rates_per_client
            .iter()
            .map(|r| RateDim::PerClient(*r))
            .collect()
    } else if !matrix.rates.is_empty() {
        matrix.rates.iter().map(|r| RateDim::Total(*r)).collect()
    } else {
        vec![RateDim::None]
    };
    let modes: Vec<Option<&str>> = if matrix.query_modes.is_empty() {
        vec![None]
    } else {
        matrix
            .query_modes
            .iter()
            .map(|m| Some(m.as_str()))
            .collect()
    };
    let thread_counts: Vec<Option<u32>> = if matrix.threads.is_empty() {
        vec![None]
    } else {
        matrix.threads.iter().map(|&j| Some(j)).collect()
    };
    let mut cells = Vec::new();
    for wi in 0..workloads {
        for &c in &matrix.clients {
            for r in &rates {
                let (rate, per_client) = match r {
                    RateDim::None => (None, None),
                    RateDim::Total(t) if *t == 0.0 => (None, None),
                    RateDim::Total(t) => (Some(*t), None),
                    RateDim::PerClient(p) if *p == 0.0 => (None, None),
                    RateDim::PerClient(p) => (Some(p * f64::from(c)), Some(*p)),
                };
                for &mode in &modes {
                    for &threads in &thread_counts {
                        cells.push(Cell {
                            workload: wi,
                            clients: c,
                            rate,
                            per_client,
                            mode,
                            threads,
                        });
                    }
                }
            }
        }
    }
    cells
}

/// A test's key: `target/s10/tpcb-like/c8/r-[/Mmode][/jN][/name=value…]/repeat`.
fn test_key(
    target: &str,
    scale: u32,
    workload: &str,
    cell: &Cell<'_>,
    settings: &[(String, String)],
    repeat: u32,
) -> String {
    let mut key = format!(
        "{target}/s{scale}/{workload}/c{}/{}",
        cell.clients,
        rate_label(cell.rate, cell.per_client)
    );
    if let Some(m) = cell.mode {
        key.push_str(&format!("/M{m}"));
    }
    if let Some(j) = cell.threads {
        key.push_str(&format!("/j{j}"));
    }
    for (name, value) in settings {
        key.push_str(&format!("/{name}={value}"));
    }
    key.push_str(&format!("/{repeat}"));
    key
}

/// The repeats of one scale, each with the order of its cells: as listed, or shuffled
/// by a seed of the campaign, the scale and the repeat (`shuffle = true`).
fn rounds(campaign: &Campaign, scale: u32, cells: usize) -> Vec<(u32, Vec<usize>)> {
    let spec = &campaign.spec;
    (1..=campaign.planned_repeats())
        .map(|repeat| {
            let mut order: Vec<usize> = (0..cells).collect();
            if spec.campaign.shuffle {
                let mut rng =
                    SplitMix(spec.campaign.seed ^ (u64::from(scale) << 32) ^ u64::from(repeat));
                rng.shuffle(&mut order);
            }
            (repeat, order)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_prefixes_resolve_like_dash_b() {
        let w = Workload::from_spec(&ScriptSpec::Builtin("tpcb".into()), Path::new(".")).unwrap();
        assert_eq!(w.name, "tpcb-like");
        assert_eq!(w.parts[0].source, ScriptSource::Builtin("tpcb-like".into()));
        let w = Workload::from_spec(&ScriptSpec::Builtin("select".into()), Path::new(".")).unwrap();
        assert_eq!(w.name, "select-only");
        for bad in ["", "s", "nope"] {
            let e =
                Workload::from_spec(&ScriptSpec::Builtin(bad.into()), Path::new(".")).unwrap_err();
            assert!(e.contains("unknown built-in script"), "{bad}: {e}");
        }
    }
    use std::collections::BTreeSet;

    fn campaign(extra: &str) -> Campaign {
        let text = format!(
            r#"
[campaign]
name = "m"
seed = 7
{extra}
[[target]]
name = "a"
conninfo = "dbname=a"
[[target]]
name = "b"
conninfo = "dbname=b"
[matrix]
scales = [1, 5]
clients = [1, 2, 4]
scripts = ["select-only", "tpcb-like"]
rates_per_client = [0, 10]
repeats = 2
"#
        );
        Campaign::parse(&text, "m.toml", Path::new(".")).unwrap()
    }

    #[test]
    fn every_cell_repeat_and_target_appears_once() {
        let m = expand(&campaign("")).unwrap();
        assert_eq!(m.tests.len(), 2 * 2 * 3 * 2 * 2 * 2);
        let keys: BTreeSet<_> = m.tests.iter().map(|t| t.key.clone()).collect();
        assert_eq!(keys.len(), m.tests.len());
        assert!(keys.contains("b/s5/tpcb-like/c4/rpc10/2"));
        let t = m
            .tests
            .iter()
            .find(|t| t.key == "a/s1/select-only/c4/rpc10/1")
            .unwrap();
        assert_eq!(t.rate, Some(40.0));
        let t = m
            .tests
            .iter()
            .find(|t| t.key == "a/s1/select-only/c4/r-/1")
            .unwrap();
        assert_eq!(t.rate, None);
        // Scales do not go back and forth: each scale's tests are contiguous.
        let scales: Vec<u32> = m.tests.iter().map(|t| t.scale).collect();
        assert!(scales.windows(2).all(|w| w[0] <= w[1]));
        // Seeds differ between repeats of a cell.
        let s1 = m
            .tests
            .iter()
            .find(|t| t.key == "a/s1/select-only/c1/r-/1")
            .unwrap()
            .seed;
        let s2 = m
            .tests
            .iter()
            .find(|t| t.key == "a/s1/select-only/c1/r-/2")
            .unwrap()
            .seed;
        assert_ne!(s1, s2);
    }

    #[test]
    fn targets_alternate_and_rotate_per_round() {
        let m = expand(&campaign("")).unwrap();
        let first: Vec<usize> = m.tests.iter().take(4).map(|t| t.target).collect();
        assert_eq!(first, vec![0, 1, 0, 1]);
        let round2 = m.tests.iter().position(|t| t.repeat == 2).unwrap();
        assert_eq!(m.tests[round2].target, 1);
    }

    #[test]
    fn shuffle_is_seeded_and_can_be_turned_off() {
        let a = expand(&campaign("")).unwrap();
        let b = expand(&campaign("")).unwrap();
        assert_eq!(a.tests, b.tests);
        let plain = expand(&campaign("shuffle = false\ninterleave_targets = false")).unwrap();
        assert_ne!(
            a.tests.iter().map(|t| &t.key).collect::<Vec<_>>(),
            plain.tests.iter().map(|t| &t.key).collect::<Vec<_>>()
        );
        assert_eq!(plain.tests[0].key, "a/s1/select-only/c1/r-/1");
        assert_eq!(plain.tests[1].key, "a/s1/select-only/c1/rpc10/1");
        assert!(plain.tests[..24].iter().all(|t| t.target == 0));
    }
}
