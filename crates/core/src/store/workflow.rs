//! The `start` workflow in the run store: its workflow events (opaque payloads of the
//! orchestrator's event type, in the one `events` journal under `journal = 'workflow'`) and
//! its finished model turns.
//!
//! The orchestrator journals before there is an engine run (planning happens first), so these
//! rows are keyed by the run id alone and reference no `runs` row. The store owns the SQL; the
//! orchestrator owns what the events mean.

use rusqlite::{OptionalExtension, params};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use super::{Store, StoreError};
use crate::llm::Usage;
use orchestra_sys::exec::now_ms;

/// One journaled workflow event, decoded into the caller's event type.
#[derive(Debug, Clone, PartialEq)]
pub struct WorkflowEntry<E> {
    pub seq: i64,
    pub ts_ms: i64,
    pub event: E,
}

/// One finished model call, as recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TurnRecord {
    pub role: String,
    pub model: String,
    pub usage: Usage,
    pub ms: u64,
    /// The answer: text, tool calls and stop reason, as JSON.
    pub response: serde_json::Value,
}

/// Usage summed over one role and model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct UsageRow {
    pub role: String,
    pub model: String,
    pub calls: u64,
    pub usage: Usage,
    pub ms: u64,
}

fn count(n: i64) -> u64 {
    n.max(0) as u64
}

impl Store {
    /// Appends `event` (tagged `kind`) to `run`'s workflow events; returns its sequence number.
    pub fn append_workflow_event<E: Serialize>(
        &self,
        run: &str,
        kind: &str,
        event: &E,
    ) -> Result<i64, StoreError> {
        self.append_journal_event("workflow", run, kind, event)
    }

    /// Returns every workflow event of `run`, oldest first.
    pub fn workflow_events<E: DeserializeOwned>(
        &self,
        run: &str,
    ) -> Result<Vec<WorkflowEntry<E>>, StoreError> {
        self.journal_events("workflow", run, "entry")
    }

    /// Returns `run`'s workflow events of any of the `kinds` (their `type` tags) after
    /// sequence number `after` (0: all of them), oldest first: only those rows are read and
    /// decoded, found through the journal's index by kind, so the cost of a read does not
    /// grow with the run's other events.
    pub fn workflow_events_of_kinds<E: DeserializeOwned>(
        &self,
        run: &str,
        kinds: &[&str],
        after: i64,
    ) -> Result<Vec<WorkflowEntry<E>>, StoreError> {
        if kinds.is_empty() {
            return Ok(Vec::new());
        }
        let sql = super::journal_kinds_after_sql("workflow", kinds.len(), true);
        let values = std::iter::once(rusqlite::types::Value::from(run.to_string()))
            .chain(
                kinds
                    .iter()
                    .map(|k| rusqlite::types::Value::from(k.to_string())),
            )
            .chain(std::iter::once(rusqlite::types::Value::from(after)));
        let rows = self.payload_rows(&sql, rusqlite::params_from_iter(values), "entry")?;
        Ok(rows
            .into_iter()
            .map(|(seq, ts_ms, event)| WorkflowEntry { seq, ts_ms, event })
            .collect())
    }

