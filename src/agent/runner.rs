//! The tool loop: ask the model, run the tools it calls, answer, repeat — until it calls
//! `complete`, signals `blocked`, runs out of turns or time, or is cancelled.
//!
//! An answer without a tool call is not success: the agent is asked once to call `complete`
//! or signal `blocked`, and marked blocked if it still does not. Repeating the same calls
//! without progress is a stall and ends the same way.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::Serialize;

use super::role::Role;
use super::state::WorkerState;
use super::tools::{Registry, Signal, ToolContext, ToolFailure, ToolResult};
use crate::config::Price;
use crate::confine::ConfinedRoot;
use crate::llm::{self, ChatModel, ChatRequest, LlmError, Message, RetryEvent, RetryPolicy, Usage};
use crate::plan::Scope;

/// Identical consecutive rounds of tool calls that count as a stall.
const STALL_REPEATS: usize = 3;

/// Answers an agent's question (`question`, addressee role) or returns `None`.
pub type Answerer = dyn Fn(&str, Option<&str>) -> Option<String> + Sync;

/// What one agent run needs.
pub struct AgentSpec<'a> {
    pub role: &'a Role,
    /// The primary model first, then its fallbacks.
    pub models: Vec<&'a dyn ChatModel>,
    /// The primary profile's context window, in tokens.
    pub context_tokens: u64,
    pub task: String,
    pub root: &'a ConfinedRoot,
    /// The packet's declared files; `None` when only the role's scope applies.
    pub packet_files: Option<Vec<String>>,
    pub registry: &'a Registry,
    pub stop: &'a AtomicBool,
    pub policy: RetryPolicy,
    /// The model's price, for cost accounting.
    pub price: Option<Price>,
    /// Answers `ask`; `None` (or a `None` answer) leaves the agent waiting for input.
    pub answer: Option<&'a Answerer>,
    /// How run_command is confined; `None` runs commands unrestricted.
    pub sandbox: Option<super::sandbox::Sandbox>,
}

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
    ToolCall {
        turn: u32,
        name: String,
        ok: bool,
        ms: u64,
        summary: String,
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
    Question {
        question: String,
        to: Option<String>,
    },
}

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
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
}

/// Why a run could not even start.
#[derive(Debug, thiserror::Error)]
pub enum AgentError {
    #[error("role `{role}` has an invalid write scope: {message}")]
    Scope { role: String, message: String },
    #[error("the agent has no model to talk to")]
    NoModel,
}

struct Run<'a, 'b> {
    spec: &'b AgentSpec<'a>,
    state: WorkerState,
    out: AgentOutcome,
    on_event: &'b mut dyn FnMut(&AgentEvent),
}

impl Run<'_, '_> {
    fn emit(&mut self, e: AgentEvent) {
        (self.on_event)(&e);
    }

    /// Moves to `to` when the transition is valid; returns false otherwise.
    fn transition(&mut self, to: WorkerState, reason: &str) -> bool {
        if self.state == to {
            return true;
        }
        if !self.state.can_move_to(to) {
            return false;
        }
        let from = self.state;
        self.state = to;
        self.emit(AgentEvent::State {
            from,
            to,
            reason: reason.to_string(),
        });
        true
    }

    fn finish(mut self, to: WorkerState, reason: impl Into<String>) -> AgentOutcome {
        let reason = reason.into();
        self.transition(to, &reason);
        self.out.state = self.state;
        self.out.reason = reason;
        self.out.cost = self.spec.price.map(|p| cost_of(p, self.out.usage));
        self.out
    }
}

