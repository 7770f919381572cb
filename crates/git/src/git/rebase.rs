//! A rebase that stops at a conflict and waits in its worktree: what sending a restack
//! conflict back to a packet's worker needs, where the in-memory replay ([`Git::replay_onto`])
//! can only say that it conflicts.
//!
//! The rebase runs in a detached worktree under the engine's identity, with no editor (a
//! replayed commit keeps its message). A stop leaves the conflicting commit's change with
//! conflict markers in the worktree for the worker; continuing stages everything the worker
//! left and goes on to the next commit, which may stop again.

use super::{FailureKind, Git, GitError};

/// Where a rebase under way stands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rebased {
    /// Every commit is replayed; the new tip, checked out (detached) in the worktree.
    Done(String),
    /// The change of commit `commit` conflicts in `paths`; the markers are in the worktree.
    Stopped { commit: String, paths: Vec<String> },
}

impl Git {
    /// Starts rebasing the commits of `upstream..HEAD` of this (detached) worktree onto
    /// `onto`, and returns where it stands: done, or stopped at a conflict for a worker to
    /// resolve. A rebase git refuses to start is its classified error.
    pub fn rebase_onto(&self, onto: &str, upstream: &str) -> Result<Rebased, GitError> {
        let out = self.rebasing().finish(
            [
                "rebase",
                "--no-autosquash",
                "--no-autostash",
                "--onto",
                onto,
                "--end-of-options",
                upstream,
            ],
            None,
        )?;
        self.rebase_state(out)
    }

    /// Stages everything in the worktree and goes on with the rebase under way, and returns
    /// where it stands then.
    pub fn rebase_continue(&self) -> Result<Rebased, GitError> {
        self.run(["add", "--all", "--", "."])?;
        let out = self.rebasing().finish(["rebase", "--continue"], None)?;
        self.rebase_state(out)
    }

    /// Abandons the rebase under way, putting the worktree back at the commit it started from.
    pub fn rebase_abort(&self) -> Result<(), GitError> {
        self.rebasing().run(["rebase", "--abort"]).map(drop)
    }

    /// Returns true if and only if a rebase is under way in this worktree.
    pub fn is_rebasing(&self) -> Result<bool, GitError> {
        let merge = self.git_path("rebase-merge")?;
        let apply = self.git_path("rebase-apply")?;
        Ok(std::path::Path::new(&merge).exists() || std::path::Path::new(&apply).exists())
    }

    /// Returns the paths with unresolved conflicts in this worktree's index.
    pub fn unmerged_paths(&self) -> Result<Vec<String>, GitError> {
        let out = self.run(["diff", "--name-only", "--diff-filter=U", "-z"])?;
        let mut paths: Vec<String> = out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect();
        paths.dedup();
        Ok(paths)
    }

    /// Returns the subjects of the commits of `range` (e.g. `head..base`), newest first, at
    /// most `max`.
    pub fn subjects(&self, range: &str, max: usize) -> Result<Vec<String>, GitError> {
        let out = self.run([
            "log",
            &format!("--max-count={max}"),
            "--format=%s",
            "--end-of-options",
            range,
            "--",
        ])?;
        Ok(out.lines().map(str::to_string).collect())
    }

    /// Returns this runner as a rebase needs it: writing as the engine, never opening an
    /// editor.
    fn rebasing(&self) -> Git {
        self.writing()
            .with_env("GIT_EDITOR", "true")
            .with_env("GIT_SEQUENCE_EDITOR", "true")
    }

    /// Returns where the rebase stands after a `git rebase` that printed `out`.
    fn rebase_state(&self, out: super::cli::Finished) -> Result<Rebased, GitError> {
        if out.success() && !self.is_rebasing()? {
            return Ok(Rebased::Done(self.head()?));
        }
        let error = out.into_error();
        if !self.is_rebasing()? {
            return Err(error);
        }
        let paths = self.unmerged_paths()?;
        if paths.is_empty() && error.kind() != FailureKind::Conflict {
            return Err(error);
        }
        let commit = self.resolve("REBASE_HEAD")?.unwrap_or_default();
        Ok(Rebased::Stopped { commit, paths })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git as run_git;

    #[test]
    fn a_rebase_stops_at_a_conflict_with_its_markers_and_goes_on_once_resolved() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().to_path_buf();
        run_git(&dir, &["init", "--quiet", "-b", "main"]);
        let commit = |file: &str, text: &str, msg: &str| {
            std::fs::write(dir.join(file), text).unwrap();
            run_git(&dir, &["add", file]);
            run_git(&dir, &["commit", "-qm", msg]);
        };
        commit("a.txt", "base\n", "base");
        run_git(&dir, &["checkout", "-qb", "topic"]);
        commit("a.txt", "topic\n", "topic's change");
        commit("b.txt", "more\n", "topic's second");
        run_git(&dir, &["checkout", "-q", "main"]);
        commit("a.txt", "main\n", "main's change");
        run_git(&dir, &["checkout", "-q", "--detach", "topic"]);
        let g = Git::new(&dir);
        let topic = g.resolve_commit("topic").unwrap().unwrap();
        let Rebased::Stopped { commit: c, paths } = g.rebase_onto("main", "main~1").unwrap() else {
            panic!("not stopped");
        };
        assert_eq!(paths, ["a.txt"]);
        assert_eq!(g.commit_message(&c).unwrap(), "topic's change");
        assert!(g.is_rebasing().unwrap());
        let text = std::fs::read_to_string(dir.join("a.txt")).unwrap();
        assert!(text.contains("<<<<<<<") && text.contains("main\n") && text.contains("topic\n"));
        assert_eq!(g.subjects("topic..main", 5).unwrap(), ["main's change"]);

        std::fs::write(dir.join("a.txt"), "main and topic\n").unwrap();
        let Rebased::Done(tip) = g.rebase_continue().unwrap() else {
            panic!("not done");
        };
        assert!(!g.is_rebasing().unwrap());
        assert!(g.is_ancestor("main", &tip).unwrap());
        assert_eq!(
            g.blob_at(&tip, "a.txt").unwrap().unwrap(),
            b"main and topic\n"
        );
        assert_eq!(g.blob_at(&tip, "b.txt").unwrap().unwrap(), b"more\n");
        assert_eq!(g.commit_message(&tip).unwrap(), "topic's second");
        assert_eq!(g.resolve_commit("topic").unwrap().unwrap(), topic);
    }
}
