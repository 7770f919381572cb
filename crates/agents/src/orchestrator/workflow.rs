//! The workflow state machine of a `start` run: which phase the run is in and which phase may
//! follow which.
//!
//! Only the transitions of [`WorkflowState::can_move_to`] are legal. `paused` and `failed` are
//! reachable from every active state and lead back only to the state they interrupted, so a
//! resume continues exactly where the run stopped. A completed run goes back to `executing`
//! only through `retry`, which reopens its failed packets.

use serde::{Deserialize, Serialize};

/// The phase a run is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WorkflowState {
    /// Created, nothing done yet.
    Idle,
    /// The clarifier looks for ambiguity in the objective.
    Clarifying,
    /// The planner writes (or rewrites after validation errors) the plan.
    Planning,
    /// A reviewer checks the plan.
    PlanReview,
    /// The planner revises the plan after the reviewer's findings.
    PlanRevision,
    /// The plan waits for the user's approval (skipped with `--yes`).
    AwaitingApproval,
    /// The engine runs the packets.
    Executing,
    /// The merge coordinator integrates the packets.
    Integrating,
    /// The docs role documents the integrated change.
    Documenting,
    /// The tester role tests the integrated change.
    Testing,
    /// The report is written and the run is done.
    Completed,
    /// Stopped on request; resumes into the state it interrupted.
    Paused,
    /// Stopped by an error; a resume retries the state it failed in.
    Failed,
    /// Stopped for good (plan rejected, `cancel`).
    Cancelled,
}

/// Every state, in workflow order.
pub const ALL_STATES: [WorkflowState; 14] = [
    WorkflowState::Idle,
    WorkflowState::Clarifying,
    WorkflowState::Planning,
    WorkflowState::PlanReview,
    WorkflowState::PlanRevision,
    WorkflowState::AwaitingApproval,
    WorkflowState::Executing,
    WorkflowState::Integrating,
    WorkflowState::Documenting,
    WorkflowState::Testing,
    WorkflowState::Completed,
    WorkflowState::Paused,
    WorkflowState::Failed,
    WorkflowState::Cancelled,
];

impl WorkflowState {
    /// Returns the state's name as journaled and shown by `status`.
    pub fn as_str(self) -> &'static str {
        match self {
            WorkflowState::Idle => "idle",
            WorkflowState::Clarifying => "clarifying",
            WorkflowState::Planning => "planning",
            WorkflowState::PlanReview => "plan_review",
            WorkflowState::PlanRevision => "plan_revision",
            WorkflowState::AwaitingApproval => "awaiting_approval",
            WorkflowState::Executing => "executing",
            WorkflowState::Integrating => "integrating",
            WorkflowState::Documenting => "documenting",
            WorkflowState::Testing => "testing",
            WorkflowState::Completed => "completed",
            WorkflowState::Paused => "paused",
            WorkflowState::Failed => "failed",
            WorkflowState::Cancelled => "cancelled",
        }
    }

    /// Returns true if and only if work happens in this state (it can be paused or fail).
    pub fn is_active(self) -> bool {
        !matches!(
            self,
            WorkflowState::Idle
                | WorkflowState::Completed
                | WorkflowState::Paused
                | WorkflowState::Failed
                | WorkflowState::Cancelled
        )
    }

    /// Returns true if and only if the run is over in this state (only an explicit `retry`
    /// reopens a completed one).
    pub fn is_final(self) -> bool {
        matches!(self, WorkflowState::Completed | WorkflowState::Cancelled)
    }

    /// Returns true if and only if the transition `self → to` is in the table.
    ///
    /// Leaving `paused` or `failed` is legal towards any active state here; [`Workflow`] narrows
    /// it to the state that was interrupted.
    pub fn can_move_to(self, to: WorkflowState) -> bool {
        use WorkflowState as S;
        if self.is_active() && matches!(to, S::Paused | S::Failed | S::Cancelled) {
            return true;
        }
        match self {
            S::Idle => matches!(to, S::Clarifying | S::Planning | S::Cancelled),
            S::Clarifying => to == S::Planning,
            S::Planning => matches!(to, S::PlanReview | S::AwaitingApproval),
            S::PlanReview => matches!(to, S::PlanRevision | S::AwaitingApproval),
            S::PlanRevision => to == S::PlanReview,
            S::AwaitingApproval => matches!(to, S::Executing | S::PlanReview | S::PlanRevision),
            S::Executing => matches!(
                to,
                S::Integrating | S::Documenting | S::Testing | S::Completed
            ),
            S::Integrating => matches!(to, S::Documenting | S::Testing | S::Completed),
            S::Documenting => matches!(to, S::Testing | S::Completed),
            S::Testing => to == S::Completed,
            S::Paused | S::Failed => to.is_active() || to == S::Cancelled,
            // `retry` reopens a completed run's failed packets.
            S::Completed => to == S::Executing,
            S::Cancelled => false,
        }
    }
}

impl std::fmt::Display for WorkflowState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An illegal transition, refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("illegal workflow transition {from} → {to} ({reason})")]
pub struct IllegalTransition {
    pub from: WorkflowState,
    pub to: WorkflowState,
    pub reason: String,
}

/// A run's workflow position: the current state and, while paused or failed, the state to
/// resume into.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workflow {
    state: WorkflowState,
    interrupted: Option<WorkflowState>,
}

impl Default for Workflow {
    fn default() -> Self {
        Workflow::new()
    }
}

