//! Repairs what a crash in the middle of worktree creation can leave behind.
//!
//! Registering a linked worktree writes several small files under
//! `<common-dir>/worktrees/<id>/`; a process killed between them leaves a registration that git
//! and gix refuse to read (an empty `gitdir`, say), which would block every later worktree
//! operation in the repository. Such a registration holds no work — only pointers — and git's
//! own `worktree prune` would drop it as "invalid gitdir file"; this drops just those, plus
//! registrations still locked with gix's "initializing" marker (a creation that never finished),
//! leaving healthy and user-locked registrations alone. Repairs happen under the registration
//! lock, so that no registration of this process is half-written while they run; a registered
//! worktree whose files this process is still checking out outside that lock (see
//! `checkout::Registered`) carries the same "initializing" lock and is left alone ([`InFlight`]).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::RepoInfo;
use super::worktree::{Created, WorktreeError, WorktreeRequest};

/// The administrative directories (canonical) of the registrations this process is checking
/// out right now.
static IN_FLIGHT: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());

/// Marks a registration as being checked out by this process, so that no repair drops it, until
/// dropped.
pub(crate) struct InFlight(PathBuf);

impl InFlight {
    /// Marks the registration whose administrative directory is `admin` (canonical) in flight.
    pub(crate) fn new(admin: &Path) -> InFlight {
        let admin = admin.to_path_buf();
        IN_FLIGHT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(admin.clone());
        InFlight(admin)
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        IN_FLIGHT
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&self.0);
    }
}

/// Returns true if and only if this process is checking out the registration at `dir`.
fn in_flight(dir: &Path) -> bool {
    let set = IN_FLIGHT
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    !set.is_empty() && dir.canonicalize().is_ok_and(|dir| set.contains(&dir))
}

/// Removes unreadable worktree registrations and returns their administrative directories.
pub fn repair_registrations(repo: &RepoInfo) -> Result<Vec<PathBuf>, WorktreeError> {
    let admin_root = repo.common_dir.join("worktrees");
    let entries = match std::fs::read_dir(&admin_root) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(source) => {
            return Err(WorktreeError::Io {
                path: admin_root,
                source,
            });
        }
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        let dir = entry.path();
        if !dir.is_dir() || in_flight(&dir) {
            continue;
        }
        // gix marks a registration it is still writing as locked with this exact reason and
        // unlocks it when done; any other lock is a user's and is respected.
        let creating = match std::fs::read_to_string(dir.join("locked")) {
            Ok(reason) if reason.trim() == "initializing" => true,
            Ok(_) => continue,
            Err(_) => false,
        };
        let readable = |name: &str| {
            std::fs::read_to_string(dir.join(name)).is_ok_and(|text| !text.trim().is_empty())
        };
        if !creating && readable("gitdir") && readable("commondir") && readable("HEAD") {
            continue;
        }
        tracing::warn!(dir = %dir.display(), "removing a half-written worktree registration");
        fs_err::remove_dir_all(&dir).map_err(|source| WorktreeError::Io {
            path: dir.clone(),
            source,
        })?;
        removed.push(dir);
    }
    Ok(removed)
}

/// Drops the registration of the worktree at `path` when gix's "initializing" lock is still on
/// it (a creation that never finished) and returns whether it did. Only for a worktree whose
/// run nothing drives any more: a creation in flight holds the same lock.
pub fn drop_unfinished_registration(
    repo: &RepoInfo,
    path: &std::path::Path,
) -> Result<bool, WorktreeError> {
    let Ok(entries) = std::fs::read_dir(repo.common_dir.join("worktrees")) else {
        return Ok(false);
    };
    let worktree = path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    for entry in entries.flatten() {
        let dir = entry.path();
        // A creation cut short may not have made the worktree's directory yet: then the path
        // is compared as written.
        let names_path = std::fs::read_to_string(dir.join("gitdir")).is_ok_and(|gitdir| {
            std::path::Path::new(gitdir.trim())
                .parent()
                .is_some_and(|p| p == path || p.canonicalize().ok().is_some_and(|p| p == worktree))
        });
        let unfinished = std::fs::read_to_string(dir.join("locked"))
            .is_ok_and(|reason| reason.trim() == "initializing");
        if names_path && unfinished && !in_flight(&dir) {
            tracing::warn!(dir = %dir.display(), "removing an unfinished worktree registration");
            fs_err::remove_dir_all(&dir).map_err(|source| WorktreeError::Io {
                path: dir.clone(),
                source,
            })?;
            return Ok(true);
        }
    }
    Ok(false)
}

/// Creates (or reuses) the worktree of `request` under the registration lock, repairing what
/// an interrupted creation left behind: half-written registrations are dropped and, when
/// `move_aside` allows it, a directory at the path that is not a valid worktree of the branch is
/// renamed beside it (never deleted); then creation is tried once more. Without anything to
/// repair, the first error is returned.
pub fn create_repairing(
    request: &WorktreeRequest<'_>,
    move_aside: bool,
) -> Result<Created, WorktreeError> {
    // Registering is serialised; validating the new checkout (a `git status`) is not, so
    // packets starting together do not queue behind each other's status.
    let unverified = create_registered(request, move_aside)?;
    Ok(super::worktree::finish(request, unverified)?.1)
}

/// Does the part of [`create_repairing`] that registers the worktree, under the registration
/// lock; see there.
fn create_registered(
    request: &WorktreeRequest<'_>,
    move_aside: bool,
) -> Result<super::worktree::Unverified, WorktreeError> {
    // The parked worktree to take is checked clean before the lock (see `recycle::choose`).
    let path = super::worktree::absolute(request.path)?;
    let choice = super::recycle::choose(request, &path)?;
    let _registrations = super::registration_lock();
    let first = match super::worktree::create_unverified(request, &choice) {
        Ok(unverified) => return Ok(unverified),
        Err(e) => e,
    };
    // Safe while registration is serialised: no registration of this process is half-written,
    // and those it is checking out are in flight.
    let repaired = repair_registrations(request.repo)?;
    let occupied = move_aside
        && request.path.exists()
        && super::worktree::validate(request.repo, request.path, request.branch).is_err();
    if repaired.is_empty() && !occupied {
        return Err(first);
    }
    tracing::warn!(error = %first, "repairing an interrupted worktree creation");
    if occupied {
        let aside = request
            .path
            .with_extension(format!("incomplete-{}", orchestra_sys::exec::now_ms()));
        fs_err::rename(request.path, &aside).map_err(|source| WorktreeError::Io {
            path: request.path.to_path_buf(),
            source,
        })?;
    }
    super::worktree::create_unverified(request, &choice)
}
