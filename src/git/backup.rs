//! Saves a worktree's uncommitted and untracked work to a backup ref without touching it.
//!
//! The snapshot is built in a temporary index (`GIT_INDEX_FILE`), seeded from a copy of the
//! worktree's own index so unchanged files are not re-hashed: `git add -A` there records
//! modifications, deletions and untracked (not ignored) files, `git write-tree` turns it into a
//! tree. The worktree's files and its real index are never written, so an agent working in it
//! sees nothing. Each snapshot is a commit whose first parent is the worktree's HEAD and whose
//! second parent is the previous backup under the same ref, so no older backup becomes
//! unreachable.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use super::worktree::WorktreeError;
use super::{Git, GitError, RepoInfo};

/// The namespace backup refs live in: `refs/orchestra/backup/<run>/<packet>`.
pub const BACKUP_PREFIX: &str = "refs/orchestra/backup/";

/// Identity used for backup commits only when git has none configured, so a backup never fails
/// for want of `user.name`.
const FALLBACK_IDENT: [(&str, &str); 4] = [
    ("GIT_AUTHOR_NAME", "git-orchestra"),
    ("GIT_AUTHOR_EMAIL", "git-orchestra@localhost"),
    ("GIT_COMMITTER_NAME", "git-orchestra"),
    ("GIT_COMMITTER_EMAIL", "git-orchestra@localhost"),
];

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

/// Saves the uncommitted and untracked work in `worktree` as a commit under `refname` and
/// returns its id, or `None` when the files equal HEAD and there is nothing to save.
///
/// When the same state is already the ref's tip, that commit is returned and nothing is
/// written. The ref is updated with compare-and-swap, so a concurrent backup makes this one fail
/// (`RefMoved`) instead of dropping either.
pub fn backup(
    worktree: &Path,
    refname: &str,
    message: &str,
) -> Result<Option<String>, WorktreeError> {
    let git = Git::new(worktree);
    check_refname(&git, refname)?;
    let snap = snapshot(worktree)?;
    if !snap.has_changes() {
        return Ok(None);
    }
    let previous = match git.run(["rev-parse", "--verify", "--quiet", refname]) {
        Ok(id) => Some(id),
        Err(GitError::Failed { .. }) => None,
        Err(e) => return Err(e.into()),
    };
    if let Some(prev) = &previous {
        let facts = format!("{prev}^{{tree}}");
        let first_parent = format!("{prev}^1");
        if let Ok(out) = git.run(["rev-parse", "--verify", "--quiet", &facts])
            && out == snap.tree
            && git.run(["rev-parse", "--verify", "--quiet", &first_parent])? == snap.head
        {
            return Ok(Some(prev.clone()));
        }
    }
    let mut args = vec!["commit-tree", snap.tree.as_str(), "-p", snap.head.as_str()];
    if let Some(prev) = &previous {
        args.extend(["-p", prev.as_str()]);
    }
    args.extend(["-m", message]);
    let commit = match run_env::<&str>(&git, &args, &[]) {
        Ok(id) => id,
        Err(GitError::Failed { stderr, .. })
            if stderr.contains("tell me who you are") || stderr.contains("ident") =>
        {
            run_env(&git, &args, &FALLBACK_IDENT)?
        }
        Err(e) => return Err(e.into()),
    };
    // An empty old value means "must not exist yet".
    let old = previous.as_deref().unwrap_or("");
    match git.run(["update-ref", "-m", message, refname, &commit, old]) {
        Ok(_) => Ok(Some(commit)),
        Err(GitError::Failed { .. }) => Err(WorktreeError::RefMoved {
            refname: refname.to_string(),
        }),
        Err(e) => Err(e.into()),
    }
}

/// Returns the tree of `worktree`'s files as they are now, built in a temporary index.
pub fn snapshot(worktree: &Path) -> Result<Snapshot, WorktreeError> {
    let git = Git::new(worktree);
    let facts = git.run([
        "rev-parse",
        "--path-format=absolute",
        "--git-dir",
        "--show-toplevel",
        "HEAD",
        "HEAD^{tree}",
    ])?;
    let lines: Vec<&str> = facts.lines().collect();
    let [git_dir, toplevel, head, head_tree] = lines[..] else {
        return Err(WorktreeError::NotAWorktree {
            path: worktree.to_path_buf(),
            repo: worktree.to_path_buf(),
        });
    };
    let index = TempIndex::seeded_from(Path::new(git_dir))?;
    // From the top so `add -A` covers the whole tree even when `worktree` is a subdirectory.
    let top = Git::new(toplevel);
    let env = [("GIT_INDEX_FILE", index.path.as_os_str())];
    run_env(&top, &["add", "--all", "--", ":/"], &env)?;
    let tree = run_env(&top, &["write-tree"], &env)?;
    Ok(Snapshot {
        head: head.to_string(),
        head_tree: head_tree.to_string(),
        tree,
    })
}

/// Returns true if and only if everything in `worktree` is committed or equals the tip of some
/// backup ref under `refs/orchestra/backup/`.
pub fn is_saved(repo: &RepoInfo, worktree: &Path) -> Result<bool, WorktreeError> {
    let snap = snapshot(worktree)?;
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
    match git.run(["check-ref-format", refname]) {
        Ok(_) => Ok(()),
        Err(GitError::Failed { .. }) => Err(invalid()),
        Err(e) => Err(e.into()),
    }
}

/// Runs `git <args>` with extra environment variables; returns stdout without the final newline.
fn run_env<V: AsRef<OsStr>>(
    git: &Git,
    args: &[&str],
    env: &[(&str, V)],
) -> Result<String, GitError> {
    let mut cmd = git.command(args);
    for (key, value) in env {
        cmd.env(key, value);
    }
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|source| GitError::Spawn { source })?;
    let printable = args.join(" ");
    if !out.status.success() {
        return Err(GitError::Failed {
            args: printable,
            code: out.status.code().unwrap_or(-1),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_string(),
        });
    }
    let mut text =
        String::from_utf8(out.stdout).map_err(|_| GitError::NotUtf8 { args: printable })?;
    if text.ends_with('\n') {
        text.pop();
    }
    Ok(text)
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
