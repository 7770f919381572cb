//! The run's worker slots: one pool of `max_parallel` that packets and the extra candidates
//! of best-of-N packets draw from, so the cap holds for the whole run rather than per packet.
//!
//! The scheduler takes a slot for each packet it starts, held until the packet's pipeline
//! returns. A best-of-N packet works its first candidate on its own slot and each further
//! candidate that works at the same time on a slot of its own, taken while one is free: a
//! packet's candidates therefore never wait on slots their own packet holds, and with every
//! slot busy they simply work one after another.

use std::sync::{Condvar, Mutex, MutexGuard};
use std::time::Duration;

/// How often a candidate waiting for a slot looks again whether it still needs one.
const RECHECK: Duration = Duration::from_millis(50);

/// A pool of worker slots shared by every packet thread of a run.
#[derive(Debug)]
pub(super) struct Slots {
    max: usize,
    used: Mutex<usize>,
    freed: Condvar,
}

/// A slot taken from [`Slots`], given back when dropped.
#[derive(Debug)]
pub(super) struct Slot<'a> {
    pool: &'a Slots,
}

impl Slots {
    /// Returns a pool of `max` slots (at least one).
    pub(super) fn new(max: usize) -> Slots {
        Slots {
            max: max.max(1),
            used: Mutex::new(0),
            freed: Condvar::new(),
        }
    }

    fn used(&self) -> MutexGuard<'_, usize> {
        self.used.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Returns how many slots are free now.
    pub(super) fn free(&self) -> usize {
        self.max.saturating_sub(*self.used())
    }

    /// Takes a slot when one is free; `None` when all are taken.
    pub(super) fn try_take(&self) -> Option<Slot<'_>> {
        let mut used = self.used();
        if *used >= self.max {
            return None;
        }
        *used += 1;
        Some(Slot { pool: self })
    }

    /// Waits for a free slot and takes it; returns `None` instead once `give_up` returns true
    /// (asked again at least every 50 ms, so a waiter notices that the work it waited for
    /// was done on another slot).
    pub(super) fn take_unless(&self, give_up: impl Fn() -> bool) -> Option<Slot<'_>> {
        let mut used = self.used();
        loop {
            if give_up() {
                return None;
            }
            if *used < self.max {
                *used += 1;
                return Some(Slot { pool: self });
            }
            used = self
                .freed
                .wait_timeout(used, RECHECK)
                .map(|(guard, _)| guard)
                .unwrap_or_else(|p| p.into_inner().0);
        }
    }
}

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        let mut used = self.pool.used();
        *used = used.saturating_sub(1);
        drop(used);
        self.pool.freed.notify_all();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slots_are_never_taken_beyond_the_cap_and_come_back_when_dropped() {
        let pool = Slots::new(2);
        let a = pool.try_take();
        let b = pool.try_take();
        assert!(a.is_some() && b.is_some());
        assert!(pool.try_take().is_none());
        assert_eq!(pool.free(), 0);
        assert!(pool.take_unless(|| true).is_none());
        drop(a);
        assert_eq!(pool.free(), 1);
        let c = pool.take_unless(|| false);
        assert!(c.is_some());
        assert_eq!(pool.free(), 0);
    }

    #[test]
    fn a_waiter_gets_the_slot_another_thread_gives_back() {
        let pool = Slots::new(1);
        let held = pool.try_take();
        std::thread::scope(|s| {
            let waiter = s.spawn(|| pool.take_unless(|| false).is_some());
            std::thread::sleep(Duration::from_millis(100));
            drop(held);
            assert!(waiter.join().unwrap());
        });
        assert_eq!(pool.free(), 1);
    }
}
