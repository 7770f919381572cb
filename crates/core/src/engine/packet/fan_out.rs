//! Running a best-of-N packet's candidates at once: up to the run's `max_parallel` of them
//! work together, each on its own thread in its own worktree, instead of one after another.
//!
//! Each candidate journals its own events (under `<packet>.c<k>`) as it goes, so a crash with
//! several in flight resumes like one with a single one: those that ended are not run again,
//! the others start again from a clean worktree.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

use super::candidates::Candidate;
use super::{Halt, Step};

impl Step<'_, '_> {
    /// Runs the candidates numbered `pending`, as many at once as the run's `max_parallel`
    /// allows, and returns what each came to in `pending`'s order; the first halt (an
    /// interrupt, an unwritable journal) stops the others from starting and is returned.
    pub(super) fn run_candidates(&self, pending: &[u32]) -> Result<Vec<Candidate>, Halt> {
        let limit = self.ctx.run.max_parallel.clamp(1, pending.len().max(1));
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<(u32, Result<Candidate, Halt>)>> = Mutex::new(Vec::new());
        let halted = std::sync::atomic::AtomicBool::new(false);
        std::thread::scope(|scope| {
            for _ in 0..limit {
                scope.spawn(|| {
                    while !halted.load(Ordering::SeqCst) {
                        let Some(&k) = pending.get(next.fetch_add(1, Ordering::SeqCst)) else {
                            break;
                        };
                        let _span = tracing::info_span!("candidate", candidate = k).entered();
                        let result = self.candidate(k);
                        if result.is_err() {
                            halted.store(true, Ordering::SeqCst);
                        }
                        results
                            .lock()
                            .unwrap_or_else(|p| p.into_inner())
                            .push((k, result));
                    }
                });
            }
        });
        let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
        results.sort_by_key(|r| r.0);
        results.into_iter().map(|(_, r)| r).collect()
    }
}
