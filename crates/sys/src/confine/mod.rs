//! Confined file access: every read, write, create, rename and delete an agent tool performs
//! resolves beneath one worktree root and never touches git metadata.
//!
//! # How the boundary holds
//!
//! - The root is a cap-std [`Dir`] capability. On Linux ≥ 5.6 cap-std resolves paths with
//!   `openat2(RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)`, so the kernel itself refuses `..`,
//!   absolute paths and symlinks (file or directory, relative or absolute) that leave the root;
//!   on older kernels cap-std resolves component by component in user space to the same effect.
//! - Mutations never follow a symlink at all: the parent directory is reached one plain name at
//!   a time with `O_NOFOLLOW` (`walk.rs`), and the last name is created, replaced, renamed or
//!   unlinked relative to that open directory. A symlink anywhere on the way is refused with a
//!   message naming it (and, when it stays inside, the real path to use instead). Removing or
//!   renaming a symlink itself is allowed: that changes only the link.
//! - Reads follow symlinks that stay inside the root: cap-std canonicalises the path beneath
//!   the root, and the canonical path is then opened with the same symlink-free walk, so what
//!   is checked is what is opened.
//! - Hard links escape any path-based boundary, so regular files with more than one link are
//!   neither read nor written (renaming or removing such a link is harmless and allowed).
//! - Git metadata: any name that is, or that some file system treats as, `.git` (ASCII case,
//!   trailing dots and spaces, NTFS streams, HFS+ ignorable code points, `git~1`) and any
//!   directory whose identity (device, inode) is the worktree's git directory or the common
//!   git directory. Its *contents* are neither readable, listable nor writable through this
//!   API — an agent has git commands for that, and `.git/config` may hold credentials — while
//!   the `.git` entry itself shows up in listings, `metadata` and `exists`.
//!
//! # Paths
//!
//! Paths are `/`-separated and relative to the root; see [`path::RelPath::parse`] for the
//! exact rules (empty, NUL, absolute, `C:\`, backslash and leading `~` are refused with an
//! explanation; `.` is the root; `..` is resolved lexically and may not climb above the root).

mod entry;
mod error;
mod file;
mod gitdirs;
mod path;
mod read;
mod walk;
mod write;

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use cap_std::fs::Dir;

pub use entry::{DirEntryInfo, EntryInfo, EntryKind};
pub use error::{Action, ConfineError};
pub use file::{MAX_TEXT_FILE, read_text_file};
pub use write::{TEMP_PREFIX, is_writer_temp, temp_name};

use gitdirs::FileId;

/// A worktree root through which all file access is confined; cheap to share across threads.
#[derive(Debug)]
pub struct ConfinedRoot {
    /// The capability every lookup starts from.
    dir: Dir,
    /// The canonical path of the root, for messages and for classifying absolute symlinks.
    root: PathBuf,
    git_dir: Option<PathBuf>,
    common_dir: Option<PathBuf>,
    /// Identities of the git directories, refused wherever a walk meets them.
    protected: HashSet<FileId>,
}

impl ConfinedRoot {
    /// Opens the worktree at `root` and records its git directories so they stay protected.
    ///
    /// `.git` may be a directory (main worktree), a `gitdir:` file (linked worktree or
    /// submodule) or absent (a plain directory, where `.git` names are still protected).
    /// Refuses a root that is itself git metadata.
    pub fn open(root: &Path) -> Result<Self, ConfineError> {
        let open_err = |source| ConfineError::OpenRoot {
            root: root.to_path_buf(),
            source,
        };
        let canonical = std::fs::canonicalize(root).map_err(open_err)?;
        let dir =
            Dir::open_ambient_dir(&canonical, cap_std::ambient_authority()).map_err(open_err)?;
        let dirs = gitdirs::detect(&canonical)?;
        let own = dir.dir_metadata().map_err(open_err)?;
        let inside_git_names = canonical
            .components()
            .any(|c| path::is_git_name(&c.as_os_str().to_string_lossy()));
        if dirs.ids.contains(&gitdirs::file_id(&own))
            || (inside_git_names && dirs.git_dir.is_none())
        {
            return Err(ConfineError::RootIsGitMetadata { root: canonical });
        }
        Ok(ConfinedRoot {
            dir,
            root: canonical,
            git_dir: dirs.git_dir,
            common_dir: dirs.common_dir,
            protected: dirs.ids,
        })
    }

    /// Returns the canonical path of the root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Returns the worktree's own git directory, `None` when the root has no `.git`.
    pub fn git_dir(&self) -> Option<&Path> {
        self.git_dir.as_deref()
    }

    /// Returns the git directory shared by all worktrees, `None` when the root has no `.git`.
    pub fn common_dir(&self) -> Option<&Path> {
        self.common_dir.as_deref()
    }

    /// Returns `input` parsed against this root.
    fn parse(&self, input: &str) -> Result<path::RelPath, ConfineError> {
        path::RelPath::parse(input, &self.root)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_root_can_be_shared_across_threads() {
        fn shareable<T: Send + Sync>() {}
        shareable::<ConfinedRoot>();
    }

    #[test]
    fn a_plain_directory_is_a_root_whose_git_names_stay_protected() {
        let tmp = tempfile::tempdir().unwrap();
        let root = ConfinedRoot::open(tmp.path()).unwrap();
        assert!(root.git_dir().is_none() && root.common_dir().is_none());
        root.write("a.txt", b"a").unwrap();
        let err = root.create_dir_all("x/.git").unwrap_err();
        assert!(matches!(err, ConfineError::GitMetadata { .. }), "{err}");
        assert!(
            !tmp.path().join("x").exists(),
            "nothing is created on refusal"
        );
    }

    #[test]
    fn an_overlong_name_is_an_answer_not_an_infrastructure_failure() {
        let tmp = tempfile::tempdir().unwrap();
        let root = ConfinedRoot::open(tmp.path()).unwrap();
        let long = "n".repeat(300);
        let err = root.write(&long, b"x").unwrap_err();
        assert!(!err.is_infrastructure(), "{err}");
        assert!(err.to_string().contains(&long), "{err}");
        assert_eq!(
            std::fs::read_dir(tmp.path()).unwrap().count(),
            0,
            "no temporary file left"
        );
    }
}
