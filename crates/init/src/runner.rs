//! Runs the steps of an `InitSpec` over an [`InitSession`], printing pgbench's
//! messages and the final timing line.
//!
//! Owns the order of statements within each step and the mapping of session
//! failures to [`InitError`]s. SQL text comes from `ddl`, rows from `rows`,
//! progress lines from `progress`.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::ddl;
use crate::error::InitError;
use crate::parallel::{self, Parallel, Task};
use crate::progress::{micros_to_secs, Clock, TableProgress};
use crate::rows::{GeneratedTable, RowWriter};
use crate::session::{CopyFailure, Fill, InitSession, SessionError};
use crate::spec::InitSpec;
use crate::steps::{InitStep, StepChar};

/// Copy data is sent in chunks of about this many bytes.
pub(crate) const COPY_CHUNK_BYTES: usize = 256 * 1024;
/// Rows written between two looks at the chunk size.
pub(crate) const ROWS_PER_BATCH: i64 = 4096;

/// The environment of one initialization run: clock, terminal, cancellation.
pub struct InitContext<'a> {
    /// Times steps and progress lines.
    pub clock: &'a dyn Clock,
    /// Whether stderr is a terminal (progress lines end in `\r` then).
    pub stderr_is_tty: bool,
    /// Set (e.g. by a SIGINT handler) to stop client-side generation early.
    /// The handler must also send a cancel request to the server, as
    /// pgbench's does, so the interrupted COPY fails instead of committing.
    pub cancel: Option<&'a AtomicBool>,
}

/// Runs every step of `spec.steps` in order. See [`crate::initialize`].
pub fn run_steps<S: InitSession + ?Sized>(
    conn: &mut S,
    spec: &InitSpec,
    err: &mut dyn Write,
    ctx: &InitContext<'_>,
) -> Result<(), InitError> {
    run_steps_parallel(conn, spec, None, err, ctx)
}

/// [`run_steps`], with the heavy steps spread over worker sessions when `par`
/// is given (see the `parallel` module for what is split and how).
pub fn run_steps_parallel<S: InitSession + ?Sized>(
    conn: &mut S,
    spec: &InitSpec,
    par: Option<&Parallel<'_>>,
    err: &mut dyn Write,
    ctx: &InitContext<'_>,
) -> Result<(), InitError> {
    let mut run = Runner {
        conn,
        spec,
        par,
        err,
        ctx,
    };
    let mut summary = String::new();
    let mut total = 0.0f64;
    for c in spec.steps.chars() {
        let step = match InitStep::from_char(c) {
            StepChar::Step(step) => step,
            StepChar::Ignored => continue,
            StepChar::Unknown(c) => return Err(InitError::UnknownStep(c)),
        };
        let start = ctx.clock.now_micros();
        run.step(step)?;
        let elapsed = micros_to_secs(ctx.clock.now_micros() - start);
        if !summary.is_empty() {
            summary.push_str(", ");
        }
        summary.push_str(&format!("{} {elapsed:.2} s", step.op_name()));
        total += elapsed;
    }
    run.say(&format!("done in {total:.2} s ({summary}).\n"));
    Ok(())
}

struct Runner<'r, 'c, S: InitSession + ?Sized> {
    conn: &'r mut S,
    spec: &'r InitSpec,
    /// Worker sessions for `g`, `G`, `v` and `p`; `None` runs pgbench's serial steps.
    par: Option<&'r Parallel<'r>>,
    err: &'r mut dyn Write,
    ctx: &'r InitContext<'c>,
}

impl<S: InitSession + ?Sized> Runner<'_, '_, S> {
    /// Writes a message to stderr; like pgbench's fprintf, a failed write is
    /// not an init failure.
    fn say(&mut self, text: &str) {
        let _ = self.err.write_all(text.as_bytes());
    }

    /// Prints notices the server sent, as libpq's default notice processor does.
    fn flush_notices(&mut self) {
        for notice in self.conn.take_notices() {
            self.say(&notice);
        }
    }

    /// Whether the run was interrupted (Ctrl-C): no statement starts after that.
    fn interrupted(&self) -> bool {
        self.ctx
            .cancel
            .is_some_and(|flag| flag.load(std::sync::atomic::Ordering::Acquire))
    }

    /// pgbench's `executeStatement`.
    fn exec(&mut self, sql: &str) -> Result<(), InitError> {
        if self.interrupted() {
            // What the server answers a statement it was asked to cancel.
            return Err(InitError::QueryFailed {
                message: "ERROR:  canceling statement due to user request\n".into(),
                sql: sql.to_owned(),
            });
        }
        let result = self.conn.execute(sql);
        self.flush_notices();
        result.map_err(|e| query_failed(e, sql))
    }

