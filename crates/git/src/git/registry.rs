//! Reads the repository's worktree registrations and removes packet worktrees and branches
//! without losing work.
//!
//! Removal is where work gets lost, so it refuses unless everything in the worktree is either
//! committed or held by a backup ref (see `backup`), and branch deletion refuses unless the
//! branch is merged or backed up. Both go through the `git` CLI so plain git stays the authority
//! on what is registered.

use std::path::{Path, PathBuf};

use super::backup::{self, BACKUP_PREFIX};
use super::set_aside::{self, SetAside};
use super::worktree::WorktreeError;
use super::{GitError, RepoInfo};

/// One worktree as `git worktree list --porcelain` describes it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorktreeEntry {
    /// The worktree's directory.
    pub path: PathBuf,
    /// The commit HEAD points at (`None` for a bare repository).
    pub head: Option<String>,
    /// The full name of the checked-out branch (`refs/heads/…`), `None` when detached or bare.
    pub branch: Option<String>,
    /// True for the bare repository entry.
    pub bare: bool,
    /// The lock reason (possibly empty) when the worktree is locked.
    pub locked: Option<String>,
    /// Why git considers the registration stale (its directory is gone), if it does.
    pub prunable: Option<String>,
}

impl WorktreeEntry {
    /// Returns the branch's short name (`refs/heads/` removed), `None` when detached or bare.
    pub fn branch_name(&self) -> Option<&str> {
        self.branch.as_deref()?.strip_prefix("refs/heads/")
    }
}

/// Returns every worktree of `repo`, the main working tree first, as git lists them.
pub fn list(repo: &RepoInfo) -> Result<Vec<WorktreeEntry>, WorktreeError> {
    let out = repo.git().run(["worktree", "list", "--porcelain", "-z"])?;
    Ok(parse_porcelain(&out))
}

/// Parses `git worktree list --porcelain -z`: NUL-terminated lines, an empty one ends a record.
fn parse_porcelain(out: &str) -> Vec<WorktreeEntry> {
    let mut entries = Vec::new();
    let mut current: Option<WorktreeEntry> = None;
    for line in out.split('\0') {
        if line.is_empty() {
            entries.extend(current.take());
            continue;
        }
        let (key, value) = line.split_once(' ').unwrap_or((line, ""));
        if key == "worktree" {
            entries.extend(current.take());
            current = Some(WorktreeEntry {
                path: PathBuf::from(value),
                head: None,
                branch: None,
                bare: false,
                locked: None,
                prunable: None,
            });
            continue;
        }
        let Some(entry) = current.as_mut() else {
            continue;
        };
        match key {
            "HEAD" => entry.head = Some(value.to_string()),
            "branch" => entry.branch = Some(value.to_string()),
            "bare" => entry.bare = true,
            "locked" => entry.locked = Some(value.to_string()),
            "prunable" => entry.prunable = Some(value.to_string()),
            _ => {}
        }
    }
    entries.extend(current);
    entries
}

/// Removes the linked worktree at `worktree` so that `git worktree list` no longer shows it,
/// refusing while it holds changes that are neither committed nor held by a backup ref under
/// `refs/orchestra/backup/`.
///
/// The branch is kept. Callers back up first (`backup`), and must make sure nothing writes into
/// the worktree between the backup and this call. Ignored files (build output, copied `.env`)
/// and nested repositories are deleted with the directory: `gc` saves them first (see
/// `leftovers`). Stale registrations are pruned afterwards.
///
/// Only the unregistering holds the registration lock: the directory is renamed aside
/// (`set_aside`) and its files are deleted after the lock is released, so that parallel
/// removals do not wait for each other's deletions.
pub fn remove(repo: &RepoInfo, worktree: &Path) -> Result<(), WorktreeError> {
    remove_checked(repo, worktree, true)
}

/// Removes `worktree` as [`remove`] does; `check_saved` false skips the snapshot that proves
/// its files saved, for a caller that has just saved them (see `backup::backup_and_remove`).
pub(crate) fn remove_checked(
    repo: &RepoInfo,
    worktree: &Path,
    check_saved: bool,
) -> Result<(), WorktreeError> {
    let aside = {
        let _registrations = super::registration_lock();
        match remove_linked(repo, worktree, check_saved)? {
            Some(aside) => aside,
            None => return remove_listed(repo, worktree, check_saved),
        }
    };
    aside.delete()
}

