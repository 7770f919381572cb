//! Adds a linked worktree for an existing branch and populates it with gix's parallel checkout.
//!
//! `git worktree add` checks files out on one thread (or a few with `checkout.workers`); gix
//! registers the worktree exactly as git does (`.git/worktrees/<id>/{gitdir,commondir,HEAD}` and a
//! `.git` file in the checkout), writes every file in parallel and then writes an index carrying
//! the stat data of the files it wrote, so the first `git status` in the new worktree is clean and
//! fast. The `worktree` benchmark compares both; see `benches/worktree.rs`.

use std::path::Path;
use std::sync::atomic::AtomicBool;

use super::worktree::WorktreeError;

/// What one checkout did, for tracing and for the benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CheckoutStats {
    /// How many files were written.
    pub files: usize,
    /// How many bytes were written.
    pub bytes: u64,
}

/// Registers `path` as a linked worktree of the repository at `toplevel` with HEAD attached to
/// the existing local branch `branch`, and checks out that branch's tree into it.
///
/// The destination must not exist or be an empty directory that no worktree is registered at;
/// callers check both first so that they can name the problem. On failure gix rolls back the
/// registration and the files it wrote; a pre-existing empty directory is left empty.
pub fn add_checked_out(
    toplevel: &Path,
    path: &Path,
    branch: &str,
) -> Result<CheckoutStats, WorktreeError> {
    let gix_error = |e: gix::Error| WorktreeError::Checkout {
        path: path.to_path_buf(),
        message: format!("{e:#}"),
    };
    // The new worktree's HEAD reflog needs a committer; users without a git identity get the
    // engine's, while a configured identity still wins.
    let options = gix::open::Options::default().config_overrides([
        format!(
            "gitoxide.committer.nameFallback={}",
            super::commit::COMMITTER_NAME
        ),
        format!(
            "gitoxide.committer.emailFallback={}",
            super::commit::COMMITTER_EMAIL
        ),
    ]);
    let repo = gix::open_opts(toplevel, options).map_err(gix_error)?;
    let full_name = gix::refs::FullName::try_from(format!("refs/heads/{branch}")).map_err(|e| {
        WorktreeError::InvalidBranch {
            branch: branch.to_string(),
            reason: e.to_string(),
        }
    })?;
    let interrupt = AtomicBool::new(false);
    let (_, outcome) = repo
        .add_worktree(
            path,
            gix::worktree::add::Head::Attached(full_name),
            gix::progress::Discard,
            &interrupt,
        )
        .map_err(gix_error)?;
    if !outcome.collisions.is_empty() || !outcome.errors.is_empty() {
        // Case-folding collisions or per-file errors leave the checkout incomplete; validation
        // would see a dirty tree, but naming the first path helps more.
        let first = outcome
            .collisions
            .first()
            .map(|c| c.path.to_string())
            .or_else(|| outcome.errors.first().map(|e| e.path.to_string()))
            .unwrap_or_default();
        return Err(WorktreeError::Checkout {
            path: path.to_path_buf(),
            message: format!(
                "{} collision(s) and {} error(s) while writing files, first at `{first}`",
                outcome.collisions.len(),
                outcome.errors.len()
            ),
        });
    }
    Ok(CheckoutStats {
        files: outcome.files_updated,
        bytes: outcome.bytes_written,
    })
}
