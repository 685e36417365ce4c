//! The cancel requests of a stopped run: one for each client with a statement under way
//! on the server, each a CancelRequest on a short connection of its own. They are sent
//! from a few threads started for the purpose, so that neither the driver, which waits
//! meanwhile for the server's answers, nor the other requests wait for each round trip.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use pgsurge_wire::CancelToken;

/// Most threads one driver starts to send its cancel requests.
const SENDERS: usize = 8;

/// Cancel requests being sent.
pub(crate) struct CancelRequests {
    shared: Arc<Queue>,
}

/// The requests not sent yet, and the senders still at work.
struct Queue {
    tokens: Mutex<Vec<CancelToken>>,
    busy: AtomicUsize,
}

impl Queue {
    /// Sends requests until none is left.
    fn work(&self) {
        loop {
            let next = self
                .tokens
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .pop();
            match next {
                // Delivered or not, there is nothing more to do about it: a request
                // that cannot reach the server leaves the statement to end on its own.
                Some(token) => {
                    let _ = token.cancel();
                }
                None => return,
            }
        }
    }

    fn is_empty(&self) -> bool {
        self.tokens
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .is_empty()
    }
}

impl CancelRequests {
    /// Starts sending a cancel request for each of `tokens`. Should no thread start, the
    /// requests are sent before this returns.
    pub(crate) fn send(tokens: Vec<CancelToken>) -> CancelRequests {
        let senders = tokens.len().min(SENDERS);
        let shared = Arc::new(Queue {
            tokens: Mutex::new(tokens),
            busy: AtomicUsize::new(0),
        });
        for _ in 0..senders {
            let queue = Arc::clone(&shared);
            queue.busy.fetch_add(1, Ordering::SeqCst);
            let work = move || {
                queue.work();
                queue.busy.fetch_sub(1, Ordering::SeqCst);
            };
            // Not joined: a request to an unreachable server may take its whole
            // timeout, which the run does not wait for.
            let spawned = std::thread::Builder::new()
                .name("pgsurge-cancel".into())
                .spawn(work);
            if spawned.is_err() {
                shared.busy.fetch_sub(1, Ordering::SeqCst);
                break;
            }
        }
        if shared.busy.load(Ordering::SeqCst) == 0 {
            shared.work();
        }
        CancelRequests { shared }
    }

    /// Whether every request has been sent (and the server has taken it, or failed to).
    pub(crate) fn delivered(&self) -> bool {
        self.shared.busy.load(Ordering::SeqCst) == 0 && self.shared.is_empty()
    }
}
