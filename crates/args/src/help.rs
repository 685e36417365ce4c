//! `--help` and `--version` texts. The help is pgsurge's own wording, laid out in
//! pgbench's sections (wrappers and pgbench's own tests look for the section titles,
//! `Usage`, `benchmarking tool for PostgreSQL` and `Report bugs to`).

/// The PostgreSQL major version whose pgbench pgsurge reproduces.
pub const COMPAT_PG_VERSION: &str = "18.0";

/// The `--version` line.
///
/// It starts like pgbench's own, `pgbench (PostgreSQL) 18.0`, so that wrappers that
/// match `pgbench \(PostgreSQL\) (\d+)\.(\d+)` or take the third word keep working,
/// and names pgsurge in a trailing parenthesis, the place where distributions already
/// add their own tag (Debian prints `pgbench (PostgreSQL) 15.18 (Debian 15.18-0+deb12u1)`).
/// The minor number is 0: pgsurge follows pgbench 18's behaviour, not one minor release.
pub fn version_line() -> String {
    format!(
        "pgbench (PostgreSQL) {COMPAT_PG_VERSION} (pgsurge {})\n",
        env!("CARGO_PKG_VERSION")
    )
}

/// The `--help` text (stdout).
pub fn help_text() -> &'static str {
    HELP
}

const HELP: &str = r#"pgsurge bench: a pgbench-compatible benchmarking tool for PostgreSQL.

Usage:
  pgbench [OPTION]... [DBNAME]

Initialization options:
  -i, --initialize         create and fill the pgbench tables instead of benchmarking
  -I, --init-steps=[dtgGvpf]+ (default "dtgvp")
                           steps to run, in the order given:
                           d: drop the pgbench tables if they exist
                           t: create the pgbench tables
                           g: load the rows from this client (COPY)
                           G: let the server generate the rows
                           v: VACUUM ANALYZE the tables
                           p: add the primary keys
                           f: add the foreign keys
  -F, --fillfactor=NUM     fill factor of the tables, 10 to 100
  -n, --no-vacuum          leave out the VACUUM step
  -q, --quiet              report data generation progress every 5 seconds only
  -s, --scale=NUM          scale factor (100000 accounts per unit)
  --foreign-keys           add foreign keys between the tables (step f)
  --index-tablespace=TABLESPACE
                           put the primary key indexes in TABLESPACE
  --partition-method=(range|hash)
                           how to partition pgbench_accounts (default: range)
  --partitions=NUM         split pgbench_accounts into NUM partitions (default: 0)
  --tablespace=TABLESPACE  put the tables in TABLESPACE
  --unlogged-tables        create the tables UNLOGGED

Options to select what to run:
  -b, --builtin=NAME[@W]   run built-in script NAME with weight W (default: 1);
                           "-b list" shows the names, prefixes are accepted
  -f, --file=FILENAME[@W]  run the script in FILENAME ("-" = stdin) with weight W
                           (default: 1)
  -N, --skip-some-updates  short for "-b simple-update" (no teller/branch updates)
  -S, --select-only        short for "-b select-only" (read-only transactions)

Benchmarking options:
  -c, --client=NUM         simulated clients, each with its own session (default: 1)
  -C, --connect            open a new connection for every transaction
  -D, --define=VARNAME=VALUE
                           set variable VARNAME for the scripts
  -j, --jobs=NUM           worker threads driving the clients (default: 1)
  -l, --log                log every transaction to a per-thread file
  -L, --latency-limit=NUM  transactions over NUM ms count as late (skipped under -R)
  -M, --protocol=simple|extended|prepared
                           how statements are sent to the server (default: simple)
  -n, --no-vacuum          do not VACUUM or truncate before the run
  -P, --progress=NUM       print a progress line every NUM seconds
  -r, --report-per-command per-statement latencies, failures and retries at the end
  -R, --rate=NUM           aim for NUM transactions per second (Poisson schedule)
  -s, --scale=NUM          scale factor to print when it cannot be read from the tables
  -t, --transactions=NUM   transactions per client (default: 10)
  -T, --time=NUM           run for NUM seconds instead of a transaction count
  -v, --vacuum-all         also VACUUM pgbench_accounts before the run
  --aggregate-interval=NUM write one log line per NUM seconds instead of one per
                           transaction (with -l)
  --exit-on-abort          stop the whole run as soon as one client aborts
  --failures-detailed      split failures into serialization and deadlock errors
  --log-prefix=PREFIX      file name prefix of the -l logs (default: "pgbench_log")
  --max-tries=NUM          tries per transaction on serialization or deadlock
                           errors, 0 = no limit (default: 1)
  --progress-timestamp     print Unix timestamps in progress lines
  --random-seed=SEED       seed of the random generators: "time", "rand" or a number
  --sampling-rate=NUM      log only this fraction of transactions (0.01 = 1%)
  --show-script=NAME       print the text of built-in script NAME and exit
  --verbose-errors         print every error, not only the aborting ones

