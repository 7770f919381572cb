//! Merging two commits in the object database, without a working tree.

use std::process::Stdio;

use super::MergeError;
use crate::git::commit::{COMMITTER_EMAIL, COMMITTER_NAME};
use crate::git::{Git, GitError};

/// The result of an in-memory merge.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeTree {
    /// The merge is clean; its tree is written.
    Clean { tree: String },
    /// The merge conflicts on these paths.
    Conflicts { paths: Vec<String> },
}

/// Merges `ours` and `theirs` with `git merge-tree --write-tree`, trusting its exit status
/// (0 clean, 1 conflicts) rather than the emptiness of any list.
pub fn merge_tree(git: &Git, ours: &str, theirs: &str) -> Result<MergeTree, MergeError> {
    let out = git
        .command([
            "merge-tree",
            "--write-tree",
            "--name-only",
            "--no-messages",
            "-z",
            ours,
            theirs,
        ])
        .stdin(Stdio::null())
        .output()
        .map_err(|source| GitError::Spawn { source })?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let mut fields = stdout.split('\0');
    let tree = fields.next().unwrap_or("").trim().to_string();
    match out.status.code() {
        Some(0) => Ok(MergeTree::Clean { tree }),
        Some(1) => {
            let mut paths: Vec<String> = fields
                .take_while(|f| !f.is_empty())
                .map(str::to_string)
                .collect();
            paths.dedup();
            Ok(MergeTree::Conflicts { paths })
        }
        code => Err(MergeError::MergeTree {
            code: code.unwrap_or(-1),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }),
    }
}

/// Writes a merge commit of `tree` with `parents`, under the engine's identity.
pub fn commit_merge(
    git: &Git,
    tree: &str,
    parents: &[&str],
    message: &str,
) -> Result<String, MergeError> {
    let mut args = vec!["commit-tree".to_string(), tree.to_string()];
    for p in parents {
        args.push("-p".into());
        args.push((*p).to_string());
    }
    args.push("-m".into());
    args.push(message.to_string());
    let mut cmd = git.command(&args);
    for (k, v) in [
        ("GIT_AUTHOR_NAME", COMMITTER_NAME),
        ("GIT_AUTHOR_EMAIL", COMMITTER_EMAIL),
        ("GIT_COMMITTER_NAME", COMMITTER_NAME),
        ("GIT_COMMITTER_EMAIL", COMMITTER_EMAIL),
    ] {
        cmd.env(k, v);
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|source| GitError::Spawn { source })?;
    if !out.status.success() {
        return Err(GitError::Failed {
            args: format!("commit-tree {tree}"),
            code: out.status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        }
        .into());
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Returns whether merging `a` and `b` would conflict, without writing any ref.
pub fn predict(git: &Git, a: &str, b: &str) -> Result<MergeTree, MergeError> {
    for spec in [a, b] {
        let full = format!("{spec}^{{commit}}");
        if !git.succeeds([
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &full,
        ])? {
            return Err(MergeError::UnknownRevision {
                spec: spec.to_string(),
            });
        }
    }
    merge_tree(git, a, b)
}
