//! Moves a removed worktree's directory aside while the registration lock is held and deletes
//! its files after the lock is released, so that parallel removals do not wait for each other's
//! file deletion.
//!
//! The directory is renamed to a unique name beside it (same parent, so same filesystem and
//! a rename never copies). A crash before the deletion ends leaves that directory behind; `gc`
//! deletes it through [`delete_set_aside`], which only takes directories carrying this module's
//! name prefix whose `.git` file points into the repository's own `worktrees/` directory:
//! names and contents only a removal of ours produces, never a user's directory.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::worktree::WorktreeError;

/// The name prefix of a worktree directory renamed aside for deletion.
pub const ASIDE_PREFIX: &str = ".orchestra-removing-";

/// The files of an unregistered worktree still to be deleted (nothing when they were deleted
/// in place because the rename failed).
#[derive(Debug)]
#[must_use = "the set-aside files are only deleted by `delete`"]
pub(crate) struct SetAside(Option<PathBuf>);

impl SetAside {
    /// Returns the value of files already deleted in place (nothing left to delete).
    pub(crate) fn deleted() -> SetAside {
        SetAside(None)
    }

    /// Returns where the files wait for deletion, `None` when none wait.
    #[cfg(test)]
    pub(crate) fn path(&self) -> Option<&Path> {
        self.0.as_deref()
    }

    /// Deletes the set-aside files; meant to run without the registration lock.
    pub(crate) fn delete(self) -> Result<(), WorktreeError> {
        let Some(path) = self.0 else {
            return Ok(());
        };
        fs_err::remove_dir_all(&path).map_err(|source| WorktreeError::Io { path, source })
    }
}

/// Renames the worktree directory `top` to a unique `ASIDE_PREFIX` name in its parent and
/// returns it; returns `None`, having moved nothing, when the rename fails (another
/// filesystem mounted at `top`, a clashing leftover), so that the caller deletes in place.
pub(crate) fn set_aside(top: &Path) -> Option<SetAside> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let parent = top.parent()?;
    let name = top.file_name()?.to_string_lossy();
    let aside = parent.join(format!(
        "{ASIDE_PREFIX}{name}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    if aside.exists() {
        return None;
    }
    std::fs::rename(top, &aside).ok()?;
    Some(SetAside(Some(aside)))
}

/// Deletes the worktree directories in `dir` that a removal set aside and a crash left
/// undeleted, and returns how many it deleted; only those whose name starts with
/// [`ASIDE_PREFIX`] and whose `.git` file names a registration under `common_dir/worktrees/`
/// are touched. Failures are skipped (the next `gc` tries again).
pub fn delete_set_aside(common_dir: &Path, dir: &Path) -> usize {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    let registrations = common_dir
        .canonicalize()
        .unwrap_or_else(|_| common_dir.to_path_buf())
        .join("worktrees");
    entries
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(ASIDE_PREFIX))
        .map(|e| e.path())
        .filter(|p| was_registered_under(p, &registrations))
        .filter(|p| std::fs::remove_dir_all(p).is_ok())
        .count()
}

/// Returns true if and only if `dir` is a directory whose `.git` is a file pointing at an
/// absolute path under `registrations`.
fn was_registered_under(dir: &Path, registrations: &Path) -> bool {
    let link = dir.join(".git");
    if !std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
        || !std::fs::symlink_metadata(&link).is_ok_and(|m| m.is_file())
    {
        return false;
    }
    let Ok(text) = std::fs::read_to_string(&link) else {
        return false;
    };
    text.trim()
        .strip_prefix("gitdir:")
        .map(|g| Path::new(g.trim()))
        .is_some_and(|g| g.is_absolute() && g.starts_with(registrations))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delete_set_aside_takes_only_what_a_removal_set_aside() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        let common = top.join("repo/.git");
        std::fs::create_dir_all(common.join("worktrees")).unwrap();
        let run = top.join("run");
        let write_dir = |name: &str, gitdir: Option<String>| {
            let d = run.join(name);
            std::fs::create_dir_all(d.join("src")).unwrap();
            std::fs::write(d.join("src/a.rs"), "fn main() {}").unwrap();
            if let Some(g) = gitdir {
                std::fs::write(d.join(".git"), format!("gitdir: {g}\n")).unwrap();
            }
            d
        };
        let ours = write_dir(
            &format!("{ASIDE_PREFIX}p-1-0"),
            Some(common.join("worktrees/p").display().to_string()),
        );
        let no_link = write_dir(&format!("{ASIDE_PREFIX}mine"), None);
        let elsewhere = write_dir(
            &format!("{ASIDE_PREFIX}other-1-1"),
            Some(top.join("other/.git/worktrees/p").display().to_string()),
        );
        let relative = write_dir(
            &format!("{ASIDE_PREFIX}rel-1-2"),
            Some("../repo/.git/worktrees/p".to_string()),
        );
        let packet = write_dir(
            "p2",
            Some(common.join("worktrees/p2").display().to_string()),
        );
        assert_eq!(delete_set_aside(&common, &run), 1);
        assert!(!ours.exists());
        for kept in [no_link, elsewhere, relative, packet] {
            assert!(kept.join("src/a.rs").exists(), "{} deleted", kept.display());
        }
    }

    #[test]
    fn set_aside_moves_the_directory_beside_itself_and_delete_removes_it() {
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().join("p");
        std::fs::create_dir_all(top.join("d")).unwrap();
        std::fs::write(top.join("d/f"), "x").unwrap();
        let aside = set_aside(&top).unwrap();
        let moved = aside.path().unwrap().to_path_buf();
        assert!(!top.exists());
        assert_eq!(moved.parent(), Some(tmp.path()));
        assert!(moved.join("d/f").exists());
        aside.delete().unwrap();
        assert!(!moved.exists());
    }
}
