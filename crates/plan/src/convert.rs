//! `pgsurge campaign convert --from pgbench-tools CONFIG`: a pgbench-tools `config`
//! (a bash file of assignments) as a campaign file with the same tests, in the same
//! order as its `runset` runs them: scales, then repeat rounds (`SETTIMES`), then
//! client counts, then rates. The config is read, never executed ([`bash`] reads it as
//! bash would): only the assignments bash runs at its top level are evaluated, in
//! order (quotes, `$VAR` and `${VAR}` of earlier assignments). A value made by a
//! command (`` `hostname` ``, `$(…)`), from the environment, or assigned where only a
//! condition decides whether bash runs it (an `if`, a loop, after `&&`) or by a called
//! function cannot be, which is an error for a setting the matrix needs and a comment
//! otherwise. Every setting that is not carried over gets a comment saying why.

pub mod bash;

use std::collections::BTreeMap;
use std::path::Path;

/// The value of one variable after the config's assignments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BashValue {
    /// Evaluated.
    Known(String),
    /// Not evaluable without running bash: why, and the 1-based line.
    Unknown {
        /// What stands in the way (a command substitution, an unset variable…).
        why: String,
        /// Line of the assignment.
        line: usize,
    },
}

/// The assignments of a bash config, in effect at its end.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BashConfig {
    /// Each variable's last value.
    pub vars: BTreeMap<String, BashValue>,
    /// Lines that are neither assignments, comments nor blank (not evaluated).
    pub other_lines: Vec<(usize, String)>,
    /// Assignments bash never runs in the config's shell (a function never called, a
    /// subshell, a pipeline, before a command), with the line and why.
    pub not_taken: Vec<(usize, String)>,
}

impl BashConfig {
    /// The value of `name`: `Ok(None)` when never assigned, an error naming the line
    /// when it cannot be evaluated.
    pub fn get(&self, name: &str) -> Result<Option<&str>, String> {
        match self.vars.get(name) {
            None => Ok(None),
            Some(BashValue::Known(v)) => Ok(Some(v)),
            Some(BashValue::Unknown { why, line }) => Err(format!(
                "{name} (line {line}) cannot be evaluated without running the config: {why}"
            )),
        }
    }

    /// The value of `name`, empty values as absent.
    fn nonempty(&self, name: &str) -> Result<Option<&str>, String> {
        Ok(self.get(name)?.filter(|v| !v.trim().is_empty()))
    }
}

pub(crate) fn is_name(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(ch) if ch.is_ascii_alphabetic() || ch == '_')
        && c.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// Parses the assignments of a bash config (`NAME=value`, `export NAME=value`) that
/// bash runs at its top level, in order ([`bash::commands`]).
pub fn parse_config(text: &str) -> BashConfig {
    use bash::Runs;
    let mut cfg = BashConfig::default();
    let commands = bash::commands(text);
    let functions = bash::function_assignments(&commands);
    let source: Vec<&str> = text.lines().collect();
    let line_text = |n: usize| source.get(n - 1).map_or("", |l| l.trim()).to_string();
    for c in &commands {
        // An assigning builtin's `NAME=value` words, or a command's leading ones (the
        // later ones are its arguments).
        let assignments: Vec<(&str, &str)> = if c.assigns_only {
            c.words.iter().filter_map(|w| bash::assignment(w)).collect()
        } else {
            c.words.iter().map_while(|w| bash::assignment(w)).collect()
        };
        match &c.runs {
            Runs::Always | Runs::Conditionally(_) if c.assigns_only => {
                for (name, value) in assignments {
                    let value = match &c.runs {
                        Runs::Conditionally(why) => BashValue::Unknown {
                            why: format!(
                                "it is assigned {why}, which bash runs only when its condition holds"
                            ),
                            line: c.line,
                        },
                        _ if value.starts_with("+=") => BashValue::Unknown {
                            why: "an append (+=) to a value only bash knows the type of".into(),
                            line: c.line,
                        },
                        _ if value.starts_with('(') => BashValue::Unknown {
                            why: "an array assignment".into(),
                            line: c.line,
                        },
                        _ => match eval_word(value, &cfg.vars) {
                            Ok(v) => BashValue::Known(v),
                            Err(why) => BashValue::Unknown { why, line: c.line },
                        },
                    };
                    cfg.vars.insert(name.to_string(), value);
                }
            }
            Runs::Always | Runs::Conditionally(_) => {
                let called = c
                    .words
                    .first()
                    .and_then(|w| functions.get(w).map(|a| (w, a)));
                if let Some((f, assigned)) = called {
                    for (name, at) in assigned {
                        cfg.vars.insert(
                            name.clone(),
                            BashValue::Unknown {
                                why: format!(
                                    "function {f}, called at line {}, assigns it (line {at})",
                                    c.line
                                ),
                                line: c.line,
                            },
                        );
                    }
                }
                if !assignments.is_empty() && called.is_none() {
                    let names: Vec<&str> = assignments.iter().map(|(n, _)| *n).collect();
                    cfg.not_taken.push((
                        c.line,
                        format!(
                            "{} before a command: bash sets it for that command only",
                            names.join(", ")
                        ),
                    ));
                }
                if cfg.other_lines.last().map(|(n, _)| *n) != Some(c.line) {
                    cfg.other_lines.push((c.line, line_text(c.line)));
                }
            }
            Runs::Elsewhere(place) if !assignments.is_empty() => {
                let names: Vec<&str> = assignments.iter().map(|(n, _)| *n).collect();
                let why = match place {
                    Some(f) if functions.contains_key(f) && !called_anywhere(&commands, f) => {
                        format!("in function {f}, which the config never calls")
                    }
                    Some(f) => format!("in function {f}"),
                    None => "in a subshell, a pipeline or a background command, which \
                             leaves the config's variables as they are"
                        .to_string(),
                };
                cfg.not_taken
                    .push((c.line, format!("{} {why}: not taken", names.join(", "))));
            }
            Runs::Elsewhere(_) => {}
        }
    }
    cfg
}

