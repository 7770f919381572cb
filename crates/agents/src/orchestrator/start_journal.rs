//! The workflow journal of `start` runs: what the workflow events mean (their type, the
//! transitions they record) over the run store's workflow tables, appended before they are
//! acted on.
//!
//! The journal exists before the engine's run does — planning happens before there is a plan
//! to create the run from — so it is keyed by the run id alone (objective + base), which is
//! known from the first moment. Finished model turns are kept by a hash of their request so a
//! resumed run replays them instead of asking the model again.

use std::path::Path;

use serde::{Deserialize, Serialize};

use super::workflow::{IllegalTransition, Workflow, WorkflowState};
use orchestra_core::store::{Store, StoreError, WorkflowEntry};

pub use orchestra_core::store::{TurnRecord, UsageRow};

/// A failure of the workflow journal: the run store's, or a refused transition.
#[derive(Debug, thiserror::Error)]
pub enum JournalError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Illegal(#[from] IllegalTransition),
}

/// How the clarifier's phase ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ClarifyOutcome {
    /// Nothing ambiguous.
    Clear,
    /// The user answered the clarifier's questions.
    Clarified,
    /// Nobody could answer; the clarifier's assumptions stand and are reported.
    Assumptions,
    /// Clarification was turned off (`--no-clarify`).
    Skipped,
}

/// What the run was started with; kept so a resume behaves like the first start.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartSettings {
    pub yes: bool,
    pub merge: bool,
    pub clarify: bool,
    pub worker_cmd: Option<String>,
    /// The agent CLI working every packet (`--agent`), instead of our agents.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    pub max_parallel: Option<usize>,
    #[serde(default)]
    pub budget: super::budget::Budget,
    /// After integrating, the docs role documents the change on the target branch.
    #[serde(default)]
    pub docs: bool,
    /// After integrating (and documenting), the tester role tests the change.
    #[serde(default)]
    pub tests: bool,
    /// Once completed, one pull request per succeeded packet (`start --pr`); kept so that a
    /// run killed before or while publishing publishes on resume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub publish: Option<PublishSettings>,
    /// Where the packets run when not here (`start --executor ssh`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub executor: Option<orchestra_core::config::ExecutorKind>,
}

/// Where a completed run's pull requests go.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PublishSettings {
    /// Only Markdown files in the run's state directory; nothing is pushed.
    pub local: bool,
    /// The remote to push to (default: `orchestra.forge.remote`, else `origin`).
    pub remote: Option<String>,
    /// The branch the stacks target (default: the current branch).
    pub target: Option<String>,
    /// Then follow the pull requests until they land (`start --pr --land`); absent in runs
    /// journaled before it existed.
    #[serde(default)]
    pub land: bool,
}

/// One published pull request, as journaled.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PublishedPr {
    pub packet: String,
    /// The pull request's address on the forge, or the local file written.
    pub location: String,
}

