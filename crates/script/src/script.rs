//! Owns the parsed form of a script ([`Script`], [`Command`]) and [`parse_script`], which
//! drives the SQL splitter and the meta-command parser the way pgbench's `ParseScript`
//! does: SQL text before a backslash becomes a command, `\gset`/`\aset` merge into the
//! preceding SQL command, and the static `\if` structure is checked at the end.

use crate::error::ScriptError;
use crate::expr::Expr;
use crate::meta::{parse_meta, Parsed};
use crate::names::VarName;
use crate::splitter::{skip_sql_comments, SqlScanner, Stop};

/// A parsed script.
#[derive(Debug, Clone, PartialEq)]
pub struct Script {
    /// The name pgbench shows (file name as given, or a builtin's description).
    pub name: String,
    /// Commands in order; command numbers in messages are indexes into this.
    pub commands: Vec<Command>,
}

/// One command of a script.
#[derive(Debug, Clone, PartialEq)]
pub enum Command {
    /// An SQL statement (possibly compound with `\;`).
    Sql(SqlCommand),
    /// A meta command.
    Meta(MetaCommand),
}

impl Command {
    /// The text `-r` reports and error messages show for the command.
    pub fn first_line(&self) -> &str {
        match self {
            Command::Sql(s) => &s.first_line,
            Command::Meta(m) => &m.first_line,
        }
    }

    /// 1-based source line where the command starts.
    pub fn line(&self) -> usize {
        match self {
            Command::Sql(s) => s.line,
            Command::Meta(m) => m.line,
        }
    }
}

/// What happens with an SQL command's results.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum SqlMeta {
    /// Results are discarded.
    #[default]
    None,
    /// `\gset [prefix]`: the last result must have exactly one row; columns become
    /// variables `<prefix><column>`.
    Gset {
        /// Variable name prefix (may be empty).
        prefix: String,
    },
    /// `\aset [prefix]`: every non-empty result's last row is stored.
    Aset {
        /// Variable name prefix (may be empty).
        prefix: String,
    },
}

/// An SQL command.
#[derive(Debug, Clone, PartialEq)]
pub struct SqlCommand {
    /// The statement as written (after dropping leading white space and `--` lines),
    /// with `:var` references (pgbench's `lines`).
    pub source: String,
    /// The text to send: equal to `source` until [`Script::prepare`] rewrites `:var`
    /// references to `$n` for the extended and prepared modes.
    pub sql: String,
    /// Variable names for `$1..$n` (empty in simple mode).
    pub params: Vec<Box<str>>,
    /// First line of the statement, at most 127 bytes (shown by `-r` and in messages).
    pub first_line: String,
    /// 1-based line where the statement starts.
    pub line: usize,
    /// `\gset` / `\aset` attached to it.
    pub meta: SqlMeta,
}

/// A meta command.
#[derive(Debug, Clone, PartialEq)]
pub struct MetaCommand {
    /// What it does.
    pub kind: MetaKind,
    /// Its words as pgbench keeps them: `argv[0]` is the command name as typed (without
    /// the backslash, e.g. `set` or `SET`), used in abort messages and `--debug` lines.
    /// For `\set` it is `[name, variable]`, for `\if`/`\elif` just `[name]`.
    pub argv: Vec<String>,
    /// Source text from the backslash to the end of the command, continuation lines
    /// included (what `-r` prints).
    pub first_line: String,
    /// 1-based line of the backslash.
    pub line: usize,
}

/// The kinds of meta command.
#[derive(Debug, Clone, PartialEq)]
pub enum MetaKind {
    /// `\set var expr`
    Set {
        /// Variable to assign (validated when assigned).
        var: VarName,
        /// Expression.
        expr: Expr,
    },
    /// `\setshell var command [args…]`
    SetShell {
        /// Variable to assign.
        var: String,
        /// Command words (`:x` substituted at run time, `::x` → `:x`).
        words: Vec<String>,
    },
    /// `\shell command [args…]`
    Shell {
        /// Command words.
        words: Vec<String>,
    },
    /// `\sleep n [us|ms|s]`
    Sleep(SleepSpec),
    /// `\if expr`
    If(Expr),
    /// `\elif expr`
    Elif(Expr),
    /// `\else`
    Else,
    /// `\endif`
    EndIf,
    /// `\startpipeline`
    StartPipeline,
    /// `\syncpipeline`
    SyncPipeline,
    /// `\endpipeline`
    EndPipeline,
}

/// A `\sleep` duration as written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SleepSpec {
    /// The amount: a literal (C `atoi` of the word) or a variable name.
    pub amount: SleepAmount,
    /// Unit (seconds by default).
    pub unit: SleepUnit,
}

/// The amount of a `\sleep`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SleepAmount {
    /// A literal integer.
    Literal(i32),
    /// `:name`, resolved at run time with [`crate::sleep_usec`].
    Variable(String),
}

/// A `\sleep` unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SleepUnit {
    /// `us`
    Micros,
    /// `ms`
    Millis,
    /// `s` (default)
    Seconds,
}

