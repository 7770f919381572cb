//! Moves a registered worktree without starting git, and tells a sparse one from its files.
//!
//! `git worktree move` renames the worktree's directory and rewrites its registration's
//! `gitdir` file (`<common>/worktrees/<id>/gitdir`, naming `<new path>/.git`); the worktree's
//! own `.git` file names the registration and does not change. A recycled worktree moves twice
//! (to the pool and out of it), under the registration lock every packet's creation waits on,
//! so the move is done here, in-process. Everything `git worktree move` would check beyond
//! that — the main worktree, a locked one, one holding submodules, links written as relative
//! paths, a destination that exists — goes to `git worktree move` itself, which refuses or
//! handles it as it always has.
//!
//! Crash safety is git's: the rename comes first, then the registration is rewritten (through
//! a temporary file and a rename, so it is never half-written); a kill in between leaves a
//! directory whose registration names its old path, which `git worktree repair` mends (the
//! recycling's marker leads the next creation there).

use std::path::{Path, PathBuf};

use super::RepoInfo;
use super::worktree::WorktreeError;

/// Moves the registered worktree at `from` to `to` (whose parent exists), as
/// `git worktree move` does; starts git only for the cases it leaves to it (see the module).
pub(crate) fn move_worktree(repo: &RepoInfo, from: &Path, to: &Path) -> Result<(), WorktreeError> {
    if plain_move(repo, from, to)? {
        return Ok(());
    }
    let from = from.to_string_lossy().into_owned();
    let to = to.to_string_lossy().into_owned();
    repo.git().run(["worktree", "move", "--", &from, &to])?;
    Ok(())
}

/// Moves the worktree in-process when nothing but the rename and the registration's `gitdir`
/// is involved; returns false, having changed nothing, otherwise.
fn plain_move(repo: &RepoInfo, from: &Path, to: &Path) -> Result<bool, WorktreeError> {
    let Ok((top, admin)) = super::registered_git_dir_unrepaired(&repo.common_dir, from) else {
        return Ok(false);
    };
    let Some(admin) = linked_admin(repo, &admin) else {
        return Ok(false);
    };
    // What git checks: a locked worktree and one with submodules are refused, a destination
    // that exists is refused (or, for a directory, moved into): all left to git.
    let refused_by_git = admin.join("locked").exists()
        || admin.join("modules").exists()
        || top.join(".gitmodules").exists()
        || std::fs::symlink_metadata(to).is_ok();
    if refused_by_git || !absolute_links(&top, &admin) {
        return Ok(false);
    }
    let (Some(parent), Some(name)) = (to.parent(), to.file_name()) else {
        return Ok(false);
    };
    let Ok(parent) = parent.canonicalize() else {
        return Ok(false);
    };
    let dest = parent.join(name);
    fs_err::rename(&top, &dest).map_err(|source| WorktreeError::Io {
        path: top.clone(),
        source,
    })?;
    write_gitdir(&admin, &dest)?;
    Ok(true)
}

/// Returns the registration `admin` when it is a linked worktree's (`<common>/worktrees/<id>`),
/// `None` for the main worktree.
fn linked_admin(repo: &RepoInfo, admin: &Path) -> Option<PathBuf> {
    let common = repo.common_dir.canonicalize().ok()?;
    (admin.parent()? == common.join("worktrees")).then(|| admin.to_path_buf())
}

/// Returns true if and only if the worktree's `.git` file and its registration's `gitdir` hold
/// absolute paths (git's `worktree.useRelativePaths` writes relative ones, which a move
/// changes in the `.git` file too: git does those).
fn absolute_links(top: &Path, admin: &Path) -> bool {
    let dotgit = std::fs::read_to_string(top.join(".git")).unwrap_or_default();
    let gitdir = std::fs::read_to_string(admin.join("gitdir")).unwrap_or_default();
    dotgit
        .trim()
        .strip_prefix("gitdir:")
        .is_some_and(|p| Path::new(p.trim()).is_absolute())
        && Path::new(gitdir.trim()).is_absolute()
}

/// Points the registration `admin` at the worktree at `dest`, replacing its `gitdir` file
/// whole.
fn write_gitdir(admin: &Path, dest: &Path) -> Result<(), WorktreeError> {
    let tmp = admin.join("gitdir.orchestra-tmp");
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| WorktreeError::Io { path, source }
    };
    let text = format!("{}\n", dest.join(".git").display());
    fs_err::write(&tmp, text).map_err(io(&tmp))?;
    fs_err::rename(&tmp, admin.join("gitdir")).map_err(io(&admin.join("gitdir")))?;
    Ok(())
}

