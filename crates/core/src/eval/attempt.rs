//! Clean attempt repositories: each attempt at a task works in a new repository under the
//! eval's directory (`<repo-parent>/.orchestra/<repo-name>/.evals/<eval>/`, outside the
//! source) that holds the task's base and its history and nothing after it, so no agent can read the solution from git.
//!
//! The repository is made by fetching exactly the base commit by id (see
//! [`orchestra_git::git::init_at_commit`]): no object or ref only later commits reach (the
//! task's commit, other tasks, other attempts' branches, the hidden tests) is in it, and it
//! shares no object file with the source. Its configuration is untrusted whatever the
//! source's: trust is pinned per repository path, and an attempt repository has none, so an
//! attempt is never more trusted than the repository it comes from; the eval runs it under the
//! source's configuration as the caller loaded it.

use std::path::{Path, PathBuf};

use orchestra_git::git::{GitError, RepoInfo};

/// The branch an attempt repository starts on, at the task's base: the branch an arm's work
/// lands on.
pub const ATTEMPT_BRANCH: &str = "main";

/// Why an attempt repository could not be prepared.
#[derive(Debug, thiserror::Error)]
pub enum AttemptError {
    #[error("cannot clear the old attempt repository {path}: {source}")]
    Clear {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cannot prepare the attempt repository {path} at {base}: {source}")]
    Git {
        path: PathBuf,
        base: String,
        source: GitError,
    },
    #[error("cannot open the attempt repository {path}: {message}")]
    Open { path: PathBuf, message: String },
}

/// Returns the directory of the eval `eval`'s attempt repositories: beside the source
/// repository (`<repo-parent>/.orchestra/<repo-name>/.evals/<eval>`), outside its working tree
/// and `.git`, so an attempt cannot walk up into the source and its history.
pub fn eval_dir(common_dir: &Path, eval: &str) -> PathBuf {
    orchestra_sys::exec::outside_dir(common_dir, ".evals").join(eval)
}

/// Prepares a fresh repository at `path` holding `base` of `source` and its history only, on
/// [`ATTEMPT_BRANCH`], checked out; whatever was at `path` (an attempt that never ended) is
/// removed first. Returns the new repository.
pub fn prepare(source: &RepoInfo, base: &str, path: &Path) -> Result<RepoInfo, AttemptError> {
    if path.exists() {
        fs_err::remove_dir_all(path).map_err(|e| AttemptError::Clear {
            path: path.to_path_buf(),
            source: e,
        })?;
    }
    orchestra_git::git::init_at_commit(&source.toplevel, base, path, ATTEMPT_BRANCH).map_err(
        |e| AttemptError::Git {
            path: path.to_path_buf(),
            base: base.to_string(),
            source: e,
        },
    )?;
    RepoInfo::discover(path).map_err(|e| AttemptError::Open {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}
