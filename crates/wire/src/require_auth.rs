//! `require_auth` (libpq 16+): which authentication requests the server may make.
//!
//! Owns: parsing the comma-separated (optionally all negated) method list with
//! libpq's texts, and the per-request check with libpq's refusal texts.

use crate::ConfigError;

/// Authentication request codes (`AuthenticationXXX` messages).
const PASSWORD: u32 = 3;
const MD5: u32 = 5;
const GSS: u32 = 7;
const GSS_CONT: u32 = 8;
const SSPI: u32 = 9;
const SASL: u32 = 10;
const SASL_CONT: u32 = 11;
const SASL_FIN: u32 = 12;

/// A parsed `require_auth` setting.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct RequireAuth {
    text: String,
    /// Bit `1 << code` set for each allowed request code.
    allowed: u32,
    /// The server must authenticate the client ("none" not allowed).
    required: bool,
}

impl RequireAuth {
    /// Parses the setting; `None` when empty.
    pub(crate) fn parse(text: &str) -> Result<Option<RequireAuth>, ConfigError> {
        if text.is_empty() {
            return Ok(None);
        }
        let mut r = RequireAuth {
            text: text.to_string(),
            allowed: 0,
            required: true,
        };
        let mut negated = false;
        for (i, part) in text.split(',').enumerate() {
            let mut method = part;
            if let Some(m) = part.strip_prefix('!') {
                if i == 0 {
                    // All-negative list: start from everything allowed.
                    r.required = false;
                    r.allowed = u32::MAX;
                } else if !negated {
                    return Err(ConfigError(format!(
                        "negative require_auth method \"{part}\" cannot be mixed with non-negative methods"
                    )));
                }
                negated = true;
                method = m;
            } else if negated {
                return Err(ConfigError(format!(
                    "require_auth method \"{part}\" cannot be mixed with negative methods"
                )));
            }
            let duplicate = || {
                ConfigError(format!(
                    "require_auth method \"{part}\" is specified more than once"
                ))
            };
            let bits = match method {
                "password" => 1 << PASSWORD,
                "md5" => 1 << MD5,
                "gss" => (1 << GSS) | (1 << GSS_CONT),
                "sspi" => (1 << SSPI) | (1 << GSS_CONT),
                "scram-sha-256" => (1 << SASL) | (1 << SASL_CONT) | (1 << SASL_FIN),
                "none" => {
                    // "none" allows (or "!none" forbids) no authentication at all.
                    if negated {
                        if r.required {
                            return Err(duplicate());
                        }
                        r.required = true;
                    } else {
                        if !r.required {
                            return Err(duplicate());
                        }
                        r.required = false;
                    }
                    continue;
                }
                _ => {
                    return Err(ConfigError(format!(
                        "invalid require_auth value: \"{method}\""
                    )))
                }
            };
            if negated {
                if r.allowed & bits == 0 {
                    return Err(duplicate());
                }
                r.allowed &= !bits;
            } else {
                if r.allowed & bits == bits {
                    return Err(duplicate());
                }
                r.allowed |= bits;
            }
        }
        Ok(Some(r))
    }

    /// Checks an authentication request (`code` 0 = AuthenticationOk, with
    /// `finished` telling whether the client authenticated itself).
    pub(crate) fn check(&self, code: i32, finished: bool) -> Result<(), String> {
        let reason = if code == 0 {
            if self.required && !finished {
                "server did not complete authentication"
            } else {
                return Ok(());
            }
        } else {
            let c = code as u32;
            if c < 32 && self.allowed & (1 << c) != 0 {
                return Ok(());
            }
            match c {
                PASSWORD => "server requested a cleartext password",
                MD5 => "server requested a hashed password",
                GSS | GSS_CONT => "server requested GSSAPI authentication",
                SSPI => "server requested SSPI authentication",
                SASL | SASL_CONT | SASL_FIN => "server requested SASL authentication",
                _ => "server requested an unknown authentication type",
            }
        };
        Err(format!(
            "authentication method requirement \"{}\" failed: {reason}",
            self.text
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(s: &str) -> RequireAuth {
        RequireAuth::parse(s).expect("valid").expect("non-empty")
    }

    #[test]
    fn parsing_and_errors() {
        let err = |s: &str| RequireAuth::parse(s).expect_err(s).to_string();
        assert_eq!(
            err("md5,!password"),
            "negative require_auth method \"!password\" cannot be mixed with non-negative methods"
        );
        assert_eq!(
            err("!md5,password"),
            "require_auth method \"password\" cannot be mixed with negative methods"
        );
        assert_eq!(err("kerberos"), "invalid require_auth value: \"kerberos\"");
        assert_eq!(
            err("md5,md5"),
            "require_auth method \"md5\" is specified more than once"
        );
        assert_eq!(
            err("!none,!none"),
            "require_auth method \"!none\" is specified more than once"
        );
        assert_eq!(RequireAuth::parse("").expect("empty"), None);
    }

    #[test]
    fn checks_requests() {
        let r = parse("scram-sha-256");
        assert!(r.check(10, false).is_ok());
        assert_eq!(
            r.check(5, false),
            Err("authentication method requirement \"scram-sha-256\" failed: server requested a hashed password".into())
        );
        assert_eq!(
            r.check(0, false),
            Err("authentication method requirement \"scram-sha-256\" failed: server did not complete authentication".into())
        );
        assert!(r.check(0, true).is_ok());
        let r = parse("!password");
        assert!(r.check(5, false).is_ok());
        assert!(
            r.check(0, false).is_ok(),
            "trust allowed by a negative list"
        );
        assert!(r.check(3, false).is_err());
        let r = parse("none");
        assert!(r.check(0, false).is_ok());
        assert!(r.check(3, false).is_err());
        let r = parse("!none");
        assert!(r.check(0, false).is_err());
        assert!(r.check(10, false).is_ok());
    }
}
