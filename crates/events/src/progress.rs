//! The terminal as a consumer of a campaign's events: a progress bar of one unit per
//! planned second of a test, what the runner does now under it, and the lines said
//! above it (each test's outcome, targets, outages, warnings), masked and made safe
//! for the terminal.

use std::collections::HashMap;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use pgsurge_command::terminal_safe;
use pgsurge_store::run_status;
use pgsurge_wire::redact::redact;

use crate::{Consumer, Event, Outage};

/// The campaign's progress on stderr.
pub struct Progress {
    pb: ProgressBar,
    /// Planned seconds of each test to run, by key.
    planned: HashMap<String, u64>,
    /// Bar units of the tests ended.
    done: u64,
    /// Seconds of the test in hand seen so far.
    ticks: u64,
}

impl Default for Progress {
    fn default() -> Self {
        Self::new()
    }
}

impl Progress {
    /// A progress bar on stderr (hidden when stderr is not a terminal).
    pub fn new() -> Self {
        let pb = ProgressBar::new(0);
        pb.set_draw_target(ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template(
            "{spinner} [{elapsed_precise}] {wide_bar} {percent:>3}% ETA {eta_precise}\n  {msg}",
        ) {
            pb.set_style(style);
        }
        pb.enable_steady_tick(Duration::from_millis(250));
        Progress {
            pb,
            planned: HashMap::new(),
            done: 0,
            ticks: 0,
        }
    }

    /// Says `line` above the bar (masked: lines quote errors, which may quote a
    /// connection string).
    fn say(&self, line: &str) {
        let masked = redact(line);
        let line = &terminal_safe(&masked);
        if self.pb.is_hidden() {
            eprintln!("{line}");
        } else {
            self.pb.println(line);
        }
    }

    fn message(&self, text: String) {
        self.pb
            .set_message(terminal_safe(&redact(&text)).into_owned());
    }
}

/// The line said when a test ended: its rate and latency, or why it failed.
fn outcome_line(write: &pgsurge_store::RunWrite) -> String {
    let run = &write.run;
    if run.status == run_status::FAILED {
        format!("FAILED: {}", run.error.as_deref().unwrap_or(""))
    } else {
        format!(
            "{:.1} tps, latency avg {:.3} ms, p99 {:.3} ms",
            run.tps.unwrap_or(0.0),
            run.latency_mean_ms.unwrap_or(0.0),
            run.latency_p99_ms.unwrap_or(0.0)
        )
    }
}

/// `1m05s`, `42s`.
pub fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    if s >= 60 {
        format!("{}m{:02}s", s / 60, s % 60)
    } else {
        format!("{:.0}s", d.as_secs_f64())
    }
}

impl Consumer for Progress {
    fn take(&mut self, event: &Event<'_>) {
        match event {
            Event::TestPlanned { test, planned_s } => {
                self.planned.insert(test.key.to_string(), *planned_s);
                self.pb.inc_length(*planned_s);
            }
            Event::TestStarted { test } => {
                self.ticks = 0;
                self.pb.set_position(self.done);
                self.message(format!("{} (starting)", test.head()));
            }
            Event::TestRunAgain { test, attempt } => {
                // The bar counts the new attempt's seconds, as it counted the first's.
                self.ticks = 0;
                self.pb.set_position(self.done);
                self.message(format!("{} (attempt {attempt})", test.head()));
            }
            Event::Doing { test, what } => self.message(match test {
                Some(t) => t.line(what),
                None => (*what).to_string(),
            }),
            Event::Interval { test, second } => {
                self.ticks += 1;
                let planned = self.planned.get(test.key).copied().unwrap_or(0);
                self.pb.set_position(self.done + self.ticks.min(planned));
                self.message(test.line(format!(
                    "{:.0} tps, {:.2} ms",
                    second.tps, second.latency_mean_ms
                )));
            }
            Event::TestEnded { test, write, said } => {
                self.done += self.planned.get(test.key).copied().unwrap_or(0);
                self.pb.set_position(self.done);
                if *said {
                    self.say(&test.line(outcome_line(write)));
                }
            }
            Event::TargetStarted {
                target,
                settings,
                host_metrics,
                warnings,
            } => {
                if !settings.is_empty() {
                    self.say(&format!("target \"{target}\" started with {settings}"));
                }
                self.say(&format!(
                    "target \"{target}\": server host metrics from {host_metrics}"
                ));
                for w in *warnings {
                    self.say(&format!("warning: {w}"));
                }
            }
            Event::Outage { target, outage } => match outage {
                Outage::Unreachable { reason, wait } => self.say(&format!(
                    "target \"{target}\" is unreachable ({reason}); waiting up to {} for it \
                     to come back",
                    human_duration(*wait)
                )),
                Outage::Waiting { elapsed, wait } => self.message(format!(
                    "waiting for target \"{target}\" ({} of {})",
                    human_duration(*elapsed),
                    human_duration(*wait)
                )),
                Outage::Back { after, key } => self.say(&format!(
                    "target \"{target}\" is back after {:.0} s: running {key} again",
                    after.as_secs_f64()
                )),
                Outage::Down { message } => self.say(message),
            },
            Event::HookRan {
                test: None,
                leftover: Some(message),
                ..
            } => self.say(&format!("warning: {message}")),
            Event::Said { line } => self.say(line),
            Event::SetEnded { .. } => self.pb.finish_and_clear(),
            _ => {}
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        // An invocation ended by an error leaves no bar behind.
        self.pb.finish_and_clear();
    }
}
