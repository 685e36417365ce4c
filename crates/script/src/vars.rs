//! Owns a client's variable table: creation with pgbench's name rules, the string and
//! typed forms of each variable, and the lazy parsing of strings (from `-D`, `\gset`,
//! `\aset`) into values the first time an expression uses them.
//!
//! Lookups never allocate (except the first lookup of each numbered [`VarName`], which
//! may grow the table of where numbered names live); creating a variable or storing a
//! new string allocates, so evaluating `\set` in steady state is allocation-free.

use crate::names::{VarName, UNNUMBERED};
use crate::value::Value;
use std::collections::HashMap;

/// Variable names come from the scripts and options, not from an adversary, and are
/// looked up several times per transaction: a fast fixed hash instead of SipHash.
type NameHasher = foldhash::fast::FixedState;

/// Whether `name` may name a new variable: an ASCII letter, `_` or a byte ≥ 0x80 first,
/// then also digits (pgbench's `valid_variable_name`).
pub fn is_valid_variable_name(name: &str) -> bool {
    let b = name.as_bytes();
    let Some((&first, rest)) = b.split_first() else {
        return false;
    };
    let start = |c: u8| c >= 0x80 || c.is_ascii_alphabetic() || c == b'_';
    start(first) && rest.iter().all(|&c| start(c) || c.is_ascii_digit())
}

/// A variable-related failure, rendered as pgbench prints it (`pgbench: error: ` + text).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VarError {
    /// Creating a variable with an invalid name; `context` is `option`, `set`, `setshell`,
    /// `gset` or `aset`.
    #[error("{context}: invalid variable name: \"{name}\"")]
    InvalidName {
        /// Where the name came from.
        context: String,
        /// The rejected name.
        name: String,
    },
    /// A string that looks like an integer but does not fit an int64.
    #[error("value \"{0}\" is out of range for type bigint")]
    IntOutOfRange(String),
    /// A string that looks like an integer but is not one (e.g. a lone sign).
    #[error("invalid input syntax for type bigint: \"{0}\"")]
    InvalidInt(String),
    /// A string that is neither NULL, boolean, integer nor double.
    #[error("malformed variable \"{name}\" value: \"{value}\"")]
    Malformed {
        /// Variable name.
        name: String,
        /// Its string value.
        value: String,
    },
    /// An empty string value: pgbench fails without a message of its own.
    #[error("")]
    Empty,
}

impl VarError {
    /// The message pgbench prints, or `None` when it prints nothing.
    pub fn message(&self) -> Option<String> {
        match self {
            VarError::Empty => None,
            e => Some(e.to_string()),
        }
    }
}

/// The part of a variable a transaction reads and writes: its typed value, and whether
/// the text in [`VarText`] is current. Kept apart from the names and texts so a client's
/// values share a cache line or two instead of spanning one each.
#[derive(Debug, Clone, Copy)]
struct Cell {
    /// Which value it holds: one of the `KIND_` constants.
    kind: u8,
    /// The text in [`VarText::text`] is valid (set as a string or already rendered).
    has_text: bool,
    /// The integer, the double's bits or the boolean.
    bits: u64,
}

const KIND_NONE: u8 = 0;
const KIND_NULL: u8 = 1;
const KIND_BOOL: u8 = 2;
const KIND_INT: u8 = 3;
const KIND_DOUBLE: u8 = 4;

impl Cell {
    /// Sixteen bytes where `Option<Value>` and a flag take twenty-four: four variables
    /// per cache line.
    fn new(value: Option<Value>, has_text: bool) -> Cell {
        let (kind, bits) = match value {
            None => (KIND_NONE, 0),
            Some(Value::Null) => (KIND_NULL, 0),
            Some(Value::Bool(b)) => (KIND_BOOL, u64::from(b)),
            Some(Value::Int(i)) => (KIND_INT, i as u64),
            Some(Value::Double(d)) => (KIND_DOUBLE, d.to_bits()),
        };
        Cell {
            kind,
            has_text,
            bits,
        }
    }

    /// Typed form, if set as a value or already parsed.
    #[inline]
    fn value(&self) -> Option<Value> {
        match self.kind {
            KIND_INT => Some(Value::Int(self.bits as i64)),
            KIND_DOUBLE => Some(Value::Double(f64::from_bits(self.bits))),
            KIND_BOOL => Some(Value::Bool(self.bits != 0)),
            KIND_NULL => Some(Value::Null),
            _ => None,
        }
    }
}

