//! Riding out a model server that is down: a request that could not reach the server (or
//! that a server still starting refused) is sent again after growing pauses, for as long as
//! the profile's `outage_retry_secs` — minutes, so a restarted local server is waited for
//! instead of failing the run and losing the work paid for so far.
//!
//! Only requests the server never received are sent again: a refused or failed connection.

use std::time::{Duration, Instant};

use super::LlmError;
use super::profile::Profile;
use super::types::{ChatResponse, Delta};
use super::wait::TICK;

/// The longest pause between two attempts to reach a server that is down.
const MAX_PAUSE: Duration = Duration::from_secs(30);

/// One attempt at a request: sends it and reads the answer, streaming pieces to its argument.
pub(super) type Attempt<'a> =
    dyn FnMut(&mut dyn FnMut(Delta<'_>) -> bool) -> Result<ChatResponse, LlmError> + 'a;

/// Returns true if and only if `e` says the server could not be reached at all. An
/// overloaded server's 5xx is not an outage: the retry policy and a fallback deal with it.
pub fn is_outage(e: &LlmError) -> bool {
    matches!(e, LlmError::Connect { .. })
}

/// Returns the pause before attempt `n + 1` (0-based) to reach a server that is down:
/// 1 s, doubling, at most [`MAX_PAUSE`].
pub fn pause(n: u32) -> Duration {
    Duration::from_secs(1u64 << n.min(5)).min(MAX_PAUSE)
}

/// Runs `attempt` and, while it fails because the server of `profile` cannot be reached,
/// runs it again after a pause, until the profile's outage patience is spent. Each pause is
/// announced to `on_delta` as [`Delta::Unreachable`], then [`Delta::Waiting`] every
/// [`TICK`]; `on_delta` returning false cancels.
pub(super) fn ride_out(
    profile: &Profile,
    on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
    attempt: &mut Attempt<'_>,
) -> Result<ChatResponse, LlmError> {
    let mut down_since: Option<Instant> = None;
    let mut n = 0;
    loop {
        let error = match attempt(on_delta) {
            Ok(resp) => return Ok(resp),
            Err(e) if is_outage(&e) => e,
            Err(e) => return Err(e),
        };
        let since = *down_since.get_or_insert_with(Instant::now);
        let left = profile.outage_retry.saturating_sub(since.elapsed());
        if left.is_zero() {
            return Err(error);
        }
        let retry_in = pause(n).min(left);
        n += 1;
        tracing::info!(model = %profile.label(), %error, ?retry_in, "model server unreachable");
        if !on_delta(Delta::Unreachable { retry_in }) {
            return Err(LlmError::Cancelled {
                model: profile.label(),
            });
        }
        let until = Instant::now() + retry_in;
        while Instant::now() < until {
            std::thread::sleep(TICK.min(until - Instant::now()));
            if !on_delta(Delta::Waiting) {
                return Err(LlmError::Cancelled {
                    model: profile.label(),
                });
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pauses_grow_to_half_a_minute() {
        let secs: Vec<u64> = (0..8).map(|n| pause(n).as_secs()).collect();
        assert_eq!(secs, vec![1, 2, 4, 8, 16, 30, 30, 30]);
    }
}
