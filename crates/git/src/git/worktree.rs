//! Creates and validates the worktree a packet works in, resuming instead of duplicating.
//!
//! A run that is started again must find its packets where it left them: an existing worktree on
//! the packet's branch is reused (and may be dirty, which is reported, not "fixed"), a branch that
//! already has commits is checked out again at its tip and never reset, and anything unexpected at
//! the destination is refused without touching it.

use std::path::{Path, PathBuf};

use super::checkout::{self, CheckoutMethod, CheckoutStats};
use super::registry::{self, same_path};
use super::{Git, GitError, RepoInfo};

/// Why a worktree could not be created, validated, backed up or removed; each says how to fix it.
#[derive(Debug, thiserror::Error)]
pub enum WorktreeError {
    #[error(
        "`{branch}` is not a valid branch name ({reason}); use letters, digits, `-`, `_` and `/`"
    )]
    InvalidBranch { branch: String, reason: String },
    #[error("unknown base `{base}`: no commit by that name; pass a full commit id that exists")]
    UnknownBase { base: String },
    #[error(
        "{path} already exists and is not a worktree of this repository; move it away or choose another worktree directory (if it is a moved worktree, `git worktree repair {path}` registers it again)"
    )]
    PathOccupied { path: PathBuf },
    #[error("{path} does not exist; create the worktree first")]
    Missing { path: PathBuf },
    #[error(
        "{path} is not a linked worktree of the repository at {repo}; check the path or run `git worktree list`"
    )]
    NotAWorktree { path: PathBuf, repo: PathBuf },
    #[error("{path} is the main working tree; only packet worktrees can be removed")]
    MainWorktree { path: PathBuf },
    #[error(
        "worktree {path} is on {actual} but should be on branch `{expected}`; check out `{expected}` there or remove the worktree"
    )]
    WrongBranch {
        path: PathBuf,
        expected: String,
        actual: String,
    },
    #[error(
        "branch `{branch}` is already checked out in {path}; remove that worktree or pick another branch"
    )]
    BranchCheckedOut { branch: String, path: PathBuf },
    #[error(
        "worktree {path} has uncommitted or untracked changes ({changed} path(s)); commit or back them up first"
    )]
    Dirty { path: PathBuf, changed: usize },
    #[error(
        "worktree {path} is locked ({reason}); run `git worktree unlock {path}` if nothing uses it"
    )]
    Locked { path: PathBuf, reason: String },
    #[error(
        "worktree {path} has changes that no backup holds; back them up (refs/orchestra/backup/…) before removing it"
    )]
    UnsavedWork { path: PathBuf },
    #[error(
        "branch `{branch}` has commits that are neither merged into {target} nor backed up; merge or back it up before deleting it"
    )]
    UnmergedBranch { branch: String, target: String },
    #[error(
        "`{refname}` is not a valid backup ref name; use a full name such as refs/orchestra/backup/<run>/<packet>"
    )]
    InvalidRef { refname: String },
    #[error(
        "{refname} moved while a backup was being written; run the backup again (the earlier one is kept)"
    )]
    RefMoved { refname: String },
    #[error(
        "cannot save everything in worktree {path} before removing it: {reason}; nothing was removed"
    )]
    CannotSave { path: PathBuf, reason: String },
    #[error("checking out {path} failed: {message}")]
    Checkout { path: PathBuf, message: String },
    #[error(
        "{path}/.git was changed from within the worktree (it is {found}); the engine runs no git through it{}",
        match (repaired, saved) {
            (false, _) => String::new(),
            (true, None) => "; the link to the worktree's registered git directory is back".to_string(),
            (true, Some(s)) => format!("; the link to the worktree's registered git directory is back, and what replaced it is kept at {}", s.display()),
        }
    )]
    GitLinkChanged {
        path: PathBuf,
        found: String,
        /// Whether the link was put back.
        repaired: bool,
        /// Where what replaced the link was moved, when something did.
        saved: Option<PathBuf>,
    },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error(transparent)]
    Git(#[from] GitError),
}

