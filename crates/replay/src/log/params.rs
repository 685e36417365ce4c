//! The bound parameters of an extended-protocol statement as `log_statement` writes
//! them in its `DETAIL:` (`parameters: $1 = '42', $2 = NULL, $3 = 'it''s'`), and the
//! check that they fit the statement's own `$n` references.

/// Why a parameter list cannot be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamError(pub String);

/// The bound values of one execution, in order `$1`, `$2`…: their texts one after the
/// other in one buffer, so that a list is refilled without allocating once its buffers
/// are as large as the log's lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Params {
    text: String,
    /// Each value's end in `text` (`None`: SQL NULL).
    ends: Vec<Option<u32>>,
}

impl Params {
    /// No value.
    pub fn new() -> Self {
        Self::default()
    }

    /// How many values.
    pub fn len(&self) -> usize {
        self.ends.len()
    }

    /// No value at all.
    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Forgets the values, keeping the buffers.
    pub fn clear(&mut self) {
        self.text.clear();
        self.ends.clear();
    }

    /// Appends a value (`None`: NULL).
    pub fn push(&mut self, value: Option<&str>) {
        match value {
            Some(v) => {
                self.text.push_str(v);
                self.close_value();
            }
            None => self.ends.push(None),
        }
    }

    /// Ends the value whose text was appended to `text` since the last one.
    fn close_value(&mut self) {
        self.ends.push(Some(self.text.len() as u32));
    }

    /// The values in order (`None`: NULL).
    pub fn iter(&self) -> impl Iterator<Item = Option<&str>> + '_ {
        let mut start = 0usize;
        self.ends.iter().map(move |end| {
            end.map(|e| {
                let v = &self.text[start..e as usize];
                start = e as usize;
                v
            })
        })
    }
}

impl<'a> FromIterator<Option<&'a str>> for Params {
    fn from_iter<I: IntoIterator<Item = Option<&'a str>>>(values: I) -> Self {
        let mut p = Params::new();
        for v in values {
            p.push(v);
        }
        p
    }
}

/// The values of `parameters: …` (`None`: SQL NULL), in order `$1`, `$2`…
pub fn parse_parameters(detail: &str) -> Result<Vec<Option<String>>, ParamError> {
    let mut p = Params::new();
    parse_parameters_into(detail, &mut p)?;
    Ok(p.iter().map(|v| v.map(str::to_string)).collect())
}

/// Reads `parameters: …` into `out` (cleared first); on an error `out` holds the
/// values before the one that could not be read.
pub fn parse_parameters_into(detail: &str, out: &mut Params) -> Result<(), ParamError> {
    out.clear();
    let Some(mut rest) = detail.strip_prefix("parameters: ") else {
        return Err(ParamError(format!(
            "DETAIL \"{}\" is not a parameter list",
            shorten(detail)
        )));
    };
    loop {
        let n = out.len() + 1;
        rest = strip_reference(rest, n).ok_or_else(|| {
            ParamError(format!(
                "parameter list: expected \"${n} = \" at \"{}\"",
                shorten(rest)
            ))
        })?;
        if let Some(r) = rest.strip_prefix("NULL") {
            out.push(None);
            rest = r;
        } else if let Some(r) = rest.strip_prefix('\'') {
            rest = quoted(r, &mut out.text).ok_or_else(|| {
                ParamError(format!("parameter list: ${n}'s value has no closing quote"))
            })?;
            out.close_value();
        } else {
            return Err(ParamError(format!(
                "parameter list: ${n}'s value is neither NULL nor quoted: \"{}\"",
                shorten(rest)
            )));
        }
        if rest.is_empty() {
            return Ok(());
        }
        rest = rest.strip_prefix(", ").ok_or_else(|| {
            ParamError(format!(
                "parameter list: expected \", \" after ${n}'s value at \"{}\"",
                shorten(rest)
            ))
        })?;
    }
}

/// `s` after `$n = `, or `None` when it does not start with it.
fn strip_reference(s: &str, n: usize) -> Option<&str> {
    let digits = s.strip_prefix('$')?;
    let len = digits.bytes().take_while(u8::is_ascii_digit).count();
    if len == 0 || digits[..len].starts_with('0') || digits[..len].parse::<usize>().ok()? != n {
        return None;
    }
    digits[len..].strip_prefix(" = ")
}

/// A value after its opening quote, quotes doubled inside, appended to `value`: what
/// follows its closing quote.
fn quoted<'a>(s: &'a str, value: &mut String) -> Option<&'a str> {
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
            None => return Some(rest),
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
        assert!(parse_parameters("parameters: $01 = '1'").is_err());
        assert!(parse_parameters("parameters: $1 = '1', $3 = '3'")
            .unwrap_err()
            .0
            .contains("$2"));
    }

    #[test]
    fn a_list_refilled_keeps_its_values_apart() {
        let mut p = Params::new();
        parse_parameters_into("parameters: $1 = 'abc', $2 = NULL, $3 = ''", &mut p).unwrap();
        assert_eq!(p.iter().collect::<Vec<_>>(), [Some("abc"), None, Some("")]);
        parse_parameters_into("parameters: $1 = 'x''y'", &mut p).unwrap();
        assert_eq!(p.iter().collect::<Vec<_>>(), [Some("x'y")]);
        assert_eq!(p, [Some("x'y")].into_iter().collect::<Params>());
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
