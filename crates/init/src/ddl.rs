//! The SQL text of every `-i` step, byte for byte what pgbench 18 sends.
//!
//! Pure string building: no I/O, no decisions that need the server (the COPY
//! FREEZE choice is made by the runner and passed in).

use pgsurge_wire::quote_identifier;

use crate::spec::{InitSpec, PartitionMethod, NACCOUNTS, NBRANCHES, NTELLERS};

/// Step `d`: one statement, so foreign keys between the tables don't matter.
pub const DROP_TABLES: &str =
    "drop table if exists pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers";

/// Run before generating data, inside the loading transaction.
pub const TRUNCATE_TABLES: &str =
    "truncate table pgbench_accounts, pgbench_branches, pgbench_history, pgbench_tellers";

/// Step `v`, in order.
pub const VACUUM_STATEMENTS: [&str; 4] = [
    "vacuum analyze pgbench_branches",
    "vacuum analyze pgbench_tellers",
    "vacuum analyze pgbench_accounts",
    "vacuum analyze pgbench_history",
];

/// Step `f`, in order.
pub const FOREIGN_KEY_STATEMENTS: [&str; 5] = [
    "alter table pgbench_tellers add constraint pgbench_tellers_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_accounts add constraint pgbench_accounts_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_history add constraint pgbench_history_bid_fkey foreign key (bid) references pgbench_branches",
    "alter table pgbench_history add constraint pgbench_history_tid_fkey foreign key (tid) references pgbench_tellers",
    "alter table pgbench_history add constraint pgbench_history_aid_fkey foreign key (aid) references pgbench_accounts",
];

/// The relkind lookup pgbench 18 runs (with the table name as `$1`) to decide
/// on COPY FREEZE.
pub const RELKIND_QUERY: &str =
    "SELECT relkind FROM pg_catalog.pg_class WHERE oid=$1::pg_catalog.regclass";

/// For `--init-jobs`: how many foreign keys point at `pgbench_accounts` (`$1`)
/// or one of its partitions; loading partitions on their own needs none.
pub const ACCOUNTS_REFERENCED_QUERY: &str = "select count(*) from pg_catalog.pg_constraint \
     where contype = 'f' and confrelid in (select $1::pg_catalog.regclass \
     union all select inhrelid from pg_catalog.pg_inherits where inhparent = $1::pg_catalog.regclass)";

/// One table's column declarations for 32-bit and 64-bit account ids.
struct TableDdl {
    name: &'static str,
    small_cols: &'static str,
    big_cols: &'static str,
    fillfactor: bool,
}

/// Creation order and columns (the odd spacing in `aid    int` is pgbench's).
const TABLES: [TableDdl; 4] = [
    TableDdl {
        name: "pgbench_history",
        small_cols: "tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22)",
        big_cols: "tid int,bid int,aid bigint,delta int,mtime timestamp,filler char(22)",
        fillfactor: false,
    },
    TableDdl {
        name: "pgbench_tellers",
        small_cols: "tid int not null,bid int,tbalance int,filler char(84)",
        big_cols: "tid int not null,bid int,tbalance int,filler char(84)",
        fillfactor: true,
    },
    TableDdl {
        name: "pgbench_accounts",
        small_cols: "aid    int not null,bid int,abalance int,filler char(84)",
        big_cols: "aid bigint not null,bid int,abalance int,filler char(84)",
        fillfactor: true,
    },
    TableDdl {
        name: "pgbench_branches",
        small_cols: "bid int not null,bbalance int,filler char(88)",
        big_cols: "bid int not null,bbalance int,filler char(88)",
        fillfactor: true,
    },
];

/// Step `t`: the four `create table` statements, in pgbench's order.
pub fn create_table_statements(spec: &InitSpec) -> Vec<String> {
    let method = spec.effective_partition_method();
    // PG18: a partitioned parent cannot be unlogged, so UNLOGGED is only used
    // when nothing is partitioned (partitions themselves stay unlogged).
    let unlogged = if spec.unlogged && method == PartitionMethod::None {
        " unlogged"
    } else {
        ""
    };
    TABLES
        .iter()
        .map(|t| {
            let cols = if spec.uses_bigint_aids() {
                t.big_cols
            } else {
                t.small_cols
            };
            let mut sql = format!("create{unlogged} table {}({cols})", t.name);
            if method != PartitionMethod::None && t.name == "pgbench_accounts" {
                sql.push_str(" partition by ");
                sql.push_str(method.keyword());
                sql.push_str(" (aid)");
            } else if t.fillfactor {
                sql.push_str(&format!(" with (fillfactor={})", spec.fillfactor));
            }
            if let Some(ts) = &spec.tablespace {
                sql.push_str(" tablespace ");
                sql.push_str(&quote_identifier(ts));
            }
            sql
        })
        .collect()
}

