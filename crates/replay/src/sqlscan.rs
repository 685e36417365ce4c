//! A single pass over SQL text that finds what a replay needs before the parser: the
//! statement's *shape* (its tokens with every literal's value left out, as a 64-bit
//! hash: statements of one shape have one fingerprint, so the parser runs once per
//! shape) and its highest `$n` parameter reference. Knows PostgreSQL's lexical rules
//! for comments, strings (`'…'`, `E'…'`, `$tag$…$tag$`), quoted identifiers and
//! numbers; it builds no tree. The same rules say whether a point of the text is
//! inside a string, a quoted identifier or a comment ([`outside_quotes`]).

/// What one pass over a statement found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Scan {
    /// Hash of the tokens, literals reduced to their kind.
    pub shape: u64,
    /// Highest `$n` referenced (0: none).
    pub max_param: usize,
}

/// FNV-1a, 64 bits.
struct Fnv(u64);

impl Fnv {
    fn new() -> Fnv {
        Fnv(0xcbf2_9ce4_8422_2325)
    }
    fn byte(&mut self, b: u8) {
        self.0 ^= u64::from(b);
        self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
    }
    fn bytes(&mut self, s: &[u8]) {
        for &b in s {
            self.byte(b);
        }
    }
    /// Ends a token, so that `ab c` and `a bc` differ.
    fn end(&mut self) {
        self.byte(0);
    }
}

/// Scans `sql`.
pub fn scan(sql: &str) -> Scan {
    let s = sql.as_bytes();
    let mut h = Fnv::new();
    let mut max_param = 0usize;
    let mut i = 0;
    while i < s.len() {
        let c = s[i];
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | b'\x0c' => i += 1,
            b'-' if s.get(i + 1) == Some(&b'-') => {
                while i < s.len() && s[i] != b'\n' {
                    i += 1;
                }
            }
            b'/' if s.get(i + 1) == Some(&b'*') => i = block_comment(s, i),
            b'\'' => {
                i = quoted(s, i + 1, b'\'', false);
                h.bytes(b"'S'");
                h.end();
            }
            b'e' | b'E' if s.get(i + 1) == Some(&b'\'') => {
                i = quoted(s, i + 2, b'\'', true);
                h.bytes(b"'S'");
                h.end();
            }
            b'"' => {
                let end = quoted(s, i + 1, b'"', false);
                h.bytes(&s[i..end]);
                h.end();
                i = end;
            }
            b'$' => {
                let digits = s[i + 1..].iter().take_while(|b| b.is_ascii_digit()).count();
                if digits > 0 {
                    let n = sql[i + 1..i + 1 + digits]
                        .parse::<usize>()
                        .unwrap_or(usize::MAX);
                    max_param = max_param.max(n);
                    h.bytes(&s[i..i + 1 + digits]);
                    h.end();
                    i += 1 + digits;
                } else if let Some(end) = dollar_quoted(s, i) {
                    h.bytes(b"'S'");
                    h.end();
                    i = end;
                } else {
                    h.byte(b'$');
                    h.end();
                    i += 1;
                }
            }
            b'0'..=b'9' => {
                i = number(s, i);
                h.byte(b'N');
                h.end();
            }
            b'.' if s.get(i + 1).is_some_and(u8::is_ascii_digit) => {
                i = number(s, i);
                h.byte(b'N');
                h.end();
            }
            c if c.is_ascii_alphabetic() || c == b'_' || c >= 0x80 => {
                let start = i;
                while i < s.len()
                    && (s[i].is_ascii_alphanumeric()
                        || s[i] == b'_'
                        || s[i] == b'$'
                        || s[i] >= 0x80)
                {
                    i += 1;
                }
                for &b in &s[start..i] {
                    h.byte(b.to_ascii_lowercase());
                }
                h.end();
            }
            _ => {
                // Operators and punctuation, one character a token: `;` `(` `+`…
                h.byte(c);
                h.end();
                i += 1;
            }
        }
    }
    Scan {
        shape: h.0,
        max_param,
    }
}

/// Whether byte `at` of `sql` lies outside every string, quoted identifier and
/// comment: a point of the text that PostgreSQL's lexer reads as SQL, not as a quoted
/// token's content. A byte that starts such a token is outside it.
pub fn outside_quotes(sql: &str, at: usize) -> bool {
    let s = sql.as_bytes();
    let mut i = 0;
    while i < s.len() && i < at {
        let start = i;
        let end = match s[i] {
            b'-' if s.get(i + 1) == Some(&b'-') => s[i..]
                .iter()
                .position(|&b| b == b'\n')
                .map_or(s.len(), |n| i + n),
            b'/' if s.get(i + 1) == Some(&b'*') => block_comment(s, i),
            b'\'' => quoted(s, i + 1, b'\'', false),
            b'e' | b'E' if s.get(i + 1) == Some(&b'\'') => quoted(s, i + 2, b'\'', true),
            b'"' => quoted(s, i + 1, b'"', false),
            b'$' => match dollar_quoted(s, i) {
                Some(end) if !s.get(i + 1).is_some_and(u8::is_ascii_digit) => end,
                _ => i + 1,
            },
            c if c.is_ascii_alphanumeric() || c == b'_' || c >= 0x80 => {
                // A word or a number, read whole as a token (an `e` inside it starts no
                // string).
                i += s[i..]
                    .iter()
                    .take_while(|&&b| {
                        b.is_ascii_alphanumeric() || b == b'_' || b == b'$' || b >= 0x80
                    })
                    .count();
                continue;
            }
            _ => {
                i += 1;
                continue;
            }
        };
        if start < at && at < end {
            return false;
        }
        i = end;
    }
    true
}

