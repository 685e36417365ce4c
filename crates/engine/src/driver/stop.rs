//! A stopped run: every client ends where it is, its statements under way cancelled
//! and their answers awaited (within a grace and a limit) before its connection closes.

use std::io;
use std::time::{Duration, Instant};

use mio::{Events, Poll};

use super::{close, fill, flush, LoopEnd, Slot};
use crate::cancel::CancelRequests;
use crate::client::ScriptHost;

/// How long a stopped run waits, once its cancel requests are delivered, for the
/// server's answers to the cancelled statements, before it closes their connections
/// anyway (a server too busy to act on a cancel at once).
const CANCEL_GRACE: Duration = Duration::from_secs(1);

/// Longest wait of a stopped run for its clients, however slow the cancel requests
/// themselves are (a server that does not accept connections).
const STOP_LIMIT: Duration = Duration::from_secs(3);

/// The stop flag was raised: every client ends where it is, and no transaction it has
/// under way is counted (nor reported as failed). Clients between statements, in a
/// `\sleep` or a `-R` wait end at once. For those with a statement under way on the
/// server a cancel request is sent, and their connections are closed once the server
/// has answered all they sent (it is then idle, their transactions rolled back), or
/// [`CANCEL_GRACE`] after the requests were delivered, within [`STOP_LIMIT`].
#[cold]
#[inline(never)]
pub(super) fn stop_now<H: ScriptHost>(
    poll: &mut Poll,
    events: &mut Events,
    slots: &mut [Slot<H>],
) -> LoopEnd {
    let started = Instant::now();
    let mut tokens = Vec::new();
    // Per slot, the ReadyForQuery messages still awaited before its connection closes.
    let mut owed = vec![0u32; slots.len()];
    let mut awaited = 0usize;
    for (i, s) in slots.iter_mut().enumerate() {
        if s.done {
            continue;
        }
        let pipeline = s.client.in_pipeline();
        let mut expect = s.client.unanswered_syncs();
        if let (Some(c), true) = (&s.conn, expect > 0 || pipeline) {
            if !s.io.lost {
                tokens.push(c.cancel_token());
                // Only a request sent whole makes the server answer; one cut short
                // leaves it waiting for the rest, and is not sent further.
                let mut sent = s.out_pos >= s.io.out.len();
                if sent && pipeline {
                    // Statements of a pipeline are answered up to a Sync.
                    pgsurge_wire::codec::append::sync(&mut s.io.out);
                    expect += 1;
                    sent = flush(s) && s.out_pos >= s.io.out.len();
                }
                if sent && expect > 0 {
                    owed[i] = expect;
                    awaited += 1;
                    continue;
                }
            }
        }
        end_stopped(poll, s);
    }
    let cancels = CancelRequests::send(tokens);
    // Answers that arrived before the stop was noticed raise no new event: read them now.
    for (i, s) in slots.iter_mut().enumerate() {
        if owed[i] > 0 && answered(s, &mut owed[i]) {
            end_stopped(poll, s);
            awaited -= 1;
        }
    }
    let mut delivered_at = None;
    while awaited > 0 {
        let now = Instant::now();
        if delivered_at.is_none() && cancels.delivered() {
            delivered_at = Some(now);
        }
        let limit = started + STOP_LIMIT;
        let deadline = delivered_at.map_or(limit, |t: Instant| (t + CANCEL_GRACE).min(limit));
        if now >= deadline {
            break;
        }
        // While requests are still being sent, look again soon to start the grace.
        let timeout = match delivered_at {
            Some(_) => deadline - now,
            None => (deadline - now).min(Duration::from_millis(5)),
        };
        if let Err(e) = poll.poll(events, Some(timeout)) {
            if e.kind() != io::ErrorKind::Interrupted {
                break;
            }
            continue;
        }
        for ev in events.iter() {
            let i = ev.token().0;
            let (Some(s), Some(o)) = (slots.get_mut(i), owed.get_mut(i)) else {
                continue;
            };
            if *o > 0 && !s.done && answered(s, o) {
                end_stopped(poll, s);
                awaited -= 1;
            }
        }
    }
    for s in slots.iter_mut().filter(|s| !s.done) {
        end_stopped(poll, s);
    }
    LoopEnd::Stopped
}

/// Reads what the server sent a stopped client and counts the ReadyForQuery messages
/// in it against `owed`: true once none is owed any more, or the connection is gone.
/// The rest of the answers is dropped unread: nothing of them is counted.
fn answered<H>(s: &mut Slot<H>, owed: &mut u32) -> bool {
    if !fill(s, false) {
        return true;
    }
    let io = &mut s.io;
    let mut at = io.in_pos;
    while let Some(header) = io.inbuf.get(at..at + 5) {
        let len = u32::from_be_bytes([header[1], header[2], header[3], header[4]]) as usize;
        if len < 4 {
            // Not the protocol: nothing more can be read from this connection.
            return true;
        }
        if io.inbuf.len() - at <= len {
            break;
        }
        if header[0] == b'Z' {
            *owed = owed.saturating_sub(1);
        }
        at += 1 + len;
    }
    io.in_pos = at;
    io.compact();
    *owed == 0
}

/// Ends a client of a stopped run: its connection closes (the server rolls back what
/// it left open), and it is done.
fn end_stopped<H>(poll: &Poll, s: &mut Slot<H>) {
    close(poll, s);
    s.done = true;
    s.runnable = false;
}
