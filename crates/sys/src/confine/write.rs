//! Mutating operations: write, create, make directories, rename and remove.
//!
//! None of them follows a symlink: the parent directory is reached by the symlink-free walk and
//! the last name is handled relative to it. New contents go to a temporary file in the same
//! directory first and are renamed into place, so a reader never sees half a file and a failed
//! write leaves the old contents.

use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};

use cap_fs_ext::{DirExt, FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, Metadata, MetadataExt, OpenOptions};
use rustix::fs::RenameFlags;
use rustix::io::Errno;

use super::gitdirs::file_id;
use super::path::{RelPath, is_git_name, join};
use super::walk::{git_metadata, io_error};
use super::{Action, ConfineError, ConfinedRoot};

/// Distinguishes temporary files of concurrent writes within one process.
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

impl ConfinedRoot {
    /// Writes `contents` to the file at `rel`, creating missing parent directories and
    /// replacing an existing file atomically while keeping its permissions.
    ///
    /// Refuses git metadata, any symlink on the way or at `rel`, directories, special files
    /// and files with more than one hard link.
    pub fn write(&self, rel: &str, contents: &[u8]) -> Result<(), ConfineError> {
        let path = self.parse(rel)?;
        let (dir, name) = self.parent_for_write(&path, rel, Action::Write, true)?;
        let existing = self.existing_file(&dir, &path, name, rel, Action::Write)?;
        let temp = write_temp(&dir, rel, contents, existing.as_ref())?;
        dir.rename(&temp, &dir, name).map_err(|e| {
            let _ = dir.remove_file(&temp);
            io_error(rel, "replace", e)
        })
    }

    /// Creates the file at `rel` with `contents`, creating missing parent directories;
    /// refuses when any entry (even a dangling symlink) already has that name.
    pub fn create_new(&self, rel: &str, contents: &[u8]) -> Result<(), ConfineError> {
        let path = self.parse(rel)?;
        let (dir, name) = self.parent_for_write(&path, rel, Action::Create, true)?;
        if self
            .existing_file(&dir, &path, name, rel, Action::Create)?
            .is_some()
        {
            return Err(ConfineError::AlreadyExists {
                path: rel.to_string(),
            });
        }
        let temp = write_temp(&dir, rel, contents, None)?;
        rename_noreplace(&dir, &temp, &dir, name).map_err(|e| {
            let _ = dir.remove_file(&temp);
            match e.kind() {
                io::ErrorKind::AlreadyExists => ConfineError::AlreadyExists {
                    path: rel.to_string(),
                },
                _ => io_error(rel, "create", e),
            }
        })
    }

    /// Creates the directory at `rel` and any missing parents; succeeds when it already exists.
    pub fn create_dir_all(&self, rel: &str) -> Result<(), ConfineError> {
        let path = self.parse(rel)?;
        if path.git_prefix().is_some() {
            return Err(git_metadata(rel, Action::Create));
        }
        self.walk_to_dir(&path, path.names().len(), rel, Action::Create, true)
            .map(drop)
    }

    /// Moves the entry at `from` to `to`, creating missing parent directories of `to`.
    ///
    /// Refuses when `to` exists (nothing is ever replaced), when either end is or lies inside
    /// git metadata, when `from` is a directory containing git metadata, and when a symlink
    /// lies on the way to either end. A symlink at `from` is moved as a link.
    pub fn rename(&self, from: &str, to: &str) -> Result<(), ConfineError> {
        let from_path = self.parse(from)?;
        let to_path = self.parse(to)?;
        let (from_dir, from_name) = self.parent_for_write(&from_path, from, Action::Move, false)?;
        let meta = lstat(&from_dir, from_name, from)?.ok_or_else(|| ConfineError::NotFound {
            path: from.to_string(),
        })?;
        if meta.is_dir() {
            let moved = from_dir
                .open_dir_nofollow(from_name)
                .map_err(|e| io_error(from, "open", e))?;
            if let Some(inner) = self.find_git_metadata(&moved, from_path.names().to_vec())? {
                return Err(ConfineError::ContainsGitMetadata {
                    path: from.to_string(),
                    inner,
                    action: Action::Move,
                });
            }
        }
        // Validate the destination before creating any of its parents.
        let (to_dir, to_name) = match self.parent_for_write(&to_path, to, Action::Write, false) {
            Err(ConfineError::NotFound { .. }) => {
                self.parent_for_write(&to_path, to, Action::Write, true)?
            }
            other => other?,
        };
        if lstat(&to_dir, to_name, to)?.is_some() {
            return Err(ConfineError::AlreadyExists {
                path: to.to_string(),
            });
        }
        rename_noreplace(&from_dir, from_name, &to_dir, to_name).map_err(|e| match e.kind() {
            io::ErrorKind::AlreadyExists => ConfineError::AlreadyExists {
                path: to.to_string(),
            },
            io::ErrorKind::InvalidInput => ConfineError::MoveIntoItself {
                from: from.to_string(),
                to: to.to_string(),
            },
            _ => io_error(from, "move", e),
        })
    }

