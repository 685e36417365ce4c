//! `pgsurge results import --from pgbench-tools`: a pgbench-tools results database
//! (its `testset`, `tests`, `test_bgwriter`, `test_stat_database`, `test_statio`,
//! `test_settings`, `timing` and `test_metrics_data` tables) into the store.
//!
//! Every testset becomes a set of kind `import`, every benchmark test a run of it;
//! the initialization tests (a script beginning with `:`, such as `:-i -I dtGvp`)
//! become the initialization facts of the first run after them. The schema is
//! checked before anything is read: a column this module does not know (a newer
//! pgbench-tools) or a column it needs that is missing is refused, naming both table
//! and column. A set already imported from the same database is found again by its
//! identity, and its tests already stored are not written twice.
//!
//! An import is all or nothing: every row is read and checked before the first write,
//! and the writes go to the store in one transaction. A row that cannot be imported is
//! left out and named, never dropped without a word.
//!
//! This file plans and writes the import (which sets and tests, which are already
//! stored, the one store transaction); the jobs it calls live in submodules:
//!
//! | module | owns |
//! |---|---|
//! | `schema` | the pgbench-tools tables and columns this import knows, and the check of a found schema |
//! | `source` | the read-only session on the pgbench-tools database: `tests` rows and a test's details |
//! | `test_rows` | one test as read, what its `results.txt` supplies, impossible values, the run it is stored as |

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use pgsurge_store::{
    now_rfc3339, set_kind, set_status, ServerRecord, SetRecord, Store, TargetRecord, WarningRecord,
};

mod schema;
mod source;
mod test_rows;

use source::{int, read_details, select_list, test_row, Source, TESTS_SELECT};
use test_rows::fill_from_results;

pub use schema::{check_schema, SchemaColumns};
pub use test_rows::{
    builtin_of, impossible_values, intervals_from_timing, to_run_write, TestDetails, TestRow,
};

/// What `import` did.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImportSummary {
    /// Sets created.
    pub sets_created: usize,
    /// Runs written.
    pub runs_written: usize,
    /// Runs already in the store, left as they were.
    pub runs_present: usize,
    /// Initialization tests, stored as facts of the run after them.
    pub init_tests: usize,
    /// Runs whose NULL figures were read from the results directory.
    pub filled_from_files: usize,
    /// The rows not imported, each with why.
    pub left_out: Vec<LeftOut>,
}

/// A row of the pgbench-tools database the import left out, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct LeftOut {
    /// `testset` or `tests`.
    pub table: &'static str,
    /// Its `server`, when it has one.
    pub server: Option<String>,
    /// Its `set`, when it has one.
    pub set: Option<i64>,
    /// Its `test` (a `tests` row).
    pub test: Option<i64>,
    /// Why it was left out.
    pub why: String,
}

impl std::fmt::Display for LeftOut {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut at = Vec::new();
        if let Some(s) = &self.server {
            at.push(format!("server {s:?}"));
        }
        if let Some(s) = self.set {
            at.push(format!("set {s}"));
        }
        if let Some(t) = self.test {
            at.push(format!("test {t}"));
        }
        write!(f, "{} row ({}): {}", self.table, at.join(", "), self.why)
    }
}

/// How to import.
#[derive(Debug, Clone)]
pub struct ImportOptions {
    /// The results database (conninfo or URL); its password never reaches the store.
    pub conninfo: String,
    /// pgbench-tools' `results/` directory, read where the database holds NULL.
    pub results_dir: Option<PathBuf>,
    /// Prefix of the set names: `<name>-<server>-set<set>`.
    pub name: String,
}

/// Imports a pgbench-tools results database into `store`, all or nothing: everything is
/// read and checked first, then written in one store transaction, so an error leaves
/// the store as it was. A row that cannot be imported (a test whose set has no
/// `testset` row, a value that is not a number or that no test can have, a
/// `results.txt` that cannot be read) is left out and named in
/// [`ImportSummary::left_out`]; a set missing any of its tests is stored `incomplete`
/// with a warning per test left out.
pub fn import(store: &mut Store, opts: &ImportOptions) -> Result<ImportSummary, String> {
    let nothing = |e: String| format!("{e}; nothing was imported");
    let mut src = Source::connect(&opts.conninfo).map_err(nothing)?;
    let schema = src.schema().map_err(nothing)?;
    check_schema(&schema).map_err(nothing)?;
    let identity = src
        .rows(
            "SELECT (SELECT system_identifier FROM pg_catalog.pg_control_system()), \
             current_database()",
        )
        .ok()
        .and_then(|r| r.into_iter().next())
        .map(|r| {
            r.into_iter()
                .map(Option::unwrap_or_default)
                .collect::<Vec<_>>()
                .join("/")
        })
        .unwrap_or_default();
    let (sets, left_out) =
        plan_import(store, &mut src, &schema, opts, &identity).map_err(nothing)?;
    let mut summary = ImportSummary {
        left_out,
        ..Default::default()
    };
    store
        .all_or_nothing(|store| {
            for set in sets {
                import_set(store, &mut src, &schema, set, &mut summary)?;
            }
            Ok::<(), String>(())
        })
        .map_err(|e| nothing(e.to_string()))?
        .map_err(nothing)?;
    Ok(summary)
}

