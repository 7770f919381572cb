//! Evals in the run store: their events (opaque payloads of the eval runner's event type, in
//! the one `events` journal under `journal = 'eval'`, keyed by the eval's id).
//!
//! An eval is not an engine run (each attempt's run lives in its own attempt repository), so
//! these rows reference no `runs` row. The store owns the SQL; the eval runner owns what the
//! events mean, as the `start` workflow does with its own.

use rusqlite::params;
use serde::Serialize;
use serde::de::DeserializeOwned;

use super::workflow::WorkflowEntry;
use super::{Store, StoreError};
use orchestra_sys::exec::now_ms;

impl Store {
    /// Appends `event` (tagged `kind`) to the eval `eval`'s events; returns its sequence number.
    pub fn append_eval_event<E: Serialize>(
        &self,
        eval: &str,
        kind: &str,
        event: &E,
    ) -> Result<i64, StoreError> {
        let payload = serde_json::to_string(event).map_err(|e| StoreError::Corrupt {
            path: self.path.clone(),
            what: e.to_string(),
        })?;
        self.conn
            .execute(
                "INSERT INTO events (run_id, packet_id, ts_ms, type, payload, journal)
                 VALUES (?1, NULL, ?2, ?3, ?4, 'eval')",
                params![eval, now_ms(), kind, payload],
            )
            .map_err(|e| self.err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Returns every event of the eval `eval`, oldest first.
    pub fn eval_events<E: DeserializeOwned>(
        &self,
        eval: &str,
    ) -> Result<Vec<WorkflowEntry<E>>, StoreError> {
        let rows = self.payload_rows(
            "SELECT seq, ts_ms, payload FROM events
             WHERE run_id = ?1 AND journal = 'eval' ORDER BY seq",
            [eval],
            "eval event",
        )?;
        Ok(rows
            .into_iter()
            .map(|(seq, ts_ms, event)| WorkflowEntry { seq, ts_ms, event })
            .collect())
    }

    /// Returns the ids of the evals with events, newest first.
    pub fn evals(&self) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT run_id, MAX(seq) m FROM events WHERE journal = 'eval'
                 GROUP BY run_id ORDER BY m DESC",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map([], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }
}
