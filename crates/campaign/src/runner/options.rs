//! What a campaign run is asked for ([`RunOptions`], [`SetIdentity`]) and what it did
//! ([`Outcome`]).

/// How to run a campaign.
#[derive(Debug, Clone, Default)]
pub struct RunOptions {
    /// Start a new set even if one with the same identity exists.
    pub new_set: bool,
    /// Run again the tests stored as failed.
    pub retry_failed: bool,
    /// No progress bar and no per-test lines.
    pub quiet: bool,
    /// Set kind to record (default: campaign).
    pub kind: Option<String>,
    /// The set to run into, instead of the one named after the campaign and keyed by its
    /// file: a command that runs several campaigns as one measurement (bisect: one
    /// campaign per commit, the commit in the target's name) keeps them in one set.
    pub into_set: Option<SetIdentity>,
}

/// A set's name and identity (what makes a later run resume it rather than start a
/// new one).
#[derive(Debug, Clone)]
pub struct SetIdentity {
    /// The set's name (what `results` and `report` list).
    pub name: String,
    /// Stored as the set's `spec_hash`: a run with the same name, kind and identity
    /// resumes the set.
    pub identity: String,
}

/// What a campaign invocation did.
#[derive(Debug, Clone, Default)]
pub struct Outcome {
    /// Id of the set the campaign ran in (new, or resumed).
    pub set_id: i64,
    /// Tests in the matrix.
    pub planned: usize,
    /// Tests already stored when this invocation started.
    pub already_stored: usize,
    /// Tests run and stored now with status ok.
    pub ok: usize,
    /// Tests run and stored now as failed.
    pub failed: usize,
    /// Tests still missing (interrupted).
    pub remaining: usize,
    /// Tests left out: their cell was precise enough, or `[repeats] budget` was spent.
    pub not_needed: usize,
    /// `[repeats] until`: the cells that reached the precision, and those that did not.
    pub precise: (usize, usize),
    /// True when `[repeats] budget` ended some cell's repeats.
    pub budget_spent: bool,
    /// Warnings raised now, each once.
    pub warnings: Vec<String>,
    /// Those of [`Outcome::warnings`] said on the terminal as they came (none when
    /// quiet).
    pub said_warnings: Vec<String>,
    /// Run ids stored now, in order.
    pub run_ids: Vec<i64>,
    /// The searches' results, in capacity mode.
    pub capacity: Vec<crate::capacity::CapacityResult>,
    /// What the user is told about the set before the tests: a new set started
    /// because the campaign file changed, earlier sets found abandoned.
    pub notices: Vec<String>,
}
