//! Consultation: an agent asks another role a question and that role answers it with a short,
//! read-only tool loop in the asker's worktree.
//!
//! Consultation is bounded four ways, because agents asking agents is the easiest way for a
//! run to spend its budget on nothing: the consulted role gets a few turns and only reading
//! tools; consultations nest at most `[agents] consult_depth` deep; a question that would
//! come back to a role already answering it (A asks B asks A the same thing) is refused with
//! the cycle named; and answers are cached per run under the role and the normalised
//! question, journaled so a resumed run (or another packet) gets them without a model call.
//! An answer the asker already had is marked as cached, so a model that keeps asking sees it.

use std::collections::HashSet;
use std::path::Path;
use std::sync::Mutex;
use std::sync::atomic::AtomicBool;

use super::explore::{READ_TOOLS, read_only};
use super::models::RoleModels;
use super::replay::{Replaying, SharedJournal};
use super::start_journal::WorkflowEvent;
use crate::agent::tools::Registry;
use crate::agent::{self, AgentSpec, Host, Reply, WorkerState};
use orchestra_core::llm::{ChatModel, RetryPolicy};
use orchestra_sys::confine::ConfinedRoot;
use sha2::{Digest, Sha256};

/// Default deepest chain of consultations.
pub const DEFAULT_DEPTH: u32 = 2;
/// Default most turns a consulted role takes to answer.
pub const DEFAULT_TURNS: u32 = 6;
/// Longest a consulted role may work on one answer, in seconds.
const TIMEOUT_SECS: u64 = 600;

/// One role in a chain of consultations and the (normalised) question it is answering.
#[derive(Debug, Clone)]
struct Link {
    role: String,
    question: Option<String>,
}

/// The consultations of one agent: who it is in the chain and what it already asked.
pub(super) struct Consultation<'a> {
    models: &'a RoleModels,
    journal: &'a SharedJournal,
    packet: &'a str,
    /// The asker's worktree, which consulted roles read.
    root: &'a Path,
    /// Where consulted roles' transcripts go (`consult-<role>-<hash>.log`).
    logs: &'a Path,
    chain: Vec<Link>,
    stop: &'a AtomicBool,
    /// Cache keys this agent has asked already (its conversation order, so a replayed run
    /// marks the same answers as cached).
    asked: Mutex<HashSet<String>>,
}

/// Returns `question` lower-cased with whitespace collapsed and trailing punctuation dropped,
/// so trivially different phrasings share a cache entry.
pub fn normalise(question: &str) -> String {
    let words: Vec<String> = question.split_whitespace().map(str::to_lowercase).collect();
    words
        .join(" ")
        .trim_end_matches(['?', '.', '!', ' '])
        .to_string()
}

