//! The `-I` step string: which steps exist, their names in the timing line,
//! and the rewrites `-n` and `--foreign-keys` apply to it.
//!
//! Validation messages for `-I` at option-parsing time belong to the `args`
//! crate; here an unknown character only matters when the runner reaches it.

/// One initialization step.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum InitStep {
    /// `d`: drop the four tables.
    DropTables,
    /// `t`: create tables (and partitions).
    CreateTables,
    /// `g`: client-side data generation with COPY.
    ClientSideGenerate,
    /// `G`: server-side data generation with `insert … select generate_series`.
    ServerSideGenerate,
    /// `v`: vacuum analyze.
    Vacuum,
    /// `p`: primary keys.
    PrimaryKeys,
    /// `f`: foreign keys.
    ForeignKeys,
}

/// Every step character pgbench knows, in its documented order.
pub const ALL_INIT_STEPS: &str = "dtgGvpf";
/// pgbench's default step string.
pub const DEFAULT_INIT_STEPS: &str = "dtgvp";

impl InitStep {
    /// The step for a `-I` character; `None` for a space or an unknown char
    /// (see [`StepChar`]).
    pub fn from_char(c: char) -> StepChar {
        match c {
            'd' => StepChar::Step(InitStep::DropTables),
            't' => StepChar::Step(InitStep::CreateTables),
            'g' => StepChar::Step(InitStep::ClientSideGenerate),
            'G' => StepChar::Step(InitStep::ServerSideGenerate),
            'v' => StepChar::Step(InitStep::Vacuum),
            'p' => StepChar::Step(InitStep::PrimaryKeys),
            'f' => StepChar::Step(InitStep::ForeignKeys),
            ' ' => StepChar::Ignored,
            other => StepChar::Unknown(other),
        }
    }

    /// The name pgbench uses for this step in the final `done in …` line.
    pub fn op_name(self) -> &'static str {
        match self {
            InitStep::DropTables => "drop tables",
            InitStep::CreateTables => "create tables",
            InitStep::ClientSideGenerate => "client-side generate",
            InitStep::ServerSideGenerate => "server-side generate",
            InitStep::Vacuum => "vacuum",
            InitStep::PrimaryKeys => "primary keys",
            InitStep::ForeignKeys => "foreign keys",
        }
    }
}

/// What one character of the step string means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepChar {
    /// A step to run.
    Step(InitStep),
    /// A space: skipped, no timing entry.
    Ignored,
    /// Not a step character.
    Unknown(char),
}

/// Applies pgbench's post-parse rewrites: with `-n` every `v` becomes a space;
/// with `--foreign-keys` an `f` is appended unless one is present already.
pub fn effective_steps(raw: &str, no_vacuum: bool, foreign_keys: bool) -> String {
    let mut steps: String = if no_vacuum {
        raw.chars()
            .map(|c| if c == 'v' { ' ' } else { c })
            .collect()
    } else {
        raw.to_owned()
    };
    if foreign_keys && !steps.contains('f') {
        steps.push('f');
    }
    steps
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rewrites_follow_pgbench() {
        assert_eq!(effective_steps("dtgvp", true, false), "dtg p");
        assert_eq!(effective_steps("dtgvp", false, true), "dtgvpf");
        assert_eq!(effective_steps("dtfgvp", false, true), "dtfgvp");
        assert_eq!(effective_steps("vvG", true, true), "  Gf");
    }

    #[test]
    fn every_documented_char_is_a_step() {
        for c in ALL_INIT_STEPS.chars() {
            assert!(matches!(InitStep::from_char(c), StepChar::Step(_)), "{c}");
        }
        assert_eq!(InitStep::from_char(' '), StepChar::Ignored);
        assert_eq!(InitStep::from_char('x'), StepChar::Unknown('x'));
        assert_eq!(InitStep::from_char('D'), StepChar::Unknown('D'));
    }
}