/// Returns true if and only if the worktree registered at `admin` checks out sparsely:
/// `core.sparseCheckout` is true in its own configuration (`config.worktree`) or the
/// repository's, or it has a sparse-checkout file (`info/sparse-checkout`), read from those
/// files rather than by starting `git config`.
pub(crate) fn is_sparse(common_dir: &Path, admin: &Path) -> bool {
    admin.join("info/sparse-checkout").exists()
        || [admin.join("config.worktree"), common_dir.join("config")]
            .iter()
            .any(|file| sparse_in(&std::fs::read_to_string(file).unwrap_or_default()))
}

/// Returns true if and only if the git configuration `text` sets `core.sparseCheckout` to
/// anything but false (the last setting wins, as in git).
fn sparse_in(text: &str) -> bool {
    let mut in_core = false;
    let mut sparse = false;
    for line in text.lines() {
        let line = line.trim();
        if let Some(section) = line.strip_prefix('[') {
            let name = section.split([']', ' ', '"', '.']).next().unwrap_or("");
            in_core = name.eq_ignore_ascii_case("core");
            continue;
        }
        if !in_core {
            continue;
        }
        let (key, value) = line.split_once('=').unwrap_or((line, "true"));
        if key.trim().eq_ignore_ascii_case("sparsecheckout") {
            let value = value.split(['#', ';']).next().unwrap_or("").trim();
            sparse = !["false", "no", "off", "0", ""]
                .iter()
                .any(|f| value.eq_ignore_ascii_case(f));
        }
    }
    sparse
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git;

    /// A repository with one commit and a worktree on branch `p` at `<top>/a/p`; returns the
    /// temporary directory, the repository and the worktree.
    fn repo_with_worktree() -> (tempfile::TempDir, RepoInfo, PathBuf) {
        crate::git::testing::repo_with_worktree("a/p")
    }

    #[test]
    fn a_moved_worktree_is_registered_at_its_new_path_and_works_there() {
        let (tmp, repo, wt) = repo_with_worktree();
        let admin = repo.common_dir.join("worktrees/p");
        assert!(plain_move(&repo, &wt, &tmp.path().join("a/q")).unwrap());
        let moved = tmp.path().canonicalize().unwrap().join("a/q");
        assert!(!wt.exists() && moved.join("a.txt").exists());
        assert_eq!(
            std::fs::read_to_string(admin.join("gitdir")).unwrap(),
            format!("{}\n", moved.join(".git").display())
        );
        let listed = git(&repo.toplevel, &["worktree", "list", "--porcelain"]);
        assert!(
            listed.contains(&format!("worktree {}\n", moved.display())),
            "{listed}"
        );
        assert!(!listed.contains("prunable"), "{listed}");
        assert_eq!(git(&moved, &["status", "--porcelain"]), "");
        assert_eq!(
            git(&moved, &["symbolic-ref", "HEAD"]).trim(),
            "refs/heads/p"
        );
    }

    #[test]
    fn a_move_git_would_refuse_is_left_to_git_which_refuses_it() {
        let (tmp, repo, wt) = repo_with_worktree();
        // A destination that exists.
        let taken = tmp.path().join("a/taken");
        std::fs::create_dir_all(&taken).unwrap();
        std::fs::write(taken.join("x"), "x").unwrap();
        assert!(!plain_move(&repo, &wt, &taken).unwrap());
        // A locked worktree: git refuses to move it.
        git(&repo.toplevel, &["worktree", "lock", wt.to_str().unwrap()]);
        let to = tmp.path().join("a/q");
        assert!(!plain_move(&repo, &wt, &to).unwrap());
        assert!(move_worktree(&repo, &wt, &to).is_err());
        assert!(wt.join("a.txt").exists() && !to.exists());
        // The main worktree.
        assert!(!plain_move(&repo, &repo.toplevel, &to).unwrap());
    }

    #[test]
    fn a_sparse_worktree_is_told_from_its_configuration_files() {
        let (_tmp, repo, wt) = repo_with_worktree();
        let admin = repo.common_dir.join("worktrees/p");
        assert!(!is_sparse(&repo.common_dir, &admin));
        git(&wt, &["sparse-checkout", "set", "--cone", "src"]);
        assert!(is_sparse(&repo.common_dir, &admin));
        assert!(sparse_in(
            "[core]\n\tbare = false\n\tSparseCheckout = true\n"
        ));
        assert!(sparse_in("[core]\n\tsparsecheckout\n"));
        assert!(!sparse_in(
            "[core]\n\tsparseCheckout = true\n\tsparseCheckout = false\n"
        ));
        assert!(!sparse_in("[other]\n\tsparseCheckout = true\n"));
    }
}
