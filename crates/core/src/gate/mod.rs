//! Integration gates: deterministic checks over a commit range, verdicts stored as git notes,
//! and the pre-push hook that refuses trees nobody approved.
//!
//! A review looks at what a range *adds* (`base..tip`): paths outside a packet's declared scope,
//! conflict markers, secrets, oversized files, failing validation commands. The verdict is kept
//! in git itself (`refs/notes/orchestra/review`), keyed by the reviewed commit and by its tree, so
//! an identical tree reviewed once is never reviewed again — after a rebase that changed nothing,
//! or in the pre-push hook. Reviewers sit behind the [`Reviewer`] trait so a model-backed
//! reviewer can join the deterministic one later.

mod checks;
mod compare;
mod diff;
mod fast;
pub mod hook;
mod links;
mod moving_scratch;
pub mod pushed;
mod range;
mod review;
mod scratch;
mod secrets;
mod verdict;

pub use checks::{
    CheckOptions, DEFAULT_MAX_FILE_SIZE, Finding, Severity, check_conflict_markers,
    check_file_sizes, check_scope, check_secrets,
};
pub use compare::{
    COMPARE_DIFF_CHARS, CandidateDiff, CompareInput, Comparison, candidate_diffs,
    scrub as scrub_diff,
};
pub use diff::{AddedLine, ChangedFile, RangeDiff, read_diff};
pub use fast::all_approved;
pub use moving_scratch::MovingScratch;
pub use range::{PacketRef, ResolvedRange, packet_of, resolve_range};
pub use review::{
    DeterministicReviewer, PacketChecks, ReadRange, ReviewInput, ReviewOutcome, Reviewer,
    history_findings, judge_read, read_range, review, review_read, run_validation,
    run_validation_in, run_validation_until,
};
pub use scratch::ScratchWorktree;
pub use secrets::{
    SecretKind, mask as mask_secrets, prepare as prepare_secret_patterns, redact, safe_to_show,
};
pub use verdict::{
    ApprovalPolicy, DETERMINISTIC, Decision, NOTES_REF, Verdict, approved_for_tree, parse_verdict,
    read_verdict, rfc3339_utc, verdict_notes, write_range_verdict, write_verdict,
};

use std::path::PathBuf;

use orchestra_git::git::GitError;

/// Why a review could not be carried out (findings are results, not errors).
#[derive(Debug, thiserror::Error)]
pub enum GateError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error("`{spec}` does not name a commit in this repository")]
    UnknownRevision { spec: String },
    #[error("nothing to review: {tip} is already contained in the base {base}")]
    EmptyRange { base: String, tip: String },
    #[error(
        "no base to review against: HEAD has no upstream and no default branch (main, master, origin/HEAD) exists; pass a range such as `<base>..HEAD`"
    )]
    NoBase,
    #[error("the stored verdict for {object} is not valid JSON: {message}")]
    CorruptVerdict { object: String, message: String },
    #[error("cannot prepare a scratch worktree at {path}: {message}")]
    Scratch { path: PathBuf, message: String },
    #[error("validation command `{command}` could not run: {message}")]
    Validation { command: String, message: String },
    #[error("invalid file scope of packet `{packet}`: {message}")]
    Scope { packet: String, message: String },
    #[error("{0}")]
    Store(String),
    #[error("the {reviewer} review failed: {message}")]
    Reviewer { reviewer: String, message: String },
}
