//! Integration tests of code navigation: extraction per language, resolution rules, the blob
//! cache shared by worktrees, incremental refresh, bounded rendering, the repository map and
//! the agent tools.
//!
//! Every test indexes a real temporary git repository with the real `git`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cache;
mod cli;
mod ecma;
mod go;
mod map;
mod matcher;
mod mcp;
mod python;
mod render;
mod rust;
mod scan;
#[path = "../support/mod.rs"]
mod support;
mod tools;

use git_orchestra::nav::{Index, Location, Resolution};
use support::TestRepo;

/// Returns a refreshed index of the repository's worktree.
pub fn index(repo: &TestRepo) -> Index {
    let mut index = Index::open(&repo.path).unwrap();
    index.refresh().unwrap();
    index
}

/// Returns `path:line` of each location, sorted.
pub fn places(locs: &[Location]) -> Vec<String> {
    let mut v: Vec<String> = locs
        .iter()
        .map(|l| format!("{}:{}", l.path, l.line))
        .collect();
    v.sort();
    v
}

/// Returns `path:line` of the resolved locations only, sorted.
pub fn resolved(locs: &[Location]) -> Vec<String> {
    let r: Vec<Location> = locs
        .iter()
        .filter(|l| l.resolution == Resolution::Resolved)
        .cloned()
        .collect();
    places(&r)
}
