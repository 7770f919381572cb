//! Reads the commit a pinned worktree's HEAD names from its ref files, without starting git.
//!
//! The engine asks for HEAD several times per packet (the main checkout around each worker,
//! the packet's worktree before and after its commit); each `git rev-parse HEAD` is a process
//! start, which dominates on a loaded machine. A pinned runner knows its git directory, so
//! HEAD's file and the branch it names (loose, else in `packed-refs`) answer directly. Anything
//! unusual — refs kept in a reftable, a symbolic chain, a ref outside `refs/heads/`, an unborn
//! branch, a file that does not hold an object id — is left to git, so the answer is always
//! what `git rev-parse HEAD` says.

use std::path::{Path, PathBuf};

use super::{Git, GitError};

impl Git {
    /// Returns the commit HEAD points at: read from the ref files when the runner is pinned to
    /// a git directory and they answer plainly, otherwise from `git rev-parse HEAD`.
    pub fn head(&self) -> Result<String, GitError> {
        match self.head_from_files() {
            Some(id) => Ok(id),
            None => self.run(["rev-parse", "HEAD"]),
        }
    }

    /// Returns the commit HEAD points at, or `None` when it names none (an unborn branch), as
    /// [`Git::resolve`] of `HEAD` answers; read from the ref files when they answer plainly.
    pub fn head_or_unborn(&self) -> Result<Option<String>, GitError> {
        match self.head_from_files() {
            Some(id) => Ok(Some(id)),
            None => self.resolve("HEAD"),
        }
    }

    /// Returns the commit of HEAD when the pinned git directory's files say plainly that HEAD
    /// is attached to `branch` (a short name under `refs/heads/`); `None` otherwise, for
    /// whatever reason (detached, another branch, files that do not answer plainly).
    pub fn head_on_branch(&self, branch: &str) -> Option<String> {
        let git_dir = self.pinned_git_dir()?;
        let head = fs_err::read_to_string(git_dir.join("HEAD")).ok()?;
        let named = head.trim_end().strip_prefix("ref: ")?;
        (named.strip_prefix("refs/heads/") == Some(branch))
            .then(|| self.head_from_files())
            .flatten()
    }

    /// Returns HEAD's commit id from the pinned git directory's files, or `None` when the
    /// runner is not pinned or the files do not answer plainly (see the module comment).
    fn head_from_files(&self) -> Option<String> {
        let git_dir = self.pinned_git_dir()?;
        let common = common_dir_of(&git_dir)?;
        if common.join("reftable").exists() {
            return None;
        }
        let head = fs_err::read_to_string(git_dir.join("HEAD")).ok()?;
        let head = head.trim_end();
        let id = match head.strip_prefix("ref: ") {
            Some(name) if name.starts_with("refs/heads/") => {
                super::watch::ref_tips_named(&common, &[name]).remove(name)?
            }
            Some(_) => return None,
            None => head.to_string(),
        };
        is_object_id(&id).then_some(id)
    }
}

/// Returns the common git directory of the git directory `git_dir`: the one its `commondir`
/// file names (a linked worktree's registration), or `git_dir` itself.
fn common_dir_of(git_dir: &Path) -> Option<PathBuf> {
    match fs_err::read_to_string(git_dir.join("commondir")) {
        Ok(text) => {
            let named = Path::new(text.trim_end());
            Some(if named.is_absolute() {
                named.to_path_buf()
            } else {
                git_dir.join(named)
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Some(git_dir.to_path_buf()),
        Err(_) => None,
    }
}

/// Returns true if and only if `text` is a full SHA-1 or SHA-256 object id in lowercase hex.
pub(super) fn is_object_id(text: &str) -> bool {
    matches!(text.len(), 40 | 64)
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git;

    #[test]
    fn head_from_files_answers_as_rev_parse_does() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("r");
        std::fs::create_dir(&repo).unwrap();
        git(&repo, &["init", "-q", "-b", "main"]);
        let common = repo.join(".git");
        let pinned = Git::pinned(&common, &repo).unwrap();
        // Unborn: the files do not answer, and git says there is no HEAD commit.
        assert_eq!(pinned.head_from_files(), None);
        assert_eq!(pinned.head_or_unborn().unwrap(), None);
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "a"]);
        let loose = git(&repo, &["rev-parse", "HEAD"]).trim().to_string();
        assert_eq!(pinned.head_from_files().as_deref(), Some(loose.as_str()));
        // Packed, then detached, then in a linked worktree.
        git(&repo, &["pack-refs", "--all"]);
        assert_eq!(pinned.head_from_files().as_deref(), Some(loose.as_str()));
        git(&repo, &["commit", "-q", "--allow-empty", "-m", "b"]);
        git(&repo, &["checkout", "-q", "--detach", "HEAD~1"]);
        assert_eq!(pinned.head().unwrap(), loose);
        let linked = tmp.path().join("linked");
        git(
            &repo,
            &[
                "worktree",
                "add",
                "-q",
                "-b",
                "side",
                linked.to_str().unwrap(),
                "main",
            ],
        );
        let tip = git(&repo, &["rev-parse", "main"]).trim().to_string();
        let in_linked = Git::pinned(&common, &linked).unwrap();
        assert_eq!(in_linked.head_from_files().as_deref(), Some(tip.as_str()));
        // Attached: to `side` and to no other branch; detached: to none.
        assert_eq!(
            in_linked.head_on_branch("side").as_deref(),
            Some(tip.as_str())
        );
        assert_eq!(in_linked.head_on_branch("main"), None);
        assert_eq!(in_linked.head_on_branch("sid"), None);
        assert_eq!(pinned.head_on_branch("main"), None);
        // A runner not pinned to a git directory asks git.
        assert_eq!(Git::new(&linked).head_from_files(), None);
        assert_eq!(Git::new(&linked).head().unwrap(), tip);
    }
}
