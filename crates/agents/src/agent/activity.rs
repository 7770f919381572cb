//! Turns an agent's events into run-store events: what the run store keeps of an agent's
//! work (states with reasons, model calls with tokens and cost, tool names, retries).
//!
//! Of a tool call only its key argument is kept (a path, a symbol, a command's first line,
//! clipped), for the progress lines; whole arguments, outputs and the model's text are
//! deliberately left out — they may hold file contents or secrets and belong to the packet's
//! transcript — and every text field is scrubbed of the API keys in use, so no key reaches
//! the journal even if a provider echoes one.

use super::AgentEvent;
use orchestra_core::llm::ApiKey;
use orchestra_core::store::Event;

/// Returns the run-store event for `event` of the agent of `role` on `packet`, or `None` for
/// events the journal does not keep (context trimming, questions: the transcript has them).
pub fn store_event(packet: &str, role: &str, keys: &[ApiKey], event: &AgentEvent) -> Option<Event> {
    let scrub = |text: &str| ApiKey::scrub_all(keys, text);
    let (packet, role) = (packet.to_string(), role.to_string());
    Some(match event {
        AgentEvent::State { from, to, reason } => Event::AgentState {
            packet,
            role,
            from: from.as_str().to_string(),
            to: to.as_str().to_string(),
            reason: scrub(reason),
        },
        AgentEvent::ModelCall {
            turn,
            model,
            input_tokens,
            output_tokens,
            cost,
            ms,
        } => Event::AgentModelCall {
            packet,
            role,
            model: scrub(model),
            turn: *turn,
            input_tokens: *input_tokens,
            output_tokens: *output_tokens,
            cost_nanos: cost.map(|c| (c * 1e9).round().max(0.0) as u64),
            duration_ms: *ms,
        },
        AgentEvent::ToolCall {
            turn,
            name,
            ok,
            ms,
            target,
            ..
        } => Event::AgentToolCall {
            packet,
            role,
            turn: *turn,
            tool: scrub(name),
            ok: *ok,
            duration_ms: *ms,
            target: scrub(target),
        },
        AgentEvent::ModelWaiting { turn } => Event::AgentWaiting {
            packet,
            role,
            turn: *turn,
        },
        AgentEvent::Retry {
            model,
            attempt,
            delay_ms,
            error,
        } => Event::AgentRetry {
            packet,
            role,
            model: scrub(model),
            attempt: *attempt,
            delay_ms: *delay_ms,
            error: scrub(error),
        },
        AgentEvent::Fallback { from, to, error } => Event::AgentFallback {
            packet,
            role,
            from: scrub(from),
            to: scrub(to),
            error: scrub(error),
        },
        AgentEvent::ContextTrimmed { .. }
        | AgentEvent::ModelText { .. }
        | AgentEvent::ContextSummarised { .. }
        | AgentEvent::Question { .. }
        | AgentEvent::Subtask { .. } => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::WorkerState;

    #[test]
    fn keys_are_scrubbed_and_tool_details_dropped() {
        let keys = [ApiKey::new("sk-abcdef-123456")];
        let e = store_event(
            "p",
            "coder",
            &keys,
            &AgentEvent::Retry {
                model: "m".into(),
                attempt: 1,
                delay_ms: 5,
                error: "bad key sk-abcdef-123456".into(),
            },
        )
        .unwrap();
        let json = serde_json::to_string(&e).unwrap();
        assert!(
            !json.contains("sk-abcdef-123456") && json.contains("<redacted>"),
            "{json}"
        );
        let tool = store_event(
            "p",
            "coder",
            &keys,
            &AgentEvent::ToolCall {
                turn: 1,
                name: "read_file".into(),
                ok: true,
                ms: 1,
                summary: "token=hunter2".into(),
                target: "notes sk-abcdef-123456.txt".into(),
                args: serde_json::json!({"content": "token=hunter2"}),
                output_tail: "token=hunter2".into(),
            },
        )
        .unwrap();
        let tool = serde_json::to_string(&tool).unwrap();
        assert!(!tool.contains("hunter2"), "{tool}");
        assert!(
            tool.contains("\"target\":\"notes <redacted>.txt\""),
            "{tool}"
        );
        let state = store_event(
            "p",
            "coder",
            &keys,
            &AgentEvent::State {
                from: WorkerState::Running,
                to: WorkerState::Blocked,
                reason: "stuck".into(),
            },
        );
        assert!(matches!(state, Some(Event::AgentState { ref to, .. }) if to == "blocked"));
    }
}
