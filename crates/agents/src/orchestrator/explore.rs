//! Roles that read before they answer: the planner (and any role asked the same way) runs as
//! a read-only tool loop over the repository — `read_file`, `list_dir`, `grep` and the `nav_*`
//! symbol tools — and answers in text once it has seen enough. Every turn goes through the
//! journal ([`Replaying`]), so a resumed run replays them instead of asking again, and the
//! run's budgets stop the loop like any other model call.

use std::io::Write;
use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::answers::{self, Check};
use super::models::RoleModels;
use super::replay::Replaying;
use crate::agent::profiles::SetupError;
use crate::agent::tools::{Registry, nav};
use crate::agent::{self, AgentSpec, Role, WorkerState};
use orchestra_core::llm::{ChatModel, RetryPolicy};
use orchestra_sys::confine::ConfinedRoot;

/// The reading tools an exploring role gets, beside the `nav_*` tools.
pub const READ_TOOLS: [&str; 3] = ["read_file", "list_dir", "grep"];
/// Default most turns an exploring role takes before it must answer.
pub const DEFAULT_TURNS: u32 = 12;
/// Longest an exploring role may work on one answer, in seconds.
const TIMEOUT_SECS: u64 = 900;

/// Returns `role` able only to read: its tools the reading ones, the `nav_*` tools and
/// `extra` (`signal_state` and `complete` are always there), its write scope empty.
pub(super) fn read_only(mut role: Role, extra: &[&str]) -> Role {
    role.tools = READ_TOOLS
        .iter()
        .chain(nav::NAMES.iter())
        .chain(extra.iter())
        .map(|t| t.to_string())
        .collect();
    role.write_scope.clear();
    role
}

impl RoleModels {
    /// Asks `role` for an answer after it has read what it needs of the repository at `root`
    /// with read-only tools; `guidance` extends its instructions, `prompt` is its task. The
    /// answer is the text of its last reply without a tool call (or its `complete` summary).
    /// Its transcript goes to `transcript`. An answer that is none (empty, only tool names)
    /// is asked for once more, as [`RoleModels::explore_checked`] does.
    pub fn explore(
        &self,
        role: &str,
        guidance: &str,
        prompt: &str,
        root: &Path,
        transcript: &Path,
        stop: &AtomicBool,
    ) -> Result<String, SetupError> {
        self.explore_checked(
            role,
            guidance,
            prompt,
            root,
            transcript,
            stop,
            &answers::any_answer,
        )
    }

