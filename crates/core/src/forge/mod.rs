//! Pull requests on a code forge: one per packet, stacked where packets depend on each other.
//!
//! [`Forge`] is the seam between the publishing logic ([`publish`]) and one forge's REST API:
//! GitHub (and GitHub Enterprise) first, Gitea/Forgejo and GitLab through the same calls. Branches are
//! pushed with the `git` command line, never through the API, so the user's credential
//! helpers, SSH configuration and hooks (our own pre-push gate included) apply. Without a
//! forge (no token, or `--pr=local`) the same pull request bodies are written as Markdown
//! files in the run's state directory, and the branches stay ready to push.
//!
//! Everything here is idempotent: a pull request is found by its head branch before one is
//! opened, so running the publication twice updates instead of duplicating.

mod body;
mod gitea;
mod gitea_land;
mod gitea_logs;
mod github;
mod github_land;
mod gitlab;
mod gitlab_auto;
mod gitlab_land;
mod http;
mod landing;
mod limit;
mod publish;
mod remote;
mod shared;
mod webhook;

pub use body::{PrContext, render_body};
pub use gitea::Gitea;
pub use github::GitHub;
pub use gitlab::GitLab;
pub use http::{Api, Token};
pub use landing::{
    COMMENT_BYTES, Check, CheckConclusion, CheckSource, LOG_TAIL_BYTES, MergeMethod, MergeOutcome,
    PrComment, PrStatus, Review, ReviewState, SUMMARY_MARKER, SummaryAction, choose_method,
    may_write, safe_tail, summary_body,
};
pub use limit::WriteLimiter;
pub use publish::{PrAction, PrEntry, PrReport, PublishOptions, publish};
pub use remote::{ForgeKind, ForgeSettings, RemoteUrl, find_token, open_forge, parse_remote_url};
pub use webhook::{Wake, WebhookError, WebhookSecret, listen as listen_for_webhooks};

use serde::Serialize;

/// Where a pull request stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PrState {
    Open,
    Closed,
    Merged,
}

/// A pull request as the forge reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PullRequest {
    pub number: u64,
    pub url: String,
    /// The head branch's short name.
    pub head: String,
    /// The base branch's short name.
    pub base: String,
    /// The title without any draft marker the forge encodes in it.
    pub title: String,
    pub body: String,
    pub draft: bool,
    pub state: PrState,
    /// The forge's global id, for APIs that need it (GitHub's GraphQL draft switch).
    #[serde(skip)]
    pub node_id: Option<String>,
}

/// A pull request to open.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewPullRequest {
    pub title: String,
    pub body: String,
    pub head: String,
    pub base: String,
    pub draft: bool,
}

/// Changes to an open pull request; `None` leaves a field as it is.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PullRequestUpdate {
    pub title: Option<String>,
    pub body: Option<String>,
    pub base: Option<String>,
    pub draft: Option<bool>,
}

impl PullRequestUpdate {
    /// Returns true if and only if the update changes nothing.
    pub fn is_empty(&self) -> bool {
        self.title.is_none() && self.body.is_none() && self.base.is_none() && self.draft.is_none()
    }
}

/// One forge's pull request API. Implementations make blocking HTTP calls and honour the
/// forge's rate limits; they never log the token.
pub trait Forge {
    /// Returns the forge's kind, e.g. `github`.
    fn kind(&self) -> ForgeKind;
    /// Returns the most recent pull request whose head is `branch` in this repository, in any
    /// state, or `None`.
    fn find_by_head(&self, branch: &str) -> Result<Option<PullRequest>, ForgeError>;
    /// Opens a pull request.
    fn create(&self, pr: &NewPullRequest) -> Result<PullRequest, ForgeError>;
    /// Applies `change` to the open pull request `pr` and returns it as it now stands.
    fn update(
        &self,
        pr: &PullRequest,
        change: &PullRequestUpdate,
    ) -> Result<PullRequest, ForgeError>;
    /// Adds labels to a pull request (existing labels stay).
    fn add_labels(&self, number: u64, labels: &[String]) -> Result<(), ForgeError>;
    /// Asks users for a review.
    fn request_reviewers(&self, number: u64, reviewers: &[String]) -> Result<(), ForgeError>;
    /// Adds a comment to a pull request's conversation.
    fn comment(&self, number: u64, body: &str) -> Result<(), ForgeError>;