/// Runs the agent to its end and returns how it ended; `on_event` sees every step.
pub fn run(
    spec: &AgentSpec<'_>,
    on_event: &mut dyn FnMut(&AgentEvent),
) -> Result<AgentOutcome, AgentError> {
    if spec.models.is_empty() {
        return Err(AgentError::NoModel);
    }
    let role = spec.role;
    let scope_err = |e: crate::plan::PatternError| AgentError::Scope {
        role: role.name.clone(),
        message: e.to_string(),
    };
    let ctx = ToolContext {
        root: spec.root,
        role_scope: Scope::new(&role.write_scope).map_err(scope_err)?,
        role_scope_text: role.write_scope.clone(),
        packet_scope: match &spec.packet_files {
            Some(files) => Some((Scope::new(files).map_err(scope_err)?, files.clone())),
            None => None,
        },
        touched: Mutex::new(BTreeSet::new()),
        stop: spec.stop,
        network: role.network,
        sandbox: spec.sandbox.clone(),
    };
    let mut run = Run {
        spec,
        state: WorkerState::Initializing,
        out: AgentOutcome {
            state: WorkerState::Initializing,
            reason: String::new(),
            summary: None,
            touched_files: Vec::new(),
            learnings: Vec::new(),
            usage: Usage::default(),
            cost: None,
            turns: 0,
            tool_calls: 0,
            tool_errors: 0,
            retries: 0,
        },
        on_event,
    };
    run.transition(WorkerState::Running, "started");
    let deadline = Instant::now() + Duration::from_secs(role.timeout_secs.max(1));
    let mut req = ChatRequest {
        messages: vec![
            Message::system(system_prompt(spec)),
            Message::user(spec.task.clone()),
        ],
        tools: spec.registry.defs(),
        ..Default::default()
    };
    let mut nudged = false;
    let mut last_round: Option<Vec<(String, String)>> = None;
    let mut repeats = 0;
    let mut trimmed_for_overflow = false;
    while run.out.turns < role.max_turns {
        if spec.stop.load(Ordering::SeqCst) {
            return Ok(run.finish(WorkerState::Cancelled, "cancelled"));
        }
        if Instant::now() > deadline {
            return Ok(run.finish(
                WorkerState::Error,
                format!(
                    "timed out after {}s (the role's timeout)",
                    role.timeout_secs
                ),
            ));
        }
        run.out.turns += 1;
        let turn = run.out.turns;
        let dropped = bound_context(&mut req.messages, spec.context_tokens, 6);
        if dropped > 0 {
            run.emit(AgentEvent::ContextTrimmed {
                dropped_outputs: dropped,
            });
        }
        let started = Instant::now();
        let mut retry_events = Vec::new();
        let result = llm::chat_with_retry(
            &spec.models,
            &req,
            &spec.policy,
            spec.stop,
            &mut |_| !spec.stop.load(Ordering::SeqCst) && Instant::now() < deadline,
            &mut |e| retry_events.push(e.clone()),
        );
        for e in retry_events {
            run.out.retries += 1;
            run.emit(match e {
                RetryEvent::Retrying {
                    model,
                    attempt,
                    delay,
                    error,
                } => AgentEvent::Retry {
                    model,
                    attempt,
                    delay_ms: delay.as_millis() as u64,
                    error: error.to_string(),
                },
                RetryEvent::FallingBack { from, to, error } => AgentEvent::Fallback {
                    from,
                    to,
                    error: error.to_string(),
                },
            });
        }
        let resp = match result {
            Ok((resp, _)) => resp,
            Err(LlmError::Cancelled { .. }) if spec.stop.load(Ordering::SeqCst) => {
                return Ok(run.finish(WorkerState::Cancelled, "cancelled"));
            }
            Err(LlmError::Cancelled { .. }) => {
                return Ok(run.finish(
                    WorkerState::Error,
                    format!(
                        "timed out after {}s (the role's timeout)",
                        role.timeout_secs
                    ),
                ));
            }
            Err(LlmError::ContextTooLong { .. }) if !trimmed_for_overflow => {
                trimmed_for_overflow = true;
                let dropped = bound_context(&mut req.messages, 0, 2);
                run.emit(AgentEvent::ContextTrimmed {
                    dropped_outputs: dropped,
                });
                run.out.turns -= 1;
                continue;
            }
            Err(e) => return Ok(run.finish(WorkerState::Error, e.to_string())),
        };
        run.out.usage.add(resp.usage);
        run.emit(AgentEvent::ModelCall {
            turn,
            model: resp.model.clone(),
            input_tokens: resp.usage.input_tokens,
            output_tokens: resp.usage.output_tokens,
            cost: spec.price.map(|p| cost_of(p, resp.usage)),
            ms: started.elapsed().as_millis() as u64,
        });
        req.messages.push(resp.to_message());
        if resp.tool_calls.is_empty() {
            if nudged {
                return Ok(run.finish(
                    WorkerState::Blocked,
                    "the agent ended its turn twice without calling `complete`",
                ));
            }
            nudged = true;
            req.messages.push(Message::user(
                "You ended your turn without calling `complete`. If the task is done, call `complete` with a summary; if you cannot go on, call `signal_state` with state `blocked` and the reason.",
            ));
            continue;
        }
        let round: Vec<(String, String)> = resp
            .tool_calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect();
        if last_round.as_ref() == Some(&round) {
            repeats += 1;
        } else {
            repeats = 1;
            last_round = Some(round);
        }
        let mut end: Option<(WorkerState, String)> = None;
        for call in &resp.tool_calls {
            run.out.tool_calls += 1;
            let t0 = Instant::now();
            let result = match call.parse_arguments() {
                Err(msg) => Err(ToolFailure::Model(msg)),
                Ok(args) => match spec.registry.get(&call.name) {
                    None => Err(ToolFailure::Model(format!(
                        "there is no tool `{}` for this role; available: {}",
                        call.name,
                        spec.registry.names().join(", ")
                    ))),
                    Some(_) if end.is_some() => Err(ToolFailure::Model(
                        "not run: the agent already ended".into(),
                    )),
                    Some(tool) => (tool.handler)(&ctx, &args),
                },
            };
            let (content, is_error) = match result {
                Ok(ToolResult::Text(t)) => (t, false),
                Ok(ToolResult::Signal(signal, text)) => match signal {
                    Signal::State { state, reason } => {
                        if run.transition(state, &reason) {
                            if state == WorkerState::Blocked {
                                end = Some((WorkerState::Blocked, reason));
                            }
                            (text, false)
                        } else {
                            (
                                format!(
                                    "cannot move from {} to {}",
                                    run.state.as_str(),
                                    state.as_str()
                                ),
                                true,
                            )
                        }
                    }
                    Signal::Ask { question, to } => {
                        run.emit(AgentEvent::Question {
                            question: question.clone(),
                            to: to.clone(),
                        });
                        run.transition(WorkerState::WaitingForInput, &question);
                        match spec.answer.and_then(|a| a(&question, to.as_deref())) {
                            Some(answer) => {
                                run.transition(WorkerState::Running, "answer received");
                                (answer, false)
                            }
                            None => {
                                end = Some((
                                    WorkerState::WaitingForInput,
                                    format!("waiting for an answer to: {question}"),
                                ));
                                (text, false)
                            }
                        }
                    }
                    Signal::Complete {
                        summary,
                        touched_files,
                        learnings,
                    } => {
                        run.transition(WorkerState::Completing, "complete called");
                        run.out.summary = Some(summary.clone());
                        run.out.touched_files = touched_files;
                        run.out.learnings = learnings;
                        end = Some((WorkerState::Completed, summary));
                        (text, false)
                    }
                },
                Err(ToolFailure::Model(m)) => (m, true),
                Err(ToolFailure::Infrastructure(m)) => {
                    return Ok(run.finish(
                        WorkerState::Error,
                        format!("tool `{}` failed: {m}", call.name),
                    ));
                }
            };
            if is_error {
                run.out.tool_errors += 1;
            }
            let summary = llm_clip(&content, 120);
            run.emit(AgentEvent::ToolCall {
                turn,
                name: call.name.clone(),
                ok: !is_error,
                ms: t0.elapsed().as_millis() as u64,
                summary,
            });
            req.messages.push(Message::Tool {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content,
                is_error,
            });
        }
        if let Some((state, reason)) = end {
            return Ok(run.finish(state, reason));
        }
        if repeats >= STALL_REPEATS {
            return Ok(run.finish(
                WorkerState::Blocked,
                format!("stalled: the same tool calls {repeats} times in a row without progress"),
            ));
        }
    }
    Ok(run.finish(
        WorkerState::Blocked,
        format!(
            "reached the role's limit of {} turns without calling `complete`",
            role.max_turns
        ),
    ))
}

