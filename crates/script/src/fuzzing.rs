//! Owns the body of the fuzz target (`fuzz/fuzz_targets/parse_eval.rs` at the repository root), kept in the
//! library so crashers found by the fuzzer become ordinary regression tests.

use crate::{
    eval, parse_script, shell_command, sleep_usec, substitute_simple, Command, EvalCtx, MetaKind,
    Prng, QueryMode, Variables,
};

/// [`fuzz_one`] of a script file's bytes, read the way `-f` reads them.
#[doc(hidden)]
pub fn fuzz_bytes(data: &[u8]) {
    fuzz_one(&crate::script_text(data));
}

/// Parses `text` as a script and exercises everything downstream of a successful parse.
/// Must never panic or hang, whatever the input.
#[doc(hidden)]
pub fn fuzz_one(text: &str) {
    let mut script = match parse_script("fuzz.sql", text) {
        Ok(s) => s,
        Err(e) => {
            let _ = e.render();
            return;
        }
    };
    let mut vars = Variables::new();
    let _ = vars.set_string("option", "x", "12");
    let _ = vars.set_string("option", "s", "abc");
    let _ = vars.set_int("set", "default_seed", 42);
    let mut prng = Prng::seed(1);
    let mut out = String::new();
    for mode in [QueryMode::Extended, QueryMode::Prepared, QueryMode::Simple] {
        let _ = script.prepare(mode);
    }
    for (k, cmd) in script.commands.iter().enumerate() {
        match cmd {
            Command::Sql(s) => {
                out.clear();
                substitute_simple(&s.sql, &mut vars, &mut out);
            }
            Command::Meta(m) => {
                let expr = match &m.kind {
                    MetaKind::Set { expr, .. } | MetaKind::If(expr) | MetaKind::Elif(expr) => expr,
                    MetaKind::Sleep(spec) => {
                        let _ = sleep_usec(spec, &m.argv[0], &mut vars);
                        continue;
                    }
                    MetaKind::Shell { words } | MetaKind::SetShell { words, .. } => {
                        let _ = shell_command(words, &mut vars, &mut out);
                        continue;
                    }
                    _ => continue,
                };
                let mut sink = |_: &str| {};
                let mut ctx = EvalCtx {
                    vars: &mut vars,
                    prng: &mut prng,
                    debug: &mut sink,
                    script: 0,
                    command: k,
                };
                if let Ok(v) = eval(expr, &mut ctx) {
                    if let MetaKind::Set { var, .. } = &m.kind {
                        let _ = vars.set_value("set", var, v);
                    }
                }
            }
        }
    }
}
