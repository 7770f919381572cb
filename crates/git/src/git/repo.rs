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

impl RepoInfo {
    /// Returns the repository containing `dir`, refusing bare repositories and empty histories.
    pub fn discover(dir: &Path) -> Result<RepoInfo, RepoError> {
        let git = Git::new(dir);
        let (toplevel, common_dir, head) = match Self::located(&git) {
            Some(found) => found,
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
                (toplevel, common_dir, head)
            }
        };
        let branch = match git.run(["symbolic-ref", "--quiet", "--short", "HEAD"]) {
            Ok(b) => Some(b),
            Err(GitError::Failed { .. }) => None,
            Err(e) => return Err(e.into()),
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
            Some((toplevel, common_dir, _)) => Ok((toplevel, common_dir)),
            None => RepoInfo::discover(dir).map(|info| (info.toplevel, info.common_dir)),
        }
    }

    /// Returns the top level, common git directory and HEAD commit from one `git` process,
    /// when the directory `git` runs in is inside a working tree with commits; `None`
    /// otherwise (the questions one by one then say what is wrong).
    fn located(git: &Git) -> Option<(PathBuf, PathBuf, String)> {
        let out = git
            .run([
                "rev-parse",
                "--is-inside-work-tree",
                "--show-toplevel",
                "--path-format=absolute",
                "--git-common-dir",
                "--verify",
                "--quiet",
                "HEAD^{commit}",
            ])
            .ok()?;
        match out.lines().collect::<Vec<_>>()[..] {
            ["true", top, common, head] => Some((top.into(), common.into(), head.to_string())),
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