impl<'a> Consultation<'a> {
    /// Returns the consultations of the packet agent of role `role` working in `root`;
    /// consulted roles' transcripts are written to the directory `logs`.
    pub(super) fn new(
        models: &'a RoleModels,
        journal: &'a SharedJournal,
        packet: &'a str,
        role: &str,
        root: &'a Path,
        logs: &'a Path,
        stop: &'a AtomicBool,
    ) -> Consultation<'a> {
        Consultation {
            models,
            journal,
            packet,
            root,
            logs,
            chain: vec![Link {
                role: role.to_string(),
                question: None,
            }],
            stop,
            asked: Mutex::new(HashSet::new()),
        }
    }

    fn max_depth(&self) -> u32 {
        self.models
            .config
            .agents
            .consult_depth
            .unwrap_or(DEFAULT_DEPTH)
    }

    fn path(&self) -> String {
        self.chain
            .iter()
            .map(|l| l.role.as_str())
            .collect::<Vec<_>>()
            .join(" → ")
    }

    /// Asks role `to` the question, within the limits; see the module documentation.
    pub(super) fn ask(&self, to: &str, question: &str) -> Reply {
        if let Err(e) = self.models.roles.get(to) {
            return Reply::Refused(format!(
                "{e}; or leave `to` out to ask a person (only a packet's own agent can)"
            ));
        }
        let norm = normalise(question);
        if norm.is_empty() {
            return Reply::Refused("the question is empty; ask something concrete".into());
        }
        let depth = self.chain.len() as u32;
        let max = self.max_depth();
        if depth > max {
            return Reply::Refused(format!(
                "depth limit: {} may not consult {to} — consultations nest at most {max} deep ([agents] consult_depth); answer with what you know and say what is uncertain",
                self.path()
            ));
        }
        let answering_it = self
            .chain
            .iter()
            .any(|l| l.question.as_deref() == Some(norm.as_str()));
        if answering_it && self.chain.iter().any(|l| l.role == to) {
            return Reply::Refused(format!(
                "consultation cycle refused: {} → {to} with the same question `{question}`; {to} is already waiting for this answer, so answer it yourself",
                self.path()
            ));
        }
        let key = format!("{to}\n{norm}");
        let repeated = !self
            .asked
            .lock()
            .map(|mut a| a.insert(key.clone()))
            .unwrap_or(true);
        if let Some((first, answer)) = self.cached(&key) {
            return Reply::Answer(if repeated {
                format!("[cached answer: you asked {to} this before] {answer}")
            } else if first != self.packet {
                format!("[cached answer: {to} answered this for packet {first}] {answer}")
            } else {
                answer
            });
        }
        match self.consult(to, question, &norm) {
            Ok(answer) => {
                let event = WorkflowEvent::Consulted {
                    packet: self.packet.to_string(),
                    asker: self.chain.iter().map(|l| l.role.clone()).collect(),
                    role: to.to_string(),
                    question: question.to_string(),
                    key,
                    answer: answer.clone(),
                };
                if let Ok(j) = self.journal.lock()
                    && let Err(e) = j.append(&event)
                {
                    tracing::warn!(error = %e, "consultation not journaled");
                }
                Reply::Answer(answer)
            }
            Err(why) => Reply::Refused(format!("{to} could not answer: {why}")),
        }
    }

    /// Returns the packet that first asked `key` and the journaled answer, if any.
    fn cached(&self, key: &str) -> Option<(String, String)> {
        let entries = self.journal.lock().ok()?.entries().ok()?;
        entries.into_iter().find_map(|e| match e.event {
            WorkflowEvent::Consulted {
                packet,
                key: k,
                answer,
                ..
            } if k == key => Some((packet, answer)),
            _ => None,
        })
    }

    /// Runs role `to` as a read-only consultant in the asker's worktree; returns its answer.
    fn consult(&self, to: &str, question: &str, norm: &str) -> Result<String, String> {
        let turns = self
            .models
            .config
            .agents
            .consult_turns
            .unwrap_or(DEFAULT_TURNS)
            .max(1);
        let mut role = read_only(
            self.models
                .roles
                .get(to)
                .map_err(|e| e.to_string())?
                .clone(),
            &["ask"],
        );
        role.max_turns = role.max_turns.clamp(1, turns);
        role.timeout_secs = role.timeout_secs.min(TIMEOUT_SECS);
        let (clients, profiles) = self.models.clients(to).map_err(|e| e.to_string())?;
        let guard = || self.models.hard_exceeded(Some(to));
        let wrapped: Vec<Replaying<'_>> = clients
            .iter()
            .map(|m| Replaying::new(m.as_ref(), self.journal.clone(), to).with_guard(&guard))
            .collect();
        let root = ConfinedRoot::open(self.root)
            .map_err(|e| format!("cannot open the asker's worktree: {e}"))?;
        let registry = Registry::builtin().for_role(&role);
        let mut chain = self.chain.clone();
        chain.push(Link {
            role: to.to_string(),
            question: Some(norm.to_string()),
        });
        let nested = Consultation {
            chain,
            asked: Mutex::new(HashSet::new()),
            ..*self
        };
        let asker = self.chain.last().map_or("", |l| l.role.as_str());
        let spec = AgentSpec {
            role: &role,
            models: wrapped.iter().map(|m| m as &dyn ChatModel).collect(),
            context_tokens: profiles.first().map_or(32_000, |p| p.context_tokens),
            task: agent::with_project(
                format!(
                    "The {asker} agent working on packet `{}` consults you.\n\nQuestion: {question}\n\nYou can read its worktree with {} and the nav_* symbol tools, for at most {} turns; you cannot change anything. Answer by calling `complete` with your answer as the `summary`: brief and concrete.\n",
                    self.packet,
                    READ_TOOLS.join(", "),
                    role.max_turns
                ),
                &orchestra_core::project::cached_context(
                    self.root,
                    agent::PROJECT_CONTEXT_CHARS / 4,
                ),
            ),
            root: &root,
            packet_files: None,
            registry: &registry,
            stop: self.stop,
            policy: RetryPolicy::default(),
            price: profiles
                .first()
                .and_then(|p| self.models.config.prices.get(&p.model).copied()),
            answer: Some(&nested),
            sandbox: None,
            text_answer: false,
        };
        let hash: String = Sha256::digest(format!("{}\n{to}\n{norm}", self.chain.len()))[..4]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let mut transcript =
            agent::open_transcript(&self.logs.join(format!("consult-{to}-{hash}.log")));
        let keys = orchestra_core::llm::Profile::keys_of(&profiles);
        let mut on_event = |e: &agent::AgentEvent| e.transcribe(&mut transcript, &keys);
        let mut outcome = agent::run(&spec, &mut on_event).map_err(|e| e.to_string())?;
        outcome.scrub(&keys);
        match (outcome.state, outcome.summary) {
            // A non-answer (only tool names) goes back to the asker as a refusal, never as
            // what the consulted role said; it is not cached either.
            (WorkerState::Completed, Some(answer)) => {
                super::answers::any_answer(&answer).map(|()| answer)
            }
            (state, _) => Err(format!("{}: {}", state.as_str(), outcome.reason)),
        }
    }
}

