//! Finds the repository a command runs in and checks that it can host a run.

use std::path::{Path, PathBuf};

use super::{Git, GitError};

/// Why a directory cannot host a run; each message says how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum RepoError {
    #[error("{path} is not inside a git repository; cd into a repository or run `git init` first")]
    NotARepository { path: PathBuf },
    #[error(
        "{path} is a bare repository; git-orchestra needs a working tree (clone it without --bare)"
    )]
    Bare { path: PathBuf },
    #[error(
        "the repository at {path} has no commits yet; make a first commit (git commit --allow-empty -m init)"
    )]
    NoCommits { path: PathBuf },
    #[error(
        "HEAD is detached and no base was given; check out a branch or set `base = \"<commit-ish>\"` in the plan"
    )]
    DetachedHead,
    #[error(
        "unknown base `{base}`: no commit by that name; use a branch, tag or commit id that `git rev-parse` knows"
    )]
    UnknownBase { base: String },
    #[error(transparent)]
    Git(#[from] GitError),
}

/// Facts about the repository a command runs in, read once at start.
#[derive(Debug, Clone)]
pub struct RepoInfo {
    /// The top of the main working tree (or of the linked worktree the command runs in).
    pub toplevel: PathBuf,
    /// The common git directory shared by all worktrees (where the run store lives).
    pub common_dir: PathBuf,
    /// The current branch's short name, `None` when HEAD is detached.
    pub branch: Option<String>,
    /// The commit HEAD points at.
    pub head: String,
}

/// Returns what `git symbolic-ref --quiet --short HEAD` answers, read from the HEAD file of
/// `git_dir` when it says plainly: `Some(Some(branch))` for a branch under `refs/heads/`,
/// `Some(None)` for a detached HEAD; `None` (ask git) for anything else, refs kept in a
/// reftable included.
fn branch_from_head_file(git_dir: &Path, common_dir: &Path) -> Option<Option<String>> {
    if common_dir.join("reftable").exists() {
        return None;
    }
    let head = fs_err::read_to_string(git_dir.join("HEAD")).ok()?;
    let head = head.trim_end();
    match head.strip_prefix("ref: ") {
        Some(name) => name
            .strip_prefix("refs/heads/")
            .filter(|b| !b.is_empty())
            .map(|b| Some(b.to_string())),
        None => super::head_file::is_object_id(head).then_some(None),
    }
}