    /// Returns pull request `number` as it stands now: state, head commit, base, mergeability.
    fn pr_status(&self, number: u64) -> Result<PrStatus, ForgeError> {
        let _ = number;
        Err(unsupported(self.kind(), "reading a pull request's state"))
    }
    /// Returns the check runs and commit statuses of commit `sha`, the latest of each name,
    /// their output scrubbed and clipped.
    fn checks(&self, sha: &str) -> Result<Vec<Check>, ForgeError> {
        let _ = sha;
        Err(unsupported(self.kind(), "reading checks"))
    }
    /// Returns the reviews of pull request `number`, oldest first.
    fn reviews(&self, number: u64) -> Result<Vec<Review>, ForgeError> {
        let _ = number;
        Err(unsupported(self.kind(), "reading reviews"))
    }
    /// Returns the inline review comments on pull request `number`'s diff, oldest first.
    fn review_comments(&self, number: u64) -> Result<Vec<PrComment>, ForgeError> {
        let _ = number;
        Err(unsupported(self.kind(), "reading review comments"))
    }
    /// Returns the comments in pull request `number`'s conversation, oldest first.
    fn conversation(&self, number: u64) -> Result<Vec<PrComment>, ForgeError> {
        let _ = number;
        Err(unsupported(self.kind(), "reading comments"))
    }
    /// Returns the merge methods the repository allows, in the order merge, squash, rebase.
    fn allowed_methods(&self) -> Result<Vec<MergeMethod>, ForgeError> {
        Err(unsupported(
            self.kind(),
            "reading the allowed merge methods",
        ))
    }
    /// Merges pull request `number` with `method` if its head is still `head_sha`.
    fn merge(
        &self,
        number: u64,
        method: MergeMethod,
        head_sha: &str,
    ) -> Result<MergeOutcome, ForgeError> {
        let _ = (number, method, head_sha);
        Err(unsupported(self.kind(), "merging"))
    }
    /// Points pull request `number` at base branch `base`.
    fn retarget(&self, number: u64, base: &str) -> Result<(), ForgeError> {
        let _ = (number, base);
        Err(unsupported(self.kind(), "retargeting"))
    }
    /// Asks the forge to run `check` again; returns false when it cannot be re-run (a commit
    /// status, which only its own CI can post again).
    fn rerun(&self, check: &Check) -> Result<bool, ForgeError> {
        let _ = check;
        Err(unsupported(self.kind(), "re-running checks"))
    }
    /// Replies `body` on the thread of inline review comment `comment` on pull request
    /// `number`'s diff.
    fn reply_to_review_comment(
        &self,
        number: u64,
        comment: u64,
        body: &str,
    ) -> Result<(), ForgeError> {
        let _ = (number, comment, body);
        Err(unsupported(self.kind(), "replying to review comments"))
    }
    /// Creates the run's summary comment on pull request `number`, or edits the one already
    /// there (found by [`SUMMARY_MARKER`]) when its text differs; never adds a second one.
    fn upsert_summary(&self, number: u64, body: &str) -> Result<SummaryAction, ForgeError> {
        let _ = (number, body);
        Err(unsupported(self.kind(), "summary comments"))
    }
}

/// Returns the error for a landing call `kind`'s client does not offer yet.
fn unsupported(kind: ForgeKind, what: &str) -> ForgeError {
    ForgeError::Config(format!(
        "{what} is not supported on {} yet; land its pull requests by hand or use GitHub",
        kind.as_str()
    ))
}

/// Why talking to the forge (or preparing to) failed.
#[derive(Debug, thiserror::Error)]
pub enum ForgeError {
    #[error("cannot reach {url}: {message}")]
    Connect { url: String, message: String },
    #[error("{method} {path} answered {status}: {message}")]
    Status {
        method: String,
        path: String,
        status: u16,
        message: String,
    },
    #[error(
        "the forge's rate limit is exhausted for another {wait_secs} s ({method} {path}); run again later"
    )]
    RateLimited {
        method: String,
        path: String,
        wait_secs: u64,
    },
    #[error("{method} {path} answered something unexpected: {message}")]
    Protocol {
        method: String,
        path: String,
        message: String,
    },
    #[error(
        "the forge rejected the token ({status}) for {method} {path}; check GH_TOKEN/GITHUB_TOKEN (or `gh auth login`)"
    )]
    Auth {
        method: String,
        path: String,
        status: u16,
    },
    #[error("{0}")]
    Config(String),
    #[error("cannot push to remote `{remote}`: {message}")]
    Push { remote: String, message: String },
    #[error(transparent)]
    Git(#[from] orchestra_git::git::GitError),
    #[error(transparent)]
    Gate(#[from] crate::gate::GateError),
    #[error(transparent)]
    Store(#[from] crate::store::StoreError),
    #[error(transparent)]
    Lock(#[from] orchestra_sys::exec::LockError),
    #[error("the plan stored with run `{run}` no longer parses: {message}")]
    StoredPlan { run: String, message: String },
    #[error("cannot write {path}: {source}")]
    Write {
        path: std::path::PathBuf,
        source: std::io::Error,
    },
    #[error(
        "no target branch: HEAD is detached and the plan's base is not a branch; pass --target <branch>"
    )]
    NoTarget,
}
