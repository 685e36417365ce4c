//! Owns parsing one meta command (pgbench's `process_backslash_command`): reading its
//! words or expression up to the end of the command, the per-command argument checks
//! with pgbench's messages, and the error context (source line and caret).

use crate::cnum::atoi;
use crate::error::ScriptError;
use crate::exprlex::Scanner;
use crate::exprparse::parse_expression;
use crate::names::VarName;
use crate::script::{line_of, MetaCommand, MetaKind, SleepAmount, SleepSpec, SleepUnit};

/// Most words a meta command may have (pgbench's `MAX_ARGS`, command name included).
const MAX_ARGS: usize = 256;

/// Result of parsing a backslash command.
#[derive(Debug)]
pub(crate) enum Parsed {
    /// A backslash followed by nothing: ignored.
    Nothing,
    /// A meta command taking a command slot.
    Meta(MetaCommand),
    /// `\gset` / `\aset`, to merge into the preceding SQL command.
    ResultSet {
        aset: bool,
        prefix: String,
        line: usize,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Name {
    Set,
    SetShell,
    Shell,
    Sleep,
    If,
    Elif,
    Else,
    EndIf,
    Gset,
    Aset,
    StartPipeline,
    SyncPipeline,
    EndPipeline,
    Unknown,
}

fn meta_name(word: &str) -> Name {
    const NAMES: &[(&str, Name)] = &[
        ("set", Name::Set),
        ("setshell", Name::SetShell),
        ("shell", Name::Shell),
        ("sleep", Name::Sleep),
        ("if", Name::If),
        ("elif", Name::Elif),
        ("else", Name::Else),
        ("endif", Name::EndIf),
        ("gset", Name::Gset),
        ("aset", Name::Aset),
        ("startpipeline", Name::StartPipeline),
        ("syncpipeline", Name::SyncPipeline),
        ("endpipeline", Name::EndPipeline),
    ];
    NAMES
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(word))
        .map_or(Name::Unknown, |&(_, k)| k)
}

/// Command text from `start` to `end` without trailing newlines (pgbench's chomp).
fn chomp(src: &str, start: usize, end: usize) -> String {
    src[start..end].trim_end_matches(['\n', '\r']).to_string()
}

/// Parses the meta command whose backslash is at `backslash`. Returns what was parsed and
/// the offset where SQL scanning resumes. It mirrors pgbench's
/// `process_backslash_command`: one arm per meta command, with pgbench's checks and
/// messages in pgbench's order.
pub(crate) fn parse_meta(
    src: &str,
    backslash: usize,
    source_name: &str,
) -> Result<(Parsed, usize), ScriptError> {
    let line = line_of(src, backslash);
    let mut sc = Scanner::new(src, backslash + 1);
    let Some((_, name)) = sc.next_word() else {
        return Ok((Parsed::Nothing, sc.pos));
    };
    let argv0 = name.to_string();
    let kind = meta_name(name);
    let syntax =
        |msg: String, context: Option<String>, column: Option<usize>| ScriptError::Syntax {
            source_name: source_name.to_string(),
            line,
            message: format!("{msg} in command \"{argv0}\""),
            context,
            column,
        };

    if matches!(kind, Name::Set | Name::If | Name::Elif) {
        let mut argv = vec![argv0.clone()];
        if kind == Name::Set {
            let Some((_, var)) = sc.next_word() else {
                return Err(syntax("missing argument".into(), None, None));
            };
            argv.push(var.to_string());
        }
        let expr = match parse_expression(&mut sc) {
            Ok(e) => e,
            Err(e) => {
                let context = chomp(src, backslash, sc.pos);
                return Err(syntax(
                    e.to_string(),
                    Some(context),
                    Some(e.offset.saturating_sub(backslash)),
                ));
            }
        };
        let first_line = chomp(src, backslash, sc.pos);
        let kind = match kind {
            Name::Set => MetaKind::Set {
                var: VarName::new(&argv[1]),
                expr,
            },
            Name::If => MetaKind::If(expr),
            _ => MetaKind::Elif(expr),
        };
        return Ok((
            Parsed::Meta(MetaCommand {
                kind,
                argv,
                first_line,
                line,
            }),
            sc.pos,
        ));
    }

    let mut argv = vec![argv0.clone()];
    let mut offsets = vec![0usize];
    while let Some((off, word)) = sc.next_word() {
        if argv.len() >= MAX_ARGS {
            return Err(syntax("too many arguments".into(), None, None));
        }
        argv.push(word.to_string());
        offsets.push(off);
    }
    let end = sc.pos;
    let first_line = chomp(src, backslash, end);
    let ctx = || Some(first_line.clone());
    let argc = argv.len();
    let kind = match kind {
        Name::Sleep => {
            if argc < 2 {
                return Err(syntax("missing argument".into(), ctx(), None));
            }
            if argc > 3 {
                return Err(syntax(
                    "too many arguments".into(),
                    ctx(),
                    Some(offsets[3] - backslash),
                ));
            }
            let arg1 = argv[1].clone();
            let mut unit_word = argv.get(2).cloned();
            let mut unit_offset = offsets.get(2).copied();
            if !arg1.starts_with(':') {
                let b = arg1.as_bytes();
                let mut i = usize::from(matches!(b.first(), Some(b'+') | Some(b'-')));
                let have_digit = b.get(i).is_some_and(u8::is_ascii_digit);
                while b.get(i).is_some_and(u8::is_ascii_digit) {
                    i += 1;
                }
                if i < b.len() {
                    if argc == 2 && have_digit {
                        // "10ms": the unit is glued to the number
                        unit_word = Some(arg1[i..].to_string());
                        unit_offset = Some(offsets[1] + i);
                        argv.push(arg1[i..].to_string());
                    } else {
                        return Err(syntax(
                            format!("invalid sleep time, must be an integer ({arg1})"),
                            ctx(),
                            Some(offsets[1] - backslash),
                        ));
                    }
                }
            }
            let unit = match unit_word.as_deref() {
                None => SleepUnit::Seconds,
                Some(u) if u.eq_ignore_ascii_case("us") => SleepUnit::Micros,
                Some(u) if u.eq_ignore_ascii_case("ms") => SleepUnit::Millis,
                Some(u) if u.eq_ignore_ascii_case("s") => SleepUnit::Seconds,
                Some(u) => {
                    return Err(syntax(
                        format!("unrecognized time unit, must be us, ms or s ({u})"),
                        ctx(),
                        unit_offset.map(|o| o - backslash),
                    ))
                }
            };
            let amount = match arg1.strip_prefix(':') {
                Some(var) => SleepAmount::Variable(var.to_string()),
                None => SleepAmount::Literal(atoi(&arg1)),
            };
            MetaKind::Sleep(SleepSpec { amount, unit })
        }
        Name::SetShell => {
            if argc < 3 {
                return Err(syntax("missing argument".into(), ctx(), None));
            }
            MetaKind::SetShell {
                var: argv[1].clone(),
                words: argv[2..].to_vec(),
            }
        }
        Name::Shell => {
            if argc < 2 {
                return Err(syntax("missing command".into(), ctx(), None));
            }
            MetaKind::Shell {
                words: argv[1..].to_vec(),
            }
        }
        Name::Else | Name::EndIf | Name::StartPipeline | Name::SyncPipeline | Name::EndPipeline => {
            if argc != 1 {
                return Err(syntax("unexpected argument".into(), ctx(), None));
            }
            match kind {
                Name::Else => MetaKind::Else,
                Name::EndIf => MetaKind::EndIf,
                Name::StartPipeline => MetaKind::StartPipeline,
                Name::SyncPipeline => MetaKind::SyncPipeline,
                _ => MetaKind::EndPipeline,
            }
        }
        Name::Gset | Name::Aset => {
            if argc > 2 {
                return Err(syntax("too many arguments".into(), ctx(), None));
            }
            return Ok((
                Parsed::ResultSet {
                    aset: kind == Name::Aset,
                    prefix: argv.get(1).cloned().unwrap_or_default(),
                    line,
                },
                end,
            ));
        }
        _ => return Err(syntax("invalid command".into(), ctx(), None)),
    };
    Ok((
        Parsed::Meta(MetaCommand {
            kind,
            argv,
            first_line,
            line,
        }),
        end,
    ))
}
