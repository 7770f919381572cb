//! The agents' activity per packet and role — state, model calls, tokens, cost, tool calls,
//! retries — projected from the `agent_*` events so `status` reads it without replaying the
//! journal.

use rusqlite::{Transaction, params};
use serde::Serialize;

use super::{Event, Store, StoreError};

/// What the agent of one role did on one packet, summed over the packet's attempts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct AgentUsage {
    pub packet: String,
    pub role: String,
    /// The agent's latest worker state (`completed`, `blocked`, …).
    pub state: String,
    /// Why it reached that state.
    pub reason: Option<String>,
    /// The model that answered last.
    pub model: Option<String>,
    pub model_calls: u64,
    pub input_tokens: u64,
    pub output_tokens: u64,
    /// The cost in billionths of the price table's currency unit; `None` when no call was
    /// priced (the model is missing from the price table).
    pub cost_nanos: Option<u64>,
    pub tool_calls: u64,
    pub tool_errors: u64,
    pub retries: u64,
    pub fallbacks: u64,
}

impl AgentUsage {
    /// Returns the cost in the price table's currency unit, if known.
    pub fn cost(&self) -> Option<f64> {
        self.cost_nanos.map(|n| n as f64 / 1e9)
    }
}

/// Applies one agent event to the `agent_usage` projection; other events are ignored.
pub(super) fn apply(
    tx: &Transaction<'_>,
    run: &str,
    event: &Event,
    now: i64,
) -> rusqlite::Result<()> {
    let (packet, role) = match event {
        Event::AgentState { packet, role, .. }
        | Event::AgentModelCall { packet, role, .. }
        | Event::AgentToolCall { packet, role, .. }
        | Event::AgentRetry { packet, role, .. }
        | Event::AgentFallback { packet, role, .. } => (packet, role),
        _ => return Ok(()),
    };
    tx.execute(
        "INSERT OR IGNORE INTO agent_usage (run_id, packet_id, role, updated_ms) VALUES (?1, ?2, ?3, ?4)",
        params![run, packet, role, now],
    )?;
    let update = |sql: &str, values: &[&dyn rusqlite::ToSql]| {
        let mut all: Vec<&dyn rusqlite::ToSql> = values.to_vec();
        all.extend([&now as &dyn rusqlite::ToSql, &run, packet, role]);
        tx.execute(
            &format!(
                "UPDATE agent_usage SET {sql}, updated_ms = ? WHERE run_id = ? AND packet_id = ? AND role = ?"
            ),
            all.as_slice(),
        )
    };
    match event {
        Event::AgentState { to, reason, .. } => {
            update("state = ?, reason = ?", &[to, reason])?;
        }
        Event::AgentModelCall {
            model,
            input_tokens,
            output_tokens,
            cost_nanos,
            ..
        } => {
            let cost = cost_nanos.map(|c| c as i64);
            update(
                "model = ?, model_calls = model_calls + 1, input_tokens = input_tokens + ?,
                 output_tokens = output_tokens + ?,
                 cost_nanos = CASE WHEN ? IS NULL THEN cost_nanos ELSE COALESCE(cost_nanos, 0) + ? END",
                &[model, &(*input_tokens as i64), &(*output_tokens as i64), &cost, &cost],
            )?;
        }
        Event::AgentToolCall { ok, .. } => {
            update(
                "tool_calls = tool_calls + 1, tool_errors = tool_errors + ?",
                &[&i64::from(!ok)],
            )?;
        }
        Event::AgentRetry { .. } => {
            update("retries = retries + 1", &[])?;
        }
        Event::AgentFallback { to, .. } => {
            update("fallbacks = fallbacks + 1, model = ?", &[to])?;
        }
        _ => {}
    }
    Ok(())
}

