//! What the sink reads of a statement's text: where a simple query's statements end,
//! the first words of each (its command tag and what it does to the transaction), and
//! the highest `$n` parameter. A lexer of quotes, comments and dollar quotes only: the
//! sink never parses SQL, and a text it cannot make sense of still gets a tag.

use std::borrow::Cow;

/// What a statement does to the session's transaction block.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Effect {
    None,
    /// `BEGIN`, `START TRANSACTION`.
    Begin,
    /// `COMMIT`, `END`, `ROLLBACK`, `ABORT`, `PREPARE TRANSACTION`.
    End,
}

/// A statement's answer: its CommandComplete tag and its effect on the transaction.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Command {
    pub tag: Cow<'static, str>,
    pub effect: Effect,
}

/// What the lexer reports while it walks a text.
enum Mark {
    /// A `;` outside quotes and comments, at this byte.
    Semicolon(usize),
    /// A `$n` parameter reference.
    Param(u32),
}

/// Walks `sql`, skipping quoted strings, quoted identifiers, dollar-quoted strings and
/// comments, and reports each top-level semicolon and parameter reference.
fn lex(sql: &[u8], mut mark: impl FnMut(Mark)) {
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b >= 0x80;
    let mut i = 0;
    while i < sql.len() {
        let b = sql[i];
        match b {
            b'\'' | b'"' => {
                // An E'…' string takes backslash escapes.
                let escapes = b == b'\''
                    && i > 0
                    && matches!(sql[i - 1], b'E' | b'e')
                    && (i < 2 || !ident(sql[i - 2]));
                i += 1;
                while i < sql.len() && sql[i] != b {
                    i += if escapes && sql[i] == b'\\' { 2 } else { 1 };
                }
                i += 1;
            }
            b'-' if sql.get(i + 1) == Some(&b'-') => {
                while i < sql.len() && sql[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if sql.get(i + 1) == Some(&b'*') => {
                let mut depth = 0usize;
                while i < sql.len() {
                    if sql[i..].starts_with(b"/*") {
                        depth += 1;
                        i += 2;
                    } else if sql[i..].starts_with(b"*/") {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        i += 1;
                    }
                }
            }
            b'$' if i > 0 && ident(sql[i - 1]) => i += 1,
            b'$' if sql.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                let digits = sql[i + 1..]
                    .iter()
                    .take_while(|b| b.is_ascii_digit())
                    .count();
                let n = sql[i + 1..i + 1 + digits].iter().fold(0u32, |n, &d| {
                    n.saturating_mul(10).saturating_add(u32::from(d - b'0'))
                });
                mark(Mark::Param(n));
                i += 1 + digits;
            }
            b'$' => {
                // A dollar quote: $tag$ … $tag$ (a tag of identifier characters).
                let tag_len = sql[i + 1..].iter().take_while(|&&b| ident(b)).count();
                if sql.get(i + 1 + tag_len) != Some(&b'$') {
                    i += 1;
                    continue;
                }
                let tag = &sql[i..i + tag_len + 2];
                i += tag.len();
                match sql[i..].windows(tag.len()).position(|w| w == tag) {
                    Some(at) => i += at + tag.len(),
                    None => i = sql.len(),
                }
            }
            b';' => {
                mark(Mark::Semicolon(i));
                i += 1;
            }
            _ => i += 1,
        }
    }
}

/// The statements of a simple query's text, blank ones left out.
pub fn statements(sql: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut start = 0;
    lex(sql, |m| {
        if let Mark::Semicolon(at) = m {
            out.push(&sql[start..at]);
            start = at + 1;
        }
    });
    out.push(&sql[start..]);
    out.retain(|s| !words(s).is_empty());
    out
}

/// The highest `$n` the text refers to (0 for none), as the server counts a statement's
/// parameters when the Parse declares no types.
pub fn highest_param(sql: &[u8]) -> u32 {
    let mut highest = 0;
    lex(sql, |m| {
        if let Mark::Param(n) = m {
            highest = highest.max(n);
        }
    });
    highest
}

/// The first three words of a statement, upper-cased, past blanks, comments and
/// opening parentheses.
fn words(stmt: &[u8]) -> Vec<String> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < stmt.len() && out.len() < 3 {
        let b = stmt[i];
        if b.is_ascii_whitespace() || b == b'(' {
            i += 1;
        } else if stmt[i..].starts_with(b"--") {
            i += stmt[i..]
                .iter()
                .position(|&b| b == b'\n')
                .unwrap_or(stmt.len() - i);
        } else if stmt[i..].starts_with(b"/*") {
            i += stmt[i..]
                .windows(2)
                .position(|w| w == b"*/")
                .map_or(stmt.len() - i, |p| p + 2);
        } else if b.is_ascii_alphabetic() {
            let len = stmt[i..]
                .iter()
                .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
                .count();
            out.push(String::from_utf8_lossy(&stmt[i..i + len]).to_ascii_uppercase());
            i += len;
        } else {
            // Anything else (a number, a quote, a semicolon) is past the words a tag needs.
            if out.is_empty() {
                out.push(String::new());
            }
            break;
        }
    }
    if out.first().is_some_and(|w| w.is_empty()) {
        out[0] = "?".into();
    }
    out
}

