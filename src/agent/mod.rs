//! The agent runtime: roles as files, provider profiles, the tool registry and the loop that
//! lets one model work inside one packet's worktree.

mod call;
mod context;
mod dispatch;
mod events;
pub mod frontmatter;
mod journal;
pub mod profiles;
mod review;
pub mod role;
mod runner;
pub mod sandbox;
pub mod state;
mod summary;
pub mod tools;
mod worker;

pub use events::{AgentError, AgentEvent, AgentOutcome};
pub use profiles::SetupError;
pub use review::{ModelReviewer, REVIEWER_ROLE, ReviewAgent, parse_findings};
pub use role::{Role, RoleError, RoleSource, Roles};
pub use runner::{AgentSpec, Answerer, Host, Reply, run};
pub use state::WorkerState;
pub use tools::SubtaskRequest;
pub use worker::{
    AgentWorker, PacketAgent, open_transcript, outcome_report, role_for_job, task_text,
};
