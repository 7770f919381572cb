//! Evals in the run store: their events (opaque payloads of the eval runner's event type, in
//! the one `events` journal under `journal = 'eval'`, keyed by the eval's id).
//!
//! An eval is not an engine run (each attempt's run lives in its own attempt repository), so
//! these rows reference no `runs` row. The store owns the SQL; the eval runner owns what the
//! events mean, as the `start` workflow does with its own.

use serde::Serialize;
use serde::de::DeserializeOwned;

use super::workflow::WorkflowEntry;
use super::{Store, StoreError};

impl Store {
    /// Appends `event` (tagged `kind`) to the eval `eval`'s events; returns its sequence number.
    pub fn append_eval_event<E: Serialize>(
        &self,
        eval: &str,
        kind: &str,
        event: &E,
    ) -> Result<i64, StoreError> {
        self.append_journal_event("eval", eval, kind, event)
    }

    /// Returns every event of the eval `eval`, oldest first.
    pub fn eval_events<E: DeserializeOwned>(
        &self,
        eval: &str,
    ) -> Result<Vec<WorkflowEntry<E>>, StoreError> {
        self.journal_events("eval", eval, "eval event")
    }

    /// Returns the ids of the evals with events, newest first.
    pub fn evals(&self) -> Result<Vec<String>, StoreError> {
        self.journal_ids("eval")
    }
}
