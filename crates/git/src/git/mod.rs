//! Git access: typed operations over the `git` CLI, repository discovery, and packet worktrees.
//!
//! Operations that must honour users' hooks, credential helpers and configuration go through
//! the `git` CLI; object-level work that needs speed uses gix. This module is the only place
//! that starts a git process: the raw runner (`Git::run` and friends) is visible only inside
//! `crate::git`, and everything else calls a typed operation (`Git::resolve_commit`,
//! `Git::update_ref`, `Git::merge_no_commit`, …) whose failures are classified
//! ([`FailureKind`]) and whose writes carry the engine's [`Identity`].

mod backup;
mod checkout;
mod classify;
mod cli;
pub mod commit;
mod diff;
mod head_file;
mod history;
mod identity;
mod ignore_rules;
mod include;
mod isolated;
mod leftovers;
mod merge;
mod notes;
mod parallel;
mod patch_memo;
mod pinned;
mod rebase;
mod records;
mod recycle;
mod refs;
mod registry;
mod relocate;
mod remote;
mod repair;
mod replay;
mod repo;
mod revs;
mod set_aside;
mod settle;
mod sparse;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod transport;
mod watch;
mod workdir;
mod worktree;

pub use backup::{BACKUP_PREFIX, Snapshot, backup, backup_and_remove, is_saved, snapshot};
pub use checkout::{CheckoutMethod, CheckoutStats, add_checked_out, add_checked_out_by};
pub use classify::FailureKind;
pub use cli::{Git, GitError};
pub use history::{ChangedFile, HistoryCommit};
pub use identity::{COMMITTER_EMAIL, COMMITTER_NAME, Identity};
pub use include::{INCLUDE_FILE, copy_includes};
pub use isolated::init_at_commit;
pub use leftovers::{
    Leftovers, MAX_ARCHIVED_FILE, MAX_ARCHIVED_TOTAL, NestedRepo, REGENERABLE, SavedLeftovers,
    UNCOMMITTED_REF, find_leftovers, save_leftovers,
};
pub use merge::{MergeOutcome, MergeStart, MergeTree};
pub use parallel::PARALLEL_CHECKOUT_FILES;
pub use pinned::{registered_git_dir, registered_git_dir_unrepaired};
pub use rebase::Rebased;
pub use recycle::{
    POOL_DIR, keep_ignored, park, parked_from, pool_dir, pooled, reattach, trim_pool,
};
pub use refs::{Expected, RefError};
pub use registry::{WorktreeEntry, delete_branch, list, registrations, remove};
pub use repair::{create_repairing, drop_unfinished_registration, repair_registrations};
pub use replay::Replayed;
pub use repo::{RepoError, RepoInfo};
pub use set_aside::{ASIDE_PREFIX, delete_set_aside};
pub use sparse::{cone, create_sparse, enable_worktree_config};
pub use transport::init_bare;
pub use watch::{ref_files, ref_tips_named};
pub use workdir::Untracked;
pub use worktree::{
    Created, Reuse, Worktree, WorktreeError, WorktreeRequest, WorktreeStatus, create, validate,
};

/// Returns this process's lock on the repository's worktree registrations.
///
/// git and gix read every `.git/worktrees/*` entry while adding or removing one, and fail on an
/// entry another thread is half-way through writing ("failed to read …/commondir"); packets,
/// reviews and merges create and remove worktrees from many threads, so each such change holds
/// this lock.
pub fn registration_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    /// Returns every `.rs` file under `dir`, recursively.
    fn rust_files(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                rust_files(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    /// The runner's visibility keeps `Git::run` inside this module; this keeps a hand-made
    /// `Command::new("git")` out of the rest of the workspace's sources.
    #[test]
    fn no_git_process_is_started_outside_the_git_module() {
        let manifest = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let src = manifest.join("src");
        let workspace = manifest.join("../..");
        let mut files = Vec::new();
        rust_files(&workspace.join("src"), &mut files);
        for krate in std::fs::read_dir(workspace.join("crates")).unwrap() {
            let krate = krate.unwrap().path();
            // The test harness, like the tests, sets up repositories with plain git.
            if !krate.ends_with("test-support") {
                rust_files(&krate.join("src"), &mut files);
            }
        }
        assert!(files.len() > 100, "expected the workspace's sources");
        let needle = concat!("Command::new(", "\"git\")");
        let mut found = Vec::new();
        for file in files {
            if file
                .canonicalize()
                .unwrap()
                .starts_with(src.join("git").canonicalize().unwrap())
            {
                continue;
            }
            let text = std::fs::read_to_string(&file).unwrap();
            for (n, line) in text.lines().enumerate() {
                if line.contains(needle) {
                    found.push(format!("{}:{}", file.display(), n + 1));
                }
            }
        }
        assert!(
            found.is_empty(),
            "git started outside crates/git/src/git/ (use a typed operation of `git`): {}",
            found.join(", ")
        );
    }
}
