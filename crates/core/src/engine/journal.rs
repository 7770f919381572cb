//! The engine's single path to the run store: records an event durably, then tells the front
//! end, then (in crash tests) may kill the process on the spot.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::store::{Event, PacketRecord, Store, StoreError};

/// A run's journal, shared by the scheduler and its packet threads.
pub struct Journal<'a> {
    store: Mutex<Store>,
    run: String,
    on_event: &'a (dyn Fn(&str, &Event) + Sync),
    crash_after: Option<u64>,
    recorded: AtomicU64,
    /// How many packet records `packet` and `packets` returned (see `records_read`).
    records_read: AtomicU64,
    error: Mutex<Option<StoreError>>,
}

impl<'a> Journal<'a> {
    /// Returns a journal writing `run`'s events into `store`.
    pub fn new(
        store: Store,
        run: &str,
        on_event: &'a (dyn Fn(&str, &Event) + Sync),
        crash_after: Option<u64>,
    ) -> Journal<'a> {
        Journal {
            store: Mutex::new(store),
            run: run.to_string(),
            on_event,
            crash_after,
            recorded: AtomicU64::new(0),
            records_read: AtomicU64::new(0),
            error: Mutex::new(None),
        }
    }

    /// Returns the run's plan as the store holds it.
    pub fn stored_plan(&self) -> Result<String, StoreError> {
        let store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        Ok(store.require_run(&self.run)?.plan_toml)
    }

    /// Returns the run's record as the store holds it.
    pub fn run(&self) -> Result<crate::store::RunRecord, StoreError> {
        let store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        store.require_run(&self.run)
    }

    /// Returns what `read` makes of the run's store, for a query no method here names.
    pub fn read<T>(&self, read: impl FnOnce(&Store, &str) -> T) -> T {
        let store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        read(&store, &self.run)
    }

    /// Journals `event` durably before returning; the caller acts on it only afterwards.
    pub fn record(&self, event: Event) -> Result<(), StoreError> {
        {
            let mut store = self.store.lock().unwrap_or_else(|p| p.into_inner());
            store.record(&self.run, &event)?;
        }
        (self.on_event)(&self.run, &event);
        let n = self.recorded.fetch_add(1, Ordering::SeqCst) + 1;
        if self.crash_after == Some(n) {
            // SAFETY: sends SIGKILL to this very process: the crash tests' stand-in for kill -9.
            unsafe {
                libc::kill(libc::getpid(), libc::SIGKILL);
            }
        }
        Ok(())
    }

    /// Journals `event` from a packet thread; a store failure is kept for the scheduler, which
    /// stops the run, because a packet cannot go on without its journal.
    pub fn record_or_keep(&self, event: Event) -> bool {
        match self.record(event) {
            Ok(()) => true,
            Err(e) => {
                let mut slot = self.error.lock().unwrap_or_else(|p| p.into_inner());
                slot.get_or_insert(e);
                false
            }
        }
    }

    /// Returns a store failure recorded by a packet thread, if any.
    pub fn take_error(&self) -> Option<StoreError> {
        self.error.lock().unwrap_or_else(|p| p.into_inner()).take()
    }

    /// Returns the store back, for a caller that journals several runs in turn.
    pub fn into_store(self) -> Store {
        self.store.into_inner().unwrap_or_else(|p| p.into_inner())
    }

    /// Returns the note a `retry` left for `packet`'s worker, if the packet was reopened with one.
    pub fn retry_note(&self, packet: &str) -> Option<String> {
        let store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        super::retry::note_for(&store, &self.run, packet)
    }

    /// Returns the comments a person sent for `packet` (the web view's "send to agent") that
    /// no fix round has taken yet, joined as one list of required fixes.
    pub fn pending_comments(&self, packet: &str) -> Option<String> {
        let store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        let delivered = store
            .events_of_kind(&self.run, crate::store::EventKind::CommentsDelivered)
            .ok()?
            .into_iter()
            .filter(
                |e| matches!(&e.event, Event::CommentsDelivered { packet: p, .. } if p == packet),
            )
            .map(|e| e.seq)
            .max()
            .unwrap_or(0);
        let fixes: Vec<String> = store
            .events_of_kind(&self.run, crate::store::EventKind::CommentsSent)
            .ok()?
            .into_iter()
            .filter(|e| e.seq > delivered)
            .filter_map(|e| match e.event {
                Event::CommentsSent { packet: p, fixes } if p == packet => Some(fixes),
                _ => None,
            })
            .collect();
        (!fixes.is_empty()).then(|| fixes.join(""))
    }

    /// Returns what `packet`'s last successful worker said of its work (an agent's summary,
    /// an external worker's output tail), if it has finished.
    pub fn worker_account(&self, packet: &str) -> Option<String> {
        let store = self.store.lock().unwrap_or_else(|p| p.into_inner());
        store
            .events_of_kind(&self.run, crate::store::EventKind::WorkerFinished)
            .ok()?
            .into_iter()
            .rev()
            .find_map(|e| match e.event {
                Event::WorkerFinished {
                    packet: p,
                    exit_code: Some(0),
                    tail,
                    ..
                } if p == packet => Some(tail),
                _ => None,
            })
    }

    /// Returns the run's packet `id` as currently stored.
    pub fn packet(&self, id: &str) -> Result<Option<PacketRecord>, StoreError> {
        let record = self
            .store
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .packet(&self.run, id)?;
        self.records_read
            .fetch_add(u64::from(record.is_some()), Ordering::Relaxed);
        Ok(record)
    }

    /// Returns the run's packets as currently stored.
    pub fn packets(&self) -> Result<Vec<PacketRecord>, StoreError> {
        let records = self
            .store
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .packets(&self.run)?;
        self.records_read
            .fetch_add(records.len() as u64, Ordering::Relaxed);
        Ok(records)
    }

    /// Returns how many packet records [`Journal::packet`] and [`Journal::packets`] have
    /// returned so far: what reading the run's state costs, which must grow linearly with the
    /// number of packets (the scheduler's reads per packet stay flat).
    pub fn records_read(&self) -> u64 {
        self.records_read.load(Ordering::Relaxed)
    }
}
