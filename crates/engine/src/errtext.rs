//! Server error and notice texts as libpq's `PQerrorMessage` renders them with the
//! default verbosity (severity, primary message, detail, hint, context), which is what
//! pgbench prints after `client N script S aborted in command C query Q: `.

use crate::proto::ErrorFields;
use std::fmt::Write as _;

/// `SEVERITY:  message` plus `DETAIL:`, `HINT:`, `CONTEXT:` lines, no trailing newline.
pub fn pq_message(f: &ErrorFields<'_>) -> String {
    let mut s = String::with_capacity(f.message.len() + 16);
    let _ = write!(s, "{}:  {}", f.severity, f.message);
    if let Some(d) = f.detail {
        let _ = write!(s, "\nDETAIL:  {d}");
    }
    if let Some(h) = f.hint {
        let _ = write!(s, "\nHINT:  {h}");
    }
    if let Some(q) = f.internal_query {
        let _ = write!(s, "\nQUERY:  {q}");
    }
    if let Some(c) = f.context {
        let _ = write!(s, "\nCONTEXT:  {c}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::proto::error_fields;

    #[test]
    fn renders_like_libpq_default_verbosity() {
        let f = error_fields(
            b"SERROR\0C40P01\0Mdeadlock detected\0DProcess 1 waits.\0HSee server log.\0\0",
        );
        assert_eq!(
            pq_message(&f),
            "ERROR:  deadlock detected\nDETAIL:  Process 1 waits.\nHINT:  See server log."
        );
    }
}
