//! What following a pull request to green reads from and writes to a forge: its live state,
//! the checks and statuses of its head, its reviews and review comments, merging it, re-running
//! a failed check, and the one summary comment the run keeps up to date.
//!
//! Text that comes from the forge and may be handed to an agent (a check's output, a review's
//! body) is scrubbed of credentials and clipped here, once, so no caller can forget to.

use serde::{Deserialize, Serialize};

/// The hidden marker that identifies the run's summary comment on a pull request, so a later
/// update finds and edits it instead of adding a second one.
pub const SUMMARY_MARKER: &str = "<!-- git-orchestra:summary -->";

/// Longest check output or log tail kept, in bytes (the end is kept: that is where a failing
/// test or compiler error usually is).
pub const LOG_TAIL_BYTES: usize = 4000;

/// Longest review or comment body kept, in bytes.
pub const COMMENT_BYTES: usize = 4000;

/// A pull request's state as landing needs it: whether it is still open, what its head is, and
/// whether the forge would merge it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PrStatus {
    pub number: u64,
    pub state: super::PrState,
    /// The head branch's short name.
    pub head: String,
    /// The commit the head branch points at.
    pub head_sha: String,
    /// The base branch's short name.
    pub base: String,
    /// A draft is not merged until a person marks it ready for review.
    pub draft: bool,
    /// `Some(false)` when the forge reports a conflict with the base; `None` while it is still
    /// computing.
    pub mergeable: Option<bool>,
}

/// How a check on a pull request's head ended, or that it has not yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckConclusion {
    /// Queued or running.
    Pending,
    Success,
    /// Passed without a verdict: neutral or skipped.
    Neutral,
    Failure,
    /// Cancelled, timed out, errored or waiting for an action.
    Error,
}

impl CheckConclusion {
    /// Returns true if and only if the check ended and blocks landing.
    pub fn failed(self) -> bool {
        matches!(self, CheckConclusion::Failure | CheckConclusion::Error)
    }

    /// Returns the name used in reports and events.
    pub fn as_str(self) -> &'static str {
        match self {
            CheckConclusion::Pending => "pending",
            CheckConclusion::Success => "success",
            CheckConclusion::Neutral => "neutral",
            CheckConclusion::Failure => "failure",
            CheckConclusion::Error => "error",
        }
    }
}

/// Where a check came from: a check run (re-runnable) or a commit status (not).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CheckSource {
    CheckRun,
    Status,
}

/// One check or commit status of a pull request's head.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Check {
    /// The forge's id for it (a check run's id re-runs it).
    pub id: u64,
    pub name: String,
    pub source: CheckSource,
    pub conclusion: CheckConclusion,
    /// The tail of its output or log: scrubbed of credentials, clipped to [`LOG_TAIL_BYTES`].
    pub log_tail: String,
}

/// The verdict of a review.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReviewState {
    Approved,
    ChangesRequested,
    Commented,
    Dismissed,
    Pending,
}

/// A review of a pull request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Review {
    pub id: u64,
    /// The reviewer's login.
    pub author: String,
    /// The reviewer's relation to the repository as the forge says (`OWNER`, `MEMBER`,
    /// `COLLABORATOR`, `CONTRIBUTOR`, `NONE`; empty when it does not say).
    pub association: String,
    pub state: ReviewState,
    /// Scrubbed and clipped to [`COMMENT_BYTES`].
    pub body: String,
}

/// A comment on a pull request: an inline one on the diff (with its file and line) or one in
/// the conversation (without).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PrComment {
    pub id: u64,
    /// The commenter's login.
    pub author: String,
    /// The commenter's relation to the repository, as for [`Review::association`].
    pub association: String,
    /// Scrubbed and clipped to [`COMMENT_BYTES`].
    pub body: String,
    pub path: Option<String>,
    pub line: Option<u64>,
}

/// Returns true if and only if the forge's `association` of an account with a repository
/// means it may write to it: the default for whose reviews and commands landing acts on.
pub fn may_write(association: &str) -> bool {
    matches!(association, "OWNER" | "MEMBER" | "COLLABORATOR")
}

/// How a pull request is merged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MergeMethod {
    Merge,
    Squash,
    Rebase,
}

