//! Early parking: in a run that integrates its packets, a succeeded packet's clean worktree
//! goes to the worktree pool at once instead of waiting for the end of the run, so the next
//! packet to start takes it (rewriting only the files that differ) instead of checking out a
//! whole tree, and a run's file churn stays flat however many packets it has.
//!
//! Only a run with an integration request (`run --merge`), or one its caller integrates
//! itself (`start` with merging, through `Control::park_early`), whose worktrees are not kept
//! (`[run] keep_worktrees`) and whose recycling is on (`[worktree] recycle` > 0) parks early,
//! and only worktrees beside the repository (not an executor's). While the run works the pool
//! may hold up to the larger of `recycle` and the run's `max_parallel`; once the run ends
//! (integrated, failed or interrupted) [`EarlyPark::trim`] removes the extra ones.
//!
//! A parked worktree is journaled (`worktree_parked`, which marks the packet's worktree
//! removed), so the integration's release skips it and a resume does not look for it. A kill
//! in the middle leaves either a worktree detached at its branch's tip at its own path (before
//! the move) or a packet whose worktree path does not exist (after it, before the journal),
//! which every reader already treats as gone. Whatever needs the packet's worktree again (the
//! merge's conflict resolution) checks it out anew on the packet's branch, or puts a detached
//! one back on it (see [`restore`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Condvar, Mutex};

use super::Journal;
use crate::store::{Event, PacketRecord, StoreError};
use orchestra_git::git::{
    self as gitops, Created, RepoInfo, Reuse, WorktreeError, WorktreeRequest,
};

/// The worktrees (their packets' paths) being parked right now. A park goes on after its
/// packet is reported done, so that what follows — the run's integration above all — starts
/// meanwhile; whatever may touch such a worktree first waits for its park (see
/// [`wait_for_parks`]).
static PARKING: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
static PARKED: Condvar = Condvar::new();

/// A worktree's park under way: registered in [`PARKING`] until dropped, whatever happens.
pub(crate) struct Parking(PathBuf);

impl Parking {
    pub(crate) fn begin(wt: &Path) -> Parking {
        PARKING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .insert(wt.to_path_buf());
        Parking(wt.to_path_buf())
    }
}

impl Drop for Parking {
    fn drop(&mut self) {
        PARKING
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.0);
        PARKED.notify_all();
    }
}

/// Waits until no worktree of this process is being parked (a park takes a few `git`
/// processes): the integration's release of worktrees and a restore of one for a conflict
/// read where each worktree is only after that.
pub(crate) fn wait_for_parks() {
    let mut parking = PARKING.lock().unwrap_or_else(|p| p.into_inner());
    while !parking.is_empty() {
        parking = PARKED.wait(parking).unwrap_or_else(|p| p.into_inner());
    }
}

/// How a run parks its succeeded packets' worktrees early.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct EarlyPark {
    /// How many worktrees the pool may hold while the run works.
    pub capacity: usize,
    /// How many it keeps once the run ends (`[worktree] recycle`).
    pub keep: usize,
    /// The pool of the run's worktree root.
    pub pool: PathBuf,
}

impl EarlyPark {
    /// Returns how the run of `journal`, working `max_parallel` packets at once, parks
    /// early, or `None` when it does not: the packets run elsewhere (`remote`), or the run has
    /// no pending integration request and its caller integrates it with no pool (`caller`,
    /// the pool's size when the caller integrates the run itself), or the request keeps
    /// worktrees or turns recycling off.
    pub(crate) fn of_run(
        journal: &Journal<'_>,
        (max_parallel, caller): (usize, Option<usize>),
        worktree_root: &Path,
        remote: bool,
    ) -> Result<Option<EarlyPark>, StoreError> {
        if remote {
            return Ok(None);
        }
        let keep = match journal.read(super::integration::pending_request)? {
            Some(request) => match request.event {
                Event::IntegrationRequested {
                    keep_worktrees: false,
                    recycle_worktrees,
                    ..
                } => recycle_worktrees,
                _ => 0,
            },
            None => caller.unwrap_or(0),
        };
        if keep == 0 {
            return Ok(None);
        }
        Ok(Some(EarlyPark {
            capacity: keep.max(max_parallel),
            keep,
            pool: worktree_root.join(gitops::POOL_DIR),
        }))
    }

