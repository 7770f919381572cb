//! Merges: in memory (`merge-tree --write-tree` + `commit-tree`), fast-forwards of a checked-out
//! branch, and the conflicted merge a worker resolves in its worktree.
//!
//! Every merge that can write a commit or a reflog runs under the engine's identity, so a user
//! with no git identity configured gets the same merges as one with. A merge that git refuses
//! before it starts (no identity, a held lock, local changes) is an error of that kind, never a
//! conflict: only a merge that stopped with conflict markers is `MergeStart::Conflicted`.

use super::{FailureKind, Git, GitError};

/// The result of merging two commits in the object database.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeTree {
    /// The merge is clean; its tree is written.
    Clean { tree: String },
    /// The merge conflicts on these paths.
    Conflicts { paths: Vec<String> },
}

/// The result of merging two commits without touching any working tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MergeOutcome {
    /// The merged commit (one of the inputs when the other was already contained in it).
    Merged(String),
    /// The two sides conflict in these paths.
    Conflict(Vec<String>),
}

/// How a merge into a worktree that leaves the result uncommitted went.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MergeStart {
    /// Everything merged; the result is staged, waiting for a commit.
    Clean,
    /// The merge stopped with conflicts in the working tree (`MERGE_HEAD` is set).
    Conflicted,
}

impl Git {
    /// Merges `ours` and `theirs` with `git merge-tree --write-tree`, trusting its exit status
    /// (0 clean, 1 conflicts) rather than the emptiness of any list.
    pub fn merge_tree(&self, ours: &str, theirs: &str) -> Result<MergeTree, GitError> {
        let out = self.finish(
            [
                "merge-tree",
                "--write-tree",
                "--name-only",
                "--no-messages",
                "-z",
                "--end-of-options",
                ours,
                theirs,
            ],
            None,
        )?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        let mut fields = stdout.split('\0');
        let tree = fields.next().unwrap_or("").trim().to_string();
        match out.code {
            0 => Ok(MergeTree::Clean { tree }),
            // Exit 1 means conflicts; the listed names are what conflicts (never infer "clean"
            // from an empty list).
            1 => {
                let mut paths: Vec<String> = fields
                    .take_while(|f| !f.is_empty())
                    .map(str::to_string)
                    .collect();
                paths.dedup();
                Ok(MergeTree::Conflicts { paths })
            }
            _ => Err(out.into_error()),
        }
    }

    /// Adds the history up to `tips` that the repository's commit-graph does not cover yet as
    /// a new layer of it (`git commit-graph write --split --stdin-commits`), which git merges
    /// with the layers below as they grow. Git finds a merge's base by walking back from both
    /// sides; commits a graph covers carry generation numbers that end that walk early, while
    /// through new commits made within the same second it has nothing to go by and reads
    /// every one of them, so a merge into a long run of new merges costs more with each.
    pub fn extend_commit_graph(&self, tips: &[&str]) -> Result<(), GitError> {
        let mut input = String::new();
        for tip in tips {
            input.push_str(tip);
            input.push('\n');
        }
        self.run_with_stdin(
            [
                "commit-graph",
                "write",
                "--split",
                "--stdin-commits",
                "--no-progress",
            ],
            Some(input.as_bytes()),
        )
        .map(drop)
    }

    /// Writes a commit of `tree` with `parents` and `message` under the engine's identity and
    /// returns its id.
    pub fn commit_tree(
        &self,
        tree: &str,
        parents: &[&str],
        message: &str,
    ) -> Result<String, GitError> {
        let mut args = vec!["commit-tree", tree];
        for p in parents {
            args.extend(["-p", p]);
        }
        args.extend(["-F", "-"]);
        // As `-m` would: the message ends with exactly one line break.
        let mut text = message.to_string();
        if !text.ends_with('\n') {
            text.push('\n');
        }
        let commit = self.writing().run_with_stdin(args, Some(text.as_bytes()))?;
        super::revs::seen_commit(&commit, Some(tree));
        Ok(commit)
    }

