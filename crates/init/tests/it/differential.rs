//! `-i` differential tests: the machine's pgbench and our `initialize` fill two
//! databases of the same server; every table's contents, column types,
//! constraints, indexes, storage options, partition bounds and persistence must
//! be identical, and stderr must carry the same messages in the same order.
//!
//! The reference pgbench is Debian's 15.x; the one PG18 difference that shows
//! in the catalog (a partitioned parent is not created UNLOGGED) is accepted
//! exactly, and nothing else.

use crate::common::*;
use pgsurge_init::{InitSpec, PartitionMethod};
use pgsurge_server::testing::TestServer;

/// Runs both initializations of one case and compares everything.
fn compare(case: &str, args: &[&str], spec: &InitSpec) {
    compare_jobs(case, args, spec, 1);
}

/// [`compare`] with our side run with `--init-jobs=jobs` (pgbench has no such
/// option: the parallel load must leave exactly what pgbench's serial one does).
fn compare_jobs(case: &str, args: &[&str], spec: &InitSpec, jobs: usize) {
    if !have_pgbench() {
        return;
    }
    let srv = TestServer::shared();
    let theirs_db = srv.create_database(&format!("init_ref_{case}"));
    let ours_db = srv.create_database(&format!("init_ours_{case}"));

    let theirs = run_pgbench(srv, &theirs_db, None, args);
    assert!(
        theirs.ok,
        "{case}: pgbench -i {args:?} failed:\n{}",
        theirs.stderr
    );
    let ours = if jobs > 1 {
        run_ours_jobs(srv, &ours_db, spec, jobs)
    } else {
        run_ours(srv, &ours_db, None, spec)
    };
    assert!(ours.ok, "{case}: initialize failed:\n{}", ours.stderr);

    let mut reference = fingerprint(srv, &theirs_db);
    let mine = fingerprint(srv, &ours_db);
    if spec.unlogged && spec.partitions > 0 && pgbench_major() < 18 {
        pg18_unlogged_rule(case, &mut reference);
    }
    let mut mine = mine;
    if jobs > 1 && !spec.is_partitioned() {
        let rows_pages = |db: &str| -> i64 {
            srv.psql(
                db,
                "select count(distinct (ctid::text::point)[0]) from pgbench_accounts",
            )
            .trim()
            .parse()
            .expect("a page count")
        };
        let filled = (rows_pages(&theirs_db), rows_pages(&ours_db));
        last_page_rule(case, &reference, &mut mine, jobs, filled);
    }
    assert_same_fingerprint(case, &reference, &mine);

    eprintln!("--- pgbench:\n{}--- ours:\n{}", theirs.stderr, ours.stderr);
    assert_eq!(
        message_structure(&theirs.stderr),
        message_structure(&ours.stderr),
        "{case}: stderr messages differ\n--- pgbench:\n{}--- ours:\n{}",
        theirs.stderr,
        ours.stderr
    );
}

/// Jobs loading key ranges of one unpartitioned `pgbench_accounts` each end on
/// their own page, so the table may hold its rows on up to `jobs - 1` more
/// (partly filled) pages than after a serial load. Besides, jobs that wait for
/// each other to extend the table make PostgreSQL add several pages at once, and
/// the ones no job needed stay empty: more pages in all, none with rows. Its
/// rows, index and everything else are identical. `filled` is the number of
/// pages holding rows (pgbench's, ours). Accepts exactly that on
/// `pgbench_accounts` and nothing else.
fn last_page_rule(
    case: &str,
    reference: &[(String, String)],
    mine: &mut [(String, String)],
    jobs: usize,
    filled: (i64, i64),
) {
    let pages = |rels: &str| -> i64 {
        let line = rels
            .lines()
            .find(|l| l.starts_with("pgbench_accounts|"))
            .expect("pgbench_accounts in relations");
        line.rsplit('|').next().unwrap().parse().expect("relpages")
    };
    let theirs = &reference
        .iter()
        .find(|(k, _)| k == "relations")
        .expect("relations")
        .1;
    let (_, ours) = mine
        .iter_mut()
        .find(|(k, _)| k == "relations")
        .expect("relations");
    let (t, o) = (pages(theirs), pages(ours));
    let (t_filled, o_filled) = filled;
    assert_eq!(
        t_filled, t,
        "{case}: pgbench's pgbench_accounts has {t} pages, {t_filled} of them with rows"
    );
    assert!(
        (0..jobs as i64).contains(&(o_filled - t)) && o >= o_filled,
        "{case}: pgbench_accounts has rows on {o_filled} of its {o} pages, pgbench's on {t}: \
         more than {} partly filled last pages",
        jobs - 1
    );
    *ours = ours
        .lines()
        .map(|l| match l.strip_prefix("pgbench_accounts|") {
            Some(_) => l.replace(&format!("|{o}"), &format!("|{t}")),
            None => l.to_owned(),
        })
        .map(|l| l + "\n")
        .collect();
}

