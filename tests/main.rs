//! The integration tests of git-orchestra: one binary, a module per area, each test on real
//! temporary repositories with the real `git` and the real `git-orchestra` binary.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod agent;
mod engine;
mod forge;
mod gates;
mod layout;
mod merge;
mod nav;
mod web;
mod workflow;

use orchestra_test_support as support;
