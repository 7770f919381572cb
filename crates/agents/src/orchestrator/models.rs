//! One-shot conversations with a role's model for the orchestrator's own phases (clarify,
//! plan, plan review, next steps): the role's instructions as the system message, journaled
//! and replayed through [`Replaying`], retried and failed over by the client layer.

use std::collections::HashMap;
use std::sync::atomic::AtomicBool;
use std::sync::{Arc, Mutex};

use super::budget::{self, Budget};
use super::replay::{Replaying, SharedJournal};
use crate::agent::Roles;
use crate::agent::profiles::{self, SetupError, env};
use orchestra_core::config::RepoConfig;
use orchestra_core::llm::{self, ChatModel, ChatRequest, ChatResponse, Message, RetryPolicy};

/// The roles and model profiles of a repository, for one-shot questions.
pub struct RoleModels {
    pub roles: Roles,
    pub config: RepoConfig,
    /// The run's limits; checked before every model call.
    pub budget: Budget,
    /// The run's soft thresholds now (raised each time a person went on); checked too.
    pub soft: budget::Soft,
    /// When the run started (ms since the epoch), for the time budget.
    pub started_ms: i64,
    journal: SharedJournal,
    policy: RetryPolicy,
    /// Connected clients by role, made once: clients are cheap to share across threads.
    clients: Mutex<HashMap<String, Clients>>,
    /// One adaptive concurrency gate per profile, shared by every packet and phase.
    gates: llm::Gates,
}

/// Returns the label (`provider:model`) of the model `role` of `roles` answers with first
/// under `config`, or `None` when the role has no usable profile or works through an agent CLI.
pub fn model_label(config: &RepoConfig, roles: &Roles, role: &str) -> Option<String> {
    if config.roles.get(role).is_some_and(|r| r.agent.is_some()) {
        return None;
    }
    let chain = profiles::resolve(config, roles.get(role).ok()?, &env).ok()?;
    chain.first().map(|p| p.label())
}

/// A role's connected model chain (primary first) and its profiles.
pub type Clients = (Vec<Arc<dyn ChatModel>>, Vec<orchestra_core::llm::Profile>);

impl RoleModels {
    /// Returns the models of `roles` configured by `config`, journaling into `journal`.
    pub fn new(roles: Roles, config: RepoConfig, journal: SharedJournal) -> RoleModels {
        RoleModels {
            roles,
            config,
            budget: Budget::default(),
            soft: budget::Soft::default(),
            started_ms: orchestra_sys::exec::now_ms(),
            journal: journal.clone(),
            policy: RetryPolicy::default(),
            clients: Mutex::new(HashMap::new()),
            gates: llm::Gates::with_listener(limit_listener(journal)),
        }
    }

    /// Checks that `role` exists and has a usable model profile, with its key set.
    pub fn check(&self, role: &str) -> Result<(), SetupError> {
        profiles::check(&self.config, self.roles.get(role)?)
    }

    /// Returns the journal the models record into.
    pub fn journal(&self) -> &SharedJournal {
        &self.journal
    }

    /// Asks `role` one question: its instructions plus `guidance` as the system message,
    /// `prompt` as the user message. Returns the model's answer text.
    pub fn ask(
        &self,
        role: &str,
        guidance: &str,
        prompt: &str,
        stop: &AtomicBool,
    ) -> Result<ChatResponse, SetupError> {
        let r = self.roles.get(role)?;
        let messages = vec![
            Message::system(format!("{}\n\n{guidance}", r.instructions.trim())),
            Message::user(prompt),
        ];
        self.converse(role, messages, stop)
    }

