//! Finds a worktree's git directories (its own and the common one) so they can be protected.
//!
//! The layout is read from the files git writes (`.git` as a directory or a `gitdir:` file, and
//! `commondir` inside the git directory) rather than by running `git rev-parse`: the answer
//! then cannot be bent by `GIT_DIR`/`GIT_COMMON_DIR` in the environment, and opening a root
//! spawns no process.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use cap_std::fs::{Metadata, MetadataExt};

use super::ConfineError;

/// A directory's identity on disk, as (device, inode), which survives renames and bind mounts.
pub(crate) type FileId = (u64, u64);

/// Returns the identity of the entry `meta` describes.
pub(crate) fn file_id(meta: &Metadata) -> FileId {
    (meta.dev(), meta.ino())
}

/// The git directories that belong to one worktree.
#[derive(Debug, Default)]
pub(crate) struct GitDirs {
    /// The worktree's own git directory (`<root>/.git`, or `<common>/worktrees/<name>`).
    pub git_dir: Option<PathBuf>,
    /// The git directory shared by all worktrees of the repository.
    pub common_dir: Option<PathBuf>,
    /// Identities of both directories, checked against every directory a walk enters.
    pub ids: HashSet<FileId>,
}

/// Returns the git directories of the worktree at `root` (a canonical path).
///
/// A root without `.git` is not an error: it is an ordinary directory, and `.git` names are
/// still protected by name. A `.git` file that cannot be followed is an error, because its
/// directories could then not be protected.
pub(crate) fn detect(root: &Path) -> Result<GitDirs, ConfineError> {
    let dot_git = root.join(".git");
    let git_dir = match std::fs::symlink_metadata(&dot_git) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(GitDirs::default()),
        Err(e) => return Err(link_error(&dot_git, e.to_string())),
        Ok(meta) if meta.is_file() => follow_gitdir_file(&dot_git, root)?,
        // A directory, or a symlink to one as some tools create.
        Ok(_) => canonical(&dot_git)?,
    };
    let common_dir = match std::fs::read_to_string(git_dir.join("commondir")) {
        Ok(text) => canonical(&git_dir.join(text.trim_end_matches(['\n', '\r'])))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => git_dir.clone(),
        Err(e) => return Err(link_error(&git_dir.join("commondir"), e.to_string())),
    };
    let mut ids = HashSet::new();
    for dir in [&git_dir, &common_dir] {
        let meta = std::fs::metadata(dir).map_err(|e| link_error(dir, e.to_string()))?;
        ids.insert((
            std::os::unix::fs::MetadataExt::dev(&meta),
            std::os::unix::fs::MetadataExt::ino(&meta),
        ));
    }
    Ok(GitDirs {
        git_dir: Some(git_dir),
        common_dir: Some(common_dir),
        ids,
    })
}

/// Returns the directory a `gitdir: <path>` file points to, relative paths taken from `root`.
fn follow_gitdir_file(file: &Path, root: &Path) -> Result<PathBuf, ConfineError> {
    let text = std::fs::read_to_string(file).map_err(|e| link_error(file, e.to_string()))?;
    let target = text
        .lines()
        .next()
        .and_then(|line| line.strip_prefix("gitdir:"))
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .ok_or_else(|| link_error(file, "it does not start with `gitdir: <path>`".to_string()))?;
    canonical(&root.join(target))
}

/// Returns the canonical form of `path`, which must exist.
fn canonical(path: &Path) -> Result<PathBuf, ConfineError> {
    std::fs::canonicalize(path).map_err(|e| link_error(path, e.to_string()))
}

fn link_error(path: &Path, reason: String) -> ConfineError {
    ConfineError::GitLink {
        path: path.to_path_buf(),
        reason,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_directory_has_no_git_dirs() {
        let tmp = tempfile::tempdir().unwrap();
        let dirs = detect(tmp.path()).unwrap();
        assert!(dirs.git_dir.is_none() && dirs.ids.is_empty());
    }

    #[test]
    fn follows_a_gitdir_file_and_its_commondir() {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let common = base.join("repo.git");
        let own = common.join("worktrees/wt");
        std::fs::create_dir_all(&own).unwrap();
        std::fs::write(own.join("commondir"), "../..\n").unwrap();
        let root = base.join("wt");
        std::fs::create_dir(&root).unwrap();
        std::fs::write(root.join(".git"), format!("gitdir: {}\n", own.display())).unwrap();
        let dirs = detect(&root).unwrap();
        assert_eq!(dirs.git_dir.as_deref(), Some(own.as_path()));
        assert_eq!(dirs.common_dir.as_deref(), Some(common.as_path()));
        assert_eq!(dirs.ids.len(), 2);
    }

    #[test]
    fn a_broken_gitdir_file_is_an_error_that_says_how_to_repair() {
        let tmp = tempfile::tempdir().unwrap();
        std::fs::write(tmp.path().join(".git"), "nonsense\n").unwrap();
        let err = detect(tmp.path()).unwrap_err().to_string();
        assert!(
            err.contains("gitdir:") && err.contains("git worktree repair"),
            "{err}"
        );
    }
}
