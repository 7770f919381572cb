//! The tool loop: ask the model, run the tools it calls, answer, repeat — until it calls
//! `complete`, signals `blocked`, runs out of turns or time, stalls, or is cancelled.
//!
//! An answer without a tool call is not success: the agent is asked once to call `complete`
//! or signal `blocked`, and marked blocked if it still does not. Repeating the same calls
//! without progress is a stall and ends the same way, as does a model that streams nothing
//! for the role's stall timeout.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::call::{self, Watched};
use super::context::{bound_context, system_prompt};
use super::dispatch::Dispatched;
use super::events::{AgentError, AgentEvent, AgentOutcome};
use super::role::Role;
use super::state::WorkerState;
use super::summary;
use super::tools::{Registry, SubtaskRequest, ToolContext};
use crate::config::Price;
use crate::confine::ConfinedRoot;
use crate::llm::{ChatModel, ChatRequest, LlmError, Message, RetryEvent, RetryPolicy};
use crate::plan::Scope;

/// Identical consecutive rounds of tool calls that count as a stall.
const STALL_REPEATS: usize = 3;

/// What became of an agent's question.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// The answer, given back to the agent as the tool's result.
    Answer(String),
    /// The question may not be asked (depth limit, cycle, unknown role): the reason goes
    /// back to the agent as a tool error, and it goes on working.
    Refused(String),
    /// Nobody answers now: the agent ends waiting for input.
    Pending,
}

/// The runtime's side of the control tools that need more than the worktree: questions
/// (`ask`) and subtasks (`spawn_subtask`).
pub trait Host: Sync {
    /// Answers `question`, addressed to role `to` (`None`: a human).
    fn answer(&self, question: &str, to: Option<&str>) -> Reply;

    /// Runs a subtask to its end and returns what the parent is told: `Ok` when its work is
    /// merged into the parent's worktree, `Err` with the reason otherwise.
    fn spawn(&self, request: &SubtaskRequest) -> Result<String, String> {
        let _ = request;
        Err("subtasks are not available to this agent; do the work yourself".into())
    }
}

/// A plain function answers questions and has no subtasks.
impl<F: Fn(&str, Option<&str>) -> Reply + Sync> Host for F {
    fn answer(&self, question: &str, to: Option<&str>) -> Reply {
        self(question, to)
    }
}

/// Answers an agent's questions and runs its subtasks.
pub type Answerer<'a> = dyn Host + 'a;

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
    /// Answers `ask` and runs `spawn_subtask`; `None` (or a pending answer) leaves an
    /// asking agent waiting for input, and refuses subtasks.
    pub answer: Option<&'a (dyn Host + 'a)>,
    /// How run_command is confined; `None` runs commands unrestricted.
    pub sandbox: Option<super::sandbox::Sandbox>,
}

/// A run in progress: its state, its tally, and where its events go.
pub(super) struct Run<'a, 'b> {
    pub spec: &'b AgentSpec<'a>,
    pub state: WorkerState,
    pub out: AgentOutcome,
    on_event: &'b mut dyn FnMut(&AgentEvent),
    nav: &'b crate::nav::tools::NavCounter,
}

impl Run<'_, '_> {
    pub(super) fn emit(&mut self, e: AgentEvent) {
        (self.on_event)(&e);
    }

    /// Moves to `to` when the transition is valid; returns false otherwise.
    pub(super) fn transition(&mut self, to: WorkerState, reason: &str) -> bool {
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
        (self.out.symbolic_nav_calls, self.out.textual_nav_calls) = self.nav.counts();
        self.out.cost = self.spec.price.map(|p| p.cost(self.out.usage));
        self.out
    }