/// Removes the worktree at `worktree` found in `git worktree list` through
/// `git worktree remove`, then prunes stale registrations; the caller holds the registration
/// lock.
fn remove_listed(repo: &RepoInfo, worktree: &Path, check_saved: bool) -> Result<(), WorktreeError> {
    let entries = list(repo)?;
    let Some(position) = entries.iter().position(|e| same_path(&e.path, worktree)) else {
        return Err(WorktreeError::NotAWorktree {
            path: worktree.to_path_buf(),
            repo: repo.toplevel.clone(),
        });
    };
    let entry = &entries[position];
    if position == 0 || entry.bare {
        return Err(WorktreeError::MainWorktree {
            path: entry.path.clone(),
        });
    }
    if let Some(reason) = &entry.locked {
        return Err(WorktreeError::Locked {
            path: entry.path.clone(),
            reason: reason.clone(),
        });
    }
    let git = repo.git();
    if entry.path.exists() {
        if check_saved && !backup::is_saved(repo, &entry.path)? {
            return Err(WorktreeError::UnsavedWork {
                path: entry.path.clone(),
            });
        }
        let path = entry.path.to_string_lossy().into_owned();
        git.run(["worktree", "remove", "--force", "--", &path])?;
    }
    git.prune_worktrees()?;
    Ok(())
}

/// Unregisters the existing worktree at `worktree` found through its own registration (see
/// `pinned::registration`), without listing every worktree, and returns its files set aside
/// for deletion; returns `None`, having done nothing, when it is not found that way. Stale
/// registrations are left for `git worktree prune` (`gc` runs it once at its end).
fn remove_linked(
    repo: &RepoInfo,
    worktree: &Path,
    check_saved: bool,
) -> Result<Option<SetAside>, WorktreeError> {
    let (Ok(top), Ok(common)) = (worktree.canonicalize(), repo.common_dir.canonicalize()) else {
        return Ok(None);
    };
    if common.parent() == Some(top.as_path()) {
        return Err(WorktreeError::MainWorktree { path: top });
    }
    let Some(admin) = super::pinned::registration(&common, &top) else {
        return Ok(None);
    };
    if let Ok(reason) = std::fs::read_to_string(admin.join("locked")) {
        return Err(WorktreeError::Locked {
            path: top,
            reason: reason.trim().to_string(),
        });
    }
    if check_saved && !backup::is_saved(repo, &top)? {
        return Err(WorktreeError::UnsavedWork { path: top });
    }
    // The files leave the worktree's path first, then the registration goes (a crash in
    // between leaves a stale registration that prune drops, and files `gc` deletes). When the
    // directory cannot be renamed, its files are deleted in place, as `git worktree remove
    // --force` does.
    let aside = match set_aside::set_aside(&top) {
        Some(aside) => aside,
        None => {
            remove_dir(&top)?;
            SetAside::deleted()
        }
    };
    remove_dir(&admin)?;
    Ok(Some(aside))
}

/// Deletes the directory `dir` and everything in it.
fn remove_dir(dir: &Path) -> Result<(), WorktreeError> {
    fs_err::remove_dir_all(dir).map_err(|source| WorktreeError::Io {
        path: dir.to_path_buf(),
        source,
    })
}

/// Returns the worktree registrations of `repo` read from their administrative directories,
/// without a git process: path, branch (`HEAD` when it names one), lock, and whether the
/// directory is gone. `head` is not resolved (`None`). The main working tree comes first.
pub fn registrations(repo: &RepoInfo) -> Vec<WorktreeEntry> {
    registrations_where(repo, |_| true)
}

/// Returns what [`registrations`] returns, but of the linked worktrees only those whose
/// registration may name `path`: the ones named after its directory name, as `git worktree add`
/// and gix name a registration (the name, sanitized for a ref, then a number when taken), so
/// that creating a packet's worktree reads a handful of registrations however many there are.
/// A worktree moved to `path` afterwards (`git worktree move`) keeps its old registration's
/// name and is not found this way; callers that may meet one read every registration.
pub(crate) fn registrations_named(repo: &RepoInfo, path: &Path) -> Vec<WorktreeEntry> {
    let Some(base) = path.file_name().and_then(|n| n.to_str()) else {
        return registrations(repo);
    };
    let sanitized = gix::validate::reference::name_partial_or_sanitize(base.into()).to_string();
    registrations_where(repo, |id| {
        let id = id.to_string_lossy();
        [base, sanitized.as_str()].iter().any(|stem| {
            id.strip_prefix(stem)
                .is_some_and(|rest| rest.bytes().all(|b| b.is_ascii_digit()))
        })
    })
}

