//! The real [`ScriptHost`]: one client's variables and function PRNG from
//! `pgsurge-script`, evaluating `\set`/`\if`/`\elif`, resolving `\sleep`, and running
//! `\shell`/`\setshell` processes (the only place the engine starts a process).

use std::io::Read;
use std::process::{Command as Process, Stdio};
use std::sync::Arc;

use pgsurge_script::{
    eval, shell_command, sleep_usec, Command, EvalCtx, MetaKind, Prng, Script, VarName, VarSlot,
    Variables,
};

use crate::client::{MetaFailure, MetaValue, ScriptHost};

/// `--reconnect`: the variable holding the number of the client's transaction under way.
pub const TXN_SEQ: &str = "txn_seq";

const EVAL_FAILED: &str = "evaluation of meta-command failed";
const ASSIGN_FAILED: &str = "assignment of meta-command failed";
const EXEC_FAILED: &str = "execution of meta-command failed";

/// Variables and PRNG of one client (in declaration order, `repr(C)`: what a
/// transaction uses first; the variables' own tables start with their per-statement
/// part).
#[repr(C)]
pub struct ClientScript {
    prng: Prng,
    saved: Prng,
    scripts: Arc<Vec<Script>>,
    /// The client's variables.
    pub vars: Variables,
    shell: String,
    /// `--reconnect`: where `:txn_seq` is kept, set on every transaction.
    txn_seq: Option<VarSlot>,
}

impl ClientScript {
    /// A client with its seeded PRNG and initial variables.
    pub fn new(scripts: Arc<Vec<Script>>, vars: Variables, prng: Prng) -> Self {
        ClientScript {
            scripts,
            txn_seq: vars.slot_of(TXN_SEQ),
            vars,
            prng,
            saved: prng,
            shell: String::new(),
        }
    }
}

fn debug_line(line: &str) {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let _ = writeln!(std::io::stderr(), "{line}");
}

fn fail(causes: Option<String>, summary: &'static str) -> MetaFailure {
    MetaFailure {
        causes: causes.into_iter().collect(),
        summary,
    }
}

impl ScriptHost for ClientScript {
    #[inline]
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    fn write_var(&mut self, name: &VarName, out: &mut Vec<u8>) -> bool {
        self.vars.append_text(name, out)
    }

    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    fn exec_meta(&mut self, script: usize, cmd: usize) -> Result<MetaValue, MetaFailure> {
        // Borrow the fields apart: no Arc traffic on the hot path.
        let ClientScript {
            scripts,
            vars,
            prng,
            shell,
            ..
        } = self;
        let Some(Command::Meta(m)) = scripts.get(script).and_then(|s| s.commands.get(cmd)) else {
            return Ok(MetaValue::Done);
        };
        let argv0 = m.argv.first().map(String::as_str).unwrap_or("");
        let mut debug = debug_line;
        let mut ctx = EvalCtx {
            vars,
            prng,
            debug: &mut debug,
            script,
            command: cmd,
        };
        match &m.kind {
            MetaKind::Set { var, expr } => {
                let v = eval(expr, &mut ctx)
                    .map_err(|e| fail(e.message().map(str::to_string), EVAL_FAILED))?;
                ctx.vars
                    .set_value("set", var, v)
                    .map_err(|e| fail(e.message(), ASSIGN_FAILED))?;
                Ok(MetaValue::Done)
            }
            MetaKind::If(expr) | MetaKind::Elif(expr) => {
                let v = eval(expr, &mut ctx)
                    .map_err(|e| fail(e.message().map(str::to_string), EVAL_FAILED))?;
                Ok(MetaValue::Truth(v.truth()))
            }
            MetaKind::Sleep(spec) => {
                let us = sleep_usec(spec, argv0, ctx.vars)
                    .map_err(|e| fail(Some(e.to_string()), EXEC_FAILED))?;
                Ok(MetaValue::SleepUs(us as i64))
            }
            MetaKind::Shell { words } => {
                shell_command(words, ctx.vars, shell)
                    .map_err(|e| fail(Some(e.to_string()), EXEC_FAILED))?;
                let cmd_name = words.first().cloned().unwrap_or_default();
                use std::io::Write;
                let _ = std::io::stdout().flush();
                let ok = Process::new("/bin/sh")
                    .arg("-c")
                    .arg(&self.shell)
                    .status()
                    .map(|s| s.success())
                    .unwrap_or(false);
                if !ok {
                    return Err(fail(
                        Some(format!("{cmd_name}: could not launch shell command")),
                        EXEC_FAILED,
                    ));
                }
                Ok(MetaValue::Done)
            }
            MetaKind::SetShell { var, words } => {
                shell_command(words, ctx.vars, shell)
                    .map_err(|e| fail(Some(e.to_string()), EXEC_FAILED))?;
                let cmd_name = words.first().cloned().unwrap_or_default();
                let output = run_for_output(&self.shell).map_err(|_| {
                    fail(
                        Some(format!(
                            "{cmd_name}: could not read result of shell command"
                        )),
                        EXEC_FAILED,
                    )
                })?;
                let v = pgsurge_script::parse_shell_output(&cmd_name, &output)
                    .map_err(|e| fail(Some(e.to_string()), EXEC_FAILED))?;
                ctx.vars
                    .set_int("setshell", var, v as i64)
                    .map_err(|e| fail(e.message(), EXEC_FAILED))?;
                Ok(MetaValue::Done)
            }
            _ => Ok(MetaValue::Done),
        }
    }

    fn store_var(&mut self, name: &str, value: &[u8], aset: bool) -> Result<(), String> {
        let ctx = if aset { "aset" } else { "gset" };
        self.vars
            .set_string(ctx, name, &String::from_utf8_lossy(value))
            .map_err(|e| e.to_string())
    }

    fn save_random_state(&mut self) {
        self.saved = self.prng;
    }

    fn set_txn_seq(&mut self, seq: i64) {
        // The variable exists from the start (`client_variables`): no allocation here,
        // and no lookup of its name once its slot is known.
        match self.txn_seq {
            Some(slot) => self.vars.set_int_at(slot, seq),
            None => {
                let _ = self.vars.set_int("option", TXN_SEQ, seq);
            }
        }
    }

    fn heap_hint(&self) -> *const u8 {
        self.vars.values_ptr()
    }

    fn restore_random_state(&mut self) {
        self.prng = self.saved;
    }
}

/// The first line (≤ 63 bytes, newline kept) a shell command prints, as `fgets` reads it.
fn run_for_output(cmd: &str) -> std::io::Result<String> {
    use std::io::Write;
    let _ = std::io::stdout().flush();
    let mut child = Process::new("/bin/sh")
        .arg("-c")
        .arg(cmd)
        .stdout(Stdio::piped())
        .spawn()?;
    let mut buf = Vec::new();
    if let Some(out) = child.stdout.as_mut() {
        out.read_to_end(&mut buf)?;
    }
    let _ = child.wait();
    if buf.is_empty() {
        return Err(std::io::Error::other("no output"));
    }
    let mut end = buf
        .iter()
        .position(|&b| b == b'\n')
        .map_or(buf.len(), |p| p + 1);
    end = end.min(63);
    Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
}
