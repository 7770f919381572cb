//! Per-profile concurrency: a counting gate shared by every packet that uses a profile, and a
//! [`ChatModel`] wrapper that holds a place in it for the length of each call.
//!
//! Providers cap concurrent requests per key and local servers have a fixed number of slots;
//! a profile's `concurrency` says how many calls may be in flight through it at once, across
//! all packets of a run, so a wide plan queues instead of collecting rate-limit errors.
//!
//! The configured figure is a ceiling, not a promise: the gate adapts (AIMD, as TCP does). A
//! rate-limited call halves the effective limit (never below one) for every packet sharing the
//! profile; a run of successful calls grows it back by one, up to the ceiling. Only calls that
//! started under the current limit can shrink it, so a burst of 429s from calls admitted
//! together halves it once, not once per call. Each change is reported to the gate's listener
//! (the orchestrator journals it), because a run that slowed down should say why.

use std::collections::HashMap;
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::Duration;

use super::{ChatModel, ChatRequest, ChatResponse, Delta, LlmError};

/// How often a waiting call asks whether to keep waiting.
const POLL: Duration = Duration::from_millis(50);

/// Successful calls in a row, per place of the current limit, before the limit grows by one.
pub const DEFAULT_RECOVER_AFTER: usize = 2;

/// Why a gate's effective limit changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitCause {
    /// A call was answered with HTTP 429: the limit was halved.
    RateLimit,
    /// Enough calls in a row succeeded: the limit grew by one.
    Recovery,
}

/// A change of a profile's effective concurrency.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LimitChange {
    pub profile: String,
    pub from: usize,
    pub to: usize,
    pub cause: LimitCause,
}

impl std::fmt::Display for LimitChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let why = match self.cause {
            LimitCause::RateLimit => "after rate limit",
            LimitCause::Recovery => "after successful calls",
        };
        write!(
            f,
            "{}: concurrency {} → {} {why}",
            self.profile, self.from, self.to
        )
    }
}

/// Receives every change of a gate's effective limit.
pub type LimitListener = Arc<dyn Fn(&LimitChange) + Send + Sync>;

/// A counting semaphore whose capacity adapts to rate limits: at most `limit` holders at once,
/// `limit` between one and the configured capacity.
pub struct Gate {
    profile: String,
    capacity: usize,
    recover_after: usize,
    state: Mutex<GateState>,
    freed: Condvar,
    listener: Option<LimitListener>,
}

impl std::fmt::Debug for Gate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gate")
            .field("profile", &self.profile)
            .field("capacity", &self.capacity)
            .field("state", &self.state)
            .finish()
    }
}

#[derive(Debug, Default)]
struct GateState {
    held: usize,
    peak: usize,
    /// The effective limit.
    limit: usize,
    /// Successful calls since the last change.
    successes: usize,
    /// Bumped on every decrease: a permit from an older epoch cannot decrease again.
    epoch: u64,
}

/// A place in a [`Gate`], given back when dropped.
#[derive(Debug)]
pub struct Permit<'g> {
    gate: &'g Gate,
    epoch: u64,
}

impl Gate {
    /// Returns a gate admitting `capacity` holders at once (at least one).
    pub fn new(capacity: usize) -> Gate {
        Gate::named("", capacity, DEFAULT_RECOVER_AFTER, None)
    }

    /// Returns the gate of profile `profile`: `capacity` places at most, growing back by one
    /// after `recover_after` × limit successes in a row, each change told to `listener`.
    pub fn named(
        profile: &str,
        capacity: usize,
        recover_after: usize,
        listener: Option<LimitListener>,
    ) -> Gate {
        let capacity = capacity.max(1);
        Gate {
            profile: profile.to_string(),
            capacity,
            recover_after: recover_after.max(1),
            state: Mutex::new(GateState {
                limit: capacity,
                ..GateState::default()
            }),
            freed: Condvar::new(),
            listener,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, GateState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Waits for a place and returns it; `keep_waiting` is asked every few tens of
    /// milliseconds while the gate is full, and `None` is returned when it says no.
    pub fn acquire(&self, keep_waiting: &mut dyn FnMut() -> bool) -> Option<Permit<'_>> {
        loop {
            let mut state = self.lock();
            if state.held >= state.limit {
                state = self
                    .freed
                    .wait_timeout(state, POLL)
                    .unwrap_or_else(PoisonError::into_inner)
                    .0;
            }
            if state.held < state.limit {
                state.held += 1;
                state.peak = state.peak.max(state.held);
                return Some(Permit {
                    gate: self,
                    epoch: state.epoch,
                });
            }
            drop(state);
            if !keep_waiting() {
                return None;
            }
        }
    }

    /// Returns the most holders seen at once.
    pub fn peak(&self) -> usize {
        self.lock().peak
    }

    /// Returns the current effective limit.
    pub fn limit(&self) -> usize {
        self.lock().limit
    }

    /// Returns the configured ceiling.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    fn tell(&self, change: Option<LimitChange>) {
        if let (Some(change), Some(listener)) = (change, &self.listener) {
            listener(&change);
        }
    }
}

