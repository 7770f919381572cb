//! Integration tests of the agent runtime: the LLM clients against a scripted model server,
//! roles, profiles and the tool loop in real temporary repositories.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent_loop;
mod cli;
mod llm;
mod mock;
mod review;
mod sandbox;
mod support;