    fn retried(&mut self, events: Vec<RetryEvent>) {
        for e in events {
            self.out.retries += 1;
            self.emit(match e {
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
    }
}

impl Run<'_, '_> {
    /// Replaces the older turns of `messages` by a summary; returns false when there was too
    /// little to summarise.
    fn summarise(
        &mut self,
        messages: &mut Vec<Message>,
        deadline: Instant,
        stall: Duration,
    ) -> bool {
        let spec = self.spec;
        let Some(range) = summary::range(messages, summary::KEEP_RECENT) else {
            return false;
        };
        let older = &messages[range.clone()];
        let req = summary::request(older, spec.context_tokens);
        let started = Instant::now();
        let watched = Watched {
            models: &spec.models,
            req: &req,
            policy: &spec.policy,
            stop: spec.stop,
            deadline,
            stall,
        };
        let end = call::watched(&watched, &mut |_| {});
        self.retried(end.retries);
        let (text, by_model) = match end.result {
            Ok((resp, _)) if !resp.text.trim().is_empty() => {
                self.out.usage.add(resp.usage);
                self.emit(AgentEvent::ModelCall {
                    turn: self.out.turns,
                    model: resp.model.clone(),
                    input_tokens: resp.usage.input_tokens,
                    output_tokens: resp.usage.output_tokens,
                    cost: spec.price.map(|p| p.cost(resp.usage)),
                    ms: started.elapsed().as_millis() as u64,
                });
                (resp.text, true)
            }
            _ => (summary::digest(older), false),
        };
        let replaced = range.len();
        messages.splice(range, [summary::message(&text, replaced)]);
        self.emit(AgentEvent::ContextSummarised {
            replaced_messages: replaced,
            by_model,
        });
        true
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
        nav: super::tools::nav::NavState::new(spec.registry.get("nav_def").is_some()),
    };
    let mut run = Run {
        spec,
        state: WorkerState::Initializing,
        out: AgentOutcome::default(),
        on_event,
        nav: &ctx.nav.counter,
    };
    run.transition(WorkerState::Running, "started");
    let timed_out = || {
        format!(
            "timed out after {}s (the role's timeout)",
            role.timeout_secs
        )
    };
    let deadline = Instant::now() + Duration::from_secs(role.timeout_secs.max(1));
    let stall = Duration::from_secs(role.stall_timeout_secs.max(1));
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
    // The provider's count of the last prompt, the best measure of the conversation's size.
    let mut last_input = 0;
    while run.out.turns < role.max_turns {
        if spec.stop.load(Ordering::SeqCst) {
            return Ok(run.finish(WorkerState::Cancelled, "cancelled"));
        }
        if Instant::now() > deadline {
            return Ok(run.finish(WorkerState::Error, timed_out()));
        }
        run.out.turns += 1;
        let turn = run.out.turns;
        if summary::near_window(&req.messages, spec.context_tokens, last_input)
            && run.summarise(&mut req.messages, deadline, stall)
        {
            last_input = 0;
        }
        let dropped = bound_context(&mut req.messages, spec.context_tokens, 6);
        if dropped > 0 {
            run.emit(AgentEvent::ContextTrimmed {
                dropped_outputs: dropped,
            });
        }
        let started = Instant::now();
        let watched = Watched {
            models: &spec.models,
            req: &req,
            policy: &spec.policy,
            stop: spec.stop,
            deadline,
            stall,
        };
        let end = call::watched(&watched, &mut |quiet| {
            let reason = stall_reason(quiet);
            run.transition(WorkerState::Blocked, &reason);
        });
        run.retried(end.retries);
        if let Some(quiet) = end.stalled {
            return Ok(run.finish(WorkerState::Blocked, stall_reason(quiet)));
        }
        let resp = match end.result {
            Ok((resp, _)) => resp,
            Err(LlmError::Cancelled { .. }) if spec.stop.load(Ordering::SeqCst) => {
                return Ok(run.finish(WorkerState::Cancelled, "cancelled"));
            }
            Err(LlmError::Cancelled { .. }) => {
                return Ok(run.finish(WorkerState::Error, timed_out()));
            }
            Err(LlmError::ContextTooLong { .. }) if !trimmed_for_overflow => {
                trimmed_for_overflow = true;
                run.summarise(&mut req.messages, deadline, stall);
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
        last_input = resp.usage.input_tokens;
        run.emit(AgentEvent::ModelCall {
            turn,
            model: resp.model.clone(),
            input_tokens: resp.usage.input_tokens,
            output_tokens: resp.usage.output_tokens,
            cost: spec.price.map(|p| p.cost(resp.usage)),
            ms: started.elapsed().as_millis() as u64,
        });
        req.messages.push(resp.to_message());
        if !resp.text.trim().is_empty() {
            run.out.last_text.clone_from(&resp.text);
        }
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
            match run.dispatch(&ctx, turn, call, end.is_some(), &mut req.messages) {
                Dispatched::Continue => {}
                Dispatched::End(state, reason) => end = Some((state, reason)),
                Dispatched::Failed(reason) => return Ok(run.finish(WorkerState::Error, reason)),
            }
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

/// Returns the reason given when the model streamed nothing for `quiet`.
fn stall_reason(quiet: Duration) -> String {
    format!(
        "stalled: the model sent nothing for {}s (the role's stall timeout)",
        quiet.as_secs()
    )
}
