//! Throwaway detached worktrees for running validation commands on a commit that is not (yet)
//! any branch's tip: a reviewed range's tip, or a merge candidate.
//!
//! They live beside the repository (`<repo-parent>/.orchestra/<repo-name>/.scratch/`, see
//! [`orchestra_sys::exec::outside_dir`]), never in the user's working tree nor under its
//! `.git`, so a tool walking up from one never reads the user's files; they are removed (with `git worktree remove --force`, since they only ever hold a checkout
//! and build output) when the value is dropped.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::GateError;
use orchestra_git::git::{Git, RepoInfo};

/// A detached checkout of one commit that is removed on drop.
#[derive(Debug)]
pub struct ScratchWorktree {
    repo: Git,
    path: PathBuf,
    /// The state directory's `tmp`, where the sandbox gives the commands run in this checkout a
    /// private temporary directory named after it.
    private_tmp: PathBuf,
}

impl ScratchWorktree {
    /// Checks `commit` out, detached, in a new directory named after `label`.
    pub fn create(repo: &RepoInfo, commit: &str, label: &str) -> Result<Self, GateError> {
        static COUNTER: AtomicU32 = AtomicU32::new(0);
        let n = COUNTER.fetch_add(1, Ordering::SeqCst);
        let name = format!(
            "{}-{}-{n}",
            orchestra_sys::names::sanitize(label, 40),
            std::process::id()
        );
        let path = orchestra_sys::exec::outside_dir(&repo.common_dir, ".scratch").join(name);
        if let Some(parent) = path.parent() {
            fs_err::create_dir_all(parent).map_err(|e| GateError::Scratch {
                path: path.clone(),
                message: e.to_string(),
            })?;
        }
        let git = repo.git();
        let _registrations = orchestra_git::git::registration_lock();
        git.add_detached_worktree(&path, commit)
            .map_err(|e| GateError::Scratch {
                path: path.clone(),
                message: e.to_string(),
            })?;
        Ok(ScratchWorktree {
            repo: git,
            path,
            private_tmp: orchestra_sys::exec::state_dir(&repo.common_dir).join("tmp"),
        })
    }

    /// Returns the checkout's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ScratchWorktree {
    fn drop(&mut self) {
        let _registrations = orchestra_git::git::registration_lock();
        if self.repo.force_remove_worktree(&self.path).is_err() {
            // The registration may be half-made; remove the directory and prune.
            let _ = fs_err::remove_dir_all(&self.path);
            let _ = self.repo.prune_worktrees();
        }
        remove_private_tmp(&self.private_tmp, &self.path);
    }
}

/// Removes the private temporary directories the sandbox made for the commands run in the
/// checkout `path` (`<tmp>/<name>-<hash>`, the name cut at 40 characters, the hash 8 hex
/// digits): a scratch checkout leaves nothing behind. Only `<name>-` followed by exactly the
/// hash matches, so a checkout whose name extends this one's keeps its directory.
pub(super) fn remove_private_tmp(tmp: &Path, path: &Path) {
    let Some(name) = path.file_name() else {
        return;
    };
    let prefix = format!(
        "{}-",
        name.to_string_lossy().chars().take(40).collect::<String>()
    );
    let Ok(entries) = fs_err::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let entry_name = entry.file_name().to_string_lossy().into_owned();
        let hash = entry_name.strip_prefix(&prefix).unwrap_or_default();
        if hash.len() == 8 && hash.chars().all(|c| c.is_ascii_hexdigit()) {
            let _ = fs_err::remove_dir_all(entry.path());
        }
    }
}
