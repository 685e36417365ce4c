//! `bench --workload PACK -i -s N`: the pack's loader. Its SQL files run on the server
//! (the data is generated there, by `INSERT … SELECT`), in three phases: `schema` once,
//! the data `steps` (a `per = "unit"` step once per unit of scale, the units spread
//! over the `--init-jobs` connections), and `finish` once.
//!
//! Every file sees `:scale` and the pack's parameters; a per-unit step also sees
//! `:unit` (neither can be a parameter or `-D`). Before the first file the load marker
//! is removed, and after the last one it is written ([`crate::marker`]). Before each file the session's `random()` is seeded with `setseed()` from
//! the run's random seed, the step and the unit, so the same `--random-seed` gives
//! the same data however the units are spread over connections.

use std::io::Write;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use pgsurge_wire::{CancelToken, Connection};

use crate::error::WorkloadError;
use crate::manifest::Per;
use crate::pack::Pack;

/// Opens one more connection to the database being loaded.
pub type Connect<'a> = dyn Fn() -> Result<Connection, String> + Sync + 'a;

/// What to load.
#[derive(Debug, Clone, Copy)]
pub struct LoadOptions {
    /// `-s`: units of scale (warehouses for `tpcc`).
    pub scale: u32,
    /// `--init-jobs`: connections for the per-unit steps.
    pub jobs: usize,
    /// The random seed the data derives from.
    pub seed: u64,
}

/// Replaces each `:name` of `vars` in `sql` by its value. A `:` preceded by `:` (a
/// cast) or by an identifier character is left alone, as is a longer name.
pub fn substitute(sql: &str, vars: &[(String, String)]) -> String {
    let bytes = sql.as_bytes();
    let mut out = String::with_capacity(sql.len());
    let mut i = 0;
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    while i < bytes.len() {
        let c = bytes[i];
        if c == b':' && (i == 0 || !(bytes[i - 1] == b':' || ident(bytes[i - 1]))) {
            let start = i + 1;
            let mut end = start;
            while end < bytes.len() && ident(bytes[end]) {
                end += 1;
            }
            let name = &sql[start..end];
            if let Some((_, v)) = vars.iter().find(|(k, _)| k == name) {
                out.push_str(v);
                i = end;
                continue;
            }
        }
        // Copy one whole UTF-8 character.
        let len = sql[i..].chars().next().map_or(1, char::len_utf8);
        out.push_str(&sql[i..i + len]);
        i += len;
    }
    out
}

