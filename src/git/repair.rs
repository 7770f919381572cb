//! Repairs what a crash in the middle of worktree creation can leave behind.
//!
//! Registering a linked worktree writes several small files under
//! `<common-dir>/worktrees/<id>/`; a process killed between them leaves a registration that git
//! and gix refuse to read (an empty `gitdir`, say), which would block every later worktree
//! operation in the repository. Such a registration holds no work — only pointers — and git's
//! own `worktree prune` would drop it as "invalid gitdir file"; this drops just those, plus
//! registrations still locked with gix's "initializing" marker (a creation that never finished),
//! leaving healthy and user-locked registrations alone. Callers serialise worktree creation so
//! that no creation of their own is in flight while they repair.

use std::path::PathBuf;

use super::RepoInfo;
use super::worktree::WorktreeError;

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
        if !dir.is_dir() {
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
