//! The tool loop: ask the model, run the tools it calls, answer, repeat — until it calls
//! `complete`, signals `blocked`, runs out of turns or time, stalls, or is cancelled.
//!
//! An answer without a tool call is not success: the agent is asked once to call `complete`
//! or signal `blocked`, and marked blocked if it still does not. Repeating the same calls
//! without progress is a stall and ends the same way, as does a model that, once its output
//! began, streams nothing for the role's stall timeout.

use std::collections::BTreeSet;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::call::{self, Watched};
use super::context::{bound_context, system_prompt};
use super::dispatch::Dispatched;
use super::events::{AgentError, AgentEvent, AgentOutcome, UNREACHABLE};
use super::role::Role;
use super::state::WorkerState;
use super::summary;
use super::tools::{Registry, SubtaskRequest, ToolContext};
use orchestra_core::config::Price;
use orchestra_core::llm::{
    ChatModel, ChatRequest, ChatResponse, LlmError, Message, RetryEvent, RetryPolicy,
};
use orchestra_core::plan::Scope;
use orchestra_sys::confine::ConfinedRoot;

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
    /// A reply with text and no tool call is the agent's answer (roles that answer in text
    /// after reading, such as the planner); otherwise the agent is reminded to call `complete`.
    pub text_answer: bool,
}

/// A run in progress: its state, its tally, and where its events go.
pub(super) struct Run<'a, 'b> {
    pub spec: &'b AgentSpec<'a>,
    pub state: WorkerState,
    pub out: AgentOutcome,
    on_event: &'b mut dyn FnMut(&AgentEvent),
    nav: &'b orchestra_nav::nav::tools::NavCounter,
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

    /// Tells that the model server could not be reached and is tried again after `retry_in`.
    fn unreachable(&mut self, retry_in: Duration) {
        self.out.retries += 1;
        self.emit(AgentEvent::Retry {
            model: self
                .spec
                .models
                .first()
                .map(|m| m.label())
                .unwrap_or_default(),
            attempt: self.out.retries,
            delay_ms: retry_in.as_millis() as u64,
            error: UNREACHABLE.to_string(),
        });
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
        let end = call::watched(&watched(spec, &req, deadline, stall), &mut |watch| {
            if let call::Watch::Unreachable { retry_in } = watch {
                self.unreachable(retry_in);
            }
        });
        self.retried(end.retries);
        let (text, by_model) = match end.result {
            Ok((resp, _)) if !resp.text.trim().is_empty() => {
                self.model_call(self.out.turns, &resp, started);
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

impl Run<'_, '_> {
    /// Counts a model answer's usage and reports the call.
    fn model_call(&mut self, turn: u32, resp: &ChatResponse, started: Instant) {
        self.out.usage.add(resp.usage);
        self.emit(AgentEvent::ModelCall {
            turn,
            model: resp.model.clone(),
            input_tokens: resp.usage.input_tokens,
            output_tokens: resp.usage.output_tokens,
            cost: self.spec.price.map(|p| p.cost(resp.usage)),
            ms: started.elapsed().as_millis() as u64,
        });
    }
}

/// Returns the watched model call of `req` within the run's limits.
fn watched<'w>(
    spec: &'w AgentSpec<'_>,
    req: &'w ChatRequest,
    deadline: Instant,
    stall: Duration,
) -> Watched<'w> {
    Watched {
        models: &spec.models,
        req,
        policy: &spec.policy,
        stop: spec.stop,
        deadline,
        stall,
    }
}

/// Runs the agent to its end and returns how it ended; `on_event` sees every step.
pub fn run(
    spec: &AgentSpec<'_>,
    on_event: &mut dyn FnMut(&AgentEvent),
) -> Result<AgentOutcome, AgentError> {
    run_from(spec, Vec::new(), on_event)
}

/// Runs the agent like [`run`], continuing `history` (an earlier run's conversation, see
/// [`AgentOutcome::messages`]) with `spec.task` as the next user message; an empty history
/// starts afresh. The outcome carries the whole conversation.
pub fn run_from(
    spec: &AgentSpec<'_>,
    history: Vec<Message>,
    on_event: &mut dyn FnMut(&AgentEvent),
) -> Result<AgentOutcome, AgentError> {
    if spec.models.is_empty() {
        return Err(AgentError::NoModel);
    }
    let ctx = tool_context(spec)?;
    let mut run = Run {
        spec,
        state: WorkerState::Initializing,
        out: AgentOutcome::default(),
        on_event,
        nav: &ctx.nav.counter,
    };
    run.transition(WorkerState::Running, "started");
    let mut talk = Conversation::new(spec);
    if !history.is_empty() {
        let mut messages = history;
        messages.push(Message::user(spec.task.clone()));
        talk.req.messages = messages;
    }
    let outcome = loop {
        if run.out.turns >= spec.role.max_turns {
            break run.finish(
                WorkerState::Blocked,
                format!(
                    "reached the role's limit of {} turns without calling `complete`",
                    spec.role.max_turns
                ),
            );
        }
        if let Some((state, reason)) = run.turn(&ctx, &mut talk) {
            break run.finish(state, reason);
        }
    };
    Ok(AgentOutcome {
        messages: talk.req.messages,
        ..outcome
    })
}

/// Returns the tool context of the run: the worktree, the role's and the packet's write
/// scopes, the sandbox, and navigation (offered when the registry has the symbol tools).
fn tool_context<'a>(spec: &AgentSpec<'a>) -> Result<ToolContext<'a>, AgentError> {
    let role = spec.role;
    let scope_err = |e: orchestra_core::plan::PatternError| AgentError::Scope {
        role: role.name.clone(),
        message: e.to_string(),
    };
    Ok(ToolContext {
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
    })
}

