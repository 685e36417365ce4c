//! Owns the tokenizer of meta-command lines (pgbench's `exprscan.l`): whitespace-separated
//! words for ordinary meta commands, and expression tokens for `\set`, `\if`, `\elif`.
//!
//! Both modes stop at an unescaped newline or the end of the text; a backslash right
//! before a newline (or `\r\n`) continues the command on the next line. Offsets are byte
//! offsets into the whole script text, so errors can point a caret at the right column.

use crate::cnum::strtod_prefix;

/// An expression token.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Tok {
    Plus,
    Minus,
    Star,
    Slash,
    Percent,
    Eq,
    Ne,
    Le,
    Ge,
    Lt,
    Gt,
    LShift,
    RShift,
    BitOr,
    BitAnd,
    Hash,
    Tilde,
    LParen,
    RParen,
    Comma,
    And,
    Or,
    Not,
    Is,
    IsNull,
    NotNull,
    Case,
    When,
    Then,
    Else,
    End,
    Null,
    Bool(bool),
    Int(i64),
    Double(f64),
    /// `9223372036854775808`, only valid right after a unary minus.
    MaxIntPlusOne,
    /// `:name` (the range covers the name without the colon).
    Var,
    /// An identifier (function name).
    Ident,
    /// End of the command (newline consumed, or end of text).
    Eol,
}

/// A token with its byte range in the script text.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Token {
    pub tok: Tok,
    pub start: usize,
    pub end: usize,
}

/// A lexical error: message, the offending text, and the scanner offset after it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct LexError {
    pub message: &'static str,
    pub more: String,
    pub end: usize,
}

fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\r' | 0x0b | 0x0c)
}

fn is_alpha(c: u8) -> bool {
    c >= 0x80 || c.is_ascii_alphabetic() || c == b'_'
}

fn is_alnum(c: u8) -> bool {
    is_alpha(c) || c.is_ascii_digit()
}

/// Length of a line continuation (`\` + `\n` or `\` + `\r\n`) at `i`, or 0.
fn continuation_len(b: &[u8], i: usize) -> usize {
    if b.get(i) == Some(&b'\\') {
        if b.get(i + 1) == Some(&b'\n') {
            return 2;
        }
        if b.get(i + 1) == Some(&b'\r') && b.get(i + 2) == Some(&b'\n') {
            return 3;
        }
    }
    0
}

/// A cursor over one meta command's text.
#[derive(Debug, Clone)]
pub(crate) struct Scanner<'a> {
    pub src: &'a str,
    pub pos: usize,
    /// Offset just after the last matched text (pgbench's `expr_scanner_offset`).
    pub last_end: usize,
    /// Whether the command's terminating newline (or end of text) has been reached.
    pub at_end: bool,
}