/// One durable fact about a `start` run's workflow.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum WorkflowEvent {
    /// The run was started on `base` (a commit id).
    Started {
        objective: String,
        base: String,
        settings: StartSettings,
    },
    /// The run failed on an error: the model turns journaled so far are not replayed to a
    /// retry, which asks again (a stop for a spent budget keeps them).
    ReplayEpochEnded { reason: String },
    /// A person's note for the run's planning (`retry --note` of a run stopped before
    /// execution); the planner gets it with the clarified requirements.
    Noted { note: String },
    /// The person sent the plan waiting for approval back to the planner with this feedback
    /// (at the prompt or on the web view): the next planning round revises it.
    PlanSentBack { feedback: String },
    /// The workflow moved from one state to another.
    Transition {
        from: WorkflowState,
        to: WorkflowState,
        reason: String,
    },
    /// A transition was asked for and refused as illegal; nothing changed.
    Rejected {
        from: WorkflowState,
        to: WorkflowState,
        reason: String,
    },
    /// The clarification phase ended.
    Clarified {
        outcome: ClarifyOutcome,
        requirements: Vec<String>,
        assumptions: Vec<String>,
        answers: Vec<(String, String)>,
    },
    /// The planner proposed a plan; `issues` are its validation problems (empty: valid).
    PlanProposed {
        round: u32,
        toml: String,
        issues: Vec<String>,
    },
    /// A reviewer reviewed the plan.
    PlanReviewed {
        round: u32,
        approved: bool,
        findings: Vec<String>,
        /// Ids of packets the reviewer judged risky (best-of-N candidates under `[start]
        /// best_of = "auto"`).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        risky: Vec<String>,
    },
    /// The plan was approved (`how`: flag, user, edited) and is the run's plan.
    PlanApproved { how: String, toml: String },
    /// One packet's agent finished (any way), with what it reported.
    PacketReport {
        packet: String,
        role: String,
        state: String,
        summary: String,
        touched: Vec<String>,
        learnings: Vec<String>,
    },
    /// A packet's agent asked a person a question; `git orchestra answer` replies.
    Asked { packet: String, question: String },
    /// A human answered a packet agent's question.
    Answered { packet: String, text: String },
    /// A conflicted packet was merged with the integration branch and resolved at `commit`.
    ConflictResolved {
        packet: String,
        commit: String,
        paths: Vec<String>,
    },
    /// The merge coordinator finished (its report as JSON).
    Merged { report: serde_json::Value },
    /// A phase after integration (documenting, testing) runs its packet as engine run `run`.
    PhaseRun { phase: WorkflowState, run: String },
    /// The process `pid` took charge of the run (first start or resume).
    Driving { pid: u32 },
    /// A pause or cancel was asked for from another process.
    StopRequested { cancel: bool },
    /// The run's pull requests were opened or updated (`start --pr`).
    Published { prs: Vec<PublishedPr> },
    /// The report was written.
    ReportSaved { markdown: String, json: String },
    /// A profile's effective concurrency changed: halved after a rate limit, grown back by
    /// one after a run of successful calls.
    ConcurrencyChanged {
        profile: String,
        from: usize,
        to: usize,
        /// The line shown to people, e.g. `openai-main: concurrency 8 → 4 after rate limit`.
        text: String,
    },
    /// A model call of `role` was sent (`call` identifies it within the run); the entry's
    /// time is when. `prompt_tokens` is the prompt's rough size.
    ModelCallStarted {
        call: String,
        role: String,
        model: String,
        prompt_tokens: u64,
    },
    /// The model server of call `call` could not be reached; it is asked again after
    /// `retry_in_secs`.
    ModelUnreachable {
        call: String,
        role: String,
        model: String,
        retry_in_secs: u64,
    },
    /// Model call `call` ended: `outcome` is `answered`, or the error that ended it.
    ModelCallEnded {
        call: String,
        role: String,
        ms: u64,
        outcome: String,
    },
    /// A role answered another agent's question (`asker` is the chain of roles that asked,
    /// outermost first); cached per run under the role and the normalised question.
    Consulted {
        packet: String,
        asker: Vec<String>,
        role: String,
        question: String,
        key: String,
        answer: String,
    },
    /// A packet's agent spawned subtask `child`, forked from the parent's work at `base`.
    SubtaskSpawned {
        parent: String,
        child: String,
        title: String,
        description: String,
        role: String,
        files: Vec<String>,
        validation: Vec<String>,
        branch: String,
        base: String,
    },
    /// A subtask ended: `completed` (its `commit` merged into the parent's worktree) or
    /// `failed` (its work stays on its branch); `message` is what the parent was told.
    SubtaskFinished {
        parent: String,
        child: String,
        state: String,
        summary: String,
        commit: Option<String>,
        changed: Vec<String>,
        message: String,
    },
    /// The run reached a soft threshold of `[budget]` and paused to ask a person (the
    /// question is journaled as `Asked` of packet `budget`); `next` are the thresholds that
    /// apply once the run goes on.
    SoftBudgetReached { next: super::budget::Soft },
    /// `[routing]` chose the worker of `packet` from the run history before its first work:
    /// `decision` holds the worker (none: the role's own) and the evidence on each worker up
    /// to it; `text` is the line shown to people.
    Routed {
        packet: String,
        decision: orchestra_core::routing::Decision,
        text: String,
    },
    /// `packet`'s fix round was rejected, so fix round `round` goes to the next stronger
    /// worker of `[routing] workers`: from `from` to `to`.
    Escalated {
        packet: String,
        round: u32,
        from: String,
        to: String,
        text: String,
    },
}