/// Returns the main working tree and the linked worktrees whose registration's directory name
/// `wanted` accepts (the names are listed; only the wanted registrations' files are read).
fn registrations_where(
    repo: &RepoInfo,
    wanted: impl Fn(&std::ffi::OsStr) -> bool,
) -> Vec<WorktreeEntry> {
    let branch_of = |admin: &Path| {
        let head = std::fs::read_to_string(admin.join("HEAD")).unwrap_or_default();
        head.trim()
            .strip_prefix("ref:")
            .map(|r| r.trim().to_string())
    };
    let mut entries = Vec::new();
    // A bare repository's common directory is not a `.git` inside a working tree.
    if repo.common_dir.file_name().is_some_and(|n| n == ".git")
        && let Some(main) = repo.common_dir.parent()
    {
        entries.push(WorktreeEntry {
            path: main.to_path_buf(),
            head: None,
            branch: branch_of(&repo.common_dir),
            bare: false,
            locked: None,
            prunable: None,
        });
    }
    let Ok(dirs) = std::fs::read_dir(repo.common_dir.join("worktrees")) else {
        return entries;
    };
    for admin in dirs
        .flatten()
        .filter(|d| wanted(&d.file_name()))
        .map(|d| d.path())
    {
        let Ok(gitdir) = std::fs::read_to_string(admin.join("gitdir")) else {
            continue;
        };
        let named = admin.join(gitdir.trim());
        let Some(path) = named.parent().map(Path::to_path_buf) else {
            continue;
        };
        entries.push(WorktreeEntry {
            prunable: (!named.exists())
                .then(|| "gitdir file points to non-existent location".to_string()),
            path,
            head: None,
            branch: branch_of(&admin),
            bare: false,
            locked: std::fs::read_to_string(admin.join("locked"))
                .ok()
                .map(|r| r.trim().to_string()),
        });
    }
    entries
}

/// Deletes the local branch `branch`, refusing unless its tip is merged into `target` (any
/// commit-ish) or reachable from a backup ref, and unless no worktree has it checked out.
///
/// The deletion is a compare-and-swap on the tip that was checked, so a branch that moves in
/// between is kept.
pub fn delete_branch(repo: &RepoInfo, branch: &str, target: &str) -> Result<(), WorktreeError> {
    let git = repo.git();
    let full_ref = format!("refs/heads/{branch}");
    let Some(tip) = git.resolve_commit(&full_ref)? else {
        return Ok(());
    };
    if let Some(entry) = list(repo)?
        .into_iter()
        .find(|e| e.branch.as_deref() == Some(full_ref.as_str()))
    {
        return Err(WorktreeError::BranchCheckedOut {
            branch: branch.to_string(),
            path: entry.path,
        });
    }
    let merged = match git.resolve_commit(target)? {
        Some(target_id) => git.is_ancestor(&tip, &target_id)?,
        None => false,
    };
    let backed_up = || -> Result<bool, GitError> {
        let contains = format!("--contains={tip}");
        let refs = git.run([
            "for-each-ref",
            &contains,
            "--count=1",
            "--format=%(refname)",
            BACKUP_PREFIX,
        ])?;
        Ok(!refs.is_empty())
    };
    if !merged && !backed_up()? {
        return Err(WorktreeError::UnmergedBranch {
            branch: branch.to_string(),
            target: target.to_string(),
        });
    }
    git.delete_ref(&full_ref, &tip).map_err(GitError::from)?;
    Ok(())
}

/// Returns true if and only if `a` and `b` name the same directory, resolving symlinks where the
/// paths exist (git records real paths; callers may pass paths through symlinked temp dirs).
pub(crate) fn same_path(a: &Path, b: &Path) -> bool {
    a == b || resolved(a) == resolved(b)
}

