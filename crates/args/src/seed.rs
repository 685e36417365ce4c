//! `--random-seed` / `PGBENCH_RANDOM_SEED`: parsing the value and drawing `time` /
//! `rand` seeds the way pgbench does. Does not own the PRNG (that is the script crate).

/// How the seed was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SeedSource {
    /// Default or `time`: the monotonic clock in µs at parse time.
    Time,
    /// `rand`: 8 bytes from the kernel's strong random source.
    Rand,
    /// An explicit unsigned integer.
    Value,
}

/// The random seed in force after parsing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RandomSeed {
    /// The 64-bit seed for the base PRNG (`:random_seed` is this value as int64).
    pub value: u64,
    /// How it was chosen.
    pub source: SeedSource,
    /// True when set explicitly (option or environment); pgbench then printed
    /// `setting random seed to N`.
    pub explicit: bool,
}
