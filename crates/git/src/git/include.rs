//! Copies the git-ignored files a project lists in `.worktreeinclude` into a new worktree.
//!
//! A fresh checkout lacks what git ignores — `.env`, local config, credentials for a dev
//! database — so an agent's build or tests would fail there. `.worktreeinclude` (the format
//! Claude Code uses: gitignore patterns) names which of those files to bring along. Only files
//! that are both git-ignored and matched are copied; tracked files come from the checkout, and
//! nothing that exists in the worktree is overwritten, so a resumed packet keeps its own edits.

use std::path::{Component, Path, PathBuf};

use ignore::gitignore::{Gitignore, GitignoreBuilder};

use super::Git;
use super::worktree::WorktreeError;

/// The file in the main working tree's root that lists the patterns.
pub const INCLUDE_FILE: &str = ".worktreeinclude";

/// Copies every git-ignored file under `main_root` that matches a pattern in
/// `main_root/.worktreeinclude` to the same relative path in `worktree`, and returns the
/// relative paths copied.
///
/// Without the file nothing is copied. Symlinks are copied as symlinks, permissions are kept, and
/// existing destination files are left alone. A destination whose parent inside the worktree is
/// a symlink is skipped, so a tracked symlink cannot redirect a copy outside the worktree.
pub fn copy_includes(main_root: &Path, worktree: &Path) -> Result<Vec<PathBuf>, WorktreeError> {
    let include_file = main_root.join(INCLUDE_FILE);
    if !include_file.is_file() {
        return Ok(Vec::new());
    }
    let matcher = load_patterns(main_root, &include_file)?;
    if matcher.is_empty() {
        return Ok(Vec::new());
    }
    // `--directory` stops git at wholly ignored directories (e.g. `target/`) instead of listing
    // every file in them; those are walked below only as far as needed.
    let mut copied = Vec::new();
    for (entry, is_dir) in Git::new(main_root).ignored_entries()? {
        let rel = PathBuf::from(&entry);
        if !is_plain_relative(&rel) {
            continue;
        }
        if is_dir {
            let whole = matcher.matched_path_or_any_parents(&rel, true).is_ignore();
            copy_dir(&matcher, main_root, worktree, &rel, whole, &mut copied)?;
        } else if matcher.matched_path_or_any_parents(&rel, false).is_ignore() {
            copy_one(main_root, worktree, &rel, &mut copied)?;
        }
    }
    copied.sort();
    Ok(copied)
}

/// Reads the gitignore-style patterns of `.worktreeinclude`, rooted at the main working tree.
fn load_patterns(main_root: &Path, include_file: &Path) -> Result<Gitignore, WorktreeError> {
    let mut builder = GitignoreBuilder::new(main_root);
    if let Some(err) = builder.add(include_file) {
        return Err(pattern_error(include_file, err));
    }
    builder
        .build()
        .map_err(|err| pattern_error(include_file, err))
}

fn pattern_error(include_file: &Path, err: ignore::Error) -> WorktreeError {
    WorktreeError::Io {
        path: include_file.to_path_buf(),
        source: std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("bad pattern ({err}); fix the line (gitignore syntax)"),
        ),
    }
}

/// Copies matching files below the ignored directory `rel`; all of them when `whole` is set
/// (the directory itself matched).
fn copy_dir(
    matcher: &Gitignore,
    main_root: &Path,
    worktree: &Path,
    rel: &Path,
    whole: bool,
    copied: &mut Vec<PathBuf>,
) -> Result<(), WorktreeError> {
    let dir = main_root.join(rel);
    let entries = fs_err::read_dir(&dir).map_err(|source| io(&dir, source))?;
    for entry in entries {
        let entry = entry.map_err(|source| io(&dir, source))?;
        let child = rel.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|source| io(&main_root.join(&child), source))?;
        if kind.is_dir() {
            // A nested repository is its own world; never copy another `.git`.
            if entry.file_name() == ".git" {
                continue;
            }
            let child_whole = whole || matcher.matched(&child, true).is_ignore();
            copy_dir(matcher, main_root, worktree, &child, child_whole, copied)?;
        } else if whole
            || matcher
                .matched_path_or_any_parents(&child, false)
                .is_ignore()
        {
            copy_one(main_root, worktree, &child, copied)?;
        }
    }
    Ok(())
}

/// Copies one file or symlink unless the destination exists or would leave the worktree.
fn copy_one(
    main_root: &Path,
    worktree: &Path,
    rel: &Path,
    copied: &mut Vec<PathBuf>,
) -> Result<(), WorktreeError> {
    let source = main_root.join(rel);
    let dest = worktree.join(rel);
    if dest.symlink_metadata().is_ok() || !parents_are_real_dirs(worktree, rel)? {
        return Ok(());
    }
    if let Some(parent) = dest.parent() {
        fs_err::create_dir_all(parent).map_err(|e| io(parent, e))?;
    }
    let meta = fs_err::symlink_metadata(&source).map_err(|e| io(&source, e))?;
    if meta.file_type().is_symlink() {
        let target = fs_err::read_link(&source).map_err(|e| io(&source, e))?;
        std::os::unix::fs::symlink(&target, &dest).map_err(|e| io(&dest, e))?;
    } else if meta.is_file() {
        // `copy` keeps the permission bits (an executable helper script stays executable).
        fs_err::copy(&source, &dest).map_err(|e| io(&dest, e))?;
    } else {
        return Ok(());
    }
    copied.push(rel.to_path_buf());
    Ok(())
}

/// Returns false when some existing parent of `rel` inside `worktree` is not a real directory.
fn parents_are_real_dirs(worktree: &Path, rel: &Path) -> Result<bool, WorktreeError> {
    let mut current = worktree.to_path_buf();
    let Some(parent) = rel.parent() else {
        return Ok(true);
    };
    for part in parent.components() {
        current.push(part);
        match current.symlink_metadata() {
            Ok(meta) if !meta.is_dir() => return Ok(false),
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(true),
            Err(source) => return Err(io(&current, source)),
        }
    }
    Ok(true)
}

/// Returns true if and only if `rel` is a relative path made of normal components only.
fn is_plain_relative(rel: &Path) -> bool {
    rel.components().all(|c| matches!(c, Component::Normal(_)))
}

fn io(path: &Path, source: std::io::Error) -> WorktreeError {
    WorktreeError::Io {
        path: path.to_path_buf(),
        source,
    }
}