/// Whether a command of the config (a function body's included) calls function `f`.
fn called_anywhere(commands: &[bash::Command], f: &str) -> bool {
    commands
        .iter()
        .any(|c| !c.assigns_only && c.words.first().is_some_and(|w| w == f))
}

/// Evaluates the word after `=`: quotes, `$VAR`, `${VAR}`; stops at unquoted
/// whitespace (what follows is a comment or a command bash would run).
fn eval_word(s: &str, vars: &BTreeMap<String, BashValue>) -> Result<String, String> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    let mut in_double = false;
    while i < chars.len() {
        let c = chars[i];
        match c {
            '\'' if !in_double => {
                let end = chars[i + 1..]
                    .iter()
                    .position(|&x| x == '\'')
                    .ok_or("an unterminated single quote")?;
                out.extend(&chars[i + 1..i + 1 + end]);
                i += end + 2;
                continue;
            }
            '"' => in_double = !in_double,
            '`' => return Err(format!("a command substitution ({})", s.trim())),
            '\\' if i + 1 < chars.len() => {
                out.push(chars[i + 1]);
                i += 2;
                continue;
            }
            '$' => {
                let (name, used) = var_ref(&chars[i + 1..]);
                let name = name
                    .ok_or_else(|| format!("a substitution bash alone evaluates ({})", s.trim()))?;
                match vars.get(&name) {
                    Some(BashValue::Known(v)) => out.push_str(v),
                    Some(BashValue::Unknown { .. }) => {
                        return Err(format!("it uses ${name}, which cannot be evaluated"))
                    }
                    None => {
                        return Err(format!(
                            "it uses ${name}, which the config does not assign (the environment's)"
                        ))
                    }
                }
                i += 1 + used;
                continue;
            }
            c if c.is_whitespace() && !in_double => break,
            c => out.push(c),
        }
        i += 1;
    }
    if in_double {
        return Err("an unterminated double quote".into());
    }
    Ok(out)
}

/// The variable name after `$`: `NAME` or `{NAME}` (without default or other
/// operators), and how many characters it took.
fn var_ref(rest: &[char]) -> (Option<String>, usize) {
    if rest.first() == Some(&'{') {
        let Some(end) = rest.iter().position(|&c| c == '}') else {
            return (None, 0);
        };
        let name: String = rest[1..end].iter().collect();
        return (is_name(&name).then_some(name), end + 1);
    }
    let len = rest
        .iter()
        .take_while(|c| c.is_ascii_alphanumeric() || **c == '_')
        .count();
    let name: String = rest[..len].iter().collect();
    (is_name(&name).then_some(name), len)
}

/// The pgsurge built-in a pgbench-tools test script is the same transaction as.
fn builtin_of(script: &str) -> Option<&'static str> {
    match script {
        "select" => Some("select-only"),
        "tpc-b" => Some("tpcb-like"),
        "nobranch" => Some("simple-update"),
        _ => None,
    }
}