impl Host for Consultation<'_> {
    /// Answers a consulted role's own question: another role may be consulted, a person not.
    fn answer(&self, question: &str, to: Option<&str>) -> Reply {
        match to {
            Some(role) if role != "human" => self.ask(role, question),
            _ => Reply::Refused(
                "a consulted role cannot ask a person; answer with what you know and say what is uncertain"
                    .into(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn questions_are_normalised_for_the_cache() {
        assert_eq!(
            normalise("  Which   LIMITER should we use?? "),
            "which limiter should we use"
        );
        assert_eq!(
            normalise("Which limiter should we use"),
            "which limiter should we use"
        );
        assert_eq!(normalise(" ?! "), "");
    }

    #[test]
    fn cycles_depth_and_repeats_are_answered_without_a_consultant() {
        use crate::agent::Roles;
        use crate::orchestrator::StartJournal;
        use std::sync::{Arc, Mutex};
        let dir = tempfile::tempdir().unwrap();
        let journal: SharedJournal =
            Arc::new(Mutex::new(StartJournal::open(dir.path(), "r").unwrap()));
        let mut config = orchestra_core::config::RepoConfig::default();
        // A profile whose server is not there: a consultation that passes the checks fails
        // to reach its model, which shows the checks let it through.
        config.profiles.insert(
            "default".into(),
            orchestra_core::config::ProfileConfig {
                provider: "openai-compatible".into(),
                model: "m".into(),
                base_url: Some("http://127.0.0.1:9/v1".into()),
                timeout_secs: Some(1),
                outage_retry_secs: Some(0),
                ..Default::default()
            },
        );
        let models = RoleModels::new(Roles::builtin().unwrap(), config, journal.clone());
        let stop = AtomicBool::new(false);
        let c = Consultation::new(
            &models,
            &journal,
            "p1",
            "coder",
            dir.path(),
            dir.path(),
            &stop,
        );
        let refused = |r: Reply, needle: &str| match r {
            Reply::Refused(m) => assert!(m.contains(needle), "{m}"),
            other => panic!("expected a refusal with `{needle}`, got {other:?}"),
        };
        refused(c.ask("nobody", "Which file?"), "nobody");
        refused(c.ask("reviewer", "  "), "empty");
        let link = |role: &str, q: Option<&str>| Link {
            role: role.into(),
            question: q.map(normalise),
        };
        let b = Consultation {
            chain: vec![link("coder", None), link("reviewer", Some("Which file?"))],
            asked: Mutex::new(HashSet::new()),
            ..c
        };
        refused(
            b.ask("coder", "which FILE"),
            "consultation cycle refused: coder → reviewer → coder",
        );
        let deep = Consultation {
            chain: vec![
                link("coder", None),
                link("reviewer", Some("a")),
                link("researcher", Some("b")),
            ],
            asked: Mutex::new(HashSet::new()),
            ..c
        };
        refused(
            deep.ask("product", "c"),
            "depth limit: coder → reviewer → researcher",
        );
        // A new question passes every check and goes to the model (which is not there).
        refused(
            c.ask("reviewer", "Which file?"),
            "reviewer could not answer",
        );
        refused(b.answer("Which file?", None), "cannot ask a person");
        // A journaled answer is the answer, marked as cached when asked again.
        journal
            .lock()
            .unwrap()
            .append(&WorkflowEvent::Consulted {
                packet: "p1".into(),
                asker: vec!["coder".into()],
                role: "reviewer".into(),
                question: "Which file?".into(),
                key: "reviewer\nwhich file".into(),
                answer: "NOTES.md".into(),
            })
            .unwrap();
        let fresh = Consultation::new(
            &models,
            &journal,
            "p1",
            "coder",
            dir.path(),
            dir.path(),
            &stop,
        );
        assert_eq!(
            fresh.ask("reviewer", "which file"),
            Reply::Answer("NOTES.md".into())
        );
        assert_eq!(
            fresh.ask("reviewer", "Which   file??"),
            Reply::Answer("[cached answer: you asked reviewer this before] NOTES.md".into())
        );
        let other = Consultation::new(
            &models,
            &journal,
            "p2",
            "coder",
            dir.path(),
            dir.path(),
            &stop,
        );
        assert_eq!(
            other.ask("reviewer", "Which file?"),
            Reply::Answer("[cached answer: reviewer answered this for packet p1] NOTES.md".into())
        );
    }
}
