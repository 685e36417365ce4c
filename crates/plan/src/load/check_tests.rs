//! Checking what a campaign's tests are: `[matrix]`, `[run]`, `[init]`, `[hygiene]`,
//! `[sampling]`, `[profile]`, `[hooks]`, `[capacity]` and `[repeats]`, every number in
//! its range.

use super::{in_range, show_number};
use crate::spec::{
    limits, Campaign, DurationValue, ScriptPart, ScriptSpec, SpecError, ThreadsValue, AUTO_WARMUP,
};

impl Campaign {
    pub(super) fn validate_matrix_numbers(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let matrix = &spec.matrix;
        if matrix.scales.is_empty() || matrix.scales.contains(&0) {
            return Err(self.invalid("matrix.scales", "needs at least one scale, each ≥ 1"));
        }
        if matrix.clients.is_empty() || matrix.clients.contains(&0) {
            return Err(self.invalid(
                "matrix.clients",
                "needs at least one client count, each ≥ 1",
            ));
        }
        if matrix.scripts.is_empty() {
            return Err(self.invalid("matrix.scripts", "needs at least one script"));
        }
        if matrix.repeats == 0 {
            return Err(self.invalid("matrix.repeats", "must be ≥ 1"));
        }
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        for &scale in &matrix.scales {
            range("matrix.scales", in_range(scale, limits::SCALE, ""))?;
        }
        for &c in &matrix.clients {
            range("matrix.clients", in_range(c, limits::CLIENTS, " clients"))?;
        }
        for &j in &matrix.threads {
            range("matrix.threads", in_range(j, limits::THREADS, " threads"))?;
        }
        range(
            "matrix.repeats",
            in_range(matrix.repeats, limits::REPEATS, ""),
        )?;
        if !matrix.rates.is_empty() && !matrix.rates_per_client.is_empty() {
            return Err(self.invalid("matrix", "give rates (total) or rates_per_client, not both"));
        }
        for &r in &matrix.rates {
            range(
                "matrix.rates",
                in_range(r, limits::RATE, " tps (0 = unthrottled)"),
            )?;
        }
        let most_clients = matrix.clients.iter().copied().max().unwrap_or(1);
        for &r in &matrix.rates_per_client {
            range(
                "matrix.rates_per_client",
                in_range(
                    r,
                    (limits::RATE.0, limits::RATE.1 / f64::from(most_clients)),
                    &format!(
                        " tps per client (0 = unthrottled; with {most_clients} clients the \
                         total must stay at most {} tps)",
                        show_number(limits::RATE.1)
                    ),
                ),
            )?;
        }
        for (i, sc) in matrix.scripts.iter().enumerate() {
            let parts: Vec<&ScriptPart> = match sc {
                ScriptSpec::Builtin(_) => Vec::new(),
                ScriptSpec::Part(p) => vec![p],
                ScriptSpec::Mix { mix, .. } => mix.iter().collect(),
            };
            for p in parts {
                range(
                    &format!("matrix.scripts[{i}]"),
                    in_range(p.weight, limits::WEIGHT, " (weight)"),
                )?;
            }
        }
        Ok(())
    }

