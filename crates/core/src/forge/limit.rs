//! Pacing of requests that create content (pull requests, comments, labels), and the reading
//! of a forge's rate-limit headers.
//!
//! GitHub's secondary rate limits punish bursts of content-creating requests (its documented
//! ceiling is 80 a minute) with 403s that can lock an account out for a while; pacing our own
//! writes keeps a large run clear of them. Reads are not paced: their budget is the primary
//! limit, which the server reports in `x-ratelimit-remaining`/`x-ratelimit-reset`.

use std::collections::VecDeque;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// Default most content-creating requests sent in any sliding minute.
pub const DEFAULT_WRITES_PER_MINUTE: usize = 60;

/// A sliding-window limit on content-creating requests.
#[derive(Debug, Clone)]
pub struct WriteLimiter {
    per_window: usize,
    window: Duration,
    recent: VecDeque<Instant>,
}

impl WriteLimiter {
    /// Returns a limiter letting at most `per_window` (at least 1) writes through in any
    /// `window`.
    pub fn new(per_window: usize, window: Duration) -> WriteLimiter {
        WriteLimiter {
            per_window: per_window.max(1),
            window,
            recent: VecDeque::new(),
        }
    }

    /// Returns how long a write at `now` must wait so that the window holds no more than the
    /// allowed number of writes.
    pub fn delay(&mut self, now: Instant) -> Duration {
        while self
            .recent
            .front()
            .is_some_and(|t| now.saturating_duration_since(*t) >= self.window)
        {
            self.recent.pop_front();
        }
        if self.recent.len() < self.per_window {
            return Duration::ZERO;
        }
        let oldest = self.recent[self.recent.len() - self.per_window];
        (oldest + self.window).saturating_duration_since(now)
    }

    /// Records that a write was sent at `at`.
    pub fn record(&mut self, at: Instant) {
        self.recent.push_back(at);
        while self.recent.len() > self.per_window {
            self.recent.pop_front();
        }
    }
}

/// Returns how long the server asks us to wait before the next request, from its headers:
/// `retry-after` (seconds), else an exhausted primary limit's `x-ratelimit-reset` (Unix
/// seconds) when `x-ratelimit-remaining` is 0. `None` when the headers ask for no wait.
pub fn server_wait(
    retry_after: Option<&str>,
    remaining: Option<&str>,
    reset: Option<&str>,
) -> Option<Duration> {
    if let Some(secs) = retry_after.and_then(|v| v.trim().parse::<u64>().ok()) {
        return Some(Duration::from_secs(secs));
    }
    if remaining.map(str::trim) == Some("0") {
        let reset = reset.and_then(|v| v.trim().parse::<u64>().ok())?;
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        // One extra second: the reset time is rounded down to the second.
        return Some(Duration::from_secs(reset.saturating_sub(now) + 1));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_window_holds_at_most_the_allowed_writes() {
        let mut l = WriteLimiter::new(2, Duration::from_secs(60));
        let t0 = Instant::now();
        assert_eq!(l.delay(t0), Duration::ZERO);
        l.record(t0);
        let t1 = t0 + Duration::from_secs(10);
        assert_eq!(l.delay(t1), Duration::ZERO);
        l.record(t1);
        // A third write must wait until the first leaves the window.
        let t2 = t0 + Duration::from_secs(20);
        assert_eq!(l.delay(t2), Duration::from_secs(40));
        l.record(t0 + Duration::from_secs(60));
        // Now the second write is the oldest in the window.
        assert_eq!(
            l.delay(t0 + Duration::from_secs(61)),
            Duration::from_secs(9)
        );
        assert_eq!(l.delay(t0 + Duration::from_secs(70)), Duration::ZERO);
    }

    #[test]
    fn server_wait_prefers_retry_after_then_an_exhausted_reset() {
        assert_eq!(
            server_wait(Some("3"), Some("0"), Some("1")),
            Some(Duration::from_secs(3))
        );
        assert_eq!(server_wait(None, Some("12"), Some("99999999999")), None);
        let now = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .unwrap()
            .as_secs();
        let wait = server_wait(None, Some("0"), Some(&(now + 5).to_string())).unwrap();
        assert!((5..=7).contains(&wait.as_secs()), "{wait:?}");
        assert_eq!(server_wait(Some("soon"), None, None), None);
    }
}
