//! The `[land]` table, read by `git orchestra land` (and `run --pr --land`).

use serde::Deserialize;

/// The `[land]` table: how `git orchestra land` follows a run's pull requests to merged.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LandConfig {
    /// Seconds between two looks at the forge (default 60); after a failed look the wait
    /// doubles, up to ten times this.
    pub poll_secs: Option<u64>,
    /// Merge pull requests whose checks pass, whose reviews allow it and whose parents have
    /// landed (default true); false only follows them, leaving merging to people.
    pub merge: Option<bool>,
    /// How to merge: `merge`, `squash` or `rebase` (default: the first of these the
    /// repository allows).
    pub method: Option<String>,
    /// Accounts whose reviews and `/orchestra` comments (`stop`, `land`, `retry`) are acted on
    /// (default: those who may write to the repository: its owners, members and
    /// collaborators); others' are shown, never acted on.
    pub reviewers: Option<Vec<String>>,
    /// Address (`127.0.0.1:PORT`) to listen on for the forge's webhook events while landing
    /// (default: none, only polling); a verified event makes landing look at the forge at
    /// once. `land --webhook` overrides it.
    #[serde(default)]
    pub webhook: Option<String>,
    /// Name of the environment variable holding the webhook's shared secret (default
    /// `ORCHESTRA_WEBHOOK_SECRET`); events whose signature (GitHub, Gitea, Forgejo) or token
    /// (GitLab) does not match it are refused with 401.
    #[serde(default)]
    pub webhook_secret_env: Option<String>,
    /// Fix rounds per pull request (default 3): a failed check or a review asking for changes
    /// goes back to the packet's worker this many times, then the pull request waits for a
    /// person with the reason; 0 sends nothing back.
    pub max_rounds: Option<u32>,
}

impl LandConfig {
    /// Returns `self` with every setting it leaves unset taken from `base`.
    pub(super) fn over(self, base: LandConfig) -> LandConfig {
        LandConfig {
            poll_secs: self.poll_secs.or(base.poll_secs),
            merge: self.merge.or(base.merge),
            method: self.method.or(base.method),
            reviewers: self.reviewers.or(base.reviewers),
            webhook: self.webhook.or(base.webhook),
            webhook_secret_env: self.webhook_secret_env.or(base.webhook_secret_env),
            max_rounds: self.max_rounds.or(base.max_rounds),
        }
    }
}
