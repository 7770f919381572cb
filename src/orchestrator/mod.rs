//! The orchestrator behind `git orchestra start`: takes one objective through clarification,
//! planning, plan review and approval, execution by the packet engine, integration by the merge
//! coordinator, and a final report — as a journaled workflow state machine, so a killed run
//! resumes in the phase it was in.

pub mod journal;
pub mod replay;
pub mod workflow;

pub use journal::{
    ClarifyOutcome, Entry, JournalError, StartJournal, StartSettings, TurnRecord, UsageRow,
    WorkflowEvent,
};
pub use replay::{Replaying, SharedJournal, request_key};
pub use workflow::{IllegalTransition, Workflow, WorkflowState};
