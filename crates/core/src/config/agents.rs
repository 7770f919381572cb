//! The `[agents]` table: consultation and subtask limits, and the agent CLIs that work packets.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::merge;

/// The `[agents]` table: how far agents may consult each other and spawn subtasks.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentsConfig {
    /// Deepest chain of consultations (a consulted role consulting another …); default 2.
    pub consult_depth: Option<u32>,
    /// Most turns a consulted role may take to answer; default 6.
    pub consult_turns: Option<u32>,
    /// Most turns the clarifier, the planner and the plan reviewer may read the code before
    /// answering; default 12.
    pub explore_turns: Option<u32>,
    /// Deepest nesting of subtasks; default 1 (a subtask cannot spawn subtasks).
    pub subtask_depth: Option<u32>,
    /// Most subtasks one packet may spawn; default 3.
    pub subtasks_per_packet: Option<u32>,
    /// Agent CLIs by name (`[agents.cli.<name>]`): a built-in one changed, or another one.
    #[serde(default)]
    pub cli: BTreeMap<String, CliAgentConfig>,
}

/// An `[agents.cli.<name>]` table: how to run an agent CLI as a packet's worker.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CliAgentConfig {
    /// The program (default: the table's name).
    pub command: Option<String>,
    /// Arguments before the prompt (after a built-in adapter's own).
    pub args: Option<Vec<String>>,
    /// How the prompt is passed: `arg` (default), `stdin` or `flag:<flag>`.
    pub prompt: Option<String>,
    /// Its output format: claude, codex, gemini, qwen, opencode or text (default).
    pub output: Option<String>,
    /// The model, passed as `--model`.
    pub model: Option<String>,
    /// Extra environment variables (keys belong in the environment, not here).
    pub env: Option<BTreeMap<String, String>>,
    /// Seconds it may print nothing before it counts as stalled and is stopped (default 900).
    pub stall_secs: Option<u64>,
    /// Seconds the packet's activity may go without a line while it runs before a note says
    /// it is still running, for how long, and what it printed last (default 30).
    pub heartbeat_secs: Option<u64>,
}

impl AgentsConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: AgentsConfig) -> AgentsConfig {
        AgentsConfig {
            consult_depth: self.consult_depth.or(base.consult_depth),
            consult_turns: self.consult_turns.or(base.consult_turns),
            explore_turns: self.explore_turns.or(base.explore_turns),
            subtask_depth: self.subtask_depth.or(base.subtask_depth),
            subtasks_per_packet: self.subtasks_per_packet.or(base.subtasks_per_packet),
            cli: merge(self.cli, base.cli),
        }
    }
}
