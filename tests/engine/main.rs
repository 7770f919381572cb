//! Integration tests of the packet engine, in one binary to keep link time low.
//!
//! Every test works on real temporary repositories with the real `git`, in a hermetic
//! environment (see `support::hermetic`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod confine;
mod fix_rounds;
#[path = "../forge/forge_mock.rs"]
mod forge_mock;
mod help;
mod plan;
mod retry;
mod run;
mod run_input;
mod start;
mod start_agents;
#[path = "../support/mod.rs"]
mod support;
mod symbols;
mod worktree;
