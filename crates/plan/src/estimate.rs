//! What `campaign plan` estimates, before anything runs: the measured time is exact
//! (warm-up and duration of every planned test), the steps between tests and the
//! initializations a rough guess. With `[repeats] until` every cell is planned at
//! `max`, so the estimate is the worst case.

use crate::matrix::Matrix;
use crate::spec::{Campaign, Limit};

/// Seconds a running test is expected to take besides its run (hygiene, snapshots).
const TEST_OVERHEAD_S: u64 = 3;

/// Seconds one test is planned to take while the campaign runs (the time left the
/// progress bar and the live page show): its warm-up at worst, its run, its steps.
pub fn test_seconds(c: &Campaign) -> u64 {
    match c.limit() {
        Limit::Duration(d) => u64::from(d) + c.warmup_worst_s().round() as u64 + TEST_OVERHEAD_S,
        Limit::Transactions(_) => 10,
    }
}

/// Seconds assumed between two tests for the hygiene steps (TRUNCATE, VACUUM ANALYZE,
/// CHECKPOINT, statistics reset) and connecting: a rough figure for the estimate.
pub const BETWEEN_TESTS_S: f64 = 5.0;

/// What `campaign plan` estimates: the measured time is exact, the rest a rough guess.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// Seconds of benchmark runs (warm-up + duration) over all tests; None when the
    /// tests are limited by a transaction count.
    pub run_s: Option<f64>,
    /// Seconds assumed for the steps between tests.
    pub between_s: f64,
    /// Initializations: one per target and scale, or more with `fresh_cluster`.
    pub initializations: usize,
    /// Seconds assumed for them (a new cluster, then the data loaded).
    pub init_s: f64,
    /// What makes an initialization, for the estimate's line.
    pub init_rule: &'static str,
    /// In capacity mode: the most steps of a cell's search and the runs per step (the
    /// times are then upper bounds).
    pub capacity_steps: Option<(u32, u32)>,
    /// With `[repeats] until`: `max`, the repeats every test is planned at (the times
    /// are then upper bounds).
    pub repeats_max: Option<u32>,
}

impl Estimate {
    /// The estimate of `campaign`'s tests `m`.
    pub fn of(campaign: &Campaign, m: &Matrix) -> Estimate {
        let per_test = match campaign.limit() {
            crate::spec::Limit::Duration(d) => Some(f64::from(d) + campaign.warmup_worst_s()),
            _ => None,
        };
        let (inits, init_s, init_rule) = initializations(campaign, m);
        let capacity_steps = campaign.spec.capacity.as_ref().map(|cap| {
            (
                pgsurge_analysis::capacity::max_steps(&cap.objective()),
                cap.repeats,
            )
        });
        // A capacity search runs each cell's steps, each as `repeats` tests.
        let tests = match capacity_steps {
            Some((steps, repeats)) => {
                crate::capacity::templates(&m.tests).len() as f64
                    * f64::from(steps)
                    * f64::from(repeats)
            }
            None => m.tests.len() as f64,
        };
        Estimate {
            run_s: per_test.map(|p| p * tests),
            between_s: BETWEEN_TESTS_S * tests,
            initializations: inits,
            init_s,
            init_rule,
            capacity_steps,
            repeats_max: campaign.until_section().map(|r| r.max),
        }
    }

    /// The line `campaign plan` prints.
    pub fn line(&self) -> String {
        let inits = format!(
            "plus {} initialization{} ({}; about {})",
            self.initializations,
            if self.initializations == 1 { "" } else { "s" },
            self.init_rule,
            human_duration(self.init_s)
        );
        match (self.run_s, self.capacity_steps) {
            (Some(r), Some((steps, repeats))) => format!(
                "estimated time: at most {} (a capacity search of at most {steps} steps of \
                 {repeats} test{} per cell: {} of runs and warm-ups, about {} between tests), \
                 {inits}",
                human_duration(r + self.between_s),
                if repeats == 1 { "" } else { "s" },
                human_duration(r),
                human_duration(self.between_s)
            ),
            (Some(r), None) if self.repeats_max.is_some() => format!(
                "estimated time: at most {} (every cell at its {} repeats: {} of runs and \
                 warm-ups, about {} between tests), {inits}",
                human_duration(r + self.between_s),
                self.repeats_max.unwrap_or_default(),
                human_duration(r),
                human_duration(self.between_s)
            ),
            (Some(r), None) => format!(
                "estimated time: about {} ({} of runs and warm-ups, about {} between tests), {inits}",
                human_duration(r + self.between_s),
                human_duration(r),
                human_duration(self.between_s)
            ),
            (None, _) => format!(
                "estimated time: unknown (tests run a number of transactions), about {} between tests, {inits}",
                human_duration(self.between_s)
            ),
        }
    }
}

