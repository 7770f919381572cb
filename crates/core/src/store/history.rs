//! What earlier packets cost: one row per packet that succeeded in any run of the repository,
//! with the tokens and cost of every agent that worked on it, for forecasts of new plans.

use serde::Serialize;

use super::{Store, StoreError};

/// One packet that succeeded in an earlier run, with what its agents used.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PacketHistory {
    pub run: String,
    pub packet: String,
    pub role: String,
    /// The model its own role's agent answered with last (`None` for a worker command).
    pub model: Option<String>,
    /// Input tokens of every agent on the packet (its reviewer's included).
    pub input_tokens: u64,
    /// Output tokens of every agent on the packet.
    pub output_tokens: u64,
    /// The cost in billionths of the price table's currency unit; `None` when no call on the
    /// packet was priced.
    pub cost_nanos: Option<u64>,
}

impl Store {
    /// Returns every packet that succeeded in any run, with its agents' tokens and cost, by
    /// run then plan order; packets no agent worked on (a worker command's) have no row.
    pub fn packet_history(&self) -> Result<Vec<PacketHistory>, StoreError> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT p.run_id, p.id, p.role,
                   (SELECT o.model FROM agent_usage o WHERE o.run_id = p.run_id
                      AND o.packet_id = p.id AND (o.role = p.role OR o.role LIKE p.role || '/%')
                      ORDER BY o.updated_ms DESC LIMIT 1),
                   SUM(u.input_tokens), SUM(u.output_tokens), SUM(u.cost_nanos)
                 FROM packets p JOIN agent_usage u ON u.run_id = p.run_id AND u.packet_id = p.id
                 WHERE p.state = 'succeeded'
                 GROUP BY p.run_id, p.id ORDER BY p.run_id, p.idx",
            )
            .map_err(|e| self.err(e))?;
        let count = |v: i64| v.max(0) as u64;
        stmt.query_map([], |r| {
            Ok(PacketHistory {
                run: r.get(0)?,
                packet: r.get(1)?,
                role: r.get(2)?,
                model: r.get(3)?,
                input_tokens: count(r.get(4)?),
                output_tokens: count(r.get(5)?),
                cost_nanos: r.get::<_, Option<i64>>(6)?.map(count),
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
    use crate::store::{Event, NewPacket, NewRun};

    #[test]
    fn only_succeeded_packets_count_with_every_agent_on_them() {
        let dir = tempfile::tempdir().unwrap();
        let mut store = Store::open(dir.path()).unwrap();
        let packet = |id: &str| NewPacket {
            id: id.into(),
            title: id.into(),
            role: "coder".into(),
            branch: format!("b/{id}"),
            worktree: format!("/w/{id}"),
        };
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
                packets: vec![packet("a"), packet("b")],
            })
            .unwrap();
        let call = |packet: &str, role: &str, model: &str, cost_nanos| Event::AgentModelCall {
            packet: packet.into(),
            role: role.into(),
            model: model.into(),
            turn: 1,
            input_tokens: 100,
            output_tokens: 10,
            cost_nanos,
            duration_ms: 1,
        };
        for e in [
            call("a", "coder", "m", Some(5)),
            call("a", "reviewer", "r", None),
            call("b", "coder", "m", Some(7)),
            Event::PacketSucceeded {
                packet: "a".into(),
                commit: "c".into(),
            },
            Event::PacketFailed {
                packet: "b".into(),
                reason: "no".into(),
            },
        ] {
            store.record("r", &e).unwrap();
        }
        let rows = store.packet_history().unwrap();
        assert_eq!(
            rows,
            vec![PacketHistory {
                run: "r".into(),
                packet: "a".into(),
                role: "coder".into(),
                model: Some("m".into()),
                input_tokens: 200,
                output_tokens: 20,
                cost_nanos: Some(5),
            }]
        );
    }
}
