//! Engine git in a worktree a worker used: pinned to the git directory registered when the
//! worktree was created, never to what the worktree's `.git` file says now.
//!
//! A worker (or a command an agent runs) may rewrite everything in its worktree, `.git`
//! included. Were the engine to follow that file, its `git add` and `git commit` would use a
//! git directory the worker built — its hooks, its configuration (`core.fsmonitor`, filters),
//! its objects and refs — outside any sandbox, or commit onto the user's own branch when the
//! file pointed at the main repository. So every engine git call in such a worktree runs with
//! `GIT_DIR` set to the registration found in the common directory (`worktrees/<id>`, whose
//! `gitdir` file names this worktree's `.git`) and `GIT_WORK_TREE` set to the worktree; the
//! `.git` file must still point there, otherwise it is put back (what replaced it is moved
//! beside the worktree, not deleted) and the call is refused; and hooks and fsmonitor are off
//! (`core.hooksPath=/dev/null`, `core.fsmonitor=false`) whatever any configuration says.

use std::path::{Path, PathBuf};

use super::Git;
use super::worktree::WorktreeError;

/// The settings every pinned runner passes with `-c`: no hook of any kind runs (a hooks path
/// that is not a directory holds none), and no fsmonitor command is started.
const HARDENING: [&str; 2] = ["core.hooksPath=/dev/null", "core.fsmonitor=false"];

impl Git {
    /// Returns a runner for `worktree`, a worktree of the repository whose common git directory
    /// is `common_dir`, pinned to the git directory registered for it (see the module comment).
    ///
    /// The main working tree is accepted when its `.git` is the common directory itself. A
    /// worktree that is not registered is refused (`NotAWorktree`); one whose `.git` was
    /// changed is repaired and refused (`GitLinkChanged`), so the caller stops before running
    /// anything there.
    pub fn pinned(common_dir: &Path, worktree: &Path) -> Result<Git, WorktreeError> {
        let (top, git_dir) = registered_git_dir(common_dir, worktree)?;
        Ok(Git::pinned_to(&top, &git_dir))
    }

    /// Does what [`Git::pinned`] does, but leaves a changed `.git` as it is (see
    /// [`registered_git_dir_unrepaired`]).
    pub fn pinned_unrepaired(common_dir: &Path, worktree: &Path) -> Result<Git, WorktreeError> {
        let (top, git_dir) = registered_git_dir_unrepaired(common_dir, worktree)?;
        Ok(Git::pinned_to(&top, &git_dir))
    }

    /// Returns a runner for the worktree `top` with `git_dir` as its git directory, hardened.
    pub(in crate::git) fn pinned_to(top: &Path, git_dir: &Path) -> Git {
        let mut git = Git::new(top)
            .with_env("GIT_DIR", git_dir)
            .with_env("GIT_WORK_TREE", top);
        for setting in HARDENING {
            git = git.with_config(setting);
        }
        git
    }
}

/// Returns the canonical top of `worktree` and the git directory registered for it in
/// `common_dir` (the common directory itself for the main working tree), after checking that
/// the worktree's `.git` still points there — putting it back and refusing when it does not,
/// as [`Git::pinned`] does.
pub fn registered_git_dir(
    common_dir: &Path,
    worktree: &Path,
) -> Result<(PathBuf, PathBuf), WorktreeError> {
    locate(common_dir, worktree, true)
}

/// Does what [`registered_git_dir`] does but never repairs: a changed `.git` is refused and
/// left as it is, for the engine's next step in the worktree to find (the tools an agent calls
/// while it works use this, so the packet's commit still sees what the agent did).
pub fn registered_git_dir_unrepaired(
    common_dir: &Path,
    worktree: &Path,
) -> Result<(PathBuf, PathBuf), WorktreeError> {
    locate(common_dir, worktree, false)
}

fn locate(
    common_dir: &Path,
    worktree: &Path,
    repair: bool,
) -> Result<(PathBuf, PathBuf), WorktreeError> {
    let not_a_worktree = || WorktreeError::NotAWorktree {
        path: worktree.to_path_buf(),
        repo: common_dir.to_path_buf(),
    };
    let top = worktree.canonicalize().map_err(|_| not_a_worktree())?;
    let common = common_dir.canonicalize().map_err(|_| not_a_worktree())?;
    if common.parent() == Some(top.as_path()) {
        check_main_link(&top, &common)?;
        return Ok((top, common));
    }
    let admin = registration(&common, &top).ok_or_else(not_a_worktree)?;
    check_link(&top, &admin, repair)?;
    Ok((top, admin))
}

