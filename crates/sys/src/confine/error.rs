//! Errors of confined file access, worded so that a model or a person knows what to do next.

use std::path::PathBuf;

/// What an operation was doing to a path, used to finish error sentences.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Reading a file's contents or metadata.
    Read,
    /// Listing a directory.
    List,
    /// Writing or replacing a file.
    Write,
    /// Creating a new file or directory.
    Create,
    /// Removing a file or symlink.
    Remove,
    /// Renaming or moving an entry.
    Move,
}

impl Action {
    /// Returns the past participle used in "cannot be …".
    pub fn participle(self) -> &'static str {
        match self {
            Action::Read => "read",
            Action::List => "listed",
            Action::Write => "written",
            Action::Create => "created",
            Action::Remove => "removed",
            Action::Move => "moved",
        }
    }

    /// Returns the verb used in "refusing to …".
    pub fn verb(self) -> &'static str {
        match self {
            Action::Read => "read",
            Action::List => "list",
            Action::Write => "write",
            Action::Create => "create",
            Action::Remove => "remove",
            Action::Move => "move",
        }
    }
}

/// Why a confined operation was refused or failed; every message names the path and the reason.
///
/// Paths in messages are the ones the caller gave (after `..` and `.` were resolved where that
/// matters), so a model can correct its own call.
#[derive(Debug, thiserror::Error)]
pub enum ConfineError {
    #[error(
        "the path is empty; give a path relative to the worktree root, such as `src/main.rs`, or `.` for the root itself"
    )]
    Empty,
    #[error("`{path}` contains a NUL byte; paths cannot contain NUL")]
    Nul { path: String },
    #[error("`{path}` is an absolute path: paths must be relative to the worktree root {}", root.display())]
    Absolute { path: String, root: PathBuf },
    #[error(
        "`{path}` is a Windows drive or network path: paths must be relative to the worktree root {}, with `/` between directories", root.display()
    )]
    WindowsPath { path: String, root: PathBuf },
    #[error(
        "`{path}` contains a backslash; separate directories with `/` (backslashes are not allowed in names)"
    )]
    Backslash { path: String },
    #[error(
        "`{path}` starts with `~`, which is not expanded to a home directory: paths are relative to the worktree root {} (write `./{path}` for a name that starts with `~`)", root.display()
    )]
    Tilde { path: String, root: PathBuf },
    #[error("`{path}` leaves the worktree: paths must stay inside {}", root.display())]
    LeavesRoot { path: String, root: PathBuf },
    #[error("`{path}` resolves outside the worktree: paths must stay inside {}", root.display())]
    Escapes { path: String, root: PathBuf },
    #[error(
        "`{path}` is git metadata and cannot be {}; use git commands to inspect or change the repository", action.participle()
    )]
    GitMetadata { path: String, action: Action },
    #[error(
        "`{path}` resolves to `{resolved}`, which is git metadata and cannot be {}", action.participle()
    )]
    ResolvesIntoGit {
        path: String,
        resolved: String,
        action: Action,
    },
    #[error(
        "`{path}` contains git metadata (`{inner}`) and cannot be {}", action.participle()
    )]
    ContainsGitMetadata {
        path: String,
        inner: String,
        action: Action,
    },
    #[error(
        "`{link}` is a symlink pointing outside the worktree (to `{target}`){}",
        via(path, link, *action)
    )]
    SymlinkOutside {
        path: String,
        link: String,
        target: String,
        action: Action,
    },
    #[error(
        "`{link}` is an absolute symlink (to `{target}`); only relative symlinks that stay inside the worktree are followed{}",
        via(path, link, *action)
    )]
    AbsoluteSymlink {
        path: String,
        link: String,
        target: String,
        action: Action,
    },
    #[error(
        "`{link}` is a symlink (to `{target}`); files are never {} through a symlink{}",
        action.participle(),
        resolved.as_deref().map(|r| format!(": use `{r}` instead")).unwrap_or_default()
    )]
    ThroughSymlink {
        path: String,
        link: String,
        target: String,
        resolved: Option<String>,
        action: Action,
    },
    #[error("`{path}` runs into a symlink loop (or a chain of more than 40 symlinks)")]
    SymlinkLoop { path: String },
    #[error(
        "`{path}` has {links} hard links; refusing to {} through a hard link (another link may lie outside the worktree)", action.verb()
    )]
    HardLinked {
        path: String,
        links: u64,
        action: Action,
    },
    #[error("`{path}` does not exist in the worktree")]
    NotFound { path: String },
    #[error("`{path}` already exists; choose another name or remove it first")]
    AlreadyExists { path: String },
    #[error("`{path}` is not a directory")]
    NotADirectory { path: String },
    #[error("`{path}` is a directory, not a file")]
    IsADirectory { path: String },
    #[error(
        "`{path}` is not a regular file (it is a device, socket or pipe); only files, directories and symlinks are handled"
    )]
    NotAFile { path: String },
    #[error("`{path}` is the worktree root itself and cannot be {}", action.participle())]
    IsRoot { path: String, action: Action },
    #[error("cannot move `{from}` into itself (`{to}`)")]
    MoveIntoItself { from: String, to: String },
    #[error("`{path}` is not UTF-8 text; read it as bytes instead")]
    NotUtf8 { path: String },
    #[error("cannot open the worktree root {}: {source}", root.display())]
    OpenRoot {
        root: PathBuf,
        source: std::io::Error,
    },
    #[error("{} is git metadata, not a worktree; open the worktree's top directory instead", root.display())]
    RootIsGitMetadata { root: PathBuf },
    #[error(
        "cannot follow the git link {}: {reason}; repair the worktree (`git worktree repair`)", path.display()
    )]
    GitLink { path: PathBuf, reason: String },
    #[error("could not {op} `{path}`: {source}")]
    Io {
        path: String,
        op: &'static str,
        source: std::io::Error,
    },
}

impl ConfineError {
    /// Returns true if and only if the error comes from the machine (a failing disk, a broken
    /// worktree) rather than from the path the caller asked for.
    ///
    /// Tool layers hand the other errors back to the model as a readable answer; these abort.
    /// I/O errors a caller can act on (a name too long, a permission or read-only file system)
    /// count as answers.
    pub fn is_infrastructure(&self) -> bool {
        match self {
            ConfineError::OpenRoot { .. }
            | ConfineError::RootIsGitMetadata { .. }
            | ConfineError::GitLink { .. } => true,
            ConfineError::Io { source, .. } => !matches!(
                source.raw_os_error(),
                Some(
                    libc::ENAMETOOLONG
                        | libc::EACCES
                        | libc::EPERM
                        | libc::EROFS
                        | libc::ELOOP
                        | libc::EXDEV
                        | libc::ENOTEMPTY
                )
            ),
            _ => false,
        }
    }
}

/// Returns ", so `path` cannot be …" when the offending link is only part of `path`.
fn via(path: &str, link: &str, action: Action) -> String {
    if path == link {
        format!("; refusing to {} it", action.verb())
    } else {
        format!(", so `{path}` cannot be {}", action.participle())
    }
}
