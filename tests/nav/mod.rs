//! Integration tests of code navigation: extraction per language, resolution rules, the blob
//! cache shared by worktrees, incremental refresh, bounded rendering, the repository map and
//! the agent tools.
//!
//! Every test indexes a real temporary git repository with the real `git`.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cache;
mod cli;
mod ecma;
mod externals;
mod go;
mod inheritance;
mod lsp;
mod lsp_attacks;
mod lsp_client;
mod map;
mod matcher;
mod mcp;
mod nvim;
mod position;
mod python;
mod receivers;
mod render;
mod rust;
mod scan;
mod shadowing;
mod tools;
mod uses;
mod workspaces;

use crate::support::TestRepo;
use git_orchestra::nav::{At, Index, Location, Resolution};

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

/// Returns a repository holding the files of `fixtures/nav/<name>`.
pub fn fixture(name: &str) -> TestRepo {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures/nav")
        .join(name);
    let mut files: Vec<(String, String)> = Vec::new();
    let mut dirs = vec![root.clone()];
    while let Some(d) = dirs.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else {
                let rel = p
                    .strip_prefix(&root)
                    .unwrap()
                    .to_string_lossy()
                    .into_owned();
                files.push((rel, std::fs::read_to_string(&p).unwrap()));
            }
        }
    }
    let refs: Vec<(&str, &str)> = files
        .iter()
        .map(|(a, b)| (a.as_str(), b.as_str()))
        .collect();
    TestRepo::with_files(&refs)
}

/// Returns the position of `token` in the first line of `path` containing `needle` (the token
/// searched from where the needle starts).
pub fn at(repo: &TestRepo, path: &str, needle: &str, token: &str) -> At {
    let text = std::fs::read_to_string(repo.path.join(path)).unwrap();
    let (i, line) = text
        .lines()
        .enumerate()
        .find(|(_, l)| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` is not in {path}"));
    let start = line.find(needle).unwrap();
    // The first whole-word occurrence of the token (`handle` is not `handler`).
    let word = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric() || c == '_');
    let col = line[start..]
        .match_indices(token)
        .map(|(i, _)| start + i)
        .find(|&i| {
            !word(line[..i].chars().next_back()) && !word(line[i + token.len()..].chars().next())
        })
        .expect("the token is in the needle");
    At {
        path: path.to_string(),
        line: i as u32 + 1,
        col: Some(col as u32 + 1),
    }
}

/// Returns the line of `path` holding `needle` first, as `path:line`.
pub fn line_of(repo: &TestRepo, path: &str, needle: &str) -> String {
    let text = std::fs::read_to_string(repo.path.join(path)).unwrap();
    let i = text
        .lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` is not in {path}"));
    format!("{path}:{}", i + 1)
}

/// Returns `path:line` of the single resolved definition the token at `at` denotes; panics
/// when the answer is a candidate or not one definition.
pub fn def_at(idx: &Index, at: &At) -> String {
    let locs = idx.definition_at(None, Some(at)).unwrap();
    assert!(
        locs.len() == 1 && locs[0].resolution == Resolution::Resolved,
        "{at:?}: {locs:?}"
    );
    format!("{}:{}", locs[0].path, locs[0].line)
}