/// Seconds assumed for a new throwaway cluster (initdb and start).
pub const NEW_CLUSTER_S: f64 = 3.0;
/// Seconds assumed per scale unit of loading the pgbench tables.
pub const LOAD_S_PER_SCALE: f64 = 0.5;

/// How many times the tests' data is loaded, the time assumed for it, and the rule.
/// The tests are followed in run order as the runner takes them: a throwaway target's
/// server is replaced whenever [`crate::restarts::replaced`] says so (`[hygiene]
/// fresh_cluster`, each layout build and server start of `[repeats]`, a swept setting's
/// next value, a fault), each new cluster costing [`NEW_CLUSTER_S`]; on every server the
/// data is checked and loaded as [`crate::reloads`] says, by the target's `init` mode.
/// At worst: a database is taken to hold only what this campaign loaded into it since
/// it was last unknown (an existing server's at first, and after a test with faults).
pub fn initializations(campaign: &Campaign, m: &Matrix) -> (usize, f64, &'static str) {
    use crate::reloads::{after_test, checks, loads, After};
    use crate::spec::FreshCluster;
    let faulted = !campaign.fault_schedule().is_empty();
    let targets = campaign.spec.targets.len();
    let mut servers: Vec<Option<Server>> = vec![None; targets];
    let mut data: Vec<Data> = vec![Data::default(); targets];
    let (mut count, mut seconds) = (0, 0.0);
    let jobs = f64::from(campaign.spec.init.jobs.unwrap_or(1).max(1));
    for t in &m.tests {
        let target = &campaign.spec.targets[t.target];
        if target.is_throwaway() {
            let new = match &servers[t.target] {
                Some(s) => crate::restarts::replaced(campaign, &s.running(), t),
                None => true,
            };
            if new {
                servers[t.target] = Some(Server {
                    settings: t.settings.clone(),
                    level: campaign.level_of(t.repeat),
                    tests_done: 0,
                    scale: None,
                    faulted: false,
                });
                data[t.target] = Data::default();
                seconds += NEW_CLUSTER_S;
            }
        }
        let workload = &m.workloads[t.workload];
        let wanted = workload.dataset(t.scale);
        let d = &mut data[t.target];
        if checks(d.known.as_ref(), &wanted) {
            // pgbench's tables and each workload pack's are loaded apart, each at one
            // scale at a time.
            let holds = d.holds.get(&wanted.pack) == Some(&wanted.scale);
            if loads(target.init_mode(), d.changed, holds) {
                count += 1;
                let per_unit = match &workload.pack {
                    Some(p) => {
                        let s = p.pack.manifest.load.seconds_per_unit.unwrap_or(1.0);
                        s / jobs.min(f64::from(t.scale).max(1.0))
                    }
                    None => LOAD_S_PER_SCALE,
                };
                seconds += f64::from(t.scale) * per_unit;
                d.holds.insert(wanted.pack.clone(), wanted.scale);
            }
            (d.known, d.changed) = (Some(wanted), false);
        }
        match after_test(target.init_mode(), faulted, workload.replay.is_some()) {
            After::Known => {}
            After::Unknown => *d = Data::default(),
            After::Changed => (d.known, d.changed) = (None, true),
        }
        if let Some(s) = &mut servers[t.target] {
            s.tests_done += 1;
            s.scale = Some(t.scale);
            s.faulted = faulted;
        }
    }
    let levels = campaign.levels() != (1, 1);
    let existing_faulted = faulted && campaign.spec.targets.iter().any(|t| !t.is_throwaway());
    let rule = match campaign.spec.hygiene.fresh_cluster() {
        FreshCluster::Test => "a new cluster and its data before every test",
        _ if existing_faulted => {
            "one per target, scale and workload pack, and on an existing server again \
             after each test with faults, whose data is checked then"
        }
        FreshCluster::Scale if levels => {
            "a new cluster and its data for each layout build and server start, and \
             whenever a target's scale changes"
        }
        FreshCluster::Scale => "a new cluster and its data whenever a target's scale changes",
        FreshCluster::Never if levels => {
            "a new cluster and its data for each layout build and server start, then one \
             per scale and workload pack"
        }
        FreshCluster::Never => "one per target, scale and workload pack",
    };
    (count, seconds, rule)
}