/// The conversation of one run and what the loop remembers between turns.
struct Conversation {
    req: ChatRequest,
    deadline: Instant,
    stall: Duration,
    /// Whether the agent was already asked to call `complete` after a turn without tools.
    nudged: bool,
    last_round: Option<Vec<(String, String)>>,
    repeats: usize,
    trimmed_for_overflow: bool,
    /// The provider's count of the last prompt, the best measure of the conversation's size.
    last_input: u64,
}

impl Conversation {
    /// Returns the opening conversation (system prompt, task, the role's tools) and the
    /// run's deadline and stall limit, counted from now.
    fn new(spec: &AgentSpec<'_>) -> Conversation {
        let role = spec.role;
        Conversation {
            req: ChatRequest {
                messages: vec![
                    Message::system(system_prompt(spec)),
                    Message::user(spec.task.clone()),
                ],
                tools: spec.registry.defs(),
                ..Default::default()
            },
            deadline: Instant::now() + Duration::from_secs(role.timeout_secs.max(1)),
            stall: Duration::from_secs(role.stall_timeout_secs.max(1)),
            nudged: false,
            last_round: None,
            repeats: 0,
            trimmed_for_overflow: false,
            last_input: 0,
        }
    }
}

/// Returns the reason given when the run outlives the role's timeout.
fn timed_out(role: &Role) -> String {
    format!(
        "timed out after {}s (the role's timeout)",
        role.timeout_secs
    )
}

