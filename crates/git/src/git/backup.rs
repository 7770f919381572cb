//! Saves a worktree's uncommitted and untracked work to a backup ref without touching it.
//!
//! The snapshot is built in a temporary index (`GIT_INDEX_FILE`), seeded from a copy of the
//! worktree's own index so unchanged files are not re-hashed: `git add -A` there records
//! modifications, deletions and untracked (not ignored) files, `git write-tree` turns it into a
//! tree. The worktree's files and its real index are never written, so an agent working in it
//! sees nothing. Each snapshot is a commit whose first parent is the worktree's HEAD and whose
//! second parent is the previous backup under the same ref, so no older backup becomes
//! unreachable.

use std::path::{Path, PathBuf};

use super::refs::{Expected, RefError};
use super::worktree::WorktreeError;
use super::{Git, GitError, RepoInfo};

/// The namespace backup refs live in: `refs/orchestra/backup/<run>/<packet>`.
pub const BACKUP_PREFIX: &str = "refs/orchestra/backup/";

/// A worktree's state as a tree, next to the commit it started from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Snapshot {
    /// The commit HEAD points at.
    pub head: String,
    /// HEAD's tree.
    pub head_tree: String,
    /// The tree of the worktree's files as they are now (tracked and untracked, not ignored).
    pub tree: String,
}

impl Snapshot {
    /// Returns true if and only if the files differ from HEAD.
    pub fn has_changes(&self) -> bool {
        self.tree != self.head_tree
    }
}

/// Saves the uncommitted and untracked work in the worktree of `git` (its pinned runner, see
/// [`Git::pinned`]) as a commit under `refname` and returns its id, or `None` when the files
/// equal HEAD and there is nothing to save.
///
/// When the same state is already the ref's tip, that commit is returned and nothing is
/// written. The ref is updated with compare-and-swap, so a concurrent backup makes this one fail
/// (`RefMoved`) instead of dropping either.
pub fn backup(git: &Git, refname: &str, message: &str) -> Result<Option<String>, WorktreeError> {
    check_refname(git, refname)?;
    let snap = snapshot(git)?;
    if !snap.has_changes() {
        return Ok(None);
    }
    let previous = git.resolve(refname)?;
    if let Some(prev) = &previous
        && git.resolve(&format!("{prev}^{{tree}}"))?.as_deref() == Some(snap.tree.as_str())
        && git.resolve(&format!("{prev}^1"))?.as_deref() == Some(snap.head.as_str())
    {
        return Ok(Some(prev.clone()));
    }
    let mut parents = vec![snap.head.as_str()];
    if let Some(prev) = &previous {
        parents.push(prev.as_str());
    }
    // Under the engine's identity, so a backup never fails for want of `user.name`.
    let commit = git.commit_tree(&snap.tree, &parents, message)?;
    let expected = match &previous {
        Some(prev) => Expected::At(prev),
        None => Expected::Absent,
    };
    match git.update_ref(refname, &commit, expected, Some(message)) {
        Ok(()) => Ok(Some(commit)),
        Err(RefError::RefMoved { .. }) => Err(WorktreeError::RefMoved {
            refname: refname.to_string(),
        }),
        Err(RefError::Git(e)) => Err(e.into()),
    }
}

/// Saves the worktree of `git` (its pinned runner, at `worktree` of `repo`) as [`backup`] does
/// and removes it as [`super::remove`] does, from one snapshot: the state just saved, or found
/// equal to HEAD, is what `remove` would check again. Returns the backup commit, if any.
///
/// As for `remove`, nothing may write into the worktree meanwhile (a released packet's).
pub fn backup_and_remove(
    repo: &RepoInfo,
    (git, worktree): (&Git, &Path),
    refname: &str,
    message: &str,
) -> Result<Option<String>, WorktreeError> {
    let saved = backup(git, refname, message)?;
    super::registry::remove_checked(repo, worktree, false)?;
    Ok(saved)
}

