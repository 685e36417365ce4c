//! The one way these tests run a campaign: its file written beside its store,
//! `pgsurge campaign run FILE --store STORE` run to its end or started in the
//! background and waited on, and the tests the store holds read back as `results
//! export` gives them.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The pgsurge binary, with no store named by the environment (`PGSURGE_STORE`): each
/// test names its own.
pub fn pgsurge() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_pgsurge"));
    c.env_remove("PGSURGE_STORE");
    c
}

/// Everything a finished command said, for an assertion's message.
pub fn said(o: &Output) -> String {
    format!(
        "exit {:?}\n--- stdout\n{}\n--- stderr\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// A campaign file and the store its tests go to.
#[derive(Debug, Clone)]
pub struct Campaign {
    /// The campaign file.
    pub file: PathBuf,
    /// The store: a SQLite file beside the campaign file unless named otherwise.
    pub store: String,
}

impl Campaign {
    /// Writes `body` as `dir/c.toml`; its store is `dir/r.db`.
    pub fn write(dir: &Path, body: &str) -> Campaign {
        let file = dir.join("c.toml");
        std::fs::write(&file, body).unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
        let store = dir.join("r.db").display().to_string();
        Campaign { file, store }
    }

    /// Writes `body` as `dir/NAME.toml`; its store is `dir/NAME.db` (for a test that
    /// runs several campaigns from one directory).
    pub fn write_named(dir: &Path, name: &str, body: &str) -> Campaign {
        let file = dir.join(format!("{name}.toml"));
        std::fs::write(&file, body).unwrap_or_else(|e| panic!("writing {}: {e}", file.display()));
        let store = dir.join(format!("{name}.db")).display().to_string();
        Campaign { file, store }
    }

    /// The same campaign into the store `store` (a path or a PostgreSQL URL).
    pub fn with_store(&self, store: impl Into<String>) -> Campaign {
        Campaign {
            file: self.file.clone(),
            store: store.into(),
        }
    }

    /// The campaign file's path, as an argument.
    pub fn file_arg(&self) -> &str {
        self.file.to_str().expect("a UTF-8 path")
    }

    /// `pgsurge campaign run FILE --store STORE EXTRA…`, not started yet.
    pub fn command(&self, extra: &[&str]) -> Command {
        let mut c = pgsurge();
        c.args(["campaign", "run", self.file_arg(), "--store", &self.store])
            .args(extra)
            .stdin(Stdio::null());
        c
    }

    /// Runs it to its end: what it said and how it ended.
    pub fn run(&self, extra: &[&str]) -> Output {
        self.command(extra)
            .output()
            .expect("pgsurge campaign run starts")
    }

    /// Runs it to its end, which must be a success; what it said on stderr.
    pub fn run_ok(&self, extra: &[&str]) -> String {
        let out = self.run(extra);
        assert!(out.status.success(), "{}", said(&out));
        String::from_utf8_lossy(&out.stderr).into_owned()
    }

    /// Starts it in the background, its stdout and stderr piped.
    pub fn spawn(&self, extra: &[&str]) -> Child {
        self.command(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("pgsurge campaign run starts")
    }

    /// The tests its store holds, as `results export --format json` gives them.
    pub fn runs(&self) -> Vec<serde_json::Value> {
        export_runs(&self.store)
    }

    /// How many tests its store holds so far; `None` while there is no store to read
    /// yet (the campaign is making it).
    pub fn stored(&self) -> Option<usize> {
        if !self.store.contains("://") && !Path::new(&self.store).exists() {
            return None;
        }
        let out = export(&self.store);
        if !out.status.success() {
            return None;
        }
        runs_of(&out.stdout).map(|runs| runs.len())
    }

    /// Waits, for two minutes at most, until its store holds `n` tests while
    /// `campaign` (started from it) runs.
    pub fn wait_until_stored(&self, campaign: &mut Child, n: usize) {
        let what = format!("{n} tests were stored in {}", self.store);
        wait_while_running(campaign, &what, Duration::from_secs(120), || {
            self.stored().is_some_and(|stored| stored >= n)
        });
    }
}

/// `pgsurge results export --format json --store STORE`, as it ended.
fn export(store: &str) -> Output {
    pgsurge()
        .args(["results", "export", "--format", "json", "--store", store])
        .output()
        .expect("pgsurge results export starts")
}

/// The runs of an export document (`{"format": "pgsurge-export", "runs": [...]}`).
fn runs_of(bytes: &[u8]) -> Option<Vec<serde_json::Value>> {
    let doc: serde_json::Value = serde_json::from_slice(bytes).ok()?;
    if doc["format"] != "pgsurge-export" {
        return None;
    }
    doc["runs"].as_array().cloned()
}

/// The tests the store `store` holds, as `results export --format json` gives them;
/// the export must succeed and be an export document.
pub fn export_runs(store: &str) -> Vec<serde_json::Value> {
    let out = export(store);
    assert!(out.status.success(), "{}", said(&out));
    runs_of(&out.stdout).unwrap_or_else(|| panic!("not an export document: {}", said(&out)))
}

/// Checks `ready` every 100 ms until it holds, while `campaign` runs; panics, saying
/// `what` was awaited, when the campaign ended first or after `limit`.
pub fn wait_while_running(
    campaign: &mut Child,
    what: &str,
    limit: Duration,
    mut ready: impl FnMut() -> bool,
) {
    let deadline = Instant::now() + limit;
    loop {
        if ready() {
            return;
        }
        if let Ok(Some(status)) = campaign.try_wait() {
            panic!("the campaign ended ({status}) before {what}");
        }
        assert!(Instant::now() < deadline, "{what}: not within {limit:?}");
        std::thread::sleep(Duration::from_millis(100));
    }
}