    /// Removes the file or symlink at `rel` (a symlink itself, never its target).
    ///
    /// Refuses directories, git metadata and symlinks on the way. Removing one name of a
    /// hard-linked file is allowed: the other names keep the contents.
    pub fn remove_file(&self, rel: &str) -> Result<(), ConfineError> {
        let path = self.parse(rel)?;
        let (dir, name) = self.parent_for_write(&path, rel, Action::Remove, false)?;
        match lstat(&dir, name, rel)? {
            None => Err(ConfineError::NotFound {
                path: rel.to_string(),
            }),
            Some(meta) if meta.is_dir() => Err(ConfineError::IsADirectory {
                path: rel.to_string(),
            }),
            Some(_) => dir
                .remove_file(name)
                .map_err(|e| io_error(rel, "remove", e)),
        }
    }

    /// Returns the open parent directory of `path`, reached without following symlinks, and
    /// the last name, refusing the root itself and git metadata.
    fn parent_for_write<'p>(
        &self,
        path: &'p RelPath,
        shown: &str,
        action: Action,
        create: bool,
    ) -> Result<(Dir, &'p str), ConfineError> {
        if path.git_prefix().is_some() {
            return Err(git_metadata(shown, action));
        }
        let Some((parent, name)) = path.split_last() else {
            return Err(ConfineError::IsRoot {
                path: shown.to_string(),
                action,
            });
        };
        let dir = self.walk_to_dir(path, parent.len(), shown, action, create)?;
        Ok((dir, name))
    }

    /// Returns the metadata of the regular file `name` in `dir` if it exists, refusing any
    /// other kind of entry and files with more than one hard link.
    fn existing_file(
        &self,
        dir: &Dir,
        path: &RelPath,
        name: &str,
        shown: &str,
        action: Action,
    ) -> Result<Option<Metadata>, ConfineError> {
        let Some(meta) = lstat(dir, name, shown)? else {
            return Ok(None);
        };
        if meta.is_symlink() {
            let parent = path.split_last().map(|(p, _)| p).unwrap_or_default();
            return Err(self.symlink_error(dir, parent, name, &[], shown, action));
        }
        if meta.is_dir() {
            return Err(ConfineError::IsADirectory {
                path: shown.to_string(),
            });
        }
        if !meta.is_file() {
            return Err(ConfineError::NotAFile {
                path: shown.to_string(),
            });
        }
        if meta.nlink() > 1 {
            return Err(ConfineError::HardLinked {
                path: shown.to_string(),
                links: meta.nlink(),
                action,
            });
        }
        Ok(Some(meta))
    }

    /// Returns the first git metadata inside `dir` (at `names`), searching without following
    /// symlinks, so that moving a directory never carries a repository along.
    fn find_git_metadata(
        &self,
        dir: &Dir,
        names: Vec<String>,
    ) -> Result<Option<String>, ConfineError> {
        let mut stack = vec![(dir.try_clone(), names)];
        while let Some((dir, names)) = stack.pop() {
            let shown = join(&names);
            let dir = dir.map_err(|e| io_error(&shown, "open", e))?;
            let meta = dir
                .dir_metadata()
                .map_err(|e| io_error(&shown, "inspect", e))?;
            if self.protected.contains(&file_id(&meta)) {
                return Ok(Some(shown));
            }
            for entry in dir.entries().map_err(|e| io_error(&shown, "list", e))? {
                let entry = entry.map_err(|e| io_error(&shown, "list", e))?;
                let name = entry.file_name().to_string_lossy().into_owned();
                let mut child = names.clone();
                child.push(name.clone());
                if is_git_name(&name) {
                    return Ok(Some(join(&child)));
                }
                let is_dir = entry.file_type().is_ok_and(|t| t.is_dir());
                if is_dir {
                    stack.push((dir.open_dir_nofollow(&name), child));
                }
            }
        }
        Ok(None)
    }
}