/// Returns `path` with its longest existing prefix canonicalized and the rest appended.
fn resolved(path: &Path) -> PathBuf {
    let mut tail = Vec::new();
    let mut current = path;
    loop {
        if let Ok(real) = current.canonicalize() {
            return tail.iter().rev().fold(real, |acc, part| acc.join(part));
        }
        match (current.parent(), current.file_name()) {
            (Some(parent), Some(name)) => {
                tail.push(name.to_owned());
                current = parent;
            }
            _ => return path.to_path_buf(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn porcelain_parsing_reads_every_field() {
        let out = "worktree /r\0HEAD aaa\0branch refs/heads/main\0\0\
worktree /w/p 1\0HEAD bbb\0detached\0locked busy\0\0\
worktree /w/gone\0HEAD ccc\0branch refs/heads/orchestra/r/p\0prunable gitdir file points to non-existent location\0\0";
        let entries = parse_porcelain(out);
        assert_eq!(entries.len(), 3);
        assert_eq!(entries[0].branch_name(), Some("main"));
        assert_eq!(entries[1].path, PathBuf::from("/w/p 1"));
        assert_eq!(entries[1].branch, None);
        assert_eq!(entries[1].locked.as_deref(), Some("busy"));
        assert_eq!(entries[2].branch_name(), Some("orchestra/r/p"));
        assert!(entries[2].prunable.is_some());
    }

    #[test]
    fn registrations_named_read_those_named_after_the_path_and_find_a_stale_one() {
        use crate::git::testing::git;
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        let main = top.join("r");
        std::fs::create_dir(&main).unwrap();
        git(&main, &["init", "-q", "-b", "main"]);
        git(&main, &["commit", "-q", "--allow-empty", "-m", "a"]);
        for (dir, branch) in [("a/p1", "x"), ("b/p1", "y"), ("c/q1", "z"), ("d/p12", "w")] {
            let path = top.join(dir);
            git(
                &main,
                &[
                    "worktree",
                    "add",
                    "-q",
                    "-b",
                    branch,
                    path.to_str().unwrap(),
                ],
            );
        }
        // The second `p1` is registered as `p11`; its directory goes, the registration stays.
        std::fs::remove_dir_all(top.join("b/p1")).unwrap();
        let repo = RepoInfo::discover(&main).unwrap();
        let named = registrations_named(&repo, &top.join("b/p1"));
        let mut paths: Vec<_> = named.iter().map(|e| e.path.clone()).collect();
        paths.sort();
        let mut expected = [
            main.clone(),
            top.join("a/p1"),
            top.join("b/p1"),
            top.join("d/p12"),
        ];
        expected.sort();
        assert_eq!(paths, expected);
        let stale = named.iter().find(|e| e.path == top.join("b/p1")).unwrap();
        assert_eq!(stale.branch.as_deref(), Some("refs/heads/y"));
        assert!(stale.prunable.is_some());
        assert_eq!(registrations(&repo).len(), 5);
    }

    /// Parallel removals used to run one at a time: each deleted its worktree's files while
    /// holding the registration lock. Here a lock taken while the removal runs must find the
    /// registration gone and files still being deleted.
    #[test]
    fn removal_deletes_the_files_outside_the_registration_lock() {
        use crate::git::testing::git;
        let tmp = tempfile::tempdir().unwrap();
        let top = tmp.path().canonicalize().unwrap();
        let main = top.join("r");
        std::fs::create_dir(&main).unwrap();
        git(&main, &["init", "-q", "-b", "main"]);
        std::fs::write(main.join(".gitignore"), "junk/\n").unwrap();
        git(&main, &["add", ".gitignore"]);
        git(&main, &["commit", "-q", "-m", "a"]);
        let run = top.join("run");
        let wt = run.join("p");
        git(
            &main,
            &["worktree", "add", "-q", "-b", "p", wt.to_str().unwrap()],
        );
        // Ignored build output: many files, so that deleting them takes a while.
        for d in 0..30 {
            let dir = wt.join(format!("junk/{d}"));
            std::fs::create_dir_all(&dir).unwrap();
            for f in 0..250 {
                std::fs::write(dir.join(f.to_string()), "x").unwrap();
            }
        }
        let admin = main.join(".git/worktrees/p");
        assert!(admin.exists());
        let repo = RepoInfo::discover(&main).unwrap();
        let overlapped = std::thread::scope(|s| {
            let remover = s.spawn(|| remove(&repo, &wt));
            let mut overlapped = false;
            while !remover.is_finished() {
                let _lock = crate::git::registration_lock();
                let files_left = std::fs::read_dir(&run).unwrap().next().is_some();
                overlapped |= !admin.exists() && files_left;
            }
            remover.join().unwrap().unwrap();
            overlapped
        });
        assert!(!wt.exists());
        assert!(!admin.exists());
        assert_eq!(
            std::fs::read_dir(&run).unwrap().count(),
            0,
            "files left behind"
        );
        assert!(
            overlapped,
            "the files were deleted under the registration lock"
        );
    }

    #[test]
    fn same_path_sees_through_symlinks_and_missing_tails() {
        let tmp = std::env::temp_dir();
        let real = tmp.canonicalize().unwrap_or(tmp.clone());
        assert!(same_path(
            &tmp.join("no/such/dir"),
            &real.join("no/such/dir")
        ));
        assert!(!same_path(&tmp.join("a"), &tmp.join("b")));
    }
}
