//! Why a verb of a run's life was refused or failed: refusals name what is wrong with the
//! request, the rest carry the layer that failed.

use crate::orchestrator::{JournalError, StartError, WorkflowState};
use crate::status::StatusError;
use orchestra_core::engine::EngineError;
use orchestra_core::store::StoreError;

/// Why a verb of a run's life did not happen.
#[derive(Debug, thiserror::Error)]
pub enum LifecycleError {
    /// No run has this id.
    #[error("no run `{id}` in this repository; `git orchestra status` lists the runs")]
    UnknownRun { id: String },
    /// The repository has no run yet.
    #[error(
        "no run in this repository yet; `git orchestra start \"<objective>\"` or `git orchestra run <plan.toml>` makes one"
    )]
    NoRun,
    /// A run that `start` did not make was named for what only a `start` run does.
    #[error("no `start` run `{run}` in this repository")]
    UnknownStart { run: String },
    /// The newest run was not made by `start`, and only a `start` run does `what`.
    #[error("run `{run}` was not made by `start`, and only a `start` run {what}")]
    NotStart { run: String, what: String },
    /// The run has ended: there is nothing to stop.
    #[error("run {run} is already {state}")]
    AlreadyFinal { run: String, state: WorkflowState },
    /// The run has ended or has nothing running: there is nothing to cancel.
    #[error("run `{run}` is {state}; nothing to cancel")]
    NothingToCancel { run: String, state: String },
    /// The run has no packets yet (a `start` run still planning).
    #[error(
        "run `{run}` is {phase} and has no packets yet; `git orchestra status {run}` shows where it is"
    )]
    NoPacketsYet { run: String, phase: String },
    /// An answer without words.
    #[error("the answer is empty")]
    EmptyAnswer,
    /// No agent of the packet waits on a question.
    #[error("no agent of packet `{packet}` has asked a question")]
    NoQuestion { packet: String },
    /// The run has no packet of this id.
    #[error("no packet `{packet}` in run `{run}`")]
    NoSuchPacket { run: String, packet: String },
    /// The packet has ended: comments can no longer reach one of its fix rounds.
    #[error(
        "packet `{packet}` is already {state}; its comments can no longer reach a fix round of this run"
    )]
    PacketFinal { packet: String, state: String },
    /// Comments without a word in them.
    #[error("no comment to send: write one on a line of the diff first")]
    NoComment,
    /// Feedback for the planner without a word in it.
    #[error("say what the planner should change: the feedback is empty")]
    EmptyFeedback,
    /// The run does not wait for a plan approval.
    #[error("run `{run}` does not wait for a plan approval")]
    NoApprovalWaiting { run: String },
    /// The run waits for an approval but holds no valid plan to approve.
    #[error("the run has no valid plan to approve")]
    NoValidPlan,
    /// The run cannot be resumed or retried in the state it is in.
    #[error("run `{run}` is {state}; {what}")]
    NotApplicable {
        run: String,
        state: String,
        what: String,
    },
    /// The frontend could not start a process to drive the run.
    #[error("{0}")]
    Launch(String),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Start(#[from] StartError),
    #[error(transparent)]
    Journal(#[from] JournalError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Status(#[from] StatusError),
    #[error(transparent)]
    OwnChange(#[from] orchestra_core::merge::OwnChangeError),
}

impl LifecycleError {
    /// Returns true if and only if the error is about the request (a user's to fix), not a
    /// failure of the machinery.
    pub fn is_refusal(&self) -> bool {
        use LifecycleError as L;
        !matches!(
            self,
            L::Engine(_) | L::Start(_) | L::Journal(_) | L::Store(_) | L::Status(_) | L::Launch(_)
        )
    }
}
