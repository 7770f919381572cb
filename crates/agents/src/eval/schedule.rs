//! Works an eval's pending attempts on up to `jobs` threads at once. Each attempt has its own
//! repository, worktrees and engine run, so attempts share nothing but the journal.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::{AttemptResult, EvalRun, EvalRunError};

/// One attempt's place in the eval: indexes of its task and arm, and which repeat (from 1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Slot {
    pub task: usize,
    pub arm: usize,
    pub repeat: u32,
}

/// Works every slot of `pending` and returns each with its result; `on_result` is called as
/// each ends. `done_before` counts attempts that had ended already (for the interruption
/// message). The first error stops new attempts and is returned once the running ones end.
pub(super) fn work_all(
    run: &EvalRun<'_>,
    pending: &[Slot],
    on_result: &(dyn Fn(&AttemptResult) + Sync),
    done_before: usize,
) -> Result<Vec<(Slot, AttemptResult)>, EvalRunError> {
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<(Slot, AttemptResult)>> = Mutex::new(Vec::new());
    let failure: Mutex<Option<EvalRunError>> = Mutex::new(None);
    let stopped = || {
        run.check.stop.load(Ordering::SeqCst)
            || failure.lock().unwrap_or_else(|p| p.into_inner()).is_some()
    };
    let threads = run.jobs.clamp(1, pending.len().max(1));
    std::thread::scope(|scope| {
        for _ in 0..threads {
            scope.spawn(|| {
                while !stopped() {
                    let i = next.fetch_add(1, Ordering::SeqCst);
                    let Some(slot) = pending.get(i) else { break };
                    match run.attempt(*slot) {
                        Ok(Some(result)) => {
                            on_result(&result);
                            results
                                .lock()
                                .unwrap_or_else(|p| p.into_inner())
                                .push((*slot, result));
                        }
                        Ok(None) => break,
                        Err(e) => {
                            *failure.lock().unwrap_or_else(|p| p.into_inner()) = Some(e);
                            break;
                        }
                    }
                }
            });
        }
    });
    if let Some(e) = failure.into_inner().unwrap_or_else(|p| p.into_inner()) {
        return Err(e);
    }
    let results = results.into_inner().unwrap_or_else(|p| p.into_inner());
    if results.len() < pending.len() {
        return Err(EvalRunError::Interrupted {
            eval: run.id.clone(),
            done: done_before + results.len(),
            total: done_before + pending.len(),
        });
    }
    Ok(results)
}