    /// Merges `theirs` into `ours` in memory and, when clean, returns a merge commit with both
    /// as parents made under the engine's identity. When one side already contains the other,
    /// no commit is made and the containing side is returned.
    pub fn merge_in_memory(
        &self,
        ours: &str,
        theirs: &str,
        message: &str,
    ) -> Result<MergeOutcome, GitError> {
        if self.is_ancestor(theirs, ours)? {
            return Ok(MergeOutcome::Merged(ours.to_string()));
        }
        if self.is_ancestor(ours, theirs)? {
            return Ok(MergeOutcome::Merged(theirs.to_string()));
        }
        match self.merge_tree(ours, theirs)? {
            MergeTree::Clean { tree } => Ok(MergeOutcome::Merged(self.commit_tree(
                &tree,
                &[ours, theirs],
                message,
            )?)),
            MergeTree::Conflicts { paths } => Ok(MergeOutcome::Conflict(paths)),
        }
    }

    /// Fast-forwards the branch checked out in this worktree to `tip`; refuses (an error) when
    /// that is not a fast-forward or the worktree's changes are in the way.
    pub fn merge_ff_only(&self, tip: &str) -> Result<(), GitError> {
        // No `git maintenance run --auto` process started (and waited for) after it, as after
        // the engine's commits: the user's own next git command still runs it.
        self.writing()
            .run([
                "-c",
                "maintenance.auto=false",
                "-c",
                "gc.auto=0",
                "merge",
                "--ff-only",
                "--quiet",
                tip,
            ])
            .map(drop)
    }

    /// Merges `onto` into this worktree's branch without committing, leaving conflict markers
    /// for a worker to resolve.
    ///
    /// Returns `Conflicted` only when git stopped with conflicts (`MERGE_HEAD` is set); a merge
    /// git refused to start is its classified error (`IdentityMissing`, `LockHeld`,
    /// `DirtyTree`, …) and leaves no merge under way.
    pub fn merge_no_commit(&self, onto: &str) -> Result<MergeStart, GitError> {
        let out = self
            .writing()
            .finish(["merge", "--no-ff", "--no-commit", onto], None)?;
        if out.success() {
            return Ok(MergeStart::Clean);
        }
        let merging = self.is_merging()?;
        let error = out.into_error();
        if error.kind() == FailureKind::Conflict && merging {
            Ok(MergeStart::Conflicted)
        } else {
            Err(error)
        }
    }

    /// Returns true if and only if a merge is under way in this worktree (`MERGE_HEAD` exists).
    pub fn is_merging(&self) -> Result<bool, GitError> {
        Ok(self.resolve("MERGE_HEAD")?.is_some())
    }

    /// Returns the commit being merged in (`MERGE_HEAD`), `None` when no merge is under way.
    pub fn merge_head(&self) -> Result<Option<String>, GitError> {
        self.resolve("MERGE_HEAD")
    }

    /// Makes `commit` the one being merged in (`MERGE_HEAD`), so this worktree's next commit is
    /// a merge with it.
    pub fn set_merge_head(&self, commit: &str) -> Result<(), GitError> {
        // A pseudo-ref git's `update-ref` refuses to write: the file, as `git merge` writes it.
        let path = self.git_path("MERGE_HEAD")?;
        fs_err::write(&path, format!("{commit}\n"))
            .map_err(|e| GitError::failed(format!("write {path}"), 1, e.to_string()))
    }

    /// Abandons the merge under way in this worktree, restoring the branch's own state.
    pub fn merge_abort(&self) -> Result<(), GitError> {
        self.writing().run(["merge", "--abort"]).map(drop)
    }
}

#[cfg(test)]
mod tests {
    use crate::git::testing::{commit_graph_holds, git, repo_with_worktree};

    /// Each call adds the commits up to the tips given that the graph does not hold yet, on
    /// top of what it held, whether or not the repository had a graph before.
    #[test]
    fn extending_the_commit_graph_takes_in_the_new_history_up_to_the_tips() {
        let (_tmp, repo, _wt) = repo_with_worktree("w");
        let main = &repo.toplevel;
        let first = git(main, &["rev-parse", "HEAD"]);
        assert!(!commit_graph_holds(&repo.common_dir, &first));
        repo.git().extend_commit_graph(&[&first]).unwrap();
        assert!(commit_graph_holds(&repo.common_dir, &first));
        git(main, &["commit", "-q", "--allow-empty", "-m", "b"]);
        let second = git(main, &["rev-parse", "HEAD"]);
        assert!(!commit_graph_holds(&repo.common_dir, &second));
        repo.git().extend_commit_graph(&[&second]).unwrap();
        assert!(commit_graph_holds(&repo.common_dir, &second));
        assert!(commit_graph_holds(&repo.common_dir, &first));
        git(main, &["commit-graph", "verify"]);
    }
}
