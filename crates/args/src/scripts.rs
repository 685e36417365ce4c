//! Bridge to the script crate: builtin script lookup (`-b`, `-N`, `-S`, `--show-script`,
//! `-b list`) and parsing script text into the script crate's representation.

/// Placeholder for the script crate's parsed script until its API lands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Script {
    /// The source text.
    pub text: String,
}
