//! The live view of a running campaign: a read-only page on a local address (the
//! loopback by default) that asks every second for the campaign's state, kept by a
//! consumer of the runner's events in the campaign's process, or read from the store
//! by `campaign watch` in another. Two routes: `/` (the page, its script and style
//! inline: nothing is fetched from the network) and `/state.json`.
//!
//! | module | owns |
//! |---|---|
//! | [`state`] | what the page shows, kept from the events ([`Live`], the consumer) |
//! | [`verdict`] | the verdicts of finished cells, judged by `analysis` as `compare` judges them |
//! | [`run`] | the page of one run (`bench --live`), from the engine's intervals |
//! | [`watch`] | the page of a campaign running in another process, from its store |
//! | `page` | the page itself |

#![warn(missing_docs)]

mod page;
pub mod run;
pub mod state;
pub mod verdict;
pub mod watch;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

pub use run::RunView;
pub use state::{Live, LiveState};
pub use watch::{watch, Watch};

/// The address `--live` binds when it is given none.
pub const DEFAULT_ADDR: &str = "127.0.0.1:8642";

/// The live view could not be served.
#[derive(Debug, thiserror::Error)]
pub enum LiveError {
    /// The address does not parse or cannot be bound.
    #[error("live view: cannot listen on {addr}: {message}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why.
        message: String,
    },
    /// The store cannot be read (it is not a results store, or a set asked for is
    /// not in it).
    #[error(transparent)]
    Store(#[from] pgsurge_store::StoreError),
    /// SQLite can read the store only as a snapshot, which would never show the
    /// campaign's new rows.
    #[error(
        "cannot watch {location}: this user may not write to its directory, so SQLite \
         can read the store only as a snapshot that never shows the campaign's new rows \
         (a store in WAL mode needs its -shm file beside it); run watch as a user who \
         may write to the directory, or copy the store somewhere writable to look at it \
         as it is"
    )]
    Snapshot {
        /// The store (password masked).
        location: String,
    },
    /// The store was written by a pgsurge that kept no live events.
    #[error(
        "results store {location} is at schema version {version}, which keeps no live \
         events: a campaign run by this pgsurge brings it up to date"
    )]
    NoLiveEvents {
        /// The store (password masked).
        location: String,
        /// Its schema version.
        version: i64,
    },
}

/// A live view being served; stopped when dropped.
pub struct LiveServer {
    server: Arc<tiny_http::Server>,
    addr: SocketAddr,
    thread: Option<JoinHandle<()>>,
}

impl LiveServer {
    /// The address it listens on (the port chosen when `:0` was asked for).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://127.0.0.1:8642/`.
    pub fn url(&self) -> String {
        format!("http://{}/", self.addr)
    }
}

impl Drop for LiveServer {
    fn drop(&mut self) {
        self.server.unblock();
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// Serves the page of `state` on `addr` (`host:port`; port 0 picks one).
pub fn serve(addr: &str, state: Arc<Mutex<LiveState>>) -> Result<LiveServer, LiveError> {
    let bind = |message: String| LiveError::Bind {
        addr: addr.to_string(),
        message,
    };
    let parsed: SocketAddr = addr.parse().map_err(|e| bind(format!("{e}")))?;
    let server = tiny_http::Server::http(parsed).map_err(|e| bind(e.to_string()))?;
    let bound = server
        .server_addr()
        .to_ip()
        .ok_or_else(|| bind("not an IP address".into()))?;
    let server = Arc::new(server);
    let serving = Arc::clone(&server);
    let thread = std::thread::Builder::new()
        .name("pgsurge-live".into())
        .spawn(move || {
            for request in serving.incoming_requests() {
                answer(request, &state);
            }
        })
        .map_err(|e| bind(e.to_string()))?;
    Ok(LiveServer {
        server,
        addr: bound,
        thread: Some(thread),
    })
}

/// Answers one request: the page, the state, or 404; anything but GET is refused.
fn answer(request: tiny_http::Request, state: &Mutex<LiveState>) {
    let header = |v: &str| {
        tiny_http::Header::from_bytes(&b"Content-Type"[..], v.as_bytes()).expect("a valid header")
    };
    let (status, body, kind) = match (request.method(), request.url()) {
        (tiny_http::Method::Get, "/") => (200, page::PAGE.to_string(), "text/html; charset=utf-8"),
        (tiny_http::Method::Get, "/state.json") => (200, Live::json(state), "application/json"),
        (tiny_http::Method::Get, _) => (404, "not found\n".into(), "text/plain"),
        _ => (405, "read-only\n".into(), "text/plain"),
    };
    let response = tiny_http::Response::from_string(body)
        .with_status_code(status)
        .with_header(header(kind))
        .with_header(
            tiny_http::Header::from_bytes(&b"Cache-Control"[..], &b"no-store"[..])
                .expect("a valid header"),
        );
    // A client gone before its answer is not the campaign's concern.
    let _ = request.respond(response);
}

/// `--live[=ADDR]` of a command that runs tests: the page served while they run, and
/// the consumer that feeds it. Without an address, nothing is served and it feeds no
/// one.
#[derive(Default)]
pub struct View {
    live: Live,
    server: Option<LiveServer>,
}

impl View {
    /// Serves the page on `addr` when there is one, saying where on stderr.
    pub fn start(addr: Option<&str>) -> Result<View, LiveError> {
        let live = Live::new();
        let server = addr.map(|a| serve(a, live.shared())).transpose()?;
        if let Some(s) = &server {
            eprintln!("live view: {}", s.url());
        }
        Ok(View { live, server })
    }

    /// The consumers to tell the run's events to: the page's, when it is served.
    pub fn consumers(&mut self) -> Vec<&mut dyn pgsurge_events::Consumer> {
        match self.server {
            Some(_) => vec![&mut self.live],
            None => Vec::new(),
        }
    }
}