/// The tag and effect of one statement, from its first words; `None` for a blank one.
pub fn command(stmt: &[u8]) -> Option<Command> {
    let words = words(stmt);
    let first = words.first()?;
    let second = words.get(1).map(String::as_str).unwrap_or("");
    let third = words.get(2).map(String::as_str).unwrap_or("");
    let fixed = |tag: &'static str, effect| Command {
        tag: Cow::Borrowed(tag),
        effect,
    };
    Some(match first.as_str() {
        "SELECT" | "VALUES" | "TABLE" | "WITH" => fixed("SELECT 0", Effect::None),
        "INSERT" => fixed("INSERT 0 0", Effect::None),
        "UPDATE" => fixed("UPDATE 0", Effect::None),
        "DELETE" => fixed("DELETE 0", Effect::None),
        "MERGE" => fixed("MERGE 0", Effect::None),
        "FETCH" => fixed("FETCH 0", Effect::None),
        "MOVE" => fixed("MOVE 0", Effect::None),
        "COPY" => fixed("COPY 0", Effect::None),
        "BEGIN" => fixed("BEGIN", Effect::Begin),
        "START" => fixed("START TRANSACTION", Effect::Begin),
        "COMMIT" | "END" if second == "PREPARED" => fixed("COMMIT PREPARED", Effect::None),
        "COMMIT" | "END" => fixed("COMMIT", Effect::End),
        "ROLLBACK" | "ABORT" if second == "PREPARED" => fixed("ROLLBACK PREPARED", Effect::None),
        // ROLLBACK TO SAVEPOINT stays inside the transaction block.
        "ROLLBACK" | "ABORT"
            if second == "TO" || (matches!(second, "WORK" | "TRANSACTION") && third == "TO") =>
        {
            fixed("ROLLBACK", Effect::None)
        }
        "ROLLBACK" | "ABORT" => fixed("ROLLBACK", Effect::End),
        "PREPARE" if second == "TRANSACTION" => fixed("PREPARE TRANSACTION", Effect::End),
        _ => Command {
            tag: Cow::Owned(first.clone()),
            effect: Effect::None,
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statements_split_outside_quotes_and_comments() {
        let sql = b"SELECT ';' ; -- a;b\nUPDATE t SET x = $$;$$; /* ; */ ; SELECT E'\\';' ;  ";
        let got: Vec<String> = statements(sql)
            .iter()
            .map(|s| String::from_utf8_lossy(s).trim().to_string())
            .collect();
        assert_eq!(
            got,
            [
                "SELECT ';'",
                "-- a;b\nUPDATE t SET x = $$;$$",
                "SELECT E'\\';'"
            ]
        );
    }

    #[test]
    fn tags_and_transaction_effects() {
        let tag = |s: &str| command(s.as_bytes()).map(|c| (c.tag.into_owned(), c.effect));
        assert_eq!(tag("  select 1"), Some(("SELECT 0".into(), Effect::None)));
        assert_eq!(tag("begin"), Some(("BEGIN".into(), Effect::Begin)));
        assert_eq!(
            tag("START TRANSACTION"),
            Some(("START TRANSACTION".into(), Effect::Begin))
        );
        assert_eq!(tag("end"), Some(("COMMIT".into(), Effect::End)));
        assert_eq!(tag("abort"), Some(("ROLLBACK".into(), Effect::End)));
        assert_eq!(
            tag("ROLLBACK TO s1"),
            Some(("ROLLBACK".into(), Effect::None))
        );
        assert_eq!(
            tag("rollback work to s1"),
            Some(("ROLLBACK".into(), Effect::None))
        );
        assert_eq!(tag("set x = 1"), Some(("SET".into(), Effect::None)));
        assert_eq!(tag("(SELECT 1)"), Some(("SELECT 0".into(), Effect::None)));
        assert_eq!(tag(" -- nothing\n "), None);
    }

    #[test]
    fn highest_param_ignores_quotes_and_dollar_quotes() {
        assert_eq!(highest_param(b"SELECT $2, $1, '$9', $q$ $8 $q$"), 2);
        assert_eq!(highest_param(b"SELECT a$1 FROM t"), 0);
        assert_eq!(highest_param(b"SELECT 1"), 0);
    }
}