    /// Does what [`RoleModels::ask`] does, and when `check` finds the answer is none (empty,
    /// only tool names, not in the form asked for) asks once more, saying why; a second
    /// non-answer is an error naming it, so that no role builds on it.
    pub fn ask_checked(
        &self,
        role: &str,
        guidance: &str,
        prompt: &str,
        stop: &AtomicBool,
        check: super::answers::Check<'_>,
    ) -> Result<String, SetupError> {
        let r = self.roles.get(role)?;
        let mut messages = vec![
            Message::system(format!("{}\n\n{guidance}", r.instructions.trim())),
            Message::user(prompt),
        ];
        let answer = self.converse(role, messages.clone(), stop)?.text;
        let Err(why) = check(&answer) else {
            return Ok(answer);
        };
        tracing::warn!(role, %why, "a role's answer is no answer; asking again");
        messages.push(Message::Assistant {
            content: answer,
            tool_calls: Vec::new(),
        });
        messages.push(Message::user(format!(
            "That reply is not an answer: {why}. Reply now with your answer, in the form asked for above."
        )));
        let again = self.converse(role, messages, stop)?.text;
        check(&again).map(|()| again).map_err(|still| SetupError::Unanswered {
            role: role.to_string(),
            reason: format!(
                "its answer is no answer even when asked twice ({still}), so nothing is built on it; a larger model for the role (`[roles.{role}] profile` in .orchestra/config.toml) may answer"
            ),
        })
    }

    /// Sends `messages` to `role`'s models (journaled, replayed, budget-guarded, retried and
    /// failed over) and returns the reply.
    fn converse(
        &self,
        role: &str,
        messages: Vec<Message>,
        stop: &AtomicBool,
    ) -> Result<ChatResponse, SetupError> {
        let (models, _) = self.clients(role)?;
        let wrapped: Vec<Replaying<'_>> = models
            .iter()
            .map(|m| Replaying::new(m.as_ref(), self.journal.clone(), role))
            .collect();
        let guard = || self.hard_exceeded(Some(role));
        let wrapped: Vec<Replaying<'_>> =
            wrapped.into_iter().map(|w| w.with_guard(&guard)).collect();
        let refs: Vec<&dyn ChatModel> = wrapped.iter().map(|m| m as &dyn ChatModel).collect();
        let req = ChatRequest {
            messages,
            ..Default::default()
        };
        let (resp, _) =
            llm::chat_with_retry(&refs, &req, &self.policy, stop, &mut |_| true, &mut |_| {})?;
        Ok(resp)
    }

    /// Returns which budget limit or soft threshold the run (and `role`, if given) has
    /// reached, if any: the calls of packets' agents and reviewers stop at either (they
    /// resume from their worktrees); a phase's own calls stop only at a hard limit and the
    /// soft thresholds are checked between phases.
    pub fn budget_exceeded(&self, role: Option<&str>) -> Option<String> {
        self.hard_exceeded(role)
            .or_else(|| self.soft_reached().map(|(question, _)| question))
    }

    /// Returns which hard budget limit the run (and `role`, if given) has reached, if any.
    pub fn hard_exceeded(&self, role: Option<&str>) -> Option<String> {
        if self.budget.is_unlimited() {
            return None;
        }
        self.budget.exceeded(&self.spent()?, role)
    }

    /// Returns the question to ask when the run reached a soft threshold, with the spend.
    pub fn soft_reached(&self) -> Option<(String, budget::Spent)> {
        if self.soft.is_unset() {
            return None;
        }
        let spent = self.spent()?;
        self.soft.reached(&spent).map(|q| (q, spent))
    }

    /// Returns what the run has spent so far, or `None` when the journal cannot be read.
    fn spent(&self) -> Option<budget::Spent> {
        let usage = self.journal.lock().ok()?.usage().ok()?;
        let secs = ((orchestra_sys::exec::now_ms() - self.started_ms).max(0) / 1000) as u64;
        Some(budget::spent(&usage, &|m| self.price(m), secs))
    }

    /// Returns the label (`provider:model`) of the model `role` answers with first, or `None`
    /// when the role has no usable profile or works through an agent CLI.
    pub fn model_label(&self, role: &str) -> Option<String> {
        model_label(&self.config, &self.roles, role)
    }

