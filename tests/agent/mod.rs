//! Integration tests of the agent runtime: the LLM clients against a scripted model server,
//! roles, profiles and the tool loop in real temporary repositories.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod activity;
pub(crate) mod agent_cli;
pub(crate) mod agent_cli_e2e;
mod agent_cli_stream;
mod agent_loop;
mod attacks;
mod cli;
mod cli_cost;
mod config;
pub(crate) mod e2e;
mod edit_diff;
mod llm;
mod mcp_servers;
mod memory;
mod mock;
mod nav_tools;
mod questions;
mod rate_limit;
mod review;
mod sandbox;
mod stall;
mod summarise;