/// A variable's name and string form. The string buffer is kept when invalidated so
/// re-rendering does not allocate.
#[derive(Debug, Clone)]
struct VarText {
    name: Box<str>,
    text: String,
}

/// A client's variables (in declaration order, `repr(C)`: the tables a lookup by number
/// reads before the hash index). Slot `i` is `cells[i]` and `texts[i]`.
#[derive(Debug, Clone, Default)]
#[repr(C)]
pub struct Variables {
    /// Where each numbered name ([`VarName`]) was found, as slot + 1 (0: not looked up
    /// yet), indexed by its number: the per-transaction lookups of a script's names are
    /// one load. Variables are never removed, so a remembered slot stays right. The first
    /// [`SMALL`] numbers and slots (a typical script's) are kept here, inside the client,
    /// the rest in `by_number`.
    small: [u8; SMALL],
    cells: Vec<Cell>,
    texts: Vec<VarText>,
    by_number: Vec<u32>,
    index: HashMap<Box<str>, usize, NameHasher>,
}

/// Where a variable of one [`Variables`] is kept ([`Variables::slot_of`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VarSlot(usize);

/// Numbers and slots below this are remembered in [`Variables::small`].
const SMALL: usize = 16;

/// What variables are looked up by: a plain name (hashed every time) or a script's
/// numbered [`VarName`].
pub trait VarKey {
    /// The name.
    fn name(&self) -> &str;
    /// Its number, if it has one.
    fn number(&self) -> u32 {
        UNNUMBERED
    }
}

impl VarKey for str {
    fn name(&self) -> &str {
        self
    }
}

impl<K: VarKey + ?Sized> VarKey for &K {
    fn name(&self) -> &str {
        (**self).name()
    }
    fn number(&self) -> u32 {
        (**self).number()
    }
}

impl VarKey for String {
    fn name(&self) -> &str {
        self
    }
}

impl VarKey for Box<str> {
    fn name(&self) -> &str {
        self
    }
}

impl VarKey for VarName {
    #[inline]
    fn name(&self) -> &str {
        self.as_str()
    }
    #[inline]
    fn number(&self) -> u32 {
        VarName::number(self)
    }
}

impl Variables {
    /// Where the values are stored (a hint for cache prefetching; never read through).
    pub fn values_ptr(&self) -> *const u8 {
        self.cells.as_ptr().cast()
    }

    /// An empty table.
    pub fn new() -> Variables {
        Variables::default()
    }

    /// Whether `name` is defined.
    pub fn contains(&self, name: &str) -> bool {
        self.index.contains_key(name)
    }

    /// Number of variables.
    pub fn len(&self) -> usize {
        self.cells.len()
    }

    /// Whether no variable is defined.
    pub fn is_empty(&self) -> bool {
        self.cells.is_empty()
    }

    /// Variable names in name order (as pgbench keeps them sorted).
    pub fn names(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.texts.iter().map(|v| &*v.name).collect();
        v.sort_unstable();
        v
    }

    /// The slot of `key`, if defined. The lookup of a script's first names, once found,
    /// is one load, always inlined (whether the compiler inlines a larger function
    /// changed with unrelated edits elsewhere, by about 30 instructions per lookup).
    #[inline(always)]
    fn find<K: VarKey + ?Sized>(&mut self, key: &K) -> Option<usize> {
        let number = key.number() as usize;
        if let Some(&slot) = self.small.get(number) {
            if slot != 0 {
                return Some(usize::from(slot) - 1);
            }
        }
        self.find_further(key, number)
    }

    /// [`Variables::find`] past the slots kept inside the client, or the first time.
    #[inline(never)]
    fn find_further<K: VarKey + ?Sized>(&mut self, key: &K, number: usize) -> Option<usize> {
        if number >= SMALL {
            if let Some(&slot) = self.by_number.get(number) {
                if slot != 0 {
                    return Some(slot as usize - 1);
                }
            }
        }
        let i = *self.index.get(key.name())?;
        self.remember(number, i);
        Some(i)
    }

