//! The worktree phase: the packet's worktree created fresh, re-added on its branch's tip,
//! recycled or reused as it is, then readied (included files copied, setup run) once; and the
//! engine's git runner pinned to it.

use std::path::{Path, PathBuf};

use super::{Context, Halt, Step};
use crate::store::Event;
use orchestra_git::git::commit;
use orchestra_git::git::{self as gitops, Created, Reuse, WorktreeRequest};

impl Step<'_, '_> {
    /// Ensures the packet's worktree on every (re)start — created fresh, re-added on its
    /// branch's tip, or reused as it is, work in progress included — and, when the packet is in
    /// its worktree phase (`fresh_phase`), copies the included files, runs the setup command
    /// and journals it ready. Returns true when that phase was done here.
    pub(in crate::engine) fn ensure_ready(&self, fresh_phase: bool) -> Result<bool, Halt> {
        let (ctx, wt) = (self.ctx, self.wt.as_path());
        let request = WorktreeRequest {
            repo: ctx.repo,
            path: wt,
            branch: &self.rec.branch,
            base: &self.start,
            reuse: Reuse::ReportDirty,
        };
        let sparse = ctx
            .sparse
            .filter(|_| fresh_phase && !wt.exists())
            .and_then(|include| gitops::cone(&self.packet.files, include, &ctx.repo.toplevel));
        let created = match &sparse {
            Some(cone) => gitops::create_sparse(&request, cone),
            None => ensure_worktree(&request, fresh_phase),
        }
        .map_err(|e| Halt::Fail(format!("could not prepare the worktree: {e}")))?;
        if !fresh_phase {
            return Ok(false);
        }
        if matches!(
            created,
            Created::Fresh | Created::Recreated | Created::Recycled { .. }
        ) {
            gitops::copy_includes(&ctx.repo.toplevel, wt)
                .map_err(|e| Halt::Fail(format!("could not copy .worktreeinclude files: {e}")))?;
        }
        self.setup()?;
        self.record(Event::WorktreeReady {
            packet: self.packet.id.clone(),
            how: match created {
                Created::Fresh if sparse.is_some() => "fresh, sparse".to_string(),
                Created::Fresh => "fresh".to_string(),
                Created::Recreated => "recreated at its branch tip".to_string(),
                Created::Recycled { from } => format!("recycled from {}", from.display()),
                Created::Reused { dirty } => {
                    format!(
                        "reused{}",
                        if dirty { ", with work in progress" } else { "" }
                    )
                }
            },
        })?;
        Ok(true)
    }

    /// Returns the engine's git runner for the packet's worktree, pinned to the git directory
    /// registered for it; a `.git` the worker changed fails the packet.
    pub(in crate::engine) fn git(&self) -> Result<gitops::Git, Halt> {
        gitops::Git::pinned(&self.ctx.repo.common_dir, &self.wt)
            .map_err(|e| Halt::Fail(format!("cannot run git in the worktree: {e}")))
    }

    /// Takes the rejected commit back to the packet's start; its changes stay in the worktree
    /// for the worker to fix.
    pub(in crate::engine) fn take_back(&self) -> Result<(), Halt> {
        commit::uncommit_to(&self.git()?, &self.start)
            .map_err(|e| Halt::Fail(format!("cannot take back the rejected commit: {e}")))
    }
}

/// Removes lock files a killed process of this packet may have left: its branch ref's lock and
/// its worktree's index and HEAD locks. Only this packet's own locks are touched, and the run
/// lock guarantees that no other git-orchestra process drives this packet; its previous worker
/// was killed before the resume started. A worktree whose `.git` its worker changed fails the
/// packet here (the link is put back, see [`gitops::Git::pinned`]).
pub(super) fn clear_stale_locks(ctx: &Context<'_>, branch: &str, wt: &Path) -> Result<(), Halt> {
    let mut locks = vec![
        ctx.repo
            .common_dir
            .join(format!("refs/heads/{branch}.lock")),
    ];
    match gitops::Git::pinned(&ctx.repo.common_dir, wt) {
        Ok(git) => {
            for name in ["index.lock", "HEAD.lock"] {
                if let Ok(path) = git.git_path(name) {
                    locks.push(PathBuf::from(path));
                }
            }
        }
        Err(e @ gitops::WorktreeError::GitLinkChanged { .. }) => {
            return Err(Halt::Fail(format!("cannot run git in the worktree: {e}")));
        }
        // A worktree that is gone is created again; its locks went with it.
        Err(_) => {}
    }
    for lock in locks {
        if lock.exists() {
            tracing::warn!(lock = %lock.display(), "removing a lock file left by a killed process");
            let _ = fs_err::remove_file(&lock);
        }
    }
    Ok(())
}

/// Creates or reuses the packet's worktree.
///
/// When the packet has not reached its worker yet (`before_worker`), whatever is in the
/// worktree came from an interrupted creation or setup, never from a worker, so it may be
/// repaired: a half-written registration is dropped, a half-populated directory is moved aside
/// (not deleted), and a partial checkout is reset to the branch tip.
fn ensure_worktree(
    request: &WorktreeRequest<'_>,
    before_worker: bool,
) -> Result<Created, gitops::WorktreeError> {
    let created = gitops::create_repairing(request, before_worker)?;
    if before_worker && created == (Created::Reused { dirty: true }) {
        gitops::Git::pinned(&request.repo.common_dir, request.path)?.reset_hard()?;
        return Ok(Created::Reused { dirty: false });
    }
    Ok(created)
}