    /// Returns how many of `run`'s workflow events are of kind `kind`, read from the index.
    pub fn count_workflow_events(&self, run: &str, kind: &str) -> Result<u64, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT COUNT(*) FROM events INDEXED BY events_by_kind
                 WHERE run_id = ?1 AND type = ?2 AND journal = 'workflow'",
            )
            .map_err(|e| self.err(e))?;
        let n: i64 = stmt
            .query_row(params![run, kind], |r| r.get(0))
            .map_err(|e| self.err(e))?;
        Ok(count(n))
    }

    /// Returns the sequence number of `run`'s last workflow event (0: none yet).
    pub fn last_workflow_seq(&self, run: &str) -> Result<i64, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT seq FROM events WHERE run_id = ?1 AND journal = 'workflow'
                 ORDER BY seq DESC LIMIT 1",
            )
            .map_err(|e| self.err(e))?;
        let n: Option<i64> = stmt
            .query_row(params![run], |r| r.get(0))
            .optional()
            .map_err(|e| self.err(e))?;
        Ok(n.unwrap_or(0))
    }

    /// Returns the ids of runs that have workflow events, newest first.
    pub fn workflow_runs(&self) -> Result<Vec<String>, StoreError> {
        self.journal_ids("workflow")
    }

    /// Appends `event` (tagged `kind`) to `id`'s events in `journal`; returns its sequence
    /// number.
    pub(crate) fn append_journal_event<E: Serialize>(
        &self,
        journal: &str,
        id: &str,
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
                 VALUES (?1, NULL, ?2, ?3, ?4, ?5)",
                params![id, now_ms(), kind, payload, journal],
            )
            .map_err(|e| self.err(e))?;
        Ok(self.conn.last_insert_rowid())
    }

    /// Returns every event of `id` in `journal`, oldest first (`what` names an unreadable one).
    pub(crate) fn journal_events<E: DeserializeOwned>(
        &self,
        journal: &str,
        id: &str,
        what: &str,
    ) -> Result<Vec<WorkflowEntry<E>>, StoreError> {
        let rows = self.payload_rows(
            "SELECT seq, ts_ms, payload FROM events
             WHERE run_id = ?1 AND journal = ?2 ORDER BY seq",
            [id, journal],
            what,
        )?;
        Ok(rows
            .into_iter()
            .map(|(seq, ts_ms, event)| WorkflowEntry { seq, ts_ms, event })
            .collect())
    }

    /// Returns the ids with events in `journal`, newest first.
    pub(crate) fn journal_ids(&self, journal: &str) -> Result<Vec<String>, StoreError> {
        let mut stmt = self
            .conn
            .prepare(
                "SELECT run_id, MAX(seq) m FROM events WHERE journal = ?1
                 GROUP BY run_id ORDER BY m DESC",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map([journal], |r| r.get::<_, String>(0))
            .map_err(|e| self.err(e))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| self.err(e))
    }

    /// Returns `run`'s recorded model turn with this request key, if any.
    pub fn turn(&self, run: &str, key: &str) -> Result<Option<TurnRecord>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT role, model, input_tokens, output_tokens, ms, response FROM workflow_turns
                 WHERE run_id = ?1 AND key = ?2",
            )
            .map_err(|e| self.err(e))?;
        let row = stmt
            .query_row(params![run, key], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, i64>(2)?,
                    r.get::<_, i64>(3)?,
                    r.get::<_, i64>(4)?,
                    r.get::<_, String>(5)?,
                ))
            })
            .optional()
            .map_err(|e| self.err(e))?;
        row.map(|(role, model, i, o, ms, response)| {
            let response = serde_json::from_str(&response).map_err(|e| StoreError::Corrupt {
                path: self.path.clone(),
                what: format!("turn {key}: {e}"),
            })?;
            Ok(TurnRecord {
                role,
                model,
                usage: Usage {
                    input_tokens: count(i),
                    output_tokens: count(o),
                },
                ms: count(ms),
                response,
            })
        })
        .transpose()
    }

    /// Records `run`'s finished model turn under its request key (the first record wins).
    pub fn record_turn(&self, run: &str, key: &str, turn: &TurnRecord) -> Result<(), StoreError> {
        self.conn
            .execute(
                "INSERT OR IGNORE INTO workflow_turns
                 (run_id, key, ts_ms, role, model, input_tokens, output_tokens, ms, response)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
                params![
                    run,
                    key,
                    now_ms(),
                    turn.role,
                    turn.model,
                    turn.usage.input_tokens as i64,
                    turn.usage.output_tokens as i64,
                    turn.ms as i64,
                    turn.response.to_string()
                ],
            )
            .map_err(|e| self.err(e))?;
        Ok(())
    }

    /// Returns how many model turns are recorded for `run`.
    pub fn turn_count(&self, run: &str) -> Result<u64, StoreError> {
        self.conn
            .query_row(
                "SELECT COUNT(*) FROM workflow_turns WHERE run_id = ?1",
                [run],
                |r| r.get::<_, i64>(0),
            )
            .map(count)
            .map_err(|e| self.err(e))
    }

    /// Returns every model turn recorded for `run` as (time, role, model, usage), oldest first.
    pub fn turn_calls(&self, run: &str) -> Result<Vec<(i64, String, String, Usage)>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT ts_ms, role, model, input_tokens, output_tokens
                 FROM workflow_turns WHERE run_id = ?1 ORDER BY ts_ms, key",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map([run], |r| {
            Ok((
                r.get(0)?,
                r.get(1)?,
                r.get(2)?,
                Usage {
                    input_tokens: count(r.get(3)?),
                    output_tokens: count(r.get(4)?),
                },
            ))
        })
        .map_err(|e| self.err(e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| self.err(e))
    }

    /// Returns `run`'s token usage and model time per role and model.
    pub fn turn_usage(&self, run: &str) -> Result<Vec<UsageRow>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT role, model, COUNT(*), SUM(input_tokens), SUM(output_tokens), SUM(ms)
                 FROM workflow_turns WHERE run_id = ?1 GROUP BY role, model ORDER BY role, model",
            )
            .map_err(|e| self.err(e))?;
        stmt.query_map([run], |r| {
            Ok(UsageRow {
                role: r.get(0)?,
                model: r.get(1)?,
                calls: count(r.get(2)?),
                usage: Usage {
                    input_tokens: count(r.get(3)?),
                    output_tokens: count(r.get(4)?),
                },
                ms: count(r.get(5)?),
            })
        })
        .map_err(|e| self.err(e))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| self.err(e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_database_made_by_the_former_workflow_journal_opens_with_its_rows() {
        let dir = tempfile::tempdir().unwrap();
        let db = orchestra_sys::exec::state_dir(dir.path());
        fs_err::create_dir_all(&db).unwrap();
        // The tables exactly as the orchestrator used to create them, before the run store's.
        let conn = rusqlite::Connection::open(db.join("orchestra.db")).unwrap();
        conn.execute_batch(
            "CREATE TABLE workflow_events (seq INTEGER PRIMARY KEY AUTOINCREMENT,
               run_id TEXT NOT NULL, ts_ms INTEGER NOT NULL, type TEXT NOT NULL,
               payload TEXT NOT NULL);
             CREATE INDEX workflow_events_run ON workflow_events (run_id, seq);
             CREATE TABLE workflow_turns (run_id TEXT NOT NULL, key TEXT NOT NULL,
               ts_ms INTEGER NOT NULL, role TEXT NOT NULL, model TEXT NOT NULL,
               input_tokens INTEGER NOT NULL, output_tokens INTEGER NOT NULL,
               ms INTEGER NOT NULL, response TEXT NOT NULL, PRIMARY KEY (run_id, key));
             INSERT INTO workflow_events (run_id, ts_ms, type, payload)
               VALUES ('old', 1, 'driving', '{\"type\":\"driving\",\"pid\":7}');
             INSERT INTO workflow_turns VALUES ('old', 'k', 1, 'planner', 'm', 3, 4, 5, '{}');",
        )
        .unwrap();
        drop(conn);
        let store = Store::open(dir.path()).unwrap();
        assert_eq!(store.workflow_runs().unwrap(), vec!["old"]);
        let events: Vec<WorkflowEntry<serde_json::Value>> = store.workflow_events("old").unwrap();
        assert_eq!(events[0].event["pid"], 7);
        assert_eq!(
            store.turn("old", "k").unwrap().unwrap().usage.output_tokens,
            4
        );
        assert!(store.runs().unwrap().is_empty());
    }

    #[test]
    fn a_store_with_two_journals_moves_into_one_and_both_kinds_of_run_stay_readable() {
        let dir = tempfile::tempdir().unwrap();
        let db = orchestra_sys::exec::state_dir(dir.path());
        fs_err::create_dir_all(&db).unwrap();
        // The engine's journal without its `journal` column, and the workflow's own table, as
        // earlier versions made them; run `r` has events in both, as a `start` run does.
        let conn = rusqlite::Connection::open(db.join("orchestra.db")).unwrap();
        conn.execute_batch(
            "CREATE TABLE events (seq INTEGER PRIMARY KEY AUTOINCREMENT, run_id TEXT NOT NULL,
               packet_id TEXT, ts_ms INTEGER NOT NULL, type TEXT NOT NULL, payload TEXT NOT NULL);
             CREATE INDEX events_by_run ON events(run_id, seq);
             INSERT INTO events (run_id, packet_id, ts_ms, type, payload)
               VALUES ('r', NULL, 5, 'run_cancelled', '{\"type\":\"run_cancelled\"}');
             CREATE TABLE workflow_events (seq INTEGER PRIMARY KEY AUTOINCREMENT,
               run_id TEXT NOT NULL, ts_ms INTEGER NOT NULL, type TEXT NOT NULL,
               payload TEXT NOT NULL);
             INSERT INTO workflow_events (run_id, ts_ms, type, payload)
               VALUES ('r', 1, 'driving', '{\"type\":\"driving\",\"pid\":7}');
             INSERT INTO workflow_events (run_id, ts_ms, type, payload)
               VALUES ('r', 2, 'driving', '{\"type\":\"driving\",\"pid\":8}');",
        )
        .unwrap();
        drop(conn);
        for _ in 0..2 {
            // Opened twice: the move happens once.
            let store = Store::open(dir.path()).unwrap();
            let flow: Vec<WorkflowEntry<serde_json::Value>> = store.workflow_events("r").unwrap();
            let pids: Vec<_> = flow.iter().map(|e| e.event["pid"].clone()).collect();
            assert_eq!(pids[..2], [7, 8]);
            assert_eq!((flow[0].ts_ms, flow[1].ts_ms), (1, 2));
            assert_eq!(store.workflow_runs().unwrap(), vec!["r"]);
            // The engine's reads see the engine's events only.
            let engine = store.events("r", 0).unwrap();
            assert_eq!(engine.len(), 1);
            assert_eq!(engine[0].ts_ms, 5);
            // New workflow events follow the moved ones.
            let seq = store
                .append_workflow_event(
                    "r",
                    "driving",
                    &serde_json::json!({"type": "driving", "pid": 9}),
                )
                .unwrap();
            assert!(seq > flow[1].seq);
            let conn = rusqlite::Connection::open(db.join("orchestra.db")).unwrap();
            let left: i64 = conn
                .query_row(
                    "SELECT count(*) FROM sqlite_master WHERE name = 'workflow_events'",
                    [],
                    |r| r.get(0),
                )
                .unwrap();
            assert_eq!(left, 0);
        }
    }
}