fn numbers<T: std::str::FromStr>(name: &str, v: &str) -> Result<Vec<T>, String> {
    v.split_whitespace()
        .map(|w| {
            w.parse()
                .map_err(|_| format!("{name}=\"{v}\": \"{w}\" is not a number"))
        })
        .collect()
}

fn toml_str(s: &str) -> String {
    toml::Value::String(s.to_string()).to_string()
}

fn list<T: std::fmt::Display>(v: &[T]) -> String {
    let items: Vec<String> = v.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(", "))
}

/// Settings with nothing to carry over, and why.
const NOT_CARRIED: &[(&str, &str)] = &[
    ("BASEDIR", "pgbench-tools' own directory"),
    ("STATEDIR", "pgbench-tools' own directory"),
    ("BENCHBIN", "pgsurge runs its own pgbench engine"),
    ("GNUPLOT", "`pgsurge report` draws the charts"),
    ("TABBED", "a layout of pgbench-tools' web report"),
    ("SUDODATA", "power readings through sudo helpers are not sampled"),
    ("RESULTHOST", "results go to the store given to `campaign run --store`"),
    ("RESULTUSER", "results go to the store given to `campaign run --store`"),
    ("RESULTPORT", "results go to the store given to `campaign run --store`"),
    ("RESULTDB", "results go to the store given to `campaign run --store`"),
    ("SERVERNAME", "the target's name labels the results"),
    ("ARCHIVE", "no upload to a central server"),
    ("BRIDGE_CLUSTER_ID", "Crunchy Bridge metrics are not read"),
    ("BRIDGE_BEARER", "Crunchy Bridge metrics are not read"),
    ("LARGEBUCKETS", "the store keeps the whole latency histogram: every percentile is exact"),
    ("TRIM", "pgsurge does not trim 10% off both ends of the latency data; `[run] warmup` discards a warm-up run instead"),
    ("RECOVERY", "no pause between sets; `[hooks]` can run `sleep` between tests"),
    ("TESTRESET", "a reset script before each test is a `[hooks]` command: add it there"),
];

/// The campaign of the pgbench-tools `config` file at `config` (paths in it relative
/// to its directory); an error names the file.
pub fn convert_file(config: &Path) -> Result<String, String> {
    let text = std::fs::read_to_string(config)
        .map_err(|e| format!("reading {}: {e}", config.display()))?;
    let dir = std::path::absolute(config)
        .ok()
        .and_then(|p| p.parent().map(Path::to_path_buf))
        .unwrap_or_default();
    convert_config(&text, &dir).map_err(|e| format!("{}: {e}", config.display()))
}

