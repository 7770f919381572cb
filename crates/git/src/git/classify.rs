//! Tells what a failed git command means from its exit status and messages, so callers can
//! act on "no identity", "locked", "local changes in the way", "conflict" and "not found"
//! instead of on git's wording.

use std::fmt;

/// What kind of failure a git command reported, told from its exit status and messages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureKind {
    /// git has no user identity to write a commit, note or reflog with.
    IdentityMissing,
    /// Another process holds a lock file (`index.lock`, a ref's `.lock`).
    LockHeld,
    /// Local changes would be overwritten, or the tree must be clean first.
    DirtyTree,
    /// A merge stopped with conflicts in the working tree.
    Conflict,
    /// A revision, ref, object or path does not exist.
    NotFound,
    /// Anything else.
    Other,
}

impl FailureKind {
    /// Returns the kind of failure that `code`, `stderr` and `stdout` of a git command describe.
    ///
    /// Only a merge that actually stopped with conflicts is a conflict (git prints `CONFLICT`
    /// and "Automatic merge failed" on stdout, exit 1); a merge refused before it started (no
    /// identity, a held lock, local changes) is that refusal.
    pub fn classify(code: i32, stderr: &str, stdout: &str) -> FailureKind {
        let said = |needle: &str| stderr.contains(needle) || stdout.contains(needle);
        if said("Please tell me who you are")
            || said("Committer identity unknown")
            || said("Author identity unknown")
            || said("unable to auto-detect email address")
            || said("empty ident name")
        {
            FailureKind::IdentityMissing
        } else if (said("Unable to create") && said(".lock")) || said("index.lock") {
            FailureKind::LockHeld
        } else if said("would be overwritten by merge")
            || said("would be overwritten by checkout")
            || said("Your local changes")
            || said("commit your changes or stash them")
            || said("You have not concluded your merge")
        {
            FailureKind::DirtyTree
        } else if code == 1 && (said("CONFLICT") || said("Automatic merge failed")) {
            FailureKind::Conflict
        } else if said("unknown revision")
            || said("bad revision")
            || said("Needed a single revision")
            || said("not a valid object name")
            || said("not something we can merge")
            || said("does not exist")
            || said("couldn't find remote ref")
            || said("No such remote")
        {
            FailureKind::NotFound
        } else {
            FailureKind::Other
        }
    }
}