impl Workflow {
    /// Returns a workflow in `idle`.
    pub fn new() -> Workflow {
        Workflow {
            state: WorkflowState::Idle,
            interrupted: None,
        }
    }

    /// Returns the current state.
    pub fn state(&self) -> WorkflowState {
        self.state
    }

    /// Returns the state a paused or failed run resumes into.
    pub fn resume_target(&self) -> Option<WorkflowState> {
        self.interrupted
    }

    /// Moves to `to` if the transition is legal, or returns why not (changing nothing).
    pub fn check(&self, to: WorkflowState, reason: &str) -> Result<(), IllegalTransition> {
        let illegal = || IllegalTransition {
            from: self.state,
            to,
            reason: reason.to_string(),
        };
        if !self.state.can_move_to(to) {
            return Err(illegal());
        }
        if matches!(self.state, WorkflowState::Paused | WorkflowState::Failed)
            && to != WorkflowState::Cancelled
            && Some(to) != self.interrupted
        {
            return Err(illegal());
        }
        Ok(())
    }

    /// Applies a transition already checked by [`Workflow::check`] (or replayed from the
    /// journal, where only checked transitions are written).
    pub fn apply(&mut self, to: WorkflowState) {
        if matches!(to, WorkflowState::Paused | WorkflowState::Failed) {
            if self.state.is_active() {
                self.interrupted = Some(self.state);
            }
        } else {
            self.interrupted = None;
        }
        self.state = to;
    }

    /// Checks and applies a transition.
    pub fn move_to(&mut self, to: WorkflowState, reason: &str) -> Result<(), IllegalTransition> {
        self.check(to, reason)?;
        self.apply(to);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::WorkflowState as S;
    use super::*;

    /// The legal transitions besides pause/fail/cancel from active states, written out once
    /// more so a change of the table must be made twice, on purpose.
    const FORWARD: &[(S, S)] = &[
        (S::Idle, S::Clarifying),
        (S::Idle, S::Planning),
        (S::Idle, S::Cancelled),
        (S::Clarifying, S::Planning),
        (S::Planning, S::PlanReview),
        (S::Planning, S::AwaitingApproval),
        (S::PlanReview, S::PlanRevision),
        (S::PlanReview, S::AwaitingApproval),
        (S::PlanRevision, S::PlanReview),
        (S::AwaitingApproval, S::Executing),
        (S::AwaitingApproval, S::PlanReview),
        (S::AwaitingApproval, S::PlanRevision),
        (S::Executing, S::Integrating),
        (S::Executing, S::Documenting),
        (S::Executing, S::Testing),
        (S::Executing, S::Completed),
        (S::Integrating, S::Documenting),
        (S::Integrating, S::Testing),
        (S::Integrating, S::Completed),
        (S::Documenting, S::Testing),
        (S::Documenting, S::Completed),
        (S::Testing, S::Completed),
        (S::Completed, S::Executing),
    ];

    #[test]
    fn transition_table_is_exactly_the_documented_one() {
        for from in ALL_STATES {
            for to in ALL_STATES {
                let expected = FORWARD.contains(&(from, to))
                    || (from.is_active() && matches!(to, S::Paused | S::Failed | S::Cancelled))
                    || (matches!(from, S::Paused | S::Failed)
                        && (to.is_active() || to == S::Cancelled));
                assert_eq!(from.can_move_to(to), expected, "{from} → {to}");
            }
        }
    }

    #[test]
    fn final_states_lead_nowhere_but_a_retry_and_idle_is_not_pausable() {
        for to in ALL_STATES {
            assert_eq!(S::Completed.can_move_to(to), to == S::Executing, "{to}");
            assert!(!S::Cancelled.can_move_to(to));
        }
        assert!(!S::Idle.can_move_to(S::Paused));
        assert!(!S::Idle.can_move_to(S::Executing));
    }

    #[test]
    fn pause_resumes_only_into_the_interrupted_state() {
        let mut w = Workflow::new();
        w.move_to(S::Planning, "start").unwrap();
        w.move_to(S::PlanReview, "plan valid").unwrap();
        w.move_to(S::Paused, "pause").unwrap();
        assert_eq!(w.resume_target(), Some(S::PlanReview));
        let err = w.move_to(S::Executing, "skip ahead").unwrap_err();
        assert_eq!((err.from, err.to), (S::Paused, S::Executing));
        assert_eq!(w.state(), S::Paused, "a refused transition changes nothing");
        w.move_to(S::PlanReview, "resume").unwrap();
        assert_eq!(w.resume_target(), None);
    }

    #[test]
    fn failure_is_retried_from_the_failed_state_or_cancelled() {
        let mut w = Workflow::new();
        for (to, why) in [
            (S::Planning, "a"),
            (S::AwaitingApproval, "b"),
            (S::Executing, "c"),
            (S::Failed, "model down"),
        ] {
            w.move_to(to, why).unwrap();
        }
        assert!(w.clone().move_to(S::Planning, "x").is_err());
        assert!(w.clone().move_to(S::Cancelled, "give up").is_ok());
        w.move_to(S::Executing, "resume").unwrap();
        w.move_to(S::Completed, "done").unwrap();
        assert!(w.move_to(S::Failed, "too late").is_err());
    }

    #[test]
    fn illegal_shortcuts_are_refused() {
        let mut w = Workflow::new();
        w.move_to(S::Planning, "start").unwrap();
        for to in [S::Executing, S::Integrating, S::Completed, S::PlanRevision] {
            let err = w.move_to(to, "shortcut").unwrap_err();
            assert!(err.to_string().contains("illegal"), "{err}");
        }
    }
}