impl Run<'_, '_> {
    /// Plays one turn: keeps the context bounded, asks the model, and acts on its answer.
    /// Returns how the run ends, or `None` to go on.
    fn turn(
        &mut self,
        ctx: &ToolContext<'_>,
        talk: &mut Conversation,
    ) -> Option<(WorkerState, String)> {
        let spec = self.spec;
        if spec.stop.load(Ordering::SeqCst) {
            return Some((WorkerState::Cancelled, "cancelled".into()));
        }
        if Instant::now() > talk.deadline {
            self.out.transient = true;
            return Some((WorkerState::Error, timed_out(spec.role)));
        }
        self.out.turns += 1;
        let turn = self.out.turns;
        if summary::near_window(&talk.req.messages, spec.context_tokens, talk.last_input)
            && self.summarise(&mut talk.req.messages, talk.deadline, talk.stall)
        {
            talk.last_input = 0;
        }
        let dropped = bound_context(&mut talk.req.messages, spec.context_tokens, 6);
        if dropped > 0 {
            self.emit(AgentEvent::ContextTrimmed {
                dropped_outputs: dropped,
            });
        }
        self.emit(AgentEvent::ModelWaiting { turn });
        let started = Instant::now();
        let end = call::watched(
            &watched(spec, &talk.req, talk.deadline, talk.stall),
            &mut |watch| match watch {
                call::Watch::Stalled(quiet) => {
                    let reason = stall_reason(quiet);
                    self.transition(WorkerState::Blocked, &reason);
                }
                call::Watch::Unreachable { retry_in } => self.unreachable(retry_in),
            },
        );
        self.retried(end.retries);
        if let Some(quiet) = end.stalled {
            self.out.transient = true;
            return Some((WorkerState::Blocked, stall_reason(quiet)));
        }
        let resp = match end.result {
            Ok((resp, _)) => resp,
            Err(LlmError::Cancelled { .. }) if spec.stop.load(Ordering::SeqCst) => {
                return Some((WorkerState::Cancelled, "cancelled".into()));
            }
            Err(LlmError::Cancelled { .. }) => {
                self.out.transient = true;
                return Some((WorkerState::Error, timed_out(spec.role)));
            }
            Err(LlmError::ContextTooLong { .. }) if !talk.trimmed_for_overflow => {
                talk.trimmed_for_overflow = true;
                self.summarise(&mut talk.req.messages, talk.deadline, talk.stall);
                let dropped = bound_context(&mut talk.req.messages, 0, 2);
                self.emit(AgentEvent::ContextTrimmed {
                    dropped_outputs: dropped,
                });
                self.out.turns -= 1;
                return None;
            }
            Err(e) => {
                self.out.transient = e.is_transient();
                return Some((WorkerState::Error, e.to_string()));
            }
        };
        self.model_call(turn, &resp, started);
        if !resp.text.trim().is_empty() {
            self.emit(AgentEvent::ModelText {
                turn,
                text: resp.text.clone(),
            });
        }
        talk.last_input = resp.usage.input_tokens;
        talk.req.messages.push(resp.to_message());
        if !resp.text.trim().is_empty() {
            self.out.last_text.clone_from(&resp.text);
        }
        self.act(ctx, talk, turn, &resp)
    }

    /// Runs the tools the model called in `resp` (or nudges a model that called none);
    /// returns how the run ends, or `None` to go on.
    fn act(
        &mut self,
        ctx: &ToolContext<'_>,
        talk: &mut Conversation,
        turn: u32,
        resp: &ChatResponse,
    ) -> Option<(WorkerState, String)> {
        if resp.tool_calls.is_empty() {
            if self.spec.text_answer && !resp.text.trim().is_empty() {
                self.transition(WorkerState::Completing, "answered");
                self.out.summary = Some(resp.text.clone());
                return Some((WorkerState::Completed, "answered".into()));
            }
            if talk.nudged {
                return Some((
                    WorkerState::Blocked,
                    "the agent ended its turn twice without calling `complete`".into(),
                ));
            }
            talk.nudged = true;
            talk.req.messages.push(Message::user(
                "You ended your turn without calling `complete`. If the task is done, call `complete` with a summary; if you cannot go on, call `signal_state` with state `blocked` and the reason.",
            ));
            return None;
        }
        let round: Vec<(String, String)> = resp
            .tool_calls
            .iter()
            .map(|c| (c.name.clone(), c.arguments.clone()))
            .collect();
        if talk.last_round.as_ref() == Some(&round) {
            talk.repeats += 1;
        } else {
            talk.repeats = 1;
            talk.last_round = Some(round);
        }
        let mut end: Option<(WorkerState, String)> = None;
        for call in &resp.tool_calls {
            match self.dispatch(ctx, turn, call, end.is_some(), &mut talk.req.messages) {
                Dispatched::Continue => {}
                Dispatched::End(state, reason) => end = Some((state, reason)),
                Dispatched::Failed(reason) => return Some((WorkerState::Error, reason)),
            }
        }
        if end.is_some() {
            return end;
        }
        if talk.repeats >= STALL_REPEATS {
            return Some((
                WorkerState::Blocked,
                format!(
                    "stalled: the same tool calls {} times in a row without progress",
                    talk.repeats
                ),
            ));
        }
        None
    }
}

/// Returns the reason given when the model streamed nothing for `quiet`.
fn stall_reason(quiet: Duration) -> String {
    format!(
        "stalled: the model sent nothing for {}s after its output began (the role's stall timeout)",
        quiet.as_secs()
    )
}