impl fmt::Display for FailureKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            FailureKind::IdentityMissing => "git has no identity to write with",
            FailureKind::LockHeld => "another git process holds a lock",
            FailureKind::DirtyTree => "local changes are in the way",
            FailureKind::Conflict => "the merge stopped with conflicts",
            FailureKind::NotFound => "a revision or ref does not exist",
            FailureKind::Other => "git failed",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::{Git, GitError, MergeStart};

    /// Returns a runner in `dir` that sees no user or system configuration and no identity
    /// from the environment, with auto-detection off so the outcome does not depend on the
    /// machine's host name.
    fn bare_git(dir: &std::path::Path, home: &std::path::Path) -> Git {
        let mut git = Git::new(dir)
            .with_env("HOME", home)
            .with_env("XDG_CONFIG_HOME", home)
            .with_env("GIT_CONFIG_GLOBAL", "/dev/null")
            .with_env("GIT_CONFIG_NOSYSTEM", "1")
            .with_env("GIT_CONFIG_COUNT", "1")
            .with_env("GIT_CONFIG_KEY_0", "user.useConfigOnly")
            .with_env("GIT_CONFIG_VALUE_0", "true");
        for key in [
            "GIT_AUTHOR_NAME",
            "GIT_AUTHOR_EMAIL",
            "GIT_COMMITTER_NAME",
            "GIT_COMMITTER_EMAIL",
            "EMAIL",
        ] {
            git = git.without_env(key);
        }
        git
    }

    /// A repository with one commit on `main` (made as the engine) and a runner without
    /// identity in it.
    fn repo() -> (tempfile::TempDir, Git) {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("repo");
        let home = tmp.path().join("home");
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::create_dir_all(&home).unwrap();
        let git = bare_git(&dir, &home);
        git.run(["init", "--quiet", "--initial-branch=main"])
            .unwrap();
        std::fs::write(dir.join("a.txt"), "one\n").unwrap();
        git.run(["add", "a.txt"]).unwrap();
        git.writing()
            .run(["commit", "--quiet", "-m", "base"])
            .unwrap();
        (tmp, git)
    }

    fn failure(result: Result<String, GitError>) -> GitError {
        match result {
            Ok(out) => panic!("git succeeded: {out}"),
            Err(e) => e,
        }
    }

    #[test]
    fn a_commit_without_identity_is_identity_missing() {
        let (tmp, git) = repo();
        std::fs::write(tmp.path().join("repo/a.txt"), "two\n").unwrap();
        let e = failure(git.run(["commit", "--quiet", "-am", "change"]));
        assert_eq!(e.kind(), FailureKind::IdentityMissing, "{e}");
        // The same commit under the engine's identity goes through.
        git.writing()
            .run(["commit", "--quiet", "-am", "change"])
            .unwrap();
    }

    #[test]
    fn a_held_index_lock_is_lock_held() {
        let (tmp, git) = repo();
        let repo = tmp.path().join("repo");
        std::fs::write(repo.join(".git/index.lock"), "").unwrap();
        std::fs::write(repo.join("a.txt"), "two\n").unwrap();
        let e = failure(git.run(["add", "a.txt"]));
        assert_eq!(e.kind(), FailureKind::LockHeld, "{e}");
        let e = failure(git.writing().run(["commit", "--quiet", "-am", "x"]));
        assert_eq!(e.kind(), FailureKind::LockHeld, "{e}");
    }

    /// Returns the repository with `side` and `main` changing the same line differently, on
    /// `main`.
    fn diverged() -> (tempfile::TempDir, Git) {
        let (tmp, git) = repo();
        let file = tmp.path().join("repo/a.txt");
        let w = git.writing();
        w.run(["checkout", "--quiet", "-b", "side"]).unwrap();
        std::fs::write(&file, "side\n").unwrap();
        w.run(["commit", "--quiet", "-am", "side"]).unwrap();
        w.run(["checkout", "--quiet", "main"]).unwrap();
        std::fs::write(&file, "main\n").unwrap();
        w.run(["commit", "--quiet", "-am", "main"]).unwrap();
        (tmp, git)
    }

    #[test]
    fn a_conflicting_merge_is_a_conflict_and_a_refused_one_is_not() {
        let (tmp, git) = diverged();
        // Without an identity git refuses before merging anything: not a conflict.
        let e = failure(git.run(["merge", "--no-ff", "--no-commit", "side"]));
        assert_eq!(e.kind(), FailureKind::IdentityMissing, "{e}");
        assert!(!git.is_merging().unwrap());

        // Local changes in the way: refused, not a conflict.
        let file = tmp.path().join("repo/a.txt");
        std::fs::write(&file, "edited\n").unwrap();
        let e = git.merge_no_commit("side").unwrap_err();
        assert_eq!(e.kind(), FailureKind::DirtyTree, "{e}");
        assert!(!git.is_merging().unwrap());
        git.reset_hard().unwrap();

        // The typed merge carries the engine's identity and reports the real conflict.
        assert_eq!(git.merge_no_commit("side").unwrap(), MergeStart::Conflicted);
        assert!(git.is_merging().unwrap());
        git.merge_abort().unwrap();
        let e = failure(git.writing().run(["merge", "side"]));
        assert_eq!(e.kind(), FailureKind::Conflict, "{e}");
    }

    #[test]
    fn an_unknown_revision_is_not_found() {
        let (_tmp, git) = repo();
        let e = failure(git.run(["rev-parse", "--verify", "no-such-branch"]));
        assert_eq!(e.kind(), FailureKind::NotFound, "{e}");
        let e = failure(git.run(["log", "-1", "no-such-branch", "--"]));
        assert_eq!(e.kind(), FailureKind::NotFound, "{e}");
        assert_eq!(git.resolve_commit("no-such-branch").unwrap(), None);
    }
}