    /// Does what [`RoleModels::explore`] does, and when `check` finds the answer is none (empty,
    /// only tool names, not in the form asked for) asks once more, without tools, saying why;
    /// a second non-answer is an error naming it, so that no role builds on it.
    #[allow(clippy::too_many_arguments)]
    pub fn explore_checked(
        &self,
        role: &str,
        guidance: &str,
        prompt: &str,
        root: &Path,
        transcript: &Path,
        stop: &AtomicBool,
        check: Check<'_>,
    ) -> Result<String, SetupError> {
        let turns = self
            .config
            .agents
            .explore_turns
            .unwrap_or(DEFAULT_TURNS)
            .max(1);
        let mut spec_role = read_only(self.roles.get(role)?.clone(), &[]);
        spec_role.max_turns = turns;
        spec_role.timeout_secs = spec_role.timeout_secs.clamp(60, TIMEOUT_SECS);
        spec_role.instructions = format!("{}\n\n{guidance}", spec_role.instructions.trim());
        let (clients, profiles) = self.clients(role)?;
        let guard = || self.hard_exceeded(Some(role));
        let wrapped: Vec<Replaying<'_>> = clients
            .iter()
            .map(|m| Replaying::new(m.as_ref(), self.journal().clone(), role).with_guard(&guard))
            .collect();
        let confined = ConfinedRoot::open(root).map_err(|e| SetupError::Unanswered {
            role: role.to_string(),
            reason: format!("cannot open the repository {}: {e}", root.display()),
        })?;
        let registry = Registry::builtin().for_role(&spec_role);
        let task = format!(
            "{prompt}\n\nBefore you answer, look at the code this needs: {} and the nav_* symbol tools read the repository (at most {turns} turns; you cannot change anything). Then reply with your answer as text, without a tool call.\n",
            READ_TOOLS.join(", ")
        );
        let spec = AgentSpec {
            role: &spec_role,
            models: wrapped.iter().map(|m| m as &dyn ChatModel).collect(),
            context_tokens: profiles.first().map_or(32_000, |p| p.context_tokens),
            task,
            root: &confined,
            packet_files: None,
            registry: &registry,
            stop,
            policy: RetryPolicy::default(),
            price: profiles
                .first()
                .and_then(|p| self.config.prices.get(&p.model).copied()),
            answer: None,
            sandbox: None,
            text_answer: true,
        };
        let mut log = agent::open_transcript(transcript);
        let keys = orchestra_core::llm::Profile::keys_of(&profiles);
        let mut on_event = |e: &agent::AgentEvent| e.transcribe(&mut log, &keys);
        let mut outcome = agent::run(&spec, &mut on_event).map_err(|e| SetupError::Unanswered {
            role: role.to_string(),
            reason: e.to_string(),
        })?;
        outcome.scrub(&keys);
        let unanswered = |reason: String| SetupError::Unanswered {
            role: role.to_string(),
            reason,
        };
        let mut convo = std::mem::take(&mut outcome.messages);
        let answer = match (outcome.state, outcome.summary) {
            (WorkerState::Completed, Some(answer)) => answer,
            // A model that kept exploring (the turn limit, the same calls again and again)
            // has read what it could: it is asked once more, without tools, for its answer.
            // A model that stalled is not asked again: the server may still be at work.
            (WorkerState::Blocked, _)
                if !outcome.transient && !stop.load(std::sync::atomic::Ordering::SeqCst) =>
            {
                let _ = writeln!(
                    log,
                    "{}",
                    serde_json::json!({"type": "answer_requested", "after": outcome.reason})
                );
                convo.push(orchestra_core::llm::Message::user(FINAL_NUDGE));
                final_answer(&wrapped, convo.clone(), &keys, stop).map_err(|e| {
                    unanswered(format!(
                        "blocked: {}; asked for its answer without tools: {e}",
                        outcome.reason
                    ))
                })?
            }
            (state, _) => {
                return Err(unanswered(format!(
                    "{}: {}",
                    state.as_str(),
                    outcome.reason
                )));
            }
        };
        let Err(why) = check(&answer) else {
            return Ok(answer);
        };
        if stop.load(std::sync::atomic::Ordering::SeqCst) {
            return Err(unanswered(why));
        }
        let again = ask_again(&wrapped, convo, &keys, answer, &why, &mut log, stop)
            .map_err(|e| unanswered(format!("{why}; asked again: {e}")))?;
        check(&again).map(|()| again).map_err(|still| {
            unanswered(format!(
                "its answer is no answer even when asked twice ({still}), so nothing is built on it; a larger model for the role (`[roles.{role}] profile` in .orchestra/config.toml) may answer"
            ))
        })
    }
}