/// How `create` treats an existing worktree that has uncommitted or untracked changes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Reuse {
    /// Reuse it and report `Created::Reused { dirty: true }` (resuming a packet mid-work).
    #[default]
    ReportDirty,
    /// Refuse with `WorktreeError::Dirty`.
    RequireClean,
}

/// Where and on which branch a packet's worktree should live.
#[derive(Debug, Clone, Copy)]
pub struct WorktreeRequest<'a> {
    /// The repository the worktree belongs to.
    pub repo: &'a RepoInfo,
    /// The worktree directory; need not exist.
    pub path: &'a Path,
    /// The branch's short name (e.g. `orchestra/<run>/<packet>`).
    pub branch: &'a str,
    /// The commit a new branch starts at (ignored when the branch already exists).
    pub base: &'a str,
    /// What to do when the worktree already exists and is dirty.
    pub reuse: Reuse,
}

/// How `create` obtained the worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Created {
    /// A new branch at the base and a fresh, clean checkout.
    Fresh,
    /// The worktree already existed on the branch and was validated.
    Reused { dirty: bool },
    /// The branch existed (maybe with commits); the worktree was checked out again at its tip.
    Recreated,
    /// A clean worktree parked in the pool (see [`super::recycle`]) was moved here and checked
    /// out on the branch, rewriting only the files that differ.
    Recycled {
        /// Where the worktree was parked.
        from: PathBuf,
    },
}

/// A packet worktree that exists and is on its branch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Worktree {
    /// The worktree's top directory, absolute.
    pub path: PathBuf,
    /// The branch's short name.
    pub branch: String,
    /// The commit HEAD points at.
    pub head: String,
}

/// What `validate` found in a worktree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeStatus {
    /// The worktree's top directory as git reports it.
    pub path: PathBuf,
    /// The commit HEAD points at.
    pub head: String,
    /// How many paths `git status` lists (modified, staged, deleted or untracked, not ignored).
    pub changed: usize,
}

impl WorktreeStatus {
    /// Returns true if and only if the worktree has uncommitted or untracked changes.
    pub fn dirty(&self) -> bool {
        self.changed > 0
    }
}

/// Returns the packet's worktree on `req.branch`, creating, re-creating or reusing it.
///
/// A new branch starts at `req.base`; an existing branch is checked out at its current tip, so
/// commits made in an earlier attempt survive. A fresh checkout must validate clean, otherwise
/// the checkout itself was wrong. Bad input (invalid branch, unknown base, an occupied path, a
/// branch checked out elsewhere) is refused before anything is written.
pub fn create(req: &WorktreeRequest) -> Result<(Worktree, Created), WorktreeError> {
    let choice = super::recycle::choose(req, &absolute(req.path)?)?;
    finish(req, create_unverified(req, &choice)?)
}

/// A worktree [`create_unverified`] left: ready, or freshly registered or recycled, its files
/// still to be checked out and validated by [`finish`].
pub(crate) enum Unverified {
    /// Reused, and validated already.
    Ready(Worktree, Created),
    /// Taken from the pool and moved to its path, not yet on its branch nor validated; `base`
    /// is the full id of the commit a missing branch starts at.
    Recycling {
        path: PathBuf,
        taken: super::recycle::Taken,
        base: String,
    },
    /// Registered (fresh, or re-created on its branch's tip), not yet checked out nor
    /// validated; `base` is the start of a branch this call created.
    Registered {
        path: PathBuf,
        kind: Created,
        registered: checkout::Registered,
        base: String,
    },
}

