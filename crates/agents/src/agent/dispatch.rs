//! Running one tool call of the model: parse its arguments, find the tool, run it, and turn
//! its signals (state changes, questions, completion) into the run's state.

use std::time::Instant;

use super::events::AgentEvent;
use super::runner::{Reply, Run};
use super::state::WorkerState;
use super::tools::{Signal, ToolContext, ToolFailure, ToolResult};
use orchestra_core::llm::{Message, ToolCall};

/// What a tool call did to the run.
pub(super) enum Dispatched {
    /// Go on: the result is in the conversation.
    Continue,
    /// The agent ended (completed, blocked, waiting for an answer) with this state and reason.
    End(WorkerState, String),
    /// The tool's infrastructure failed; the run ends in error.
    Failed(String),
}

impl Run<'_, '_> {
    /// Runs `call` and appends its result to `messages`; `ended` says an earlier call of the
    /// same round already ended the agent (later calls are answered but not run).
    pub(super) fn dispatch(
        &mut self,
        ctx: &ToolContext<'_>,
        turn: u32,
        call: &ToolCall,
        ended: bool,
        messages: &mut Vec<Message>,
    ) -> Dispatched {
        let spec = self.spec;
        self.out.tool_calls += 1;
        let t0 = Instant::now();
        let result = match call.parse_arguments() {
            Err(msg) => Err(ToolFailure::Model(msg)),
            Ok(args) => match spec.registry.get(&call.name) {
                None => Err(ToolFailure::Model(format!(
                    "there is no tool `{}` for this role; available: {}",
                    call.name,
                    spec.registry.names().join(", ")
                ))),
                Some(_) if ended => Err(ToolFailure::Model(
                    "not run: the agent already ended".into(),
                )),
                Some(tool) => (tool.handler)(ctx, &args),
            },
        };
        let mut outcome = Dispatched::Continue;
        let (content, is_error) = match result {
            Ok(ToolResult::Text(t)) => (t, false),
            Ok(ToolResult::Signal(signal, text)) => {
                let (content, is_error, end) = self.signal(signal, text);
                if let Some((state, reason)) = end {
                    outcome = Dispatched::End(state, reason);
                }
                (content, is_error)
            }
            Err(ToolFailure::Model(m)) => (m, true),
            Err(ToolFailure::Infrastructure(m)) => {
                return Dispatched::Failed(format!("tool `{}` failed: {m}", call.name));
            }
        };
        if is_error {
            self.out.tool_errors += 1;
        }
        let args = call.parse_arguments().unwrap_or_default();
        self.emit(AgentEvent::ToolCall {
            turn,
            name: call.name.clone(),
            ok: !is_error,
            ms: t0.elapsed().as_millis() as u64,
            summary: first_line(&content, 120),
            target: target_of(&args),
            args: clipped(args),
            output_tail: if call.name == "run_command" {
                tail_of(&content, 1_500)
            } else {
                String::new()
            },
        });
        messages.push(Message::Tool {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content,
            is_error,
        });
        outcome
    }

    /// Applies a tool's signal; returns the tool result, whether it is an error, and the end
    /// of the run it causes, if any.
    fn signal(
        &mut self,
        signal: Signal,
        text: String,
    ) -> (String, bool, Option<(WorkerState, String)>) {
        match signal {
            Signal::State { state, reason } => {
                if self.transition(state, &reason) {
                    let end = (state == WorkerState::Blocked).then_some((state, reason));
                    (text, false, end)
                } else {
                    let msg = format!(
                        "cannot move from {} to {}",
                        self.state.as_str(),
                        state.as_str()
                    );
                    (msg, true, None)
                }
            }
            Signal::Ask { question, to } => {
                self.emit(AgentEvent::Question {
                    question: question.clone(),
                    to: to.clone(),
                });
                self.transition(WorkerState::WaitingForInput, &question);
                let reply = self
                    .spec
                    .answer
                    .map_or(Reply::Pending, |a| a.answer(&question, to.as_deref()));
                match reply {
                    Reply::Answer(answer) => {
                        self.transition(WorkerState::Running, "answer received");
                        (answer, false, None)
                    }
                    Reply::Refused(why) => {
                        self.transition(WorkerState::Running, "question refused");
                        (why, true, None)
                    }
                    Reply::Pending => {
                        let reason = format!("waiting for an answer to: {question}");
                        (text, false, Some((WorkerState::WaitingForInput, reason)))
                    }
                }
            }
            Signal::Spawn(request) => {
                let Some(host) = self.spec.answer else {
                    return (
                        "subtasks are not available to this agent; do the work yourself".into(),
                        true,
                        None,
                    );
                };
                self.emit(AgentEvent::Subtask {
                    title: request.title.clone(),
                    files: request.files.clone(),
                });
                self.transition(
                    WorkerState::WaitingForSubtask,
                    &format!("subtask: {}", request.title),
                );
                let result = host.spawn(&request);
                self.transition(WorkerState::Running, "subtask ended");
                match result {
                    Ok(report) => (report, false, None),
                    Err(why) => (why, true, None),
                }
            }
            Signal::Complete {
                summary,
                touched_files,
                learnings,
            } => {
                self.transition(WorkerState::Completing, "complete called");
                self.out.summary = Some(summary.clone());
                self.out.touched_files = touched_files;
                self.out.learnings = learnings;
                (text, false, Some((WorkerState::Completed, summary)))
            }
        }
    }
}

/// Returns the first line of `text`, clipped to `max` bytes.
fn first_line(text: &str, max: usize) -> String {
    orchestra_sys::redact::clip(text.lines().next().unwrap_or(""), max)
}

/// Arguments whose value names what a tool call is about, in the order they are looked for.
const KEY_ARGUMENTS: [&str; 9] = [
    "path", "command", "symbol", "pattern", "query", "from", "question", "title", "q",
];

/// Returns the key argument of a call's `args` (its first line, at most 100 bytes), or an
/// empty string when it has none.
pub(super) fn target_of(args: &serde_json::Value) -> String {
    KEY_ARGUMENTS
        .iter()
        .find_map(|k| args.get(*k).and_then(|v| v.as_str()))
        .map(|v| first_line(v, 100))
        .unwrap_or_default()
}

/// Returns `args` with every string longer than 2,000 bytes clipped (a file's new content),
/// for the transcript.
pub(super) fn clipped(mut args: serde_json::Value) -> serde_json::Value {
    fn walk(v: &mut serde_json::Value) {
        match v {
            serde_json::Value::String(s) if s.len() > 2_000 => {
                *s = format!(
                    "{} [{} bytes in all]",
                    orchestra_sys::redact::clip(s, 2_000),
                    s.len()
                );
            }
            serde_json::Value::Array(items) => items.iter_mut().for_each(walk),
            serde_json::Value::Object(map) => map.values_mut().for_each(walk),
            _ => {}
        }
    }
    walk(&mut args);
    args
}

/// Returns the last `max` bytes of `text` (from a character boundary), for a command's tail.
fn tail_of(text: &str, max: usize) -> String {
    let mut start = text.len().saturating_sub(max);
    while !text.is_char_boundary(start) {
        start += 1;
    }
    text[start..].to_string()
}
