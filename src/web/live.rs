//! What the page sees change: server-sent events whenever the run store changes, and the plan
//! a `start --ui` process waits to have approved from the page.

use std::io::Write;
use std::sync::atomic::Ordering;
use std::sync::{Condvar, Mutex};
use std::time::{Duration, Instant};

use git_orchestra::orchestrator::Approval;

use super::Shared;
use super::http::{Reply, Request};

/// How often the stream looks at the run store.
const TICK: Duration = Duration::from_millis(200);
/// A comment line this often keeps proxies and the browser from closing an idle stream.
const KEEP_ALIVE: Duration = Duration::from_secs(15);
/// Live streams served at once (pages open); each holds a connection, and the connections
/// are capped ([`super::http::MAX_CONNECTIONS`]), so streams must leave room for calls.
const MAX_STREAMS: usize = 8;

/// The approval a `start --ui` process waits on, shared with its web view.
#[derive(Default)]
pub struct Live {
    state: Mutex<Waiting>,
    changed: Condvar,
}

#[derive(Default)]
struct Waiting {
    /// The plan shown for approval and the problems of the last edit, while a decision is
    /// awaited.
    plan: Option<(String, Vec<String>)>,
    decision: Option<Approval>,
    /// Bumped whenever the waiting plan changes, so streams tell the page.
    version: u64,
}

impl Live {
    /// Shows `plan` (with the problems of the last edit) on the page and waits for its
    /// decision, or for `stop`.
    pub fn wait_for_approval(
        &self,
        plan: &str,
        problems: &[String],
        stop: &dyn Fn() -> bool,
    ) -> Approval {
        let mut w = self.state.lock().unwrap_or_else(|p| p.into_inner());
        w.plan = Some((plan.to_string(), problems.to_vec()));
        w.decision = None;
        w.version += 1;
        loop {
            if let Some(d) = w.decision.take() {
                w.plan = None;
                w.version += 1;
                return d;
            }
            if stop() {
                w.plan = None;
                return Approval::Reject;
            }
            w = self
                .changed
                .wait_timeout(w, Duration::from_millis(200))
                .unwrap_or_else(|p| p.into_inner())
                .0;
        }
    }

    /// Returns the plan waiting for approval in this process, with the last edit's problems.
    pub fn waiting(&self) -> Option<(String, Vec<String>)> {
        self.state
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .plan
            .clone()
    }

    /// Gives the waiting approval its decision; false when nothing waits here.
    pub fn decide(&self, decision: Approval) -> bool {
        let mut w = self.state.lock().unwrap_or_else(|p| p.into_inner());
        if w.plan.is_none() {
            return false;
        }
        w.decision = Some(decision);
        self.changed.notify_all();
        true
    }

    fn version(&self) -> u64 {
        self.state.lock().unwrap_or_else(|p| p.into_inner()).version
    }
}

/// A fingerprint of the run store's files: it changes with every journaled event, engine or
/// workflow (SQLite appends each transaction to the write-ahead log).
fn fingerprint(shared: &Shared) -> Vec<(u64, Option<std::time::SystemTime>)> {
    let dir = shared.repo.common_dir.join("orchestra");
    ["orchestra.db", "orchestra.db-wal"]
        .iter()
        .map(|f| match std::fs::metadata(dir.join(f)) {
            Ok(m) => (m.len(), m.modified().ok()),
            Err(_) => (0, None),
        })
        .collect()
}

/// Counts a live stream for as long as it lasts.
struct Stream<'a>(&'a Shared);

impl Drop for Stream<'_> {
    fn drop(&mut self) {
        self.0.streams.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Streams `data: change` to the page whenever the journal changes, until the page goes;
/// `headers` go with the stream's head.
pub(super) fn stream_events(shared: &Shared, request: Request, headers: &[(&str, &str)]) {
    if shared.streams.fetch_add(1, Ordering::SeqCst) >= MAX_STREAMS {
        shared.streams.fetch_sub(1, Ordering::SeqCst);
        let reply = Reply::new(503, "too many pages follow this view live; close some\n");
        request.respond(reply);
        return;
    }
    let _counted = Stream(shared);
    let head = headers.iter().fold(
        Reply::new(200, "").with_header("Content-Type", "text/event-stream"),
        |r, (k, v)| r.with_header(k, v),
    );
    let Some(mut stream) = request.into_stream(&head) else {
        return;
    };
    let mut last = (fingerprint(shared), shared.live.version());
    let mut quiet_since = Instant::now();
    if stream.write_all(b"retry: 500\ndata: hello\n\n").is_err() || stream.flush().is_err() {
        return;
    }
    loop {
        std::thread::sleep(TICK);
        let now = (fingerprint(shared), shared.live.version());
        let frame: &[u8] = if now != last {
            last = now;
            quiet_since = Instant::now();
            b"data: change\n\n"
        } else if quiet_since.elapsed() > KEEP_ALIVE {
            quiet_since = Instant::now();
            b": still here\n\n"
        } else {
            continue;
        };
        if stream.write_all(frame).is_err() || stream.flush().is_err() {
            return;
        }
    }
}
