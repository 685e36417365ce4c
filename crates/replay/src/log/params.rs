//! The bound parameters of an extended-protocol statement as `log_statement` writes
//! them in its `DETAIL:` (`parameters: $1 = '42', $2 = NULL, $3 = 'it''s'`), and the
//! check that they fit the statement's own `$n` references.

/// Why a parameter list cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError(pub String);

/// The values of `parameters: …` (`None`: SQL NULL), in order `$1`, `$2`…
pub fn parse_parameters(detail: &str) -> Result<Vec<Option<String>>, ParamError> {
    let Some(mut rest) = detail.strip_prefix("parameters: ") else {
        return Err(ParamError(format!(
            "DETAIL \"{}\" is not a parameter list",
            shorten(detail)
        )));
    };
    let mut values = Vec::new();
    loop {
        let n = values.len() + 1;
        let head = format!("${n} = ");
        rest = rest.strip_prefix(head.as_str()).ok_or_else(|| {
            ParamError(format!(
                "parameter list: expected \"${n} = \" at \"{}\"",
                shorten(rest)
            ))
        })?;
        if let Some(r) = rest.strip_prefix("NULL") {
            values.push(None);
            rest = r;
        } else if let Some(r) = rest.strip_prefix('\'') {
            let (value, r) = quoted(r).ok_or_else(|| {
                ParamError(format!("parameter list: ${n}'s value has no closing quote"))
            })?;
            values.push(Some(value));
            rest = r;
        } else {
            return Err(ParamError(format!(
                "parameter list: ${n}'s value is neither NULL nor quoted: \"{}\"",
                shorten(rest)
            )));
        }
        if rest.is_empty() {
            return Ok(values);
        }
        rest = rest.strip_prefix(", ").ok_or_else(|| {
            ParamError(format!(
                "parameter list: expected \", \" after ${n}'s value at \"{}\"",
                shorten(rest)
            ))
        })?;
    }
}

/// A value after its opening quote, quotes doubled inside: the value and what follows
/// its closing quote.
fn quoted(s: &str) -> Option<(String, &str)> {
    let mut value = String::new();
    let mut rest = s;
    loop {
        let q = rest.find('\'')?;
        value.push_str(&rest[..q]);
        rest = &rest[q + 1..];
        match rest.strip_prefix('\'') {
            Some(r) => {
                value.push('\'');
                rest = r;
            }
            None => return Some((value, rest)),
        }
    }
}

/// Most parameters one statement binds: the protocol counts them in 16 bits.
pub const MAX_PARAMS: usize = 65_535;

/// Checks that `count` parameters fit a statement whose highest reference is `$max`.
pub fn check_count(count: usize, max_reference: usize) -> Result<(), ParamError> {
    if count > MAX_PARAMS {
        return Err(ParamError(format!(
            "the log binds {count} parameters; a statement binds at most {MAX_PARAMS}"
        )));
    }
    if count == max_reference {
        return Ok(());
    }
    Err(ParamError(format!(
        "the statement refers to {} but the log binds {count} parameter{}",
        match max_reference {
            0 => "no parameter".to_string(),
            m => format!("${m}"),
        },
        if count == 1 { "" } else { "s" }
    )))
}

fn shorten(s: &str) -> &str {
    match s.char_indices().nth(40) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_values_nulls_and_doubled_quotes() {
        let v = parse_parameters("parameters: $1 = '42', $2 = NULL, $3 = 'it''s, ok'").unwrap();
        assert_eq!(v, vec![Some("42".into()), None, Some("it's, ok".into())]);
        assert_eq!(
            parse_parameters("parameters: $1 = ''").unwrap(),
            vec![Some(String::new())]
        );
    }

    #[test]
    fn refuses_lists_out_of_order_or_cut() {
        assert!(parse_parameters("parameters: $2 = '1'")
            .unwrap_err()
            .0
            .contains("$1"));
        assert!(parse_parameters("parameters: $1 = 'abc")
            .unwrap_err()
            .0
            .contains("closing quote"));
        assert!(parse_parameters("parameters: $1 = 42").is_err());
        assert!(parse_parameters("parameters: $1 = '1' $2 = '2'").is_err());
        assert!(parse_parameters("prepare: PREPARE x AS select 1").is_err());
    }

    #[test]
    fn counts_must_match_the_statement() {
        assert!(check_count(2, 2).is_ok());
        assert!(check_count(1, 2)
            .unwrap_err()
            .0
            .contains("refers to $2 but the log binds 1 parameter"));
        assert!(check_count(1, 0).is_err());
        assert!(check_count(65_535, 65_535).is_ok());
        assert!(check_count(65_536, 65_536)
            .unwrap_err()
            .0
            .contains("at most 65535"));
    }
}