/// Converts a pgbench-tools config into a campaign file. `config_dir` is where the
/// config lives (`BASEDIR`): scripts of its `tests/` directory are referenced from there.
pub fn convert_config(text: &str, config_dir: &Path) -> Result<String, String> {
    let cfg = parse_config(text);
    let mut notes: Vec<String> = Vec::new();
    let mut out = String::new();
    out.push_str("# Converted from a pgbench-tools config by `pgsurge campaign convert`.\n");
    out.push_str("# runset's order: scales, then repeat rounds (SETTIMES), clients, rates.\n\n");

    let scales: Vec<u32> = numbers(
        "SCALES",
        cfg.nonempty("SCALES")?.ok_or("SCALES is not set")?,
    )?;
    let clients: Vec<u32> = numbers(
        "SETCLIENTS",
        cfg.nonempty("SETCLIENTS")?.ok_or("SETCLIENTS is not set")?,
    )?;
    if scales.is_empty() || clients.is_empty() {
        return Err("SCALES and SETCLIENTS must each list at least one number".into());
    }
    let repeats: u32 = match cfg.nonempty("SETTIMES")? {
        Some(v) => v
            .trim()
            .parse()
            .map_err(|_| format!("SETTIMES=\"{v}\" is not a number"))?,
        None => 1,
    };
    let script = cfg.nonempty("SCRIPT")?.ok_or("SCRIPT is not set")?;
    if script.starts_with(':') {
        return Err(format!(
            "SCRIPT=\"{script}\" passes options to pgbench instead of a script: no campaign test is equivalent"
        ));
    }
    let script_entry = match builtin_of(script) {
        Some(b) => {
            notes.push(format!(
                "SCRIPT={script}: pgbench-tools' tests/{script}.sql is the built-in {b}"
            ));
            toml_str(b)
        }
        None => {
            let testdir = cfg.nonempty("TESTDIR")?.unwrap_or("tests");
            let path = config_dir.join(testdir).join(format!("{script}.sql"));
            format!("{{ file = {} }}", toml_str(&path.to_string_lossy()))
        }
    };

    // [campaign]
    out.push_str("[campaign]\nname = \"pgbench-tools\"\nshuffle = false\n\n");

    out.push_str(&target_section(&cfg, &mut notes)?);

    // [matrix]
    out.push_str("[matrix]\n");
    out.push_str(&format!("scales = {}\n", list(&scales)));
    out.push_str(&format!("clients = {}\n", list(&clients)));
    out.push_str(&format!("scripts = [{script_entry}]\n"));
    let setrates = cfg.nonempty("SETRATES")?;
    let clientrates = cfg.nonempty("CLIENTRATES")?;
    if let Some(r) = clientrates {
        let rates: Vec<f64> = numbers("CLIENTRATES", r)?;
        out.push_str(&format!("rates_per_client = {}\n", list(&rates)));
        if setrates.is_some() {
            notes.push("SETRATES is ignored by runset when CLIENTRATES is set".into());
        }
    } else if let Some(r) = setrates {
        let rates: Vec<f64> = numbers("SETRATES", r)?;
        out.push_str(&format!("rates = {}\n", list(&rates)));
    }
    out.push_str(&format!("repeats = {repeats}\n\n"));

    out.push_str(&run_section(&cfg, &clients, &mut notes)?);

    out.push_str(&init_and_sampling(&cfg, &mut notes)?);

    for (var, why) in NOT_CARRIED {
        if cfg.vars.contains_key(*var) {
            notes.push(format!("{var}: not carried over: {why}"));
        }
    }
    for (n, line) in &cfg.other_lines {
        notes.push(format!(
            "line {n} is not an assignment and was not evaluated: {line}"
        ));
    }
    for (n, why) in &cfg.not_taken {
        notes.push(format!("line {n}: {why}"));
    }
    out.push_str("# Notes on the conversion:\n");
    for n in notes {
        out.push_str(&format!("# - {}\n", n.replace('\n', " ")));
    }
    Ok(out)
}

/// `[[target]]`: TESTHOST, TESTPORT, TESTDB, TESTUSER, SOCKETS, SKIPINIT.
fn target_section(cfg: &BashConfig, notes: &mut Vec<String>) -> Result<String, String> {
    let mut out = String::new();
    // [[target]]
    out.push_str("[[target]]\nname = \"pgbench-tools\"\n");
    let sockets = cfg.nonempty("SOCKETS")? == Some("1");
    let mut conninfo = Vec::new();
    for (var, key) in [
        ("TESTHOST", "host"),
        ("TESTPORT", "port"),
        ("TESTDB", "dbname"),
        ("TESTUSER", "user"),
    ] {
        if var == "TESTHOST" && sockets {
            notes.push("SOCKETS=1: no host, the default Unix socket is used".into());
            continue;
        }
        match cfg.get(var) {
            Ok(Some(v)) if !v.is_empty() => {
                conninfo.push(format!("{key}={}", pgsurge_wire::quote_conninfo(v)));
            }
            Ok(_) => {}
            Err(e) => notes.push(format!(
                "{e}; the connection leaves {key} to its default (PG* variables, then libpq's)"
            )),
        }
    }
    out.push_str(&format!("conninfo = {}\n", toml_str(&conninfo.join(" "))));
    let skip_init = cfg.nonempty("SKIPINIT")? == Some("1");
    out.push_str(if skip_init {
        "init = \"never\"                 # SKIPINIT=1\n\n"
    } else {
        "init = \"always\"                # runset rebuilds the tables for every scale\n\n"
    });

    Ok(out)
}

