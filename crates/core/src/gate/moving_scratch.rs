//! One scratch checkout kept for a whole merge and moved from candidate to candidate, instead
//! of a fresh detached worktree (a full checkout, a full index) for every batch validated.
//!
//! Moving it (`checkout --force --detach`, then `clean -ffdx`) rewrites only the files that
//! differ between two candidates and leaves exactly the candidate's tree, as a fresh checkout
//! would. Its name is stable (the caller's label, usually the run), so a merge resumed after a
//! kill finds the checkout its predecessor left. Whether that one can be trusted is recorded
//! beside it, outside the checkout: the `.ready` marker is removed before every move and
//! written back only once the move is complete, so a checkout left half-moved (or half-made)
//! by a kill has no marker and is removed and made again; one whose move fails, or whose
//! `.git` a command changed, is made again too.

use std::path::{Path, PathBuf};

use super::GateError;
use super::scratch::remove_private_tmp;
use orchestra_git::git::{Git, RepoInfo};

/// A detached scratch checkout that moves to each commit asked of it and is removed on drop.
#[derive(Debug)]
pub struct MovingScratch {
    repo: Git,
    common_dir: PathBuf,
    path: PathBuf,
    /// Present if and only if the checkout at `path` holds a completed checkout (see the
    /// module docs).
    ready: PathBuf,
    /// The state directory's `tmp`, where the sandbox gives the commands run in this checkout a
    /// private temporary directory named after it; emptied before every move.
    private_tmp: PathBuf,
    /// How many times this value made the checkout from nothing (one, unless a stale or
    /// broken checkout had to be replaced).
    builds: usize,
    /// Whether [`MovingScratch::checkout`] was called: only then is the checkout this value's
    /// to remove.
    used: bool,
}

impl MovingScratch {
    /// Returns the scratch checkout named after `label` (no files are touched until
    /// [`MovingScratch::checkout`]).
    pub fn new(repo: &RepoInfo, label: &str) -> MovingScratch {
        // Not cut short: two runs whose ids share a beginning must not share a checkout.
        let name = format!("keep-{}", orchestra_sys::names::sanitize(label, 200));
        let dir = orchestra_sys::exec::outside_dir(&repo.common_dir, ".scratch");
        MovingScratch {
            repo: repo.git(),
            common_dir: repo.common_dir.clone(),
            ready: dir.join(format!("{name}.ready")),
            path: dir.join(name),
            private_tmp: orchestra_sys::exec::state_dir(&repo.common_dir).join("tmp"),
            builds: 0,
            used: false,
        }
    }

    /// Makes the checkout hold exactly `commit` — moving the one already there when it is
    /// known to be complete, making it anew otherwise — and returns its directory.
    pub fn checkout(&mut self, commit: &str) -> Result<&Path, GateError> {
        self.used = true;
        remove_private_tmp(&self.private_tmp, &self.path);
        let trusted = self.ready.is_file() && self.path.is_dir();
        self.forget_ready()?;
        let moved = trusted && {
            match self.move_to(commit) {
                Ok(()) => true,
                Err(e) => {
                    tracing::warn!(path = %self.path.display(), error = %e,
                        "cannot move the scratch checkout; making it again");
                    false
                }
            }
        };
        if !moved {
            self.build(commit)?;
        }
        fs_err::write(&self.ready, commit).map_err(|e| self.error(e))?;
        Ok(&self.path)
    }

    /// Removes the checkout named after `label` and its marker that a killed merge left
    /// behind, if any; returns true when there was one. The caller holds the run's lock, so no
    /// merge is using it.
    pub fn discard(repo: &RepoInfo, label: &str) -> bool {
        let mut left = MovingScratch::new(repo, label);
        let found = left.path.exists() || left.ready.exists();
        if found {
            // Dropping a used value removes the checkout, its registration and its marker.
            left.used = true;
        }
        found
    }

    /// Returns the checkout's directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Returns how many times this value made the checkout from nothing.
    pub fn builds(&self) -> usize {
        self.builds
    }

    /// Moves the existing checkout to `commit` through a runner pinned to its registration
    /// (never through a `.git` a command may have rewritten), discarding everything else.
    fn move_to(&self, commit: &str) -> Result<(), GateError> {
        let git = Git::pinned(&self.common_dir, &self.path).map_err(|e| self.error(e))?;
        git.force_detach_to(commit)?;
        git.clean_all()?;
        Ok(())
    }

    /// Removes whatever is at the checkout's place and registers a fresh detached checkout of
    /// `commit` there.
    fn build(&mut self, commit: &str) -> Result<(), GateError> {
        let _registrations = orchestra_git::git::registration_lock();
        if self.path.exists() {
            self.remove();
        }
        if let Some(parent) = self.path.parent() {
            fs_err::create_dir_all(parent).map_err(|e| self.error(e))?;
        }
        if self.repo.add_detached_worktree(&self.path, commit).is_err() {
            // A registration whose directory is gone (removed by hand, or by a kill between
            // the two) makes `worktree add` refuse the path: drop it and try once more.
            let _ = self.repo.prune_worktrees();
            self.repo
                .add_detached_worktree(&self.path, commit)
                .map_err(|e| self.error(e))?;
        }
        self.builds += 1;
        Ok(())
    }

    /// Removes the checkout and its registration, whatever state they are in.
    fn remove(&self) {
        if self.repo.force_remove_worktree(&self.path).is_err() || self.path.exists() {
            let _ = fs_err::remove_dir_all(&self.path);
            let _ = self.repo.prune_worktrees();
        }
    }

    /// Removes the marker: from here until it is written again the checkout is not trusted.
    fn forget_ready(&self) -> Result<(), GateError> {
        match fs_err::remove_file(&self.ready) {
            Err(e) if e.kind() != std::io::ErrorKind::NotFound => Err(self.error(e)),
            _ => Ok(()),
        }
    }

    fn error(&self, e: impl std::fmt::Display) -> GateError {
        GateError::Scratch {
            path: self.path.clone(),
            message: e.to_string(),
        }
    }
}

impl Drop for MovingScratch {
    fn drop(&mut self) {
        if !self.used {
            // Whatever is at its place was left by an earlier merge: the next one checks it.
            return;
        }
        let _ = self.forget_ready();
        let _registrations = orchestra_git::git::registration_lock();
        self.remove();
        remove_private_tmp(&self.private_tmp, &self.path);
    }
}