/// What becomes of one test of a set.
#[derive(Debug)]
enum Fate {
    /// Written, `filled` when `results.txt` supplied a figure.
    Write { filled: bool },
    /// An initialization test: facts of the next run.
    Init,
    /// Already in the store.
    Present,
    /// Left out (named in the summary).
    LeftOut,
}

/// One `testset` row to write, with its tests in order.
#[derive(Debug)]
struct PlannedSet {
    record: SetRecord,
    /// The set stored by an earlier import of the same database.
    existing: Option<i64>,
    server: String,
    tests: Vec<(TestRow, Fate)>,
    /// The rows of this set left out (stored with it as warnings).
    left_out: Vec<LeftOut>,
}

/// Reads every `testset` and `tests` row and decides what becomes of each, writing
/// nothing: the sets with their tests, and the rows left out.
fn plan_import(
    store: &mut Store,
    src: &mut Source,
    schema: &SchemaColumns,
    opts: &ImportOptions,
    identity: &str,
) -> Result<(Vec<PlannedSet>, Vec<LeftOut>), String> {
    let set_rows = src.rows(&format!(
        "SELECT server, set::text, {} FROM testset ORDER BY server, set",
        select_list(schema, "testset", &[("info", "info")])
    ))?;
    let rows = src.rows(&format!(
        "SELECT {} FROM tests ORDER BY server, set, test",
        select_list(schema, "tests", TESTS_SELECT)
    ))?;
    let mut left_out = Vec::new();
    let mut tests: BTreeMap<(String, i64), Vec<TestRow>> = BTreeMap::new();
    for r in &rows {
        match test_row(r) {
            Ok(t) => tests.entry((t.server.clone(), t.set)).or_default().push(t),
            Err(l) => left_out.push(l),
        }
    }
    let mut sets = Vec::new();
    for s in &set_rows {
        let server = s[0].clone();
        let set = int(&s[1], "set");
        let (Some(server), Ok(Some(set))) = (server.clone(), set.clone()) else {
            left_out.push(LeftOut {
                table: "testset",
                server,
                set: set.ok().flatten(),
                test: None,
                why: "it has no server or no set number".into(),
            });
            continue;
        };
        let info = s.get(2).cloned().flatten();
        let set_tests = tests.remove(&(server.clone(), set)).unwrap_or_default();
        // Rows of this set that could not be read are already in `left_out`.
        let unreadable: Vec<LeftOut> = left_out
            .iter()
            .filter(|l| l.server.as_ref() == Some(&server) && l.set == Some(set))
            .cloned()
            .collect();
        if set_tests.is_empty() && unreadable.is_empty() {
            left_out.push(LeftOut {
                table: "testset",
                server: Some(server),
                set: Some(set),
                test: None,
                why: "no test of the tests table is in this set".into(),
            });
            continue;
        }
        let known = unreadable.len();
        let planned = plan_set(
            store,
            opts,
            identity,
            (server, set, info),
            set_tests,
            unreadable,
        )?;
        left_out.extend(planned.left_out[known..].iter().cloned());
        sets.push(planned);
    }
    for ((server, set), orphans) in tests {
        for t in orphans {
            left_out.push(LeftOut {
                table: "tests",
                server: Some(server.clone()),
                set: Some(set),
                test: Some(t.test),
                why: format!("testset has no row for set {set} of this server"),
            });
        }
    }
    Ok((sets, left_out))
}

/// The fate of each test of one `testset` row: already stored, completed from its
/// `results.txt`, or left out for a file that cannot be read or an impossible value.
fn plan_set(
    store: &mut Store,
    opts: &ImportOptions,
    identity: &str,
    (server, set, info): (String, i64, Option<String>),
    tests: Vec<TestRow>,
    mut left_out: Vec<LeftOut>,
) -> Result<PlannedSet, String> {
    let unreadable = left_out.len();
    let name = format!("{}-{server}-set{set}", opts.name);
    let hash = format!("pgbench-tools {identity} {server} {set}");
    let existing = store
        .find_set(set_kind::IMPORT, &name, &hash)
        .map_err(|e| e.to_string())?
        .map(|s| s.id);
    let present: BTreeSet<String> = match existing {
        Some(id) => store
            .stored_tests(id)
            .map_err(|e| e.to_string())?
            .into_iter()
            .map(|(k, _)| k)
            .collect(),
        None => BTreeSet::new(),
    };
    let mut planned = Vec::new();
    for mut t in tests {
        let fate = if t.is_init() {
            Fate::Init
        } else if present.contains(&t.key()) {
            Fate::Present
        } else {
            let filled = match &opts.results_dir {
                Some(dir) => fill_from_results(&mut t, dir),
                None => Ok(false),
            };
            let impossible = impossible_values(&t);
            let why = match &filled {
                Err(e) => Some(e.clone()),
                Ok(_) if !impossible.is_empty() => Some(format!(
                    "impossible value{}: {}",
                    if impossible.len() > 1 { "s" } else { "" },
                    impossible.join(", ")
                )),
                Ok(_) => None,
            };
            match why {
                Some(why) => {
                    left_out.push(LeftOut {
                        table: "tests",
                        server: Some(t.server.clone()),
                        set: Some(t.set),
                        test: Some(t.test),
                        why,
                    });
                    Fate::LeftOut
                }
                None => Fate::Write {
                    filled: filled == Ok(true),
                },
            }
        };
        planned.push((t, fate));
    }
    // The benchmark tests of the set: those read, and the rows that could not be.
    let bench = planned.iter().filter(|(t, _)| !t.is_init()).count() + unreadable;
    let status = if left_out.is_empty() {
        set_status::COMPLETE
    } else {
        set_status::INCOMPLETE
    };
    Ok(PlannedSet {
        record: SetRecord {
            name,
            kind: set_kind::IMPORT.into(),
            description: Some(match &info {
                Some(i) => format!("pgbench-tools set {set} of {server}: {i}"),
                None => format!("pgbench-tools set {set} of {server}"),
            }),
            spec_hash: Some(hash),
            planned_tests: Some(bench as i64),
            status: status.into(),
            created_at: now_rfc3339(),
            finished_at: Some(now_rfc3339()),
            ..Default::default()
        },
        existing,
        server,
        tests: planned,
        left_out,
    })
}

