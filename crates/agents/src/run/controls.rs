//! Which verbs apply to a run in the state it is in, so a frontend offers only those, and
//! what a `start` run's clarifier and planner have produced so far while they work.

use serde::Serialize;

use crate::orchestrator::{StartJournal, WorkflowEvent, WorkflowState as S};
use orchestra_core::store::{PacketState, RunState};

use super::Run;

/// A run control a person can use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    Pause,
    Resume,
    Retry,
    Cancel,
}

/// One planning round of a `start` run: the plan the planner proposed, its problems, and the
/// plan reviewer's verdict once given.
#[derive(Debug, Clone, Serialize)]
pub struct PlanRound {
    pub round: u32,
    /// The packets the proposed plan names, by id, when it reads as a plan.
    pub packets: Vec<String>,
    /// Its validation problems (empty: valid).
    pub issues: Vec<String>,
    /// The plan reviewer's approval, once it reviewed this round.
    pub approved: Option<bool>,
    pub findings: Vec<String>,
}

/// What a `start` run's clarifier and planner have produced so far.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Planning {
    /// The requirements the clarifier settled on (empty until it has).
    pub requirements: Vec<String>,
    pub assumptions: Vec<String>,
    /// The questions the clarifier asked and the answers it got.
    pub answers: Vec<(String, String)>,
    /// The planner's rounds so far, oldest first.
    pub rounds: Vec<PlanRound>,
    /// Feedback a person sent the plan back with.
    pub feedback: Vec<String>,
}

impl Run {
    /// Returns the controls that apply to the run now: pause only while a process drives a
    /// `start` run, resume only when none does and the run is unfinished, retry only when it
    /// has failed or skipped packets (or a `start` run stopped before execution), cancel only
    /// while it is unfinished.
    pub fn controls(&self) -> Vec<Control> {
        match self.start_state() {
            Some(s) => self.start_controls(s.phase),
            None => self.engine_controls(),
        }
    }

    fn start_controls(&self, phase: S) -> Vec<Control> {
        if crate::status::start_driven(self.common(), &self.id) {
            return match phase {
                _ if phase.is_final() => Vec::new(),
                _ => vec![Control::Pause, Control::Cancel],
            };
        }
        let before_execution = StartJournal::open(self.common(), &self.id)
            .and_then(|j| j.workflow())
            .ok()
            .and_then(|w| w.resume_target())
            .is_some_and(|s| {
                matches!(
                    s,
                    S::Clarifying | S::Planning | S::PlanReview | S::PlanRevision
                )
            });
        match phase {
            S::Cancelled => Vec::new(),
            S::Completed if self.has_retryable_packets() => vec![Control::Retry],
            S::Completed => Vec::new(),
            // The page's own buttons decide on the plan; the run can still be dropped.
            S::AwaitingApproval => vec![Control::Cancel],
            S::Failed | S::Paused if before_execution => {
                vec![Control::Resume, Control::Retry, Control::Cancel]
            }
            _ => vec![Control::Resume, Control::Cancel],
        }
    }

    fn engine_controls(&self) -> Vec<Control> {
        let Ok(Some(record)) = self.record() else {
            return Vec::new();
        };
        if orchestra_sys::exec::RunLock::is_held(self.dir().path()) {
            return match record.state {
                RunState::Completed | RunState::Cancelled | RunState::Failed => Vec::new(),
                _ => vec![Control::Cancel],
            };
        }
        match record.state {
            RunState::Created | RunState::Running | RunState::Interrupted => {
                vec![Control::Resume, Control::Cancel]
            }
            RunState::Failed | RunState::Completed if self.has_retryable_packets() => {
                vec![Control::Retry]
            }
            RunState::Failed | RunState::Completed | RunState::Cancelled => Vec::new(),
        }
    }

    /// Returns true if and only if some packet of the run failed or was skipped.
    fn has_retryable_packets(&self) -> bool {
        self.packets()
            .unwrap_or_default()
            .iter()
            .any(|p| matches!(p.state, PacketState::Failed | PacketState::Skipped))
    }

    /// Returns what the `start` run's clarifier and planner have produced so far, `None` for a
    /// run `start` did not make.
    pub fn planning(&self) -> Option<Planning> {
        self.start_state()?;
        let entries = StartJournal::open(self.common(), &self.id)
            .and_then(|j| j.entries())
            .ok()?;
        let mut out = Planning::default();
        for e in entries {
            match e.event {
                WorkflowEvent::Clarified {
                    requirements,
                    assumptions,
                    answers,
                    ..
                } => {
                    out.requirements = requirements;
                    out.assumptions = assumptions;
                    out.answers = answers;
                }
                WorkflowEvent::PlanProposed {
                    round,
                    toml,
                    issues,
                } => out.rounds.push(PlanRound {
                    round,
                    packets: orchestra_core::plan::Plan::from_toml_str(&toml, "plan.toml")
                        .map(|p| p.packets.into_iter().map(|p| p.id).collect())
                        .unwrap_or_default(),
                    issues,
                    approved: None,
                    findings: Vec::new(),
                }),
                WorkflowEvent::PlanReviewed {
                    round,
                    approved,
                    findings,
                    ..
                } => {
                    if let Some(r) = out.rounds.iter_mut().rev().find(|r| r.round == round) {
                        r.approved = Some(approved);
                        r.findings = findings;
                    }
                }
                WorkflowEvent::PlanSentBack { feedback } => out.feedback.push(feedback),
                _ => {}
            }
        }
        Some(out)
    }
}