/// One journal entry.
pub type Entry = WorkflowEntry<WorkflowEvent>;

/// The workflow journal of one run.
pub struct StartJournal {
    store: Store,
    run: String,
}

impl StartJournal {
    /// Opens (creating if needed) the journal of `run` in the store of the repository whose
    /// common git directory is `common_dir`.
    pub fn open(common_dir: &Path, run: &str) -> Result<StartJournal, JournalError> {
        Ok(StartJournal {
            store: Store::open(common_dir)?,
            run: run.to_string(),
        })
    }

    /// Returns the ids of runs that have a workflow journal, newest first.
    pub fn runs(common_dir: &Path) -> Result<Vec<String>, JournalError> {
        match Store::open_existing(common_dir)? {
            Some(store) => Ok(store.workflow_runs()?),
            None => Ok(Vec::new()),
        }
    }

    /// Returns the run this journal belongs to.
    pub fn run(&self) -> &str {
        &self.run
    }

    /// Appends `event`; returns its sequence number.
    pub fn append(&self, event: &WorkflowEvent) -> Result<i64, JournalError> {
        let kind = kind_of(event);
        let seq = self.store.append_workflow_event(&self.run, &kind, event)?;
        super::fault::step();
        Ok(seq)
    }

    /// Appends `event` as a notice: journaled like any event, but not a durable step of the
    /// workflow (crash tests do not stop at it), for what only shows progress.
    pub fn notice(&self, event: &WorkflowEvent) -> Result<i64, JournalError> {
        let kind = kind_of(event);
        Ok(self.store.append_workflow_event(&self.run, &kind, event)?)
    }

    /// Returns every entry of the run, oldest first.
    pub fn entries(&self) -> Result<Vec<Entry>, JournalError> {
        Ok(self.store.workflow_events(&self.run)?)
    }

    /// Returns the run's entries of any of the `kinds` (see [`kind`]) after sequence number
    /// `after` (0: all), oldest first: found by their kind, so a read that wants a few kinds
    /// costs the same however many other events the run has journaled.
    pub fn entries_of(&self, kinds: &[&str], after: i64) -> Result<Vec<Entry>, JournalError> {
        Ok(self
            .store
            .workflow_events_of_kinds(&self.run, kinds, after)?)
    }

    /// Returns the sequence number of the run's last entry (0: none yet).
    pub fn last_seq(&self) -> Result<i64, JournalError> {
        Ok(self.store.last_workflow_seq(&self.run)?)
    }

    /// Returns the workflow as the journal's transitions left it.
    pub fn workflow(&self) -> Result<Workflow, JournalError> {
        let mut w = Workflow::new();
        for e in self.entries()? {
            if let WorkflowEvent::Transition { to, .. } = e.event {
                w.apply(to);
            }
        }
        Ok(w)
    }

    /// Moves `workflow` to `to`, journaling the transition first; an illegal transition is
    /// journaled as rejected and returned as an error, changing nothing.
    pub fn transition(
        &self,
        workflow: &mut Workflow,
        to: WorkflowState,
        reason: &str,
    ) -> Result<(), JournalError> {
        let from = workflow.state();
        if let Err(e) = workflow.check(to, reason) {
            tracing::warn!(%from, %to, reason, "illegal workflow transition refused");
            self.append(&WorkflowEvent::Rejected {
                from,
                to,
                reason: reason.to_string(),
            })?;
            return Err(e.into());
        }
        self.append(&WorkflowEvent::Transition {
            from,
            to,
            reason: reason.to_string(),
        })?;
        workflow.apply(to);
        Ok(())
    }

