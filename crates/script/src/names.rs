//! Variable names as scripts write them, numbered once when a script is loaded so the
//! per-transaction path finds a client's variable by index instead of hashing the name.
//!
//! The numbers come from one process-wide table: the same name gets the same number in
//! every script, every client's [`Variables`](crate::Variables) can remember where that
//! number lives, and since variables are never removed, what it remembers stays true.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, OnceLock};

/// How many names get a number. Past it (only a fuzzer parsing millions of random
/// scripts gets there) names go unnumbered and are looked up by hashing, so the table
/// cannot grow without bound.
const MAX_NUMBERED: u32 = 1 << 16;

/// The number of a name that has none.
pub(crate) const UNNUMBERED: u32 = u32::MAX;

fn number_of(name: &str) -> u32 {
    static TABLE: OnceLock<Mutex<HashMap<Box<str>, u32>>> = OnceLock::new();
    let table = TABLE.get_or_init(Default::default);
    // A panic elsewhere while the lock was held cannot leave the map inconsistent.
    let mut table = table.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(&n) = table.get(name) {
        return n;
    }
    let n = table.len() as u32;
    if n >= MAX_NUMBERED {
        return UNNUMBERED;
    }
    table.insert(name.into(), n);
    n
}

/// A variable name referenced by a script (`:name`, `\set name`), with its number.
#[derive(Clone)]
pub struct VarName {
    number: u32,
    name: Box<str>,
}

impl VarName {
    /// Numbers `name` (once per distinct name in the process).
    pub fn new(name: &str) -> VarName {
        VarName {
            number: number_of(name),
            name: name.into(),
        }
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.name
    }

    /// Its number, or [`UNNUMBERED`].
    pub(crate) fn number(&self) -> u32 {
        self.number
    }
}

impl std::ops::Deref for VarName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.name
    }
}

impl PartialEq for VarName {
    fn eq(&self, other: &VarName) -> bool {
        self.name == other.name
    }
}

impl Eq for VarName {}

impl PartialEq<str> for VarName {
    fn eq(&self, other: &str) -> bool {
        &*self.name == other
    }
}

impl fmt::Debug for VarName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(&*self.name, f)
    }
}

impl fmt::Display for VarName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name)
    }
}

impl From<&str> for VarName {
    fn from(name: &str) -> VarName {
        VarName::new(name)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_number_per_name() {
        let a = VarName::new("names_test_aid");
        let b = VarName::new("names_test_bid");
        assert_eq!(a.number(), VarName::new("names_test_aid").number());
        assert_ne!(a.number(), b.number());
        assert_ne!(a.number(), UNNUMBERED);
        assert_eq!(a, VarName::from("names_test_aid"));
        assert_eq!(format!("{a} {a:?}"), "names_test_aid \"names_test_aid\"");
    }
}