/// Returns the registration directory (`<common>/worktrees/<id>`) whose `gitdir` file names
/// `<top>/.git`, where `common` and `top` are canonical.
///
/// The registration the worktree's `.git` names is tried first, so finding it costs the same
/// however many worktrees the repository has; only when that one does not name the worktree
/// back (the `.git` was changed, or the worktree moved) are all registrations read.
pub(crate) fn registration(common: &Path, top: &Path) -> Option<PathBuf> {
    if let Some(admin) = linked_registration(common, top) {
        return Some(admin);
    }
    let entries = std::fs::read_dir(common.join("worktrees")).ok()?;
    entries
        .flatten()
        .map(|e| e.path())
        .find(|admin| names_worktree(admin, top))
}

/// Returns the registration `<top>/.git` points at, when it is one of `common`'s and names
/// `top` back.
fn linked_registration(common: &Path, top: &Path) -> Option<PathBuf> {
    let link = top.join(".git");
    if !std::fs::symlink_metadata(&link).ok()?.is_file() {
        return None;
    }
    let text = std::fs::read_to_string(&link).ok()?;
    let named = top.join(text.trim().strip_prefix("gitdir:")?.trim());
    let id = named.file_name()?;
    let admin = common.join("worktrees").join(id);
    let same = named
        .canonicalize()
        .ok()
        .is_some_and(|n| admin.canonicalize().ok().is_some_and(|a| a == n));
    (same && names_worktree(&admin, top)).then_some(admin)
}

/// Returns true if and only if the registration `admin`'s `gitdir` file names `<top>/.git`.
fn names_worktree(admin: &Path, top: &Path) -> bool {
    std::fs::read_to_string(admin.join("gitdir")).is_ok_and(|text| {
        let named = admin.join(text.trim());
        named.file_name().is_some_and(|n| n == ".git")
            && named
                .parent()
                .and_then(|p| p.canonicalize().ok())
                .is_some_and(|p| p == top)
    })
}

/// Checks that `<top>/.git` is a file pointing at `admin`; otherwise puts such a file back
/// (when `repair`) and returns what was found.
fn check_link(top: &Path, admin: &Path, repair: bool) -> Result<(), WorktreeError> {
    let link = top.join(".git");
    let found = match std::fs::symlink_metadata(&link) {
        Ok(meta) if meta.is_file() => {
            let text = std::fs::read(&link).unwrap_or_default();
            let text = String::from_utf8_lossy(&text);
            let target = text.trim().strip_prefix("gitdir:").map(str::trim);
            match target {
                Some(t) if same_dir(&top.join(t), admin) => return Ok(()),
                Some(t) => format!("a file pointing at {t:?}"),
                None => "a file that names no git directory".to_string(),
            }
        }
        Ok(meta) if meta.is_dir() => "a directory".to_string(),
        Ok(_) => match std::fs::read_link(&link) {
            Ok(to) => format!("a symbolic link to {:?}", to),
            Err(_) => "something that is not a file".to_string(),
        },
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => "nothing".to_string(),
        Err(e) => return Err(io_error(&link, e)),
    };
    if !repair {
        return Err(WorktreeError::GitLinkChanged {
            path: top.to_path_buf(),
            found,
            repaired: false,
            saved: None,
        });
    }
    let saved = set_aside(top, &link)?;
    fs_err::write(&link, format!("gitdir: {}\n", admin.display()))
        .map_err(|e| io_error(&link, e))?;
    Err(WorktreeError::GitLinkChanged {
        path: top.to_path_buf(),
        found,
        repaired: true,
        saved,
    })
}

