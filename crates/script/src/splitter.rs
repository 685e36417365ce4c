//! Owns splitting script text into SQL statements with the psql lexer's rules as pgbench
//! uses them (`psqlscan.l`, SQL_ASCII, `standard_conforming_strings` on, no psql variable
//! expansion): quotes (`'…'`, `E'…'`, `B''`, `X''`, `N''`, `U&'…'`), dollar quotes,
//! quoted identifiers, nested `/* */` comments, `--` comments, parentheses,
//! `CREATE FUNCTION … BEGIN ATOMIC … END` bodies, `\;` and `\:`.
//!
//! The scanner stops at a statement-ending semicolon, at a backslash that starts a meta
//! command, or at the end of the text. It does not know about meta commands themselves.

/// Why [`SqlScanner::scan`] stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// A `;` ending a statement (included in the buffer).
    Semicolon,
    /// A backslash starting a meta command; `pos` is just after it.
    Backslash,
    /// End of text (possibly inside an unterminated quote or comment).
    Eof,
}

/// The psql lexer's state that survives between statements.
#[derive(Debug, Clone)]
pub(crate) struct SqlScanner<'a> {
    pub src: &'a str,
    pub pos: usize,
    paren_depth: u32,
    begin_depth: u32,
    identifiers: [u8; 4],
    identifier_count: usize,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

fn ident_start(c: u8) -> bool {
    c >= 0x80 || c.is_ascii_alphabetic() || c == b'_'
}

fn ident_cont(c: u8) -> bool {
    ident_start(c) || c.is_ascii_digit() || c == b'$'
}

fn var_char(c: u8) -> bool {
    c >= 0x80 || c.is_ascii_alphanumeric() || c == b'_'
}