    /// Returns the connected model chain of `role` and its profiles, connecting on first use.
    pub fn clients(&self, role: &str) -> Result<Clients, SetupError> {
        if let Some(c) = self.clients.lock().ok().and_then(|m| m.get(role).cloned()) {
            return Ok(c);
        }
        let r = self.roles.get(role)?;
        let chain = profiles::resolve(&self.config, r, &env)?;
        let models = llm::connect_chain(&chain, &self.gates, &mut |_| {})?;
        let c = (models, chain);
        if let Ok(mut m) = self.clients.lock() {
            m.insert(role.to_string(), c.clone());
        }
        Ok(c)
    }

    /// Returns the connected model chain of `role` when its agent works as `profile` says (a
    /// routed packet or a candidate's arm: a profile instead of the role's own, or
    /// `model:<name>`, see `RepoConfig::with_worker`), connecting on first use; the role's
    /// own without one.
    pub fn clients_for(&self, role: &str, profile: Option<&str>) -> Result<Clients, SetupError> {
        let Some(profile) = profile else {
            return self.clients(role);
        };
        let key = format!("{role}\u{0}{profile}");
        if let Some(c) = self.clients.lock().ok().and_then(|m| m.get(&key).cloned()) {
            return Ok(c);
        }
        let r = self.roles.get(role)?;
        let chain = profiles::resolve(&self.config.with_worker(role, profile), r, &env)?;
        let models = llm::connect_chain(&chain, &self.gates, &mut |_| {})?;
        let c = (models, chain);
        if let Ok(mut m) = self.clients.lock() {
            m.insert(key, c.clone());
        }
        Ok(c)
    }

    /// Returns the price per million tokens of `model`, if configured.
    pub fn price(&self, model: &str) -> Option<orchestra_core::config::Price> {
        self.config.prices.get(model).copied()
    }
}

/// Returns a listener that journals every change of a profile's effective concurrency, so
/// the report (and `status`) can say why a run slowed down.
fn limit_listener(journal: SharedJournal) -> llm::LimitListener {
    Arc::new(move |change: &llm::LimitChange| {
        tracing::info!(%change, "model concurrency changed");
        let event = super::start_journal::WorkflowEvent::ConcurrencyChanged {
            profile: change.profile.clone(),
            from: change.from,
            to: change.to,
            text: change.to_string(),
        };
        if let Ok(j) = journal.lock()
            && let Err(e) = j.append(&event)
        {
            tracing::warn!(error = %e, "concurrency change not journaled");
        }
    })
}

/// Returns the first JSON object in `text` (fenced or bare), if any.
pub fn extract_json(text: &str) -> Option<serde_json::Value> {
    let start = text.find('{')?;
    let end = text.rfind('}')?;
    if end < start {
        return None;
    }
    serde_json::from_str(&text[start..=end]).ok()
}

/// Returns the content of the first fenced block of `text` (```toml or bare ```), or the
/// whole text when it has none.
pub fn extract_fenced(text: &str) -> String {
    let Some(open) = text.find("```") else {
        return text.trim().to_string();
    };
    let after = &text[open + 3..];
    let body = after.split_once('\n').map_or("", |(_, rest)| rest);
    match body.find("```") {
        Some(close) => body[..close].to_string(),
        None => body.to_string(),
    }
}

/// Returns the strings of the JSON array `v[key]`, skipping non-strings.
pub fn strings(v: &serde_json::Value, key: &str) -> Vec<String> {
    v.get(key)
        .and_then(|a| a.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(|s| s.trim().to_string()))
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fenced_and_json_extraction() {
        assert_eq!(
            extract_fenced("Here:\n```toml\na = 1\n```\nthanks"),
            "a = 1\n"
        );
        assert_eq!(extract_fenced("a = 1"), "a = 1");
        let v =
            extract_json("sure ```json\n{\"verdict\": \"approve\", \"findings\": [\"x\", 3]}\n```")
                .unwrap();
        assert_eq!(strings(&v, "findings"), vec!["x"]);
        assert!(extract_json("no json").is_none());
    }
}