    fn step(&mut self, step: InitStep) -> Result<(), InitError> {
        match step {
            InitStep::DropTables => {
                self.say("dropping old tables...\n");
                self.exec(ddl::DROP_TABLES)
            }
            InitStep::CreateTables => self.create_tables(),
            InitStep::ClientSideGenerate => self.generate_client_side(),
            InitStep::ServerSideGenerate => self.generate_server_side(),
            InitStep::Vacuum => {
                self.say("vacuuming...\n");
                if let Some(par) = self.par {
                    return self.vacuum_parallel(par);
                }
                for sql in ddl::VACUUM_STATEMENTS {
                    self.exec(sql)?;
                }
                Ok(())
            }
            InitStep::PrimaryKeys => {
                self.say("creating primary keys...\n");
                if let Some(par) = self.par {
                    return self.primary_keys_parallel(par);
                }
                for sql in ddl::primary_key_statements(self.spec.index_tablespace.as_deref()) {
                    self.exec(&sql)?;
                }
                Ok(())
            }
            InitStep::ForeignKeys => {
                self.say("creating foreign keys...\n");
                for sql in ddl::FOREIGN_KEY_STATEMENTS {
                    self.exec(sql)?;
                }
                Ok(())
            }
        }
    }

    fn create_tables(&mut self) -> Result<(), InitError> {
        self.say("creating tables...\n");
        for sql in ddl::create_table_statements(self.spec) {
            self.exec(&sql)?;
        }
        if self.spec.is_partitioned() {
            self.say(&format!(
                "creating {} partitions...\n",
                self.spec.partitions
            ));
            for sql in ddl::partition_statements(self.spec) {
                self.exec(&sql)?;
            }
        }
        Ok(())
    }

    fn generate_server_side(&mut self) -> Result<(), InitError> {
        self.say("generating data (server-side)...\n");
        // One transaction, so the server can skip WAL for freshly truncated tables.
        self.exec("begin")?;
        self.exec(ddl::TRUNCATE_TABLES)?;
        let [branches, tellers, accounts] = ddl::server_side_inserts(self.spec.scale);
        self.exec(&branches)?;
        self.exec(&tellers)?;
        let Some(par) = self.par else {
            self.exec(&accounts)?;
            return self.exec("commit");
        };
        self.exec("commit")?;
        let tasks: Vec<Task> = parallel::account_slices(self.spec, par.jobs)
            .iter()
            .map(|slice| Task::Sql(vec![parallel::server_side_insert(slice)]))
            .collect();
        self.run_parallel(par, &tasks, None)
    }

    fn generate_client_side(&mut self) -> Result<(), InitError> {
        self.say("generating data (client-side)...\n");
        self.exec("begin")?;
        self.exec(ddl::TRUNCATE_TABLES)?;
        let Some(par) = self.par else {
            for table in GeneratedTable::ALL {
                self.populate(table)?;
            }
            return self.exec("commit");
        };
        self.populate(GeneratedTable::Branches)?;
        self.populate(GeneratedTable::Tellers)?;
        self.exec("commit")?;
        let freeze = self.can_freeze_partitions()?;
        let tasks: Vec<Task> = parallel::account_slices(self.spec, par.jobs)
            .into_iter()
            .map(|slice| Task::Copy {
                // Only a partition of its own can be truncated and frozen by one job.
                freeze: freeze && slice.is_partition(),
                slice,
            })
            .collect();
        let rows = GeneratedTable::Accounts.base() * i64::from(self.spec.scale);
        let mut progress = TableProgress::new(
            GeneratedTable::Accounts.name(),
            rows,
            self.spec.quiet,
            self.ctx.stderr_is_tty,
            self.ctx.clock.now_micros(),
        );
        self.run_parallel(par, &tasks, Some(&mut progress))
    }

    /// Whether parallel jobs may truncate and `COPY … FREEZE` single
    /// partitions: server 14 or later (as for pgbench's FREEZE) and no foreign
    /// key pointing at `pgbench_accounts` or a partition (a referenced table
    /// cannot be truncated on its own).
    fn can_freeze_partitions(&mut self) -> Result<bool, InitError> {
        if self.conn.server_version_num() < 140000 {
            return Ok(false);
        }
        let found = self
            .conn
            .query_value(ddl::ACCOUNTS_REFERENCED_QUERY, "pgbench_accounts");
        self.flush_notices();
        let found = found.map_err(|e| query_failed(e, ddl::ACCOUNTS_REFERENCED_QUERY))?;
        Ok(found.as_deref() == Some("0"))
    }

    /// `v` over worker sessions: the biggest relations first, then the
    /// partitioned parent's own statistics.
    fn vacuum_parallel(&mut self, par: &Parallel<'_>) -> Result<(), InitError> {
        let partitions = parallel::partition_names(self.spec);
        let mut tasks: Vec<Task> = partitions
            .iter()
            .map(|p| Task::Sql(vec![format!("vacuum analyze {p}")]))
            .collect();
        let accounts_whole = partitions.is_empty();
        tasks.extend(
            ddl::VACUUM_STATEMENTS
                .iter()
                .filter(|sql| accounts_whole || !sql.ends_with("pgbench_accounts"))
                .map(|sql| Task::Sql(vec![(*sql).to_owned()])),
        );
        if accounts_whole {
            // pgbench_accounts is by far the biggest: start it first.
            tasks.swap(0, 2);
        }
        self.run_parallel(par, &tasks, None)?;
        if !accounts_whole {
            // The parent's statistics over all partitions (PostgreSQL 18 can
            // skip re-analyzing the partitions).
            let sql = if self.conn.server_version_num() >= 180000 {
                "analyze only pgbench_accounts"
            } else {
                "analyze pgbench_accounts"
            };
            self.exec(sql)?;
        }
        Ok(())
    }