Common options:
  --debug                  print debugging messages
  -d, --dbname=DBNAME      database (or connection string / URI) to connect to
  -h, --host=HOSTNAME      server host name or Unix socket directory
  -p, --port=PORT          server port
  -U, --username=USERNAME  user name to connect as
  -V, --version            print the version and exit (first argument only)
  -?, --help               print this help and exit (first argument only)

pgsurge extensions (not in pgbench; without them the output is pgbench's):
  --percentiles[=LIST]     report latency percentiles from an HDR histogram;
                           LIST is comma-separated (default: 50,90,99,99.9)
  --json=FILE              also write the results as a JSON document ("-" = stdout
                           alone; the text report then goes to stderr)
  --hdr-log=FILE           write per-interval latency histograms (HdrHistogram log,
                           values in microseconds unless --hdr-log-unit=ns)
  --hdr-log-unit=us|ns     unit of the --hdr-log values (default: us; ns is what
                           HdrHistogram's own tools assume)
  --start-at=TIME          connect, then start all clients at TIME (RFC 3339 or
                           Unix epoch seconds): one window for many generators
  --generator-name=NAME    this generator's name in the result (default: host name)
  --generator-index=I      this generator's 0-based index (needs --generator-count)
  --generator-count=N      number of generators in the distributed run
  --generator-split        -c, -R and a numeric --random-seed are the totals of all
                           generators: run this generator's share of them
  --store[=LOCATION]       store the run, its histograms and per-second series in a
                           results store (SQLite file or postgresql:// URL; default:
                           $PGSURGE_STORE or ./pgsurge-results.db), checked before
                           the run starts
  --cpus=LIST              run the client threads on these CPUs (e.g. 4-7,9),
                           checked against the online CPUs
  --set=NAME               the store's set for the run (default: adhoc)
  --group=NAME             store the run as one generator of the distributed run
                           NAME (needs --store and --generator-index/-count)
  --init-jobs=N            with -i: load, vacuum and index pgbench_accounts over N
                           connections (default: 1, as pgbench)
  --workload=NAME|DIR      a workload pack (tpcc, ycsb-a…f, oltp-…, or a directory;
                           `pgsurge workload list`): with -i, create and load its
                           schema (-s: the pack's scale); otherwise run its scripts
                           with their weights and report its metrics
  --mix=random|deck        how each transaction's script is drawn: random (by
                           weight, as pgbench; the default) or deck (each client
                           deals from a shuffled deck of WEIGHT cards per script;
                           a workload pack may make deck its default)
  --costs                  measure what each transaction cost: server and client
                           CPU (user, system), context switches, WAL bytes and
                           records, shared buffer hits and reads, temporary bytes;
                           printed after the report and in --json (txn_costs)
  --reconnect              a client whose connection is lost (or whose server
                           turned read-only, or cancelled its statement) counts
                           its transaction as failed, connects again (a multi-host
                           conninfo with target_session_attrs=read-write finds the
                           new primary) and goes on; the report adds the failures
                           by class and the stretch without a commit around the
                           first lost connection
  --check-commits=TABLE    with --reconnect: after the run, look for every
                           transaction a client was told committed in TABLE
                           (columns client_id, txn_seq: the script inserts
                           :client_id, :txn_seq) and count those missing
  --replica-file=FILENAME[@W]
                           add a script whose transactions run on a standby: each
                           client opens a second connection (to the first server
                           of the host list in recovery) and sends this script's
                           transactions on it; the report counts them and the
                           stale reads among them (a query that returns rows
                           returned none), with the standbys' lag per second
  --profile[=HZ]           sample the call stacks of the server's processes and of
                           the client on the CPU over the run (perf, default 99 Hz);
                           the hottest functions are printed after the report and
                           --store keeps the whole profiles
  --live[=ADDR]            serve a page that shows the run second by second
                           (rate, latency percentiles) on ADDR (default:
                           127.0.0.1:8642); the address is said on stderr

Report bugs to the pgsurge project's issue tracker.
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn version_line_parses_like_pgbench() {
        let v = version_line();
        let mut words = v.split_whitespace();
        assert_eq!(words.next(), Some("pgbench"));
        assert_eq!(words.next(), Some("(PostgreSQL)"));
        let ver = words.next().expect("version number");
        let (major, minor) = ver.split_once('.').expect("MAJOR.MINOR");
        assert_eq!(major.parse::<u32>().ok(), Some(18));
        assert!(minor.parse::<u32>().is_ok());
        assert!(v.contains("pgsurge"));
        assert!(v.ends_with(")\n"));
    }

    #[test]
    fn help_has_the_sections_pgbench_tests_look_for() {
        let h = help_text();
        for needle in [
            "benchmarking tool for PostgreSQL",
            "Usage",
            "Initialization options:",
            "Options to select what to run:",
            "Benchmarking options:",
            "Common options:",
            "Report bugs to",
        ] {
            assert!(h.contains(needle), "missing {needle:?}");
        }
    }
}