impl SleepUnit {
    /// Microseconds per unit.
    pub fn factor(self) -> i32 {
        match self {
            SleepUnit::Micros => 1,
            SleepUnit::Millis => 1000,
            SleepUnit::Seconds => 1_000_000,
        }
    }
}

/// Most bytes of a statement kept in its `first_line` (pgbench's 128-byte buffer).
const FIRST_LINE_MAX: usize = 127;

fn sql_first_line(text: &str) -> String {
    if let std::borrow::Cow::Owned(bytes) = crate::script_bytes(text) {
        // pgbench's cut is by bytes, whatever they are
        let t = &bytes[..bytes.len().min(FIRST_LINE_MAX)];
        let cut = t.iter().position(|&b| b == b'\n' || b == b'\r');
        return String::from_utf8_lossy(&t[..cut.unwrap_or(t.len())]).into_owned();
    }
    let mut end = text.len().min(FIRST_LINE_MAX);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    let t = &text[..end];
    let cut = t.find(['\n', '\r']).unwrap_or(t.len());
    t[..cut].to_string()
}

pub(crate) fn line_of(src: &str, offset: usize) -> usize {
    1 + src.as_bytes()[..offset.min(src.len())]
        .iter()
        .filter(|&&c| c == b'\n')
        .count()
}

/// Parses a script. `source_name` is what messages call it (the file name as given, or
/// a builtin's description). Performs every load-time check pgbench performs, in its
/// order: syntax errors as they are met, then "empty command list", then the `\if`
/// structure.
pub fn parse_script(source_name: &str, text: &str) -> Result<Script, ScriptError> {
    let mut sc = SqlScanner::new(text);
    let mut commands: Vec<Command> = Vec::new();
    loop {
        let mut buf = String::new();
        let mut start = None;
        let stop = sc.scan(&mut buf, &mut start);
        if let Some(skip) = skip_sql_comments(&buf) {
            let source = buf[skip..].to_string();
            let line = line_of(text, start.unwrap_or(0));
            commands.push(Command::Sql(SqlCommand {
                first_line: sql_first_line(&source),
                sql: source.clone(),
                source,
                params: Vec::new(),
                line,
                meta: SqlMeta::None,
            }));
        }
        if stop == Stop::Backslash {
            let backslash = sc.pos - 1;
            let (parsed, end) = parse_meta(text, backslash, source_name)?;
            sc.pos = end;
            match parsed {
                Parsed::Nothing => {}
                Parsed::Meta(m) => commands.push(Command::Meta(m)),
                Parsed::ResultSet { aset, prefix, line } => {
                    let must_follow = |more: Option<String>| ScriptError::Syntax {
                        source_name: source_name.to_string(),
                        line,
                        message: format!(
                            "\\gset must follow an SQL command{}",
                            more.map(|m| format!(" ({m})")).unwrap_or_default()
                        ),
                        context: None,
                        column: None,
                    };
                    match commands.last_mut() {
                        None => return Err(must_follow(None)),
                        Some(Command::Meta(m)) => {
                            return Err(must_follow(Some(m.first_line.clone())))
                        }
                        // pgbench has not computed an SQL command's first line yet here
                        Some(Command::Sql(s)) if s.meta != SqlMeta::None => {
                            return Err(must_follow(None))
                        }
                        Some(Command::Sql(s)) => {
                            s.meta = if aset {
                                SqlMeta::Aset { prefix }
                            } else {
                                SqlMeta::Gset { prefix }
                            };
                        }
                    }
                }
            }
            continue;
        }
        if stop == Stop::Eof {
            break;
        }
    }
    if commands.is_empty() {
        return Err(ScriptError::Empty(source_name.to_string()));
    }
    check_conditionals(source_name, &commands)?;
    Ok(Script {
        name: source_name.to_string(),
        commands,
    })
}

/// pgbench's `CheckConditional`: the static `\if` / `\elif` / `\else` / `\endif` structure.
fn check_conditionals(source_name: &str, commands: &[Command]) -> Result<(), ScriptError> {
    // true = inside the \else branch of that level
    let mut stack: Vec<bool> = Vec::new();
    let fail = |i: usize, msg: &str| ScriptError::Condition {
        source_name: source_name.to_string(),
        command: i + 1,
        message: msg.to_string(),
    };
    for (i, cmd) in commands.iter().enumerate() {
        let Command::Meta(m) = cmd else { continue };
        match m.kind {
            MetaKind::If(_) => stack.push(false),
            MetaKind::Elif(_) => match stack.last() {
                None => return Err(fail(i, "\\elif without matching \\if")),
                Some(true) => return Err(fail(i, "\\elif after \\else")),
                Some(false) => {}
            },
            MetaKind::Else => match stack.last_mut() {
                None => return Err(fail(i, "\\else without matching \\if")),
                Some(true) => return Err(fail(i, "\\else after \\else")),
                Some(top) => *top = true,
            },
            MetaKind::EndIf if stack.pop().is_none() => {
                return Err(fail(i, "\\endif without matching \\if"));
            }
            _ => {}
        }
    }
    if !stack.is_empty() {
        return Err(fail(commands.len(), "\\if without matching \\endif"));
    }
    Ok(())
}