impl<'a> SqlScanner<'a> {
    pub fn new(src: &'a str) -> SqlScanner<'a> {
        SqlScanner {
            src,
            pos: 0,
            paren_depth: 0,
            begin_depth: 0,
            identifiers: [0; 4],
            identifier_count: 0,
        }
    }

    /// Appends SQL text to `buf` until a stop condition. `start` receives the offset in
    /// the script of the first byte appended (if any). It mirrors psql's lexer
    /// (`psqlscan.l`, which pgbench splits scripts with) rule by rule: quotes, comments,
    /// dollar quoting, `BEGIN ... END` bodies and backslashes.
    pub fn scan(&mut self, buf: &mut String, start: &mut Option<usize>) -> Stop {
        let s = self.src;
        let b = s.as_bytes();
        macro_rules! emit {
            ($from:expr, $to:expr) => {{
                if start.is_none() {
                    *start = Some($from);
                }
                buf.push_str(&s[$from..$to]);
            }};
        }
        loop {
            let i = self.pos;
            if i >= b.len() {
                return Stop::Eof;
            }
            let c = b[i];
            let next = b.get(i + 1).copied();
            match c {
                _ if is_space(c) => {
                    // leading white space (and `--` comments) are dropped
                    if !buf.is_empty() {
                        emit!(i, i + 1);
                    }
                    self.pos += 1;
                }
                b'-' if next == Some(b'-') => {
                    let end = s[i..].find('\n').map_or(b.len(), |k| i + k);
                    if !buf.is_empty() {
                        emit!(i, end);
                    }
                    self.pos = end;
                }
                b'/' if next == Some(b'*') => {
                    let end = self.block_comment_end(i);
                    emit!(i, end);
                    self.pos = end;
                }
                b'\'' => {
                    let end = quoted_end(b, i + 1, b'\'', false);
                    emit!(i, end);
                    self.pos = end;
                }
                b'"' => {
                    let end = quoted_end(b, i + 1, b'"', false);
                    emit!(i, end);
                    self.pos = end;
                }
                b'$' => {
                    let end = match dollar_tag(b, i) {
                        Some(tag_end) => {
                            let tag = &s[i..tag_end];
                            s[tag_end..]
                                .find(tag)
                                .map_or(b.len(), |k| tag_end + k + tag.len())
                        }
                        None => i + 1,
                    };
                    emit!(i, end);
                    self.pos = end;
                }
                b'(' => {
                    self.paren_depth += 1;
                    emit!(i, i + 1);
                    self.pos += 1;
                }
                b')' => {
                    self.paren_depth = self.paren_depth.saturating_sub(1);
                    emit!(i, i + 1);
                    self.pos += 1;
                }
                b';' => {
                    emit!(i, i + 1);
                    self.pos += 1;
                    if self.paren_depth == 0 && self.begin_depth == 0 {
                        self.identifier_count = 0;
                        return Stop::Semicolon;
                    }
                }
                b'\\' => {
                    if next == Some(b';') || next == Some(b':') {
                        // `\;` and `\:` put a literal ; or : into the statement
                        emit!(i + 1, i + 2);
                        if next == Some(b';') {
                            self.identifier_count = 0;
                        }
                        self.pos += 2;
                    } else {
                        self.pos += 1;
                        self.identifier_count = 0;
                        return Stop::Backslash;
                    }
                }
                b':' => {
                    let end = psql_variable_end(b, i);
                    if s[i..end].starts_with(":{?") {
                        // `:{?name}` tests a psql variable; pgbench has none
                        if start.is_none() {
                            *start = Some(i);
                        }
                        buf.push_str("FALSE");
                    } else {
                        emit!(i, end);
                    }
                    self.pos = end;
                }
                b'0'..=b'9' => {
                    let mut j = i + 1;
                    while j < b.len() && (var_char(b[j]) || b[j] == b'.') {
                        j += 1;
                    }
                    emit!(i, j);
                    self.pos = j;
                }
                _ if ident_start(c) => {
                    let mut j = i + 1;
                    while j < b.len() && ident_cont(b[j]) {
                        j += 1;
                    }
                    let word = &s[i..j];
                    let end = if j - i == 1 && b.get(j) == Some(&b'\'') {
                        match c.to_ascii_lowercase() {
                            b'e' => Some(quoted_end(b, j + 1, b'\'', true)),
                            b'b' | b'x' | b'n' => Some(quoted_end(b, j + 1, b'\'', false)),
                            _ => None,
                        }
                    } else if j - i == 1
                        && c.eq_ignore_ascii_case(&b'u')
                        && b.get(j) == Some(&b'&')
                        && matches!(b.get(j + 1), Some(b'\'') | Some(b'"'))
                    {
                        Some(quoted_end(b, j + 2, b[j + 1], false))
                    } else {
                        None
                    };
                    match end {
                        Some(end) => {
                            emit!(i, end);
                            self.pos = end;
                        }
                        None => {
                            self.track_identifier(word);
                            emit!(i, j);
                            self.pos = j;
                        }
                    }
                }
                _ => {
                    let len = s[i..].chars().next().map_or(1, char::len_utf8);
                    emit!(i, i + len);
                    self.pos = i + len;
                }
            }
        }
    }

    /// End offset of a (nested) `/* … */` comment starting at `i`.
    fn block_comment_end(&self, i: usize) -> usize {
        let b = self.src.as_bytes();
        let mut depth = 0usize;
        let mut j = i;
        while j < b.len() {
            if b[j] == b'/' && b.get(j + 1) == Some(&b'*') {
                depth += 1;
                j += 2;
            } else if b[j] == b'*' && b.get(j + 1) == Some(&b'/') {
                depth -= 1;
                j += 2;
                if depth == 0 {
                    return j;
                }
            } else {
                j += 1;
            }
        }
        b.len()
    }

    /// psql's heuristic for `CREATE [OR REPLACE] FUNCTION|PROCEDURE … BEGIN ATOMIC … END`:
    /// inside such a statement, BEGIN (and CASE within it) nest until END.
    fn track_identifier(&mut self, word: &str) {
        if self.identifier_count == 0 {
            self.identifiers = [0; 4];
        }
        let lower = |w: &str| {
            ["create", "function", "procedure", "or", "replace"]
                .iter()
                .any(|k| k.eq_ignore_ascii_case(w))
        };
        if lower(word) && self.identifier_count < self.identifiers.len() {
            self.identifiers[self.identifier_count] = word.as_bytes()[0].to_ascii_lowercase();
        }
        self.identifier_count += 1;
        let id = &self.identifiers;
        let is_routine = id[0] == b'c'
            && (id[1] == b'f'
                || id[1] == b'p'
                || (id[1] == b'o' && id[2] == b'r' && (id[3] == b'f' || id[3] == b'p')));
        if is_routine && self.paren_depth == 0 {
            if word.eq_ignore_ascii_case("begin") {
                self.begin_depth += 1;
            } else if word.eq_ignore_ascii_case("case") {
                if self.begin_depth >= 1 {
                    self.begin_depth += 1;
                }
            } else if word.eq_ignore_ascii_case("end") && self.begin_depth > 0 {
                self.begin_depth -= 1;
            }
        }
    }
}

/// End of a quoted literal whose body starts at `from` (after the opening quote): the
/// quote doubled stays inside; with `backslash` (E'…'), `\x` escapes any character.
fn quoted_end(b: &[u8], from: usize, quote: u8, backslash: bool) -> usize {
    let mut j = from;
    while j < b.len() {
        if backslash && b[j] == b'\\' {
            j += 2;
            continue;
        }
        if b[j] == quote {
            if b.get(j + 1) == Some(&quote) {
                j += 2;
                continue;
            }
            return j + 1;
        }
        j += 1;
    }
    b.len()
}

/// If a dollar-quote delimiter (`$$` or `$tag$`) starts at `i`, its end offset.
fn dollar_tag(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    if j < b.len() && (b[j] >= 0x80 || b[j].is_ascii_alphabetic() || b[j] == b'_') {
        j += 1;
        while j < b.len() && var_char(b[j]) {
            j += 1;
        }
    }
    (b.get(j) == Some(&b'$')).then_some(j + 1)
}

/// psql variable references are copied verbatim; `:'name'` and `:"name"` are single
/// tokens, so their quotes do not open literals. Returns the end of the token at `i`.
fn psql_variable_end(b: &[u8], i: usize) -> usize {
    let quoted = |open: u8, close: u8, skip: usize| -> Option<usize> {
        if b.get(i + 1) != Some(&open) {
            return None;
        }
        let mut j = i + 1 + skip;
        let start = j;
        while j < b.len() && var_char(b[j]) {
            j += 1;
        }
        (j > start && b.get(j) == Some(&close)).then_some(j + 1)
    };
    if let Some(e) = quoted(b'\'', b'\'', 1).or_else(|| quoted(b'"', b'"', 1)) {
        return e;
    }
    if b.get(i + 1) == Some(&b'{') && b.get(i + 2) == Some(&b'?') {
        let mut j = i + 3;
        let start = j;
        while j < b.len() && var_char(b[j]) {
            j += 1;
        }
        if j > start && b.get(j) == Some(&b'}') {
            return j + 1;
        }
    }
    i + 1
}

/// pgbench's `skip_sql_comments`: drops leading white space and `--` lines; `None` when
/// nothing else is left.
pub(crate) fn skip_sql_comments(text: &str) -> Option<usize> {
    let b = text.as_bytes();
    let mut i = 0;
    loop {
        if i < b.len() && is_space(b[i]) {
            i += 1;
        } else if text[i..].starts_with("--") {
            i += text[i..].find('\n')? + 1;
        } else {
            break;
        }
    }
    (i < b.len()).then_some(i)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(s: &str) -> Vec<(String, Stop)> {
        let mut sc = SqlScanner::new(s);
        let mut out = vec![];
        loop {
            let mut buf = String::new();
            let mut start = None;
            let stop = sc.scan(&mut buf, &mut start);
            out.push((buf, stop));
            if stop != Stop::Semicolon {
                return out;
            }
        }
    }

    #[test]
    fn quotes_comments_and_semicolons() {
        let v = split("SELECT\n  1 AS one, -- trailing comment\n  /* block ; comment */ 'semi;colon' AS s,\n  $$dollar ; quoted$$ AS d;\nSELECT 2");
        assert_eq!(v[0].0, "SELECT\n  1 AS one, -- trailing comment\n  /* block ; comment */ 'semi;colon' AS s,\n  $$dollar ; quoted$$ AS d;");
        assert_eq!(v[1], ("SELECT 2".to_string(), Stop::Eof));
    }

    #[test]
    fn special_forms() {
        assert_eq!(split("select E'a\\';b';")[0].0, "select E'a\\';b';");
        assert_eq!(split("select 'a''b;c';")[0].0, "select 'a''b;c';");
        assert_eq!(split("select \"a;b\";")[0].0, "select \"a;b\";");
        assert_eq!(
            split("select $q$ ; $$ ; $q$;")[0].0,
            "select $q$ ; $$ ; $q$;"
        );
        assert_eq!(
            split("select /* a /* b; */ c; */ 1;")[0].0,
            "select /* a /* b; */ c; */ 1;"
        );
        assert_eq!(split("select (1;2);")[0].0, "select (1;2);");
        assert_eq!(split("select 1 \\; select 2;")[0].0, "select 1 ; select 2;");
        assert_eq!(split("select :'x;y';")[0].0, "select :'x;y';");
        assert_eq!(split("select :'xy';")[0].0, "select :'xy';");
        assert_eq!(split("  -- c\n  select 1")[0].0, "select 1");
        let v = split("select 1 \\gset");
        assert_eq!(v[0], ("select 1 ".to_string(), Stop::Backslash));
    }

    #[test]
    fn begin_atomic() {
        let f = "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT CASE WHEN true THEN 1 END; END; SELECT 2;";
        let v = split(f);
        assert_eq!(v[0].0, "CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; SELECT CASE WHEN true THEN 1 END; END;");
        assert_eq!(v[1].0, "SELECT 2;");
        let v = split("BEGIN; SELECT 1;");
        assert_eq!(v[0].0, "BEGIN;");
    }

    #[test]
    fn skip_comments() {
        assert_eq!(skip_sql_comments("  -- x\n  sel"), Some(9));
        assert_eq!(skip_sql_comments("  -- x"), None);
        assert_eq!(skip_sql_comments("   "), None);
    }
}
