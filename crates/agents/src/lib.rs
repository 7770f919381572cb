//! git-orchestra's agents: the agent loop and its sandbox, agent CLIs, the roles that clarify, plan
//! and review, the `start` workflow, and run status.

pub mod agent;
pub mod crew;
pub mod executor;
pub mod orchestrator;
pub mod run;
pub mod status;