/// `[run]`: RUNTIME or TOTTRANS, MAX_WORKERS, PREPARED, MULTI.
fn run_section(
    cfg: &BashConfig,
    clients: &[u32],
    notes: &mut Vec<String>,
) -> Result<String, String> {
    let mut out = String::new();
    // [run]
    out.push_str("[run]\n");
    let runtime = cfg.nonempty("RUNTIME")?;
    let tottrans = cfg.nonempty("TOTTRANS")?;
    match (runtime, tottrans) {
        (Some(rt), _) => {
            let s: u64 = rt
                .trim()
                .parse()
                .map_err(|_| format!("RUNTIME=\"{rt}\" is not a number of seconds"))?;
            out.push_str(&format!("duration = {s}\n"));
            if tottrans.is_some() {
                notes.push("TOTTRANS is ignored by runset when RUNTIME is set".into());
            }
        }
        (None, total) => {
            let total: u64 = match total {
                Some(t) => t
                    .trim()
                    .parse()
                    .map_err(|_| format!("TOTTRANS=\"{t}\" is not a number"))?,
                None => 1000,
            };
            let per_client = (total / u64::from(clients[0])).max(1);
            out.push_str(&format!("transactions = {per_client}\n"));
            if clients.len() > 1 {
                notes.push(format!(
                    "TOTTRANS={total}: runset divides it among the clients of each test; a campaign \
                     gives one count per client, here TOTTRANS / {} (the first client count)",
                    clients[0]
                ));
            }
        }
    }
    match cfg.nonempty("MAX_WORKERS") {
        Ok(Some("auto")) => {
            out.push_str("threads = \"auto\"\n");
            notes.push(
                "MAX_WORKERS=auto: pgbench-tools uses the largest divisor of the clients up to \
                 the CPUs; pgsurge's auto uses min(clients, CPUs), pgbench's uneven split"
                    .into(),
            );
        }
        Ok(Some(n)) => {
            let n: u32 = n
                .trim()
                .parse()
                .map_err(|_| format!("MAX_WORKERS=\"{n}\" is not a number or auto"))?;
            let threads: Vec<u32> = clients.iter().map(|&c| workers_for(c, n)).collect();
            if threads.iter().all(|&t| t == threads[0]) {
                out.push_str(&format!("threads = {}\n", threads[0]));
            } else {
                out.push_str("threads = \"auto\"\n");
                notes.push(format!(
                    "MAX_WORKERS={n}: runset runs {} thread(s) for clients {}; a campaign gives \
                     one thread count (auto: min(clients, CPUs))",
                    list(&threads),
                    list(clients)
                ));
            }
        }
        Ok(None) => out.push_str("threads = 1\n"),
        Err(e) => {
            notes.push(format!("{e}; threads are left to auto"));
            out.push_str("threads = \"auto\"\n");
        }
    }
    if cfg.nonempty("PREPARED")?.is_some_and(|p| p != "0") {
        out.push_str("query_mode = \"prepared\"\n");
    }
    // benchwarmer passes -Dmultiplier=$MULTI to every test.
    let multi = cfg.nonempty("MULTI")?.unwrap_or("0");
    out.push_str(&format!(
        "defines = {{ multiplier = {} }}\n\n",
        toml_str(multi)
    ));

    Ok(out)
}

/// `[init]` and `[sampling]`: NEWINIT, SERVERSIDE, FILLFACTOR, OSDATA, DISKLIST.
fn init_and_sampling(cfg: &BashConfig, notes: &mut Vec<String>) -> Result<String, String> {
    let mut out = String::new();
    // [init]
    let server_side =
        cfg.nonempty("SERVERSIDE")? == Some("1") && cfg.nonempty("NEWINIT")?.is_some();
    out.push_str("[init]\n");
    out.push_str(if server_side {
        "method = \"server\"               # NEWINIT=1, SERVERSIDE=1: -I dtGvp\n"
    } else {
        "method = \"client\"\n"
    });
    if let Some(ff) = cfg.nonempty("FILLFACTOR")? {
        let v: u32 = ff
            .trim()
            .parse()
            .map_err(|_| format!("FILLFACTOR=\"{ff}\" is not a number"))?;
        if v != 100 {
            notes.push(format!(
                "FILLFACTOR={v}: runset does not pass it to pgbench -i; kept as [init] fillfactor"
            ));
            out.push_str(&format!("fillfactor = {v}\n"));
        }
    }
    out.push('\n');

    // [sampling]
    let osdata = cfg.nonempty("OSDATA")?.map(|v| v == "1").unwrap_or(true);
    out.push_str("[sampling]\n");
    out.push_str(&format!("os = {osdata}\n"));
    if let Ok(Some(d)) = cfg.nonempty("DISKLIST") {
        let devices: Vec<String> = d.split_whitespace().map(toml_str).collect();
        out.push_str(&format!("devices = [{}]\n", devices.join(", ")));
    }
    out.push('\n');

    Ok(out)
}