impl MergeMethod {
    /// Returns the name the forges and `[land] method` use.
    pub fn as_str(self) -> &'static str {
        match self {
            MergeMethod::Merge => "merge",
            MergeMethod::Squash => "squash",
            MergeMethod::Rebase => "rebase",
        }
    }

    /// Returns the method named `s`, or `None`.
    pub fn parse(s: &str) -> Option<MergeMethod> {
        match s.trim().to_ascii_lowercase().as_str() {
            "merge" => Some(MergeMethod::Merge),
            "squash" => Some(MergeMethod::Squash),
            "rebase" => Some(MergeMethod::Rebase),
            _ => None,
        }
    }
}

/// Returns the method to merge with: `wanted` when the repository allows it, else the first
/// allowed of merge, squash, rebase; `None` when the repository allows none of them (or not
/// `wanted`).
pub fn choose_method(allowed: &[MergeMethod], wanted: Option<MergeMethod>) -> Option<MergeMethod> {
    match wanted {
        Some(w) => allowed.contains(&w).then_some(w),
        None => [MergeMethod::Merge, MergeMethod::Squash, MergeMethod::Rebase]
            .into_iter()
            .find(|m| allowed.contains(m)),
    }
}

/// How a merge request ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub enum MergeOutcome {
    /// Merged; the commit the base now points at, when the forge says.
    Merged { sha: Option<String> },
    /// The forge refused (not mergeable, head moved, checks required): its reason.
    Refused { reason: String },
    /// Handed to the forge, which merges it itself later (a merge train, merge when the
    /// pipeline succeeds); `how` says what landing now waits for, `position` its place on the
    /// forge's merge train or queue (1 merges next) when the forge says.
    Queued { how: String, position: Option<u64> },
}

/// What upserting the summary comment did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SummaryAction {
    Created,
    Updated,
    Unchanged,
}

/// Returns `text` made safe to hand to an agent or a log: credentials the secret scanner finds
/// masked, `token` removed, and only its last `max` bytes kept (on a character boundary).
pub fn safe_tail(text: &str, token: Option<&super::Token>, max: usize) -> String {
    let scrubbed = crate::gate::mask_secrets(text.trim());
    let scrubbed = match token {
        Some(t) => t.scrub(&scrubbed),
        None => scrubbed,
    };
    if scrubbed.len() <= max {
        return scrubbed;
    }
    let mut start = scrubbed.len() - max;
    while !scrubbed.is_char_boundary(start) {
        start += 1;
    }
    format!("…{}", &scrubbed[start..])
}

/// Returns the summary comment's full body: `body` under the hidden marker.
pub fn summary_body(body: &str) -> String {
    format!("{SUMMARY_MARKER}\n{}", body.trim_end())
}

/// Returns the merge methods a repository's settings `v` allow, reading each method's flag by
/// the forge's name for it (`keys`: merge, squash, rebase); a missing flag counts as allowed,
/// since tokens without admin rights may not see them and the merge call refuses what is not.
pub(super) fn allowed_by_flags(v: &serde_json::Value, keys: [&str; 3]) -> Vec<MergeMethod> {
    keys.into_iter()
        .zip([MergeMethod::Merge, MergeMethod::Squash, MergeMethod::Rebase])
        .filter(|(k, _)| v[*k].as_bool() != Some(false))
        .map(|(_, m)| m)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_preferred_method_is_merge_first_and_a_wanted_one_must_be_allowed() {
        use MergeMethod::*;
        assert_eq!(choose_method(&[Rebase, Squash], None), Some(Squash));
        assert_eq!(choose_method(&[Merge, Squash], None), Some(Merge));
        assert_eq!(choose_method(&[Merge], Some(Squash)), None);
        assert_eq!(choose_method(&[Merge, Rebase], Some(Rebase)), Some(Rebase));
        assert_eq!(MergeMethod::parse(" Squash"), Some(Squash));
    }

    #[test]
    fn a_tail_keeps_the_end_and_hides_credentials() {
        let key = "ghp_abcdefghijklmnopqrstuvwxyz0123456789";
        let log = format!("{}\nerror: token {key} rejected\n", "x".repeat(100));
        let tail = safe_tail(&log, None, 60);
        assert!(
            tail.starts_with('…') && tail.ends_with("rejected"),
            "{tail}"
        );
        assert!(!tail.contains(key), "{tail}");
        let token = crate::forge::Token::new("sekrit-token");
        assert_eq!(safe_tail("a sekrit-token b", Some(&token), 100), "a *** b");
    }
}