    fn remember(&mut self, number: usize, slot: usize) {
        if number == UNNUMBERED as usize {
            return;
        }
        if number < SMALL {
            // A slot too large for a byte is looked up by name each time.
            if let Ok(s) = u8::try_from(slot + 1) {
                self.small[number] = s;
            }
            return;
        }
        if self.by_number.len() <= number {
            self.by_number.resize(number + 1, 0);
        }
        self.by_number[number] = slot as u32 + 1;
    }

    fn slot_or_create<K: VarKey + ?Sized>(
        &mut self,
        context: &str,
        key: &K,
    ) -> Result<usize, VarError> {
        if let Some(i) = self.find(key) {
            return Ok(i);
        }
        let name = key.name();
        if !is_valid_variable_name(name) {
            return Err(VarError::InvalidName {
                context: context.to_string(),
                name: name.to_string(),
            });
        }
        let i = self.cells.len();
        self.cells.push(Cell::new(None, false));
        self.texts.push(VarText {
            name: name.into(),
            text: String::new(),
        });
        self.index.insert(name.into(), i);
        self.remember(key.number() as usize, i);
        Ok(i)
    }

    /// `putVariable`: stores a string (parsed lazily when an expression reads it).
    /// `context` names the caller in the invalid-name message (`option`, `gset`, …).
    pub fn set_string<K: VarKey + ?Sized>(
        &mut self,
        context: &str,
        name: &K,
        value: &str,
    ) -> Result<(), VarError> {
        let i = self.slot_or_create(context, name)?;
        let text = &mut self.texts[i].text;
        text.clear();
        text.push_str(value);
        self.cells[i] = Cell::new(None, true);
        Ok(())
    }

    /// `putVariableValue`: stores a typed value.
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    pub fn set_value<K: VarKey + ?Sized>(
        &mut self,
        context: &str,
        name: &K,
        value: Value,
    ) -> Result<(), VarError> {
        let i = self.slot_or_create(context, name)?;
        self.cells[i] = Cell::new(Some(value), false);
        Ok(())
    }

    /// Where `name` is kept, if it is defined: a variable set on every transaction is
    /// then set through [`Variables::set_int_at`] without looking its name up again.
    /// Variables are never removed, so the slot stays right.
    pub fn slot_of(&self, name: &str) -> Option<VarSlot> {
        self.index.get(name).map(|&i| VarSlot(i))
    }

    /// `putVariableInt` into a variable found by [`Variables::slot_of`].
    #[inline]
    pub fn set_int_at(&mut self, slot: VarSlot, value: i64) {
        self.cells[slot.0] = Cell::new(Some(Value::Int(value)), false);
    }

    /// `putVariableInt`.
    pub fn set_int<K: VarKey + ?Sized>(
        &mut self,
        context: &str,
        name: &K,
        value: i64,
    ) -> Result<(), VarError> {
        self.set_value(context, name, Value::Int(value))
    }

    /// The variable's value, parsing its string form on first use like pgbench's
    /// `makeVariableValue`. `Ok(None)` when undefined.
    pub fn get_as_value<K: VarKey + ?Sized>(
        &mut self,
        name: &K,
    ) -> Result<Option<Value>, VarError> {
        let Some(i) = self.find(name) else {
            return Ok(None);
        };
        if let Some(v) = self.cells[i].value() {
            return Ok(Some(v));
        }
        let var = &self.texts[i];
        let v = parse_variable_text(&var.name, &var.text)?;
        self.cells[i] = Cell::new(Some(v), self.cells[i].has_text);
        Ok(Some(v))
    }

    /// The variable's integer value when it holds one already (what `\set` stores);
    /// `None` otherwise — undefined, another type, or text not parsed yet — for which
    /// [`Variables::get_as_value`] says what it is. No error to build or drop.
    #[inline]
    #[cfg_attr(target_os = "linux", link_section = ".text.hot.pgsurge")]
    pub fn int_value<K: VarKey + ?Sized>(&mut self, name: &K) -> Option<i64> {
        let i = self.find(name)?;
        let cell = self.cells[i];
        (cell.kind == KIND_INT).then_some(cell.bits as i64)
    }