/// Step `t`, after the tables: one `create table … partition of` per
/// partition (empty when not partitioned). Partitions get no tablespace clause.
pub fn partition_statements(spec: &InitSpec) -> Vec<String> {
    let method = spec.effective_partition_method();
    let n = spec.partitions;
    let unlogged = if spec.unlogged { " unlogged" } else { "" };
    let part_size = (NACCOUNTS * i64::from(spec.scale) + i64::from(n) - 1) / i64::from(n.max(1));
    let mut out = Vec::new();
    for p in 1..=n {
        let mut sql = format!(
            "create{unlogged} table pgbench_accounts_{p}\n  partition of pgbench_accounts\n  for values "
        );
        match method {
            PartitionMethod::None => return Vec::new(),
            PartitionMethod::Range => {
                // Open-ended first and last partitions, as pgbench makes them.
                let lo = if p == 1 {
                    "minvalue".to_owned()
                } else {
                    (i64::from(p - 1) * part_size + 1).to_string()
                };
                let hi = if p < n {
                    (i64::from(p) * part_size + 1).to_string()
                } else {
                    "maxvalue".to_owned()
                };
                sql.push_str(&format!("from ({lo}) to ({hi})"));
            }
            PartitionMethod::Hash => {
                sql.push_str(&format!("with (modulus {n}, remainder {})", p - 1));
            }
        }
        sql.push_str(&format!(" with (fillfactor={})", spec.fillfactor));
        out.push(sql);
    }
    out
}

/// Step `g`: the COPY statement for one table.
pub fn copy_statement(table: &str, freeze: bool) -> String {
    if freeze {
        format!("copy {table} from stdin with (freeze on)")
    } else {
        format!("copy {table} from stdin")
    }
}

/// Step `G`: the three inserts (branches, tellers, accounts). pgbench computes
/// the branch and teller counts in C `int`; the wrapping multiply keeps the
/// text identical even for absurd scales.
pub fn server_side_inserts(scale: i32) -> [String; 3] {
    let nbranches = (NBRANCHES as i32).wrapping_mul(scale);
    let ntellers = (NTELLERS as i32).wrapping_mul(scale);
    let naccounts = NACCOUNTS * i64::from(scale);
    [
        format!(
            "insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, {nbranches}) as bid"
        ),
        format!(
            "insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / {NTELLERS} + 1, 0 from generate_series(1, {ntellers}) as tid"
        ),
        format!(
            "insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / {NACCOUNTS} + 1, 0, '' from generate_series(1, {naccounts}) as aid"
        ),
    ]
}