/// Does what [`create`] does up to the checkout of a new worktree's files and its validation,
/// which [`finish`] does: the part that registers a worktree, which a process does one at a
/// time (see `registration_lock`), apart from writing the files and the `git status` that reads
/// them, which need not wait. A parked worktree is taken only if it is the one `choice` names
/// (see [`super::recycle::choose`], which checks it before the lock).
pub(crate) fn create_unverified(
    req: &WorktreeRequest,
    choice: &super::recycle::Choice,
) -> Result<Unverified, WorktreeError> {
    let git = req.repo.git();
    let full_ref = checkout::branch_ref(req.branch)?;
    let repo = checkout::open(&req.repo.toplevel)?;
    // Plans pass full ids; anything else is resolved by git (tags, abbreviations, names).
    let base = if checkout::is_commit(&repo, req.base) {
        req.base.to_string()
    } else {
        git.resolve_commit(req.base)?
            .ok_or_else(|| WorktreeError::UnknownBase {
                base: req.base.to_string(),
            })?
    };
    let path = absolute(req.path)?;
    let resolved = WorktreeRequest {
        base: &base,
        ..*req
    };
    if let Some(taken) = super::recycle::recycle(&resolved, &path, choice)? {
        return Ok(Unverified::Recycling { path, taken, base });
    }
    let existing_tip = checkout::branch_tip(&repo, &full_ref)?;
    let full_ref_text = full_ref.as_bstr().to_string();
    // Read from the registrations' files, not `git worktree list` (which resolves every
    // worktree's HEAD). A new packet's branch is checked out nowhere yet and a registration of
    // its path is named after it, so only those are read (see `registrations_named`): a cost
    // that does not grow with the number of worktrees. A packet coming back (its branch or its
    // directory exists) may meet its branch checked out elsewhere, or its worktree recycled
    // into the path under another registration's name: then every registration is read.
    let every = existing_tip.is_some() || path.exists();
    let read = |repo: &RepoInfo| {
        if every {
            registry::registrations(repo)
        } else {
            registry::registrations_named(repo, &path)
        }
    };
    let mut entries = read(req.repo);

    if let Some(entry) = entries.iter().find(|e| same_path(&e.path, &path)) {
        if path.exists() {
            let (worktree, created) = reuse(req, &path)?;
            return Ok(Unverified::Ready(worktree, created));
        }
        if let Some(reason) = &entry.locked {
            return Err(WorktreeError::Locked {
                path,
                reason: reason.clone(),
            });
        }
        // The directory is gone but still registered: drop the stale registration (it holds
        // no files) so the path can be registered again.
        git.prune_worktrees()?;
        entries = read(req.repo);
    }
    check_destination_free(&path)?;
    // gix would refuse both too, but by opening every registered worktree (see
    // `checkout::add_checked_out_in`); these checks are the ones it relies on.
    if let Some(entry) = entries.iter().find(|e| same_path(&e.path, &path)) {
        return Err(WorktreeError::PathOccupied {
            path: entry.path.clone(),
        });
    }
    if existing_tip.is_some()
        && let Some(other) = entries
            .iter()
            .find(|e| e.branch.as_deref() == Some(full_ref_text.as_str()))
    {
        return Err(WorktreeError::BranchCheckedOut {
            branch: req.branch.to_string(),
            path: other.path.clone(),
        });
    }
    let kind = if existing_tip.is_some() {
        Created::Recreated
    } else {
        checkout::create_branch(&repo, &full_ref, &base)?;
        Created::Fresh
    };

    match checkout::register_in(&repo, &path, &full_ref, CheckoutMethod::Auto) {
        Ok(registered) => Ok(Unverified::Registered {
            path,
            kind,
            registered,
            base,
        }),
        Err(e) => {
            roll_back(req, kind, &base);
            Err(e)
        }
    }
}

