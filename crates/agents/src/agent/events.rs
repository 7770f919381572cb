//! What an agent run reports: its events as they happen, how it ended, and why it could
//! not start.

use serde::Serialize;

use super::state::WorkerState;
use orchestra_core::llm::Usage;

/// The error of a retry that waits for an unreachable model server (the display words it as
/// "model server unreachable, retrying in N s").
pub const UNREACHABLE: &str = "model server unreachable";

/// Something that happened during a run, for the journal and the display.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    State {
        from: WorkerState,
        to: WorkerState,
        reason: String,
    },
    ModelCall {
        turn: u32,
        model: String,
        input_tokens: u64,
        output_tokens: u64,
        /// The call's cost at the primary model's price, when the price table knows it.
        cost: Option<f64>,
        ms: u64,
    },
    /// A model call began (the display shows how long it has been waiting).
    ModelWaiting {
        turn: u32,
    },
    /// The model's text of a turn (the transcript keeps it; the journal does not).
    ModelText {
        turn: u32,
        text: String,
    },
    ToolCall {
        turn: u32,
        name: String,
        ok: bool,
        ms: u64,
        summary: String,
        /// The call's key argument (a path, a symbol, a command's first line), clipped.
        #[serde(default, skip_serializing_if = "String::is_empty")]
        target: String,
        /// The call's arguments, long strings clipped (the transcript keeps them, scrubbed
        /// of keys; the journal does not).
        #[serde(default, skip_serializing_if = "serde_json::Value::is_null")]
        args: serde_json::Value,
        /// The end of a command's output (`run_command` only; the transcript keeps it).
        #[serde(default, skip_serializing_if = "String::is_empty")]
        output_tail: String,
    },
    Retry {
        model: String,
        attempt: u32,
        delay_ms: u64,
        error: String,
    },
    Fallback {
        from: String,
        to: String,
        error: String,
    },
    ContextTrimmed {
        dropped_outputs: usize,
    },
    /// Older turns were replaced by a summary (written by the model, or a digest of the
    /// turns when the summary call failed).
    ContextSummarised {
        replaced_messages: usize,
        by_model: bool,
    },
    Question {
        question: String,
        to: Option<String>,
    },
    /// The agent spawned a subtask and waits for it.
    Subtask {
        title: String,
        files: Vec<String>,
    },
}

/// How a run ended.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct AgentOutcome {
    pub state: WorkerState,
    pub reason: String,
    pub summary: Option<String>,
    pub touched_files: Vec<String>,
    pub learnings: Vec<String>,
    pub usage: Usage,
    pub cost: Option<f64>,
    pub turns: u32,
    pub tool_calls: u32,
    pub tool_errors: u32,
    pub retries: u32,
    /// Navigation calls through the symbol tools.
    pub symbolic_nav_calls: u64,
    /// Navigation calls through grep.
    pub textual_nav_calls: u64,
    /// The text of the model's last answer that had any, kept for roles whose answer is the
    /// text itself when a model forgets to call `complete` (not repeated in transcripts).
    #[serde(skip)]
    pub last_text: String,
    /// True when the run ended on something that may pass on another try: a model outage
    /// after the client's own retries, a stall, a timeout.
    #[serde(skip)]
    pub transient: bool,
    /// The whole conversation at the end, for a later turn of the same agent (a fix round).
    #[serde(skip)]
    pub messages: Vec<orchestra_core::llm::Message>,
}

impl AgentEvent {
    /// Writes the event to a transcript as one JSON line, scrubbed of `keys`; a transcript
    /// that cannot be written does not stop the agent.
    pub fn transcribe(&self, log: &mut dyn std::io::Write, keys: &[orchestra_core::llm::ApiKey]) {
        if let Ok(line) = serde_json::to_string(self) {
            let _ = writeln!(
                log,
                "{}",
                orchestra_core::llm::ApiKey::scrub_all(keys, &line)
            );
        }
    }
}

impl AgentOutcome {
    /// Returns the share of navigation calls that went through the symbol tools, `None` when
    /// the agent did not navigate.
    pub fn symbolic_share(&self) -> Option<f64> {
        let total = self.symbolic_nav_calls + self.textual_nav_calls;
        (total > 0).then(|| self.symbolic_nav_calls as f64 / total as f64)
    }

    /// Replaces every one of `keys` in the texts the outcome carries — why it ended, the
    /// agent's summary, its learnings, its last answer — which are journaled, reported, kept
    /// in the run store's memory and put into other roles' prompts: a model that read a key
    /// somewhere must not be able to pass it on through its final words.
    pub fn scrub(&mut self, keys: &[orchestra_core::llm::ApiKey]) {
        if keys.is_empty() {
            return;
        }
        let scrub = |t: &mut String| *t = orchestra_core::llm::ApiKey::scrub_all(keys, t);
        scrub(&mut self.reason);
        scrub(&mut self.last_text);
        self.summary.iter_mut().for_each(scrub);
        self.learnings.iter_mut().for_each(scrub);
    }
}

/// Why a run could not even start.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("role `{role}` has an invalid write scope: {message}")]
    Scope { role: String, message: String },
    #[error("the agent has no model to talk to")]
    NoModel,
}