/// Writes one planned set (inside the import's transaction): the set, its server and
/// target, each test to write with its details, a warning per test left out.
fn import_set(
    store: &mut Store,
    src: &mut Source,
    schema: &SchemaColumns,
    set: PlannedSet,
    summary: &mut ImportSummary,
) -> Result<(), String> {
    let serr = |e: pgsurge_store::StoreError| e.to_string();
    let set_id = match set.existing {
        Some(id) => {
            store
                .set_set_status(id, &set.record.status, set.record.finished_at.as_deref())
                .map_err(serr)?;
            store
                .set_planned_tests(id, set.record.planned_tests.unwrap_or(0))
                .map_err(serr)?;
            id
        }
        None => {
            summary.sets_created += 1;
            store.create_set(&set.record).map_err(serr)?
        }
    };
    let stored_warnings: BTreeSet<String> = store
        .warnings(Some(set_id))
        .map_err(serr)?
        .into_iter()
        .map(|w| w.record.message)
        .collect();
    for l in &set.left_out {
        let message = format!("left out: {l}");
        if !stored_warnings.contains(&message) {
            store
                .add_warning(&WarningRecord {
                    set_id: Some(set_id),
                    run_id: None,
                    code: "import_left_out".into(),
                    message,
                    created_at: now_rfc3339(),
                })
                .map_err(serr)?;
        }
    }
    let server = set.server.as_str();
    let first = set.tests.iter().map(|(t, _)| t).find(|t| !t.is_init());
    let host = first.map(|t| ServerRecord {
        name: server.to_string(),
        hostname: None,
        cpu_model: t.server_cpu.clone(),
        cpu_count: None,
        memory_bytes: t.server_mem_gb.map(|g| g * (1 << 30)),
        kernel: None,
        os_release: t.server_os_release.clone(),
        details: Some(serde_json::json!({
            "uname": t.uname,
            "server_disk": t.server_disk,
            "source": "pgbench-tools",
        })),
    });
    let server_id = match host {
        Some(h) => Some(store.upsert_server(&h).map_err(serr)?),
        None => None,
    };
    let target_id = store
        .upsert_target(&TargetRecord {
            set_id,
            name: server.to_string(),
            server_id,
            kind: "conninfo".into(),
            conninfo: None,
            bin_dir: None,
            server_version: first.and_then(|t| t.server_version.clone()),
            server_version_num: None,
            settings: None,
        })
        .map_err(serr)?;
    let mut pending_init: Option<TestRow> = None;
    let mut repeats: BTreeMap<String, i64> = BTreeMap::new();
    for (t, fate) in set.tests {
        if let Fate::Init = fate {
            summary.init_tests += 1;
            pending_init = Some(t);
            continue;
        }
        // Repeats are numbered over every test of the cell, those left out included,
        // so a test imported later keeps its number.
        let cell = format!(
            "{}/{}/{}/{:?}/{}",
            t.scale.unwrap_or(0),
            t.workload(),
            t.clients.unwrap_or(0),
            t.rate_limit,
            t.query_mode()
        );
        let repeat = repeats.entry(cell).or_insert(0);
        *repeat += 1;
        let init = pending_init.take();
        match fate {
            Fate::Present => summary.runs_present += 1,
            Fate::Write { filled } => {
                let details = read_details(src, schema, &t)?;
                let w = to_run_write(set_id, target_id, *repeat, &t, details, init.as_ref());
                store.write_run(&w).map_err(serr)?;
                summary.runs_written += 1;
                summary.filled_from_files += usize::from(filled);
            }
            Fate::Init | Fate::LeftOut => {}
        }
    }
    Ok(())
}