/// Returns the tree of the files of the worktree of `git` (its pinned runner) as they are
/// now, built in a temporary index.
pub fn snapshot(git: &Git) -> Result<Snapshot, WorktreeError> {
    let facts = git.run([
        "rev-parse",
        "--path-format=absolute",
        "--git-dir",
        "HEAD",
        "HEAD^{tree}",
    ])?;
    let lines: Vec<&str> = facts.lines().collect();
    let [git_dir, head, head_tree] = lines[..] else {
        return Err(WorktreeError::NotAWorktree {
            path: git.dir().to_path_buf(),
            repo: git.dir().to_path_buf(),
        });
    };
    let index = TempIndex::seeded_from(Path::new(git_dir))?;
    // `:/` so `add -A` covers the whole tree.
    let top = git.with_env("GIT_INDEX_FILE", &index.path).writing();
    top.run(["add", "--all", "--sparse", "--", ":/"])?;
    let tree = top.run(["write-tree"])?;
    Ok(Snapshot {
        head: head.to_string(),
        head_tree: head_tree.to_string(),
        tree,
    })
}

/// Returns true if and only if everything in `worktree` is committed or equals the tip of some
/// backup ref under `refs/orchestra/backup/`.
pub fn is_saved(repo: &RepoInfo, worktree: &Path) -> Result<bool, WorktreeError> {
    let snap = snapshot(&Git::pinned(&repo.common_dir, worktree)?)?;
    if !snap.has_changes() {
        return Ok(true);
    }
    let trees = repo
        .git()
        .run(["for-each-ref", "--format=%(tree)", BACKUP_PREFIX])?;
    Ok(trees.lines().any(|t| t == snap.tree))
}

/// Refuses ref names that are not full (`refs/…`) or that git would not accept.
fn check_refname(git: &Git, refname: &str) -> Result<(), WorktreeError> {
    let invalid = || WorktreeError::InvalidRef {
        refname: refname.to_string(),
    };
    if !refname.starts_with("refs/") {
        return Err(invalid());
    }
    if plainly_valid(refname) {
        return Ok(());
    }
    match git.run(["check-ref-format", refname]) {
        Ok(_) => Ok(()),
        Err(GitError::Failed { .. }) => Err(invalid()),
        Err(e) => Err(e.into()),
    }
}

/// Returns true if `refname` (under `refs/`) keeps to a subset of what git accepts — ASCII
/// letters, digits, `-`, `_`, `.` and `/`, no empty component, none starting with `.` or ending
/// with `.lock`, no `..`, no `.` at the end — so no `git check-ref-format` need confirm it; a
/// name outside the subset is left to git.
fn plainly_valid(refname: &str) -> bool {
    refname
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'/'))
        && !refname.contains("..")
        && !refname.ends_with('.')
        && refname
            .split('/')
            .all(|c| !c.is_empty() && !c.starts_with('.') && !c.ends_with(".lock"))
}

/// A private index file in the worktree's git directory, removed on drop.
struct TempIndex {
    path: PathBuf,
}

impl TempIndex {
    /// Returns a temporary index holding a copy of the worktree's index (stat data included, so
    /// `git add` re-hashes only changed files); without an index it starts empty.
    fn seeded_from(git_dir: &Path) -> Result<TempIndex, WorktreeError> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let path = git_dir.join(format!(
            "orchestra-snapshot-{}-{nanos}.index",
            std::process::id()
        ));
        let temp = TempIndex { path };
        match std::fs::copy(git_dir.join("index"), &temp.path) {
            Ok(_) => Ok(temp),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(temp),
            Err(source) => Err(WorktreeError::Io {
                path: temp.path.clone(),
                source,
            }),
        }
    }
}

impl Drop for TempIndex {
    fn drop(&mut self) {
        // Best effort: a leftover file in the git directory is harmless.
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::plainly_valid;

    #[test]
    fn the_names_taken_without_git_are_ones_git_accepts() {
        let names = [
            "refs/orchestra/backup/run-1/p1-review",
            "refs/orchestra/backup/run_2.x/p.1",
            "refs/a/.hidden",
            "refs/a/b.lock",
            "refs/a//b",
            "refs/a/b/",
            "refs/a/b.",
            "refs/a..b",
            "refs/a/b c",
            "refs/a/@{b}",
            "refs/a/b~1",
            "refs/a/é",
        ];
        for name in names {
            let git_accepts = std::process::Command::new("git")
                .args(["check-ref-format", name])
                .status()
                .unwrap()
                .success();
            if plainly_valid(name) {
                assert!(git_accepts, "{name} taken without git, refused by git");
            }
        }
        assert!(plainly_valid("refs/orchestra/backup/run-1/p1-review"));
        assert!(!plainly_valid("refs/a/b.lock"));
    }
}