    /// Appends the variable's string form (`getVariable`) to `out`; `false` if undefined.
    pub fn get_as_text<K: VarKey + ?Sized>(&mut self, name: &K, out: &mut String) -> bool {
        let Some(i) = self.find(name) else {
            return false;
        };
        out.push_str(self.text_of(i));
        true
    }

    /// Appends the variable's string form (`getVariable`) to a byte buffer, as
    /// [`Variables::get_as_text`] does to a string; `false` if undefined.
    #[inline]
    pub fn append_text<K: VarKey + ?Sized>(&mut self, name: &K, out: &mut Vec<u8>) -> bool {
        let Some(i) = self.find(name) else {
            return false;
        };
        let cell = self.cells[i];
        if cell.kind == KIND_INT && !cell.has_text {
            let n = cell.bits as i64;
            // An integer (what `\set` makes) is written straight into `out`, leaving
            // the cached text untouched: one memory access fewer per parameter.
            out.extend_from_slice(itoa::Buffer::new().format(n).as_bytes());
            return true;
        }
        out.extend_from_slice(self.text_of(i).as_bytes());
        true
    }

    /// The string form of variable `i`, rendered from its value on first use and kept
    /// beside it, as pgbench caches it.
    #[inline]
    fn text_of(&mut self, i: usize) -> &str {
        let cell = &mut self.cells[i];
        let text = &mut self.texts[i].text;
        if !cell.has_text {
            text.clear();
            if let Some(v) = cell.value() {
                v.write_text(text);
            }
            cell.has_text = true;
        }
        text
    }

    /// The variable's string form as a new string (`None` if undefined).
    pub fn get_text<K: VarKey + ?Sized>(&mut self, name: &K) -> Option<String> {
        let mut s = String::new();
        self.get_as_text(name, &mut s).then_some(s)
    }
}

/// Whether `s` looks like an integer to pgbench (`is_an_int`): optional leading white
/// space, an optional sign, digits, nothing else (a lone sign passes, then fails to parse).
fn is_an_int(s: &str) -> bool {
    let b = s.as_bytes();
    let mut i = 0;
    while i < b.len() && is_c_space(b[i]) {
        i += 1;
    }
    if i < b.len() && (b[i] == b'+' || b[i] == b'-') {
        i += 1;
    }
    if i < b.len() && !b[i].is_ascii_digit() {
        return false;
    }
    while i < b.len() && b[i].is_ascii_digit() {
        i += 1;
    }
    i == b.len()
}

pub(crate) fn is_c_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c)
}

/// Case-insensitive "`s` is a non-empty prefix of `word`".
fn is_prefix_ci(s: &str, word: &str) -> bool {
    s.len() <= word.len() && word.as_bytes()[..s.len()].eq_ignore_ascii_case(s.as_bytes())
}

