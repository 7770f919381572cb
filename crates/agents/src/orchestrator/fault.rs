//! Fault injection for crash tests: once armed with `n`, the process kills itself with SIGKILL
//! right after its `n`-th durable step (a workflow event, a journaled model turn, or an
//! engine or merge event) — the tests' stand-in for `kill -9` at an exact point.

use std::sync::atomic::{AtomicU64, Ordering};

static LIMIT: AtomicU64 = AtomicU64::new(0);
static COUNT: AtomicU64 = AtomicU64::new(0);

/// The environment variable that arms the fault for `start` runs.
pub const ENV: &str = "ORCHESTRA_CRASH_AFTER_STEPS";

/// Arms the fault: the process dies after `limit` more durable steps (`None` disarms it).
pub fn arm(limit: Option<u64>) {
    COUNT.store(0, Ordering::SeqCst);
    LIMIT.store(limit.unwrap_or(0), Ordering::SeqCst);
}

/// Counts one durable step, and kills the process when the armed limit is reached.
pub fn step() {
    let limit = LIMIT.load(Ordering::SeqCst);
    if limit == 0 {
        return;
    }
    if COUNT.fetch_add(1, Ordering::SeqCst) + 1 == limit {
        // SAFETY: sends SIGKILL to this very process: the crash tests' stand-in for kill -9.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// The environment variable naming one fault point to die at, e.g. `publish`.
pub const POINT_ENV: &str = "ORCHESTRA_CRASH_AT";

/// Kills the process with SIGKILL when `ORCHESTRA_CRASH_AT` names this point: for crash tests
/// of moments no step count pins down, such as between a run's completion and its publication.
pub fn point(name: &str) {
    if std::env::var(POINT_ENV).is_ok_and(|v| v == name) {
        // SAFETY: sends SIGKILL to this very process, as `step` does.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}
