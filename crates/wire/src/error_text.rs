//! Renders a server error or notice the way libpq's default verbosity does
//! (`PQERRORS_DEFAULT`, context shown for errors only), including the `LINE n:` excerpt
//! with a caret when the query text is known, from either an owned
//! [`DbError`](crate::DbError) or the borrowed fields of a message still in the receive buffer.
//!
//! pgbench prints these texts verbatim, so the layout (two spaces after the
//! severity, the 60-column excerpt window, `...` truncation marks) must match.
//!
//! Which query text is "known" is the caller's business and follows libpq: the text
//! given to `PQsendQuery`, `PQsendQueryParams` or `PQsendPrepare`, none for
//! `PQsendQueryPrepared`. Without it a statement position is appended to the primary
//! message as ` at character N`.

use std::borrow::Cow;

/// Screen width of the excerpt line (libpq's limit).
const DISPLAY_SIZE: usize = 60;
/// Keep at least this many columns between the caret and a right cut.
const MIN_RIGHT_CUT: usize = 10;

/// The fields of a server error or notice that the default-verbosity text shows.
#[derive(Debug, Default)]
pub(crate) struct Report<'a> {
    /// `S`; nothing is printed before the message when it is empty.
    pub severity: Cow<'a, str>,
    /// `M`.
    pub message: Cow<'a, str>,
    /// `D`.
    pub detail: Option<Cow<'a, str>>,
    /// `H`.
    pub hint: Option<Cow<'a, str>>,
    /// `P` as sent (printed as is after ` at character `).
    pub position: Option<Cow<'a, str>>,
    /// `p` as sent.
    pub internal_position: Option<Cow<'a, str>>,
    /// `q`.
    pub internal_query: Option<Cow<'a, str>>,
    /// `W`.
    pub context: Option<Cow<'a, str>>,
    /// libpq shows CONTEXT for error results only (`PQSHOW_CONTEXT_ERRORS`).
    pub show_context: bool,
}

/// libpq's `atoi` of a position field: leading digits, 0 when there are none.
fn position_value(text: &str) -> usize {
    let digits = text.trim_start();
    let end = digits
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(digits.len());
    digits[..end].parse().unwrap_or(0)
}

/// Builds the message text, ending with a newline. With `query` and a statement
/// position, the position is shown as an excerpt; without a query it is appended to the
/// primary message as ` at character N`. An internal position is shown on the internal
/// query the server sent.
pub(crate) fn render(r: &Report<'_>, query: Option<&str>) -> String {
    let mut out = String::with_capacity(r.message.len() + 32);
    if !r.severity.is_empty() {
        out.push_str(&r.severity);
        out.push_str(":  ");
    }
    out.push_str(&r.message);
    let mut excerpt: Option<(&str, usize)> = None;
    let (pos, text) = match (&r.position, &r.internal_position) {
        (Some(p), _) => (Some(p), query),
        (None, Some(p)) => (Some(p), r.internal_query.as_deref()),
        (None, None) => (None, None),
    };
    if let Some(pos) = pos {
        match text {
            Some(q) => excerpt = Some((q, position_value(pos))),
            None => {
                out.push_str(" at character ");
                out.push_str(pos);
            }
        }
    }
    out.push('\n');
    if let Some((q, pos)) = excerpt {
        if pos > 0 {
            report_position(&mut out, q, pos);
        }
    }
    let mut line = |label: &str, v: &Option<Cow<'_, str>>| {
        if let Some(v) = v {
            out.push_str(label);
            out.push_str(":  ");
            out.push_str(v);
            out.push('\n');
        }
    };
    line("DETAIL", &r.detail);
    line("HINT", &r.hint);
    line("QUERY", &r.internal_query);
    if r.show_context {
        line("CONTEXT", &r.context);
    }
    out
}

/// Display width of one character, as libpq's UTF-8 `dsplen` (wide East Asian
/// characters take two columns; control characters count as one).
fn char_width(c: char) -> usize {
    let u = c as u32;
    let wide = (0x1100..=0x115F).contains(&u)
        || (0x2E80..=0xA4CF).contains(&u) && u != 0x303F
        || (0xAC00..=0xD7A3).contains(&u)
        || (0xF900..=0xFAFF).contains(&u)
        || (0xFE30..=0xFE6F).contains(&u)
        || (0xFF00..=0xFF5F).contains(&u)
        || (0xFFE0..=0xFFE6).contains(&u)
        || (0x20000..=0x2FFFD).contains(&u)
        || (0x30000..=0x3FFFD).contains(&u);
    if wide {
        2
    } else {
        1
    }
}