fn parse_variable_text(name: &str, text: &str) -> Result<Value, VarError> {
    if text.is_empty() {
        return Err(VarError::Empty);
    }
    if text.eq_ignore_ascii_case("null") {
        Ok(Value::Null)
    } else if is_prefix_ci(text, "true")
        || is_prefix_ci(text, "yes")
        || text.eq_ignore_ascii_case("on")
    {
        Ok(Value::Bool(true))
    } else if is_prefix_ci(text, "false")
        || is_prefix_ci(text, "no")
        || text.eq_ignore_ascii_case("off")
        || text.eq_ignore_ascii_case("of")
    {
        Ok(Value::Bool(false))
    } else if is_an_int(text) {
        crate::cnum::strtoint64(text).map(Value::Int)
    } else {
        match crate::cnum::strtod_full(text) {
            Some(d) => Ok(Value::Double(d)),
            None => Err(VarError::Malformed {
                name: name.to_string(),
                value: text.to_string(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_at_a_reused_address_finds_its_own_variable() {
        let mut v = Variables::new();
        v.set_int("set", "a", 1).unwrap();
        v.set_int("set", "b", 2).unwrap();
        // One buffer, so one address, holding different names in turn (as the \gset
        // loop does): the remembered slot must not answer for the wrong name.
        let mut name = String::with_capacity(8);
        for (n, want) in [("a", Some(1)), ("b", Some(2)), ("c", None), ("a", Some(1))] {
            name.clear();
            name.push_str(n);
            let got = v.get_as_value(&name).unwrap().map(|x| match x {
                Value::Int(i) => i,
                other => panic!("{other:?}"),
            });
            assert_eq!(got, want, "{n}");
        }
        // Set through the same buffer: the value lands in the named variable.
        name.clear();
        name.push('b');
        v.set_int("set", &name, 20).unwrap();
        assert_eq!(v.get_text("a").as_deref(), Some("1"));
        assert_eq!(v.get_text("b").as_deref(), Some("20"));
    }

    #[test]
    fn numbered_names_find_variables_however_they_were_made() {
        let (x, y) = (VarName::new("vars_test_x"), VarName::new("vars_test_y"));
        let mut v = Variables::new();
        // looked up before it exists, then made by plain name: the miss is not remembered
        assert_eq!(v.get_as_value(&x).unwrap(), None);
        v.set_string("option", "vars_test_x", "7").unwrap();
        assert_eq!(v.get_as_value(&x).unwrap(), Some(Value::Int(7)));
        // made through the numbered name, read by plain name and by number
        v.set_int("set", &y, 8).unwrap();
        assert_eq!(v.get_text("vars_test_y").as_deref(), Some("8"));
        v.set_int("set", "vars_test_y", 9).unwrap();
        assert_eq!(v.get_as_value(&y).unwrap(), Some(Value::Int(9)));
        // a copy (the per-client tables are copies of one) keeps every slot right
        let mut w = v.clone();
        w.set_int("set", &x, 70).unwrap();
        assert_eq!(w.get_text(&x).as_deref(), Some("70"));
        assert_eq!(v.get_text(&x).as_deref(), Some("7"));
        assert_eq!(w.get_text(&y).as_deref(), Some("9"));
        // an invalid name is refused by number as by name
        let bad = VarName::new("vars test");
        assert!(v.set_int("set", &bad, 1).is_err());
        assert_eq!(v.get_as_value(&bad).unwrap(), None);
    }

    #[test]
    fn numbered_names_beyond_the_inline_table() {
        // Enough names that some numbers are past the inline table, and enough variables
        // that some slots do not fit in a byte: every lookup by number still finds its
        // own variable, whichever table remembers it.
        let names: Vec<VarName> = (0..2 * SMALL)
            .map(|i| VarName::new(&format!("vars_wide_{i}")))
            .collect();
        assert!(names.iter().any(|n| n.number() as usize >= SMALL));
        let mut v = Variables::new();
        for i in 0..300 {
            v.set_int("set", format!("vars_filler_{i}").as_str(), i)
                .unwrap();
        }
        for (i, n) in names.iter().enumerate() {
            v.set_int("set", n, 1000 + i as i64).unwrap();
        }
        for _ in 0..2 {
            for (i, n) in names.iter().enumerate() {
                assert_eq!(
                    v.get_as_value(n).unwrap(),
                    Some(Value::Int(1000 + i as i64))
                );
                let mut out = Vec::new();
                assert!(v.append_text(n, &mut out));
                assert_eq!(out, (1000 + i).to_string().as_bytes());
            }
        }
        assert_eq!(v.get_text("vars_filler_299").as_deref(), Some("299"));
    }

    #[test]
    fn cells_keep_every_kind_of_value() {
        assert_eq!(std::mem::size_of::<Cell>(), 16);
        let values = [
            None,
            Some(Value::Null),
            Some(Value::Bool(false)),
            Some(Value::Bool(true)),
            Some(Value::Int(0)),
            Some(Value::Int(i64::MIN)),
            Some(Value::Int(-1)),
            Some(Value::Double(-0.0)),
            Some(Value::Double(f64::INFINITY)),
            Some(Value::Double(1.5e-300)),
        ];
        for v in values {
            for has_text in [false, true] {
                let c = Cell::new(v, has_text);
                assert_eq!(c.has_text, has_text);
                match (c.value(), v) {
                    (Some(Value::Double(a)), Some(Value::Double(b))) => {
                        assert_eq!(a.to_bits(), b.to_bits())
                    }
                    (a, b) => assert_eq!(a, b),
                }
            }
        }
        let nan = Cell::new(Some(Value::Double(f64::NAN)), false).value();
        assert!(matches!(nan, Some(Value::Double(d)) if d.is_nan()));
    }

    #[test]
    fn names() {
        for ok in ["a", "_x", "aid", "x1", "é", "A_9"] {
            assert!(is_valid_variable_name(ok), "{ok}");
        }
        for bad in ["", "1x", "a-b", "?column?", "bad name!", "a.b"] {
            assert!(!is_valid_variable_name(bad), "{bad}");
        }
    }

    #[test]
    fn invalid_name_message() {
        let mut v = Variables::new();
        let e = v.set_string("option", "1x", "2").unwrap_err();
        assert_eq!(e.to_string(), "option: invalid variable name: \"1x\"");
        let e = v.set_string("gset", "?column?", "1").unwrap_err();
        assert_eq!(e.to_string(), "gset: invalid variable name: \"?column?\"");
    }

    #[test]
    fn lazy_parsing_like_make_variable_value() {
        let mut v = Variables::new();
        let cases: &[(&str, Value)] = &[
            ("NULL", Value::Null),
            ("t", Value::Bool(true)),
            ("Yes", Value::Bool(true)),
            ("on", Value::Bool(true)),
            ("f", Value::Bool(false)),
            ("n", Value::Bool(false)),
            ("of", Value::Bool(false)),
            ("OFF", Value::Bool(false)),
            ("  -42", Value::Int(-42)),
            ("+7", Value::Int(7)),
            ("1.5", Value::Double(1.5)),
            (" 2e3", Value::Double(2000.0)),
            ("inf", Value::Double(f64::INFINITY)),
            ("-10.1", Value::Double(-10.1)),
        ];
        for (text, want) in cases {
            v.set_string("option", "x", text).unwrap();
            assert_eq!(v.get_as_value("x").unwrap(), Some(*want), "{text}");
        }
        v.set_string("option", "x", "bla").unwrap();
        assert_eq!(
            v.get_as_value("x").unwrap_err().to_string(),
            "malformed variable \"x\" value: \"bla\""
        );
        v.set_string("option", "x", "o").unwrap();
        assert!(v.get_as_value("x").is_err());
        v.set_string("option", "x", "99999999999999999999").unwrap();
        assert_eq!(
            v.get_as_value("x").unwrap_err().to_string(),
            "value \"99999999999999999999\" is out of range for type bigint"
        );
        v.set_string("option", "x", "-").unwrap();
        assert_eq!(
            v.get_as_value("x").unwrap_err().to_string(),
            "invalid input syntax for type bigint: \"-\""
        );
        v.set_string("option", "x", "").unwrap();
        assert_eq!(v.get_as_value("x").unwrap_err().message(), None);
        assert_eq!(v.get_as_value("nosuch").unwrap(), None);
    }

    #[test]
    fn text_forms() {
        let mut v = Variables::new();
        v.set_value("set", "d", Value::Double(1.0 / 3.0)).unwrap();
        assert_eq!(v.get_text("d").as_deref(), Some("0.333333333333333"));
        // the typed value keeps full precision after rendering
        assert_eq!(v.get_as_value("d").unwrap(), Some(Value::Double(1.0 / 3.0)));
        v.set_value("set", "n", Value::Null).unwrap();
        assert_eq!(v.get_text("n").as_deref(), Some("NULL"));
        v.set_value("set", "b", Value::Bool(true)).unwrap();
        assert_eq!(v.get_text("b").as_deref(), Some("true"));
        v.set_int("set", "i", -5).unwrap();
        assert_eq!(v.get_text("i").as_deref(), Some("-5"));
        v.set_string("option", "s", "abc").unwrap();
        assert_eq!(v.get_text("s").as_deref(), Some("abc"));
        assert_eq!(v.get_text("zz"), None);
    }

    #[test]
    fn a_slot_sets_the_variable_it_was_found_for() {
        let mut v = Variables::new();
        assert_eq!(v.slot_of("n"), None);
        v.set_string("option", "s", "abc").unwrap();
        v.set_int("option", "n", 0).unwrap();
        let slot = v.slot_of("n").unwrap();
        v.set_int("option", "later", 1).unwrap();
        v.set_int_at(slot, 41);
        assert_eq!(v.int_value("n"), Some(41));
        assert_eq!(v.get_text("s").as_deref(), Some("abc"));
        assert_eq!(v.int_value("later"), Some(1));
    }
}
