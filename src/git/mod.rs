//! Git access: a small runner for the `git` CLI, repository discovery, and packet worktrees.
//!
//! Operations that must honour users' hooks, credential helpers and configuration go through
//! the `git` CLI; object-level work that needs speed uses gix.

mod cli;
pub mod commit;
mod repo;

pub use cli::{Git, GitError};
pub use repo::{RepoError, RepoInfo};
