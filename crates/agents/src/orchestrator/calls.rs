//! Model calls in flight, for every role alike: each call journals when it starts, when its
//! server cannot be reached and when it ends, so `status`, the web view and the terminal of
//! the driving process all read the same answer to "what is the run waiting for" from the
//! store — a slow local model that says nothing for minutes is then never silent.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use serde::Serialize;

use super::replay::SharedJournal;
use super::start_journal::{Entry, WorkflowEvent, kind};

/// Seconds a call waits before the first "waiting" line, and between later ones.
pub const WAIT_FIRST_SECS: u64 = 15;
/// See [`WAIT_FIRST_SECS`].
pub const WAIT_EVERY_SECS: u64 = 30;

/// A model call that has started and not ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct OpenCall {
    pub call: String,
    pub role: String,
    pub model: String,
    /// When it was sent, in ms since the epoch.
    pub since_ms: i64,
    pub prompt_tokens: u64,
    /// Set while its server cannot be reached: the last announced pause, in seconds.
    pub unreachable_retry_secs: Option<u64>,
}

impl OpenCall {
    /// Returns the line shown to people, e.g. `planner waiting for the model
    /// (openai-compatible:m) for 45s, prompt ~3200 tokens`, at `now_ms`.
    pub fn line(&self, now_ms: i64) -> String {
        let secs = ((now_ms - self.since_ms).max(0) / 1000) as u64;
        let mut line = format!(
            "{} waiting for the model ({}) for {secs}s, prompt ~{} tokens",
            self.role, self.model, self.prompt_tokens
        );
        if let Some(n) = self.unreachable_retry_secs {
            line.push_str(&format!("; model server unreachable, retrying in {n} s"));
        }
        line
    }
}

/// The kinds of workflow events that open and close model calls.
pub(super) const CALL_KINDS: [&str; 4] = [
    kind::MODEL_CALL_STARTED,
    kind::MODEL_UNREACHABLE,
    kind::MODEL_CALL_ENDED,
    kind::DRIVING,
];

/// The model calls in flight, as the journal's entries so far tell them; fed entry by entry
/// ([`Ledger::apply`]), so a watcher reads only what was journaled since it last looked.
#[derive(Debug, Default)]
pub struct Ledger {
    /// Open calls by id, with how many times each found its server unreachable.
    open: BTreeMap<String, (OpenCall, usize)>,
}

impl Ledger {
    /// Takes one journal entry into account; entries of other kinds change nothing.
    pub fn apply(&mut self, e: &Entry) {
        match &e.event {
            WorkflowEvent::ModelCallStarted {
                call,
                role,
                model,
                prompt_tokens,
            } => {
                let open = OpenCall {
                    call: call.clone(),
                    role: role.clone(),
                    model: model.clone(),
                    since_ms: e.ts_ms,
                    prompt_tokens: *prompt_tokens,
                    unreachable_retry_secs: None,
                };
                self.open.insert(call.clone(), (open, 0));
            }
            WorkflowEvent::ModelUnreachable {
                call,
                retry_in_secs,
                ..
            } => {
                if let Some((c, outages)) = self.open.get_mut(call.as_str()) {
                    c.unreachable_retry_secs = Some(*retry_in_secs);
                    *outages += 1;
                }
            }
            WorkflowEvent::ModelCallEnded { call, .. } => {
                self.open.remove(call.as_str());
            }
            // A new driver: whatever its predecessor had in flight is gone.
            WorkflowEvent::Driving { .. } => self.open.clear(),
            _ => {}
        }
    }

    /// Returns the open calls, oldest first, each with how many times its server was
    /// unreachable.
    pub fn open(&self) -> Vec<(OpenCall, usize)> {
        let mut calls: Vec<(OpenCall, usize)> = self.open.values().cloned().collect();
        calls.sort_by_key(|(c, _)| (c.since_ms, c.call.clone()));
        calls
    }
}

/// Returns the calls of a run's journal `entries` that started and have not ended, oldest
/// first. A call of a driver that died stays open in the journal; callers that know no
/// process drives the run ignore them.
pub fn open_calls(entries: &[Entry]) -> Vec<OpenCall> {
    let mut ledger = Ledger::default();
    for e in entries {
        ledger.apply(e);
    }
    ledger.open().into_iter().map(|(c, _)| c).collect()
}