/// pgbench < 18 creates every base table UNLOGGED with `--unlogged-tables`,
/// partitioned or not; pgbench 18 only when nothing is partitioned (so with
/// partitions only the partitions, and their indexes, are unlogged). Rewrites
/// the reference's relation list to that rule, insisting it changes something.
fn pg18_unlogged_rule(case: &str, reference: &mut [(String, String)]) {
    let (_, rels) = reference
        .iter_mut()
        .find(|(k, _)| k == "relations")
        .expect("relations item");
    let mut changed = 0;
    let rewritten: Vec<String> = rels
        .lines()
        .map(|line| {
            let mut fields: Vec<&str> = line.split('|').collect();
            let name = fields[0];
            let is_partition = name
                .strip_prefix("pgbench_accounts_")
                .and_then(|rest| rest.trim_end_matches("_pkey").parse::<u32>().ok())
                .is_some();
            if !is_partition && fields[2] == "u" {
                fields[2] = "p";
                changed += 1;
            }
            fields.join("|")
        })
        .collect();
    assert!(
        changed > 0,
        "{case}: expected pgbench < 18 to make base tables unlogged: {rels}"
    );
    *rels = rewritten.join("\n") + "\n";
}

fn spec(steps: &str) -> InitSpec {
    InitSpec {
        steps: steps.into(),
        scale: 2,
        ..InitSpec::default()
    }
}

#[test]
fn client_side_generation_matches_pgbench() {
    compare("client", &["-s", "2", "-I", "dtgvp"], &spec("dtgvp"));
}

#[test]
fn server_side_generation_matches_pgbench() {
    compare("server", &["-s", "2", "-I", "dtGvp"], &spec("dtGvp"));
}

#[test]
fn range_partitions_match_pgbench() {
    compare(
        "range",
        &["-s", "2", "--partitions", "3"],
        &InitSpec {
            partitions: 3,
            ..spec("dtgvp")
        },
    );
}

#[test]
fn hash_partitions_match_pgbench() {
    compare(
        "hash",
        &["-s", "2", "--partitions", "3", "--partition-method", "hash"],
        &InitSpec {
            partitions: 3,
            partition_method: PartitionMethod::Hash,
            ..spec("dtgvp")
        },
    );
}

#[test]
fn server_side_into_partitions_matches_pgbench() {
    compare(
        "server_range",
        &["-s", "2", "-I", "dtGvp", "--partitions", "4", "-F", "90"],
        &InitSpec {
            partitions: 4,
            fillfactor: 90,
            ..spec("dtGvp")
        },
    );
}

#[test]
fn fillfactor_matches_pgbench() {
    compare(
        "fillfactor",
        &["-s", "2", "-F", "80"],
        &InitSpec {
            fillfactor: 80,
            ..spec("dtgvp")
        },
    );
}

#[test]
fn foreign_keys_match_pgbench() {
    compare("fkeys", &["-s", "2", "--foreign-keys"], &spec("dtgvpf"));
}

#[test]
fn unlogged_tables_match_pgbench() {
    compare(
        "unlogged",
        &["-s", "2", "--unlogged-tables"],
        &InitSpec {
            unlogged: true,
            ..spec("dtgvp")
        },
    );
}