/// Step `p`: the three `add primary key` statements.
pub fn primary_key_statements(index_tablespace: Option<&str>) -> Vec<String> {
    [
        "pgbench_branches (bid)",
        "pgbench_tellers (tid)",
        "pgbench_accounts (aid)",
    ]
    .iter()
    .map(|target| {
        let (table, cols) = target.split_once(' ').expect("static text has a space");
        let mut sql = format!("alter table {table} add primary key {cols}");
        if let Some(ts) = index_tablespace {
            sql.push_str(" using index tablespace ");
            sql.push_str(&quote_identifier(ts));
        }
        sql
    })
    .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec() -> InitSpec {
        InitSpec::default()
    }

    #[test]
    fn default_tables() {
        assert_eq!(
            create_table_statements(&spec()),
            vec![
                "create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22))",
                "create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=100)",
                "create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) with (fillfactor=100)",
                "create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=100)",
            ]
        );
    }

    #[test]
    fn pg18_unlogged_partitioned_hash_with_tablespace() {
        let s = InitSpec {
            unlogged: true,
            fillfactor: 90,
            tablespace: Some("ts1".into()),
            partitions: 2,
            partition_method: PartitionMethod::Hash,
            ..spec()
        };
        // The observed PG17 text, minus "unlogged" (PG18 rule for partitioned setups).
        assert_eq!(
            create_table_statements(&s),
            vec![
                "create table pgbench_history(tid int,bid int,aid    int,delta int,mtime timestamp,filler char(22)) tablespace \"ts1\"",
                "create table pgbench_tellers(tid int not null,bid int,tbalance int,filler char(84)) with (fillfactor=90) tablespace \"ts1\"",
                "create table pgbench_accounts(aid    int not null,bid int,abalance int,filler char(84)) partition by hash (aid) tablespace \"ts1\"",
                "create table pgbench_branches(bid int not null,bbalance int,filler char(88)) with (fillfactor=90) tablespace \"ts1\"",
            ]
        );
        assert_eq!(
            partition_statements(&s),
            vec![
                "create unlogged table pgbench_accounts_1\n  partition of pgbench_accounts\n  for values with (modulus 2, remainder 0) with (fillfactor=90)",
                "create unlogged table pgbench_accounts_2\n  partition of pgbench_accounts\n  for values with (modulus 2, remainder 1) with (fillfactor=90)",
            ]
        );
    }

    #[test]
    fn unlogged_without_partitions_applies_to_all_tables() {
        let s = InitSpec {
            unlogged: true,
            ..spec()
        };
        let stmts = create_table_statements(&s);
        assert!(
            stmts
                .iter()
                .all(|q| q.starts_with("create unlogged table ")),
            "{stmts:?}"
        );
        assert!(partition_statements(&s).is_empty());
    }

    #[test]
    fn range_bounds_match_observed_scale_1_three_partitions() {
        let s = InitSpec {
            partitions: 3,
            ..spec()
        };
        let p = partition_statements(&s);
        assert_eq!(p.len(), 3);
        assert!(
            p[0].ends_with("for values from (minvalue) to (33335) with (fillfactor=100)"),
            "{}",
            p[0]
        );
        assert!(
            p[1].ends_with("for values from (33335) to (66669) with (fillfactor=100)"),
            "{}",
            p[1]
        );
        assert!(
            p[2].ends_with("for values from (66669) to (maxvalue) with (fillfactor=100)"),
            "{}",
            p[2]
        );
        assert!(create_table_statements(&s)[2].ends_with(" partition by range (aid)"));
    }

    #[test]
    fn bigint_aids_from_scale_20000() {
        let below = InitSpec {
            scale: 19_999,
            ..spec()
        };
        let at = InitSpec {
            scale: 20_000,
            ..spec()
        };
        assert!(create_table_statements(&below)[2].contains("aid    int not null"));
        let big = create_table_statements(&at);
        assert!(big[0].contains("aid bigint,"));
        assert!(big[2].contains("aid bigint not null"));
        // Range bounds beyond 2^31 are printed as 64-bit numbers.
        let parts = partition_statements(&InitSpec {
            scale: 30_000,
            partitions: 2,
            ..spec()
        });
        assert!(parts[0].contains("to (1500000001)"), "{}", parts[0]);
    }

    #[test]
    fn identifiers_are_quoted_like_libpq() {
        assert_eq!(quote_identifier("ts1"), "\"ts1\"");
        assert_eq!(quote_identifier("my \"ts\""), "\"my \"\"ts\"\"\"");
        assert_eq!(
            primary_key_statements(Some("idx ts")),
            vec![
                "alter table pgbench_branches add primary key (bid) using index tablespace \"idx ts\"",
                "alter table pgbench_tellers add primary key (tid) using index tablespace \"idx ts\"",
                "alter table pgbench_accounts add primary key (aid) using index tablespace \"idx ts\"",
            ]
        );
        assert_eq!(
            primary_key_statements(None)[2],
            "alter table pgbench_accounts add primary key (aid)"
        );
    }

    #[test]
    fn server_side_sql_is_exact() {
        let [b, t, a] = server_side_inserts(2);
        assert_eq!(b, "insert into pgbench_branches(bid,bbalance) select bid, 0 from generate_series(1, 2) as bid");
        assert_eq!(t, "insert into pgbench_tellers(tid,bid,tbalance) select tid, (tid - 1) / 10 + 1, 0 from generate_series(1, 20) as tid");
        assert_eq!(a, "insert into pgbench_accounts(aid,bid,abalance,filler) select aid, (aid - 1) / 100000 + 1, 0, '' from generate_series(1, 200000) as aid");
    }

    #[test]
    fn copy_statements() {
        assert_eq!(
            copy_statement("pgbench_tellers", true),
            "copy pgbench_tellers from stdin with (freeze on)"
        );
        assert_eq!(
            copy_statement("pgbench_accounts", false),
            "copy pgbench_accounts from stdin"
        );
    }
}