impl RepoInfo {
    /// Returns the repository containing `dir`, refusing bare repositories and empty histories.
    pub fn discover(dir: &Path) -> Result<RepoInfo, RepoError> {
        let git = Git::new(dir);
        let (toplevel, common_dir, head, git_dir) = match Self::located(&git) {
            Some((top, common, head, git_dir)) => (top, common, head, Some(git_dir)),
            None => {
                // Asked one question at a time, to say what is wrong.
                let (toplevel, common_dir) = Self::locate(&git, dir)?;
                let head = match git.run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"]) {
                    Ok(h) => h,
                    Err(GitError::Failed { .. }) => {
                        return Err(RepoError::NoCommits { path: toplevel });
                    }
                    Err(e) => return Err(e.into()),
                };
                (toplevel, common_dir, head, None)
            }
        };
        let filed = git_dir.and_then(|d| branch_from_head_file(&d, &common_dir));
        let branch = match filed {
            Some(branch) => branch,
            None => match git.run(["symbolic-ref", "--quiet", "--short", "HEAD"]) {
                Ok(b) => Some(b),
                Err(GitError::Failed { .. }) => None,
                Err(e) => return Err(e.into()),
            },
        };
        Ok(RepoInfo {
            toplevel,
            common_dir,
            branch,
            head,
        })
    }

    /// Returns the working tree's top level and the common git directory of the repository
    /// around `dir`, refusing what [`RepoInfo::discover`] refuses, from one `git` process when
    /// `dir` is inside a working tree with commits.
    pub fn dirs(dir: &Path) -> Result<(PathBuf, PathBuf), RepoError> {
        match Self::located(&Git::new(dir)) {
            Some((toplevel, common_dir, _, _)) => Ok((toplevel, common_dir)),
            None => RepoInfo::discover(dir).map(|info| (info.toplevel, info.common_dir)),
        }
    }

    /// Returns the top level, common git directory, HEAD commit and git directory from one
    /// `git` process, when the directory `git` runs in is inside a working tree with commits;
    /// `None` otherwise (the questions one by one then say what is wrong).
    fn located(git: &Git) -> Option<(PathBuf, PathBuf, String, PathBuf)> {
        let out = git
            .run([
                "rev-parse",
                "--is-inside-work-tree",
                "--show-toplevel",
                "--path-format=absolute",
                "--git-common-dir",
                "--git-dir",
                "--verify",
                "--quiet",
                "HEAD^{commit}",
            ])
            .ok()?;
        match out.lines().collect::<Vec<_>>()[..] {
            ["true", top, common, git_dir, head] => {
                // Named a commit by git: the branch's tip read from its file later needs no
                // process to be known one (the merge reads the target's so).
                super::revs::seen_commit(head, None);
                Some((top.into(), common.into(), head.to_string(), git_dir.into()))
            }
            _ => None,
        }
    }

    /// Returns the working tree's top level and the common git directory of the repository
    /// around `dir`, or why there is none.
    fn locate(git: &Git, dir: &Path) -> Result<(PathBuf, PathBuf), RepoError> {
        match git.run(["rev-parse", "--is-inside-work-tree"]) {
            Ok(inside) if inside == "true" => {}
            Ok(_) => {
                if git
                    .run(["rev-parse", "--is-bare-repository"])
                    .ok()
                    .as_deref()
                    == Some("true")
                {
                    return Err(RepoError::Bare {
                        path: dir.to_path_buf(),
                    });
                }
                return Err(RepoError::NotARepository {
                    path: dir.to_path_buf(),
                });
            }
            Err(GitError::Failed { .. }) => {
                return Err(RepoError::NotARepository {
                    path: dir.to_path_buf(),
                });
            }
            Err(e) => return Err(e.into()),
        }
        let toplevel = PathBuf::from(git.run(["rev-parse", "--show-toplevel"])?);
        let common = git.run(["rev-parse", "--path-format=absolute", "--git-common-dir"])?;
        Ok((toplevel, PathBuf::from(common)))
    }

    /// Returns a git runner for the working tree.
    pub fn git(&self) -> Git {
        Git::new(&self.toplevel).in_common_dir(&self.common_dir)
    }

    /// Returns the full commit id `base` names, or HEAD's commit on a branch when `base` is `None`.
    pub fn resolve_base(&self, base: Option<&str>) -> Result<String, RepoError> {
        match base {
            None if self.branch.is_none() => Err(RepoError::DetachedHead),
            None => Ok(self.head.clone()),
            Some(name) => self
                .git()
                .resolve_commit(name)?
                .ok_or_else(|| RepoError::UnknownBase {
                    base: name.to_string(),
                }),
        }
    }

    /// Returns true if and only if the working tree has uncommitted or untracked changes.
    pub fn is_dirty(&self) -> Result<bool, RepoError> {
        let out = self.git().status_porcelain(super::Untracked::Normal)?;
        Ok(!out.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git;

    /// The branch read from HEAD's file is what `git symbolic-ref --short HEAD` says: in the
    /// main checkout, detached, and in a linked worktree (whose HEAD is its own git
    /// directory's, not the common one's); a HEAD file that says nothing plain goes to git.
    #[test]
    fn the_branch_is_read_from_the_head_file_of_the_checkout_discovered() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("r");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "a"]);
        let linked = tmp.path().join("linked");
        let linked_arg = linked.to_str().unwrap();
        git(&repo, &["worktree", "add", "-q", "-b", "side", linked_arg]);
        let main = RepoInfo::discover(&repo).unwrap();
        assert_eq!(main.branch.as_deref(), Some("main"));
        assert_eq!(
            RepoInfo::discover(&linked).unwrap().branch.as_deref(),
            Some("side")
        );
        git(&repo, &["checkout", "-q", "--detach"]);
        assert_eq!(RepoInfo::discover(&repo).unwrap().branch, None);
        let common = repo.join(".git");
        assert_eq!(branch_from_head_file(&common, &common), Some(None));
        let linked_dir = common.join("worktrees/linked");
        let side = Some(Some("side".to_string()));
        assert_eq!(branch_from_head_file(&linked_dir, &common), side);
        // Unusual: a symbolic HEAD outside `refs/heads/`, or refs in a reftable.
        std::fs::write(common.join("HEAD"), "ref: refs/remotes/o/x\n").unwrap();
        assert_eq!(branch_from_head_file(&common, &common), None);
        std::fs::create_dir(common.join("reftable")).unwrap();
        assert_eq!(branch_from_head_file(&linked_dir, &common), None);
    }
}
