//! `InitSpec`: the validated `-i` options, and the table sizes derived from them.

use crate::steps::DEFAULT_INIT_STEPS;

/// How `pgbench_accounts` is partitioned.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PartitionMethod {
    /// Not partitioned (pgbench's `PART_NONE`).
    #[default]
    None,
    /// `partition by range (aid)`.
    Range,
    /// `partition by hash (aid)`.
    Hash,
}

impl PartitionMethod {
    /// The keyword pgbench puts after `partition by`.
    pub fn keyword(self) -> &'static str {
        match self {
            PartitionMethod::None => "none",
            PartitionMethod::Range => "range",
            PartitionMethod::Hash => "hash",
        }
    }
}

/// Everything `-i` needs to know, already validated by the command line parser.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InitSpec {
    /// Step characters from `dtgGvpf` and spaces, run in order; already
    /// rewritten for `-n` and `--foreign-keys` (see [`crate::effective_steps`]).
    pub steps: String,
    /// `-s`, 1..=i32::MAX; from 20000 on, aid columns are bigint.
    pub scale: i32,
    /// `-F`, 10..=100.
    pub fillfactor: i32,
    /// `--partitions`, 0 for none.
    pub partitions: i32,
    /// `--partition-method`; with `partitions > 0` and [`PartitionMethod::None`]
    /// the default (range) is used, as pgbench does.
    pub partition_method: PartitionMethod,
    /// `--tablespace`.
    pub tablespace: Option<String>,
    /// `--index-tablespace`.
    pub index_tablespace: Option<String>,
    /// `--unlogged-tables`.
    pub unlogged: bool,
    /// `-q`: progress at most every 5 seconds.
    pub quiet: bool,
}

impl Default for InitSpec {
    fn default() -> Self {
        InitSpec {
            steps: DEFAULT_INIT_STEPS.to_owned(),
            scale: 1,
            fillfactor: 100,
            partitions: 0,
            partition_method: PartitionMethod::None,
            tablespace: None,
            index_tablespace: None,
            unlogged: false,
            quiet: false,
        }
    }
}

/// Branches per scale unit.
pub const NBRANCHES: i64 = 1;
/// Tellers per scale unit.
pub const NTELLERS: i64 = 10;
/// Accounts per scale unit.
pub const NACCOUNTS: i64 = 100_000;
/// From this scale on, account ids are declared bigint (below the real
/// 21474 limit on purpose, as in pgbench).
pub const SCALE_32BIT_THRESHOLD: i32 = 20_000;

impl InitSpec {
    /// The partitioning actually used: none without partitions, range when
    /// partitions were asked for without a method.
    pub fn effective_partition_method(&self) -> PartitionMethod {
        match (self.partitions > 0, self.partition_method) {
            (false, _) => PartitionMethod::None,
            (true, PartitionMethod::None) => PartitionMethod::Range,
            (true, m) => m,
        }
    }

    /// Whether `pgbench_accounts` is partitioned.
    pub fn is_partitioned(&self) -> bool {
        self.effective_partition_method() != PartitionMethod::None
    }

    /// Whether aid columns are bigint.
    pub fn uses_bigint_aids(&self) -> bool {
        self.scale >= SCALE_32BIT_THRESHOLD
    }
}
