//! Owns pgbench's typed expression value ([`Value`]) and its text form.
//!
//! The text form is what SQL substitution, `$n` parameters and shell arguments see:
//! NULL → `NULL`, booleans → `true`/`false`, integers in decimal, doubles with `%.15g`
//! as PostgreSQL's own printf renders them (`NaN`, `Infinity`, `-Infinity`).

use crate::numfmt::format_double;

/// A value of the expression language.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// SQL-like NULL.
    Null,
    /// A boolean.
    Bool(bool),
    /// A 64-bit signed integer.
    Int(i64),
    /// A double-precision float.
    Double(f64),
}

/// The type of a [`Value`], named as pgbench names it in messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ValueType {
    /// `null`
    Null,
    /// `boolean`
    Bool,
    /// `int`
    Int,
    /// `double`
    Double,
}

impl ValueType {
    /// pgbench's name of the type (`null`, `boolean`, `int`, `double`).
    pub fn name(self) -> &'static str {
        match self {
            ValueType::Null => "null",
            ValueType::Bool => "boolean",
            ValueType::Int => "int",
            ValueType::Double => "double",
        }
    }
}

impl Value {
    /// The value's type.
    pub fn value_type(&self) -> ValueType {
        match self {
            Value::Null => ValueType::Null,
            Value::Bool(_) => ValueType::Bool,
            Value::Int(_) => ValueType::Int,
            Value::Double(_) => ValueType::Double,
        }
    }

    /// Appends the text form pgbench uses for substitution and parameters.
    pub fn write_text(&self, out: &mut String) {
        match *self {
            Value::Null => out.push_str("NULL"),
            Value::Bool(b) => out.push_str(if b { "true" } else { "false" }),
            Value::Int(i) => out.push_str(itoa::Buffer::new().format(i)),
            Value::Double(d) => format_double(d, out),
        }
    }

    /// The text form as a new string (allocates; use [`Value::write_text`] on hot paths).
    pub fn to_text(&self) -> String {
        let mut s = String::new();
        self.write_text(&mut s);
        s
    }

    /// pgbench's `valueTruth`: NULL is false, numbers are true when non-zero.
    pub fn truth(&self) -> bool {
        match *self {
            Value::Null => false,
            Value::Bool(b) => b,
            Value::Int(i) => i != 0,
            Value::Double(d) => d != 0.0,
        }
    }
}