/// Checks out the files of the new or recycled worktree [`create_unverified`] registered or
/// moved, validates it (it must be clean on its branch) and returns the worktree; a failed
/// checkout or validation of a new one rolls back the branch the creation made.
pub(crate) fn finish(
    req: &WorktreeRequest,
    unverified: Unverified,
) -> Result<(Worktree, Created), WorktreeError> {
    let (path, kind, registered, base) = match unverified {
        Unverified::Ready(worktree, created) => return Ok((worktree, created)),
        Unverified::Recycling { path, taken, base } => {
            let resolved = WorktreeRequest {
                base: &base,
                ..*req
            };
            taken.check_out(&resolved, &path)?;
            let worktree = verify_recycled(req, path)?;
            return Ok((worktree, Created::Recycled { from: taken.from }));
        }
        Unverified::Registered {
            path,
            kind,
            registered,
            base,
        } => (path, kind, registered, base),
    };
    match registered
        .check_out()
        .and_then(|stats| verify_fresh(req, &path, stats))
    {
        Ok(head) => Ok((
            Worktree {
                path,
                branch: req.branch.to_string(),
                head,
            },
            kind,
        )),
        Err(e) => {
            roll_back(req, kind, &base);
            Err(e)
        }
    }
}

/// Validates a worktree just recycled to `path`: it must be clean on its branch.
///
/// It was found clean (untracked files included) before it was taken, and a `git checkout
/// --force` of the branch, which succeeded, rewrote what differed: where HEAD's file says it
/// is on the branch, that is what a status would find, and none is read. Otherwise a status
/// decides.
fn verify_recycled(req: &WorktreeRequest, path: PathBuf) -> Result<Worktree, WorktreeError> {
    let git = Git::pinned(&req.repo.common_dir, &path)?;
    if let Some(head) = git.head_on_branch(req.branch) {
        return Ok(Worktree {
            path,
            branch: req.branch.to_string(),
            head,
        });
    }
    let status = validate(req.repo, &path, req.branch)?;
    if status.dirty() {
        return Err(WorktreeError::Checkout {
            path,
            message: format!(
                "the recycled checkout is not clean ({} path(s) differ from the branch)",
                status.changed
            ),
        });
    }
    Ok(Worktree {
        path,
        branch: req.branch.to_string(),
        head: status.head,
    })
}

/// Deletes the branch a failed fresh creation made. Only a branch this creation made is rolled
/// back, and only if it still points at the base (compare-and-swap), so no commit can be lost.
fn roll_back(req: &WorktreeRequest, kind: Created, base: &str) {
    if kind == Created::Fresh
        && let Ok(full_ref) = checkout::branch_ref(req.branch)
    {
        let _ = req
            .repo
            .git()
            .delete_ref(&full_ref.as_bstr().to_string(), base);
    }
}

/// Returns what a worktree at `path` looks like: it must exist, be a worktree of `repo` (its top
/// directory, not a subdirectory) whose `.git` still points at its registration (see
/// [`Git::pinned`]) and have HEAD attached to `branch`.
///
/// Dirtiness is reported, not refused: a resumed packet legitimately has work in progress.
pub fn validate(
    repo: &RepoInfo,
    path: &Path,
    branch: &str,
) -> Result<WorktreeStatus, WorktreeError> {
    if !path.is_dir() {
        return Err(WorktreeError::Missing {
            path: path.to_path_buf(),
        });
    }
    // Pinned: the registration must name this directory (not a subdirectory of a worktree,
    // not another repository's), and git runs with it whatever `.git` says now.
    let git = Git::pinned(&repo.common_dir, path)?;
    let status = git.run([
        "status",
        "--porcelain=v2",
        "--branch",
        "-z",
        "--untracked-files=normal",
    ])?;
    let parsed = parse_status(&status);
    if parsed.branch.as_deref() != Some(branch) {
        return Err(WorktreeError::WrongBranch {
            path: path.to_path_buf(),
            expected: branch.to_string(),
            actual: match parsed.branch {
                Some(other) => format!("branch `{other}`"),
                None => "a detached HEAD".to_string(),
            },
        });
    }
    Ok(WorktreeStatus {
        path: git.dir().to_path_buf(),
        head: parsed.head.unwrap_or_default(),
        changed: parsed.changed,
    })
}