/// Returns the metadata of `name` in `dir` without following a symlink, `None` if absent.
fn lstat(dir: &Dir, name: &str, shown: &str) -> Result<Option<Metadata>, ConfineError> {
    match dir.symlink_metadata(name) {
        Ok(meta) => Ok(Some(meta)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error(shown, "inspect", e)),
    }
}

/// How the names of this module's temporary files begin. A write cut short by a crash can
/// leave one behind; packet commits drop such files (see `git::commit::commit_all`), and only
/// those: see [`is_writer_temp`].
pub const TEMP_PREFIX: &str = ".orchestra-tmp-";

/// Returns the name of temporary file number `n` of process `pid`:
/// `.orchestra-tmp-<pid>-<n>-<tag>`, where the tag is a hash of the rest, so that no file a
/// worker names itself — `.orchestra-tmp-notes`, `.orchestra-tmp-1-2` — is ever taken for one.
pub fn temp_name(pid: u32, n: u64) -> String {
    format!("{TEMP_PREFIX}{pid}-{n}-{}", temp_tag(pid, n))
}

/// Returns true if and only if `name` (a file name, no directory) is one [`temp_name`] makes.
pub fn is_writer_temp(name: &[u8]) -> bool {
    let Some(rest) = std::str::from_utf8(name)
        .ok()
        .and_then(|n| n.strip_prefix(TEMP_PREFIX))
    else {
        return false;
    };
    let mut parts = rest.splitn(3, '-');
    let (Some(pid), Some(n), Some(tag)) = (parts.next(), parts.next(), parts.next()) else {
        return false;
    };
    match (pid.parse::<u32>(), n.parse::<u64>()) {
        (Ok(pid), Ok(n)) => tag == temp_tag(pid, n),
        _ => false,
    }
}

/// Returns the 16 hex digits that end the name of temporary file `n` of process `pid`.
fn temp_tag(pid: u32, n: u64) -> String {
    use sha2::{Digest, Sha256};
    let digest = Sha256::digest(format!("git-orchestra confined write {pid} {n}"));
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// Writes `contents` to a new temporary file in `dir` and returns its name; the file gets the
/// permissions of `like` when given.
fn write_temp(
    dir: &Dir,
    shown: &str,
    contents: &[u8],
    like: Option<&Metadata>,
) -> Result<String, ConfineError> {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = temp_name(std::process::id(), n);
    let mut options = OpenOptions::new();
    options
        .write(true)
        .create_new(true)
        .follow(FollowSymlinks::No);
    let mut file = dir
        .open_with(&temp, &options)
        .map_err(|e| io_error(shown, "create a temporary file for", e))?;
    let written = file.write_all(contents).and_then(|()| match like {
        Some(meta) => file.set_permissions(meta.permissions()),
        None => Ok(()),
    });
    if let Err(e) = written {
        drop(file);
        let _ = dir.remove_file(&temp);
        return Err(io_error(shown, "write", e));
    }
    Ok(temp)
}

/// Renames `from` in `from_dir` to `to` in `to_dir`, failing with `AlreadyExists` instead of
/// replacing anything.
///
/// Uses `renameat2(RENAME_NOREPLACE)`; on file systems without it, falls back to a hard link
/// plus unlink for files (also atomic and non-replacing) or a checked rename for directories.
fn rename_noreplace(from_dir: &Dir, from: &str, to_dir: &Dir, to: &str) -> io::Result<()> {
    match rustix::fs::renameat_with(from_dir, from, to_dir, to, RenameFlags::NOREPLACE) {
        Ok(()) => Ok(()),
        Err(Errno::NOSYS | Errno::OPNOTSUPP) | Err(Errno::INVAL)
            if !from_dir.symlink_metadata(from)?.is_dir() =>
        {
            from_dir.hard_link(from, to_dir, to)?;
            from_dir.remove_file(from)
        }
        Err(Errno::NOSYS | Errno::OPNOTSUPP) => {
            if to_dir.symlink_metadata(to).is_ok() {
                return Err(io::Error::from(io::ErrorKind::AlreadyExists));
            }
            from_dir.rename(from, to_dir, to)
        }
        Err(e) => Err(e.into()),
    }
}
