//! The orchestrator behind `git orchestra start`: takes one objective through clarification,
//! planning, plan review and approval, execution by the packet engine, integration by the merge
//! coordinator, and a final report — as a journaled workflow state machine, so a killed run
//! resumes in the phase it was in.
//!
//! The orchestrator's own context stays small: artifacts (plan, diffs, merge report) are stored
//! once under the run's directory and its prompts carry only bounded summaries
//! ([`context`]); every model turn is journaled and replayed on resume ([`replay`]).

pub mod answers;
mod approval;
pub mod budget;
pub mod calls;
mod clarify;
pub mod consult;
pub mod context;
pub mod driver;
mod execute;
pub mod explore;
pub mod fault;
mod finishing;
pub mod models;
pub mod objective;
mod plan_review;
pub mod planning;
pub mod replay;
pub mod report;
pub mod retry;
pub mod risky;
pub mod routing;
pub mod spend;
pub mod start_journal;
pub mod start_reviewer;
pub mod start_worker;
mod subtask;
pub mod workflow;

pub use approval::{approval_forecast, plan_forecast};
pub use driver::{
    Approval, Interaction, StartError, StartOutcome, StartRequest, driver_lock, locate, start,
};
pub use execute::MAX_MERGE_ROUNDS;
pub use plan_review::MAX_REVIEW_ROUNDS;
pub use planning::MAX_PLAN_ROUNDS;
pub use replay::{Replaying, SharedJournal, request_key};
pub use report::Report;
pub use start_journal::{
    ClarifyOutcome, Entry, JournalError, PublishSettings, PublishedPr, StartJournal, StartSettings,
    TurnRecord, UsageRow, WorkflowEvent,
};
pub use workflow::{IllegalTransition, Workflow, WorkflowState};

/// The source text of a `start` run's journal, whose doc comments the generated reference
/// quotes.
pub const JOURNAL_SOURCE: &str = include_str!("start_journal.rs");