/// Returns what `usage` costs at `price` (prices are per million tokens).
fn cost_of(price: Price, usage: Usage) -> f64 {
    (usage.input_tokens as f64 * price.input_per_mtok
        + usage.output_tokens as f64 * price.output_per_mtok)
        / 1e6
}

fn llm_clip(text: &str, max: usize) -> String {
    let first = text.lines().next().unwrap_or("");
    crate::llm::clip_text(first, max)
}

/// Returns the system prompt: the role's instructions plus the facts of this run.
fn system_prompt(spec: &AgentSpec<'_>) -> String {
    let role = spec.role;
    let mut s = role.instructions.clone();
    s.push_str(&format!(
        "\n\n## This run\n\n- Role: {}\n- Tools: {}\n",
        role.name,
        spec.registry.names().join(", ")
    ));
    if role.write_scope.is_empty() {
        s.push_str("- You may not write files.\n");
    } else {
        s.push_str(&format!(
            "- You may write: {}\n",
            role.write_scope.join(", ")
        ));
    }
    if let Some(files) = &spec.packet_files {
        s.push_str(&format!(
            "- This packet declared the files: {}\n",
            files.join(", ")
        ));
    }
    s
}

/// Replaces the content of old tool outputs with a placeholder while the conversation is
/// larger than three quarters of `context_tokens` (≈ 4 characters a token); the last `keep`
/// messages are never touched. Returns how many outputs were dropped.
fn bound_context(messages: &mut [Message], context_tokens: u64, keep: usize) -> usize {
    let budget = (context_tokens as usize).saturating_mul(3);
    let mut size: usize = messages.iter().map(Message::text_len).sum();
    let mut dropped = 0;
    let end = messages.len().saturating_sub(keep);
    for m in messages[..end].iter_mut() {
        if size <= budget {
            break;
        }
        if let Message::Tool { name, content, .. } = m
            && !content.starts_with("[output of")
        {
            let placeholder = format!(
                "[output of {name} dropped to save context; call the tool again if you need it]"
            );
            size = size - content.len() + placeholder.len();
            *content = placeholder;
            dropped += 1;
        }
    }
    dropped
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn old_tool_outputs_are_dropped_first_and_recent_ones_kept() {
        let tool = |c: &str| Message::Tool {
            call_id: "1".into(),
            name: "read_file".into(),
            content: c.into(),
            is_error: false,
        };
        let big = "x".repeat(4000);
        let mut msgs = vec![Message::system("s"), tool(&big), tool(&big), tool(&big)];
        let dropped = bound_context(&mut msgs, 1000, 1);
        assert_eq!(dropped, 2);
        assert!(matches!(&msgs[3], Message::Tool { content, .. } if content.len() == 4000));
        assert_eq!(bound_context(&mut msgs, 1_000_000, 1), 0);
    }
}
