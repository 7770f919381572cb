//! Walks from the root to a directory one name at a time without following symlinks, and
//! explains, naming the guilty link, why a path could not be resolved.
//!
//! Every step is a cap-std call relative to an already open directory with a single plain
//! name, so no lookup can climb out; refusing symlinks at each step also means the directory
//! reached is the one the names spell, which is what lets name and identity checks be trusted.

use std::collections::VecDeque;
use std::io;
use std::path::{Component, Path};

use cap_fs_ext::DirExt;
use cap_std::fs::Dir;

use super::gitdirs::file_id;
use super::path::{RelPath, is_git_name, join};
use super::{Action, ConfineError, ConfinedRoot};

/// The most symlinks followed while explaining one path, as Linux's own limit.
const MAX_HOPS: usize = 40;

impl ConfinedRoot {
    /// Returns the directory made of the first `depth` names of `path`, opened without
    /// following any symlink.
    ///
    /// With `create`, missing directories are made on the way. Every name is checked against
    /// git metadata names and every directory entered against the protected git directories,
    /// so a bind mount or a `GIT_DIR` kept under another name is still refused. `shown` is the
    /// path the caller gave, for messages.
    pub(crate) fn walk_to_dir(
        &self,
        path: &RelPath,
        depth: usize,
        shown: &str,
        action: Action,
        create: bool,
    ) -> Result<Dir, ConfineError> {
        let mut dir = self.dir.try_clone().map_err(|e| io_error(".", "open", e))?;
        let all = path.names();
        let names = &all[..depth.min(all.len())];
        for (i, name) in names.iter().enumerate() {
            let prefix = || join(&names[..=i]);
            if is_git_name(name) {
                return Err(git_metadata(shown, action));
            }
            let next = match dir.open_dir_nofollow(name) {
                Ok(next) => next,
                Err(open_err) => match dir.symlink_metadata(name) {
                    Ok(meta) if meta.is_symlink() => {
                        return Err(self.symlink_error(
                            &dir,
                            &names[..i],
                            name,
                            &all[i + 1..],
                            shown,
                            action,
                        ));
                    }
                    Ok(meta) if meta.is_dir() => return Err(io_error(&prefix(), "open", open_err)),
                    Ok(_) => return Err(ConfineError::NotADirectory { path: prefix() }),
                    Err(e) if e.kind() == io::ErrorKind::NotFound && create => {
                        match dir.create_dir(name) {
                            Ok(()) => {}
                            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
                            Err(e) => return Err(io_error(&prefix(), "create directory", e)),
                        }
                        dir.open_dir_nofollow(name)
                            .map_err(|e| io_error(&prefix(), "open", e))?
                    }
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {
                        return Err(ConfineError::NotFound { path: prefix() });
                    }
                    Err(e) => return Err(io_error(&prefix(), "inspect", e)),
                },
            };
            let meta = next
                .dir_metadata()
                .map_err(|e| io_error(&prefix(), "inspect", e))?;
            if self.protected.contains(&file_id(&meta)) {
                return Err(git_metadata(shown, action));
            }
            dir = next;
        }
        Ok(dir)
    }

    /// Returns why the symlink `name` in `dir` (at `parent`) stops an operation on `shown`.
    ///
    /// The target is interpreted lexically only to word the message (outside, absolute, or
    /// "use this path instead"); the refusal itself does not depend on it.
    pub(crate) fn symlink_error(
        &self,
        dir: &Dir,
        parent: &[String],
        name: &str,
        rest: &[String],
        shown: &str,
        action: Action,
    ) -> ConfineError {
        let mut at: Vec<String> = parent.to_vec();
        at.push(name.to_string());
        let link = join(&at);
        let target = match dir.read_link_contents(name) {
            Ok(t) => t,
            Err(e) => return io_error(&link, "read the symlink", e),
        };
        let target_text = target.to_string_lossy().into_owned();
        if target.is_absolute() {
            return self.absolute_link_error(shown, link, target_text, &target, action);
        }
        match lexical_join(parent, &target) {
            None => ConfineError::SymlinkOutside {
                path: shown.to_string(),
                link,
                target: target_text,
                action,
            },
            Some(mut resolved) => {
                resolved.extend(rest.iter().cloned());
                let resolved = RelPath::from_names(resolved);
                if resolved.git_prefix().is_some() {
                    return ConfineError::ResolvesIntoGit {
                        path: shown.to_string(),
                        resolved: resolved.to_string(),
                        action,
                    };
                }
                // Suggest the real path only when it is not itself another link.
                let plain = !resolved.is_root()
                    && !self
                        .dir
                        .symlink_metadata(resolved.to_path_buf())
                        .is_ok_and(|m| m.is_symlink());
                ConfineError::ThroughSymlink {
                    path: shown.to_string(),
                    link,
                    target: target_text,
                    resolved: plain.then(|| resolved.to_string()),
                    action,
                }
            }
        }
    }

