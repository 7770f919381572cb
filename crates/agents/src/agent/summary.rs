//! Summarising older turns: when the conversation nears the model's context window, the turns
//! between the task and the recent past are replaced by one message summarising them — what
//! was read, changed, tried and learned — so a long run keeps its memory in a bounded
//! conversation.
//!
//! The model writes the summary (one call without tools); if that call fails, a digest built
//! from the turns themselves (tools called with their paths, errors, the agent's notes) takes
//! its place, so summarising never ends a run.

use orchestra_core::llm::{ChatRequest, Message};
use orchestra_sys::redact::clip;

/// Messages at the end of the conversation that are never summarised.
pub(super) const KEEP_RECENT: usize = 6;

/// The instruction for the summary call.
const INSTRUCTION: &str = "You summarise the earlier part of a coding agent's work so the agent can continue without it. Write a compact summary (at most 300 words) of: what the task needs, which files were read and what was learned from them, which changes were made (files and what changed), which commands ran and their results, errors met and how they were handled, and what remains to do. Facts only; no preamble.";

/// Returns true if and only if the conversation exceeds three quarters of `context_tokens`,
/// by the provider's count of the last prompt or by size (≈ 4 characters a token).
pub(super) fn near_window(
    messages: &[Message],
    context_tokens: u64,
    last_input_tokens: u64,
) -> bool {
    let budget = context_tokens.saturating_mul(3) / 4;
    let chars: usize = messages.iter().map(Message::text_len).sum();
    last_input_tokens > budget || (chars as u64) / 4 > budget
}

/// Returns the range of messages to summarise — after the system prompt and the task, up to
/// an assistant message at least `keep` from the end (so no tool result loses its call) —
/// or `None` when there is too little to summarise.
pub(super) fn range(messages: &[Message], keep: usize) -> Option<std::ops::Range<usize>> {
    let start = 2;
    let limit = messages.len().saturating_sub(keep);
    let cut = (start + 1..=limit)
        .rev()
        .find(|&i| matches!(messages.get(i), Some(Message::Assistant { .. })))?;
    (cut > start + 1).then_some(start..cut)
}

/// Returns the request asking the model to summarise `older`, its text clipped so the
/// request fits in `context_tokens`.
pub(super) fn request(older: &[Message], context_tokens: u64) -> ChatRequest {
    let budget = (context_tokens as usize).saturating_mul(2).max(4000);
    let per_output = (budget / older.len().max(1)).clamp(200, 2000);
    let mut text = String::new();
    for m in older {
        text.push_str(&render(m, per_output));
        text.push('\n');
    }
    ChatRequest {
        messages: vec![
            Message::system(INSTRUCTION),
            Message::user(format!(
                "The earlier conversation:\n\n{}",
                clip(&text, budget)
            )),
        ],
        tools: Vec::new(),
        temperature: Some(0.0),
        max_tokens: Some(600),
    }
}

/// Returns a digest of `older` without a model: the tools called (with their paths), their
/// errors and the agent's own words.
pub(super) fn digest(older: &[Message]) -> String {
    let mut lines = Vec::new();
    for m in older {
        match m {
            Message::Assistant {
                content,
                tool_calls,
            } => {
                if !content.trim().is_empty() {
                    lines.push(format!("- said: {}", clip(content.trim(), 200)));
                }
                for c in tool_calls {
                    let path = c
                        .parse_arguments()
                        .ok()
                        .and_then(|a| a["path"].as_str().map(str::to_string))
                        .map(|p| format!(" {p}"))
                        .unwrap_or_default();
                    lines.push(format!("- called {}{path}", c.name));
                }
            }
            Message::Tool {
                name,
                content,
                is_error: true,
                ..
            } => lines.push(format!(
                "- {name} failed: {}",
                clip(content.lines().next().unwrap_or(""), 200)
            )),
            Message::User { content } => {
                lines.push(format!("- told: {}", clip(content.trim(), 200)))
            }
            _ => {}
        }
    }
    lines.join("\n")
}

/// Returns the message that replaces `replaced` older messages.
pub(super) fn message(summary: &str, replaced: usize) -> Message {
    Message::user(format!(
        "[Summary of the earlier conversation ({replaced} messages), replacing it to save context. Read files again when you need their current text.]\n{}",
        summary.trim()
    ))
}

fn render(m: &Message, max: usize) -> String {
    match m {
        Message::System { content } => format!("[system] {}", clip(content, max)),
        Message::User { content } => format!("[user] {}", clip(content, max)),
        Message::Assistant {
            content,
            tool_calls,
        } => {
            let mut s = format!("[assistant] {}", clip(content, max));
            for c in tool_calls {
                s.push_str(&format!(
                    "\n  calls {}({})",
                    c.name,
                    clip(&c.arguments, 300)
                ));
            }
            s
        }
        Message::Tool {
            name,
            content,
            is_error,
            ..
        } => format!(
            "[{name} {}] {}",
            if *is_error { "error" } else { "result" },
            clip(content, max)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use orchestra_core::llm::ToolCall;

    fn turn(n: usize) -> [Message; 2] {
        [
            Message::Assistant {
                content: String::new(),
                tool_calls: vec![ToolCall {
                    id: format!("c{n}"),
                    name: "read_file".into(),
                    arguments: format!("{{\"path\": \"src/f{n}.rs\"}}"),
                }],
            },
            Message::Tool {
                call_id: format!("c{n}"),
                name: "read_file".into(),
                content: "x".repeat(1000),
                is_error: n == 1,
            },
        ]
    }

    #[test]
    fn the_range_keeps_task_and_recent_turns_and_never_splits_a_call_from_its_result() {
        let mut msgs = vec![Message::system("s"), Message::user("task")];
        for n in 0..6 {
            msgs.extend(turn(n));
        }
        let r = range(&msgs, KEEP_RECENT).unwrap();
        assert_eq!(r, 2..8);
        assert!(matches!(msgs[r.end], Message::Assistant { .. }));
        assert!(range(&msgs[..6], KEEP_RECENT).is_none());
        assert!(near_window(&msgs, 2000, 0));
        assert!(!near_window(&msgs, 100_000, 0));
        assert!(near_window(&msgs, 100_000, 80_000));
        let d = digest(&msgs[r]);
        assert!(
            d.contains("called read_file src/f0.rs") && d.contains("read_file failed"),
            "{d}"
        );
        let req = request(&msgs[2..8], 32_000);
        assert!(req.tools.is_empty());
        assert!(
            matches!(&req.messages[1], Message::User { content } if content.contains("calls read_file"))
        );
    }
}
