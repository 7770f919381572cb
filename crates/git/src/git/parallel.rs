//! Checks out a large fresh worktree with git's own parallel checkout (`checkout.workers`).
//!
//! gix writes a fresh worktree's files on all cores and is the faster checkout for the small
//! trees most packets have; on many thousands of files git's parallel checkout
//! (`-c checkout.workers=0`, one worker per core) was measured several times faster on a loaded
//! two-core machine (50,000 files: 3.4×; `benches/worktree.rs` prints both side by side). So
//! `checkout::add_checked_out_in` counts the tree's files up to [`PARALLEL_CHECKOUT_FILES`] and
//! lets git populate the worktree when the count is reached. git's `read-tree --reset -u HEAD`
//! writes the files and an index carrying their stat data, as gix does, and honours the same
//! attributes and filters; it touches neither HEAD nor its reflog.

use std::path::Path;

use super::Git;
use super::checkout::CheckoutMethod;
use super::worktree::WorktreeError;

/// How many files a tree must hold for a fresh worktree to be checked out by git's parallel
/// checkout instead of gix's.
///
/// Below it gix is as fast or faster and starts no process; the crossover measured on two
/// cores lies between 1,000 and 5,000 files, and the generated 50,000-file tree is far above it.
pub const PARALLEL_CHECKOUT_FILES: usize = 2_000;

/// Returns the checkout `Auto` stands for on `tree`: `GitParallel` when the tree holds at least
/// [`PARALLEL_CHECKOUT_FILES`] files (links and submodules count), otherwise `Gix`.
///
/// Reads trees only until the threshold is reached, so the count costs little on any tree.
pub(crate) fn pick(repo: &gix::Repository, tree: gix::ObjectId) -> Result<CheckoutMethod, String> {
    let mut pending = vec![tree];
    let mut files = 0usize;
    while let Some(id) = pending.pop() {
        let tree = repo
            .find_tree(id)
            .map_err(|e| format!("reading tree {id}: {e:#}"))?;
        for entry in tree.iter() {
            let entry = entry.map_err(|e| format!("reading tree {id}: {e:#}"))?;
            if entry.mode().is_tree() {
                pending.push(entry.object_id());
            } else {
                files += 1;
                if files >= PARALLEL_CHECKOUT_FILES {
                    return Ok(CheckoutMethod::GitParallel);
                }
            }
        }
    }
    Ok(CheckoutMethod::Gix)
}

/// Populates the registered but still empty worktree `work_dir` of `worktree_repo` (its HEAD
/// already attached) with git's parallel checkout; returns how many files and bytes the index
/// git wrote records.
pub(crate) fn checkout_with_git(
    worktree_repo: &gix::Repository,
    work_dir: &Path,
) -> Result<(usize, u64), WorktreeError> {
    let git_dir = worktree_repo.current_dir().join(worktree_repo.git_dir());
    // Pinned and hardened like every engine git in a packet worktree (no hooks, no fsmonitor).
    Git::pinned_to(work_dir, &git_dir)
        .with_config("checkout.workers=0")
        .run(["read-tree", "--reset", "-u", "HEAD"])?;
    let index = worktree_repo
        .open_index()
        .map_err(|e| WorktreeError::Checkout {
            path: work_dir.to_path_buf(),
            message: format!("reading the index git wrote: {e:#}"),
        })?;
    let bytes = index.entries().iter().map(|e| u64::from(e.stat.size)).sum();
    Ok((index.entries().len(), bytes))
}
