//! Retries with exponential backoff and jitter, then fallback to the next model.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::types::{ChatRequest, ChatResponse, Delta};
use super::{ChatModel, LlmError};

/// How persistently transient failures are retried on one model.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Retries after the first attempt, per model.
    pub max_retries: u32,
    /// The first backoff; each further retry doubles it.
    pub base_delay: Duration,
    /// The longest backoff (a provider's `retry-after` is honoured up to `max_retry_after`).
    pub max_delay: Duration,
    /// The longest `retry-after` honoured; a longer one ends the retries on that model.
    pub max_retry_after: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_retries: 4,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(120),
        }
    }
}

impl RetryPolicy {
    /// Returns the wait before retry number `attempt` (0-based) after `error`: the provider's
    /// `retry-after` when given, else a random point in the upper half of the exponential
    /// backoff (jitter keeps many agents from retrying in lock-step). `None`: do not retry.
    pub fn delay(&self, attempt: u32, error: &LlmError) -> Option<Duration> {
        if attempt >= self.max_retries || !error.is_transient() {
            return None;
        }
        if let LlmError::RateLimited {
            retry_after: Some(d),
            ..
        } = error
        {
            return (*d <= self.max_retry_after).then_some(*d);
        }
        let exp = self
            .base_delay
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max_delay);
        let half = exp / 2;
        let jitter = Duration::from_nanos(fastrand::u64(0..=half.as_nanos() as u64));
        Some(half + jitter)
    }
}

/// What the retry loop did, for events and counters.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryEvent {
    /// Attempt failed transiently; the same model is tried again after `delay`.
    Retrying {
        model: String,
        attempt: u32,
        delay: Duration,
        error: LlmError,
    },
    /// The model kept failing; the next one takes over.
    FallingBack {
        from: String,
        to: String,
        error: LlmError,
    },
}

/// Sends `req` to `models[0]`, retrying transient failures under `policy`, then to each
/// fallback in turn; returns the answer and the index of the model that gave it.
///
/// Non-transient errors (auth, bad request, context too long, no first token in time,
/// cancellation) end at once: a fallback would not fix them and the caller has a better
/// remedy. `stop` is polled while waiting for the model and during backoff, so a cancelled
/// call ends within a tenth of a second.
pub fn chat_with_retry(
    models: &[&dyn ChatModel],
    req: &ChatRequest,
    policy: &RetryPolicy,
    stop: &AtomicBool,
    on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    on_retry: &mut dyn FnMut(&RetryEvent),
) -> Result<(ChatResponse, usize), LlmError> {
    let mut last: Option<LlmError> = None;
    // Every call hears from its model at least every tenth of a second (`Delta::Waiting`),
    // so a raised stop flag ends it within that, not when the model next speaks.
    let on_delta = &mut |d: Delta<'_>| !stop.load(Ordering::SeqCst) && on_delta(d);
    for (index, model) in models.iter().enumerate() {
        if let Some(error) = last.take() {
            on_retry(&RetryEvent::FallingBack {
                from: models[index - 1].label(),
                to: model.label(),
                error,
            });
        }
        let mut attempt = 0;
        loop {
            let error = match model.chat(req, on_delta) {
                Ok(resp) => return Ok((resp, index)),
                Err(LlmError::Cancelled { .. }) if stop.load(Ordering::SeqCst) => {
                    return Err(LlmError::Cancelled {
                        model: model.label(),
                    });
                }
                Err(e) => e,
            };
            let Some(delay) = policy.delay(attempt, &error) else {
                if error.is_transient() {
                    last = Some(error);
                    break;
                }
                return Err(error);
            };
            on_retry(&RetryEvent::Retrying {
                model: model.label(),
                attempt: attempt + 1,
                delay,
                error,
            });
            if !sleep_unless_stopped(delay, stop) {
                return Err(LlmError::Cancelled {
                    model: model.label(),
                });
            }
            attempt += 1;
        }
    }
    Err(last.unwrap_or(LlmError::Cancelled {
        model: "(no model)".to_string(),
    }))
}

/// Sleeps for `d` in short slices; returns false if `stop` was raised meanwhile.
fn sleep_unless_stopped(d: Duration, stop: &AtomicBool) -> bool {
    let end = Instant::now() + d;
    loop {
        if stop.load(Ordering::SeqCst) {
            return false;
        }
        let now = Instant::now();
        if now >= end {
            return true;
        }
        std::thread::sleep((end - now).min(Duration::from_millis(50)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn unavailable() -> LlmError {
        LlmError::Unavailable {
            model: "m".into(),
            status: 500,
            message: String::new(),
        }
    }

    #[test]
    fn backoff_grows_with_jitter_and_stops_at_the_cap() {
        let p = RetryPolicy {
            max_retries: 3,
            base_delay: Duration::from_millis(100),
            max_delay: Duration::from_millis(300),
            max_retry_after: Duration::from_secs(5),
        };
        for _ in 0..50 {
            let d0 = p.delay(0, &unavailable()).unwrap();
            assert!(d0 >= Duration::from_millis(50) && d0 <= Duration::from_millis(100));
            let d2 = p.delay(2, &unavailable()).unwrap();
            assert!(d2 >= Duration::from_millis(150) && d2 <= Duration::from_millis(300));
        }
        assert_eq!(p.delay(3, &unavailable()), None);
        let auth = LlmError::Auth {
            model: "m".into(),
            var: "K".into(),
            message: String::new(),
        };
        assert_eq!(p.delay(0, &auth), None);
        let limited = |s| LlmError::RateLimited {
            model: "m".into(),
            retry_after: Some(Duration::from_secs(s)),
        };
        assert_eq!(p.delay(0, &limited(2)), Some(Duration::from_secs(2)));
        assert_eq!(p.delay(0, &limited(60)), None);
    }
}
