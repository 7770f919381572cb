//! Per-profile concurrency: a counting gate shared by every packet that uses a profile, and a
//! [`ChatModel`] wrapper that holds a place in it for the length of each call.
//!
//! Providers cap concurrent requests per key and local servers have a fixed number of slots;
//! a profile's `concurrency` says how many calls may be in flight through it at once, across
//! all packets of a run, so a wide plan queues instead of collecting rate-limit errors.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use super::{ChatModel, ChatRequest, ChatResponse, Delta, LlmError};

/// How often a waiting call asks whether to keep waiting.
const POLL: Duration = Duration::from_millis(50);

/// A counting semaphore: at most `capacity` holders at once.
#[derive(Debug)]
pub struct Gate {
    capacity: usize,
    state: Mutex<GateState>,
    freed: Condvar,
}

#[derive(Debug, Default)]
struct GateState {
    held: usize,
    peak: usize,
}

/// A place in a [`Gate`], given back when dropped.
#[derive(Debug)]
pub struct Permit<'g> {
    gate: &'g Gate,
}

impl Gate {
    /// Returns a gate admitting `capacity` holders at once (at least one).
    pub fn new(capacity: usize) -> Gate {
        Gate {
            capacity: capacity.max(1),
            state: Mutex::new(GateState::default()),
            freed: Condvar::new(),
        }
    }

    /// Waits for a place and returns it; `keep_waiting` is asked every few tens of
    /// milliseconds while the gate is full, and `None` is returned when it says no.
    pub fn acquire(&self, keep_waiting: &mut dyn FnMut() -> bool) -> Option<Permit<'_>> {
        let take = |state: &mut GateState| {
            state.held += 1;
            state.peak = state.peak.max(state.held);
        };
        loop {
            let mut state = self.state.lock().unwrap_or_else(PoisonError::into_inner);
            if state.held >= self.capacity {
                state = self
                    .freed
                    .wait_timeout(state, POLL)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            if state.held < self.capacity {
                take(&mut state);
                return Some(Permit { gate: self });
            }
            drop(state);
            if !keep_waiting() {
                return None;
            }
        }
    }

    /// Returns the most holders seen at once.
    pub fn peak(&self) -> usize {
        self.state
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .peak
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut state = self
            .gate
            .state
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        state.held = state.held.saturating_sub(1);
        self.gate.freed.notify_one();
    }
}

/// The gates of a run's profiles, by profile name, created on first use.
#[derive(Debug, Default)]
pub struct Gates {
    by_profile: Mutex<HashMap<String, Arc<Gate>>>,
}

impl Gates {
    /// Returns the gate of profile `name`, creating it with `capacity` places if it is new.
    pub fn get(&self, name: &str, capacity: usize) -> Arc<Gate> {
        self.by_profile
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name.to_string())
            .or_insert_with(|| Arc::new(Gate::new(capacity)))
            .clone()
    }
}

/// A model whose calls each hold a place in a shared gate.
///
/// While a call waits for its place it sends [`Delta::Queued`] to the caller every few tens
/// of milliseconds; the caller's `false` answer cancels the wait like any streamed call.
pub struct Limited {
    inner: Box<dyn ChatModel>,
    gate: Arc<Gate>,
}

impl Limited {
    /// Returns `inner` limited by `gate`.
    pub fn new(inner: Box<dyn ChatModel>, gate: Arc<Gate>) -> Limited {
        Limited { inner, gate }
    }
}

impl ChatModel for Limited {
    fn chat(
        &self,
        req: &ChatRequest,
        on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    ) -> Result<ChatResponse, LlmError> {
        let Some(_permit) = self.gate.acquire(&mut || on_delta(Delta::Queued)) else {
            return Err(LlmError::Cancelled {
                model: self.inner.label(),
            });
        };
        self.inner.chat(req, on_delta)
    }

    fn label(&self) -> String {
        self.inner.label()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::time::Instant;

    #[test]
    fn the_gate_admits_capacity_holders_and_lets_a_stop_end_the_wait() {
        let gate = Gate::new(2);
        let stop = AtomicBool::new(false);
        let go_on = || !stop.load(Ordering::SeqCst);
        let a = gate.acquire(&mut go_on.clone()).unwrap();
        let _b = gate.acquire(&mut go_on.clone()).unwrap();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| gate.acquire(&mut go_on.clone()).map(|_| ()));
            std::thread::sleep(Duration::from_millis(120));
            let t = Instant::now();
            drop(a);
            assert!(waiter.join().unwrap().is_some());
            assert!(t.elapsed() < Duration::from_millis(500));
        });
        assert_eq!(gate.peak(), 2);
        let _c = gate.acquire(&mut go_on.clone()).unwrap();
        stop.store(true, Ordering::SeqCst);
        assert!(gate.acquire(&mut go_on.clone()).is_none());
    }
}