/// A target's data as the estimate follows it through the tests, at worst.
#[derive(Debug, Clone, Default)]
struct Data {
    /// What the runner knows the database to hold (its target's `current_data`).
    known: Option<crate::matrix::Dataset>,
    /// The runner knows the data changed since it was loaded.
    changed: bool,
    /// The scale of each workload pack's tables (None: pgbench's) this campaign loaded
    /// into the database since it was last unknown.
    holds: std::collections::BTreeMap<Option<String>, u32>,
}

/// A throwaway server as the estimate follows it through the tests.
#[derive(Debug, Clone)]
struct Server {
    settings: Vec<(String, String)>,
    level: (u32, u32),
    tests_done: usize,
    scale: Option<u32>,
    faulted: bool,
}

impl Server {
    fn running(&self) -> crate::restarts::Running<'_> {
        crate::restarts::Running {
            settings: &self.settings,
            level: self.level,
            faulted: self.faulted,
            tests_done: self.tests_done,
            scale: self.scale,
        }
    }
}

/// `3725.0` → `1h 2m 5s`.
pub fn human_duration(s: f64) -> String {
    let total = s.round() as u64;
    let (h, m, sec) = (total / 3600, total / 60 % 60, total % 60);
    let mut parts = Vec::new();
    if h > 0 {
        parts.push(format!("{h}h"));
    }
    if m > 0 {
        parts.push(format!("{m}m"));
    }
    if sec > 0 || parts.is_empty() {
        parts.push(format!("{sec}s"));
    }
    parts.join(" ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn campaign(repeats: &str, hygiene: &str) -> Campaign {
        let text = format!(
            "[campaign]\nname = \"t\"\n\
             [[target]]\nname = \"a\"\nsource = \"pg.tar.bz2\"\n\
             [[target]]\nname = \"b\"\nsource = \"pg.tar.bz2\"\npatches = [\"x.patch\"]\n\
             [matrix]\nscales = [1, 2]\nclients = [1, 2]\nrepeats = 4\n\
             [repeats]\n{repeats}\n[run]\nduration = 10\n[hygiene]\n{hygiene}\n"
        );
        Campaign::parse(&text, "t.toml", std::path::Path::new(".")).unwrap()
    }

    /// The servers the runner starts, counted from the run order with the runner's own
    /// nesting of repeats ([`Campaign::level_of`]): a target's next test on another
    /// build, start or scale is on a new server (whose data is loaded).
    fn servers_started(c: &Campaign, m: &Matrix) -> usize {
        let mut last = std::collections::BTreeMap::new();
        m.tests
            .iter()
            .filter(|t| {
                let now = (c.level_of(t.repeat), t.scale);
                last.insert(t.target, now) != Some(now)
            })
            .count()
    }

    #[test]
    fn each_build_and_start_of_a_source_target_is_initialized_again() {
        let c = campaign("builds = 2\nstarts = 2", "");
        let m = crate::matrix::expand(&c).unwrap();
        assert_eq!(m.tests.len(), 32);
        // 2 targets × 2 scales × 2 builds × 2 starts.
        assert_eq!(servers_started(&c, &m), 16);
        let e = Estimate::of(&c, &m);
        assert_eq!(e.initializations, servers_started(&c, &m));
        // Each target: 4 servers at scale 1 and 4 at scale 2.
        let loads = 2.0 * (4.0 * 1.0 + 4.0 * 2.0) * LOAD_S_PER_SCALE;
        assert_eq!(e.init_s, 16.0 * NEW_CLUSTER_S + loads);
        assert!(
            e.line()
                .contains("(a new cluster and its data for each layout build"),
            "{}",
            e.line()
        );
        // `fresh_cluster = "scale"` replaces no more servers than the levels do here.
        let scale = campaign("builds = 2\nstarts = 2", "fresh_cluster = \"scale\"");
        assert_eq!(Estimate::of(&scale, &m).initializations, 16);
        // Without levels: one server per target, each scale loaded once into it.
        let plain = campaign("", "");
        let m = crate::matrix::expand(&plain).unwrap();
        let e = Estimate::of(&plain, &m);
        assert_eq!(e.initializations, 4);
        assert_eq!(e.init_s, 2.0 * NEW_CLUSTER_S + 2.0 * 3.0 * LOAD_S_PER_SCALE);
    }
    /// An existing server's campaign: 2 scales × 2 client counts × 2 repeats, with
    /// `target` its further keys and `fault` a `[[fault]]`'s (none when empty).
    fn existing(target: &str, fault: &str) -> Campaign {
        let fault = if fault.is_empty() {
            String::new()
        } else {
            format!("[[fault]]\n{fault}\n")
        };
        let text = format!(
            "[campaign]\nname = \"t\"\n[[target]]\nname = \"db\"\n\
             conninfo = \"host=db.invalid dbname=bench\"\n{target}\n\
             [matrix]\nscales = [1, 2]\nclients = [1, 2]\nrepeats = 2\n\
             [run]\nduration = 10\n{fault}"
        );
        Campaign::parse(&text, "t.toml", std::path::Path::new(".")).unwrap()
    }

    /// The loads the runner may do on an existing server with `init = "if-needed"`,
    /// counted in run order: a test loads its data when the runner does not know the
    /// database to hold it, i.e. when it is the target's first, follows a test of
    /// another scale, or follows a test with faults (whose data it checks, and at worst
    /// finds changed).
    fn loads_in_run_order(c: &Campaign, m: &Matrix) -> usize {
        let faulted = !c.spec.faults.is_empty();
        let mut last = std::collections::BTreeMap::new();
        m.tests
            .iter()
            .filter(|t| {
                let before = last.insert(t.target, t.scale);
                faulted || before != Some(t.scale)
            })
            .count()
    }

    #[test]
    fn an_existing_servers_data_is_counted_again_after_each_test_with_faults() {
        let command = "at = \"3s\"\naction = \"command\"\ncommand = \"true\"";
        let c = existing("", command);
        let m = crate::matrix::expand(&c).unwrap();
        assert_eq!(m.tests.len(), 8);
        let e = Estimate::of(&c, &m);
        // Every test follows a test with faults or is the first: 8, not one per scale.
        assert_eq!(loads_in_run_order(&c, &m), 8);
        assert_eq!(e.initializations, loads_in_run_order(&c, &m));
        assert!(
            e.line().contains("again after each test with faults"),
            "{}",
            e.line()
        );
        let scales: u32 = m.tests.iter().map(|t| t.scale).sum();
        assert_eq!(e.init_s, f64::from(scales) * LOAD_S_PER_SCALE);
        // Without faults, what the runner knows it keeps: a load per change of scale.
        let calm = existing("", "");
        let m = crate::matrix::expand(&calm).unwrap();
        let e = Estimate::of(&calm, &m);
        assert_eq!(e.initializations, loads_in_run_order(&calm, &m));
        assert!(e.initializations < 8, "{}", e.initializations);
        // `init = "never"` never loads, faults or not.
        let never = existing("init = \"never\"", command);
        assert_eq!(Estimate::of(&never, &m).initializations, 0);
        // `init = "always"` loads at every check, as if-needed does at worst.
        let always = existing("init = \"always\"", command);
        assert_eq!(Estimate::of(&always, &m).initializations, 8);
    }
}