impl<'a> Scanner<'a> {
    pub fn new(src: &'a str, pos: usize) -> Scanner<'a> {
        Scanner {
            src,
            pos,
            last_end: pos,
            at_end: false,
        }
    }

    /// Skips white space and continuations; returns true at a newline/end (consuming the
    /// newline).
    fn skip_blank(&mut self) -> bool {
        let b = self.src.as_bytes();
        loop {
            if self.pos >= b.len() {
                self.at_end = true;
                return true;
            }
            let c = b[self.pos];
            if c == b'\n' {
                self.pos += 1;
                self.last_end = self.pos;
                self.at_end = true;
                return true;
            }
            if is_space(c) {
                self.pos += 1;
                self.last_end = self.pos;
                continue;
            }
            let cl = continuation_len(b, self.pos);
            if cl > 0 {
                self.pos += cl;
                self.last_end = self.pos;
                continue;
            }
            return false;
        }
    }

    /// Next whitespace-separated word (INITIAL mode): `(start, text)`, or `None` at the
    /// end of the command. A continuation right after a word ends the word.
    pub fn next_word(&mut self) -> Option<(usize, &'a str)> {
        if self.at_end || self.skip_blank() {
            return None;
        }
        let b = self.src.as_bytes();
        let start = self.pos;
        while self.pos < b.len() {
            let c = b[self.pos];
            if c == b'\n' || is_space(c) {
                break;
            }
            if continuation_len(b, self.pos) > 0 {
                let word_end = self.pos;
                self.pos += continuation_len(b, self.pos);
                self.last_end = self.pos;
                return Some((start, &self.src[start..word_end]));
            }
            self.pos += 1;
        }
        self.last_end = self.pos;
        Some((start, &self.src[start..self.pos]))
    }

    /// Next expression token (EXPR mode).
    pub fn next_token(&mut self) -> Result<Token, LexError> {
        if self.at_end || self.skip_blank() {
            return Ok(Token {
                tok: Tok::Eol,
                start: self.pos,
                end: self.pos,
            });
        }
        let b = self.src.as_bytes();
        let start = self.pos;
        let c = b[start];
        let two = |d: u8| b.get(start + 1) == Some(&d);
        let (tok, len) = match c {
            b'+' => (Tok::Plus, 1),
            b'-' => (Tok::Minus, 1),
            b'*' => (Tok::Star, 1),
            b'/' => (Tok::Slash, 1),
            b'%' => (Tok::Percent, 1),
            b'=' => (Tok::Eq, 1),
            b'<' if two(b'>') => (Tok::Ne, 2),
            b'<' if two(b'=') => (Tok::Le, 2),
            b'<' if two(b'<') => (Tok::LShift, 2),
            b'<' => (Tok::Lt, 1),
            b'>' if two(b'=') => (Tok::Ge, 2),
            b'>' if two(b'>') => (Tok::RShift, 2),
            b'>' => (Tok::Gt, 1),
            b'!' if two(b'=') => (Tok::Ne, 2),
            b'|' => (Tok::BitOr, 1),
            b'&' => (Tok::BitAnd, 1),
            b'#' => (Tok::Hash, 1),
            b'~' => (Tok::Tilde, 1),
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b',' => (Tok::Comma, 1),
            b':' if b.get(start + 1).is_some_and(|&d| is_alnum(d)) => {
                let mut j = start + 1;
                while j < b.len() && is_alnum(b[j]) {
                    j += 1;
                }
                (Tok::Var, j - start)
            }
            b'0'..=b'9' | b'.' => return self.number(start),
            _ if is_alpha(c) => {
                let mut j = start + 1;
                while j < b.len() && is_alnum(b[j]) {
                    j += 1;
                }
                (keyword(&self.src[start..j]), j - start)
            }
            _ => {
                // one byte, as flex's "." rule; keep whole UTF-8 chars in the message
                let ch_len = self.src[start..].chars().next().map_or(1, char::len_utf8);
                self.pos = start + ch_len;
                self.last_end = self.pos;
                return Err(LexError {
                    message: "unexpected character",
                    more: self.src[start..start + ch_len].to_string(),
                    end: self.pos,
                });
            }
        };
        self.pos = start + len;
        self.last_end = self.pos;
        let (start, end) = if tok == Tok::Var {
            (start + 1, self.pos)
        } else {
            (start, self.pos)
        };
        Ok(Token { tok, start, end })
    }

    fn number(&mut self, start: usize) -> Result<Token, LexError> {
        let b = self.src.as_bytes();
        let mut j = start;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        let int_end = j;
        let mut is_double = false;
        if j < b.len() && b[j] == b'.' {
            if int_end == start && !b.get(j + 1).is_some_and(u8::is_ascii_digit) {
                // a lone "." is not a number
                self.pos = start + 1;
                self.last_end = self.pos;
                return Err(LexError {
                    message: "unexpected character",
                    more: ".".into(),
                    end: self.pos,
                });
            }
            is_double = true;
            j += 1;
            while j < b.len() && b[j].is_ascii_digit() {
                j += 1;
            }
        }
        if j < b.len() && (b[j] == b'e' || b[j] == b'E') {
            let mut k = j + 1;
            if k < b.len() && (b[k] == b'+' || b[k] == b'-') {
                k += 1;
            }
            let digits = k;
            while k < b.len() && b[k].is_ascii_digit() {
                k += 1;
            }
            if k > digits {
                is_double = true;
                j = k;
            }
        }
        self.pos = j;
        self.last_end = j;
        let text = &self.src[start..j];
        if !is_double {
            if text == "9223372036854775808" {
                return Ok(Token {
                    tok: Tok::MaxIntPlusOne,
                    start,
                    end: j,
                });
            }
            return match text.parse::<i64>() {
                Ok(v) => Ok(Token {
                    tok: Tok::Int(v),
                    start,
                    end: j,
                }),
                Err(_) => Err(LexError {
                    message: "bigint constant overflow",
                    more: text.to_string(),
                    end: j,
                }),
            };
        }
        match strtod_prefix(text) {
            Some((v, end, false)) if end == text.len() => Ok(Token {
                tok: Tok::Double(v),
                start,
                end: j,
            }),
            _ => Err(LexError {
                message: "double constant overflow",
                more: text.to_string(),
                end: j,
            }),
        }
    }

    /// Consumes the rest of the command (after an error), returning the last lexical
    /// error found on the way, as pgbench reports the innermost one.
    pub fn drain_expr(&mut self) -> Option<LexError> {
        let mut last = None;
        loop {
            match self.next_token() {
                Ok(t) if t.tok == Tok::Eol => return last,
                Ok(_) => {}
                Err(e) => last = Some(e),
            }
        }
    }
}

fn keyword(word: &str) -> Tok {
    const KEYWORDS: &[(&str, Tok)] = &[
        ("and", Tok::And),
        ("or", Tok::Or),
        ("not", Tok::Not),
        ("is", Tok::Is),
        ("isnull", Tok::IsNull),
        ("notnull", Tok::NotNull),
        ("null", Tok::Null),
        ("true", Tok::Bool(true)),
        ("false", Tok::Bool(false)),
        ("case", Tok::Case),
        ("when", Tok::When),
        ("then", Tok::Then),
        ("else", Tok::Else),
        ("end", Tok::End),
    ];
    KEYWORDS
        .iter()
        .find(|(k, _)| k.eq_ignore_ascii_case(word))
        .map_or(Tok::Ident, |&(_, t)| t)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn toks(s: &str) -> Vec<Tok> {
        let mut sc = Scanner::new(s, 0);
        let mut v = vec![];
        loop {
            let t = sc.next_token().unwrap();
            v.push(t.tok);
            if t.tok == Tok::Eol {
                return v;
            }
        }
    }

    #[test]
    fn tokens() {
        assert_eq!(
            toks("1 + 2.5*:x <> NOT nullx(Null)\n3"),
            vec![
                Tok::Int(1),
                Tok::Plus,
                Tok::Double(2.5),
                Tok::Star,
                Tok::Var,
                Tok::Ne,
                Tok::Not,
                Tok::Ident,
                Tok::LParen,
                Tok::Null,
                Tok::RParen,
                Tok::Eol
            ]
        );
        assert_eq!(
            toks("1e5 .5 1. 3e"),
            vec![
                Tok::Double(1e5),
                Tok::Double(0.5),
                Tok::Double(1.0),
                Tok::Int(3),
                Tok::Ident,
                Tok::Eol
            ]
        );
        assert_eq!(
            toks("1 \\\n + 2"),
            vec![Tok::Int(1), Tok::Plus, Tok::Int(2), Tok::Eol]
        );
    }

    #[test]
    fn words() {
        let s = "sleep 10 ms\\\n  x\nnext";
        let mut sc = Scanner::new(s, 0);
        let mut w = vec![];
        while let Some((_, t)) = sc.next_word() {
            w.push(t);
        }
        assert_eq!(w, vec!["sleep", "10", "ms", "x"]);
        assert_eq!(&s[sc.pos..], "next");
    }

    #[test]
    fn lex_errors() {
        let mut sc = Scanner::new("100000000000000000000", 0);
        assert_eq!(
            sc.next_token().unwrap_err().message,
            "bigint constant overflow"
        );
        let mut sc = Scanner::new("1e999", 0);
        assert_eq!(
            sc.next_token().unwrap_err().message,
            "double constant overflow"
        );
        let mut sc = Scanner::new("$", 0);
        let e = sc.next_token().unwrap_err();
        assert_eq!(
            (e.message, e.more.as_str(), e.end),
            ("unexpected character", "$", 1)
        );
    }
}