    fn absolute_link_error(
        &self,
        shown: &str,
        link: String,
        target_text: String,
        target: &Path,
        action: Action,
    ) -> ConfineError {
        if target.starts_with(&self.root) {
            ConfineError::AbsoluteSymlink {
                path: shown.to_string(),
                link,
                target: target_text,
                action,
            }
        } else {
            ConfineError::SymlinkOutside {
                path: shown.to_string(),
                link,
                target: target_text,
                action,
            }
        }
    }

    /// Returns the clearest explanation of why cap-std could not resolve `rel` beneath the root.
    ///
    /// Retraces the lookup name by name, following relative symlinks lexically from
    /// symlink-free prefixes, to find the link that leaves the root, is absolute, or loops.
    pub(crate) fn explain(
        &self,
        rel: &RelPath,
        shown: &str,
        action: Action,
        err: io::Error,
    ) -> ConfineError {
        if err.raw_os_error() == Some(libc::ELOOP) {
            return ConfineError::SymlinkLoop {
                path: shown.to_string(),
            };
        }
        let mut resolved: Vec<String> = Vec::new();
        let mut pending: VecDeque<String> = rel.names().iter().cloned().collect();
        let mut last_link: Option<(String, String)> = None;
        let mut hops = 0;
        while let Some(name) = pending.pop_front() {
            match name.as_str() {
                "" | "." => continue,
                ".." => {
                    if resolved.pop().is_none() {
                        let (link, target) = last_link.unwrap_or_default();
                        return ConfineError::SymlinkOutside {
                            path: shown.to_string(),
                            link,
                            target,
                            action,
                        };
                    }
                    continue;
                }
                _ => {}
            }
            let mut candidate = resolved.clone();
            candidate.push(name.clone());
            let at = RelPath::from_names(candidate);
            if is_git_name(&name) {
                let mut resolved = at.names().to_vec();
                resolved.extend(pending);
                return ConfineError::ResolvesIntoGit {
                    path: shown.to_string(),
                    resolved: join(&resolved),
                    action,
                };
            }
            match self.dir.symlink_metadata(at.to_path_buf()) {
                Ok(meta) if meta.is_symlink() => {
                    hops += 1;
                    if hops > MAX_HOPS {
                        return ConfineError::SymlinkLoop {
                            path: shown.to_string(),
                        };
                    }
                    let target = match self.dir.read_link_contents(at.to_path_buf()) {
                        Ok(t) => t,
                        Err(e) => return io_error(&at.to_string(), "read the symlink", e),
                    };
                    let text = target.to_string_lossy().into_owned();
                    if target.is_absolute() {
                        return self.absolute_link_error(
                            shown,
                            at.to_string(),
                            text,
                            &target,
                            action,
                        );
                    }
                    for part in path_parts(&target).into_iter().rev() {
                        pending.push_front(part);
                    }
                    last_link = Some((at.to_string(), text));
                }
                Ok(meta) if !meta.is_dir() && !pending.is_empty() => {
                    return ConfineError::NotADirectory {
                        path: at.to_string(),
                    };
                }
                Ok(_) => resolved.push(name),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    return ConfineError::NotFound {
                        path: shown.to_string(),
                    };
                }
                Err(e) => return io_error(&at.to_string(), "inspect", e),
            }
        }
        match err.kind() {
            io::ErrorKind::NotFound => ConfineError::NotFound {
                path: shown.to_string(),
            },
            // cap-std reports an escape as PermissionDenied without an OS error code.
            io::ErrorKind::PermissionDenied if err.raw_os_error().is_none() => {
                ConfineError::Escapes {
                    path: shown.to_string(),
                    root: self.root.clone(),
                }
            }
            _ => io_error(shown, "resolve", err),
        }
    }
}

/// Returns `parent` joined with the relative `target`, `..` applied lexically, or `None` when
/// the result would climb above the root.
fn lexical_join(parent: &[String], target: &Path) -> Option<Vec<String>> {
    let mut names = parent.to_vec();
    for part in path_parts(target) {
        match part.as_str() {
            ".." => {
                names.pop()?;
            }
            _ => names.push(part),
        }
    }
    Some(names)
}

/// Returns the names and `..` parts of a relative path, dropping `.` parts.
fn path_parts(path: &Path) -> Vec<String> {
    path.components()
        .filter_map(|c| match c {
            Component::Normal(n) => Some(n.to_string_lossy().into_owned()),
            Component::ParentDir => Some("..".to_string()),
            _ => None,
        })
        .collect()
}

/// Returns an I/O error naming the path and what was being done.
pub(crate) fn io_error(path: &str, op: &'static str, source: io::Error) -> ConfineError {
    ConfineError::Io {
        path: path.to_string(),
        op,
        source,
    }
}

/// Returns the refusal for `shown`, which is or lies inside git metadata.
pub(crate) fn git_metadata(shown: &str, action: Action) -> ConfineError {
    ConfineError::GitMetadata {
        path: shown.to_string(),
        action,
    }
}