    /// Parks the worktree of the succeeded packet `id` when it is clean and the pool has room,
    /// and journals it; a worktree that cannot be parked stays where it is for the
    /// integration to release, and a failure to park fails nothing.
    pub(crate) fn park(&self, repo: &RepoInfo, journal: &Journal<'_>, id: &str, wt: &Path) {
        if !wt.is_dir() {
            return;
        }
        match gitops::park(repo, wt, self.capacity) {
            Ok(Some(pooled)) => {
                tracing::debug!(packet = %id, pooled = %pooled.display(), "worktree parked early");
                journal.record_or_keep(Event::WorktreeParked {
                    packet: id.to_string(),
                    pool: pooled.to_string_lossy().into_owned(),
                });
            }
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(packet = %id, error = %e, "worktree not parked: it stays for the integration");
            }
        }
    }

    /// Removes the worktrees parked beyond `[worktree] recycle`, as the run ends; a failure
    /// is logged, never the run's.
    pub(crate) fn trim(&self, repo: &RepoInfo) {
        match gitops::trim_pool(repo, &self.pool, self.keep) {
            Ok(0) => {}
            Ok(n) => tracing::debug!(removed = n, "parked worktrees trimmed"),
            Err(e) => tracing::warn!(error = %e, "parked worktrees not trimmed"),
        }
    }
}

/// Ensures the worktree of the succeeded packet `rec` exists on its branch, checking it out
/// again (through the usual creation, which may take a parked worktree) when it was parked or
/// removed here (journaled so, or found parked in the pool after a kill), and journals
/// (through `journal`) a worktree restored that way. Returns its path.
pub fn restore(
    repo: &RepoInfo,
    rec: &PacketRecord,
    journal: &dyn Fn(Event) -> Result<(), StoreError>,
) -> Result<PathBuf, RestoreError> {
    wait_for_parks();
    let wt = PathBuf::from(&rec.worktree);
    // There (a record read before an earlier restore may still say removed): used as it is,
    // back on its branch if a park was cut short after detaching it.
    if wt.exists() {
        gitops::reattach(repo, &wt, &rec.branch)?;
        return Ok(wt);
    }
    // Only a worktree this machine had: a packet run on an executor's host never had one
    // here, and its conflicts are left for a person, as before.
    if !rec.removed && !gitops::parked_from(&wt) {
        return Err(RestoreError::NeverHere);
    }
    let full = format!("refs/heads/{}", rec.branch);
    let tip = repo
        .git()
        .resolve(&full)
        .map_err(|e| RestoreError::Worktree(WorktreeError::Git(e)))?
        .ok_or_else(|| RestoreError::NoBranch {
            branch: rec.branch.clone(),
        })?;
    let request = WorktreeRequest {
        repo,
        path: &wt,
        branch: &rec.branch,
        base: &tip,
        reuse: Reuse::RequireClean,
    };
    let created = gitops::create_repairing(&request, false)?;
    let how = match created {
        Created::Fresh => "fresh".to_string(),
        Created::Recreated => "recreated at its branch tip".to_string(),
        Created::Recycled { from } => format!("recycled from {}", from.display()),
        Created::Reused { .. } => "reused".to_string(),
    };
    journal(Event::WorktreeRestored {
        packet: rec.id.clone(),
        how,
    })?;
    Ok(wt)
}

/// Why a succeeded packet's worktree could not be checked out again.
#[derive(Debug, thiserror::Error)]
pub enum RestoreError {
    /// The packet's branch is gone: there is nothing to check out.
    #[error("its branch `{branch}` does not exist any more")]
    NoBranch { branch: String },
    /// The packet never had its worktree here (it ran on an executor's host).
    #[error("it was never checked out on this machine")]
    NeverHere,
    #[error(transparent)]
    Worktree(#[from] WorktreeError),
    #[error(transparent)]
    Store(#[from] StoreError),
}