/// Checks that the main working tree's `.git` is the common directory itself (a directory, or
/// a `gitdir:` file pointing at it); refuses anything else without touching it.
fn check_main_link(top: &Path, common: &Path) -> Result<(), WorktreeError> {
    let link = top.join(".git");
    let ok = match std::fs::symlink_metadata(&link) {
        Ok(meta) if meta.is_dir() => same_dir(&link, common),
        Ok(meta) if meta.is_file() => std::fs::read_to_string(&link).is_ok_and(|text| {
            text.trim()
                .strip_prefix("gitdir:")
                .is_some_and(|t| same_dir(&top.join(t.trim()), common))
        }),
        _ => false,
    };
    if ok {
        return Ok(());
    }
    Err(WorktreeError::GitLinkChanged {
        path: top.to_path_buf(),
        found: "something other than the repository's git directory".to_string(),
        repaired: false,
        saved: None,
    })
}

/// Moves whatever is at `link` (if anything) beside the worktree, outside it, and returns where.
fn set_aside(top: &Path, link: &Path) -> Result<Option<PathBuf>, WorktreeError> {
    if std::fs::symlink_metadata(link).is_err() {
        return Ok(None);
    }
    let name = top
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    // A name no earlier set-aside took: two repairs within one millisecond must neither fail
    // nor replace the first one's saved `.git`.
    let stamp = orchestra_sys::exec::now_ms();
    let mut dest = top.with_file_name(format!("{name}.replaced-git-{stamp}"));
    let mut n = 1;
    while std::fs::symlink_metadata(&dest).is_ok() {
        dest = top.with_file_name(format!("{name}.replaced-git-{stamp}-{n}"));
        n += 1;
    }
    fs_err::rename(link, &dest).map_err(|e| io_error(link, e))?;
    Ok(Some(dest))
}

/// Returns true if and only if `a` and `b` are the same existing directory.
fn same_dir(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

fn io_error(path: &Path, source: std::io::Error) -> WorktreeError {
    WorktreeError::Io {
        path: path.to_path_buf(),
        source,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git;

    fn repo_with_worktree() -> (tempfile::TempDir, PathBuf, PathBuf) {
        let tmp = tempfile::tempdir().unwrap();
        let main = tmp.path().join("main");
        std::fs::create_dir(&main).unwrap();
        git(&main, &["init", "-q", "-b", "main"]);
        std::fs::write(main.join("a"), "a\n").unwrap();
        git(&main, &["add", "a"]);
        git(&main, &["commit", "-qm", "a"]);
        let wt = tmp.path().join("wt");
        git(
            &main,
            &["worktree", "add", "-q", "-b", "p", wt.to_str().unwrap()],
        );
        (tmp, main.join(".git"), wt)
    }

    #[test]
    fn a_pinned_runner_uses_the_registration_and_repairs_a_moved_link() {
        let (_tmp, common, wt) = repo_with_worktree();
        let git = Git::pinned(&common, &wt).unwrap();
        assert_eq!(git.head().unwrap().len(), 40);
        // The link now names the main repository's git directory: refused, put back, the
        // replaced file kept beside the worktree.
        std::fs::write(wt.join(".git"), format!("gitdir: {}\n", common.display())).unwrap();
        let err = Git::pinned(&common, &wt).unwrap_err();
        let WorktreeError::GitLinkChanged { found, saved, .. } = &err else {
            panic!("{err}");
        };
        assert!(found.contains("pointing at"), "{found}");
        let saved = saved.clone().unwrap();
        assert!(std::fs::read_to_string(&saved).unwrap().contains("gitdir:"));
        assert!(!saved.starts_with(&wt));
        Git::pinned(&common, &wt).unwrap().head().unwrap();
        // A directory in its place is moved aside whole.
        std::fs::remove_file(wt.join(".git")).unwrap();
        std::fs::create_dir(wt.join(".git")).unwrap();
        std::fs::write(wt.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        assert!(matches!(
            Git::pinned(&common, &wt),
            Err(WorktreeError::GitLinkChanged { .. })
        ));
        Git::pinned(&common, &wt).unwrap().head().unwrap();
        // The main working tree pins to the common directory; an unknown directory is refused.
        let main = common.parent().unwrap();
        Git::pinned(&common, main).unwrap().head().unwrap();
        let other = wt.parent().unwrap().join("other");
        std::fs::create_dir(&other).unwrap();
        assert!(matches!(
            Git::pinned(&common, &other),
            Err(WorktreeError::NotAWorktree { .. })
        ));
    }
}