impl Permit<'_> {
    /// Reports that the call holding this place was rate limited: halves the limit unless a
    /// call admitted no earlier than this one already did.
    pub fn rate_limited(&self) {
        let gate = self.gate;
        let change = {
            let mut state = gate.lock();
            state.successes = 0;
            if state.epoch != self.epoch {
                None
            } else {
                state.epoch += 1;
                let from = state.limit;
                state.limit = (from / 2).max(1);
                (state.limit != from).then(|| LimitChange {
                    profile: gate.profile.clone(),
                    from,
                    to: state.limit,
                    cause: LimitCause::RateLimit,
                })
            }
        };
        gate.tell(change);
    }

    /// Reports that the call holding this place succeeded: after a run of successes the
    /// limit grows by one, up to the capacity.
    pub fn succeeded(&self) {
        let gate = self.gate;
        let change = {
            let mut state = gate.lock();
            state.successes += 1;
            if state.limit < gate.capacity && state.successes >= gate.recover_after * state.limit {
                state.successes = 0;
                let from = state.limit;
                state.limit += 1;
                gate.freed.notify_all();
                Some(LimitChange {
                    profile: gate.profile.clone(),
                    from,
                    to: state.limit,
                    cause: LimitCause::Recovery,
                })
            } else {
                None
            }
        };
        gate.tell(change);
    }
}

impl Drop for Permit<'_> {
    fn drop(&mut self) {
        let mut state = self.gate.lock();
        state.held = state.held.saturating_sub(1);
        self.gate.freed.notify_one();
    }
}

/// The gates of a run's profiles, by profile name, created on first use.
#[derive(Default)]
pub struct Gates {
    by_profile: Mutex<HashMap<String, Arc<Gate>>>,
    recover_after: Option<usize>,
    listener: Option<LimitListener>,
}

impl std::fmt::Debug for Gates {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Gates")
            .field("by_profile", &self.by_profile)
            .finish()
    }
}

impl Gates {
    /// Returns gates whose limit changes are told to `listener`.
    pub fn with_listener(listener: LimitListener) -> Gates {
        Gates {
            listener: Some(listener),
            ..Gates::default()
        }
    }

    /// Sets how many successes per place of the limit grow it by one (default
    /// [`DEFAULT_RECOVER_AFTER`]); affects gates created afterwards.
    pub fn recover_after(mut self, n: usize) -> Gates {
        self.recover_after = Some(n);
        self
    }

    /// Returns the gate of profile `name`, creating it with `capacity` places if it is new.
    pub fn get(&self, name: &str, capacity: usize) -> Arc<Gate> {
        self.by_profile
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(name.to_string())
            .or_insert_with(|| {
                Arc::new(Gate::named(
                    name,
                    capacity,
                    self.recover_after.unwrap_or(DEFAULT_RECOVER_AFTER),
                    self.listener.clone(),
                ))
            })
            .clone()
    }
}

/// A model whose calls each hold a place in a shared gate, and tell it how they went.
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
        let Some(permit) = self.gate.acquire(&mut || on_delta(Delta::Queued)) else {
            return Err(LlmError::Cancelled {
                model: self.inner.label(),
            });
        };
        let result = self.inner.chat(req, on_delta);
        match &result {
            Ok(_) => permit.succeeded(),
            Err(LlmError::RateLimited { .. }) => permit.rate_limited(),
            Err(_) => {}
        }
        result
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

    #[test]
    fn rate_limits_halve_the_limit_once_per_burst_and_successes_grow_it_back() {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        let listener: LimitListener = Arc::new(move |c: &LimitChange| {
            log.lock().unwrap().push(c.to_string());
        });
        let gate = Gate::named("openai-main", 8, 1, Some(listener));
        let mut go = || true;
        // Three calls admitted together are all rate limited: one halving, not three.
        let burst: Vec<_> = (0..3).map(|_| gate.acquire(&mut go).unwrap()).collect();
        for p in &burst {
            p.rate_limited();
        }
        drop(burst);
        assert_eq!(gate.limit(), 4);
        // A call admitted after the decrease may decrease again.
        gate.acquire(&mut go).unwrap().rate_limited();
        gate.acquire(&mut go).unwrap().rate_limited();
        gate.acquire(&mut go).unwrap().rate_limited();
        assert_eq!(gate.limit(), 1, "never below one");
        // Limit 1 needs one success to grow, limit 2 two, …
        for _ in 0..(1 + 2 + 3) {
            gate.acquire(&mut go).unwrap().succeeded();
        }
        assert_eq!(gate.limit(), 4);
        for _ in 0..100 {
            gate.acquire(&mut go).unwrap().succeeded();
        }
        assert_eq!(gate.limit(), 8, "never above the configured concurrency");
        let seen = seen.lock().unwrap();
        assert_eq!(seen[0], "openai-main: concurrency 8 → 4 after rate limit");
        assert_eq!(seen[1], "openai-main: concurrency 4 → 2 after rate limit");
        assert_eq!(
            seen[3],
            "openai-main: concurrency 1 → 2 after successful calls"
        );
        assert_eq!(seen.len(), 3 + 7);
    }
}