/// Validates an existing worktree for reuse and applies the request's dirty policy.
fn reuse(req: &WorktreeRequest, path: &Path) -> Result<(Worktree, Created), WorktreeError> {
    let status = validate(req.repo, path, req.branch)?;
    if req.reuse == Reuse::RequireClean && status.dirty() {
        return Err(WorktreeError::Dirty {
            path: path.to_path_buf(),
            changed: status.changed,
        });
    }
    let dirty = status.dirty();
    Ok((
        Worktree {
            path: path.to_path_buf(),
            branch: req.branch.to_string(),
            head: status.head,
        },
        Created::Reused { dirty },
    ))
}

/// Validates a worktree that was just checked out; it must be clean. Returns its HEAD.
fn verify_fresh(
    req: &WorktreeRequest,
    path: &Path,
    stats: CheckoutStats,
) -> Result<String, WorktreeError> {
    tracing::debug!(path = %path.display(), files = stats.files, bytes = stats.bytes, method = ?stats.method, "checked out");
    let status = validate(req.repo, path, req.branch)?;
    if status.dirty() {
        return Err(WorktreeError::Checkout {
            path: path.to_path_buf(),
            message: format!(
                "the new checkout is not clean ({} path(s) differ from the branch)",
                status.changed
            ),
        });
    }
    Ok(status.head)
}

/// The parts of `git status --porcelain=v2 --branch -z` that validation needs.
#[derive(Debug, Default, PartialEq, Eq)]
struct ParsedStatus {
    head: Option<String>,
    branch: Option<String>,
    changed: usize,
}

/// Parses `git status --porcelain=v2 --branch -z`; a rename or copy carries an extra path.
fn parse_status(status: &str) -> ParsedStatus {
    let mut parsed = ParsedStatus::default();
    let mut fields = status.split('\0').filter(|f| !f.is_empty());
    while let Some(entry) = fields.next() {
        if let Some(oid) = entry.strip_prefix("# branch.oid ") {
            parsed.head = Some(oid.to_string());
        } else if let Some(head) = entry.strip_prefix("# branch.head ") {
            parsed.branch = (head != "(detached)").then(|| head.to_string());
        } else if entry.starts_with('#') {
            continue;
        } else {
            parsed.changed += 1;
            if entry.starts_with("2 ") {
                fields.next();
            }
        }
    }
    parsed
}

/// Refuses a destination that exists and is anything but an empty directory.
fn check_destination_free(path: &Path) -> Result<(), WorktreeError> {
    let occupied = || WorktreeError::PathOccupied {
        path: path.to_path_buf(),
    };
    match fs_err::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(WorktreeError::Io {
            path: path.to_path_buf(),
            source: e,
        }),
        Ok(meta) if !meta.is_dir() => Err(occupied()),
        Ok(_) => {
            let mut entries = fs_err::read_dir(path).map_err(|source| WorktreeError::Io {
                path: path.to_path_buf(),
                source,
            })?;
            if entries.next().is_some() {
                Err(occupied())
            } else {
                Ok(())
            }
        }
    }
}

/// Returns `path` made absolute against the current directory.
pub(crate) fn absolute(path: &Path) -> Result<PathBuf, WorktreeError> {
    std::path::absolute(path).map_err(|source| WorktreeError::Io {
        path: path.to_path_buf(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_parsing_counts_renames_once_and_reads_the_branch() {
        let out = "# branch.oid abc\0# branch.head orchestra/r/p\0\
1 .M N... 100644 100644 100644 a b src/x.rs\0\
2 R. N... 100644 100644 100644 a b R100 new.rs\0old.rs\0? untracked.txt\0";
        assert_eq!(
            parse_status(out),
            ParsedStatus {
                head: Some("abc".into()),
                branch: Some("orchestra/r/p".into()),
                changed: 3,
            }
        );
        let detached = parse_status("# branch.oid abc\0# branch.head (detached)\0");
        assert_eq!(detached.branch, None);
        assert_eq!(detached.changed, 0);
    }
}
