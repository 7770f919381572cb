//! The agent runtime: roles as files, provider profiles, the tool registry and the loop that
//! lets one model work inside one packet's worktree.

pub mod activity;
mod call;
pub mod cli;
pub mod compare;
mod context;
mod dispatch;
mod events;
pub mod frontmatter;
pub mod limit;
pub mod mcp;
mod packet_agent;
mod person;
pub mod profiles;
pub mod resumable;
mod review_agent;
mod review_parts;
pub mod role;
mod runner;
pub mod sandbox;
pub mod state;
mod summary;
pub mod tools;
pub mod untrusted;

pub use events::{AgentError, AgentEvent, AgentOutcome, UNREACHABLE};
pub use packet_agent::{
    AgentWorker, PROJECT_CONTEXT_CHARS, PacketAgent, PacketTools, learned, learned_section,
    open_transcript, outcome_report, remember, role_for_job, task_text, validation_sandbox,
    with_dependencies, with_learned, with_project, with_strategy,
};
pub use person::{ANSWER_POLL, Person};
pub use profiles::SetupError;
pub use review_agent::{ModelReviewer, REVIEWER_ROLE, ReviewAgent, parse_findings};
pub use role::{Role, RoleError, RoleSource, Roles};
pub use runner::{AgentSpec, Answerer, Host, Reply, run, run_from};
pub use state::WorkerState;
pub use tools::SubtaskRequest;