/// Appends `LINE n: <excerpt>\n<spaces>^\n` for 1-based character position `loc1`.
fn report_position(out: &mut String, query: &str, loc1: usize) {
    let loc = loc1 - 1;
    // Per character: byte offset and screen column; tabs become spaces.
    let chars: Vec<char> = query
        .chars()
        .map(|c| if c == '\t' { ' ' } else { c })
        .collect();
    let mut qidx = Vec::with_capacity(chars.len() + 1);
    let mut scridx = Vec::with_capacity(chars.len() + 1);
    let mut scr = 0usize;
    let mut loc_line = 1;
    let mut ibeg = 0usize;
    let mut iend: Option<usize> = None;
    let mut cno = 0usize;
    while cno < chars.len() {
        let ch = chars[cno];
        qidx.push(cno);
        scridx.push(scr);
        if ch == '\r' || ch == '\n' {
            if cno < loc {
                if ch == '\r' || cno == 0 || chars[cno - 1] != '\r' {
                    loc_line += 1;
                }
                ibeg = cno + 1;
            } else {
                iend = Some(cno);
                break;
            }
        }
        scr += char_width(ch);
        cno += 1;
    }
    let mut iend = match iend {
        Some(i) => i,
        None => {
            qidx.push(cno);
            scridx.push(scr);
            cno
        }
    };
    if loc > cno {
        return;
    }
    let mut beg_trunc = false;
    let mut end_trunc = false;
    if scridx[iend] - scridx[ibeg] > DISPLAY_SIZE {
        if scridx[ibeg] + DISPLAY_SIZE >= scridx[loc] + MIN_RIGHT_CUT {
            while scridx[iend] - scridx[ibeg] > DISPLAY_SIZE {
                iend -= 1;
            }
            end_trunc = true;
        } else {
            while scridx[loc] + MIN_RIGHT_CUT < scridx[iend] {
                iend -= 1;
                end_trunc = true;
            }
            while scridx[iend] - scridx[ibeg] > DISPLAY_SIZE {
                ibeg += 1;
                beg_trunc = true;
            }
        }
    }
    let prefix = format!("LINE {loc_line}: {}", if beg_trunc { "..." } else { "" });
    let prefix_width: usize = prefix.chars().map(char_width).sum();
    out.push_str(&prefix);
    out.extend(&chars[qidx[ibeg]..qidx[iend]]);
    if end_trunc {
        out.push_str("...");
    }
    out.push('\n');
    let caret_col = prefix_width + scridx[loc] - scridx[ibeg];
    out.extend(std::iter::repeat_n(' ', caret_col));
    out.push_str("^\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DbError;

    fn text(e: &DbError, query: Option<&str>) -> String {
        render(&Report::of_db_error(e), query)
    }

    fn err(msg: &str) -> DbError {
        DbError {
            severity: "ERROR".into(),
            severity_nonlocalized: Some("ERROR".into()),
            code: "42601".into(),
            message: msg.into(),
            ..Default::default()
        }
    }

    #[test]
    fn plain_error_with_detail_and_hint() {
        let mut e = err("relation \"t\" does not exist");
        e.detail = Some("d".into());
        e.hint = Some("h".into());
        assert_eq!(
            text(&e, None),
            "ERROR:  relation \"t\" does not exist\nDETAIL:  d\nHINT:  h\n"
        );
    }

    #[test]
    fn position_without_query_is_appended_as_text() {
        let mut e = err("syntax error at or near \"x\"");
        e.position = Some(8);
        assert_eq!(
            text(&e, None),
            "ERROR:  syntax error at or near \"x\" at character 8\n"
        );
    }

    #[test]
    fn position_with_query_shows_caret() {
        let mut e = err("syntax error at or near \"selec\"");
        e.position = Some(1);
        assert_eq!(
            text(&e, Some("selec 1")),
            "ERROR:  syntax error at or near \"selec\"\nLINE 1: selec 1\n        ^\n"
        );
        let mut e = err("column \"y\" does not exist");
        e.position = Some(16);
        assert_eq!(
            text(&e, Some("select 1,\n  2, y from t")),
            "ERROR:  column \"y\" does not exist\nLINE 2:   2, y from t\n             ^\n"
        );
    }

    #[test]
    fn long_line_is_truncated_around_position() {
        let q = format!("select {} from t", "a".repeat(100));
        let mut e = err("boom");
        e.position = Some(100);
        let text = text(&e, Some(&q));
        let line = text.lines().nth(1).expect("LINE");
        assert!(line.starts_with("LINE 1: ..."), "{line}");
        assert!(line.ends_with("..."), "{line}");
        let caret = text.lines().nth(2).expect("caret");
        // The caret points at the same character of the excerpt.
        let col = caret.len() - 1;
        assert_eq!(caret.trim(), "^");
        assert_eq!(line.chars().nth(col), Some('a'));
    }

    #[test]
    fn context_only_for_errors() {
        let mut e = err("x");
        e.where_ = Some("PL/pgSQL function f() line 1".into());
        assert!(text(&e, None).contains("CONTEXT:  PL/pgSQL"));
        e.severity = "NOTICE".into();
        e.severity_nonlocalized = Some("NOTICE".into());
        assert!(!text(&e, None).contains("CONTEXT"));
    }
}