#[test]
fn unlogged_partitioned_follows_pg18() {
    compare(
        "unlogged_part",
        &[
            "-s",
            "2",
            "--unlogged-tables",
            "--partitions",
            "2",
            "--partition-method",
            "hash",
        ],
        &InitSpec {
            unlogged: true,
            partitions: 2,
            partition_method: PartitionMethod::Hash,
            ..spec("dtgvp")
        },
    );
}

#[test]
fn no_vacuum_and_quiet_match_pgbench() {
    compare(
        "novacuum_quiet",
        &["-s", "2", "-n", "-q"],
        &InitSpec {
            quiet: true,
            ..spec("dtg p")
        },
    );
}

#[test]
fn step_subsets_and_repeats_match_pgbench() {
    compare(
        "steps",
        &["-s", "1", "-I", "dtg dtGpf"],
        &InitSpec {
            scale: 1,
            ..spec("dtg dtGpf")
        },
    );
}

#[test]
fn bigint_schema_from_scale_20000_matches_pgbench() {
    // Tables only: the column types and 64-bit range bounds, without 2e9 rows.
    compare(
        "bigint",
        &["-I", "dt", "-s", "30000", "--partitions", "3"],
        &InitSpec {
            scale: 30_000,
            partitions: 3,
            ..spec("dt")
        },
    );
    compare(
        "below_bigint",
        &["-I", "dt", "-s", "19999"],
        &InitSpec {
            scale: 19_999,
            ..spec("dt")
        },
    );
}

#[test]
fn single_range_partition_matches_pgbench() {
    compare(
        "one_part",
        &[
            "-s",
            "1",
            "--partitions",
            "1",
            "--partition-method",
            "range",
        ],
        &InitSpec {
            scale: 1,
            partitions: 1,
            partition_method: PartitionMethod::Range,
            ..spec("dtgvp")
        },
    );
}

#[test]
fn message_masking_hides_only_times_and_the_pg17_table_name() {
    let masked = message_structure(
        "100000 of 200000 tuples (50%) of pgbench_accounts done (elapsed 0.10 s, remaining 0.10 s)\n\
         done in 12.34 s (drop tables 0.00 s, vacuum 1.50 s).\n",
    );
    assert_eq!(
        masked,
        vec![
            "100000 of 200000 tuples (50%) done (elapsed T.TT s, remaining T.TT s)",
            "done in T.TT s (drop tables T.TT s, vacuum T.TT s).",
        ]
    );
    assert_ne!(
        message_structure("200000 of 200000"),
        message_structure("100000 of 200000")
    );
}

// --init-jobs (pgsurge extension): same tables, columns, constraints, indexes,
// page counts and row checksums as pgbench's serial -i, same messages.

#[test]
fn init_jobs_unpartitioned_matches_pgbench() {
    compare_jobs(
        "jobs_plain",
        &["-s", "3"],
        &InitSpec {
            scale: 3,
            ..spec("dtgvp")
        },
        2,
    );
}

#[test]
fn init_jobs_range_partitions_match_pgbench() {
    compare_jobs(
        "jobs_range",
        &["-s", "3", "--partitions", "4", "--foreign-keys"],
        &InitSpec {
            scale: 3,
            partitions: 4,
            ..spec("dtgvpf")
        },
        2,
    );
}

#[test]
fn init_jobs_hash_partitions_match_pgbench() {
    compare_jobs(
        "jobs_hash",
        &[
            "-s",
            "2",
            "--partitions",
            "3",
            "--partition-method",
            "hash",
            "-F",
            "90",
        ],
        &InitSpec {
            partitions: 3,
            partition_method: PartitionMethod::Hash,
            fillfactor: 90,
            ..spec("dtgvp")
        },
        3,
    );
}

#[test]
fn init_jobs_server_side_and_quiet_match_pgbench() {
    compare_jobs(
        "jobs_server",
        &["-s", "2", "-I", "dtGvp", "--partitions", "2"],
        &InitSpec {
            partitions: 2,
            ..spec("dtGvp")
        },
        2,
    );
    compare_jobs(
        "jobs_quiet",
        &["-s", "2", "-q", "--unlogged-tables"],
        &InitSpec {
            quiet: true,
            unlogged: true,
            ..spec("dtgvp")
        },
        4,
    );
}