    /// The `[matrix]` values that name things: query modes, settings and scripts.
    pub(super) fn validate_matrix_values(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let matrix = &spec.matrix;
        for m in &matrix.query_modes {
            if pgsurge_engine::QueryMode::parse(m).is_none() {
                return Err(self.invalid(
                    "matrix.query_modes",
                    format!("\"{m}\" is not a query mode (simple, extended, prepared)"),
                ));
            }
        }
        if matrix.threads.contains(&0) {
            return Err(self.invalid("matrix.threads", "each thread count must be ≥ 1"));
        }
        for (name, values) in &matrix.settings {
            if values.is_empty() {
                return Err(self.invalid(
                    &format!("matrix.settings.{name}"),
                    "needs at least one value",
                ));
            }
            if name.is_empty()
                || !name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '.')
            {
                return Err(self.invalid(
                    "matrix.settings",
                    format!("\"{name}\" is not a setting name"),
                ));
            }
            for v in values {
                if matches!(v, toml::Value::Array(_) | toml::Value::Table(_)) {
                    return Err(self.invalid(
                        &format!("matrix.settings.{name}"),
                        "values are strings, numbers or booleans",
                    ));
                }
            }
        }
        for (i, sc) in matrix.scripts.iter().enumerate() {
            crate::matrix::Workload::from_spec(sc, &self.base_dir)
                .map_err(|e| self.invalid(&format!("matrix.scripts[{i}]"), e))?;
        }
        Ok(())
    }

    /// The `[run]` table.
    pub(super) fn validate_run(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        let r = &spec.run;
        match (&r.duration, r.transactions) {
            (Some(_), Some(_)) => {
                return Err(self.invalid("run", "give duration or transactions, not both"))
            }
            (Some(d), None) => {
                let secs = d.seconds().map_err(|e| self.invalid("run.duration", e))?;
                if secs < 1.0 || secs.fract() != 0.0 {
                    return Err(
                        self.invalid("run.duration", "must be a whole number of seconds ≥ 1")
                    );
                }
                range(
                    "run.duration",
                    in_range(secs, limits::DURATION_S, " seconds"),
                )?;
            }
            (None, Some(0)) => return Err(self.invalid("run.transactions", "must be ≥ 1")),
            (None, Some(t)) => range(
                "run.transactions",
                in_range(t, limits::TRANSACTIONS, " per client"),
            )?,
            _ => {}
        }
        if let Some(tries) = r.max_tries {
            range(
                "run.max_tries",
                in_range(tries, limits::MAX_TRIES, " (0 = unlimited)"),
            )?;
            if tries == 0 && r.transactions.is_some() && r.latency_limit.is_none() {
                return Err(self.invalid(
                    "run.max_tries",
                    "0 (unlimited tries) needs a duration or a latency_limit, as in pgbench",
                ));
            }
        }
        if !["simple", "extended", "prepared"].contains(&r.query_mode.as_str()) {
            return Err(self.invalid("run.query_mode", "must be simple, extended or prepared"));
        }
        if let Some(ThreadsValue::Auto(a)) = &r.threads {
            if a != "auto" {
                return Err(self.invalid("run.threads", "must be a number or \"auto\""));
            }
        }
        if let Some(ThreadsValue::Count(0)) = &r.threads {
            return Err(self.invalid("run.threads", "must be ≥ 1"));
        }
        if let Some(ThreadsValue::Count(j)) = &r.threads {
            range("run.threads", in_range(*j, limits::THREADS, " threads"))?;
        }
        let auto = matches!(&r.warmup, Some(DurationValue::Text(t)) if t.trim() == AUTO_WARMUP);
        if auto && r.transactions.is_some() {
            return Err(self.invalid(
                "run.warmup",
                "\"auto\" needs a duration (it runs until the steady window has lasted it), not transactions",
            ));
        }
        if auto && self.spec.distributed.is_some() {
            return Err(self.invalid(
                "run.warmup",
                "\"auto\" is not available with [distributed]: the generators' runs are not watched",
            ));
        }
        if r.warmup_max.is_some() && !auto {
            return Err(self.invalid("run.warmup_max", "applies only with warmup = \"auto\""));
        }
        if let Some(m) = &r.warmup_max {
            let secs = m.seconds().map_err(|e| self.invalid("run.warmup_max", e))?;
            if secs <= 0.0 {
                return Err(self.invalid("run.warmup_max", "must be more than 0"));
            }
            range("run.warmup_max", in_range(secs, limits::WAIT_S, " seconds"))?;
        }
        for (key, v) in [
            ("run.latency_limit", &r.latency_limit),
            ("run.warmup", if auto { &None } else { &r.warmup }),
            ("run.outage_wait", &r.outage_wait),
        ] {
            if let Some(v) = v {
                let secs = v.seconds().map_err(|e| self.invalid(key, e))?;
                let limit = if key == "run.latency_limit" {
                    if secs <= 0.0 {
                        return Err(self.invalid(key, "must be more than 0"));
                    }
                    limits::LATENCY_S
                } else {
                    limits::WAIT_S
                };
                range(key, in_range(secs, limit, " seconds"))?;
            }
        }
        Ok(())
    }

    /// `[init]` and every `[init.scale.N]`.
    pub(super) fn validate_init(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        // `[init]` and every `[init.scale.N]`, whether or not the matrix has scale N.
        let mut inits = vec![("init".to_string(), spec.init.for_scale(0))];
        for k in spec.init.scale.keys() {
            if let Ok(n) = k.parse::<u32>() {
                inits.push((format!("init.scale.{k}"), spec.init.for_scale(n)));
            }
        }
        for (section, init) in &inits {
            let key = |name: &str| format!("{section}.{name}");
            if let Some(method) = &init.method {
                if method != "client" && method != "server" {
                    return Err(self.invalid(&key("method"), "must be \"client\" or \"server\""));
                }
            }
            if let Some(pm) = &init.partition_method {
                if pm != "range" && pm != "hash" {
                    return Err(
                        self.invalid(&key("partition_method"), "must be \"range\" or \"hash\"")
                    );
                }
            }
            if let Some(ff) = init.fillfactor {
                range(&key("fillfactor"), in_range(ff, (10, 100), ""))?;
            }
            if let Some(jobs) = init.jobs {
                range(&key("jobs"), in_range(jobs, (1, 1000), ""))?;
            }
            if let Some(p) = init.partitions {
                range(&key("partitions"), in_range(p, limits::PARTITIONS, ""))?;
            }
        }
        for k in spec.init.scale.keys() {
            if k.parse::<u32>().is_err() {
                return Err(self.invalid(&format!("init.scale.{k}"), "keys must be scale numbers"));
            }
        }
        Ok(())
    }

    /// `[hygiene]`, `[thresholds]` and `[sampling]`.
    /// `[hygiene]`: a fresh cluster needs a data directory that may be thrown away.
    pub(super) fn validate_hygiene(&self) -> Result<(), SpecError> {
        let h = &self.spec.hygiene;
        if let Some(f) = h.fresh_cluster.as_deref() {
            if crate::spec::FreshCluster::parse(f).is_none() {
                return Err(self.invalid(
                    "hygiene.fresh_cluster",
                    format!("\"{f}\" is not a choice (test, scale or never)"),
                ));
            }
        }
        if h.fresh_cluster() != crate::spec::FreshCluster::Never {
            if let Some(t) = self.spec.targets.iter().find(|t| t.data_dir.is_some()) {
                return Err(self.invalid(
                    "hygiene.fresh_cluster",
                    format!(
                        "a fresh cluster replaces the data directory; target \"{}\" keeps \
                         its own (data_dir): leave data_dir out to use temporary ones",
                        t.name
                    ),
                ));
            }
        }
        Ok(())
    }

    pub(super) fn validate_observation(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let tol = spec.hygiene.commit_tolerance_pct;
        if !(tol.is_finite() && (0.0..=100.0).contains(&tol)) {
            return Err(self.invalid(
                "hygiene.commit_tolerance_pct",
                format!("{tol} is not a tolerance: give a percentage between 0 and 100"),
            ));
        }
        for (k, v) in &spec.thresholds {
            crate::thresholds::parse(k, v)
                .map_err(|e| self.invalid(&format!("thresholds.{k}"), e))?;
        }
        if !(spec.sampling.interval >= 0.1 && spec.sampling.interval <= 60.0) {
            return Err(self.invalid("sampling.interval", "must be between 0.1 and 60 seconds"));
        }
        Ok(())
    }

    /// `[profile]`: a frequency perf can sample at; the client profiled only where it
    /// runs in this process.
    pub(super) fn validate_profile(&self) -> Result<(), SpecError> {
        let Some(p) = &self.spec.profile else {
            return Ok(());
        };
        if let Some(hz) = p.frequency {
            if !(1..=20_000).contains(&hz) {
                return Err(self.invalid(
                    "profile.frequency",
                    format!("{hz} Hz: give a frequency from 1 to 20000"),
                ));
            }
        }
        if self.spec.distributed.is_some() && p.processes != crate::spec::ProfileProcesses::Server {
            return Err(self.invalid(
                "profile.processes",
                "the clients run in generator processes under [distributed]: profile the \
                 server only (processes = \"server\")",
            ));
        }
        Ok(())
    }

    /// The `[hooks]` table.
    pub(super) fn validate_hooks(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        if let Some(t) = &spec.hooks.timeout {
            match t.seconds() {
                Ok(s) if s > 0.0 => {
                    range("hooks.timeout", in_range(s, limits::WAIT_S, " seconds"))?
                }
                Ok(_) => return Err(self.invalid("hooks.timeout", "must be more than 0")),
                Err(e) => return Err(self.invalid("hooks.timeout", e)),
            }
        }
        Ok(())
    }

    /// The `[capacity]` search.
    pub(super) fn validate_capacity(&self) -> Result<(), SpecError> {
        let spec = &self.spec;
        let matrix = &spec.matrix;
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        let Some(cap) = &spec.capacity else {
            return Ok(());
        };
        if !matrix.rates.is_empty() || !matrix.rates_per_client.is_empty() {
            return Err(self.invalid(
                "capacity",
                "a capacity search chooses the rates: remove matrix.rates / rates_per_client",
            ));
        }
        if ![50.0, 90.0, 95.0, 99.0, 99.9].contains(&cap.percentile) {
            return Err(self.invalid("capacity.percentile", "one of 50, 90, 95, 99, 99.9"));
        }
        match cap.bound.seconds() {
            Ok(s) if s > 0.0 => {
                range("capacity.bound", in_range(s, limits::LATENCY_S, " seconds"))?
            }
            Ok(_) => return Err(self.invalid("capacity.bound", "must be more than 0")),
            Err(e) => return Err(self.invalid("capacity.bound", e)),
        }
        range(
            "capacity.start_rate",
            in_range(cap.start_rate, (1.0, limits::RATE.1), " tps"),
        )?;
        if let Some(max) = cap.max_rate {
            range(
                "capacity.max_rate",
                in_range(
                    max,
                    (cap.start_rate, limits::RATE.1),
                    " tps (start_rate to the most)",
                ),
            )?;
        }
        range(
            "capacity.repeats",
            in_range(cap.repeats, limits::CAPACITY_REPEATS, ""),
        )?;
        range(
            "capacity.resolution",
            in_range(cap.resolution, limits::RESOLUTION, " (a fraction)"),
        )?;
        if spec.run.duration.is_none() {
            return Err(self.invalid(
                "capacity",
                "a capacity search needs run.duration (tests at a rate run for a time)",
            ));
        }
        Ok(())
    }

    /// `[repeats]`: with `until`, a precision, `2 ≤ min ≤ max`, a budget, and not with
    /// `matrix.repeats`; with `builds` or `starts`, `matrix.repeats` a multiple of
    /// builds × starts, builds only of `source` targets, starts only of throwaway ones.
    pub(super) fn validate_repeats(&self) -> Result<(), SpecError> {
        let Some(r) = &self.spec.repeats else {
            return Ok(());
        };
        if r.until.is_none() {
            return self.validate_levels(r);
        }
        if r.builds != 1 || r.starts != 1 {
            return Err(self.invalid(
                "repeats",
                "builds and starts nest a fixed number of repeats (matrix.repeats); \
                 they do not go with until",
            ));
        }
        if self.spec.matrix.repeats != 1 {
            return Err(self.invalid(
                "repeats",
                "give matrix.repeats (a fixed number) or [repeats] (until precise), not both",
            ));
        }
        r.precision()
            .map_err(|e| self.invalid("repeats.until", format!("must be {e}")))?;
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        range("repeats.min", in_range(r.min, (2, limits::REPEATS.1), ""))?;
        range(
            "repeats.max",
            in_range(r.max, (r.min, limits::REPEATS.1), " (at least min)"),
        )?;
        if let Some(b) = &r.budget {
            let s = b.seconds().map_err(|e| self.invalid("repeats.budget", e))?;
            range("repeats.budget", in_range(s, limits::DURATION_S, " s"))?;
        }
        Ok(())
    }

    /// `[repeats] builds` and `starts` (without `until`).
    fn validate_levels(&self, r: &crate::spec::RepeatsSection) -> Result<(), SpecError> {
        let range = |key: &str, r: Result<(), String>| r.map_err(|e| self.invalid(key, e));
        range("repeats.builds", in_range(r.builds, limits::BUILDS, ""))?;
        range("repeats.starts", in_range(r.starts, limits::STARTS, ""))?;
        if r.min != 3 || r.max != 10 || r.budget.is_some() {
            return Err(self.invalid(
                "repeats",
                "min, max and budget go with until (repeats until precise)",
            ));
        }
        let groups = r.builds * r.starts;
        if !self.spec.matrix.repeats.is_multiple_of(groups) {
            return Err(self.invalid(
                "matrix.repeats",
                format!(
                    "must be a multiple of repeats.builds × repeats.starts ({groups}): \
                     each start of each build runs the same number of repeats"
                ),
            ));
        }
        let targets = &self.spec.targets;
        if let Some(t) = targets.iter().find(|t| r.builds > 1 && t.source.is_none()) {
            return Err(self.invalid(
                "repeats.builds",
                format!(
                    "target \"{}\" has no source: layout builds are builds from source",
                    t.name
                ),
            ));
        }
        if let Some(t) = targets.iter().find(|t| r.starts > 1 && !t.is_throwaway()) {
            return Err(self.invalid(
                "repeats.starts",
                format!(
                    "target \"{}\" is an existing server: only throwaway servers are \
                     started again",
                    t.name
                ),
            ));
        }
        Ok(())
    }
}