impl Store {
    /// Returns the agents' activity in `run`, by packet (in plan order) and role.
    pub fn agent_usage(&self, run: &str) -> Result<Vec<AgentUsage>, StoreError> {
        let err = |source| StoreError::Sqlite {
            path: self.path().to_path_buf(),
            source,
        };
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT u.packet_id, u.role, u.state, u.reason, u.model, u.model_calls,
                 u.input_tokens, u.output_tokens, u.cost_nanos, u.tool_calls, u.tool_errors,
                 u.retries, u.fallbacks
                 FROM agent_usage u LEFT JOIN packets p ON p.run_id = u.run_id AND p.id = u.packet_id
                 WHERE u.run_id = ?1 ORDER BY p.idx, u.packet_id, u.role",
            )
            .map_err(err)?;
        let count = |r: &rusqlite::Row<'_>, i: usize| r.get::<_, i64>(i).map(|v| v.max(0) as u64);
        let rows = stmt
            .query_map([run], |r| {
                Ok(AgentUsage {
                    packet: r.get(0)?,
                    role: r.get(1)?,
                    state: r.get(2)?,
                    reason: r.get(3)?,
                    model: r.get(4)?,
                    model_calls: count(r, 5)?,
                    input_tokens: count(r, 6)?,
                    output_tokens: count(r, 7)?,
                    cost_nanos: r.get::<_, Option<i64>>(8)?.map(|v| v.max(0) as u64),
                    tool_calls: count(r, 9)?,
                    tool_errors: count(r, 10)?,
                    retries: count(r, 11)?,
                    fallbacks: count(r, 12)?,
                })
            })
            .map_err(err)?
            .collect::<Result<Vec<_>, _>>()
            .map_err(err)?;
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::{NewPacket, NewRun};

    fn call(cost_nanos: Option<u64>) -> Event {
        Event::AgentModelCall {
            packet: "a".into(),
            role: "coder".into(),
            model: "m".into(),
            turn: 1,
            input_tokens: 10,
            output_tokens: 3,
            cost_nanos,
            duration_ms: 1,
        }
    }

    #[test]
    fn agent_events_add_up_per_packet_and_role() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        store
            .create_run(&NewRun {
                id: "r".into(),
                objective: "o".into(),
                base: "b".into(),
                plan_toml: String::new(),
                plan_path: "p".into(),
                worker_cmd: None,
                max_parallel: 1,
                timeout_secs: 1,
                worktree_root: "/w".into(),
                packets: vec![NewPacket {
                    id: "a".into(),
                    title: "A".into(),
                    role: "coder".into(),
                    branch: "b".into(),
                    worktree: "/w/a".into(),
                }],
            })
            .unwrap();
        assert!(store.agent_usage("r").unwrap().is_empty());
        store.record("r", &call(None)).unwrap();
        assert_eq!(store.agent_usage("r").unwrap()[0].cost_nanos, None);
        store.record("r", &call(Some(7))).unwrap();
        store.record("r", &call(Some(5))).unwrap();
        for ok in [true, false] {
            store
                .record(
                    "r",
                    &Event::AgentToolCall {
                        packet: "a".into(),
                        role: "coder".into(),
                        turn: 1,
                        tool: "read_file".into(),
                        ok,
                        duration_ms: 1,
                        target: String::new(),
                    },
                )
                .unwrap();
        }
        store
            .record(
                "r",
                &Event::AgentState {
                    packet: "a".into(),
                    role: "coder".into(),
                    from: "running".into(),
                    to: "blocked".into(),
                    reason: "stuck".into(),
                },
            )
            .unwrap();
        store
            .record(
                "r",
                &Event::AgentState {
                    packet: "a".into(),
                    role: "reviewer".into(),
                    from: "initializing".into(),
                    to: "running".into(),
                    reason: "started".into(),
                },
            )
            .unwrap();
        let usage = store.agent_usage("r").unwrap();
        assert_eq!(usage.len(), 2);
        let coder = &usage[0];
        assert_eq!(
            (coder.model_calls, coder.input_tokens, coder.output_tokens),
            (3, 30, 9)
        );
        assert_eq!(coder.cost_nanos, Some(12));
        assert_eq!((coder.tool_calls, coder.tool_errors), (2, 1));
        assert_eq!(
            (coder.state.as_str(), coder.reason.as_deref()),
            ("blocked", Some("stuck"))
        );
        assert_eq!(
            (usage[1].role.as_str(), usage[1].model_calls),
            ("reviewer", 0)
        );
    }
}
