//! Checks out a large fresh worktree with git's own parallel checkout (`checkout.workers`).
//!
//! gix writes a fresh worktree's files on all cores and starts no process; git's parallel
//! checkout (`-c checkout.workers=0`, one worker per core) does the same work in separate
//! processes, inflating with the system's zlib. Measured side by side in release builds
//! (`benches/worktree.rs`, `WORKTREE_BENCH=threshold`), gix's is faster on a few hundred files,
//! about even from 1,000 to 3,000, and slower from 4,000 files on when many files were deleted
//! shortly before (the file system's inode allocation then dominates, and hurts gix's more).
//! So `checkout::add_checked_out_in` asks [`pick`] whether the tree holds
//! [`PARALLEL_CHECKOUT_FILES`] files (the source repository's index count answers most of the
//! time, a count of the tree's files the rest) and lets git populate the worktree when it does.
//! git's `read-tree --reset -u HEAD` writes the files and an index carrying their stat data, as
//! gix does, and honours the same attributes and filters; it touches neither HEAD nor its
//! reflog.

use std::path::Path;

use super::Git;
use super::checkout::CheckoutMethod;
use super::worktree::WorktreeError;

/// How many files a tree must hold for a fresh worktree to be checked out by git's parallel
/// checkout instead of gix's.
///
/// Measured side by side in release builds (`WORKTREE_BENCH=threshold cargo bench --bench
/// worktree`, two cores, load average 1–2, 2026-11-29; generated files of 8 short lines,
/// medians of 5 interleaved runs, each worktree removed before the next), gix's over git's in
/// wall time: 0.53–0.74× at 200 files, 0.79–0.83× at 500, 0.85–0.99× at 1,000, 0.92–0.98× at
/// 2,000, 1.02× at 3,000, 1.09× at 4,000, 1.34–1.36× at 5,000, 2.69–2.79× at 10,000. At 5,000
/// files the files' size moves the ratio little (1.06–1.37× from 256 bytes to 40 KB a file); on
/// the Python standard library (2,450 files, 102 MB) gix's checkout took 0.61–0.87× of git's.
/// An earlier threshold of 500 files came from a debug build on a loaded machine, where gix ran
/// at opt-level 1.
pub const PARALLEL_CHECKOUT_FILES: usize = 3_000;

/// Returns the checkout `Auto` stands for on `tree`: `GitParallel` when the tree holds at least
/// [`PARALLEL_CHECKOUT_FILES`] files (links and submodules count), otherwise `Gix`.
///
/// The source repository's index usually answers without reading a tree: its header counts the
/// entries of the commit checked out there, and a packet's tree is that commit's or close to
/// it (near the threshold, where the two could disagree, both checkouts cost about the same).
/// Without a readable index, or with a sparse index (whose entries may stand for whole
/// directories), the tree's files are counted, reading trees only until the threshold is
/// reached.
pub(crate) fn pick(repo: &gix::Repository, tree: gix::ObjectId) -> Result<CheckoutMethod, String> {
    if let Some(n) = index_entries(repo) {
        return Ok(if n >= PARALLEL_CHECKOUT_FILES {
            CheckoutMethod::GitParallel
        } else {
            CheckoutMethod::Gix
        });
    }
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

/// Returns the entry count the header of `repo`'s index states (its first 12 bytes: `DIRC`, the
/// version, the count), or `None` when there is no readable index of a known version or it
/// may be sparse (`index.sparse`).
fn index_entries(repo: &gix::Repository) -> Option<usize> {
    if repo.config_snapshot().boolean("index.sparse") == Some(true) {
        return None;
    }
    let mut header = [0u8; 12];
    let mut file = fs_err::File::open(repo.index_path()).ok()?;
    std::io::Read::read_exact(&mut file, &mut header).ok()?;
    let version = u32::from_be_bytes([header[4], header[5], header[6], header[7]]);
    if &header[..4] != b"DIRC" || !(2..=4).contains(&version) {
        return None;
    }
    let count = u32::from_be_bytes([header[8], header[9], header[10], header[11]]);
    usize::try_from(count).ok()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::testing::git;

    /// Returns a repository whose index holds `files` entries, committed, and the commit's tree.
    fn repo_of(files: usize) -> (tempfile::TempDir, gix::Repository, gix::ObjectId) {
        let dir = tempfile::tempdir().unwrap();
        git(dir.path(), &["init", "-q", "-b", "main"]);
        for i in 0..files {
            std::fs::write(dir.path().join(format!("f{i}.txt")), "x\n").unwrap();
        }
        git(dir.path(), &["add", "-A"]);
        git(dir.path(), &["commit", "-q", "-m", "files"]);
        let tree = git(dir.path(), &["rev-parse", "HEAD^{tree}"]);
        let repo = gix::open(dir.path()).unwrap();
        (
            dir,
            repo,
            gix::ObjectId::from_hex(tree.trim().as_bytes()).unwrap(),
        )
    }

    #[test]
    fn a_small_index_picks_gix_without_reading_the_tree() {
        let (_dir, repo, _) = repo_of(3);
        // No object has this id: only a tree walk could fail on it.
        let missing = gix::ObjectId::from_hex(b"1234567890123456789012345678901234567890").unwrap();
        assert_eq!(pick(&repo, missing), Ok(CheckoutMethod::Gix));
    }

    #[test]
    fn the_index_count_decides_on_either_side_of_the_threshold_without_reading_the_tree() {
        let (_dir, repo, _) = repo_of(3);
        let missing = gix::ObjectId::from_hex(b"1234567890123456789012345678901234567890").unwrap();
        for (count, method) in [
            (PARALLEL_CHECKOUT_FILES, CheckoutMethod::GitParallel),
            (PARALLEL_CHECKOUT_FILES - 1, CheckoutMethod::Gix),
        ] {
            // Only the header is read: `DIRC`, version 2, the entry count.
            let mut header = b"DIRC".to_vec();
            header.extend(2u32.to_be_bytes());
            header.extend(u32::try_from(count).unwrap().to_be_bytes());
            std::fs::write(repo.index_path(), &header).unwrap();
            assert_eq!(pick(&repo, missing), Ok(method), "{count} entries");
        }
    }

    #[test]
    fn without_a_usable_index_the_tree_is_counted() {
        let (dir, repo, tree) = repo_of(3);
        let missing = gix::ObjectId::from_hex(b"1234567890123456789012345678901234567890").unwrap();
        git(dir.path(), &["config", "index.sparse", "true"]);
        let sparse = gix::open(dir.path()).unwrap();
        assert!(
            pick(&sparse, missing).is_err(),
            "a sparse index is not trusted"
        );
        assert_eq!(pick(&sparse, tree), Ok(CheckoutMethod::Gix));
        git(dir.path(), &["config", "index.sparse", "false"]);
        std::fs::remove_file(repo.index_path()).unwrap();
        assert!(pick(&repo, missing).is_err(), "no index: the tree is read");
        assert_eq!(pick(&repo, tree), Ok(CheckoutMethod::Gix));
    }
}
