//! Running a best-of-N packet's candidates at once instead of one after another, within the
//! run's `max_parallel`: the first candidate works on the packet's own worker slot, each
//! further one at the same time only on a slot of the run's pool that is free (see
//! `engine/slots.rs`), so candidates and packets together never exceed the cap.
//!
//! Each candidate journals its own events (under `<packet>.c<k>`) as it goes, so a crash with
//! several in flight resumes like one with a single one: those that ended are not run again,
//! the others start again from a clean worktree.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use super::candidates::Candidate;
use super::{Halt, Step};

impl Step<'_, '_> {
    /// Runs the candidates numbered `pending`, as many at once as the run's free worker slots
    /// allow (the packet's own slot always works one), and returns what each came to in
    /// `pending`'s order; the first halt (an interrupt, an unwritable journal) stops the others
    /// from starting and is returned.
    pub(super) fn run_candidates(&self, pending: &[u32]) -> Result<Vec<Candidate>, Halt> {
        let threads = self.ctx.run.max_parallel.clamp(1, pending.len().max(1));
        let next = AtomicUsize::new(0);
        let results: Mutex<Vec<(u32, Result<Candidate, Halt>)>> = Mutex::new(Vec::new());
        let halted = AtomicBool::new(false);
        let finished = || {
            halted.load(Ordering::SeqCst)
                || self.ctx.stop.load(Ordering::SeqCst)
                || next.load(Ordering::SeqCst) >= pending.len()
        };
        // Works the next pending candidate; false when none is left or the others halted.
        let work_one = || {
            if halted.load(Ordering::SeqCst) {
                return false;
            }
            let Some(&k) = pending.get(next.fetch_add(1, Ordering::SeqCst)) else {
                return false;
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
            true
        };
        std::thread::scope(|scope| {
            for extra in 1..threads {
                let (work_one, finished) = (&work_one, &finished);
                scope.spawn(move || {
                    tracing::trace!(extra, "a further candidate waits for a free worker slot");
                    while let Some(_slot) = self.ctx.slots.take_unless(finished) {
                        if !work_one() {
                            break;
                        }
                    }
                });
            }
            // The packet's own slot.
            while work_one() {}
        });
        let mut results = results.into_inner().unwrap_or_else(|p| p.into_inner());
        results.sort_by_key(|r| r.0);
        results.into_iter().map(|(_, r)| r).collect()
    }
}
