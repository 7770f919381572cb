//! Cancels a run: stops the process driving it (if any), marks it cancelled, and cleans up its
//! worktrees with the same never-lose-work rules as gc.

use std::time::{Duration, Instant};

use super::EngineError;
use super::gc::{GcReport, gc};
use crate::store::{Event, Store};
use orchestra_git::git::RepoInfo;
use orchestra_sys::exec::{LockError, RunDir, RunLock};

/// Cancels `run` and removes its worktrees (unsaved work goes to backup refs first).
///
/// A process still driving the run is sent SIGTERM — it stops its workers and leaves the run
/// interrupted — and is given `wait` to let go of the run's lock.
pub fn cancel(repo: &RepoInfo, run: &str, wait: Duration) -> Result<GcReport, EngineError> {
    let mut store = Store::open(&repo.common_dir)?;
    let record = store.require_run(run)?;
    let dir = RunDir::new(&repo.common_dir, run);
    if !record.state.is_finished() {
        if RunLock::is_held(dir.path())
            && let Some(pid) = record.pid
        {
            // SAFETY: kill(2) on the pid the store says drives this run; it holds the lock,
            // so it is a live git-orchestra process.
            unsafe {
                libc::kill(pid as i32, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + wait;
        let lock = loop {
            match RunLock::acquire(dir.path(), run) {
                Ok(lock) => break lock,
                Err(LockError::Busy { .. }) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(50));
                }
                Err(e) => return Err(e.into()),
            }
        };
        store.record(run, &Event::RunCancelled)?;
        drop(lock);
    }
    drop(store);
    gc(repo, Some(run), false)
}