/// benchwarmer's thread count: the largest divisor of `clients` not above `max`.
pub fn workers_for(clients: u32, max: u32) -> u32 {
    if max <= 1 {
        return 1;
    }
    (1..=max.min(clients.max(1)))
        .rev()
        .find(|w| clients.is_multiple_of(*w))
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn assignments_are_evaluated_and_commands_are_not() {
        let cfg = parse_config(
            "# comment\nBASEDIR=`pwd`\nTESTHOST=localhost\nRESULTHOST=\"$TESTHOST\"\n\
             SCALES=\"1 10\"   # trailing comment\nexport A='x y'\nB=${A}z\n\
             C=$(hostname)\nD=$NOPE\nE=\"$BASEDIR/x\"\nif [ -n \"$X\" ]; then\nF=a\\ b\n",
        );
        assert_eq!(cfg.get("RESULTHOST"), Ok(Some("localhost")));
        assert_eq!(cfg.get("SCALES"), Ok(Some("1 10")));
        assert_eq!(cfg.get("B"), Ok(Some("x yz")));
        // Inside an `if`: bash runs it only when the condition holds.
        let e = cfg.get("F").unwrap_err();
        assert!(
            e.contains("F (line 12)") && e.contains("inside an `if` block"),
            "{e}"
        );
        assert_eq!(cfg.get("MISSING"), Ok(None));
        let e = cfg.get("BASEDIR").unwrap_err();
        assert!(e.contains("BASEDIR (line 2)") && e.contains("`pwd`"), "{e}");
        assert!(cfg.get("C").is_err());
        assert!(cfg.get("D").unwrap_err().contains("$NOPE"));
        assert!(cfg.get("E").unwrap_err().contains("$BASEDIR"));
        assert_eq!(cfg.other_lines.len(), 1);
        assert_eq!(cfg.other_lines[0].0, 11);
    }

    #[test]
    fn a_needed_variable_that_cannot_be_evaluated_is_a_clear_error() {
        let e = convert_config(
            "SCALES=`seq 1 3`\nSETCLIENTS=1\nSCRIPT=select\n",
            Path::new("/pgbt"),
        )
        .unwrap_err();
        assert!(
            e.contains("SCALES (line 1)") && e.contains("seq 1 3"),
            "{e}"
        );
        let e = convert_config("SETCLIENTS=1\nSCRIPT=select\n", Path::new("/pgbt")).unwrap_err();
        assert_eq!(e, "SCALES is not set");
        let e = convert_config(
            "SCALES=\"1 x\"\nSETCLIENTS=1\nSCRIPT=select\n",
            Path::new("/"),
        )
        .unwrap_err();
        assert!(e.contains("\"x\" is not a number"), "{e}");
    }

    #[test]
    fn only_what_bash_runs_at_top_level_is_taken() {
        // What bash gives: SCALES=1, SETCLIENTS=1, RUNTIME=10.
        let config = "SCALES=1\nSETCLIENTS=1\nSCRIPT=select\nRUNTIME=10\n\
            NOTE=\"the old settings were\nSCALES=5000\nRUNTIME=99999\n\"\n\
            slow() {\n  RUNTIME=99999\n}\n\
            cat >/dev/null <<EOF\nSETCLIENTS=32\nEOF\n";
        let cfg = parse_config(config);
        assert_eq!(cfg.get("SCALES"), Ok(Some("1")));
        assert_eq!(cfg.get("SETCLIENTS"), Ok(Some("1")));
        assert_eq!(cfg.get("RUNTIME"), Ok(Some("10")));
        let text = convert_config(config, Path::new("/pgbt")).unwrap();
        assert!(text.contains("scales = [1]\n"), "{text}");
        assert!(text.contains("clients = [1]\n"), "{text}");
        assert!(text.contains("duration = 10\n"), "{text}");
        assert!(
            text.contains(
                "line 10: RUNTIME in function slow, which the config never calls: not taken"
            ),
            "{text}"
        );

        // A condition only bash can decide: refused, naming the line and why.
        let e = convert_config(
            "SCALES=1\nSETCLIENTS=1\nSCRIPT=select\nif false; then SETCLIENTS=999; fi\n",
            Path::new("/pgbt"),
        )
        .unwrap_err();
        assert!(
            e.contains("SETCLIENTS (line 4) cannot be evaluated")
                && e.contains("inside an `if` block"),
            "{e}"
        );
        for tail in [
            "[ -n \"$X\" ] && SCALES=7\n",
            "for s in 1 2; do SCALES=$s; done\n",
            "case $X in big) SCALES=1000;; esac\n",
        ] {
            let e = convert_config(
                &format!("SCALES=1\nSETCLIENTS=1\nSCRIPT=select\n{tail}"),
                Path::new("/pgbt"),
            )
            .unwrap_err();
            assert!(
                e.contains("SCALES (line 4) cannot be evaluated"),
                "{tail}: {e}"
            );
        }
        // A top-level assignment after the condition decides again.
        let cfg = parse_config("if x; then SCALES=5; fi\nSCALES=2\n");
        assert_eq!(cfg.get("SCALES"), Ok(Some("2")));
        // A called function's assignments are unknown; a subshell's change nothing.
        let cfg =
            parse_config("RUNTIME=10\nslow() { RUNTIME=99; }\nslow\n( SCALES=3 )\nSCALES=1\n");
        let e = cfg.get("RUNTIME").unwrap_err();
        assert!(e.contains("function slow, called at line 3"), "{e}");
        assert_eq!(cfg.get("SCALES"), Ok(Some("1")));
    }

    /// Each variable's value after bash itself reads `config`.
    fn bash_values(config: &str, names: &[&String]) -> BTreeMap<String, String> {
        let dir = pgsurge_testkit::scratch_dir("convert-bash");
        let file = dir.path().join("config");
        std::fs::write(&file, config).unwrap();
        let mut script = String::from(". \"$1\" >/dev/null 2>&1\n");
        for n in names {
            script.push_str(&format!("printf '%s=%s\\0' {n} \"${{{n}-}}\"\n"));
        }
        let out = std::process::Command::new("bash")
            .args(["--noprofile", "--norc", "-c", &script, "bash"])
            .arg(&file)
            .current_dir(dir.path())
            .output()
            .expect("bash");
        String::from_utf8_lossy(&out.stdout)
            .split('\0')
            .filter_map(|kv| kv.split_once('='))
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn every_value_taken_is_the_one_bash_gives() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pgbench-tools");
        let configs = [
            std::fs::read_to_string(dir.join("config")).unwrap(),
            "SCALES=1\nSETCLIENTS=\"1 2\"\nRUNTIME=10\nNOTE=\"was\nSCALES=5000\n\"\n\
             slow() {\n  RUNTIME=99999\n}\ncat >/dev/null <<'EOF'\nSETCLIENTS=32\nEOF\n\
             A='x y' B=${A}z; C=\"$B\\\"q\"   # comment\n{ D=4; }\n( SCALES=3 )\n\
             echo E=5 | cat >/dev/null\nF=6 true\nexport G=7 H J=8\nI=(1 2)\nD+=1\n"
                .to_string(),
        ];
        // Set by no command of the config's shell: a pipeline's, one command's.
        let never_set = ["E".to_string(), "F".to_string()];
        for config in &configs {
            let cfg = parse_config(config);
            let names: Vec<&String> = cfg.vars.keys().chain(&never_set).collect();
            let bash = bash_values(config, &names);
            let mut compared = 0;
            for (name, value) in &cfg.vars {
                if let BashValue::Known(v) = value {
                    assert_eq!(Some(v), bash.get(name), "{name} in:\n{config}");
                    compared += 1;
                }
            }
            assert!(compared >= 4, "{cfg:?}");
            for absent in &never_set {
                assert_eq!(bash.get(absent).map(String::as_str), Some(""), "{absent}");
                assert!(
                    !matches!(cfg.vars.get(absent), Some(BashValue::Known(_))),
                    "{absent}: {cfg:?}"
                );
            }
        }
    }

    #[test]
    fn workers_are_the_largest_divisor_up_to_the_maximum() {
        assert_eq!(workers_for(6, 4), 3);
        assert_eq!(workers_for(8, 4), 4);
        assert_eq!(workers_for(1, 4), 1);
        assert_eq!(workers_for(7, 4), 1);
        assert_eq!(workers_for(16, 1), 1);
    }

    /// The tests runset runs for a config: its loops over scales, repeats, clients and
    /// rates, as (scale, clients, total rate, repeat).
    fn runset_order(
        scales: &[u32],
        times: u32,
        clients: &[u32],
        rates: &[f64],
    ) -> Vec<(u32, u32, Option<f64>, u32)> {
        let mut v = Vec::new();
        for &s in scales {
            for t in 1..=times {
                for &c in clients {
                    if rates.is_empty() {
                        v.push((s, c, None, t));
                    }
                    for &r in rates {
                        v.push((s, c, Some(r), t));
                    }
                }
            }
        }
        v
    }

    #[test]
    fn the_converted_plan_lists_runsets_tests_in_its_order() {
        let config = "BASEDIR=`pwd`\nBENCHBIN=`which pgbench`\nTESTDIR=\"tests\"\nSKIPINIT=0\n\
            OSDATA=1\nSOCKETS=0\nTESTHOST=localhost\nTESTUSER=`whoami`\nTESTPORT=5432\n\
            TESTDB=pgbench\nRESULTHOST=\"$TESTHOST\"\nNEWINIT=1\nSERVERSIDE=1\n\
            MAX_WORKERS=\"auto\"\nSCRIPT=\"tpc-b\"\nSCALES=\"1 10\"\nSETCLIENTS=\"1 2 4\"\n\
            SETTIMES=2\nRUNTIME=5\nTOTTRANS=\"\"\nSETRATES=\"100 200\"\nCLIENTRATES=\"\"\n\
            PREPARED=1\nTRIM=1\nMULTI=0\nDISKLIST=\"sda\"\n";
        let text = convert_config(config, Path::new("/pgbt")).unwrap();
        let campaign = crate::Campaign::parse(&text, "converted.toml", Path::new("/pgbt"))
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let m = crate::matrix::expand(&campaign).unwrap();
        let planned: Vec<(u32, u32, Option<f64>, u32)> = m
            .tests
            .iter()
            .map(|t| (t.scale, t.clients, t.rate, t.repeat))
            .collect();
        assert_eq!(
            planned,
            runset_order(&[1, 10], 2, &[1, 2, 4], &[100.0, 200.0])
        );
        assert_eq!(campaign.spec.run.query_mode, "prepared");
        assert!(text.contains("conninfo = \"host=localhost port=5432 dbname=pgbench\""));
        assert!(
            text.contains("TESTUSER (line 8) cannot be evaluated"),
            "{text}"
        );
        assert!(text.contains("# - TRIM: not carried over"), "{text}");
        assert!(text.contains("method = \"server\""));
        assert!(text.contains("duration = 5"));
    }

    #[test]
    fn pgbench_tools_default_config_plans_runsets_tests() {
        let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/pgbench-tools");
        let config = std::fs::read_to_string(dir.join("config")).unwrap();
        let text = convert_config(&config, &dir).unwrap();
        let campaign = crate::Campaign::parse(&text, "converted.toml", &dir)
            .unwrap_or_else(|e| panic!("{e}\n{text}"));
        let m = crate::matrix::expand(&campaign).unwrap();
        let planned: Vec<(u32, u32, Option<f64>, u32)> = m
            .tests
            .iter()
            .map(|t| (t.scale, t.clients, t.rate, t.repeat))
            .collect();
        assert_eq!(
            planned,
            runset_order(&[1, 10, 100, 1000], 3, &[1, 2, 4, 8, 16, 32], &[])
        );
        assert!(m.tests.iter().all(|t| t.key.contains("/select-only/")));
        for var in ["TRIM", "RECOVERY", "GNUPLOT", "LARGEBUCKETS", "BENCHBIN"] {
            assert!(
                text.contains(&format!("# - {var}")),
                "{var} has no note:\n{text}"
            );
        }
    }

    #[test]
    fn per_client_rates_and_custom_scripts_are_carried_over() {
        let text = convert_config(
            "SCRIPT=insert\nSCALES=5\nSETCLIENTS=\"2 4\"\nSETTIMES=1\nRUNTIME=\"\"\n\
             TOTTRANS=1000\nCLIENTRATES=\"10 20\"\nMAX_WORKERS=2\nSOCKETS=1\nTESTDB=bench\n",
            Path::new("/opt/pgbench-tools"),
        )
        .unwrap();
        assert!(text.contains("rates_per_client = [10, 20]"), "{text}");
        assert!(
            text.contains("scripts = [{ file = \"/opt/pgbench-tools/tests/insert.sql\" }]"),
            "{text}"
        );
        assert!(text.contains("transactions = 500"), "{text}");
        assert!(text.contains("threads = 2"), "{text}");
        assert!(text.contains("conninfo = \"dbname=bench\""), "{text}");
        assert!(text.contains("SOCKETS=1"), "{text}");
    }
}