/// The end of a `/* … */` comment (they nest) starting at `i`.
fn block_comment(s: &[u8], mut i: usize) -> usize {
    let mut depth = 0;
    while i < s.len() {
        if s[i] == b'/' && s.get(i + 1) == Some(&b'*') {
            depth += 1;
            i += 2;
        } else if s[i] == b'*' && s.get(i + 1) == Some(&b'/') {
            depth -= 1;
            i += 2;
            if depth == 0 {
                return i;
            }
        } else {
            i += 1;
        }
    }
    s.len()
}

/// The end of a quoted token whose body starts at `i` (the quote doubled inside;
/// `backslash`: `\` escapes the next byte, as in `E'…'`).
fn quoted(s: &[u8], mut i: usize, q: u8, backslash: bool) -> usize {
    while i < s.len() {
        if backslash && s[i] == b'\\' {
            i += 2;
        } else if s[i] == q {
            if s.get(i + 1) == Some(&q) {
                i += 2;
            } else {
                return i + 1;
            }
        } else {
            i += 1;
        }
    }
    s.len()
}

/// The end of `$tag$ … $tag$` starting at `i`, or `None` when `$` starts no tag.
fn dollar_quoted(s: &[u8], i: usize) -> Option<usize> {
    let tag_len = s[i + 1..]
        .iter()
        .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_' || **b >= 0x80)
        .count();
    if s.get(i + 1 + tag_len) != Some(&b'$') || s.get(i + 1).is_some_and(u8::is_ascii_digit) {
        return None;
    }
    let tag = &s[i..i + 2 + tag_len];
    let body = i + tag.len();
    let end = s[body..].windows(tag.len()).position(|w| w == tag);
    Some(end.map_or(s.len(), |p| body + p + tag.len()))
}

/// The end of a number (`12`, `1.5e-3`, `.5`, `0x1F`, `1_000`) starting at `i`.
fn number(s: &[u8], mut i: usize) -> usize {
    let is_num = |b: u8| b.is_ascii_alphanumeric() || b == b'_' || b == b'.';
    while i < s.len() {
        let b = s[i];
        let exponent_sign =
            (b == b'+' || b == b'-') && matches!(s.get(i.wrapping_sub(1)), Some(b'e' | b'E'));
        if !(exponent_sign || is_num(b)) {
            break;
        }
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_leave_the_shape_alone() {
        let a = scan("UPDATE t SET x = x + 5 WHERE id = 'a' -- c\n");
        let b = scan("update t set x = x + 77.5 where id = E'b\\'c' /* x /* y */ */");
        assert_eq!(a.shape, b.shape);
        assert_ne!(a.shape, scan("update t set x = x - 5 where id = 'a'").shape);
        assert_eq!(scan("select $$a$$").shape, scan("select 'b'").shape);
        assert_eq!(scan("select $x$it's$x$").shape, scan("select ''").shape);
        assert_ne!(scan("select \"A\"").shape, scan("select a").shape);
    }

    #[test]
    fn tells_quoted_text_from_sql() {
        let sql = "select 'a-b', \"c-d\", $x$e-f$x$, E'g\\'-h' /* i-j */ -- k-l\n, m-n";
        let at = |what: &str| sql.find(what).unwrap() + 1;
        for inside in ["a-b", "c-d", "e-f", "g\\'-h", "i-j", "k-l"] {
            assert!(!outside_quotes(sql, at(inside)), "{inside}");
        }
        assert!(outside_quotes(sql, at("m-n")));
        assert!(outside_quotes(sql, 0));
        assert!(outside_quotes("select 1", 99));
        // An unclosed string goes on to the end.
        assert!(!outside_quotes("select 'abc", 10));
        // `e` inside a word starts no string: the quote after it opens a plain one.
        assert!(!outside_quotes("select name'x\\'", 14));
    }

    #[test]
    fn finds_the_highest_parameter() {
        assert_eq!(scan("select $1, $12 from t where a = '$99'").max_param, 12);
        assert_eq!(scan("select 1 -- $3").max_param, 0);
        assert_eq!(scan("select $x$ $5 $x$, $2").max_param, 2);
    }
}
