//! Reading operations: file contents, directory listings, metadata and existence.
//!
//! Reads may pass through symlinks that stay inside the root. The path is first canonicalised
//! by cap-std beneath the root (the kernel's `RESOLVE_BENEATH`), then the canonical path is
//! checked for git metadata and opened with the symlink-free walk, so a link swapped in between
//! the two steps makes the read fail instead of leading somewhere unchecked.

use std::io::{self, Read};
use std::path::Component;

use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt};
use cap_std::fs::{Dir, MetadataExt, OpenOptions, OpenOptionsExt};

use super::path::RelPath;
use super::walk::{git_metadata, io_error};
use super::{Action, ConfineError, ConfinedRoot, DirEntryInfo, EntryInfo, EntryKind};

impl ConfinedRoot {
    /// Returns the contents of the file at `rel`.
    ///
    /// Refuses directories, devices, pipes and sockets, files with more than one hard link,
    /// git metadata, and symlinks that leave the root or are absolute.
    pub fn read(&self, rel: &str) -> Result<Vec<u8>, ConfineError> {
        let path = self.parse(rel)?;
        let canonical = self.canonical(&path, rel, Action::Read)?;
        let Some((parent, name)) = canonical.split_last() else {
            return Err(ConfineError::IsADirectory {
                path: rel.to_string(),
            });
        };
        let dir = self.walk_to_dir(&canonical, parent.len(), rel, Action::Read, false)?;
        let mut options = OpenOptions::new();
        // O_NONBLOCK keeps a pipe swapped in after the checks from blocking the open.
        options
            .read(true)
            .follow(FollowSymlinks::No)
            .custom_flags(libc::O_NONBLOCK);
        let mut file = dir.open_with(name, &options).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ConfineError::NotFound {
                path: rel.to_string(),
            },
            _ => io_error(rel, "open", e),
        })?;
        let meta = file.metadata().map_err(|e| io_error(rel, "inspect", e))?;
        if meta.is_dir() {
            return Err(ConfineError::IsADirectory {
                path: rel.to_string(),
            });
        }
        if !meta.is_file() {
            return Err(ConfineError::NotAFile {
                path: rel.to_string(),
            });
        }
        if meta.nlink() > 1 {
            return Err(ConfineError::HardLinked {
                path: rel.to_string(),
                links: meta.nlink(),
                action: Action::Read,
            });
        }
        let mut contents = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
        file.read_to_end(&mut contents)
            .map_err(|e| io_error(rel, "read", e))?;
        Ok(contents)
    }

    /// Returns the contents of the file at `rel` as text, refusing bytes that are not UTF-8.
    pub fn read_to_string(&self, rel: &str) -> Result<String, ConfineError> {
        String::from_utf8(self.read(rel)?).map_err(|_| ConfineError::NotUtf8 {
            path: rel.to_string(),
        })
    }

    /// Returns the entries of the directory at `rel` (`.` for the root), sorted by name.
    ///
    /// Entries are described as they are, without following symlinks; the `.git` entry is
    /// listed, but listing inside git metadata is refused.
    pub fn list_dir(&self, rel: &str) -> Result<Vec<DirEntryInfo>, ConfineError> {
        let path = self.parse(rel)?;
        let canonical = self.canonical(&path, rel, Action::List)?;
        let dir = self.walk_to_dir(
            &canonical,
            canonical.names().len(),
            rel,
            Action::List,
            false,
        )?;
        let mut out = Vec::new();
        for entry in dir.entries().map_err(|e| io_error(rel, "list", e))? {
            let entry = entry.map_err(|e| io_error(rel, "list", e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            // The entry may vanish between readdir and lstat; it is then simply not listed.
            let Ok(meta) = entry.metadata() else { continue };
            out.push(DirEntryInfo {
                name,
                kind: EntryKind::of(meta.file_type()),
                size: meta.len(),
            });
        }
        out.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(out)
    }

    /// Returns facts about the entry at `rel` itself: a final symlink is described, not
    /// followed (its target is reported), while symlinks in parent directories are followed
    /// as for reads.
    pub fn metadata(&self, rel: &str) -> Result<EntryInfo, ConfineError> {
        let path = self.parse(rel)?;
        let (dir, name) = self.parent_for_read(&path, rel)?;
        let Some(name) = name else {
            let meta = self
                .dir
                .dir_metadata()
                .map_err(|e| io_error(rel, "inspect", e))?;
            return Ok(EntryInfo::new(path.to_string(), &meta, None));
        };
        let meta = dir.symlink_metadata(&name).map_err(|e| match e.kind() {
            io::ErrorKind::NotFound => ConfineError::NotFound {
                path: rel.to_string(),
            },
            _ => io_error(rel, "inspect", e),
        })?;
        let target = if meta.is_symlink() {
            let t = dir
                .read_link_contents(&name)
                .map_err(|e| io_error(rel, "read the symlink", e))?;
            Some(t.to_string_lossy().into_owned())
        } else {
            None
        };
        Ok(EntryInfo::new(path.to_string(), &meta, target))
    }

    /// Returns true if and only if an entry (of any kind, dangling symlinks included) exists
    /// at `rel`; a missing parent directory means false, while an escape or a path inside git
    /// metadata is still an error.
    pub fn exists(&self, rel: &str) -> Result<bool, ConfineError> {
        match self.metadata(rel) {
            Ok(_) => Ok(true),
            Err(ConfineError::NotFound { .. } | ConfineError::NotADirectory { .. }) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Returns the canonical form of `path` beneath the root, refusing git metadata.
    fn canonical(
        &self,
        path: &RelPath,
        shown: &str,
        action: Action,
    ) -> Result<RelPath, ConfineError> {
        if path.git_prefix().is_some() {
            return Err(git_metadata(shown, action));
        }
        if path.is_root() {
            return Ok(path.clone());
        }
        let canonical = self
            .dir
            .canonicalize(path.to_path_buf())
            .map_err(|e| self.explain(path, shown, action, e))?;
        let mut names = Vec::new();
        for part in canonical.components() {
            match part {
                Component::Normal(n) => names.push(n.to_string_lossy().into_owned()),
                Component::CurDir => {}
                // cap-std returns a plain relative path; anything else means it left the root.
                _ => {
                    return Err(ConfineError::Escapes {
                        path: shown.to_string(),
                        root: self.root.clone(),
                    });
                }
            }
        }
        let canonical = RelPath::from_names(names);
        if canonical.git_prefix().is_some() {
            return Err(ConfineError::ResolvesIntoGit {
                path: shown.to_string(),
                resolved: canonical.to_string(),
                action,
            });
        }
        Ok(canonical)
    }

    /// Returns the open parent directory of `path` (symlinks followed inside the root) and its
    /// last name, or no name for the root.
    fn parent_for_read(
        &self,
        path: &RelPath,
        shown: &str,
    ) -> Result<(Dir, Option<String>), ConfineError> {
        let Some((parent, name)) = path.split_last() else {
            let dir = self.dir.try_clone().map_err(|e| io_error(".", "open", e))?;
            return Ok((dir, None));
        };
        let parent = RelPath::from_names(parent.to_vec());
        let canonical = self.canonical(&parent, shown, Action::Read)?;
        let dir = self.walk_to_dir(
            &canonical,
            canonical.names().len(),
            shown,
            Action::Read,
            false,
        )?;
        Ok((dir, Some(name.to_string())))
    }
}