    /// Returns the recorded model turn with this request key, if any.
    /// Returns how many times the run has failed on an error: each such failure starts a new
    /// replay epoch, so a retry asks the models again instead of replaying the turns that led
    /// to the failure.
    pub fn failures(&self) -> Result<u64, JournalError> {
        Ok(self
            .store
            .count_workflow_events(&self.run, kind::REPLAY_EPOCH_ENDED)?)
    }

    pub fn turn(&self, key: &str) -> Result<Option<TurnRecord>, JournalError> {
        Ok(self.store.turn(&self.run, key)?)
    }

    /// Records a finished model turn under its request key (the first record wins).
    pub fn record_turn(&self, key: &str, turn: &TurnRecord) -> Result<(), JournalError> {
        self.store.record_turn(&self.run, key, turn)?;
        super::fault::step();
        Ok(())
    }

    /// Returns how many model turns are recorded for the run.
    pub fn turn_count(&self) -> Result<u64, JournalError> {
        Ok(self.store.turn_count(&self.run)?)
    }

    /// Returns token usage and model time per role and model.
    pub fn usage(&self) -> Result<Vec<UsageRow>, JournalError> {
        Ok(self.store.turn_usage(&self.run)?)
    }
}

/// Returns the kind `event` is journaled under: its `type` tag.
fn kind_of(event: &WorkflowEvent) -> String {
    serde_json::to_value(event)
        .ok()
        .and_then(|v| v.get("type").and_then(|t| t.as_str().map(String::from)))
        .unwrap_or_default()
}

/// The kinds (`type` tags) of the workflow events that are read by kind
/// ([`StartJournal::entries_of`]).
pub mod kind {
    pub const REPLAY_EPOCH_ENDED: &str = "replay_epoch_ended";
    pub const MODEL_CALL_STARTED: &str = "model_call_started";
    pub const MODEL_UNREACHABLE: &str = "model_unreachable";
    pub const MODEL_CALL_ENDED: &str = "model_call_ended";
    pub const DRIVING: &str = "driving";
    pub const ASKED: &str = "asked";
    pub const ANSWERED: &str = "answered";
    pub const ROUTED: &str = "routed";
    pub const ESCALATED: &str = "escalated";
}

#[cfg(test)]
mod tests {
    use super::*;
    use orchestra_core::llm::Usage;