/// The argument of `setseed()` for one file: a value in [-1, 1] from the seed, the
/// step and the unit (splitmix64).
fn setseed_value(seed: u64, step: usize, unit: u32) -> f64 {
    let mut z = seed
        .wrapping_add((step as u64).wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(u64::from(unit).wrapping_mul(0xD1B5_4A32_D192_ED03));
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    // 53 random bits → [0, 1) → [-1, 1).
    ((z >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
}

/// The statements of one of the loader's SQL files, split by psql's rules (each is
/// sent on its own: `VACUUM` and `CREATE INDEX CONCURRENTLY` cannot share a query).
pub(crate) fn statements(rel: &str, sql: &str) -> Result<Vec<String>, WorkloadError> {
    let script = pgsurge_script::parse_script(rel, sql).map_err(|e| WorkloadError::Script {
        file: rel.to_string(),
        message: crate::error::script_message(&e),
    })?;
    script
        .commands
        .into_iter()
        .map(|c| match c {
            pgsurge_script::Command::Sql(s) => Ok(s.source),
            pgsurge_script::Command::Meta(m) => Err(WorkloadError::Script {
                file: rel.to_string(),
                message: format!(
                    "\\{}: a loader file holds SQL statements only",
                    m.argv.first().map(String::as_str).unwrap_or("")
                ),
            }),
        })
        .collect()
}

fn run_file(
    conn: &mut Connection,
    pack: &Pack,
    rel: &str,
    vars: &[(String, String)],
    seed: f64,
) -> Result<(), WorkloadError> {
    let fail = |e: pgsurge_wire::QueryError| WorkloadError::Sql {
        file: rel.to_string(),
        message: e.to_string().trim_end().to_string(),
    };
    // NOTICEs of `DROP … IF EXISTS` are noise in a load's output; warnings still show.
    conn.execute(&format!(
        "set client_min_messages = warning; select setseed({seed:.17})"
    ))
    .map_err(fail)?;
    for stmt in statements(rel, &substitute(pack.file(rel), vars))? {
        conn.execute(&stmt).map_err(fail)?;
    }
    Ok(())
}

fn refuse_own_variables(pack: &Pack) -> Result<(), WorkloadError> {
    match pack
        .parameters()
        .into_iter()
        .find(|(k, _)| crate::manifest::LOADER_VARIABLES.contains(&k.as_str()))
    {
        Some((name, _)) => Err(WorkloadError::Parameter {
            pack: pack.name().to_string(),
            name,
            message: "the loader sets this variable itself (the scale of -s, the unit a \
                      per-unit step loads); it cannot be a parameter or -D"
                .into(),
        }),
        None => Ok(()),
    }
}

fn base_vars(pack: &Pack, scale: u32) -> Vec<(String, String)> {
    let mut vars = vec![("scale".to_string(), scale.to_string())];
    vars.extend(pack.parameters());
    vars
}

/// The loading's sessions: when the loading is interrupted or one of them fails,
/// the statements still running on the others are cancelled on the server.
struct Sessions<'a> {
    interrupted: Option<&'a AtomicBool>,
    failed: AtomicBool,
    finished: AtomicBool,
    tokens: Mutex<Vec<CancelToken>>,
}

impl Sessions<'_> {
    fn interrupted(&self) -> bool {
        self.interrupted.is_some_and(|c| c.load(Ordering::Relaxed))
    }

    fn stopped(&self) -> bool {
        self.interrupted() || self.failed.load(Ordering::Relaxed)
    }

    fn register(&self, c: &Connection) {
        self.tokens
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(c.cancel_token());
    }

    /// Until the loading finishes: on a stop, cancels every session's statement once.
    fn watch(&self) {
        while !self.finished.load(Ordering::Relaxed) {
            if self.stopped() {
                for t in self.tokens.lock().unwrap_or_else(|p| p.into_inner()).iter() {
                    // A session that is idle or gone ignores the request.
                    let _ = t.cancel();
                }
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// Loads `pack` at `opts.scale` into the database of `conn`, opening more connections
/// with `connect` for the per-unit steps; progress lines go to `err`. `cancel`,
/// when raised, cancels the statements running and stops the loading.
pub fn load(
    pack: &Pack,
    conn: &mut Connection,
    connect: &Connect<'_>,
    opts: LoadOptions,
    err: &mut dyn Write,
    cancel: Option<&AtomicBool>,
) -> Result<(), WorkloadError> {
    let sessions = Sessions {
        interrupted: cancel,
        failed: AtomicBool::new(false),
        finished: AtomicBool::new(false),
        tokens: Mutex::new(Vec::new()),
    };
    sessions.register(conn);
    let result = std::thread::scope(|s| {
        s.spawn(|| sessions.watch());
        let r = load_steps(pack, conn, connect, opts, err, &sessions);
        sessions.finished.store(true, Ordering::Relaxed);
        r
    });
    match result {
        Err(_) if sessions.interrupted() => Err(WorkloadError::Canceled),
        other => other,
    }
}

fn load_steps(
    pack: &Pack,
    conn: &mut Connection,
    connect: &Connect<'_>,
    opts: LoadOptions,
    err: &mut dyn Write,
    sessions: &Sessions<'_>,
) -> Result<(), WorkloadError> {
    let started = Instant::now();
    refuse_own_variables(pack)?;
    let vars = base_vars(pack, opts.scale);
    let load = &pack.manifest.load;
    crate::marker::clear(conn)?;
    let mut step_no = 0usize;
    for rel in &load.schema {
        let _ = writeln!(err, "creating the schema ({rel})...");
        run_file(conn, pack, rel, &vars, setseed_value(opts.seed, step_no, 0))?;
        step_no += 1;
    }
    for step in &load.steps {
        if sessions.stopped() {
            return Err(WorkloadError::Canceled);
        }
        let t = Instant::now();
        match step.per {
            Per::Once => {
                let _ = writeln!(err, "loading {}...", step.file);
                run_file(
                    conn,
                    pack,
                    &step.file,
                    &vars,
                    setseed_value(opts.seed, step_no, 0),
                )?;
            }
            Per::Unit => {
                let jobs = opts.jobs.clamp(1, opts.scale.max(1) as usize);
                let _ = writeln!(
                    err,
                    "loading {} for {} units of scale over {jobs} connection{}...",
                    step.file,
                    opts.scale,
                    if jobs == 1 { "" } else { "s" }
                );
                let units = UnitStep {
                    pack,
                    rel: &step.file,
                    vars: &vars,
                    opts,
                    step_no,
                };
                units.run(conn, connect, jobs, sessions)?;
                let _ = writeln!(err, "  {} units loaded", opts.scale);
            }
        }
        let _ = writeln!(
            err,
            "  {} done in {:.2} s",
            step.file,
            t.elapsed().as_secs_f64()
        );
        step_no += 1;
    }
    for rel in &load.finish {
        if sessions.stopped() {
            return Err(WorkloadError::Canceled);
        }
        let _ = writeln!(err, "finishing ({rel})...");
        run_file(conn, pack, rel, &vars, setseed_value(opts.seed, step_no, 0))?;
        step_no += 1;
    }
    crate::marker::write(
        conn,
        &crate::marker::LoadMarker {
            pack: pack.name().to_string(),
            scale: i64::from(opts.scale),
            seed: opts.seed,
            digest: crate::marker::loader_digest(pack),
        },
    )?;
    let _ = writeln!(
        err,
        "done in {:.2} s (workload {}, scale {}).",
        started.elapsed().as_secs_f64(),
        pack.name(),
        opts.scale
    );
    Ok(())
}

/// One per-unit step.
struct UnitStep<'a> {
    pack: &'a Pack,
    rel: &'a str,
    vars: &'a [(String, String)],
    opts: LoadOptions,
    step_no: usize,
}

impl UnitStep<'_> {
    /// Units 1…scale taken in order by `jobs` workers, the first on `conn`, the others
    /// on connections of their own.
    fn run(
        &self,
        conn: &mut Connection,
        connect: &Connect<'_>,
        jobs: usize,
        sessions: &Sessions<'_>,
    ) -> Result<(), WorkloadError> {
        let next = AtomicUsize::new(1);
        let first_error: Mutex<Option<WorkloadError>> = Mutex::new(None);
        // The first error is kept before the others are cancelled (their errors
        // would only say so).
        let fail = |e: WorkloadError| {
            first_error
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .get_or_insert(e);
            sessions.failed.store(true, Ordering::Relaxed);
        };
        let work = |c: &mut Connection| loop {
            if sessions.stopped() {
                return;
            }
            let Ok(unit) = u32::try_from(next.fetch_add(1, Ordering::Relaxed)) else {
                return;
            };
            if unit > self.opts.scale {
                return;
            }
            if let Err(e) = self.run_unit(c, unit) {
                fail(e);
                return;
            }
        };
        std::thread::scope(|s| {
            for _ in 1..jobs {
                s.spawn(|| match connect() {
                    Ok(mut c) => {
                        sessions.register(&c);
                        work(&mut c);
                        c.close();
                    }
                    Err(e) => fail(WorkloadError::Connect(e)),
                });
            }
            work(conn);
        });
        if let Some(e) = first_error.into_inner().unwrap_or_else(|p| p.into_inner()) {
            return Err(e);
        }
        if sessions.stopped() {
            return Err(WorkloadError::Canceled);
        }
        Ok(())
    }

    fn run_unit(&self, c: &mut Connection, unit: u32) -> Result<(), WorkloadError> {
        let mut v = self.vars.to_vec();
        v.push(("unit".to_string(), unit.to_string()));
        let seed = setseed_value(self.opts.seed, self.step_no, unit);
        run_file(c, self.pack, self.rel, &v, seed).map_err(|e| match e {
            WorkloadError::Sql { file, message } => WorkloadError::Sql {
                file,
                message: format!("unit {unit}: {message}"),
            },
            other => other,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars() -> Vec<(String, String)> {
        vec![("scale".into(), "4".into()), ("unit".into(), "2".into())]
    }

    #[test]
    fn substitution_replaces_known_names_only() {
        let s = substitute(
            "select :scale, :unit::int, x::text, :units, ':unit', a:scale",
            &vars(),
        );
        assert_eq!(s, "select 4, 2::int, x::text, :units, '2', a:scale");
    }

    #[test]
    fn setseed_values_are_in_range_and_differ_by_unit() {
        let a = setseed_value(1, 0, 1);
        let b = setseed_value(1, 0, 2);
        assert!((-1.0..=1.0).contains(&a) && (-1.0..=1.0).contains(&b));
        assert_ne!(a, b);
        assert_eq!(a, setseed_value(1, 0, 1));
    }
}
