//! Reads and resets a working tree: status, hard reset and clean, `git grep`, and detached
//! scratch checkouts.

use std::path::Path;

use super::{Git, GitError};

/// Which untracked files `status` lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Untracked {
    /// Untracked directories as one entry (git's default).
    Normal,
    /// Every untracked file.
    All,
}

impl Git {
    /// Returns `git status --porcelain` of this worktree (empty when it is clean).
    pub fn status_porcelain(&self, untracked: Untracked) -> Result<String, GitError> {
        let mode = match untracked {
            Untracked::Normal => "--untracked-files=normal",
            Untracked::All => "--untracked-files=all",
        };
        self.run(["status", "--porcelain", mode])
    }

    /// Returns the paths of the files this worktree tracks, as git lists them.
    pub fn tracked_files(&self) -> Result<Vec<String>, GitError> {
        let out = self.run(["ls-files", "-z"])?;
        Ok(out
            .split('\0')
            .filter(|p| !p.is_empty())
            .map(str::to_string)
            .collect())
    }

    /// Resets this worktree's index and tracked files to HEAD.
    pub fn reset_hard(&self) -> Result<(), GitError> {
        // Resetting writes ORIG_HEAD and a reflog entry: under the engine's identity.
        self.writing()
            .run(["reset", "--hard", "--quiet", "HEAD"])
            .map(drop)
    }

    /// Removes untracked (not ignored) files and directories from this worktree.
    pub fn clean(&self) -> Result<(), GitError> {
        self.run(["clean", "-d", "--force", "--quiet"]).map(drop)
    }

    /// Returns `path:line:text` for every line of tracked and untracked text files matching the
    /// extended regular expression `pattern` (empty when nothing matches).
    pub fn grep(&self, pattern: &str) -> Result<String, GitError> {
        match self.run([
            "grep",
            "-n",
            "-I",
            "--no-textconv",
            "--untracked",
            "-E",
            "-e",
            pattern,
        ]) {
            Err(GitError::Failed { code: 1, .. }) => Ok(String::new()),
            other => other,
        }
    }

    /// Checks `commit` out at `path` as a new detached worktree, without running hooks.
    pub fn add_detached_worktree(&self, path: &Path, commit: &str) -> Result<(), GitError> {
        let path = path.to_string_lossy();
        self.writing()
            .run([
                "-c",
                "core.hooksPath=/dev/null",
                "worktree",
                "add",
                "--detach",
                "--quiet",
                &path,
                commit,
            ])
            .map(drop)
    }

    /// Makes `paths` in the worktree (not the index) what they are at `commit`: a path
    /// `commit` lacks is removed. Brings files of another commit over without committing them.
    pub fn restore_from(&self, commit: &str, paths: &[String]) -> Result<(), GitError> {
        if paths.is_empty() {
            return Ok(());
        }
        let source = format!("--source={commit}");
        let mut args = vec!["restore", source.as_str(), "--worktree", "--"];
        args.extend(paths.iter().map(String::as_str));
        self.writing().run(args).map(drop)
    }

    /// Moves this detached checkout to `commit`, discarding whatever changed in it (`checkout
    /// --force --detach`, hooks off): git rewrites only the files that differ, so a scratch
    /// checkout kept between candidates costs what changed, not the whole tree.
    pub fn force_detach_to(&self, commit: &str) -> Result<(), GitError> {
        self.writing()
            .run([
                "-c",
                "core.hooksPath=/dev/null",
                "checkout",
                "--force",
                "--detach",
                "--quiet",
                commit,
            ])
            .map(drop)
    }

    /// Removes every untracked file and directory from this worktree, ignored ones and nested
    /// repositories included (`clean -ffdx`): what is left is exactly the checked-out commit.
    pub fn clean_all(&self) -> Result<(), GitError> {
        self.run(["clean", "-ffdx", "--quiet"]).map(drop)
    }

    /// Removes the worktree at `path` with whatever it holds (`worktree remove --force
    /// --force`, so even a locked one goes).
    pub fn force_remove_worktree(&self, path: &Path) -> Result<(), GitError> {
        let path = path.to_string_lossy();
        self.run(["worktree", "remove", "--force", "--force", &path])
            .map(drop)
    }

    /// Drops the registrations of worktrees whose directories are gone.
    pub fn prune_worktrees(&self) -> Result<(), GitError> {
        self.run(["worktree", "prune"]).map(drop)
    }
}
