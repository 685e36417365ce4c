//! The live page of one run (`pgsurge bench --live`): the same page as a campaign's,
//! with one test, fed from the engine's interval samples (nothing is added to a
//! transaction's path), the server's waits and host figures sampled beside them, and
//! the run's result when it ends.

use pgsurge_events::{Second, Told};
use pgsurge_results::{IntervalSample, LatencyHistogram, RunResult};
use pgsurge_store::run_status;
use pgsurge_wire::redact::redact;

use crate::{LiveError, View};

/// The page of one run being served, with the run's key.
pub struct RunView {
    view: View,
    key: String,
}

impl RunView {
    /// Serves the page on `addr` when there is one, saying where on stderr; `None`
    /// without an address.
    pub fn start(addr: Option<&str>) -> Result<Option<RunView>, LiveError> {
        let Some(addr) = addr else {
            return Ok(None);
        };
        let view = View::start(Some(addr))?;
        view.live.lock().set_name = "pgsurge bench".into();
        Ok(Some(RunView {
            view,
            key: String::new(),
        }))
    }

    /// The run `key` (its command line; masked) begins, planned to take `planned_s`
    /// seconds (0 when it is counted in transactions).
    pub fn started(&mut self, key: &str, planned_s: u64) {
        self.key = redact(key);
        let key = self.key.clone();
        self.tell(&Told::TestPlanned {
            key,
            planned_s,
            target: String::new(),
            cell: String::new(),
            repeat: 1,
        });
        let key = self.key.clone();
        self.tell(&Told::TestStarted { key });
    }

    /// What the page says in place of the host's figures when none are sampled: why.
    pub fn host_unsampled(&mut self, why: &str) {
        self.view.live.lock().host_note = Some(redact(why));
    }

    /// One interval of the run, with the latency histogram of its transactions and
    /// the server's waits and host figures sampled during it (`pg.wait.*`, `os.*`).
    pub fn interval(
        &mut self,
        sample: &IntervalSample,
        histogram: &LatencyHistogram,
        metrics: Vec<(String, f64)>,
    ) {
        let told = Told::Interval {
            key: self.key.clone(),
            second: Second::of(sample, Some(histogram), false).with_metrics(metrics),
        };
        self.tell(&told);
    }

    /// The run ended with `result` (or failed with `error`).
    pub fn ended(&mut self, result: Result<&RunResult, &str>) {
        let told = match result {
            Ok(r) => {
                let p99 = pgsurge_results::result::percentiles_of_encoded(
                    [r.totals.latency.histogram.as_deref()],
                    &[99.0],
                );
                Told::TestEnded {
                    key: self.key.clone(),
                    status: if r.aborted {
                        run_status::FAILED
                    } else {
                        run_status::OK
                    }
                    .into(),
                    tps: Some(r.tps),
                    latency_mean_ms: r.totals.latency.mean_ms,
                    latency_p99_ms: p99.first().map(|p| p.latency_ms),
                    error: r.aborted.then(|| "a client aborted".to_string()),
                }
            }
            Err(e) => Told::TestEnded {
                key: self.key.clone(),
                status: run_status::FAILED.into(),
                tps: None,
                latency_mean_ms: None,
                latency_p99_ms: None,
                error: Some(redact(e)),
            },
        };
        let status = match result {
            Ok(r) if !r.aborted => "complete",
            _ => run_status::FAILED,
        };
        self.tell(&told);
        self.view.live.lock().end(status);
    }

    fn tell(&mut self, told: &Told) {
        self.view.live.lock().take(told);
    }
}
