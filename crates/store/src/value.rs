//! Backend-neutral SQL values and rows, and the conversions between them and Rust types.
//!
//! The PostgreSQL backend returns every value as text (simple query protocol); the
//! conversions here therefore accept text for numbers and `\x…` hex text for blobs.

use crate::error::{Result, StoreError};

/// One SQL value.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// NULL.
    Null,
    /// A 64-bit integer.
    Int(i64),
    /// A double.
    Real(f64),
    /// Text.
    Text(String),
    /// Bytes.
    Blob(Vec<u8>),
}

/// One result row: values in the order of the SELECT list.
#[derive(Debug, Clone, Default)]
pub struct Row(pub Vec<Value>);

impl Row {
    /// The value at `i` (NULL past the end).
    pub fn get(&self, i: usize) -> &Value {
        self.0.get(i).unwrap_or(&Value::Null)
    }

    /// Converts the value at `i`; `column` names it in errors.
    pub fn read<T: FromValue>(&self, i: usize, column: &str) -> Result<T> {
        T::from_value(self.get(i), column)
    }
}

/// Conversion into a SQL value.
pub trait ToValue {
    /// The SQL value.
    fn to_value(&self) -> Value;
}

/// Conversion from a SQL value.
pub trait FromValue: Sized {
    /// Converts `v`; `column` names it in errors.
    fn from_value(v: &Value, column: &str) -> Result<Self>;
}

fn bad(column: &str, message: impl Into<String>) -> StoreError {
    StoreError::BadValue {
        column: column.to_string(),
        message: message.into(),
    }
}

impl ToValue for i64 {
    fn to_value(&self) -> Value {
        Value::Int(*self)
    }
}
impl ToValue for f64 {
    fn to_value(&self) -> Value {
        if self.is_finite() {
            Value::Real(*self)
        } else {
            Value::Null
        }
    }
}
impl ToValue for bool {
    fn to_value(&self) -> Value {
        Value::Int(i64::from(*self))
    }
}
impl ToValue for String {
    fn to_value(&self) -> Value {
        Value::Text(self.clone())
    }
}
impl ToValue for &str {
    fn to_value(&self) -> Value {
        Value::Text((*self).to_string())
    }
}
impl ToValue for Vec<u8> {
    fn to_value(&self) -> Value {
        Value::Blob(self.clone())
    }
}
impl ToValue for serde_json::Value {
    fn to_value(&self) -> Value {
        Value::Text(self.to_string())
    }
}
impl<T: ToValue> ToValue for Option<T> {
    fn to_value(&self) -> Value {
        match self {
            Some(v) => v.to_value(),
            None => Value::Null,
        }
    }
}

impl FromValue for i64 {
    fn from_value(v: &Value, column: &str) -> Result<Self> {
        match v {
            Value::Int(i) => Ok(*i),
            Value::Real(f) if f.fract() == 0.0 => Ok(*f as i64),
            Value::Text(s) => s
                .trim()
                .parse()
                .map_err(|_| bad(column, format!("expected an integer, found {s:?}"))),
            Value::Null => Err(bad(column, "unexpected NULL")),
            other => Err(bad(column, format!("expected an integer, found {other:?}"))),
        }
    }
}
impl FromValue for f64 {
    fn from_value(v: &Value, column: &str) -> Result<Self> {
        match v {
            Value::Int(i) => Ok(*i as f64),
            Value::Real(f) => Ok(*f),
            Value::Text(s) => s
                .trim()
                .parse()
                .map_err(|_| bad(column, format!("expected a number, found {s:?}"))),
            Value::Null => Err(bad(column, "unexpected NULL")),
            other => Err(bad(column, format!("expected a number, found {other:?}"))),
        }
    }
}
impl FromValue for bool {
    fn from_value(v: &Value, column: &str) -> Result<Self> {
        match v {
            Value::Text(s) if s == "t" || s == "true" => Ok(true),
            Value::Text(s) if s == "f" || s == "false" => Ok(false),
            other => Ok(i64::from_value(other, column)? != 0),
        }
    }
}
impl FromValue for String {
    fn from_value(v: &Value, column: &str) -> Result<Self> {
        match v {
            Value::Text(s) => Ok(s.clone()),
            Value::Int(i) => Ok(i.to_string()),
            Value::Real(f) => Ok(f.to_string()),
            Value::Null => Err(bad(column, "unexpected NULL")),
            Value::Blob(b) => String::from_utf8(b.clone()).map_err(|_| bad(column, "not UTF-8")),
        }
    }
}
impl FromValue for Vec<u8> {
    fn from_value(v: &Value, column: &str) -> Result<Self> {
        match v {
            Value::Blob(b) => Ok(b.clone()),
            Value::Text(s) => decode_bytea_hex(s).ok_or_else(|| bad(column, "bad bytea hex text")),
            Value::Null => Err(bad(column, "unexpected NULL")),
            other => Err(bad(column, format!("expected bytes, found {other:?}"))),
        }
    }
}
impl FromValue for serde_json::Value {
    fn from_value(v: &Value, column: &str) -> Result<Self> {
        let s = String::from_value(v, column)?;
        serde_json::from_str(&s).map_err(|e| bad(column, format!("invalid JSON: {e}")))
    }
}
impl<T: FromValue> FromValue for Option<T> {
    fn from_value(v: &Value, column: &str) -> Result<Self> {
        match v {
            Value::Null => Ok(None),
            other => T::from_value(other, column).map(Some),
        }
    }
}

/// Decodes PostgreSQL's `bytea` hex output (`\x0a1b…`).
pub(crate) fn decode_bytea_hex(s: &str) -> Option<Vec<u8>> {
    let hex = s.strip_prefix("\\x")?;
    if hex.len() % 2 != 0 {
        return None;
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bytea_hex_round_trip_and_rejects_garbage() {
        assert_eq!(decode_bytea_hex("\\x00ff10"), Some(vec![0, 255, 16]));
        assert_eq!(decode_bytea_hex("\\x0"), None);
        assert_eq!(decode_bytea_hex("00ff"), None);
        assert_eq!(decode_bytea_hex("\\xzz"), None);
    }

    #[test]
    fn text_numbers_convert_and_null_is_none() {
        assert_eq!(i64::from_value(&Value::Text("42".into()), "c").unwrap(), 42);
        assert_eq!(
            f64::from_value(&Value::Text("1.5".into()), "c").unwrap(),
            1.5
        );
        assert_eq!(Option::<i64>::from_value(&Value::Null, "c").unwrap(), None);
        assert!(i64::from_value(&Value::Text("x".into()), "c").is_err());
        assert!(i64::from_value(&Value::Null, "c").is_err());
        assert_eq!(f64::NAN.to_value(), Value::Null);
    }
}