    /// `p` over worker sessions: each partition's key on its own session, then
    /// the parent's (which adopts them); an unpartitioned `pgbench_accounts`
    /// is indexed with the server's parallel maintenance workers.
    fn primary_keys_parallel(&mut self, par: &Parallel<'_>) -> Result<(), InitError> {
        let statements = ddl::primary_key_statements(self.spec.index_tablespace.as_deref());
        let [branches, tellers, accounts] =
            <[String; 3]>::try_from(statements).expect("three primary key statements");
        let partitions = parallel::partition_names(self.spec);
        let mut tasks: Vec<Task> = Vec::new();
        if partitions.is_empty() {
            tasks.push(Task::Sql(vec![
                format!("set max_parallel_maintenance_workers = {}", par.jobs - 1),
                accounts.clone(),
            ]));
        } else {
            let suffix = &accounts["alter table pgbench_accounts".len()..];
            tasks.extend(
                partitions
                    .iter()
                    .map(|p| Task::Sql(vec![format!("alter table {p}{suffix}")])),
            );
        }
        tasks.push(Task::Sql(vec![branches]));
        tasks.push(Task::Sql(vec![tellers]));
        self.run_parallel(par, &tasks, None)?;
        if !partitions.is_empty() {
            self.exec(&accounts)?;
        }
        Ok(())
    }

    fn run_parallel(
        &mut self,
        par: &Parallel<'_>,
        tasks: &[Task],
        progress: Option<&mut TableProgress>,
    ) -> Result<(), InitError> {
        parallel::run_tasks(par, self.spec, tasks, self.ctx, progress, &mut *self.err)
    }

    /// Whether pgbench 18 would COPY `table` with FREEZE: server 14 or later
    /// and the table is an ordinary one (not a partitioned parent).
    fn use_freeze(&mut self, table: &str) -> Result<bool, InitError> {
        if self.conn.server_version_num() < 140000 {
            return Ok(false);
        }
        let relkind = self.conn.query_value(ddl::RELKIND_QUERY, table);
        self.flush_notices();
        let relkind = relkind.map_err(|e| query_failed(e, ddl::RELKIND_QUERY))?;
        Ok(relkind.as_deref() == Some("r"))
    }

    fn populate(&mut self, table: GeneratedTable) -> Result<(), InitError> {
        let freeze = self.use_freeze(table.name())?;
        let sql = ddl::copy_statement(table.name(), freeze);
        let mut rows = RowWriter::new(table, self.spec.scale);
        let clock = self.ctx.clock;
        let cancel = self.ctx.cancel;
        let (quiet, tty) = (self.spec.quiet, self.ctx.stderr_is_tty);
        let mut progress: Option<TableProgress> = None;
        let mut cancelled = false;
        let err = &mut *self.err;
        let mut fill = |buf: &mut Vec<u8>| -> Fill {
            // pgbench starts its clock once the COPY is under way.
            let progress = progress.get_or_insert_with(|| {
                TableProgress::new(table.name(), rows.total(), quiet, tty, clock.now_micros())
            });
            let every = progress.check_every();
            while !rows.is_done() && buf.len() < COPY_CHUNK_BYTES {
                if cancel.is_some_and(|c| c.load(Ordering::Relaxed)) {
                    cancelled = true;
                    break;
                }
                let next_check = (rows.rows_done() / every + 1) * every;
                rows.write_until(buf, next_check.min(rows.rows_done() + ROWS_PER_BATCH));
                let j = rows.rows_done();
                if j % every == 0 {
                    progress.rows_done(j, clock.now_micros(), err);
                }
            }
            if rows.is_done() || cancelled {
                progress.finish(err);
                buf.extend_from_slice(b"\\.\n");
                Fill::Done
            } else {
                Fill::More
            }
        };
        let result = self.conn.copy_in(&sql, &mut fill);
        self.flush_notices();
        match result {
            Ok(()) if cancelled => Err(InitError::CopyEnd {
                message: "ERROR:  canceling statement due to user request\n".into(),
            }),
            Ok(()) => Ok(()),
            Err(failure) => Err(copy_failed(failure)),
        }
    }
}

/// The init failure for a failed `COPY … FROM STDIN`.
pub(crate) fn copy_failed(failure: CopyFailure) -> InitError {
    match failure {
        CopyFailure::Start(e) => InitError::CopyStart { message: e.message },
        CopyFailure::Send(e) => InitError::CopySend { cause: e.message },
        CopyFailure::End(e) => InitError::CopyEnd { message: e.message },
    }
}

/// The init failure for a failed statement (pgbench's `executeStatement`).
pub(crate) fn query_failed(e: SessionError, sql: &str) -> InitError {
    InitError::QueryFailed {
        message: e.message,
        sql: sql.to_owned(),
    }
}