/// Returns a new call id, unique within this process and across its restarts.
pub(super) fn next_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    format!(
        "{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    )
}

/// Appends `event` to `journal` as a notice; a journal that cannot be written costs a
/// progress line, never the call.
pub(super) fn journal(journal: &SharedJournal, event: &WorkflowEvent) {
    if let Ok(j) = journal.lock()
        && let Err(e) = j.notice(event)
    {
        tracing::warn!(error = %e, "model call not journaled");
    }
}

/// Tells `say`, until `done` is raised, every call of `journal` that has waited `first`
/// seconds (`None`: [`WAIT_FIRST_SECS`]) and then every twice as long, and at once every time
/// a call's server is unreachable. Looks a few times a second.
pub(super) fn watch(
    journal: &SharedJournal,
    first: Option<u64>,
    done: &AtomicBool,
    say: &dyn Fn(&str),
) {
    let first = first.unwrap_or(WAIT_FIRST_SECS).max(1);
    let every = if first == WAIT_FIRST_SECS {
        WAIT_EVERY_SECS
    } else {
        first * 2
    };
    // Lines printed per call, and the unreachable notices already told.
    let mut printed: BTreeMap<String, (u64, usize)> = BTreeMap::new();
    // The calls as the entries read so far tell them: each look reads only the entries of the
    // calls' kinds journaled since the last, so it costs the same however long the run is.
    let mut ledger = Ledger::default();
    let mut seen = 0;
    while !done.load(Ordering::SeqCst) {
        let entries = journal
            .lock()
            .ok()
            .and_then(|j| j.entries_of(&CALL_KINDS, seen).ok())
            .unwrap_or_default();
        for e in &entries {
            ledger.apply(e);
            seen = seen.max(e.seq);
        }
        let now = orchestra_sys::exec::now_ms();
        let open = ledger.open();
        printed.retain(|id, _| open.iter().any(|(c, _)| &c.call == id));
        for (c, outages) in &open {
            let (lines, told) = printed.entry(c.call.clone()).or_default();
            let outages = *outages;
            if outages > *told {
                *told = outages;
                say(&format!(
                    "{}: model server unreachable, retrying in {} s",
                    c.role,
                    c.unreachable_retry_secs.unwrap_or(0)
                ));
            }
            let secs = ((now - c.since_ms).max(0) / 1000) as u64;
            if secs >= first + *lines * every {
                *lines = 1 + secs.saturating_sub(first) / every;
                say(&c.line(now));
            }
        }
        sleep_unless(done, Duration::from_millis(250));
    }
}

/// Sleeps `d` in short slices, returning early once `done` is raised.
fn sleep_unless(done: &AtomicBool, d: Duration) {
    let slice = Duration::from_millis(50);
    let mut left = d;
    while !left.is_zero() && !done.load(Ordering::SeqCst) {
        std::thread::sleep(slice.min(left));
        left = left.saturating_sub(slice);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(ts_ms: i64, event: WorkflowEvent) -> Entry {
        Entry {
            seq: ts_ms,
            ts_ms,
            event,
        }
    }

    #[test]
    fn a_call_is_open_from_its_start_to_its_end_and_says_when_unreachable() {
        let started = |call: &str| WorkflowEvent::ModelCallStarted {
            call: call.into(),
            role: "planner".into(),
            model: "m".into(),
            prompt_tokens: 900,
        };
        let mut entries = vec![
            entry(1_000, started("a")),
            entry(2_000, started("b")),
            entry(
                3_000,
                WorkflowEvent::ModelUnreachable {
                    call: "b".into(),
                    role: "planner".into(),
                    model: "m".into(),
                    retry_in_secs: 4,
                },
            ),
            entry(
                4_000,
                WorkflowEvent::ModelCallEnded {
                    call: "a".into(),
                    role: "planner".into(),
                    ms: 3_000,
                    outcome: "answered".into(),
                },
            ),
        ];
        let open = open_calls(&entries);
        assert_eq!(open.len(), 1);
        assert_eq!(
            open[0].line(47_000),
            "planner waiting for the model (m) for 45s, prompt ~900 tokens; model server unreachable, retrying in 4 s"
        );
        entries.push(entry(5_000, WorkflowEvent::Driving { pid: 1 }));
        assert!(open_calls(&entries).is_empty());
    }
}