/// Asks once more, without tools, for the answer to the conversation `convo` whose reply
/// `answer` was none (`why`), telling the model why; the rejection goes to the transcript.
fn ask_again(
    models: &[Replaying<'_>],
    mut convo: Vec<orchestra_core::llm::Message>,
    keys: &[orchestra_core::llm::ApiKey],
    answer: String,
    why: &str,
    log: &mut dyn Write,
    stop: &AtomicBool,
) -> Result<String, String> {
    tracing::warn!(%why, "a role's answer is no answer; asking again");
    let _ = writeln!(
        log,
        "{}",
        serde_json::json!({"type": "answer_rejected", "why": why})
    );
    if !matches!(convo.last(), Some(orchestra_core::llm::Message::Assistant { content, .. }) if *content == answer)
    {
        convo.push(orchestra_core::llm::Message::Assistant {
            content: answer,
            tool_calls: Vec::new(),
        });
    }
    convo.push(orchestra_core::llm::Message::user(format!(
        "That reply is not an answer: {why}. Do not call or list any tool: reply now with your answer as text, in the form asked for above."
    )));
    final_answer(models, convo, keys, stop)
}

/// What an exploring role that kept reading is told when asked for its answer.
const FINAL_NUDGE: &str = "You have read enough. Do not call any tool: reply now with your answer as text, in the form asked for above.";

/// Asks the first of `models` that answers for a text answer to the conversation `messages`
/// (which ends with the request for it), offering no tools; the answer is scrubbed of `keys`.
/// Raising `stop` ends the call within a tenth of a second.
fn final_answer(
    models: &[Replaying<'_>],
    messages: Vec<orchestra_core::llm::Message>,
    keys: &[orchestra_core::llm::ApiKey],
    stop: &AtomicBool,
) -> Result<String, String> {
    let req = orchestra_core::llm::ChatRequest {
        messages,
        ..Default::default()
    };
    let mut last = String::from("no model");
    for model in models {
        let one: [&dyn ChatModel; 1] = [model];
        let answer = orchestra_core::llm::chat_with_retry(
            &one,
            &req,
            &RetryPolicy::default(),
            stop,
            &mut |_| true,
            &mut |_| {},
        );
        match answer {
            Ok((resp, _)) if !resp.text.trim().is_empty() => {
                return Ok(orchestra_core::llm::ApiKey::scrub_all(keys, &resp.text));
            }
            Ok(_) => last = "the model answered with no text".into(),
            Err(e @ orchestra_core::llm::LlmError::Cancelled { .. }) => return Err(e.to_string()),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

/// Asks the `init` role (whose model profile [`has_model`] checks) for the architecture and
/// conventions of the repository at `toplevel` as read from its code, in at most about
/// `chars` characters of Markdown (for `git orchestra init`); `detected` is what detection
/// already wrote. Its transcript goes to `.git/orchestra/init.log`; its model turns to a
/// scratch journal removed afterwards (an `init` is not a run to resume). While the model is
/// waited for, `say` hears who waits and for how long (as `start` says it).
pub fn project_notes(
    toplevel: &Path,
    common_dir: &Path,
    config: &orchestra_core::config::RepoConfig,
    detected: &str,
    chars: usize,
    stop: &AtomicBool,
    say: &(dyn Fn(&str) + Sync),
) -> Result<String, String> {
    let roles = crate::agent::Roles::load_with_trust(toplevel, config.trusted)
        .map_err(|e| e.to_string())?;
    let state = orchestra_sys::exec::state_dir(common_dir);
    let scratch = state.join(format!("init-{}", std::process::id()));
    let journal = super::StartJournal::open(&scratch, "init")
        .map(|j| std::sync::Arc::new(std::sync::Mutex::new(j)))
        .map_err(|e| format!("cannot open a scratch journal: {e}"))?;
    let models = RoleModels::new(roles, config.clone(), journal.clone());
    let prompt = format!(
        "Write the architecture and conventions of this repository for the agents that will work on it, in at most {} words of Markdown. Detection already found this (do not repeat it):\n\n{detected}",
        chars / 6
    );
    let done = AtomicBool::new(false);
    let answer = std::thread::scope(|s| {
        let (journal, done_ref) = (&journal, &done);
        let first = config.start.wait_line_secs;
        s.spawn(move || super::calls::watch(journal, first, done_ref, say));
        let answer = models
            .explore(
                "init",
                "Reply with the Markdown only: no preamble, no code fences around it.",
                &prompt,
                toplevel,
                &state.join("init.log"),
                stop,
            )
            .map_err(|e| e.to_string());
        done.store(true, std::sync::atomic::Ordering::SeqCst);
        answer
    });
    drop(models);
    let _ = fs_err::remove_dir_all(&scratch);
    answer
}

/// Returns true if and only if a model profile resolves for `role` in the repository at
/// `toplevel` (its role files and `config`).
pub fn has_model(toplevel: &Path, config: &orchestra_core::config::RepoConfig, role: &str) -> bool {
    model_check(toplevel, config, role).is_ok()
}

/// Returns why no model profile resolves for `role` in the repository at `toplevel` (its role
/// files and `config`), if none does.
pub fn model_check(
    toplevel: &Path,
    config: &orchestra_core::config::RepoConfig,
    role: &str,
) -> Result<(), String> {
    let roles = crate::agent::Roles::load_with_trust(toplevel, config.trusted)
        .map_err(|e| e.to_string())?;
    let role = roles.get(role).map_err(|e| e.to_string())?;
    crate::agent::profiles::check(config, role).map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use orchestra_core::llm::{ChatRequest, ChatResponse, Delta, LlmError, Message};
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};

    /// A model still reading its prompt: it waits, telling its caller so, for up to a minute.
    struct Thinking;

    impl ChatModel for Thinking {
        fn chat(
            &self,
            _: &ChatRequest,
            on_delta: &mut dyn FnMut(Delta<'_>) -> bool,
        ) -> Result<ChatResponse, LlmError> {
            let until = Instant::now() + Duration::from_secs(60);
            while Instant::now() < until {
                std::thread::sleep(Duration::from_millis(20));
                if !on_delta(Delta::Waiting) {
                    return Err(LlmError::Cancelled { model: "m".into() });
                }
            }
            Err(LlmError::Protocol {
                model: "m".into(),
                message: "never answered".into(),
            })
        }

        fn label(&self) -> String {
            "test:m".into()
        }
    }

    #[test]
    fn the_final_answer_call_stops_within_a_second_of_ctrl_c() {
        let dir = tempfile::tempdir().unwrap();
        let journal = std::sync::Arc::new(std::sync::Mutex::new(
            super::super::StartJournal::open(dir.path(), "r").unwrap(),
        ));
        let model = Thinking;
        let wrapped = [Replaying::new(&model, journal, "clarifier")];
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                stop.store(true, Ordering::SeqCst);
            });
            let started = Instant::now();
            let answer = final_answer(&wrapped, vec![Message::user("hi")], &[], &stop);
            assert!(answer.is_err(), "{answer:?}");
            assert!(
                started.elapsed() < Duration::from_secs(1),
                "{:?}",
                started.elapsed()
            );
        });
    }
}
