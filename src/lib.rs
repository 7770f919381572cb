//! git-orchestra's engine: plans, packets, worktrees, confined file access, the run store and
//! the scheduler that drives workers.
//!
//! The library never prints and never reads the user's home configuration on its own; the
//! `git-orchestra` binary (`src/main.rs`, `src/commands/`) owns the terminal. That split lets the
//! same engine serve the CLI, `--json` output and the tests.

pub mod agent;
pub mod config;
pub mod confine;
pub mod demo;
pub mod engine;
pub mod exec;
pub mod executor;
pub mod forge;
pub mod gate;
pub mod git;
pub mod llm;
pub mod lsp;
pub mod merge;
pub mod names;
pub mod nav;
pub mod orchestrator;
pub mod plan;
pub mod project;
pub mod redact;
pub mod run;
pub mod status;
pub mod store;