    /// The kinds read by kind are the tags the events are journaled under, and a read by kind
    /// returns those events only, after the sequence number asked.
    #[test]
    fn entries_read_by_kind_are_the_events_of_that_kind() {
        let dir = tempfile::tempdir().unwrap();
        let j = StartJournal::open(dir.path(), "r1").unwrap();
        let (s, u, e) = (String::new(), 0u64, 0u32);
        let events = [
            (
                kind::REPLAY_EPOCH_ENDED,
                WorkflowEvent::ReplayEpochEnded { reason: s.clone() },
            ),
            (
                kind::MODEL_CALL_STARTED,
                WorkflowEvent::ModelCallStarted {
                    call: "c1".into(),
                    role: s.clone(),
                    model: s.clone(),
                    prompt_tokens: u,
                },
            ),
            (
                kind::MODEL_UNREACHABLE,
                WorkflowEvent::ModelUnreachable {
                    call: "c1".into(),
                    role: s.clone(),
                    model: s.clone(),
                    retry_in_secs: u,
                },
            ),
            (
                kind::MODEL_CALL_ENDED,
                WorkflowEvent::ModelCallEnded {
                    call: "c1".into(),
                    role: s.clone(),
                    ms: u,
                    outcome: s.clone(),
                },
            ),
            (kind::DRIVING, WorkflowEvent::Driving { pid: e }),
            (
                kind::ASKED,
                WorkflowEvent::Asked {
                    packet: s.clone(),
                    question: s.clone(),
                },
            ),
            (
                kind::ANSWERED,
                WorkflowEvent::Answered {
                    packet: s.clone(),
                    text: s.clone(),
                },
            ),
            (
                kind::ESCALATED,
                WorkflowEvent::Escalated {
                    packet: s.clone(),
                    round: e,
                    from: s.clone(),
                    to: s.clone(),
                    text: s.clone(),
                },
            ),
        ];
        let mut seqs = Vec::new();
        for (k, event) in &events {
            assert_eq!(kind_of(event), *k);
            seqs.push(j.append(event).unwrap());
            j.append(&WorkflowEvent::Noted {
                note: "other".into(),
            })
            .unwrap();
        }
        assert_eq!(j.last_seq().unwrap(), *seqs.last().unwrap() + 1);
        for (i, (k, event)) in events.iter().enumerate() {
            let found = j.entries_of(&[k], 0).unwrap();
            assert_eq!(found.len(), 1, "{k}");
            assert_eq!(&found[0].event, event);
            assert!(j.entries_of(&[k], seqs[i]).unwrap().is_empty(), "{k}");
        }
        let calls = j
            .entries_of(&[kind::MODEL_CALL_STARTED, kind::MODEL_CALL_ENDED], seqs[1])
            .unwrap();
        assert_eq!(calls.len(), 1);
        assert_eq!(calls[0].seq, seqs[3]);
        assert_eq!(j.failures().unwrap(), 1);
        let routed = WorkflowEvent::Routed {
            packet: s.clone(),
            decision: orchestra_core::routing::Decision {
                traits: orchestra_core::routing::Traits {
                    role: s.clone(),
                    language: None,
                    size: orchestra_core::routing::SizeBucket::Small,
                },
                worker: None,
                evidence: Vec::new(),
            },
            text: s,
        };
        assert_eq!(kind_of(&routed), kind::ROUTED);
    }

    #[test]
    fn transitions_replay_and_illegal_ones_are_journaled_as_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let j = StartJournal::open(dir.path(), "r1").unwrap();
        let mut w = Workflow::new();
        j.transition(&mut w, WorkflowState::Planning, "start")
            .unwrap();
        assert!(
            j.transition(&mut w, WorkflowState::Completed, "skip")
                .is_err()
        );
        j.transition(&mut w, WorkflowState::Paused, "pause")
            .unwrap();
        let again = StartJournal::open(dir.path(), "r1").unwrap();
        let replayed = again.workflow().unwrap();
        assert_eq!(replayed, w);
        assert_eq!(replayed.resume_target(), Some(WorkflowState::Planning));
        let kinds: Vec<bool> = again
            .entries()
            .unwrap()
            .iter()
            .map(|e| matches!(e.event, WorkflowEvent::Rejected { .. }))
            .collect();
        assert_eq!(kinds, vec![false, true, false]);
        assert_eq!(StartJournal::runs(dir.path()).unwrap(), vec!["r1"]);
    }

    #[test]
    fn turns_are_kept_once_per_key_and_summed_per_role() {
        let dir = tempfile::tempdir().unwrap();
        let j = StartJournal::open(dir.path(), "r").unwrap();
        let t = |n: u64| TurnRecord {
            role: "planner".into(),
            model: "m".into(),
            usage: Usage {
                input_tokens: n,
                output_tokens: 1,
            },
            ms: 5,
            response: serde_json::json!({"text": n}),
        };
        j.record_turn("k1", &t(10)).unwrap();
        j.record_turn("k1", &t(99)).unwrap();
        j.record_turn("k2", &t(20)).unwrap();
        assert_eq!(j.turn("k1").unwrap().unwrap().usage.input_tokens, 10);
        assert!(j.turn("k3").unwrap().is_none());
        let usage = j.usage().unwrap();
        assert_eq!(usage.len(), 1);
        assert_eq!((usage[0].calls, usage[0].usage.input_tokens), (2, 30));
    }
}
