//! Merging two commits in the object database, without a working tree.

use super::MergeError;
use orchestra_git::git::{Git, GitError};

pub use orchestra_git::git::MergeTree;

/// Merges `ours` and `theirs` with `git merge-tree --write-tree`, trusting its exit status
/// (0 clean, 1 conflicts) rather than the emptiness of any list.
pub fn merge_tree(git: &Git, ours: &str, theirs: &str) -> Result<MergeTree, MergeError> {
    git.merge_tree(ours, theirs).map_err(|e| match e {
        GitError::Failed { code, stderr, .. } => MergeError::MergeTree { code, stderr },
        e => e.into(),
    })
}

/// Writes a merge commit of `tree` with `parents`, under the engine's identity.
pub fn commit_merge(
    git: &Git,
    tree: &str,
    parents: &[&str],
    message: &str,
) -> Result<String, MergeError> {
    Ok(git.commit_tree(tree, parents, message)?)
}

/// Returns whether merging `a` and `b` would conflict, without writing any ref.
pub fn predict(git: &Git, a: &str, b: &str) -> Result<MergeTree, MergeError> {
    for spec in [a, b] {
        if git.resolve_commit(spec)?.is_none() {
            return Err(MergeError::UnknownRevision {
                spec: spec.to_string(),
            });
        }
    }
    merge_tree(git, a, b)
}
