//! The merge coordinator: integrates a run's succeeded packets into
//! `orchestra/<run>/integration` in dependency order, merging in memory, validating each
//! candidate in a scratch checkout, and advancing refs only by compare-and-swap; then advances
//! the target branch.
//!
//! Merges happen in the object database (`git merge-tree --write-tree`, `git commit-tree`), so
//! no working tree is touched until a candidate is known to merge cleanly; validation runs on
//! the merged tree, never on a packet alone. Packets go in batches that grow while they pass
//! and halve when they fail, so one bad packet costs a few extra validations but never keeps
//! an innocent one out. Only packets with an approving verdict go in (`approval`).

mod approval;
mod batch;
mod coordinator;
mod own_change;
pub mod phase;
mod report;
mod resolve;
mod steps;
mod tree;

pub use coordinator::{
    DEFAULT_MAX_BATCH, DEFAULT_RESOLVE_ROUNDS, MergeOptions, integrate, integrate_journaled,
    integrate_until, integrate_with, integration_branch,
};
pub use own_change::{OwnChange, OwnChangeError, own_change};
pub use report::{Batch, BrokenCommand, MergeReport, SentBack};
pub use resolve::{
    BrokenValidation, ConflictJob, ConflictWorker, ResolveError, fixes_text,
    resolve as resolve_conflicts,
};
pub use tree::{MergeTree, commit_merge, merge_tree, predict};

use crate::gate::GateError;
use crate::store::StoreError;
use orchestra_git::git::GitError;
use orchestra_sys::exec::LockError;

/// Why the coordinator could not do its job (conflicts and failed validations are results).
#[derive(Debug, thiserror::Error)]
pub enum MergeError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error(transparent)]
    Gate(#[from] GateError),
    #[error("`{spec}` does not name a commit in this repository")]
    UnknownRevision { spec: String },
    #[error("`git merge-tree` failed (exit {code}): {stderr}")]
    MergeTree { code: i32, stderr: String },
    #[error(
        "no target branch: HEAD is detached and the plan's base is not a branch; pass --target <branch>"
    )]
    NoTarget,
    #[error("target `{target}` is not a local branch; pass --target <branch>")]
    BadTarget { target: String },
    #[error("the plan stored with run `{run}` no longer parses: {message}")]
    StoredPlan { run: String, message: String },
    #[error(
        "run `{run}` has a packet named `integration`, whose branch would be the integration branch; rename the packet"
    )]
    IntegrationNameTaken { run: String },
    #[error(
        "the integration branch {branch} and the target {target} have diverged with conflicts in {paths}; resolve on {branch} and run the merge again"
    )]
    TargetConflicts {
        branch: String,
        target: String,
        paths: String,
    },
    #[error("{branch} kept moving while the merge tried to advance it; run the merge again")]
    Contended { branch: String },
    #[error("cannot list the repository's worktrees: {0}")]
    Worktree(String),
    /// A stop request (Ctrl-C, SIGTERM) ended the merge between two of its steps.
    #[error(
        "the integration of run `{run}` was interrupted; `git orchestra resume {run}` continues it"
    )]
    Interrupted { run: String },
}
